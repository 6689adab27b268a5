// The CPU engine of pair expressions: a vectorized interpreter. The pairs of one row i of `a`
// with a run of up to kLanes rows of `b` are evaluated together, node by node, each node a tight
// loop over the lanes that the compiler vectorizes; AND, OR and CASE evaluate their later
// operands only on the lanes that still need them, so errors arise exactly where SQL's
// left-to-right evaluation raises them. Rows of a are split in items taken by every core
// (parallel_for); the lanes' b rows stay in L1 while the item's a rows pass over them.
// Compiled with -ffp-contract=off (CORE_CXXFLAGS): each + - * / rounds once, as on the GPU.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>

#include "error.h"
#include "pair_expr.h"
#include "pair_expr_ops.h"
#include "parallel.h"

namespace gpu2bs {

namespace {

constexpr int kLanes = 256;                 // pairs evaluated together
constexpr uint64_t kItemPairs = uint64_t(1) << 22;  // pair evaluations per work item (a few ms)
constexpr int kMaxItemRows = 256;

// Masks: 1 = the lane is evaluated. A null mask pointer means every lane.
template <typename T>
class VecEval {
 public:
  struct NumRef {
    const T* v;
    const uint8_t* n;  // 1 = NULL; null pointer: no lane is NULL
  };

  VecEval(const PairExpr& e, const T* const* acol, const uint8_t* const* anul, const T* const* bcol,
          const uint8_t* const* bnul)
      : e_(e), acol_(acol), anul_(anul), bcol_(bcol), bnul_(bnul) {
    const size_t n = e.nodes.size();
    val_.assign(n * kLanes, T(0));
    nul_.assign(n * kLanes, 0);
    tri_.assign(n * kLanes, 0);
    msk_.assign(n * kLanes, 0);
    ones_.assign(kLanes, 1);
    for (size_t k = 0; k < n; ++k) {
      const ExprNode& nd = e.nodes[k];
      if (nd.op == ExprOp::Const) {
        std::fill(val_.begin() + long(k * kLanes), val_.begin() + long((k + 1) * kLanes), T(nd.value));
      } else if (nd.op == ExprOp::Truth) {
        std::fill(tri_.begin() + long(k * kLanes), tri_.begin() + long((k + 1) * kLanes), uint8_t(nd.truth));
      }
    }
  }

  // Selects the pairs (i, j0 + l), l < len.
  void at(int64_t i, int64_t j0, int len) {
    i_ = i;
    j0_ = j0;
    len_ = len;
  }

