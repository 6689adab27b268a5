// The similarity join's PostgreSQL side, shared by the set-returning function and the custom
// scan: argument decoding, reading the relations through SPI, running the engine.
#pragma once

#include "pg.h"

extern "C" {
#include "executor/spi.h"
#include "nodes/extensible.h"
#include "nodes/pathnodes.h"
#include "utils/array.h"
#include "utils/rel.h"
}

#include <vector>

#include "../core/engine.h"

namespace gpu2bs {
namespace pg {

// Rows reserved up front from the catalog's estimate (pg_class.reltuples) at most: a stale
// estimate (4e9 rows on a 2-row table) allocates no more than this before the arrays grow.
constexpr int64 kExpectRowsCap = 1 << 20;

// One relation's points as read: ids and SoA coordinates in a dedicated memory context.
struct RelPoints {
  const char* relname;  // qualified, quoted
  Oid relid;            // the relation read (locked)
  int dims;
  bool geometry;        // the coordinates come from one PostGIS point column
  const char* geom_col; // its name
  bool srid_seen;       // a geometry row was read; srid is then the SRID of every row
  int32 srid;
  int64 n;
  int64 cap;
  int64 expect;         // rows the catalog expects (pg_class.reltuples), 0 when unknown
  bool keyless;         // coordinates only (gpu_sdh, gpu_pair_count): no key column, ids null
  int64* ids;
  double* coord[kMaxDims];
  // Read by the direct heap reader (heap_read.h) rather than through SPI: the key and
  // coordinate attributes and how their stored values convert (set by direct_read_eligible).
  bool direct;
  AttrNumber key_att;
  AttrNumber col_att[kMaxDims];
  uint8 key_kind;
  uint8 col_kind[kMaxDims];
  const char* weight_name;  // the weight column read after the coordinates, or null
  double* weight;           // one weight per point when weight_name is set
};

// The points read from a relation as an engine view (no copy).
inline PointsView points_view(const RelPoints& r) {
  PointsView v;
  v.dims = r.dims;
  v.n = size_t(r.n);
  v.name = r.relname;
  for (int k = 0; k < r.dims; ++k) v.coord[k] = r.coord[k];
  return v;
}

// gpu_simjoin's arguments: relation(s), eps, optional coordinate and key column names.
struct SimjoinArgs {
  int nrel = 1;
  Oid relids[2] = {InvalidOid, InvalidOid};
  double eps = 0;
  ArrayType* coords = nullptr;
  text* id = nullptr;
  bool keyless = false;  // coordinates only, no key column and no eps (read_coordinates)
  bool periodic = false;    // box given with at least one periodic axis (simjoin_box_arg)
  std::vector<double> box;  // its lengths as given, 0 for a NULL element (not periodic)
  const char* weight = nullptr;  // a weight column read after the coordinates (rows with a NULL weight skipped)
};

// The box argument as lengths (0 for a NULL element: not periodic); a multi-dimensional array
// is 22023. PostgreSQL code behind pg_guard (throws).
std::vector<double> box_lengths(ArrayType* arr);
// Decodes the box argument `argno` of a periodic form into a->box and a->periodic (a NULL box:
// no axis periodic) and validates it before any row is read: lengths 0, NULL or positive
// finite, `range` (named `what`) at most half the shortest periodic length (22023). The number
// of lengths is checked against the coordinates once they are read.
void simjoin_box_arg(FunctionCallInfo fcinfo, int argno, double range, const char* what,
                     SimjoinArgs* a);
// The same for a box value already fetched (nullptr: a NULL box).
void simjoin_box_value(ArrayType* box, double range, const char* what, SimjoinArgs* a);

// The points read for one call; `ctx` owns them.
struct SimjoinInput {
  Precision prec = Precision::Float32;  // gpu2bs.precision when the call began
  Threshold eps;                        // validated eps
  int nrel = 1;
  RelPoints rels[2] = {};
  MemoryContext ctx = nullptr;
  double scan_s = 0;  // time spent reading the relations
  int scan_path = 0;  // ScanPath bits (settings.h): how the relations were read
};

// Throws the 22023 error of two relations read together whose PostGIS columns have different
// SRIDs (both seen).
void check_same_srid(const SimjoinInput& in);

// Decodes the arguments of the self-join (nrel = 1) or two-relation form; false when the
// relation or eps is NULL (no rows).
bool simjoin_args(FunctionCallInfo fcinfo, int nrel, SimjoinArgs* a);
// Validates eps and reads the relations as the calling user. Throws.
void simjoin_read(const SimjoinArgs& a, SimjoinInput* in);
// Reads the coordinates of relation `relid` (the columns named in `coords`, else every float8
// column; no key column) as the calling user into in->rels[0], through the same query and
// receiver as gpu_simjoin. Rows with a NULL coordinate are skipped; NaN or infinite
// coordinates are 22023. Throws.
void read_coordinates(Oid relid, ArrayType* coords, SimjoinInput* in);
// The same with the numeric column `weight` read too, into in->rels[0].weight: it is no
// coordinate (the default coordinates leave it out); rows with a NULL weight are skipped; NaN
// or infinite weights are 22023. Throws.
void read_weighted_coordinates(Oid relid, ArrayType* coords, const char* weight, SimjoinInput* in);
// The problem over the points read and the engine chosen for it (checks the inputs). Throws.
struct SimjoinPrepared {
  SimjoinProblem prob;
  Engine* engine = nullptr;
};
SimjoinPrepared simjoin_prepare(const SimjoinArgs& a, SimjoinInput* in);
// Runs the chosen engine over the points, handing result pages to `sink`; with `filter`, only
// the pairs it keeps (applied by the engine when it can, else on each page). Throws.
// With `stage`, an engine that runs stages in its workers reduces the pages there and hands
// nothing to `sink`; returns true when it did. With `reduce`, an engine that computes that
// reduction itself does (reduce->done is then true; a TopK reduction hands its candidates to
// `sink`), and `stage` is not used.
bool simjoin_run(const SimjoinArgs& a, SimjoinInput* in, PairSink& sink, const PairFilter* filter = nullptr,
                 PairStage* stage = nullptr, PairReduce* reduce = nullptr);

// Grows the arrays of `out` (allocated in `ctx`) to hold at least `need` rows (doubling). The
// rows that are points for sure, `points` (`need` when negative), must not exceed kMaxPoints
// (54000 beyond); the rest of `need` is scratch room a reader fills before dropping the rows
// that are not points, and may reach past kMaxPoints. PostgreSQL code (may ereport).
void grow_points(RelPoints* out, MemoryContext ctx, int64 need, int64 points = -1);

// Whether the catalog row of relation `relid` was written by a transaction that `snap` does not
// see (altered, rewritten or re-created after the snapshot). PostgreSQL code.
bool changed_after(Oid relid, Snapshot snap);

// Relation-reading helpers shared with gpu_pairwise: integer key types (or domains over them);
// the attribute number of column `name` of `td` (not dropped), else 42703; the single-column
// integer primary key of `rel`, or InvalidAttrNumber. PostgreSQL code (may ereport).
bool is_int_type(Oid t);
AttrNumber find_column(TupleDesc td, const char* name, const char* relname);
AttrNumber primary_key_column(Relation rel);
// Locks relation `relid` (AccessShareLock to the end of the transaction) and opens it; 42P01
// when it was dropped meanwhile.
Relation open_locked(Oid relid);
// Quoted, schema-qualified name of the locked relation `rel`; *expect its row estimate; 42809
// unless rows can be read from it.
const char* readable_relation_name(Relation rel, int64* expect);
// Key column of `rel`: `id_name` (an integer column; named `id_shown` in errors), else the
// single-column integer primary key, else the integer column "id", else 42703 with `hint`.
AttrNumber key_column(Relation rel, TupleDesc td, const char* relname, const char* id_name,
                      const char* id_shown, const char* hint);
// Runs `plan` read-only through SPI as the calling user, every row going to `receive` through
// `recv` (the zeroed first member of the caller's receiver); `what` names the query in errors.
void run_plan_into(SPIPlanPtr plan, DestReceiver* recv,
                   bool (*receive)(TupleTableSlot*, DestReceiver*), const char* what);

// Registers gpu2bs.enable_customscan and the planner hook of the custom scan (_PG_init).
// The C symbol of funcid when it is a C-language function of the gpu2bs library without
// SECURITY DEFINER, its own settings or an fmgr hook, else "" (simjoin_scan.cpp; the custom
// scans recognize their functions by it). Valid until the next call.
const char* gpu2bs_symbol(Oid funcid);
void register_simjoin_scan();
// gpu2bs.enable_customscan: gpu_simjoin and gpu_dbscan in FROM run as custom scans.
bool customscan_enabled();
// gpu2bs.enable_pushdown: the custom scans push quals, aggregates and limits into the engine.
bool pushdown_enabled();
// Registers the planner hook of gpu_pairwise's custom scan (pairwise.cpp; _PG_init).
void register_pairwise_scan();
// A custom scan path of `rel` (a function in FROM) beside its function scan path, the first of
// rel->pathlist: the same rows, without the tuplestore (each row costs half the function
// scan's per-row cost), with `methods`. Not yet added to rel.
CustomPath* function_scan_custom_path(RelOptInfo* rel, const CustomPathMethods* methods);
// Registers the planner hook of gpu_dbscan's custom scan (_PG_init).
void register_dbscan_scan();
// Registers the planner's join path for pair-expression joins (planner/join_path.cpp).
void register_join_path();
// Registers the planner hook that reads whole-relation gpu_sdh / gpu_pair_count aggregates as
// the relation forms (planner/agg_read.cpp).
void register_agg_read();

// Writes result pages into an SRF's tuplestore as (id1, id2, dist), or (id1, id2) when its
// descriptor has two columns: keys by input index, in a self-join ordered so that id1 <= id2.
// Used by gpu_simjoin and gpu_join.
class TuplestoreSink final : public PairSink {
 public:
  TuplestoreSink(ReturnSetInfo* rsinfo, const int64* ids_a, const int64* ids_b, bool self)
      : rsinfo_(rsinfo), ids_a_(ids_a), ids_b_(ids_b), self_(self) {}
  void consume(const PairRecord* pairs, size_t n) override;

 private:
  ReturnSetInfo* rsinfo_;
  const int64* ids_a_;
  const int64* ids_b_;
  bool self_;
};

}  // namespace pg
}  // namespace gpu2bs
