// Two-point correlation functions xi(r) and w(theta): the pair counts DD, DR and RR in bins of
// arbitrary edges (the RDF cell lists with explicit edges, rdf.h), their normalization by the
// numbers of pairs, the Landy-Szalay and natural estimators, the analytic RR of periodic boxes
// and the unit-sphere form of (ra, dec) points. No PostgreSQL and no CUDA headers here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "problem.h"

namespace gpu2bs {

class Control;
class Engine;

// Which estimator turns the normalized counts into xi.
enum class XiEstimator { LandySzalay, Natural };

// 'landy-szalay' (also 'ls') or 'natural' (also 'peebles-hauser'), case-insensitive. Throws
// Error(InvalidParameter) for any other name.
XiEstimator parse_xi_estimator(const std::string& name);

// (ra, dec) points in degrees as unit vectors (cos dec cos ra, cos dec sin ra, sin dec), each
// angle converted by deg * (pi / 180) and every value in float64. `view()` is valid while the
// object lives.
struct SpherePoints {
  std::vector<double> c[3];
  const char* name = nullptr;
  PointsView view() const;
};

// Converts a 2-coordinate view (ra, dec in degrees; dec within [-90, 90], both finite). Throws
// Error(InvalidParameter).
SpherePoints sphere_points(const PointsView& radec);

// Angular edges in degrees (each within [0, 180]) as chord lengths on the unit sphere:
// 2 sin(theta * pi / 360) in float64. Throws Error(InvalidParameter) for an edge outside
// [0, 180] or NaN.
std::vector<double> chord_edges(const std::vector<double>& theta_deg);

// One output row of gpu_xi; a has_* flag false means SQL NULL.
struct XiRow {
  double r_lo = 0, r_hi = 0;
  uint64_t dd = 0;
  uint64_t dr = 0;
  bool has_dr = false;
  double rr = 0;
  bool has_rr = false;
  double xi = 0;
  bool has_xi = false;
  double xi_err = 0;  // jackknife error
  bool has_err = false;
  double dd_w = 0, dr_w = 0, rr_w = 0;  // weighted form: sums of w_i * w_j (dr_w with has_dr)
};

// The counts of one call and what the normalization needs. `nr` < 0: no randoms (analytic RR
// over the periodic volume `volume` in `dims` dimensions).
struct XiCounts {
  std::vector<uint64_t> dd, dr, rr;
  double nd = 0;
  double nr = -1;
  int dims = 3;
  double volume = 0;
  // Weighted form: the sums of w_i * w_j per bin and the exact totals sum w and sum w^2 of the
  // data (wd, wd2) and randoms (wr, wr2).
  bool weighted = false;
  std::vector<double> dd_w, dr_w, rr_w;
  double wd = 0, wd2 = 0, wr = 0, wr2 = 0;
};

// The rows of xi for the user's edges (`edges`, as given: degrees for w(theta)). With randoms:
// f_DD = DD / (N_D (N_D - 1) / 2), f_DR = DR / (N_D N_R), f_RR = RR / (N_R (N_R - 1) / 2);
// Landy-Szalay xi = (f_DD - 2 f_DR + f_RR) / f_RR, natural xi = f_DD / f_RR - 1. Analytic RR
// (no randoms, `shell_edges` the bin edges in the units of the coordinates): f_RR = S / V, the
// D-ball shell volume between the edges over the box volume, rr = N_D (N_D - 1) / 2 * f_RR, and
// both estimators reduce to f_DD / f_RR - 1 (the expected f_DR equals f_RR). xi is undefined
// when a denominator is 0.
std::vector<XiRow> xi_rows(XiEstimator est, const std::vector<double>& edges,
                           const std::vector<double>& shell_edges, const XiCounts& c);

// The rows of the weighted xi: xi_rows with the weight sums in place of the counts and the
// weighted numbers of pairs in place of the numbers of pairs: f_DD = DD_w / (((sum w_D)^2 -
// sum w_D^2) / 2), f_DR = DR_w / (sum w_D sum w_R), f_RR = RR_w / (((sum w_R)^2 - sum w_R^2) / 2);
// analytic RR: f_RR = S / V, rr_w = ((sum w_D)^2 - sum w_D^2) / 2 * f_RR and rr the unweighted
// expectation as xi_rows. With every weight 1 the rows equal xi_rows'. xi is undefined when a
// denominator is not positive.
std::vector<XiRow> xi_rows_weighted(XiEstimator est, const std::vector<double>& edges,
                                    const std::vector<double>& shell_edges, const XiCounts& c);

// One weighted gpu_xi call: DD of `data` with weights `wd` (one finite weight per point), and
// DR and RR with `randoms` and `wr` (null: analytic RR over the periodic box), counts and exact
// weight sums from Engine::rdf_weighted in the bins of `bin_edges`; rows labelled with `edges`.
// With patch labels the jackknife of xi_run, each xi_k from the weighted counts of the points
// (and their weights) outside patch k. Throws Error(InvalidParameter) or Error(ProgramLimit).
std::vector<XiRow> xi_run_weighted(Engine& eng, Control& ctl, XiEstimator est,
                                   const PointsView& data, const double* wd,
                                   const PointsView* randoms, const double* wr,
                                   const std::vector<double>& edges,
                                   const std::vector<double>& bin_edges, const double* box,
                                   int nbox, Precision prec, const int64_t* data_patch = nullptr,
                                   const int64_t* randoms_patch = nullptr);

// Most patches a jackknife may have (each costs one more pass over DD, DR and RR).
constexpr size_t kMaxXiPatches = 10000;

// One gpu_xi call on an engine: DD of `data`, and DR and RR with `randoms` (null: analytic RR
// over the box, which must then be periodic on every axis), in the bins of `bin_edges` (the
// coordinates' units: chords for w(theta)); rows labelled with `edges`. With patch labels
// (`data_patch` and `randoms_patch`, one per point; null: no jackknife) the counts are computed
// again leaving out each of the P distinct labels in turn (data and randoms), xi_k from each,
// and xi_err = sqrt((P - 1) / P * sum_k (xi_k - mean)^2), undefined when P < 2 or some xi_k is.
// Throws Error(InvalidParameter) or Error(ProgramLimit).
std::vector<XiRow> xi_run(Engine& eng, Control& ctl, XiEstimator est, const PointsView& data,
                          const PointsView* randoms, const std::vector<double>& edges,
                          const std::vector<double>& bin_edges, const double* box, int nbox,
                          Precision prec, const int64_t* data_patch,
                          const int64_t* randoms_patch);

}  // namespace gpu2bs
