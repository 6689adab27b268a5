// The all-pairs matrix over d-dimensional float vectors (Sarje and Aluru, "All-pairs
// computations on many-core graphics processors", Parallel Computing 39 (2013)): the problem
// handed to both engines, its host-side preparation, and the CPU engine's implementation.
// No PostgreSQL and no CUDA headers here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine.h"
#include "pairwise_arith.h"

namespace gpu2bs {

// A metric as named in SQL: l1, l2, sqeuclidean, cosine, dot, lp:<p> (1 <= p <= 64; lp:1 is
// l1 and lp:2 is l2, with their arithmetic).
struct PairwiseMetric {
  PairMetric kind = PairMetric::L2;
  double p = 2;
  // True for dot: larger values are better (k best = k largest; threshold = value >= t).
  bool larger_is_better() const { return kind == PairMetric::Dot; }
  // True where the fast (TF32 tensor-core) path applies: l2, sqeuclidean, cosine, dot.
  bool gemm_form() const { return kind != PairMetric::L1 && kind != PairMetric::Lp; }
};

// Parses a metric name. Throws Error(InvalidParameter) naming the accepted ones.
PairwiseMetric parse_pairwise_metric(const std::string& name);

// The SQL value of a pair from its key (float64): l1 and sqeuclidean the sum, l2 its square
// root, lp its p-th root, dot the dot product, cosine 1 - cosine similarity.
double pairwise_value(const PairwiseMetric& m, float key);

enum class PairwisePrecision { Exact = 0, Fast = 1 };

// Vectors in row-major float32 (row i at data + i * d), converted and (for cosine) normalized
// on the host by prepare_vectors / normalize_vectors, so both engines start from the same bits.
// `data` points into `storage` or into a buffer the caller owns (the SQL layer's).
struct VectorSet {
  size_t n = 0;
  int d = 0;
  float* data = nullptr;
  std::vector<float> storage;
  const float* row(size_t i) const { return data + i * size_t(d); }
  VectorSet() = default;
  VectorSet(const VectorSet&) = delete;
  VectorSet& operator=(const VectorSet&) = delete;
};

// Largest vector length accepted.
constexpr int kMaxVectorDims = 65535;

// Rounds `values` (n x d, row-major float64) to float32 into `out`; cosine divides each row by
// its norm (computed as sqrt of the FMA chain of squares, in float32; zero rows stay zero).
// Throws Error(InvalidParameter) for values beyond float32 range.
void prepare_vectors(const PairwiseMetric& m, const double* values, size_t n, int d,
                     VectorSet* out);
// The cosine normalization of prepare_vectors, for sets filled in float32 directly (no-op for
// other metrics). Rows whose squares overflow are scaled by a power of two first.
void normalize_vectors(const PairwiseMetric& m, VectorSet* v);

// One all-pairs problem: rows of a against rows of b (b == a for a self-join, which excludes
// each row's pair with itself). Column indices of b are ranked with ties broken by index (the
// SQL layer orders b by id, so ties fall to the smaller id).
struct PairwiseProblem {
  PairwiseMetric metric;
  const VectorSet* a = nullptr;
  const VectorSet* b = nullptr;
  bool self = false;
  int d = 0;
  // k > 0: the k best columns of each row, best first (kNN). k == 0: threshold mode.
  int k = 0;
  // Threshold mode: every pair with value <= threshold (>= for dot), found as key <= key_max;
  // a self-join reports each unordered pair once, with i < j.
  double threshold = 0;
  float key_max = 0;
  bool none_pass = false;  // no float key passes the threshold
  PairwisePrecision precision = PairwisePrecision::Exact;
  uint64_t max_pairs = 0;  // 0: unlimited; otherwise Error(ProgramLimit) past it
};

// Builds the problem: checks k / threshold (exactly one of them; k >= 1; threshold not NaN),
// the dimensions, and the result bound (rows of a x k for kNN). Throws Error.
PairwiseProblem make_pairwise(const PairwiseMetric& m, const VectorSet& a, const VectorSet* b,
                              int k, bool has_k, double threshold, bool has_threshold,
                              PairwisePrecision prec, uint64_t max_pairs);

// Columns a kNN row can return: k, bounded by the other side's rows (minus the row itself for a
// self-join).
size_t pairwise_row_k(const PairwiseProblem& p);

// The exact key of pair (i, j) (reference for tests and for re-ranking on the host).
float pairwise_key(const PairwiseProblem& p, size_t i, size_t j);

// A kNN candidate: key and column index. Lists are sorted by pw_less.
struct KnnEntry {
  float key;
  uint32_t j;
};

// Merges candidate lists of one row into the best `k` (sorted by pw_less); duplicates of a
// column are not expected.
void knn_merge(std::vector<KnnEntry>& cand, size_t k);

// Emits kNN lists (lists[i * stride .. + count[i]]) as pairs (i, j, value), row by row, in
// pages of `page` pairs.
void emit_knn(const PairwiseProblem& p, const KnnEntry* lists, const uint32_t* count,
              size_t stride, PairSink& sink, size_t page, RunStats& stats);

// The CPU engine's all-pairs computation (both precisions compute exactly).
void cpu_pairwise(const PairwiseProblem& p, PairSink& sink, Control& ctl);

}  // namespace gpu2bs
