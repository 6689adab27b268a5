// The pair IR: a small typed predicate over one result pair of the similarity join, evaluated
// before pairs leave the engine (DESIGN.md "The pair pipeline"). Columns: id1, id2 (the keys,
// int64, ordered id1 <= id2 in a self-join) and dist (float64). A program is a postfix list of
// instructions over three-valued booleans (true, false, unknown), as SQL evaluates a WHERE
// clause: a pair is kept when the program yields true. No PostgreSQL and no CUDA headers here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine.h"

namespace gpu2bs {

enum class PairCol : uint8_t { Id1 = 0, Id2 = 1, Dist = 2 };
enum class CmpOp : uint8_t { Lt, Le, Eq, Ne, Ge, Gt };
// Three-valued truth of SQL.
enum class Tri : uint8_t { False = 0, True = 1, Unknown = 2 };

// One instruction. Leaves push one truth value; And/Or pop `n` and push one; Not pops one.
struct PairInstr {
  enum Kind : uint8_t {
    CmpConst,  // col op constant (ival for ids, dval for dist)
    CmpCols,   // col op col2 (both ids, or dist with dist)
    ModCmp,    // (col % modulus) op ival, col an id, modulus != 0 (SQL's truncating %)
    Truth,     // a constant truth value (`truth`): a comparison with a NULL parameter
    And,
    Or,
    Not
  };
  Kind kind = Truth;
  PairCol col = PairCol::Id1;
  PairCol col2 = PairCol::Id1;
  CmpOp op = CmpOp::Eq;
  Tri truth = Tri::True;
  uint32_t n = 0;        // operands of And / Or
  int64_t ival = 0;
  int64_t modulus = 1;
  double dval = 0;
};

// A predicate program. An empty program keeps every pair.
class PairPredicate {
 public:
  std::vector<PairInstr> code;

  bool empty() const { return code.empty(); }
  // Checks the program's shape (stack use, operand counts, column types, modulus != 0).
  // Throws Error(Internal) when malformed.
  void validate() const;
  // The truth of the program for one pair.
  Tri eval(int64_t id1, int64_t id2, double dist) const;
  // True when the program reads id1 or id2 (else only dist).
  bool uses_keys() const;
  // True when the pair is kept.
  bool keep(int64_t id1, int64_t id2, double dist) const { return eval(id1, id2, dist) == Tri::True; }
  // When the program keeps exactly the pairs whose dist lies in one interval (comparisons of
  // dist with non-NaN constants joined by AND, or none), sets it and returns true: dist is kept
  // when lo < dist (lo <= dist with lo_incl) and dist < hi (dist <= hi with hi_incl). Result
  // distances are never NaN, so the interval test gives the program's answer.
  bool dist_interval(double* lo, bool* lo_incl, double* hi, bool* hi_incl) const;
  // The program as text (for EXPLAIN and test messages), e.g. "(dist > 0.5) AND (id1 % 3 = 1)".
  std::string describe() const;
};

// The keys of result pairs: a record (i, j) has id1 = a[i], id2 = b[j], swapped in a self-join
// so that id1 <= id2 (as gpu_simjoin returns them).
struct PairKeys {
  const int64_t* a = nullptr;
  const int64_t* b = nullptr;
  bool self = false;
  void get(const PairRecord& r, int64_t* id1, int64_t* id2) const {
    int64_t x = a[r.i], y = b[r.j];
    if (self && x > y) std::swap(x, y);
    *id1 = x;
    *id2 = y;
  }
};

// A predicate bound to the keys of one call: what an engine applies to its result pages.
class PairFilter {
 public:
  PairFilter(const PairPredicate& pred, const PairKeys& keys) : pred_(pred), keys_(keys), keys_used_(pred.uses_keys()) {}
  // In-place stable select: moves the kept records of pairs[0, n) to the front, in order, and
  // returns how many were kept. Thread-safe (reads only shared state).
  size_t select(PairRecord* pairs, size_t n) const;
  const PairPredicate& predicate() const { return pred_; }
  const PairKeys& keys() const { return keys_; }

 private:
  const PairPredicate& pred_;
  PairKeys keys_;
  bool keys_used_;
};

}  // namespace gpu2bs
