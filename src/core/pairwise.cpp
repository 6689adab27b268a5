// The all-pairs matrix over float vectors (Sarje and Aluru 2013): metric parsing, host-side
// preparation shared by both engines, kNN list merging and output, and the CPU engine: column
// chunks of b transposed into cache-sized slabs, row blocks of a taken by the workers, and a
// 4 x 16 register tile (cpu_pairwise_kernels) accumulating each pair over d in order.
#include "pairwise.h"

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstring>

#include "error.h"
#include "parallel.h"
#include "pairwise_cpu.h"

namespace gpu2bs {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Shortest decimal form of a double (for messages).
std::string fmt(double v) {
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {
    snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (strtod(buf, nullptr) == v) break;
  }
  return buf;
}

// Floats in key order as unsigned integers (monotonic map), and back.
uint32_t ordered(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
float unordered(uint32_t o) {
  uint32_t u = (o & 0x80000000u) ? (o & 0x7fffffffu) : ~o;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

PairwiseMetric parse_pairwise_metric(const std::string& name) {
  PairwiseMetric m;
  if (name == "l1" || name == "manhattan") {
    m.kind = PairMetric::L1;
    m.p = 1;
  } else if (name == "l2" || name == "euclidean") {
    m.kind = PairMetric::L2;
  } else if (name == "sqeuclidean") {
    m.kind = PairMetric::SqEuclidean;
  } else if (name == "cosine") {
    m.kind = PairMetric::Cosine;
  } else if (name == "dot") {
    m.kind = PairMetric::Dot;
  } else if (name.rfind("lp:", 0) == 0) {
    const std::string ps = name.substr(3);
    char* end = nullptr;
    const double p = ps.empty() ? NAN : strtod(ps.c_str(), &end);
    if (ps.empty() || *end != '\0' || !(p >= 1 && p <= 64))
      throw Error(ErrorCode::InvalidParameter, "invalid lp metric \"" + name + "\"",
                  "The exponent p of lp:<p> must be a number from 1 to 64.",
                  "For example metric => 'lp:3'.");
    if (p == 1) {
      m.kind = PairMetric::L1;
    } else if (p == 2) {
      m.kind = PairMetric::L2;
    } else {
      m.kind = PairMetric::Lp;
    }
    m.p = p;
  } else {
    throw Error(ErrorCode::InvalidParameter, "unknown metric \"" + name + "\"",
                "The metrics are l1, l2, sqeuclidean, cosine, dot and lp:<p> (1 <= p <= 64).");
  }
  return m;
}

double pairwise_value(const PairwiseMetric& m, float key) {
  const double k = double(key);
  switch (m.kind) {
    case PairMetric::L1:
    case PairMetric::SqEuclidean: return k;
    case PairMetric::L2: return std::sqrt(k);
    case PairMetric::Lp: return std::pow(k, 1.0 / m.p);
    case PairMetric::Dot: return -k;
    case PairMetric::Cosine: return 1.0 + k;
  }
  return k;
}

void prepare_vectors(const PairwiseMetric& m, const double* values, size_t n, int d,
                     VectorSet* out) {
  out->n = n;
  out->d = d;
  out->storage.resize(n * size_t(d));
  out->data = out->storage.data();
  for (size_t t = 0; t < n * size_t(d); ++t) {
    const double v = values[t];
    if (!std::isfinite(v) || std::fabs(v) > double(FLT_MAX))
      throw Error(ErrorCode::InvalidParameter, "vector element out of range",
                  "Element " + std::to_string(t % size_t(d) + 1) + " of row " +
                      std::to_string(t / size_t(d) + 1) + " is " + fmt(v) +
                      "; elements must be finite float4 numbers.");
    out->data[t] = float(v);
  }
  normalize_vectors(m, out);
}

void normalize_vectors(const PairwiseMetric& m, VectorSet* v) {
  if (m.kind != PairMetric::Cosine) return;
  for (size_t i = 0; i < v->n; ++i) {
    float* r = v->data + i * size_t(v->d);
    float acc = 0;
    for (int k = 0; k < v->d; ++k) acc = op_fma(r[k], r[k], acc);
    const float norm = std::sqrt(acc);
    if (!(norm > 0) || !std::isfinite(norm)) {
      if (norm > 0) {
        // The squares overflow: scale down first (exact powers of two), then normalize.
        float mx = 0;
        for (int k = 0; k < v->d; ++k) mx = std::max(mx, std::fabs(r[k]));
        int e = 0;
        (void)std::frexp(mx, &e);
        for (int k = 0; k < v->d; ++k) r[k] = std::ldexp(r[k], -e);
        acc = 0;
        for (int k = 0; k < v->d; ++k) acc = op_fma(r[k], r[k], acc);
        const float n2 = std::sqrt(acc);
        for (int k = 0; k < v->d; ++k) r[k] = r[k] / n2;
      }
      continue;  // a zero vector stays zero: cosine distance 1 to every vector
    }
    for (int k = 0; k < v->d; ++k) r[k] = r[k] / norm;
  }
}

PairwiseProblem make_pairwise(const PairwiseMetric& m, const VectorSet& a, const VectorSet* b,
                              int k, bool has_k, double threshold, bool has_threshold,
                              PairwisePrecision prec, uint64_t max_pairs) {
  if (has_k == has_threshold)
    throw Error(ErrorCode::InvalidParameter,
                has_k ? "k and threshold are mutually exclusive" : "k or threshold is required",
                "gpu_pairwise returns either the k best pairs of each row (k) or every pair "
                "within a threshold (threshold).");
  if (has_k && k < 1)
    throw Error(ErrorCode::InvalidParameter, "k must be at least 1",
                "k is " + std::to_string(k) + ".");
  if (has_threshold && std::isnan(threshold))
    throw Error(ErrorCode::InvalidParameter, "threshold must not be NaN");
  const VectorSet& bb = b ? *b : a;
  if (a.n && bb.n && a.d != bb.d)
    throw Error(ErrorCode::InvalidParameter, "vectors of different lengths",
                "The rows of the first relation have " + std::to_string(a.d) +
                    " elements, those of the second " + std::to_string(bb.d) + ".");
  if (a.n > UINT32_MAX || bb.n > UINT32_MAX)
    throw Error(ErrorCode::ProgramLimit, "too many rows for gpu_pairwise",
                "At most 4294967295 rows per relation are supported.");
  PairwiseProblem p;
  p.metric = m;
  p.a = &a;
  p.b = &bb;
  p.self = b == nullptr;
  p.d = a.n ? a.d : bb.d;
  p.k = has_k ? k : 0;
  p.precision = prec;
  p.max_pairs = max_pairs;
  if (has_threshold) {
    p.threshold = threshold;
    // The largest float key whose value passes: values are non-decreasing in the key (for dot,
    // non-increasing, with the comparison reversed), so the passing keys are a prefix.
    auto pass = [&](float key) {
      const double v = pairwise_value(m, key);
      return m.larger_is_better() ? v >= threshold : v <= threshold;
    };
    // Distance keys are sums of non-negative terms (+0 or more); dot keys take any value.
    const bool nonneg = !(m.kind == PairMetric::Dot || m.kind == PairMetric::Cosine);
    uint32_t lo = ordered(nonneg ? 0.0f : -INFINITY), hi = ordered(INFINITY);
    if (!pass(unordered(lo))) {
      p.none_pass = true;
    } else {
      while (lo < hi) {  // invariant: pass(lo)
        const uint32_t mid = lo + (hi - lo + 1) / 2;
        if (pass(unordered(mid)))
          lo = mid;
        else
          hi = mid - 1;
      }
      p.key_max = unordered(lo);
    }
  }
  if (p.k > 0 && max_pairs && double(a.n) * double(pairwise_row_k(p)) > double(max_pairs))
    throw Error(ErrorCode::ProgramLimit, "gpu_pairwise result too large",
                std::to_string(a.n) + " rows with " + std::to_string(pairwise_row_k(p)) +
                    " neighbours each exceed gpu2bs.max_result_rows (" +
                    std::to_string(max_pairs) + ").",
                "Lower k, or raise gpu2bs.max_result_rows.");
  return p;
}

size_t pairwise_row_k(const PairwiseProblem& p) {
  const size_t others = p.self ? (p.b->n > 0 ? p.b->n - 1 : 0) : p.b->n;
  return std::min<size_t>(size_t(p.k), others);
}

float pairwise_key(const PairwiseProblem& p, size_t i, size_t j) {
  const float* u = p.a->row(i);
  const float* v = p.b->row(j);
  const double pp = p.metric.p;
  float acc = 0;
  switch (p.metric.kind) {
#define G2_PW_CASE(M)                                                 \
  case M:                                                             \
    for (int k = 0; k < p.d; ++k) acc = pw_step<M>(acc, u[k], v[k], pp); \
    return pw_key<M>(acc);
    G2_PW_CASE(PairMetric::L1)
    G2_PW_CASE(PairMetric::L2)
    G2_PW_CASE(PairMetric::SqEuclidean)
    G2_PW_CASE(PairMetric::Cosine)
    G2_PW_CASE(PairMetric::Dot)
    G2_PW_CASE(PairMetric::Lp)
#undef G2_PW_CASE
  }
  return acc;
}

// Orders entries by pw_less (for sorting and heaps: a max-heap keeps the worst on top).
static bool entry_less(const KnnEntry& x, const KnnEntry& y) { return pw_less(x.key, x.j, y.key, y.j); }

void knn_merge(std::vector<KnnEntry>& cand, size_t k) {
  if (cand.size() > k) {
    std::nth_element(cand.begin(), cand.begin() + long(k), cand.end(), entry_less);
    cand.resize(k);
  }
  std::sort(cand.begin(), cand.end(), entry_less);
}

void emit_knn(const PairwiseProblem& p, const KnnEntry* lists, const uint32_t* count,
              size_t stride, PairSink& sink, size_t page, RunStats& stats) {
  std::vector<PairRecord> buf;
  buf.reserve(std::max<size_t>(page, 1));
  for (size_t i = 0; i < p.a->n; ++i) {
    const KnnEntry* l = lists + i * stride;
    for (uint32_t t = 0; t < count[i]; ++t) {
      buf.push_back(PairRecord{uint32_t(i), l[t].j, pairwise_value(p.metric, l[t].key)});
      if (buf.size() >= page) {
        sink.consume(buf.data(), buf.size());
        stats.pairs_emitted += buf.size();
        buf.clear();
      }
    }
  }
  if (!buf.empty()) {
    sink.consume(buf.data(), buf.size());
    stats.pairs_emitted += buf.size();
  }
}

namespace {

// Rows of a per work item, and the register tile of the kernels.
constexpr size_t kRowsPerItem = 32;

// Columns of b per transposed slab: about 4 MB of float32, a multiple of every tile width.
size_t slab_columns(int d, size_t nb) {
  constexpr size_t W = kPwMaxTileCols;
  size_t c = (size_t(4) << 20) / (sizeof(float) * size_t(std::max(d, 1)));
  c = std::max<size_t>(W, c / W * W);
  c = std::min<size_t>(c, 65536);
  const size_t need = (nb + W - 1) / W * W;
  return std::min(c, std::max<size_t>(need, W));
}

// Per-row kNN state: a max-heap (worst on top) of at most k entries, in lists[i * k ...].
struct KnnState {
  size_t k;
  std::vector<KnnEntry> lists;
  std::vector<uint32_t> count;
  KnnState(size_t rows, size_t kk) : k(kk), lists(rows * kk), count(rows, 0) {}
  void offer(size_t i, float key, uint32_t j) {
    KnnEntry* h = lists.data() + i * k;
    uint32_t& c = count[i];
    if (c < k) {
      h[c++] = KnnEntry{key, j};
      std::push_heap(h, h + c, entry_less);
    } else if (pw_less(key, j, h[0].key, h[0].j)) {
      std::pop_heap(h, h + c, entry_less);
      h[c - 1] = KnnEntry{key, j};
      std::push_heap(h, h + c, entry_less);
    }
  }
  // The key a new entry must beat (ties by index), or +Inf with room left.
  float bound(size_t i) const { return count[i] < k ? INFINITY : lists[i * k].key; }
  void finish(size_t i) {
    KnnEntry* h = lists.data() + i * k;
    std::sort_heap(h, h + count[i], entry_less);
  }
};

}  // namespace

void cpu_pairwise(const PairwiseProblem& p, PairSink& sink, Control& ctl) {
  auto t0 = Clock::now();
  const size_t na = p.a->n, nb = p.b->n;
  const int d = p.d;
  const bool knn = p.k > 0;
  const size_t row_k = knn ? pairwise_row_k(p) : 0;
  if (na == 0 || nb == 0 || (knn && row_k == 0) || (!knn && p.none_pass)) return;
  const PairwiseKernels& kern = cpu_pairwise_kernels();
  const PwBlockFn block = kern.block[int(p.metric.kind)];
  const size_t TR = size_t(kern.rows), TC = size_t(kern.cols);
  const int nt = std::max(1, ctl.threads);
  const size_t slab = slab_columns(d, nb);
  const size_t items = (na + kRowsPerItem - 1) / kRowsPerItem;
  std::vector<float> bt(size_t(d) * slab);
  KnnState state(knn ? na : 0, row_k);
  const size_t page_pairs = std::max<size_t>(ctl.page_pairs, 64);
  uint64_t emitted = 0;
  ctl.stats.prepare_s += seconds_since(t0);
  for (size_t c0 = 0; c0 < nb; c0 += slab) {
    const size_t cols = std::min(slab, nb - c0);
    const size_t padded = (cols + kPwMaxTileCols - 1) / kPwMaxTileCols * kPwMaxTileCols;
    // Transpose the slab: bt[k * slab + c] = b[c0 + c][k]; padding columns are zero.
    t0 = Clock::now();
    parallel_for(ctl, (padded + 255) / 256, [&](size_t blk, int) {
      const size_t cb = blk * 256, ce = std::min(padded, cb + 256);
      for (size_t c = cb; c < ce; ++c) {
        if (c < cols) {
          const float* src = p.b->row(c0 + c);
          for (int k = 0; k < d; ++k) bt[size_t(k) * slab + c] = src[k];
        } else {
          for (int k = 0; k < d; ++k) bt[size_t(k) * slab + c] = 0.0f;
        }
      }
    });
    ctl.stats.prepare_s += seconds_since(t0);
    t0 = Clock::now();
    std::atomic<size_t> next{0};
    WorkerGroup group(
        nt,
        [&](int, WorkerGroup& g) {
          WorkerGroup::Page page;
          page.reserve(page_pairs);
          float keys[kPwMaxTileRows * kPwMaxTileCols];
          for (;;) {
            if (g.stopping()) return;
            const size_t it = next.fetch_add(1, std::memory_order_relaxed);
            if (it >= items) break;
            const size_t r0 = it * kRowsPerItem, r1 = std::min(na, r0 + kRowsPerItem);
            // A self-join's threshold mode needs columns j > i only.
            size_t cstart = 0;
            if (p.self && !knn) {
              if (c0 + cols <= r0 + 1) continue;
              cstart = r0 + 1 > c0 ? (r0 + 1 - c0) / TC * TC : 0;
            }
            for (size_t cb = cstart; cb < padded; cb += TC) {
              if ((cb & 1023) == 0 && g.stopping()) return;
              for (size_t i0 = r0; i0 < r1; i0 += TR) {
                const int rows = int(std::min<size_t>(TR, r1 - i0));
                const float* arow[kPwMaxTileRows];
                for (int r = 0; r < int(TR); ++r) arow[r] = p.a->row(i0 + size_t(std::min(r, rows - 1)));
                block(arow, bt.data() + cb, slab, d, p.metric.p, keys);
                const size_t cend = std::min<size_t>(TC, cols - std::min(cols, cb));
                for (int r = 0; r < rows; ++r) {
                  const size_t i = i0 + size_t(r);
                  const float* kr = keys + size_t(r) * TC;
                  if (knn) {
                    float bound = state.bound(i);
                    for (size_t c = 0; c < cend; ++c) {
                      const size_t j = c0 + cb + c;
                      if (kr[c] > bound || (p.self && j == i)) continue;
                      state.offer(i, kr[c], uint32_t(j));
                      bound = state.bound(i);
                    }
                  } else {
                    for (size_t c = 0; c < cend; ++c) {
                      const size_t j = c0 + cb + c;
                      if (kr[c] > p.key_max || (p.self && j <= i)) continue;
                      page.push_back(PairRecord{uint32_t(i), uint32_t(j), pairwise_value(p.metric, kr[c])});
                      if (page.size() == page_pairs) {
                        if (!g.push_page(std::move(page))) return;
                        page = WorkerGroup::Page();
                        page.reserve(page_pairs);
                      }
                    }
                  }
                }
              }
            }
          }
          if (!page.empty()) g.push_page(std::move(page));
        },
        ctl.max_pages);
    group.drive(ctl, [&](WorkerGroup::Page& pg) {
      emitted += pg.size();
      if (p.max_pairs && emitted > p.max_pairs)
        throw Error(ErrorCode::ProgramLimit, "gpu_pairwise result too large",
                    "The result exceeds gpu2bs.max_result_rows (" + std::to_string(p.max_pairs) + ").",
                    "Lower the threshold, or raise gpu2bs.max_result_rows.");
      auto tm = Clock::now();
      sink.consume(pg.data(), pg.size());
      ctl.stats.merge_s += seconds_since(tm);
    });
    ctl.stats.kernel_s += seconds_since(t0);
  }
  ctl.stats.pairs_examined += uint64_t(na) * uint64_t(nb);
  ctl.stats.pairs_emitted += emitted;
  if (knn) {
    t0 = Clock::now();
    for (size_t i = 0; i < na; ++i) state.finish(i);
    emit_knn(p, state.lists.data(), state.count.data(), row_k, sink, page_pairs, ctl.stats);
    ctl.stats.merge_s += seconds_since(t0);
  }
}

}  // namespace gpu2bs
