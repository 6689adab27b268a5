// Problem descriptions handed to every engine, and the derived constants computed once on the
// host in float64 (DESIGN.md "Precision"). No PostgreSQL and no CUDA headers here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "arith.h"

namespace gpu2bs {

// A float8 as PostgreSQL prints it: the shortest decimal form that reads back as the same
// double (messages of the validation errors).
std::string float8_text(double v);

class PairFilter;
class PairStage;
struct PairReduce;

enum class Precision { Float32, Float64 };

// Points in structure-of-arrays form: coord[k][i] is coordinate k of point i, as read from SQL.
struct PointsView {
  int dims = 0;
  size_t n = 0;
  const double* coord[kMaxDims] = {};
  const char* name = nullptr;  // the input as messages name it (a relation), or null
  // Input index of each point, or null (the index is the position). The GPU join emits these
  // indices (a slab's points carry the whole input's); other engines and families ignore it.
  const uint32_t* index = nullptr;
};

// Largest number of points of one input (an aggregate's rows, a relation of a join): point
// indices are 32-bit in every engine.
constexpr uint64_t kMaxPoints = 4294967295u;

// Refuses an input of more than kMaxPoints points. Throws Error(ProgramLimit).
void check_point_count(uint64_t n, const char* name = nullptr);

// Bounding box of one or two point sets, in float64.
struct Bounds {
  int dims = 0;
  double lo[kMaxDims] = {};
  double hi[kMaxDims] = {};
  double diagonal() const;
};

class Control;  // engine.h

// Bounding box of `a` (and of `b` too when given). With a Control of more than one thread and
// at least 2^21 coordinates (two chunks of 2^20), the chunks are scanned on its threads
// (parallel_for); the box is the same bit for bit whatever the thread count.
Bounds compute_bounds(const PointsView& a, const PointsView* b = nullptr, Control* ctl = nullptr);

// Refuses data whose distances would overflow the chosen precision (a silently wrong answer
// otherwise): |coordinate| beyond float32 range, or a bounding box diagonal whose square
// overflows. Throws Error(InvalidParameter).
void check_range(const Bounds& box, Precision prec);

// A distance threshold (join eps, pair-count radius r) with its square computed once in
// float64 and rounded to float32. Whether a pair passes (d2 <= square in the working precision)
// depends on that pair and the threshold alone: the square is refused when it underflows or
// overflows the precision, so the grid of cells a little wider than the threshold finds every
// passing pair.
struct Threshold {
  double v = 0;
  double sq = 0;   // v * v in float64
  float sq_f = 0;  // (float) sq
};

// Join radius: positive; +Infinity joins every pair; a finite eps whose square is not a normal
// number of the precision is refused. Throws Error(InvalidParameter).
Threshold make_eps(double eps, Precision prec);
// Pair-count radius: non-negative; 0 counts pairs at distance 0, +Infinity every pair; a
// positive finite r whose square is not a normal number of the precision is refused.
Threshold make_radius(double r, Precision prec);

// Spatial distance histogram, 2-BS Type-II (framework paper, section 3.3.2).
struct SdhParams {
  int nbuckets = 0;
  bool explicit_width = false;  // false: width = bounding-box diagonal / nbuckets, clamp to last
  double width = 0;             // bucket width w (float64)
  double inv_width = 0;         // 1 / w, or 0 when w == 0 (all points coincide)
  float inv_width_f = 0;        // (float) inv_width
};

// Largest accepted bucket count (documented in the README).
constexpr int kMaxBuckets = 1 << 20;

// Derives the SDH constants; `explicit_width` false means "from the bounding box". Validates
// nbuckets and width (the width's reciprocal and square must be normal numbers of the
// precision). Throws Error(InvalidParameter).
SdhParams make_sdh_params(int nbuckets, double width, bool explicit_width, const Bounds& box,
                          Precision prec);

struct SdhProblem {
  PointsView pts;
  Bounds box;  // of pts, computed once
  SdhParams params;
  Precision prec = Precision::Float32;
};

// Validates the points (count, range) and the parameters; computes the bounding box once.
// Throws Error(InvalidParameter) or Error(ProgramLimit).
// The bounding box is computed on ctl's threads when given (compute_bounds).
SdhProblem make_sdh(const PointsView& pts, int nbuckets, double width, bool explicit_width,
                    Precision prec, Control* ctl = nullptr);

// Two-point correlation count: unordered pairs with d <= r (2-BS Type-I).
struct PairCountProblem {
  PointsView pts;
  Bounds box;        // of pts, computed once
  double r = 0;
  double r2 = 0;     // r * r in float64
  float r2_f = 0;    // (float) r2
  Precision prec = Precision::Float32;
};

// Validates the points and r (make_radius) and derives r2. Throws Error(InvalidParameter) or
// Error(ProgramLimit). The bounding box is computed on ctl's threads when given (compute_bounds).
PairCountProblem make_pair_count(const PointsView& pts, double r, Precision prec,
                                 Control* ctl = nullptr);

// Distance similarity join (2-BS Type-III): every pair with d <= eps. Self-join when b is null:
// unordered pairs i != j. Otherwise every (a_i, b_j).
struct SimjoinProblem {
  PointsView a;
  PointsView b;
  Bounds box;  // of a and b together, computed once
  bool self = true;
  double eps = 0;
  double eps2 = 0;
  float eps2_f = 0;
  Precision prec = Precision::Float32;
  uint64_t max_pairs = 0;  // 0: unlimited; otherwise Error(ProgramLimit) past it
  // Pushed-down pair predicate: engines whose applies_pair_filter() is true drop the pairs it
  // rejects before handing pages over (the caller applies it otherwise).
  const PairFilter* filter = nullptr;
  // Pushed-down reduction over dist alone: engines whose applies_pair_stage() is true hand each
  // result page to it on the worker that made it (pair indices are then the engine's own, not
  // input indices) and hand no pairs to the sink.
  PairStage* stage = nullptr;
  // Pushed-down reduction (engine.h) computed by engines whose reduces_pairs(kind) or
  // reduces_pairs_in_workers(kind) is true;
  // applies `filter` to the pairs first.
  PairReduce* reduce = nullptr;
};

// Validates the point sets (count, equal dimensions, range) and takes eps from make_eps (the
// caller may validate it before reading the points). Throws Error(InvalidParameter) or
// Error(ProgramLimit).
SimjoinProblem make_simjoin(const PointsView& a, const PointsView* b, const Threshold& eps,
                            Precision prec, uint64_t max_pairs);
// The same with eps validated here.
SimjoinProblem make_simjoin(const PointsView& a, const PointsView* b, double eps, Precision prec,
                            uint64_t max_pairs);

}  // namespace gpu2bs