  NumRef num(int k, const uint8_t* act) {
    const ExprNode& n = e_.nodes[size_t(k)];
    T* out = &val_[size_t(k) * kLanes];
    uint8_t* on = &nul_[size_t(k) * kLanes];
    const int len = len_;
    switch (n.op) {
      case ExprOp::Col: {
        if (n.side == 1) {
          const uint8_t* nl = bnul_[n.col];
          return {bcol_[n.col] + j0_, nl ? nl + j0_ : nullptr};
        }
        const T x = acol_[n.col][i_];
        const uint8_t* nl = anul_[n.col];
        if (nl && nl[i_]) return {out, ones_.data()};
        for (int l = 0; l < len; ++l) out[l] = x;
        return {out, nullptr};
      }
      case ExprOp::Const: return {out, n.is_null ? ones_.data() : nullptr};
      case ExprOp::Add: case ExprOp::Sub: case ExprOp::Mul: case ExprOp::Div:
        return arith(k, n, act, out, on);
      case ExprOp::Neg: {
        NumRef x = num(e_.arg(k, 0), act);
        for (int l = 0; l < len; ++l) out[l] = -x.v[l];
        return {out, x.n};
      }
      case ExprOp::Abs: {
        NumRef x = num(e_.arg(k, 0), act);
        for (int l = 0; l < len; ++l) out[l] = std::fabs(x.v[l]);
        return {out, x.n};
      }
      case ExprOp::Sqrt: {
        NumRef x = num(e_.arg(k, 0), act);
        bool bad = false;
        for (int l = 0; l < len; ++l) {
          bad |= x.v[l] < T(0);
          out[l] = std::sqrt(x.v[l]);  // NaN on a negative lane, which then raises
        }
        if (bad) check_unary(x, act, xops::sqrt_<T>);
        return {out, x.n};
      }
      case ExprOp::Pow: {
        NumRef x = num(e_.arg(k, 0), act), y = num(e_.arg(k, 1), act);
        const uint8_t* nn = merge_nulls(x.n, y.n, on);
        for (int l = 0; l < len; ++l) {
          ExprFault f = ExprFault::None;
          out[l] = xops::pow_(x.v[l], y.v[l], f);
          if (f != ExprFault::None && live(act, nn, l)) throw ExprError(f);
        }
        return {out, nn};
      }
      case ExprOp::Atan2: {
        NumRef y = num(e_.arg(k, 0), act), x = num(e_.arg(k, 1), act);
        const uint8_t* nn = merge_nulls(x.n, y.n, on);
        for (int l = 0; l < len; ++l) out[l] = xops::atan2_(y.v[l], x.v[l]);
        return {out, nn};
      }
      case ExprOp::Atan: {
        NumRef x = num(e_.arg(k, 0), act);
        for (int l = 0; l < len; ++l) out[l] = xops::atan_(x.v[l]);
        return {out, x.n};
      }
      case ExprOp::Sin: return unary(k, act, out, xops::sin_<T>);
      case ExprOp::Cos: return unary(k, act, out, xops::cos_<T>);
      case ExprOp::Tan: return unary(k, act, out, xops::tan_<T>);
      case ExprOp::Asin: return unary(k, act, out, xops::asin_<T>);
      case ExprOp::Acos: return unary(k, act, out, xops::acos_<T>);
      case ExprOp::Exp: return unary(k, act, out, xops::exp_<T>);
      case ExprOp::Ln: return unary(k, act, out, xops::ln_<T>);
      case ExprOp::Radians: return unary(k, act, out, xops::radians_<T>);
      case ExprOp::Degrees: return unary(k, act, out, xops::degrees_<T>);
      case ExprOp::Least:
      case ExprOp::Greatest: {
        const bool least = n.op == ExprOp::Least;
        for (int l = 0; l < len; ++l) on[l] = 1;
        for (uint32_t a = 0; a < n.nargs; ++a) {
          NumRef x = num(e_.arg(k, int(a)), act);
          for (int l = 0; l < len; ++l) {
            if (x.n && x.n[l]) continue;
            if (on[l]) {
              out[l] = x.v[l];
              on[l] = 0;
              continue;
            }
            const int c = xops::cmp(x.v[l], out[l]);
            if (least ? c < 0 : c > 0) out[l] = x.v[l];
          }
        }
        return {out, on};
      }
      case ExprOp::Case: {
        uint8_t* rem = &msk_[size_t(k) * kLanes];
        for (int l = 0; l < len; ++l) {
          rem[l] = act ? act[l] : 1;
          on[l] = 1;
        }
        uint8_t take[kLanes];
        for (uint32_t a = 0; a < n.nargs; a += 2) {
          const bool is_else = a + 1 == n.nargs;
          int any = 0;
          if (is_else) {
            for (int l = 0; l < len; ++l) {
              take[l] = rem[l];
              any |= rem[l];
            }
          } else {
            const uint8_t* c = tri(e_.arg(k, int(a)), rem);
            for (int l = 0; l < len; ++l) {
              take[l] = rem[l] & uint8_t(c[l] == uint8_t(Tri::True));
              any |= take[l];
            }
          }
          if (!any) continue;
          NumRef v = num(e_.arg(k, int(is_else ? a : a + 1)), take);
          for (int l = 0; l < len; ++l)
            if (take[l]) {
              out[l] = v.v[l];
              on[l] = v.n ? v.n[l] : 0;
              rem[l] = 0;
            }
        }
        return {out, on};
      }
      default: break;
    }
    throw Error(ErrorCode::Internal, "pair expression: not a number node");
  }

