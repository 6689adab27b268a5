// Aggregate state of gpu_sdh and gpu_pair_count: the points themselves (a histogram of a union
// is not the sum of the parts' histograms, so partial aggregates merge point buffers).
#pragma once

#include "pg.h"

extern "C" {
#include "datatype/timestamp.h"
}

#include "../core/problem.h"

namespace gpu2bs {
namespace pg {

struct PointsState {
  int32 dims;
  int32 nbuckets;      // gpu_sdh: bucket count; 0 for gpu_pair_count
  bool has_param;      // an explicit width (gpu_sdh) or radius (gpu_pair_count) was given
  double param;
  int64 n;
  int64 cap;
  double* coord[3];    // SoA, allocated in the aggregate context
  TimestampTz first_row;  // when the state was created (scan time for gpu2bs_info)
};

// Seconds since the state's first row (the table scan and transition calls).
double scan_seconds(const PointsState* st);

// Points of the state as an engine view.
PointsView points_view(const PointsState* st);

}  // namespace pg
}  // namespace gpu2bs
