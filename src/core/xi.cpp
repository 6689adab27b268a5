// Correlation functions: the estimator names, the (ra, dec) to unit-sphere conversion, angular
// edges as chords, and the normalization of DD, DR and RR into xi (float64, on the host).
#include "xi.h"

#include <cctype>
#include <cmath>
#include <string>

#include "error.h"

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

}  // namespace gpu2bs