  const uint8_t* tri(int k, const uint8_t* act) {
    const ExprNode& n = e_.nodes[size_t(k)];
    uint8_t* out = &tri_[size_t(k) * kLanes];
    const int len = len_;
    switch (n.op) {
      case ExprOp::Truth: return out;
      case ExprOp::Cmp: {
        NumRef x = num(e_.arg(k, 0), act), y = num(e_.arg(k, 1), act);
        compare(n.cmp, x.v, y.v, out, len);
        if (x.n || y.n)
          for (int l = 0; l < len; ++l)
            if ((x.n && x.n[l]) || (y.n && y.n[l])) out[l] = uint8_t(Tri::Unknown);
        return out;
      }
      case ExprOp::And:
      case ExprOp::Or: {
        const bool is_and = n.op == ExprOp::And;
        const uint8_t stop = is_and ? uint8_t(Tri::False) : uint8_t(Tri::True);
        const uint8_t start = is_and ? uint8_t(Tri::True) : uint8_t(Tri::False);
        uint8_t* m = &msk_[size_t(k) * kLanes];
        for (int l = 0; l < len; ++l) out[l] = start;
        for (uint32_t a = 0; a < n.nargs; ++a) {
          int any = 0;
          for (int l = 0; l < len; ++l) {
            m[l] = uint8_t((act ? act[l] : 1) & (out[l] != stop));
            any |= m[l];
          }
          if (!any) break;
          const uint8_t* v = tri(e_.arg(k, int(a)), a == 0 ? act : m);
          for (int l = 0; l < len; ++l) {
            const uint8_t r = out[l], x = v[l];
            out[l] = (r == stop || x == stop) ? stop : ((r == 2 || x == 2) ? uint8_t(2) : start);
          }
        }
        return out;
      }
      case ExprOp::Not: {
        const uint8_t* v = tri(e_.arg(k, 0), act);
        for (int l = 0; l < len; ++l) out[l] = v[l] == 2 ? uint8_t(2) : uint8_t(1 - v[l]);
        return out;
      }
      case ExprOp::IsNull:
      case ExprOp::IsNotNull: {
        NumRef x = num(e_.arg(k, 0), act);
        const uint8_t is = n.op == ExprOp::IsNull ? 1 : 0;
        for (int l = 0; l < len; ++l) out[l] = uint8_t((x.n ? x.n[l] : 0) == is ? 1 : 0);
        return out;
      }
      case ExprOp::Case: {
        uint8_t* rem = &msk_[size_t(k) * kLanes];
        for (int l = 0; l < len; ++l) {
          rem[l] = act ? act[l] : 1;
          out[l] = uint8_t(Tri::Unknown);
        }
        uint8_t take[kLanes];
        for (uint32_t a = 0; a < n.nargs; a += 2) {
          const bool is_else = a + 1 == n.nargs;
          int any = 0;
          if (is_else) {
            for (int l = 0; l < len; ++l) {
              take[l] = rem[l];
              any |= rem[l];
            }
          } else {
            const uint8_t* c = tri(e_.arg(k, int(a)), rem);
            for (int l = 0; l < len; ++l) {
              take[l] = rem[l] & uint8_t(c[l] == uint8_t(Tri::True));
              any |= take[l];
            }
          }
          if (!any) continue;
          const uint8_t* v = tri(e_.arg(k, int(is_else ? a : a + 1)), take);
          for (int l = 0; l < len; ++l)
            if (take[l]) {
              out[l] = v[l];
              rem[l] = 0;
            }
        }
        return out;
      }
      default: break;
    }
    throw Error(ErrorCode::Internal, "pair expression: not a boolean node");
  }

 private:
  // True when lane l is evaluated and its operands are not NULL.
  static bool live(const uint8_t* act, const uint8_t* nn, int l) {
    return (!act || act[l]) && !(nn && nn[l]);
  }

