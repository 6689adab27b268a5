// Derived constants and input validation shared by every engine.
#include "problem.h"

#include <cfloat>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <algorithm>
#include <limits>

#include "error.h"
#include "parallel.h"

namespace gpu2bs {

// A float8 as PostgreSQL prints it: the shortest decimal form that reads back as the same
// double ("1e-39", "1.5e+19", "-Infinity").
std::string float8_text(double v) {
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  char buf[32];
  for (int prec = 1; prec <= 17; ++prec) {
    snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (strtod(buf, nullptr) == v) break;
  }
  return buf;
}

// Length of the bounding box diagonal, in float64.
double Bounds::diagonal() const {
  double s = 0;
  for (int k = 0; k < dims; ++k) {
    double e = hi[k] - lo[k];
    s += e * e;
  }
  return std::sqrt(s);
}

namespace {

// Coordinates per chunk of the bounds scan: each chunk is one parallel_for item (~1 ms).
constexpr size_t kBoundsChunk = size_t(1) << 20;

// Minimum and maximum of c[0, n): kSeg contiguous segments scanned side by side (independent
// comparison chains), merged in segment order; every chain keeps the first of equal extremes,
// so the result is the sequential scan's bit for bit (which of -0.0 and +0.0 included).
void scan_extremes(const double* c, size_t n, double* lo_out, double* hi_out) {
  constexpr size_t kSeg = 8;
  const size_t seg = n / kSeg;
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  if (seg > 0) {
    double slo[kSeg], shi[kSeg];
    for (size_t s = 0; s < kSeg; ++s) slo[s] = shi[s] = c[s * seg];
    for (size_t i = 1; i < seg; ++i)
      for (size_t s = 0; s < kSeg; ++s) {
        const double v = c[s * seg + i];
        slo[s] = v < slo[s] ? v : slo[s];
        shi[s] = v > shi[s] ? v : shi[s];
      }
    for (size_t s = 0; s < kSeg; ++s) {
      lo = slo[s] < lo ? slo[s] : lo;
      hi = shi[s] > hi ? shi[s] : hi;
    }
  }
  for (size_t i = seg * kSeg; i < n; ++i) {
    lo = c[i] < lo ? c[i] : lo;
    hi = c[i] > hi ? c[i] : hi;
  }
  *lo_out = lo;
  *hi_out = hi;
}

}  // namespace

// Bounding box over one or two point sets (an empty set contributes nothing). Each axis is
// cut into chunks of kBoundsChunk coordinates whose extremes are merged in order, keeping the
// first of equal ones: the same box on one thread or on ctl's threads (used from two chunks'
// worth of coordinates on).
Bounds compute_bounds(const PointsView& a, const PointsView* b, Control* ctl) {
  Bounds box;
  box.dims = a.dims;
  for (int k = 0; k < a.dims; ++k) {
    box.lo[k] = std::numeric_limits<double>::infinity();
    box.hi[k] = -std::numeric_limits<double>::infinity();
  }
  const PointsView* sets[2] = {&a, b};
  // Items: (set, axis, chunk) in the order of the sequential scan.
  struct Item {
    const double* c;
    size_t n;
    int axis;
  };
  std::vector<Item> items;
  size_t coords = 0;
  for (const PointsView* p : sets) {
    if (!p) continue;
    coords += p->n * size_t(p->dims);
    for (int k = 0; k < p->dims; ++k)
      for (size_t off = 0; off < p->n; off += kBoundsChunk)
        items.push_back({p->coord[k] + off, std::min(kBoundsChunk, p->n - off), k});
  }
  std::vector<double> lo(items.size()), hi(items.size());
  auto body = [&](size_t i, int) { scan_extremes(items[i].c, items[i].n, &lo[i], &hi[i]); };
  if (ctl && ctl->threads > 1 && coords >= 2 * kBoundsChunk) {
    parallel_for(*ctl, items.size(), body);
  } else {
    for (size_t i = 0; i < items.size(); ++i) body(i, 0);
  }
  for (size_t i = 0; i < items.size(); ++i) {
    const int k = items[i].axis;
    box.lo[k] = lo[i] < box.lo[k] ? lo[i] : box.lo[k];
    box.hi[k] = hi[i] > box.hi[k] ? hi[i] : box.hi[k];
  }
  for (int k = 0; k < a.dims; ++k)
    if (box.lo[k] > box.hi[k]) box.lo[k] = box.hi[k] = 0;  // no points
  return box;
}

// Refuses coordinates or extents whose squared distances would overflow the precision.
void check_range(const Bounds& box, Precision prec) {
  const bool f32 = prec == Precision::Float32;
  const double coord_max = f32 ? double(FLT_MAX) : DBL_MAX;
  const double diag_max = f32 ? 1e18 : 1e150;  // diag^2 * dims stays far below the type's max
  for (int k = 0; k < box.dims; ++k) {
    if (std::fabs(box.lo[k]) > coord_max || std::fabs(box.hi[k]) > coord_max)
      throw Error(ErrorCode::InvalidParameter, "coordinate out of range for float4 precision",
                  "A coordinate's magnitude exceeds the largest float4 value.",
                  "Set gpu2bs.precision = float8.");
  }
  double d = box.diagonal();
  if (!(d <= diag_max))
    throw Error(ErrorCode::InvalidParameter,
                f32 ? "point extent too large for float4 precision" : "point extent too large",
                "The bounding box diagonal is " + float8_text(d) +
                    "; squared distances would overflow.",
                f32 ? "Set gpu2bs.precision = float8, or rescale the coordinates."
                    : "Rescale the coordinates.");
}

namespace {

const char* prec_name(Precision prec) { return prec == Precision::Float32 ? "float4" : "float8"; }

// True when v rounded to the precision is a normal number (finite, not zero, not subnormal).
bool normal_in(double v, Precision prec) {
  return prec == Precision::Float32 ? std::isnormal(static_cast<float>(v)) : std::isnormal(v);
}

// Refuses a positive finite `what` (eps, r, bucket width) whose square is not a normal number
// of the precision: an underflowing square would make pairs at distance 0 < d <~ sqrt of the
// smallest normal pass or fail by rounding, not by their distance.
void check_square(const char* what, double v, Precision prec, const std::string& hint_small,
                  const std::string& hint_large) {
  const double sq = v * v;
  if (normal_in(sq, prec)) return;
  const bool small = std::isfinite(sq) && (prec == Precision::Float64 || std::fabs(sq) < FLT_MAX);
  throw Error(ErrorCode::InvalidParameter,
              std::string(what) + " out of range for " + prec_name(prec) + " precision",
              std::string("The square of ") + what + " " + float8_text(v) +
                  (small ? " underflows " : " overflows ") + prec_name(prec) + ".",
              small ? hint_small : hint_large);
}

}  // namespace

void check_point_count(uint64_t n, const char* name) {
  if (n <= kMaxPoints) return;
  throw Error(ErrorCode::ProgramLimit,
              name ? std::string("too many rows in ") + name : std::string("too many points"),
              "At most " + std::to_string(kMaxPoints) + " points per input are supported.");
}

namespace {

// A threshold named `what` with its square: NaN and values below the smallest accepted one
// (0 when `zero_ok`, else any positive number) are refused with `range_msg`; a positive finite
// value by check_square, with `use_smaller` naming what the caller may do instead.
Threshold make_threshold(const char* what, double v, bool zero_ok, const char* range_msg,
                         Precision prec, const std::string& use_larger,
                         const std::string& use_smaller) {
  if (std::isnan(v) || v < 0 || (!zero_ok && v == 0))
    throw Error(ErrorCode::InvalidParameter, range_msg,
                std::string(what) + " is " + (std::isnan(v) ? std::string("NaN") : float8_text(v)) + ".");
  if (std::isfinite(v) && v > 0)
    check_square(what, v, prec,
                 use_larger + (prec == Precision::Float32 ? ", or set gpu2bs.precision = float8."
                                                          : ", or rescale the coordinates."),
                 use_smaller);
  Threshold t;
  t.v = v;
  t.sq = v * v;
  t.sq_f = static_cast<float>(t.sq);
  return t;
}

}  // namespace

Threshold make_eps(double eps, Precision prec) {
  return make_threshold("eps", eps, false, "eps must be a positive number", prec,
                        "Use a larger eps", "Use eps => 'Infinity' to join every pair.");
}

Threshold make_radius(double r, Precision prec) {
  return make_threshold("r", r, true, "radius must be a non-negative number", prec,
                        "Use r = 0 to count pairs at distance 0, a larger r",
                        "Use r = 'Infinity' to count every pair.");
}

// Bucket count and width checks, then w, 1/w in float64 and 1/w rounded to float32.
SdhParams make_sdh_params(int nbuckets, double width, bool explicit_width, const Bounds& box,
                          Precision prec) {
  if (nbuckets < 1 || nbuckets > kMaxBuckets)
    throw Error(ErrorCode::InvalidParameter, "nbuckets must be between 1 and " +
                                                 std::to_string(kMaxBuckets),
                "nbuckets is " + std::to_string(nbuckets) + ".");
  SdhParams p;
  p.nbuckets = nbuckets;
  p.explicit_width = explicit_width;
  if (explicit_width) {
    if (!std::isfinite(width) || width <= 0)
      throw Error(ErrorCode::InvalidParameter, "bucket width must be a positive finite number",
                  "width is " + (std::isnan(width) ? std::string("NaN") : float8_text(width)) + ".");
    p.width = width;
  } else {
    p.width = box.diagonal() / nbuckets;
  }
  if (p.width == 0) return p;  // all points coincide: every pair in bucket 0
  const bool f32 = prec == Precision::Float32;
  const std::string larger = explicit_width
                                 ? (f32 ? "Use a larger width, or set gpu2bs.precision = float8."
                                        : "Use a larger width.")
                                 : (f32 ? "Set gpu2bs.precision = float8, or rescale the coordinates."
                                        : "Rescale the coordinates.");
  p.inv_width = 1.0 / p.width;
  p.inv_width_f = static_cast<float>(p.inv_width);
  if (!normal_in(p.inv_width, prec))
    throw Error(ErrorCode::InvalidParameter,
                std::string("bucket width out of range for ") + prec_name(prec) + " precision",
                "The reciprocal of the bucket width " + float8_text(p.width) + " is not a normal " +
                    prec_name(prec) + " number.",
                p.inv_width > 1 ? larger : "Use a smaller width.");
  check_square("bucket width", p.width, prec, larger, "Use a smaller width.");
  return p;
}

SdhProblem make_sdh(const PointsView& pts, int nbuckets, double width, bool explicit_width,
                    Precision prec, Control* ctl) {
  check_point_count(pts.n, pts.name);
  SdhProblem p;
  p.pts = pts;
  p.prec = prec;
  p.box = compute_bounds(pts, nullptr, ctl);
  check_range(p.box, prec);
  p.params = make_sdh_params(nbuckets, width, explicit_width, p.box, prec);
  return p;
}

PairCountProblem make_pair_count(const PointsView& pts, double r, Precision prec, Control* ctl) {
  const Threshold t = make_radius(r, prec);
  check_point_count(pts.n, pts.name);
  PairCountProblem p;
  p.pts = pts;
  p.box = compute_bounds(pts, nullptr, ctl);
  check_range(p.box, prec);
  p.r = t.v;
  p.r2 = t.sq;
  p.r2_f = t.sq_f;
  p.prec = prec;
  return p;
}

SimjoinProblem make_simjoin(const PointsView& a, const PointsView* b, const Threshold& eps,
                            Precision prec, uint64_t max_pairs) {
  if (b && b->dims != a.dims)
    throw Error(ErrorCode::InvalidParameter, "relations have different numbers of coordinates",
                std::string(a.name ? a.name : "the first") + " has " + std::to_string(a.dims) +
                    ", " + (b->name ? b->name : "the second") + " has " +
                    std::to_string(b->dims) + ".");
  check_point_count(a.n, a.name);
  if (b) check_point_count(b->n, b->name);
  SimjoinProblem p;
  p.a = a;
  p.self = b == nullptr;
  p.b = b ? *b : a;
  p.box = compute_bounds(a, b);
  check_range(p.box, prec);
  p.eps = eps.v;
  p.eps2 = eps.sq;
  p.eps2_f = eps.sq_f;
  p.prec = prec;
  p.max_pairs = max_pairs;
  return p;
}

SimjoinProblem make_simjoin(const PointsView& a, const PointsView* b, double eps, Precision prec,
                            uint64_t max_pairs) {
  return make_simjoin(a, b, make_eps(eps, prec), prec, max_pairs);
}

}  // namespace gpu2bs
