// CPU evaluation of the pair IR (pair_ir.h).
#include "pair_ir.h"

#include <cmath>
#include <cstdio>

#include "error.h"

namespace gpu2bs {

namespace {

// SQL's float8 comparison: NaN equals NaN and sorts above every other value.
int cmp_double(double x, double y) {
  if (std::isnan(x)) return std::isnan(y) ? 0 : 1;
  if (std::isnan(y)) return -1;
  return x < y ? -1 : x > y ? 1 : 0;
}

int cmp_int(int64_t x, int64_t y) { return x < y ? -1 : x > y ? 1 : 0; }

bool holds(CmpOp op, int c) {
  switch (op) {
    case CmpOp::Lt: return c < 0;
    case CmpOp::Le: return c <= 0;
    case CmpOp::Eq: return c == 0;
    case CmpOp::Ne: return c != 0;
    case CmpOp::Ge: return c >= 0;
    case CmpOp::Gt: return c > 0;
  }
  return false;
}

// SQL's int8 % : the sign of the dividend; x % -1 is 0 (also for the smallest int64).
int64_t sql_mod(int64_t x, int64_t m) { return m == -1 ? 0 : x % m; }

const char* op_text(CmpOp op) {
  static const char* t[] = {"<", "<=", "=", "<>", ">=", ">"};
  return t[int(op)];
}

const char* col_text(PairCol c) {
  static const char* t[] = {"id1", "id2", "dist"};
  return t[int(c)];
}

Tri tri_of(bool b) { return b ? Tri::True : Tri::False; }

constexpr size_t kMaxStack = 64;

}  // namespace

void PairPredicate::validate() const {
  size_t depth = 0, max_depth = 0;
  for (const PairInstr& in : code) {
    switch (in.kind) {
      case PairInstr::CmpConst:
      case PairInstr::Truth:
        depth++;
        break;
      case PairInstr::CmpCols:
        if ((in.col == PairCol::Dist) != (in.col2 == PairCol::Dist))
          throw Error(ErrorCode::Internal, "pair predicate compares dist with a key");
        depth++;
        break;
      case PairInstr::ModCmp:
        if (in.col == PairCol::Dist || in.modulus == 0)
          throw Error(ErrorCode::Internal, "pair predicate has a bad modulus");
        depth++;
        break;
      case PairInstr::And:
      case PairInstr::Or:
        if (in.n < 1 || in.n > depth) throw Error(ErrorCode::Internal, "pair predicate stack underflow");
        depth -= in.n - 1;
        break;
      case PairInstr::Not:
        if (depth < 1) throw Error(ErrorCode::Internal, "pair predicate stack underflow");
        break;
    }
    max_depth = std::max(max_depth, depth);
  }
  if (!code.empty() && depth != 1) throw Error(ErrorCode::Internal, "pair predicate leaves no single value");
  if (max_depth > kMaxStack) throw Error(ErrorCode::Internal, "pair predicate too deep");
}

Tri PairPredicate::eval(int64_t id1, int64_t id2, double dist) const {
  if (code.empty()) return Tri::True;
  Tri stack[kMaxStack];
  size_t sp = 0;
  auto ival = [&](PairCol c) { return c == PairCol::Id1 ? id1 : id2; };
  for (const PairInstr& in : code) {
    switch (in.kind) {
      case PairInstr::CmpConst:
        stack[sp++] = in.col == PairCol::Dist ? tri_of(holds(in.op, cmp_double(dist, in.dval)))
                                              : tri_of(holds(in.op, cmp_int(ival(in.col), in.ival)));
        break;
      case PairInstr::CmpCols:
        stack[sp++] = in.col == PairCol::Dist ? tri_of(holds(in.op, 0))
                                              : tri_of(holds(in.op, cmp_int(ival(in.col), ival(in.col2))));
        break;
      case PairInstr::ModCmp:
        stack[sp++] = tri_of(holds(in.op, cmp_int(sql_mod(ival(in.col), in.modulus), in.ival)));
        break;
      case PairInstr::Truth:
        stack[sp++] = in.truth;
        break;
      case PairInstr::And: {
        Tri r = Tri::True;
        for (uint32_t k = 0; k < in.n; ++k) {
          Tri v = stack[--sp];
          if (v == Tri::False) r = Tri::False;
          else if (v == Tri::Unknown && r == Tri::True) r = Tri::Unknown;
        }
        stack[sp++] = r;
        break;
      }
      case PairInstr::Or: {
        Tri r = Tri::False;
        for (uint32_t k = 0; k < in.n; ++k) {
          Tri v = stack[--sp];
          if (v == Tri::True) r = Tri::True;
          else if (v == Tri::Unknown && r == Tri::False) r = Tri::Unknown;
        }
        stack[sp++] = r;
        break;
      }
      case PairInstr::Not: {
        Tri v = stack[sp - 1];
        stack[sp - 1] = v == Tri::Unknown ? v : v == Tri::True ? Tri::False : Tri::True;
        break;
      }
    }
  }
  return stack[0];
}

std::string PairPredicate::describe() const {
  std::vector<std::string> st;
  char buf[96];
  for (const PairInstr& in : code) {
    switch (in.kind) {
      case PairInstr::CmpConst:
        if (in.col == PairCol::Dist)
          snprintf(buf, sizeof buf, "(dist %s %.17g)", op_text(in.op), in.dval);
        else
          snprintf(buf, sizeof buf, "(%s %s %lld)", col_text(in.col), op_text(in.op), (long long)in.ival);
        st.push_back(buf);
        break;
      case PairInstr::CmpCols:
        snprintf(buf, sizeof buf, "(%s %s %s)", col_text(in.col), op_text(in.op), col_text(in.col2));
        st.push_back(buf);
        break;
      case PairInstr::ModCmp:
        snprintf(buf, sizeof buf, "((%s %% %lld) %s %lld)", col_text(in.col), (long long)in.modulus,
                 op_text(in.op), (long long)in.ival);
        st.push_back(buf);
        break;
      case PairInstr::Truth:
        st.push_back(in.truth == Tri::True ? "true" : in.truth == Tri::False ? "false" : "null");
        break;
      case PairInstr::And:
      case PairInstr::Or: {
        std::string s;
        for (size_t k = st.size() - in.n; k < st.size(); ++k)
          s += (s.empty() ? "" : in.kind == PairInstr::And ? " AND " : " OR ") + st[k];
        st.resize(st.size() - in.n);
        st.push_back("(" + s + ")");
        break;
      }
      case PairInstr::Not:
        st.back() = "(NOT " + st.back() + ")";
        break;
    }
  }
  return st.empty() ? "true" : st.back();
}

bool PairPredicate::uses_keys() const {
  for (const PairInstr& in : code)
    if ((in.kind == PairInstr::CmpConst && in.col != PairCol::Dist) || in.kind == PairInstr::ModCmp ||
        (in.kind == PairInstr::CmpCols && in.col != PairCol::Dist))
      return true;
  return false;
}

size_t PairFilter::select(PairRecord* pairs, size_t n) const {
  size_t out = 0;
  if (!keys_used_) {
    // dist alone: no key lookups (two cache misses per pair on large inputs)
    for (size_t p = 0; p < n; ++p)
      if (pred_.keep(0, 0, pairs[p].dist)) pairs[out++] = pairs[p];
    return out;
  }
  for (size_t p = 0; p < n; ++p) {
    int64_t id1, id2;
    keys_.get(pairs[p], &id1, &id2);
    if (pred_.keep(id1, id2, pairs[p].dist)) pairs[out++] = pairs[p];
  }
  return out;
}

}  // namespace gpu2bs
