// Radial distribution function (RDF): the histogram of pair distances below r_max over one point
// set (unordered pairs of distinct points) or two (every (a, b) pair), with minimum-image
// distances on periodic axes, over cell lists built once on the host and shared by both
// engines, and its normalization as freud density.RDF and MDAnalysis InterRDF define it.
// No PostgreSQL and no CUDA headers here; the distance helpers compile on the device too.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "arith.h"
#include "problem.h"
#include "weights.h"

namespace gpu2bs {

class Control;

// a + b, rounded to nearest.
G2_HD float op_add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
G2_HD double op_add(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

// Minimum-image difference along one axis of coordinates wrapped into [0, L]: d = a - b, then
// d - L when d > L/2, d + L when d < -L/2 (one rounded operation each). A non-periodic axis has
// half = +Infinity and keeps d. Symmetric: periodic_delta(b, a) = -periodic_delta(a, b).
template <typename T>
G2_HD T periodic_delta(T a, T b, T len, T half) {
  const T d = op_sub(a, b);
  const T below = op_sub(d, len), above = op_add(d, len);  // both computed: selects vectorize
  return d > half ? below : (d < -half ? above : d);
}

// Squared minimum-image distance: d2 = dx0*dx0, then d2 = fma(dxk, dxk, d2) for k = 1..D-1
// (the order of sq_dist), each dxk from periodic_delta.
template <typename T, int D>
G2_HD T periodic_sq_dist(const T* a, const T* b, const T* len, const T* half) {
  T dx = periodic_delta(a[0], b[0], len[0], half[0]);
  T acc = op_mul(dx, dx);
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (int k = 1; k < D; ++k) {
    const T dk = periodic_delta(a[k], b[k], len[k], half[k]);
    acc = op_fma(dk, dk, acc);
  }
  return acc;
}

// The bucket of a pair: -1 unless d2 < cut2 (a bound past which sdh_bucket drops every pair),
// else sdh_bucket with bucket width r_max / nbuckets and pairs past the last bucket dropped.
template <typename T>
G2_HD int rdf_bucket(T d2, T cut2, T inv_w, T nb_t) {
  return d2 < cut2 ? sdh_bucket<T>(d2, inv_w, nb_t, T(-1)) : -1;
}

// rdf_bucket with the bucket computed for every pair and selected after (the same value; no
// branch, so CPU compilers vectorize it).
template <typename T>
G2_HD int rdf_bucket_select(T d2, T cut2, T inv_w, T nb_t) {
  const int k = sdh_bucket<T>(d2, inv_w, nb_t, T(-1));
  return d2 < cut2 ? k : -1;
}

// The bin of a squared distance among ascending squared edges e2[0..nb]: the k with
// e2[k] <= d2 < e2[k+1], or -1 when d2 < e2[0] or d2 >= e2[nb]. A branch-free binary search, so
// the CPU and the GPU pick the same bin from the same comparisons.
template <typename T>
G2_HD int edges_bucket(T d2, const T* e2, int nb) {
  if (!(d2 < e2[nb]) || d2 < e2[0]) return -1;
  int base = 0, n = nb;
  while (n > 1) {
    const int half = n / 2;
    base = e2[base + half] <= d2 ? base + half : base;
    n -= half;
  }
  return base;
}

// Most bins a call with explicit edges may have (the squared edges sit in GPU shared memory).
constexpr int kMaxEdgeBins = 4096;

// An RDF call: a (and b unless self), nbuckets over [0, r_max), per-axis periodic lengths.
// With `edges` (nbuckets + 1 ascending values, r_max the last) bin k holds the pairs with
// fl(edges[k]^2) <= d2 < fl(edges[k+1]^2), the squares computed in float64 and rounded once to
// the precision, instead of the equal-width buckets.
struct RdfProblem {
  PointsView a;
  PointsView b;              // = a when self
  bool self = true;
  int nbuckets = 0;
  double r_max = 0;
  SdhParams params;          // width r_max / nbuckets, explicit (pairs past r_max dropped)
  double box[kMaxDims] = {}; // periodic length per axis, 0 = not periodic
  Bounds bounds;             // of a and b together, computed once
  Precision prec = Precision::Float32;
  std::vector<double> edges; // bin edges (empty: equal-width buckets of params)
};

// Validates nbuckets (1..kMaxBuckets) and r_max (positive, finite, its width's reciprocal and
// square normal numbers of the precision) before any point is read. Throws
// Error(InvalidParameter).
void check_rdf_args(int nbuckets, double r_max, Precision prec);

// Validates the box (`nbox` lengths, one per axis, each 0 (not periodic) or positive and
// finite; null `box`: no axis periodic), r_max against it (at most half the shortest
// periodic side) and the points (count, equal dimensions, range). `b` null: self. Throws
// Error(InvalidParameter) or Error(ProgramLimit).
RdfProblem make_rdf(const PointsView& a, const PointsView* b, int nbuckets, double r_max,
                    const double* box, int nbox, Precision prec);

// Validates bin edges before any point is read: 2 to kMaxEdgeBins + 1 finite values, the first
// at least 0, strictly increasing, their squares (float64, rounded to the precision) strictly
// increasing, the last square a normal number of the precision. `what` names the argument in
// messages. Throws Error(InvalidParameter).
void check_edges(const std::vector<double>& edges, Precision prec, const char* what);

// make_rdf with explicit bin edges (check_edges; r_max = the last edge).
RdfProblem make_rdf_edges(const PointsView& a, const PointsView* b,
                          const std::vector<double>& edges, const double* box, int nbox,
                          Precision prec);

// Cell lists of an RDF problem in the working precision T, built on the host (both engines use
// the same lists). Cells are at least r_max (plus a rounding margin) wide on every axis, so
// every pair within r_max lies in the same or adjacent cells; a periodic axis has 1 or at least
// 3 cells, so the 3^D neighbour offsets reach distinct cells. Coordinates on periodic axes are
// wrapped into [0, L) in float64 (x - L * floor(x / L)) before rounding to T.
template <typename T>
struct RdfCells {
  int dims = 0;
  int ncell[kMaxDims] = {};
  uint64_t cells = 0;
  std::vector<T> a[kMaxDims];      // a's points sorted by cell (SoA)
  std::vector<T> b[kMaxDims];      // b's points (empty when self)
  std::vector<uint32_t> a_start;   // cells + 1 offsets into a
  std::vector<uint32_t> b_start;   // cells + 1 offsets into b (empty when self)
  std::vector<uint32_t> a_order;   // input index of each sorted point of a
  std::vector<uint32_t> b_order;   // input index of each sorted point of b (empty when self)
  T len[kMaxDims] = {};            // periodic length in T, 0 when not periodic
  T half[kMaxDims] = {};           // (T)(L / 2), +Infinity when not periodic
  T cut2 = 0;                      // rdf_bucket's cut (with edges: the last squared edge)
  std::vector<T> e2;               // squared edges in T (empty: equal-width buckets)
  T inv_w = 0;
  T nb_t = 0;
  uint64_t max_b_per_a = 0;        // most b points any a cell's neighbourhood holds
};

template <typename T>
RdfCells<T> build_rdf_cells(const RdfProblem& p);

// Linear cell id of the cell at offset `off` (each -1, 0 or 1) from cell coordinates `cc`:
// wraps periodic axes; -1 when the cell lies outside a non-periodic axis, or when an axis of
// one cell gets a nonzero offset.
inline int64_t rdf_neighbor(int dims, const int* ncell, const int* cc, const int* off,
                            const double* box) {
  int64_t id = 0;
  for (int k = dims - 1; k >= 0; --k) {
    int c = cc[k] + off[k];
    if (ncell[k] == 1) {
      if (off[k] != 0) return -1;
    } else if (box[k] > 0) {
      c = c < 0 ? c + ncell[k] : (c >= ncell[k] ? c - ncell[k] : c);
    } else if (c < 0 || c >= ncell[k]) {
      return -1;
    }
    id = id * ncell[k] + c;
  }
  return id;
}

// Per-cell neighbour lists: for cell c, the cells c' > c (self) or every neighbour cell (two
// sets) with points, the own cell first; offsets in `first` (cells + 1).
struct RdfNeighbors {
  std::vector<uint64_t> first;
  std::vector<uint32_t> cell;
};
template <typename T>
RdfNeighbors rdf_neighbors(const RdfProblem& p, const RdfCells<T>& c);

// The CPU engine's RDF counts (all cores).
std::vector<uint64_t> cpu_rdf(const RdfProblem& p, Control& ctl);

// The CPU engine's weighted RDF (all cores): the pairs and buckets of cpu_rdf, and per bucket
// the exact fixed-point sum of w_i * w_j (weights.h) on the grid of the larger of max|wa| and
// max|wb|. `wa` has one finite weight per point of a (input order), `wb` one per point of b
// (ignored when self). Throws Error(InvalidParameter) for a non-finite weight.
WeightedCounts cpu_rdf_weighted(const RdfProblem& p, const double* wa, const double* wb,
                                Control& ctl);

// The fixed-point grid of a weighted RDF: make_weight_scale of the largest |w| of a and b
// (every weight checked finite).
WeightScale rdf_weight_scale(const RdfProblem& p, const double* wa, const double* wb);

// One output row: bucket edges, pair count and g(r) (has_g false: undefined, SQL NULL); the
// weighted form also the sum of w_i * w_j over the bucket's pairs.
struct RdfRow {
  double r_lo = 0, r_hi = 0;
  uint64_t pairs = 0;
  double g = 0;
  bool has_g = false;
  double weight_sum = 0;
};

// The volume the normalization uses: the product over axes of the periodic length, or of the
// extent of the bounding box of a and b on a non-periodic axis (float64).
double rdf_volume(const RdfProblem& p);

// Bucket edges and g(r) from the counts. Self: g = 2 P / (N (N - 1) / V * S); two sets:
// g = P / (N_a N_b / V * S); S = the D-ball shell volume between the edges. g is undefined
// when the denominator is 0.
std::vector<RdfRow> rdf_rows(const RdfProblem& p, const std::vector<uint64_t>& counts);

// The weight totals a weighted normalization uses: sum of w and of w^2 over a, sum of w over b
// (= a's when self), each an exact fixed-point sum rounded once (weight_total).
struct RdfWeightTotals {
  double sum_a = 0, sum_sq_a = 0, sum_b = 0;
};
RdfWeightTotals rdf_weight_totals(const RdfProblem& p, const double* wa, const double* wb);

// The expected weight of the pairs per unit volume of separation space for an ideal gas (the
// weighted counterpart of N (N - 1) / V and N_a N_b / V): self ((sum w)^2 - sum w^2) / V (the
// ordered pairs of distinct points), two sets (sum w_a)(sum w_b) / V.
double rdf_weighted_density(const RdfProblem& p, const RdfWeightTotals& t);

// Rows of the weighted RDF: pairs and weight_sum per bucket, and g = m W / (rho_w S) with
// W = the bucket's weight sum, rho_w = rdf_weighted_density, S = the D-ball shell volume and
// m = 2 (self) or 1; with every weight 1 it is rdf_rows' g. g is undefined when rho_w S is 0 or
// not finite.
std::vector<RdfRow> rdf_rows_weighted(const RdfProblem& p, const WeightedCounts& counts,
                                      const RdfWeightTotals& t);

}  // namespace gpu2bs