  const uint8_t* merge_nulls(const uint8_t* x, const uint8_t* y, uint8_t* out) const {
    if (!x) return y;
    if (!y) return x;
    for (int l = 0; l < len_; ++l) out[l] = x[l] | y[l];
    return out;
  }

  // A unary function with PostgreSQL's checks, lane by lane (libm calls do not vectorize).
  NumRef unary(int k, const uint8_t* act, T* out, T (*fn)(T, ExprFault&)) {
    NumRef x = num(e_.arg(k, 0), act);
    for (int l = 0; l < len_; ++l) {
      ExprFault f = ExprFault::None;
      out[l] = fn(x.v[l], f);
      if (f != ExprFault::None && live(act, x.n, l)) throw ExprError(f);
    }
    return {out, x.n};
  }

  // Slow path of a vectorized unary check: the first evaluated, non-NULL lane that faults.
  void check_unary(NumRef x, const uint8_t* act, T (*fn)(T, ExprFault&)) {
    for (int l = 0; l < len_; ++l) {
      if (!live(act, x.n, l)) continue;
      ExprFault f = ExprFault::None;
      fn(x.v[l], f);
      if (f != ExprFault::None) throw ExprError(f);
    }
  }

  // + - * /: the operation on every lane, then PostgreSQL's checks as one vectorized test;
  // only when a lane fails it, the lanes are checked one by one (NULL or skipped lanes of a
  // CASE may hold anything).
  NumRef arith(int k, const ExprNode& n, const uint8_t* act, T* out, uint8_t* on) {
    NumRef x = num(e_.arg(k, 0), act), y = num(e_.arg(k, 1), act);
    const int len = len_;
    const T* xv = x.v;
    const T* yv = y.v;
    const T big = std::numeric_limits<T>::max();
    int bad = 0;
    T (*fn)(T, T, ExprFault&) = nullptr;
    switch (n.op) {
      case ExprOp::Add:
        for (int l = 0; l < len; ++l) {
          const T r = xv[l] + yv[l];
          out[l] = r;
          bad |= int(std::fabs(r) > big) & int(std::fabs(xv[l]) <= big) & int(std::fabs(yv[l]) <= big);
        }
        fn = xops::add<T>;
        break;
      case ExprOp::Sub:
        for (int l = 0; l < len; ++l) {
          const T r = xv[l] - yv[l];
          out[l] = r;
          bad |= int(std::fabs(r) > big) & int(std::fabs(xv[l]) <= big) & int(std::fabs(yv[l]) <= big);
        }
        fn = xops::sub<T>;
        break;
      case ExprOp::Mul:
        for (int l = 0; l < len; ++l) {
          const T r = xv[l] * yv[l];
          out[l] = r;
          bad |= (int(std::fabs(r) > big) & int(std::fabs(xv[l]) <= big) & int(std::fabs(yv[l]) <= big)) |
                 (int(r == T(0)) & int(xv[l] != T(0)) & int(yv[l] != T(0)));
        }
        fn = xops::mul<T>;
        break;
      default:  // Div
        for (int l = 0; l < len; ++l) {
          const T r = xv[l] / yv[l];
          out[l] = r;
          bad |= int(yv[l] == T(0)) | (int(std::fabs(r) > big) & int(std::fabs(xv[l]) <= big)) |
                 (int(r == T(0)) & int(xv[l] != T(0)) & int(std::fabs(yv[l]) <= big));
        }
        fn = xops::div<T>;
        break;
    }
    const uint8_t* nn = merge_nulls(x.n, y.n, on);
    if (bad) {
      for (int l = 0; l < len; ++l) {
        if (!live(act, nn, l)) continue;
        ExprFault f = ExprFault::None;
        out[l] = fn(xv[l], yv[l], f);
        if (f != ExprFault::None) throw ExprError(f);
      }
    }
    return {out, nn};
  }

