// Problem descriptions handed to every engine, and the derived constants computed once on the
// host in float64 (DESIGN.md "Precision"). No PostgreSQL and no CUDA headers here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "arith.h"

namespace gpu2bs {

class PairFilter;
class PairStage;

enum class Precision { Float32, Float64 };

// Points in structure-of-arrays form: coord[k][i] is coordinate k of point i, as read from SQL.
struct PointsView {
  int dims = 0;
  size_t n = 0;
  const double* coord[kMaxDims] = {};
};

// Bounding box of one or two point sets, in float64.
struct Bounds {
  int dims = 0;
  double lo[kMaxDims] = {};
  double hi[kMaxDims] = {};
  double diagonal() const;
};

// Bounding box of `a` (and of `b` too when given).
Bounds compute_bounds(const PointsView& a, const PointsView* b = nullptr);

// Refuses data whose distances would overflow the chosen precision (a silently wrong answer
// otherwise): |coordinate| beyond float32 range, or a bounding box diagonal whose square
// overflows. Throws Error(InvalidParameter).
void check_range(const Bounds& box, Precision prec);

// Spatial distance histogram, 2-BS Type-II (framework paper, section 3.3.2).
struct SdhParams {
  int nbuckets = 0;
  bool explicit_width = false;  // false: width = bounding-box diagonal / nbuckets, clamp to last
  double width = 0;             // bucket width w (float64)
  double inv_width = 0;         // 1 / w, or 0 when w == 0 (all points coincide)
  float inv_width_f = 0;        // (float) inv_width
};

// Largest accepted bucket count (documented in the README).
constexpr int kMaxBuckets = 1 << 20;

// Derives the SDH constants; width <= 0 means "from the bounding box". Validates nbuckets and
// width. Throws Error(InvalidParameter).
SdhParams make_sdh_params(int nbuckets, double width, bool explicit_width, const Bounds& box,
                          Precision prec);

struct SdhProblem {
  PointsView pts;
  SdhParams params;
  Precision prec = Precision::Float32;
};

// Two-point correlation count: unordered pairs with d <= r (2-BS Type-I).
struct PairCountProblem {
  PointsView pts;
  double r = 0;
  double r2 = 0;     // r * r in float64
  float r2_f = 0;    // (float) r2
  Precision prec = Precision::Float32;
};

// Validates r and derives r2. Throws Error(InvalidParameter).
PairCountProblem make_pair_count(const PointsView& pts, double r, Precision prec);

// Distance similarity join (2-BS Type-III): every pair with d <= eps. Self-join when b is null:
// unordered pairs i != j. Otherwise every (a_i, b_j).
struct SimjoinProblem {
  PointsView a;
  PointsView b;
  bool self = true;
  double eps = 0;
  double eps2 = 0;
  float eps2_f = 0;
  Precision prec = Precision::Float32;
  uint64_t max_pairs = 0;  // 0: unlimited; otherwise Error(ProgramLimit) past it
  // Pushed-down pair predicate: engines whose applies_pair_filter() is true drop the pairs it
  // rejects before handing pages over (the caller applies it otherwise).
  const PairFilter* filter = nullptr;
  // Pushed-down reduction over dist alone: engines whose applies_pair_stage() is true hand each
  // result page to it on the worker that made it (pair indices are then the engine's own, not
  // input indices) and hand no pairs to the sink.
  PairStage* stage = nullptr;
};

// Validates eps (finite or +inf, > 0) and derives eps2. Throws Error(InvalidParameter).
SimjoinProblem make_simjoin(const PointsView& a, const PointsView* b, double eps, Precision prec,
                            uint64_t max_pairs);

}  // namespace gpu2bs
