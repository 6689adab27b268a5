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

// The key and vector column of a gpu_pairwise relation as the direct reader reads them.
struct DirectVectors {
  Oid relid;
  AttrNumber key_att;
  uint8 key_kind;
  AttrNumber vec_att;
  bool f8;  // double precision[] (else real[])
};

// The rows of a direct vector read: keys and row-major float32 vectors of d elements (arrays in
// the caller's context), the first bad row with gpu_pairwise's problem codes (1 ragged or too
// long, 2 NULL element, 3 non-finite, 4 empty, 5 multi-dimensional, 6 beyond float4 range),
// and how the values were reached.
struct DirectVectorRows {
  int64 n = 0;
  int d = -1;
  int64* ids = nullptr;
  float* rows = nullptr;
  int bad = 0;
  int64 bad_key = 0;
  int bad_len = 0;
  bool retry = false;       // a layout the reader does not resolve: read the relation through SPI
  int64 toast_pages = 0;    // values assembled from the pages of the TOAST relation
  int64 detoasted = 0;      // values read through PostgreSQL's detoast_attr
};

// Whether the locked relation `rel` can be read by the direct reader with integer key `key`
// and real[] / double precision[] column `vec` (the same conditions as direct_read_eligible,
// SELECT on the table or on both columns). Records the columns in `out`. PostgreSQL code.
bool direct_vectors_eligible(Relation rel, AttrNumber key, AttrNumber vec, DirectVectors* out);

// Reads the rows (key, vector) of the relation in `dv` under the active snapshot from its first
// block: rows whose key or vector is NULL are skipped; vectors stored out of line and
// uncompressed are assembled from a sequential read of the TOAST relation's pages, every other
// value goes through detoast_attr. `relname` names the relation in errors. Stops at the first
// bad row as gpu_pairwise's SPI receiver does. PostgreSQL code (may ereport).
void direct_read_vectors(const DirectVectors& dv, const char* relname, MemoryContext ctx, DirectVectorRows* out);

}  // namespace pg
}  // namespace gpu2bs