  // float8 comparison with PostgreSQL's NaN order, vectorizable.
  static void compare(CmpOp op, const T* x, const T* y, uint8_t* out, int len) {
    auto lt = [](T a, T b) { return uint8_t((a == a) & ((b != b) | (a < b))); };
    auto le = [](T a, T b) { return uint8_t(((a != a) & (b != b)) | ((a == a) & ((b != b) | (a <= b)))); };
    auto eq = [](T a, T b) { return uint8_t(((a != a) & (b != b)) | (a == b)); };
    switch (op) {
      case CmpOp::Lt: for (int l = 0; l < len; ++l) out[l] = lt(x[l], y[l]); break;
      case CmpOp::Le: for (int l = 0; l < len; ++l) out[l] = le(x[l], y[l]); break;
      case CmpOp::Eq: for (int l = 0; l < len; ++l) out[l] = eq(x[l], y[l]); break;
      case CmpOp::Ne: for (int l = 0; l < len; ++l) out[l] = uint8_t(1 - eq(x[l], y[l])); break;
      case CmpOp::Ge: for (int l = 0; l < len; ++l) out[l] = le(y[l], x[l]); break;
      case CmpOp::Gt: for (int l = 0; l < len; ++l) out[l] = lt(y[l], x[l]); break;
    }
  }

