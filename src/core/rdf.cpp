// The RDF problem: validation, the host-built cell lists both engines read, the volume and the
// normalization, and the choice of the CPU kernel variant.
#include "rdf.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine.h"
#include "error.h"
#include "periodic.h"
#include "rdf_cpu.h"

namespace gpu2bs {

namespace {

// Unit of the working precision's last place relative to a magnitude (2^-23 or 2^-52).
double rel_ulp(Precision prec) { return prec == Precision::Float32 ? 0x1p-23 : 0x1p-52; }

// r_max squared, widened by 2^-10, in the precision: the cut of rdf_bucket. d2 >= cut2 gives
// sqrt(d2) * inv_w >= nbuckets in either precision (the widening exceeds every rounding of the
// square root, the reciprocal and the product), so the cut drops only pairs sdh_bucket drops.
double cut2_of(double r_max) { return r_max * r_max * (1.0 + 0x1p-10); }

}  // namespace

void check_rdf_args(int nbuckets, double r_max, Precision prec) {
  if (!std::isfinite(r_max) || r_max <= 0)
    throw Error(ErrorCode::InvalidParameter, "r_max must be a positive finite number",
                "r_max is " + (std::isnan(r_max) ? std::string("NaN") : float8_text(r_max)) + ".");
  if (nbuckets < 1 || nbuckets > kMaxBuckets)
    throw Error(ErrorCode::InvalidParameter,
                "nbuckets must be between 1 and " + std::to_string(kMaxBuckets),
                "nbuckets is " + std::to_string(nbuckets) + ".");
  make_sdh_params(nbuckets, r_max / nbuckets, true, Bounds(), prec);
  const double c2 = cut2_of(r_max);
  const double lim = prec == Precision::Float32 ? double(FLT_MAX) : DBL_MAX;
  if (!(c2 < lim / 4))
    throw Error(ErrorCode::InvalidParameter,
                std::string("r_max out of range for ") +
                    (prec == Precision::Float32 ? "float4" : "float8") + " precision",
                "The square of r_max " + float8_text(r_max) + " overflows the precision.",
                prec == Precision::Float32 ? "Set gpu2bs.precision = float8, or rescale the coordinates."
                                           : "Rescale the coordinates.");
}

namespace {

// The checks and fields make_rdf and make_rdf_edges share: point counts, dimensions, the box
// and r_max against it, the bounds and their range.
// `rname` names r_max in messages.
RdfProblem make_rdf_common(const PointsView& a, const PointsView* b, int nbuckets, double r_max,
                           const double* box, int nbox, Precision prec, const char* rname) {
  check_point_count(a.n, a.name);
  if (b) check_point_count(b->n, b->name);
  if (b && b->dims != a.dims)
    throw Error(ErrorCode::InvalidParameter, "relations have different numbers of coordinates",
                std::to_string(a.dims) + " and " + std::to_string(b->dims) + " coordinates.");
  RdfProblem p;
  p.a = a;
  p.b = b ? *b : a;
  p.self = b == nullptr;
  p.nbuckets = nbuckets;
  p.r_max = r_max;
  p.prec = prec;
  check_box(box, nbox, a.dims, r_max, rname, p.box);
  p.bounds = compute_bounds(p.a, p.self ? nullptr : &p.b);
  check_range(p.bounds, prec);
  check_box_range(p.bounds, p.box, prec);
  return p;
}

}  // namespace

RdfProblem make_rdf(const PointsView& a, const PointsView* b, int nbuckets, double r_max,
                    const double* box, int nbox, Precision prec) {
  check_rdf_args(nbuckets, r_max, prec);
  RdfProblem p = make_rdf_common(a, b, nbuckets, r_max, box, nbox, prec, "r_max");
  p.params = make_sdh_params(nbuckets, r_max / nbuckets, true, Bounds(), prec);
  return p;
}

void check_edges(const std::vector<double>& edges, Precision prec, const char* what) {
  const std::string w(what);
  if (edges.size() < 2 || edges.size() > size_t(kMaxEdgeBins) + 1)
    throw Error(ErrorCode::InvalidParameter,
                w + " must have between 2 and " + std::to_string(kMaxEdgeBins + 1) + " elements",
                w + " has " + std::to_string(edges.size()) + " elements.");
  const bool f32 = prec == Precision::Float32;
  double prev_sq = -1;
  for (size_t k = 0; k < edges.size(); ++k) {
    const double e = edges[k];
    if (!std::isfinite(e) || e < 0)
      throw Error(ErrorCode::InvalidParameter, w + " must be non-negative finite numbers",
                  w + " element " + std::to_string(k + 1) + " is " +
                      (std::isnan(e) ? std::string("NaN") : float8_text(e)) + ".");
    if (k > 0 && !(e > edges[k - 1]))
      throw Error(ErrorCode::InvalidParameter, w + " must be strictly increasing",
                  w + " element " + std::to_string(k + 1) + " is " + float8_text(e) +
                      ", the one before it " + float8_text(edges[k - 1]) + ".");
    const double sq = f32 ? double(float(e * e)) : e * e;
    if (e > 0 && !(sq >= (f32 ? double(FLT_MIN) : DBL_MIN)))
      throw Error(ErrorCode::InvalidParameter,
                  w + " out of range for " + (f32 ? "float4" : "float8") + " precision",
                  "The square of " + w + " element " + std::to_string(k + 1) + " (" +
                      float8_text(e) + ") underflows " + (f32 ? "float4" : "float8") + ".",
                  f32 ? "Use 0 or a larger edge, or set gpu2bs.precision = float8."
                      : "Use 0 or a larger edge, or rescale the coordinates.");
    if (k > 0 && !(sq > prev_sq))
      throw Error(ErrorCode::InvalidParameter,
                  std::string("squares of ") + what + " must be strictly increasing in " +
                      (f32 ? "float4" : "float8") + " precision",
                  w + " elements " + std::to_string(k) + " and " + std::to_string(k + 1) + " (" +
                      float8_text(edges[k - 1]) + ", " + float8_text(e) +
                      ") have the same rounded square.",
                  f32 ? "Use edges further apart, or set gpu2bs.precision = float8."
                      : "Use edges further apart.");
    prev_sq = sq;
  }
  const double last = edges.back();
  const double lim = f32 ? double(FLT_MAX) : DBL_MAX;
  const double sq = last * last * (1.0 + 0x1p-10);
  if (!(sq < lim / 4))
    throw Error(ErrorCode::InvalidParameter,
                std::string("last element of ") + what + " out of range for " +
                    (f32 ? "float4" : "float8") + " precision",
                "The square of " + float8_text(last) + " overflows " +
                    (f32 ? "float4" : "float8") + ".",
                f32 ? "Set gpu2bs.precision = float8, or rescale the coordinates."
                    : "Rescale the coordinates.");
}

RdfProblem make_rdf_edges(const PointsView& a, const PointsView* b,
                          const std::vector<double>& edges, const double* box, int nbox,
                          Precision prec) {
  check_edges(edges, prec, "edges");
  const int nb = int(edges.size()) - 1;
  RdfProblem p = make_rdf_common(a, b, nb, edges.back(), box, nbox, prec, "the last edge");
  p.edges = edges;
  p.params.nbuckets = nb;
  p.params.explicit_width = true;
  p.params.width = edges.back() / nb;
  return p;
}

template <typename T>
RdfCells<T> build_rdf_cells(const RdfProblem& p) {
  RdfCells<T> c;
  const int D = p.a.dims;
  c.dims = D;
  const size_t na = p.a.n, nb = p.self ? 0 : p.b.n;
  const double margin = 16 * rel_ulp(p.prec);
  double ext[kMaxDims], lo[kMaxDims], cw[kMaxDims];
  for (int k = 0; k < D; ++k) {
    const bool per = p.box[k] > 0;
    lo[k] = per ? 0 : p.bounds.lo[k];
    ext[k] = per ? p.box[k] : p.bounds.hi[k] - p.bounds.lo[k];
    const double mag = std::max({std::fabs(p.bounds.lo[k]), std::fabs(p.bounds.hi[k]), p.box[k]});
    const double pad = p.r_max * (1.0 + 0x1p-10) + margin * mag;
    double m = std::floor(ext[k] / pad);
    m = std::min(std::max(m, 1.0), double(1 << 20));
    int n = int(m);
    if (per && n < 3) n = 1;
    c.ncell[k] = n;
  }
  // At most about two cells per point (and 2^31, as cell ids are 32-bit): the largest axis
  // halves until the grid fits.
  const double cap = std::min(2147483648.0, std::max(64.0, 2.0 * double(na + nb)));
  for (;;) {
    double prod = 1;
    for (int k = 0; k < D; ++k) prod *= c.ncell[k];
    if (prod <= cap) break;
    int big = 0;
    for (int k = 1; k < D; ++k)
      if (c.ncell[k] > c.ncell[big]) big = k;
    int n = c.ncell[big] / 2;
    if (p.box[big] > 0 && n < 3) n = 1;
    c.ncell[big] = std::max(n, 1);
  }
  c.cells = 1;
  for (int k = 0; k < D; ++k) {
    c.cells *= uint64_t(c.ncell[k]);
    cw[k] = ext[k] / c.ncell[k];
    const bool per = p.box[k] > 0;
    c.len[k] = per ? T(p.box[k]) : T(0);
    c.half[k] = per ? T(p.box[k] / 2) : std::numeric_limits<T>::infinity();
  }
  c.cut2 = T(cut2_of(p.r_max));
  if (!p.edges.empty()) {
    c.e2.resize(p.edges.size());
    for (size_t k = 0; k < p.edges.size(); ++k) c.e2[k] = T(p.edges[k] * p.edges[k]);
    c.cut2 = c.e2.back();
  }
  c.inv_w = sizeof(T) == 4 ? T(p.params.inv_width_f) : T(p.params.inv_width);
  c.nb_t = T(p.nbuckets);
  // Cell of each point, then a stable counting sort by cell.
  auto place = [&](const PointsView& v, std::vector<T>* out, std::vector<uint32_t>& start,
                   std::vector<uint32_t>& order) {
    std::vector<uint32_t> cell(v.n);
    start.assign(c.cells + 1, 0);
    std::vector<double> w(v.n);
    for (int k = 0; k < D; ++k) out[k].resize(v.n);
    std::vector<uint64_t> id(v.n, 0);
    for (int k = D - 1; k >= 0; --k) {
      const double L = p.box[k];
      const double* x = v.coord[k];
      for (size_t i = 0; i < v.n; ++i) {
        double xw = x[i];
        if (L > 0) {
          xw = x[i] - L * std::floor(x[i] / L);
          if (!(xw < L) || xw < 0) xw = 0;
        }
        w[i] = xw;
        int64_t ci = 0;
        if (cw[k] > 0) {
          const double q = std::floor((xw - lo[k]) / cw[k]);
          ci = q < 0 ? 0 : (q >= c.ncell[k] ? c.ncell[k] - 1 : int64_t(q));
        }
        id[i] = id[i] * uint64_t(c.ncell[k]) + uint64_t(ci);
      }
      for (size_t i = 0; i < v.n; ++i) out[k][i] = T(w[i]);
    }
    for (size_t i = 0; i < v.n; ++i) {
      cell[i] = uint32_t(id[i]);
      ++start[id[i] + 1];
    }
    for (uint64_t q = 0; q < c.cells; ++q) start[q + 1] += start[q];
    std::vector<uint32_t> pos(start.begin(), start.end() - 1);
    order.resize(v.n);
    for (size_t i = 0; i < v.n; ++i) order[pos[cell[i]]++] = uint32_t(i);
    std::vector<T> tmp(v.n);
    for (int k = 0; k < D; ++k) {
      for (size_t i = 0; i < v.n; ++i) tmp[i] = out[k][order[i]];
      out[k].swap(tmp);
    }
  };
  place(p.a, c.a, c.a_start, c.a_order);
  if (!p.self) place(p.b, c.b, c.b_start, c.b_order);
  return c;
}

template RdfCells<float> build_rdf_cells<float>(const RdfProblem&);
template RdfCells<double> build_rdf_cells<double>(const RdfProblem&);

template <typename T>
RdfNeighbors rdf_neighbors(const RdfProblem& p, const RdfCells<T>& c) {
  RdfNeighbors nb;
  const int D = c.dims;
  const std::vector<uint32_t>& bs = p.self ? c.a_start : c.b_start;
  nb.first.assign(c.cells + 1, 0);
  int noff = 1;
  for (int k = 0; k < D; ++k) noff *= 3;
  for (uint64_t q = 0; q < c.cells; ++q) {
    nb.first[q] = nb.cell.size();
    if (c.a_start[q + 1] == c.a_start[q]) continue;
    int cc[kMaxDims];
    uint64_t r = q;
    for (int k = 0; k < D; ++k) {
      cc[k] = int(r % uint64_t(c.ncell[k]));
      r /= uint64_t(c.ncell[k]);
    }
    if (bs[q + 1] > bs[q]) nb.cell.push_back(uint32_t(q));  // own cell first
    for (int o = 0; o < noff; ++o) {
      int off[kMaxDims];
      int t = o;
      bool zero = true;
      for (int k = 0; k < D; ++k) {
        off[k] = t % 3 - 1;
        t /= 3;
        zero = zero && off[k] == 0;
      }
      if (zero) continue;
      const int64_t id = rdf_neighbor(D, c.ncell, cc, off, p.box);
      if (id < 0 || uint64_t(id) == q) continue;
      if (p.self && uint64_t(id) < q) continue;
      if (bs[id + 1] == bs[id]) continue;
      nb.cell.push_back(uint32_t(id));
    }
  }
  nb.first[c.cells] = nb.cell.size();
  return nb;
}

template RdfNeighbors rdf_neighbors<float>(const RdfProblem&, const RdfCells<float>&);
template RdfNeighbors rdf_neighbors<double>(const RdfProblem&, const RdfCells<double>&);

double rdf_volume(const RdfProblem& p) {
  double v = 1;
  for (int k = 0; k < p.a.dims; ++k)
    v *= p.box[k] > 0 ? p.box[k] : p.bounds.hi[k] - p.bounds.lo[k];
  return v;
}

std::vector<RdfRow> rdf_rows(const RdfProblem& p, const std::vector<uint64_t>& counts) {
  const int D = p.a.dims;
  const double V = rdf_volume(p);
  const double na = double(p.a.n), nb = double(p.b.n);
  // Ordered pairs per unit volume: N (N - 1) / V (self), N_a N_b / V (two sets).
  const double pairs_per_v = p.self ? na * (na - 1) / V : na * nb / V;
  const double mult = p.self ? 2.0 : 1.0;
  // Volume of the unit D-ball: pi^(D/2) / Gamma(D/2 + 1).
  const double unit = std::pow(M_PI, D / 2.0) / std::tgamma(D / 2.0 + 1.0);
  std::vector<RdfRow> rows(size_t(p.nbuckets));
  const double w = p.params.width;
  for (int k = 0; k < p.nbuckets; ++k) {
    RdfRow& r = rows[size_t(k)];
    r.r_lo = p.edges.empty() ? k * w : p.edges[size_t(k)];
    r.r_hi = p.edges.empty() ? (k + 1) * w : p.edges[size_t(k) + 1];
    r.pairs = k < int(counts.size()) ? counts[size_t(k)] : 0;
    const double shell = unit * (std::pow(r.r_hi, D) - std::pow(r.r_lo, D));
    const double denom = pairs_per_v * shell;
    r.has_g = V > 0 && std::isfinite(denom) && denom > 0;
    r.g = r.has_g ? mult * double(r.pairs) / denom : 0;
  }
  return rows;
}

WeightScale rdf_weight_scale(const RdfProblem& p, const double* wa, const double* wb) {
  double m = weight_max(wa, p.a.n, p.a.name);
  if (!p.self) m = std::max(m, weight_max(wb, p.b.n, p.b.name));
  return make_weight_scale(m);
}

RdfWeightTotals rdf_weight_totals(const RdfProblem& p, const double* wa, const double* wb) {
  RdfWeightTotals t;
  t.sum_a = weight_total(wa, p.a.n, false, p.a.name);
  t.sum_sq_a = weight_total(wa, p.a.n, true, p.a.name);
  t.sum_b = p.self ? t.sum_a : weight_total(wb, p.b.n, false, p.b.name);
  return t;
}

double rdf_weighted_density(const RdfProblem& p, const RdfWeightTotals& t) {
  const double V = rdf_volume(p);
  return p.self ? (t.sum_a * t.sum_a - t.sum_sq_a) / V : t.sum_a * t.sum_b / V;
}

std::vector<RdfRow> rdf_rows_weighted(const RdfProblem& p, const WeightedCounts& counts,
                                      const RdfWeightTotals& t) {
  std::vector<RdfRow> rows = rdf_rows(p, counts.pairs);
  const int D = p.a.dims;
  const double V = rdf_volume(p);
  const double rho = rdf_weighted_density(p, t);
  const double mult = p.self ? 2.0 : 1.0;
  const double unit = std::pow(M_PI, D / 2.0) / std::tgamma(D / 2.0 + 1.0);
  for (size_t k = 0; k < rows.size(); ++k) {
    RdfRow& r = rows[k];
    r.weight_sum = k < counts.sums.size() ? weight_value(counts.sums[k], counts.scale) : 0;
    const double shell = unit * (std::pow(r.r_hi, D) - std::pow(r.r_lo, D));
    const double denom = rho * shell;
    r.has_g = V > 0 && std::isfinite(denom) && denom != 0;
    r.g = r.has_g ? mult * r.weight_sum / denom : 0;
  }
  return rows;
}

WeightedCounts cpu_rdf_weighted(const RdfProblem& p, const double* wa, const double* wb,
                                Control& ctl) {
  const WeightScale s = rdf_weight_scale(p, wa, wb);
  return rdf_cpu_run_weighted(p, wa, p.self ? wa : wb, s, ctl);
}

WeightedCounts Engine::rdf_weighted(const RdfProblem& p, const double* wa, const double* wb,
                                    Control& ctl) {
  return cpu_rdf_weighted(p, wa, wb, ctl);
}

std::vector<uint64_t> cpu_rdf(const RdfProblem& p, Control& ctl) {
  return rdf_cpu_run(p, ctl);
}

std::vector<uint64_t> Engine::rdf(const RdfProblem& p, Control& ctl) { return cpu_rdf(p, ctl); }

}  // namespace gpu2bs
