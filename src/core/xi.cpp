// Correlation functions: the estimator names, the (ra, dec) to unit-sphere conversion, angular
// edges as chords, and the normalization of DD, DR and RR into xi (float64, on the host).
#include "xi.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

#include "engine.h"
#include "error.h"
#include "rdf.h"

namespace gpu2bs {

XiEstimator parse_xi_estimator(const std::string& name) {
  std::string s;
  for (char ch : name) s += char(std::tolower(static_cast<unsigned char>(ch)));
  if (s == "landy-szalay" || s == "ls") return XiEstimator::LandySzalay;
  if (s == "natural" || s == "peebles-hauser") return XiEstimator::Natural;
  throw Error(ErrorCode::InvalidParameter, "unknown estimator \"" + name + "\"",
              "", "Use 'landy-szalay' or 'natural'.");
}

PointsView SpherePoints::view() const {
  PointsView v;
  v.dims = 3;
  v.n = c[0].size();
  v.name = name;
  for (int k = 0; k < 3; ++k) v.coord[k] = c[k].data();
  return v;
}

SpherePoints sphere_points(const PointsView& radec) {
  if (radec.dims != 2)
    throw Error(ErrorCode::InvalidParameter,
                "angular correlation needs two coordinates (ra, dec in degrees)",
                "The points have " + std::to_string(radec.dims) + " coordinates.",
                "Name them with coords => '{ra,dec}'.");
  SpherePoints s;
  s.name = radec.name;
  const double rad = M_PI / 180;
  for (int k = 0; k < 3; ++k) s.c[k].resize(radec.n);
  for (size_t i = 0; i < radec.n; ++i) {
    const double ra = radec.coord[0][i], dec = radec.coord[1][i];
    if (!std::isfinite(ra) || !(dec >= -90 && dec <= 90))
      throw Error(ErrorCode::InvalidParameter,
                  "declination must be between -90 and 90 degrees and right ascension finite",
                  "A row has ra " + float8_text(ra) + ", dec " + float8_text(dec) + ".");
    const double a = ra * rad, d = dec * rad;
    s.c[0][i] = std::cos(d) * std::cos(a);
    s.c[1][i] = std::cos(d) * std::sin(a);
    s.c[2][i] = std::sin(d);
  }
  return s;
}

std::vector<double> chord_edges(const std::vector<double>& theta_deg) {
  std::vector<double> out(theta_deg.size());
  for (size_t k = 0; k < theta_deg.size(); ++k) {
    const double t = theta_deg[k];
    if (!(t >= 0 && t <= 180))
      throw Error(ErrorCode::InvalidParameter, "angular edges must be between 0 and 180 degrees",
                  "edges element " + std::to_string(k + 1) + " is " +
                      (std::isnan(t) ? std::string("NaN") : float8_text(t)) + ".");
    out[k] = 2 * std::sin(t * (M_PI / 360));
  }
  return out;
}

std::vector<XiRow> xi_rows(XiEstimator est, const std::vector<double>& edges,
                           const std::vector<double>& shell_edges, const XiCounts& c) {
  const size_t nb = edges.size() - 1;
  const bool analytic = c.nr < 0;
  // Unordered pairs of n points (0 below 2 points).
  auto pairs_of = [](double n) { return n >= 2 ? n * (n - 1) / 2 : 0.0; };
  const double dd_pairs = pairs_of(c.nd);
  const double dr_pairs = analytic ? 0 : c.nd * c.nr;
  const double rr_pairs = analytic ? dd_pairs : pairs_of(c.nr);
  // Volume of the unit D-ball: pi^(D/2) / Gamma(D/2 + 1).
  const double unit = std::pow(M_PI, c.dims / 2.0) / std::tgamma(c.dims / 2.0 + 1.0);
  std::vector<XiRow> rows(nb);
  for (size_t k = 0; k < nb; ++k) {
    XiRow& r = rows[k];
    r.r_lo = edges[k];
    r.r_hi = edges[k + 1];
    r.dd = k < c.dd.size() ? c.dd[k] : 0;
    double f_rr;
    if (analytic) {
      const double shell =
          unit * (std::pow(shell_edges[k + 1], c.dims) - std::pow(shell_edges[k], c.dims));
      f_rr = c.volume > 0 ? shell / c.volume : 0;
      r.rr = dd_pairs * f_rr;
      r.has_rr = true;
    } else {
      r.dr = k < c.dr.size() ? c.dr[k] : 0;
      r.has_dr = true;
      r.rr = double(k < c.rr.size() ? c.rr[k] : 0);
      r.has_rr = true;
      f_rr = rr_pairs > 0 ? r.rr / rr_pairs : 0;
    }
    if (!(dd_pairs > 0) || !(f_rr > 0)) continue;
    const double f_dd = double(r.dd) / dd_pairs;
    if (analytic || est == XiEstimator::Natural) {
      r.xi = f_dd / f_rr - 1;
      r.has_xi = true;
    } else if (dr_pairs > 0) {
      const double f_dr = double(r.dr) / dr_pairs;
      r.xi = (f_dd - 2 * f_dr + f_rr) / f_rr;
      r.has_xi = true;
    }
  }
  return rows;
}

std::vector<XiRow> xi_rows_weighted(XiEstimator est, const std::vector<double>& edges,
                                    const std::vector<double>& shell_edges, const XiCounts& c) {
  std::vector<XiRow> rows = xi_rows(est, edges, shell_edges, c);
  const bool analytic = c.nr < 0;
  const double dd_pairs = (c.wd * c.wd - c.wd2) / 2;
  const double dr_pairs = analytic ? 0 : c.wd * c.wr;
  const double rr_pairs = analytic ? dd_pairs : (c.wr * c.wr - c.wr2) / 2;
  const double unit = std::pow(M_PI, c.dims / 2.0) / std::tgamma(c.dims / 2.0 + 1.0);
  for (size_t k = 0; k < rows.size(); ++k) {
    XiRow& r = rows[k];
    r.dd_w = k < c.dd_w.size() ? c.dd_w[k] : 0;
    r.has_xi = false;
    r.xi = 0;
    double f_rr;
    if (analytic) {
      const double shell =
          unit * (std::pow(shell_edges[k + 1], c.dims) - std::pow(shell_edges[k], c.dims));
      f_rr = c.volume > 0 ? shell / c.volume : 0;
      r.rr_w = dd_pairs * f_rr;
    } else {
      r.dr_w = k < c.dr_w.size() ? c.dr_w[k] : 0;
      r.rr_w = k < c.rr_w.size() ? c.rr_w[k] : 0;
      f_rr = rr_pairs > 0 ? r.rr_w / rr_pairs : 0;
    }
    if (!(dd_pairs > 0) || !(f_rr > 0)) continue;
    const double f_dd = r.dd_w / dd_pairs;
    if (analytic || est == XiEstimator::Natural) {
      r.xi = f_dd / f_rr - 1;
      r.has_xi = true;
    } else if (dr_pairs > 0) {
      const double f_dr = r.dr_w / dr_pairs;
      r.xi = (f_dd - 2 * f_dr + f_rr) / f_rr;
      r.has_xi = true;
    }
  }
  return rows;
}

namespace {

// A copy of some points of a view (coordinates per axis, and their weights when given).
struct Subset {
  std::vector<double> c[kMaxDims];
  std::vector<double> w;
  // The copy as a view with the dimensions and name of `like`.
  PointsView view(const PointsView& like) const {
    PointsView v = like;
    v.n = c[0].size();
    for (int k = 0; k < like.dims; ++k) v.coord[k] = c[k].data();
    return v;
  }
};

// The points of `v` (and their weights `w`, when given) whose label differs from `skip`.
Subset without(const PointsView& v, const int64_t* label, int64_t skip,
               const double* w = nullptr) {
  Subset s;
  for (size_t i = 0; i < v.n; ++i)
    if (label[i] != skip) {
      for (int k = 0; k < v.dims; ++k) s.c[k].push_back(v.coord[k][i]);
      if (w) s.w.push_back(w[i]);
    }
  return s;
}

// DD, and DR and RR with randoms, of one pair of point sets.
XiCounts count_all(Engine& eng, Control& ctl, const PointsView& d, const PointsView* r,
                   const std::vector<double>& bin_edges, const double* box, int nbox,
                   Precision prec) {
  XiCounts c;
  c.nd = double(d.n);
  c.dims = d.dims;
  const RdfProblem pdd = make_rdf_edges(d, nullptr, bin_edges, box, nbox, prec);
  c.dd = eng.rdf(pdd, ctl);
  if (r) {
    c.dr = eng.rdf(make_rdf_edges(d, r, bin_edges, box, nbox, prec), ctl);
    c.rr = eng.rdf(make_rdf_edges(*r, nullptr, bin_edges, box, nbox, prec), ctl);
    c.nr = double(r->n);
  } else {
    c.volume = rdf_volume(pdd);
  }
  return c;
}

// Weighted DD, and DR and RR with randoms, of one pair of point sets: counts, exact weight sums
// and the weight totals of the normalization.
XiCounts count_all_weighted(Engine& eng, Control& ctl, const PointsView& d, const double* wd,
                            const PointsView* r, const double* wr,
                            const std::vector<double>& bin_edges, const double* box, int nbox,
                            Precision prec) {
  // The weight sums of a run as float64 values, each rounded once.
  auto values = [](const WeightedCounts& w) {
    std::vector<double> v(w.sums.size());
    for (size_t k = 0; k < v.size(); ++k) v[k] = weight_value(w.sums[k], w.scale);
    return v;
  };
  XiCounts c;
  c.weighted = true;
  c.nd = double(d.n);
  c.dims = d.dims;
  const RdfProblem pdd = make_rdf_edges(d, nullptr, bin_edges, box, nbox, prec);
  const WeightedCounts dd = eng.rdf_weighted(pdd, wd, nullptr, ctl);
  c.dd = dd.pairs;
  c.dd_w = values(dd);
  const RdfWeightTotals td = rdf_weight_totals(pdd, wd, nullptr);
  c.wd = td.sum_a;
  c.wd2 = td.sum_sq_a;
  if (r) {
    const WeightedCounts dr = eng.rdf_weighted(make_rdf_edges(d, r, bin_edges, box, nbox, prec), wd, wr, ctl);
    c.dr = dr.pairs;
    c.dr_w = values(dr);
    const RdfProblem prr = make_rdf_edges(*r, nullptr, bin_edges, box, nbox, prec);
    const WeightedCounts rr = eng.rdf_weighted(prr, wr, nullptr, ctl);
    c.rr = rr.pairs;
    c.rr_w = values(rr);
    const RdfWeightTotals tr = rdf_weight_totals(prr, wr, nullptr);
    c.wr = tr.sum_a;
    c.wr2 = tr.sum_sq_a;
    c.nr = double(r->n);
  } else {
    c.volume = rdf_volume(pdd);
  }
  return c;
}

// The jackknife errors of `rows`: with the P distinct labels of data and randoms, xi_k from
// rows_without(label k) for each, and xi_err = sqrt((P - 1) / P * sum_k (xi_k - mean)^2) where
// P >= 2 and every xi_k is defined. Throws Error(ProgramLimit) beyond kMaxXiPatches labels.
template <typename RowsWithout>
void add_jackknife(std::vector<XiRow>& rows, const PointsView& data, const PointsView* randoms,
                   const int64_t* data_patch, const int64_t* randoms_patch,
                   RowsWithout rows_without) {
  std::vector<int64_t> labels(data_patch, data_patch + data.n);
  labels.insert(labels.end(), randoms_patch, randoms_patch + randoms->n);
  std::sort(labels.begin(), labels.end());
  labels.erase(std::unique(labels.begin(), labels.end()), labels.end());
  if (labels.size() > kMaxXiPatches)
    throw Error(ErrorCode::ProgramLimit, "too many jackknife patches",
                std::to_string(labels.size()) + " distinct patch values; at most " +
                    std::to_string(kMaxXiPatches) + " are supported.");
  const size_t P = labels.size(), nb = rows.size();
  std::vector<std::vector<double>> xk(nb);
  std::vector<bool> defined(nb, P >= 2);
  for (int64_t skip : labels) {
    const std::vector<XiRow> rk = rows_without(skip);
    for (size_t k = 0; k < nb; ++k) {
      if (!rk[k].has_xi) defined[k] = false;
      xk[k].push_back(rk[k].xi);
    }
  }
  for (size_t k = 0; k < nb; ++k) {
    if (!defined[k]) continue;
    double mean = 0;
    for (double x : xk[k]) mean += x;
    mean /= double(P);
    double ss = 0;
    for (double x : xk[k]) ss += (x - mean) * (x - mean);
    rows[k].xi_err = std::sqrt(double(P - 1) / double(P) * ss);
    rows[k].has_err = true;
  }
}

}  // namespace

std::vector<XiRow> xi_run(Engine& eng, Control& ctl, XiEstimator est, const PointsView& data,
                          const PointsView* randoms, const std::vector<double>& edges,
                          const std::vector<double>& bin_edges, const double* box, int nbox,
                          Precision prec, const int64_t* data_patch,
                          const int64_t* randoms_patch) {
  if (randoms && randoms->dims != data.dims)
    throw Error(ErrorCode::InvalidParameter, "relations have different numbers of coordinates",
                std::to_string(data.dims) + " and " + std::to_string(randoms->dims) +
                    " coordinates.");
  const XiCounts all = count_all(eng, ctl, data, randoms, bin_edges, box, nbox, prec);
  std::vector<XiRow> rows = xi_rows(est, edges, bin_edges, all);
  if (!data_patch) return rows;
  if (!randoms)
    throw Error(ErrorCode::InvalidParameter, "jackknife errors need randoms",
                "The analytic RR of a box has no patches.", "Give a relation of random points.");
  add_jackknife(rows, data, randoms, data_patch, randoms_patch, [&](int64_t skip) {
    const Subset sd = without(data, data_patch, skip), sr = without(*randoms, randoms_patch, skip);
    const PointsView vd = sd.view(data), vr = sr.view(*randoms);
    return xi_rows(est, edges, bin_edges, count_all(eng, ctl, vd, &vr, bin_edges, box, nbox, prec));
  });
  return rows;
}

std::vector<XiRow> xi_run_weighted(Engine& eng, Control& ctl, XiEstimator est,
                                   const PointsView& data, const double* wd,
                                   const PointsView* randoms, const double* wr,
                                   const std::vector<double>& edges,
                                   const std::vector<double>& bin_edges, const double* box,
                                   int nbox, Precision prec, const int64_t* data_patch,
                                   const int64_t* randoms_patch) {
  if (randoms && randoms->dims != data.dims)
    throw Error(ErrorCode::InvalidParameter, "relations have different numbers of coordinates",
                std::to_string(data.dims) + " and " + std::to_string(randoms->dims) +
                    " coordinates.");
  std::vector<XiRow> rows = xi_rows_weighted(
      est, edges, bin_edges,
      count_all_weighted(eng, ctl, data, wd, randoms, wr, bin_edges, box, nbox, prec));
  if (!data_patch) return rows;
  if (!randoms)
    throw Error(ErrorCode::InvalidParameter, "jackknife errors need randoms",
                "The analytic RR of a box has no patches.", "Give a relation of random points.");
  add_jackknife(rows, data, randoms, data_patch, randoms_patch, [&](int64_t skip) {
    const Subset sd = without(data, data_patch, skip, wd), sr = without(*randoms, randoms_patch, skip, wr);
    const PointsView vd = sd.view(data), vr = sr.view(*randoms);
    return xi_rows_weighted(est, edges, bin_edges,
                            count_all_weighted(eng, ctl, vd, sd.w.data(), &vr, sr.w.data(),
                                               bin_edges, box, nbox, prec));
  });
  return rows;
}

}  // namespace gpu2bs