  const PairExpr& e_;
  const T* const* acol_;
  const uint8_t* const* anul_;
  const T* const* bcol_;
  const uint8_t* const* bnul_;
  int64_t i_ = 0, j0_ = 0;
  int len_ = 0;
  std::vector<T> val_;
  std::vector<uint8_t> nul_, tri_, msk_, ones_;
};

// The columns of one side in the precision of the evaluation (float: rounded once here).
template <typename T>
struct SideCols {
  std::vector<std::vector<T>> store;
  std::vector<const T*> col;
  std::vector<const uint8_t*> nul;
  SideCols(const ExprSide& s, int ncols) {
    col.assign(size_t(std::max(ncols, 1)), nullptr);
    nul.assign(size_t(std::max(ncols, 1)), nullptr);
    for (int c = 0; c < ncols; ++c) {
      const double* d = s.data + size_t(c) * size_t(s.n);
      if constexpr (sizeof(T) == sizeof(double)) {
        col[size_t(c)] = d;
      } else {
        store.emplace_back(d, d + s.n);
        col[size_t(c)] = store.back().data();
      }
      if (s.nulls) {
        const uint8_t* nl = s.nulls + size_t(c) * size_t(s.n);
        bool any = false;
        for (int64_t i = 0; i < s.n && !any; ++i) any = nl[i] != 0;
        if (any) nul[size_t(c)] = nl;
      }
    }
  }
};

template <typename T>
PairExprResult run(const PairExprProblem& p, PairSink* sink, Control& ctl) {
  const PairExpr& e = *p.expr;
  e.validate();
  const ExprSide& sa = p.a;
  const ExprSide& sb = p.self ? p.a : p.b;
  if (sa.ncols < e.ncols[0] || sb.ncols < (p.self ? e.ncols[0] : e.ncols[1]))
    throw Error(ErrorCode::Internal, "pair expression reads more columns than the sides have");
  if (p.self && e.ncols[1] > e.ncols[0])
    throw Error(ErrorCode::Internal, "self pair expression with more b columns than a columns");
  SideCols<T> ca(sa, sa.ncols);
  std::unique_ptr<SideCols<T>> cb_own;
  const SideCols<T>* cbp = &ca;
  if (!p.self) {
    cb_own.reset(new SideCols<T>(sb, sb.ncols));
    cbp = cb_own.get();
  }
  const SideCols<T>& cb = *cbp;
  const int64_t na = sa.n, nb = sb.n;
  PairExprResult res;
  if (p.kind == PairExprKind::Histogram) res.hist.assign(size_t(p.nbuckets), 0);
  if (na == 0 || nb == 0) return res;
  const int64_t rows = std::max<int64_t>(1, std::min<int64_t>(kMaxItemRows, int64_t(kItemPairs) / std::max<int64_t>(nb, 1)));
  const size_t items = size_t((na + rows - 1) / rows);
  const int threads = std::max(1, std::min<int>(ctl.threads > 0 ? ctl.threads : 1, int(std::min<size_t>(items, 1024))));

  // One evaluator per worker (created on first use by that worker).
  std::vector<std::unique_ptr<VecEval<T>>> evals(size_t(threads) + 1);
  auto eval_of = [&](int w) -> VecEval<T>& {
    auto& ev = evals[size_t(w)];
    if (!ev) ev.reset(new VecEval<T>(e, ca.col.data(), ca.nul.data(), cb.col.data(), cb.nul.data()));
    return *ev;
  };

  // Runs `lanes(ev, i, j0, len, keep)` for every run of pairs of item `it`, in the item's fixed
  // order: b runs of kLanes, and within each the item's a rows in order. `keep` is the lane's
  // outcome: 1 kept (predicate true and, with a value, value not NULL).
  auto for_item = [&](size_t it, int w, auto&& lanes) {
    VecEval<T>& ev = eval_of(w);
    const int64_t i0 = int64_t(it) * rows, i1 = std::min(na, i0 + rows);
    const int64_t jstart = p.self ? i0 + 1 : 0;
    uint8_t keep[kLanes];
    for (int64_t jb = jstart; jb < nb; jb += kLanes) {
      const int64_t je = std::min(nb, jb + kLanes);
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t j0 = p.self ? std::max(jb, i + 1) : jb;
        if (j0 >= je) continue;
        const int len = int(je - j0);
        ev.at(i, j0, len);
        const uint8_t* t = e.predicate >= 0 ? ev.tri(e.predicate, nullptr) : nullptr;
        const T* v = nullptr;
        if (e.value >= 0) {
          if (t) {
            int any = 0;
            for (int l = 0; l < len; ++l) {
              keep[l] = uint8_t(t[l] == uint8_t(Tri::True));
              any |= keep[l];
            }
            if (!any) continue;
            auto r = ev.num(e.value, keep);
            v = r.v;
            if (r.n)
              for (int l = 0; l < len; ++l) keep[l] &= uint8_t(!r.n[l]);
          } else {
            auto r = ev.num(e.value, nullptr);
            v = r.v;
            for (int l = 0; l < len; ++l) keep[l] = uint8_t(r.n ? !r.n[l] : 1);
          }
        } else if (t) {
          for (int l = 0; l < len; ++l) keep[l] = uint8_t(t[l] == uint8_t(Tri::True));
        } else {
          for (int l = 0; l < len; ++l) keep[l] = 1;
        }
        lanes(i, j0, len, keep, v);
      }
    }
  };

