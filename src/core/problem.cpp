// Derived constants and input validation shared by every engine.
#include "problem.h"

#include <cfloat>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <limits>

#include "error.h"

namespace gpu2bs {

namespace {

// Shortest decimal form that reads back as the same double ("1e-39", "1.5e+19").
std::string fmt(double v) {
  char buf[32];
  for (int prec = 1; prec <= 17; ++prec) {
    snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (strtod(buf, nullptr) == v) break;
  }
  return buf;
}

}  // namespace

// Length of the bounding box diagonal, in float64.
double Bounds::diagonal() const {
  double s = 0;
  for (int k = 0; k < dims; ++k) {
    double e = hi[k] - lo[k];
    s += e * e;
  }
  return std::sqrt(s);
}

// Bounding box over one or two point sets (an empty set contributes nothing).
Bounds compute_bounds(const PointsView& a, const PointsView* b) {
  Bounds box;
  box.dims = a.dims;
  for (int k = 0; k < a.dims; ++k) {
    box.lo[k] = std::numeric_limits<double>::infinity();
    box.hi[k] = -std::numeric_limits<double>::infinity();
  }
  auto add = [&](const PointsView& p) {
    for (int k = 0; k < p.dims; ++k) {
      const double* c = p.coord[k];
      double lo = box.lo[k], hi = box.hi[k];
      for (size_t i = 0; i < p.n; ++i) {
        lo = c[i] < lo ? c[i] : lo;
        hi = c[i] > hi ? c[i] : hi;
      }
      box.lo[k] = lo;
      box.hi[k] = hi;
    }
  };
  add(a);
  if (b) add(*b);
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
                "The bounding box diagonal is " + fmt(d) +
                    "; squared distances would overflow.",
                f32 ? "Set gpu2bs.precision = float8, or rescale the coordinates."
                    : "Rescale the coordinates.");
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
      throw Error(ErrorCode::InvalidParameter, "bucket width must be a positive finite number");
    p.width = width;
  } else {
    p.width = box.diagonal() / nbuckets;
  }
  p.inv_width = p.width > 0 ? 1.0 / p.width : 0.0;
  if (!std::isfinite(p.inv_width))
    throw Error(ErrorCode::InvalidParameter, "bucket width too small",
                "The reciprocal of the bucket width overflows float8.");
  p.inv_width_f = static_cast<float>(p.inv_width);
  if (prec == Precision::Float32 && (!std::isfinite(p.inv_width_f) ||
                                     (p.inv_width > 0 && p.inv_width_f < FLT_MIN)))
    throw Error(ErrorCode::InvalidParameter, "bucket width out of range for float4 precision",
                "The reciprocal of the bucket width " + fmt(p.width) +
                    " is not a normal float4 number.",
                "Set gpu2bs.precision = float8.");
  return p;
}

// r must be a non-negative number (+Infinity counts every pair).
PairCountProblem make_pair_count(const PointsView& pts, double r, Precision prec) {
  if (std::isnan(r) || r < 0)
    throw Error(ErrorCode::InvalidParameter, "radius must be a non-negative number");
  PairCountProblem p;
  p.pts = pts;
  p.r = r;
  p.r2 = r * r;
  p.r2_f = static_cast<float>(p.r2);
  p.prec = prec;
  return p;
}

// eps must be positive (+Infinity joins every pair).
SimjoinProblem make_simjoin(const PointsView& a, const PointsView* b, double eps, Precision prec,
                            uint64_t max_pairs) {
  if (std::isnan(eps) || eps <= 0)
    throw Error(ErrorCode::InvalidParameter, "eps must be a positive number");
  if (b && b->dims != a.dims)
    throw Error(ErrorCode::InvalidParameter, "point sets have different dimensions",
                "The first relation has " + std::to_string(a.dims) +
                    " coordinates, the second " + std::to_string(b->dims) + ".");
  if (a.n > UINT32_MAX || (b && b->n > UINT32_MAX))
    throw Error(ErrorCode::ProgramLimit, "too many points for a similarity join",
                "At most 4294967295 points per relation are supported.");
  SimjoinProblem p;
  p.a = a;
  p.self = b == nullptr;
  p.b = b ? *b : a;
  p.eps = eps;
  p.eps2 = eps * eps;
  p.eps2_f = static_cast<float>(p.eps2);
  p.prec = prec;
  p.max_pairs = max_pairs;
  return p;
}

}  // namespace gpu2bs
