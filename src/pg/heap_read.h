// The direct heap reader of the relation forms: reads key and coordinate columns of a plain heap
// table straight from its pages when that gives exactly the rows, values, order, errors and
// privilege checks of the SELECT that simjoin_read otherwise runs through SPI.
#pragma once

#include "pg.h"

extern "C" {
#include "utils/rel.h"
}

#include "simjoin.h"

namespace gpu2bs {
namespace pg {

// Why a row stopped the direct read (the error is raised after the scan has ended).
struct DirectBadRow {
  bool bad = false;
  bool nan = false;     // NaN, else infinite
  int64 key = 0;        // the row's key (0 for a keyless read)
  int col = 0;          // index of the coordinate among out->dims
};

// Whether the locked relation `rel` can be read by the direct reader with key column `key`
// (ignored when out->keyless) and coordinate columns `cols[0..dims)`: a heap table or populated
// materialized view without inheritance children, no row-level security for the calling user,
// SELECT on the table or on every column read, no executor permission hook, integer key and
// float8/float4/int2/int4/int8 coordinates (domains over them included), an MVCC snapshot.
// Records the columns in `out` when it can. PostgreSQL code (may ereport).
bool direct_read_eligible(Relation rel, AttrNumber key, const AttrNumber* cols, int dims, RelPoints* out);

// Reads the relation recorded in `out` under the active snapshot from its first block (no
// synchronized scan), page at a time, appending points to `out` (arrays in `ctx`) as the SPI
// receiver does: a NULL key or coordinate skips the row; the first NaN or infinite coordinate
// stops the read and is returned in `bad`. PostgreSQL code (may ereport).
void direct_read_points(RelPoints* out, MemoryContext ctx, DirectBadRow* bad);

}  // namespace pg
}  // namespace gpu2bs