  if (p.kind == PairExprKind::Join) {
    const size_t page_pairs = std::max<size_t>(ctl.page_pairs, 64);
    std::atomic<size_t> next{0};
    WorkerGroup group(
        threads,
        [&](int w, WorkerGroup& g) {
          WorkerGroup::Page page;
          page.reserve(page_pairs);
          bool ok = true;
          while (ok && !g.stopping()) {
            const size_t it = next.fetch_add(1, std::memory_order_relaxed);
            if (it >= items) break;
            for_item(it, w, [&](int64_t i, int64_t j0, int len, const uint8_t* keep, const T*) {
              for (int l = 0; l < len; ++l)
                if (keep[l]) {
                  page.push_back(PairRecord{uint32_t(i), uint32_t(j0 + l), 0.0});
                  if (page.size() == page_pairs) {
                    ok = ok && g.push_page(std::move(page));
                    page = WorkerGroup::Page();
                    page.reserve(page_pairs);
                  }
                }
            });
          }
          if (ok && !page.empty() && !g.stopping()) g.push_page(std::move(page));
        },
        ctl.max_pages);
    uint64_t emitted = 0;
    group.drive(ctl, [&](WorkerGroup::Page& page) {
      emitted += page.size();
      if (p.max_pairs && emitted > p.max_pairs)
        throw Error(ErrorCode::ProgramLimit, "the join result exceeds gpu2bs.max_result_rows",
                    "More than " + std::to_string(p.max_pairs) + " pairs satisfy the predicate.",
                    "Raise gpu2bs.max_result_rows (0: unlimited) or narrow the predicate.");
      if (sink) sink->consume(page.data(), page.size());
    });
    res.count = emitted;
    ctl.stats.pairs_emitted += emitted;
  } else {
    std::vector<double> item_sum(p.kind == PairExprKind::Sum ? items : 0, 0.0);
    std::atomic<bool> any_inf{false};
    std::vector<uint64_t> counts(size_t(threads), 0);
    std::vector<std::vector<uint64_t>> hists(static_cast<size_t>(threads));
    parallel_for(ctl, items, [&](size_t it, int w) {
      uint64_t c = 0;
      double s = 0;
      std::vector<uint64_t>* h = nullptr;
      if (p.kind == PairExprKind::Histogram) {
        h = &hists[size_t(w)];
        if (h->empty()) h->assign(size_t(p.nbuckets), 0);
      }
      for_item(it, w, [&](int64_t, int64_t, int len, const uint8_t* keep, const T* v) {
        if (p.kind == PairExprKind::Count) {
          for (int l = 0; l < len; ++l) c += keep[l];
        } else if (p.kind == PairExprKind::Sum) {
          for (int l = 0; l < len; ++l)
            if (keep[l]) {
              s += double(v[l]);
              if (std::isinf(v[l])) any_inf.store(true, std::memory_order_relaxed);
              ++c;
            }
        } else {
          for (int l = 0; l < len; ++l)
            if (keep[l]) {
              const double x = double(v[l]);
              if (x != x) throw ExprError(ExprFault::HistogramNaN);
              const int b = pair_expr_bucket(x, p.lo, p.hi, p.nbuckets);
              if (b >= 0 && b < p.nbuckets) {
                ++(*h)[size_t(b)];
                ++c;
              }
            }
        }
      });
      counts[size_t(w)] += c;
      if (p.kind == PairExprKind::Sum) item_sum[it] = s;
    }, threads);
    for (uint64_t c : counts) res.count += c;
    for (double s : item_sum) res.sum += s;  // items in order: independent of the thread count
    res.sum_has_inf = any_inf.load();
    if (p.kind == PairExprKind::Histogram)
      for (auto& h : hists)
        for (size_t b = 0; b < h.size(); ++b) res.hist[b] += h[b];
  }
  ctl.stats.pairs_examined += p.self ? uint64_t(na) * uint64_t(na - 1) / 2 : uint64_t(na) * uint64_t(nb);
  return res;
}

}  // namespace

PairExprResult cpu_pair_expr(const PairExprProblem& p, PairSink* sink, Control& ctl) {
  if (!p.expr) throw Error(ErrorCode::Internal, "pair expression problem without an expression");
  if (p.kind == PairExprKind::Histogram &&
      (p.nbuckets < 1 || !(p.lo < p.hi) || !std::isfinite(p.lo) || !std::isfinite(p.hi)))
    throw Error(ErrorCode::Internal, "pair expression histogram with bad bounds");
  if ((p.kind == PairExprKind::Sum || p.kind == PairExprKind::Histogram) && p.expr->value < 0)
    throw Error(ErrorCode::Internal, "pair expression without a value");
  if (p.a.n > int64_t(UINT32_MAX) || p.b.n > int64_t(UINT32_MAX))
    throw Error(ErrorCode::ProgramLimit, "too many rows for a pair expression");
  const auto t0 = std::chrono::steady_clock::now();
  PairExprResult r = p.prec == Precision::Float32 ? run<float>(p, sink, ctl) : run<double>(p, sink, ctl);
  ctl.stats.kernel_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace gpu2bs
