// Custom scan for gpu_simjoin(...) in FROM: the planner replaces the function scan (which
// copies every pair through a tuplestore) with a scan that spools the engine's result pages as
// raw 16-byte records (in memory up to work_mem, then in a temporary file) and returns each pair
// straight into the scan slot. Same rows, same errors; gpu2bs.enable_customscan = off restores
// the plain function scan. LATERAL calls (arguments that reference other relations) keep the
// function scan.
//
// Pushdown (gpu2bs.enable_pushdown): work the query does over the join's rows runs where the
// pairs are made, before they reach PostgreSQL:
//   - quals on id1, id2, dist (pair IR, planner/pair_quals.h) are applied by the engine to each
//     result page (the CPU engine in its worker threads); untranslatable quals stay quals;
//   - count(*), count(col), sum/min/max/avg(dist) (UPPERREL_GROUP_AGG): the scan returns the
//     aggregate row instead of the Agg node being fed pairs;
//   - GROUP BY id1 (or id2) with count / min(dist) / max(dist), and DISTINCT id1 (or id2): per
//     point counters, one row per key;
//   - ORDER BY dist [ASC|DESC] [, id1 [, id2]] LIMIT k (UPPERREL_ORDERED): the k best pairs,
//     ties by (id1, id2), under the Limit node;
//   - a query that wants its first rows fast (LIMIT, EXISTS, cursors): the engine runs on its
//     own thread and hands pages over through a bounded queue; the scan returns the first page
//     while the join goes on, and stops the join when it ends early.
// The scan only ever runs forward (no backward scan, no mark/restore): PostgreSQL puts a
// Material node above it for scroll cursors and merge joins.
#include "pg.h"

extern "C" {
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_language.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "funcapi.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planner.h"
#include "optimizer/restrictinfo.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "storage/buffile.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

#include <cstring>
#include <memory>

#include "core/pipeline.h"
#include "planner/pair_quals.h"
#include "admission.h"
#include "settings.h"
#include "simjoin.h"

using namespace gpu2bs;
using namespace gpu2bs::pg;

namespace {

bool enable_customscan = true;
bool enable_pushdown = true;
set_rel_pathlist_hook_type prev_pathlist_hook = nullptr;
create_upper_paths_hook_type prev_upper_hook = nullptr;

// What the scan returns.
enum ScanMode {
  MODE_ROWS = 0,       // the pairs, spooled (rescans read the spool again)
  MODE_PIPELINED = 1,  // the pairs, handed over while the engine runs
  MODE_AGG = 2,        // one aggregate row
  MODE_GROUP = 3,      // one row per id1 (or id2)
  MODE_TOPK = 4        // the k best pairs by dist
};
const char* mode_names[] = {"rows", "rows (pipelined)", "aggregate", "group", "top-k"};

// Scan columns: 1 id1, 2 id2, 3 dist, 0 the whole row; aggregate columns:
enum ColKind { COL_COUNT = 10, COL_SUM = 11, COL_MIN = 12, COL_MAX = 13, COL_AVG = 14, COL_KEY = 15 };

// custom_private of the plan: form, the column names of the function's range table entry
// (whole-row values; the entry's index is not kept here: set_plan_references renumbers range
// table entries when it flattens subqueries, and only custom_relids follows), mode, column
// list, number of function arguments at
// the head of custom_exprs (the rest are the pushed predicate's parameters), predicate template,
// its description, group side (0 id1, 1 id2), k (text), descending, the function's OID.
enum PrivIndex { P_FORM, P_NAMES, P_MODE, P_COLS, P_NARGS, P_CODE, P_DESC, P_SIDE, P_K, P_DESCENDING, P_FUNCID, P_COUNT };

}  // namespace

// The C symbol of funcid when it is a C-language function of the gpu2bs library called as is,
// else "": a function with SECURITY DEFINER, its own settings (ALTER FUNCTION ... SET) or an
// fmgr hook (a security label provider) runs only through the function call, which applies
// them. Looked up each time (the catalog cache): ALTER FUNCTION changes those properties under
// the same OID. The result is valid until the next call; plain C data only, as the catalog calls
// may raise an error.
const char* gpu2bs::pg::gpu2bs_symbol(Oid funcid) {
  static char symbol[NAMEDATALEN];
  symbol[0] = '\0';
  HeapTuple tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
  if (!HeapTupleIsValid(tup)) return symbol;
  Form_pg_proc proc = (Form_pg_proc)GETSTRUCT(tup);
  bool isnull;
  SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_proconfig, &isnull);
  const bool plain = isnull && !proc->prosecdef && !FmgrHookIsNeeded(funcid);
  if (plain && proc->prolang == ClanguageId) {
    Datum src = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_prosrc, &isnull);
    Datum bin = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_probin, &isnull);
    if (!isnull && strstr(TextDatumGetCString(bin), "gpu2bs"))
      strlcpy(symbol, TextDatumGetCString(src), sizeof(symbol));
  }
  ReleaseSysCache(tup);
  return symbol;
}

namespace {

// 1 or 2 when funcid is gpu2bs's self-join or two-relation gpu_simjoin, else 0.
int simjoin_form(Oid funcid) {
  const char* s = gpu2bs_symbol(funcid);
  return strcmp(s, "gpu2bs_simjoin_self") == 0 ? 1 : strcmp(s, "gpu2bs_simjoin_two") == 0 ? 2 : 0;
}

// ---- executor ---------------------------------------------------------------------------------

struct SimjoinScanState {
  CustomScanState css;
  int form;
  int mode;
  int ncols;        // columns of the scan tuple
  int attno[16];    // what each scan column holds (1 id1, 2 id2, 3 dist, 0 whole row, ColKind)
  Index rti;        // the function's range table index (EvalPlanQual), 0 for upper paths
  List* names;      // column names of whole-row values
  int nargs;
  List* code;       // pushed predicate template (NIL: none)
  int side;
  int64 k;
  bool descending;
  TupleDesc row_desc;  // (id1, id2, dist) under the query's column aliases, blessed
  bool epq_done;    // EvalPlanQual: the test row was returned
  List* arg_states;
  List* param_states;
  bool started;
  bool self;
  const int64* ids_a;
  const int64* ids_b;
  MemoryContext points_ctx;
  int scan_path;    // how the relations were read (ScanPath bits; 0 before the read)
  double scan_ms;   // and how long that took
  // spool: records [0, mem_n) in memory, then file_n records in `file`
  PairRecord* mem;
  size_t mem_cap;
  size_t mem_n;
  BufFile* file;
  uint64 file_n;
  // reading position
  uint64 pos;
  PairRecord* rbuf;
  size_t rbuf_n;
  size_t rbuf_pos;
  // pushdown state (C++ objects, owned here; freed with the points)
  struct Pushed* pushed;
  bool aborted;     // a subtransaction abort stopped the pipelined run before its end
};

// C++ state of a run with pushdown: the predicate, the pipe of a pipelined run, the results of
// the aggregate, group and top-k modes.
struct Pushed {
  // The pipe's thread reads the members below: it stops before any of them goes.
  ~Pushed() {
    live_run_unlink(&live);
    if (pipe) pipe->stop();
  }
  LiveRun live;  // in the backend's list of live runs while pipelined
  PairPredicate pred;
  std::unique_ptr<PairFilter> filter;
  PairKeys keys;
  SimjoinProblem prob;
  std::unique_ptr<PagePipe> pipe;
  std::unique_ptr<PgControl> ctl;
  std::unique_ptr<DeviceGrant> grant;  // the device memory the pipelined run holds
  std::string engine_name;
  bool engine_filters = false;
  PagePipe::Page page;
  size_t page_pos = 0;
  bool done = false;
  AggregateSink agg;
  std::vector<GroupRow> groups;
  std::vector<TopRow> top;
  size_t out_pos = 0;
};

constexpr size_t kReadChunk = 4096;
constexpr uint64 kPrefetch = 16;  // records ahead whose keys are prefetched

// Copies result pages into the spool (memory first, then the temporary file).
class SpoolSink final : public PairSink {
 public:
  explicit SpoolSink(SimjoinScanState* st) : st_(st) {}
  void consume(const PairRecord* pairs, size_t n) override {
    SimjoinScanState* st = st_;
    size_t take = std::min(n, st->mem_cap - st->mem_n);
    memcpy(st->mem + st->mem_n, pairs, take * sizeof(PairRecord));
    st->mem_n += take;
    if (take == n) return;
    const PairRecord* rest = pairs + take;
    const size_t left = n - take;
    pg_guard([&] {
      if (!st->file) {
        MemoryContext old = MemoryContextSwitchTo(st->css.ss.ps.state->es_query_cxt);
        st->file = BufFileCreateTemp(false);
        MemoryContextSwitchTo(old);
      }
      BufFileWrite(st->file, (void*)rest, left * sizeof(PairRecord));
    });
    st->file_n += left;
  }

 private:
  SimjoinScanState* st_;
};

// Stops the pipe's thread before the points it reads are freed (end of scan, rescan, or an
// error anywhere in the query).
void free_pushed(void* arg) {
  SimjoinScanState* st = (SimjoinScanState*)arg;
  delete st->pushed;
  st->pushed = nullptr;
}

// Stops a pipelined run at a transaction or subtransaction abort (before admission releases
// its device memory); a later read of the scan fails instead of ending early.
void stop_pushed(void* arg) {
  free_pushed(arg);
  ((SimjoinScanState*)arg)->aborted = true;
}

// Evaluates the arguments, reads the relations and runs the join into the spool or the
// pushdown's sinks, or starts it on the pipe's thread (C++).
void run_join(void* arg) {
  SimjoinScanState* st = (SimjoinScanState*)arg;
  ExprContext* econtext = st->css.ss.ps.ps_ExprContext;
  List* states = st->arg_states;
  const int nrel = st->form;
  SimjoinArgs args;
  args.nrel = nrel;
  bool null_input = false;
  PairPredicate pred;
  pg_guard([&] {
    Datum vals[5];
    bool nulls[5];
    int k = 0;
    ListCell* lc;
    foreach (lc, states) {
      if (k < 5) vals[k] = ExecEvalExpr((ExprState*)lfirst(lc), econtext, &nulls[k]);
      ++k;
    }
    for (int r = 0; r <= nrel; ++r) null_input = null_input || nulls[r];
    if (null_input) return;
    args.relids[0] = DatumGetObjectId(vals[0]);
    args.relids[1] = nrel == 2 ? DatumGetObjectId(vals[1]) : InvalidOid;
    args.eps = DatumGetFloat8(vals[nrel]);
    args.coords = nulls[nrel + 1] ? nullptr : DatumGetArrayTypeP(vals[nrel + 1]);
    args.id = nulls[nrel + 2] ? nullptr : DatumGetTextPP(vals[nrel + 2]);
    if (st->mode == MODE_ROWS) {
      MemoryContext old = MemoryContextSwitchTo(st->css.ss.ps.state->es_query_cxt);
      st->mem_cap = std::max<size_t>(size_t(work_mem) * 1024 / sizeof(PairRecord), 1024);
      st->mem = (PairRecord*)alloc_big(CurrentMemoryContext, st->mem_cap * sizeof(PairRecord));
      st->rbuf = (PairRecord*)palloc(kReadChunk * sizeof(PairRecord));
      MemoryContextSwitchTo(old);
    }
  });
  if (null_input) return;
  if (st->code != NIL) pg_guard([&] { instantiate_predicate(st->code, st->param_states, econtext, &pred); });
  pred.validate();
  SimjoinInput in;
  {
    MemoryContext qcxt = st->css.ss.ps.state->es_query_cxt;
    MemoryContext old = CurrentMemoryContext;
    CurrentMemoryContext = qcxt;  // the points live until the scan ends
    try {
      simjoin_read(args, &in);
    } catch (...) {
      CurrentMemoryContext = old;
      throw;
    }
    CurrentMemoryContext = old;
  }
  st->points_ctx = in.ctx;
  st->scan_path = in.scan_path;
  st->scan_ms = in.scan_s * 1e3;
  st->ids_a = in.rels[0].ids;
  st->ids_b = in.rels[nrel - 1].ids;
  st->self = nrel == 1;
  // The pushdown's C++ state dies with the points (a reset callback on their context), so an
  // error anywhere in the query stops a running pipe before the points go.
  Pushed* pu = new Pushed();
  st->pushed = pu;
  pg_guard([&] {
    MemoryContextCallback* cb = (MemoryContextCallback*)MemoryContextAlloc(in.ctx, sizeof(MemoryContextCallback));
    cb->func = free_pushed;
    cb->arg = st;
    MemoryContextRegisterResetCallback(in.ctx, cb);
  });
  pu->pred = std::move(pred);
  pu->keys = PairKeys{st->ids_a, st->ids_b, st->self};
  if (!pu->pred.empty()) pu->filter.reset(new PairFilter(pu->pred, pu->keys));
  if (st->mode == MODE_ROWS) {
    SpoolSink spool(st);
    simjoin_run(args, &in, spool, pu->filter.get());
    return;
  }
  if (st->mode == MODE_AGG) {
    // A predicate over dist alone (or none): the reduction runs in the engine's workers.
    // An engine that reduces on its own (the GPU) computes it without handing pairs over.
    std::unique_ptr<AggregateStage> stage;
    if (!pu->pred.uses_keys()) stage.reset(new AggregateStage(&pu->pred));
    PairReduce red;
    red.kind = PairReduce::Aggregate;
    red.keys_a = pu->keys.a;
    red.keys_b = pu->keys.b;
    if (simjoin_run(args, &in, pu->agg, pu->filter.get(), stage.get(), &red)) stage->finish(&pu->agg);
    if (red.done) pu->agg.merge(red.count, red.sum, red.comp, red.min, red.max);
  } else if (st->mode == MODE_GROUP) {
    GroupSink groups(pu->keys, st->side, size_t(in.rels[0].n), size_t(in.rels[nrel - 1].n));
    PairReduce red;
    red.kind = PairReduce::Group;
    red.keys_a = pu->keys.a;
    red.keys_b = pu->keys.b;
    red.side = st->side;
    red.want_min = red.want_max = false;  // only the aggregates the query reads
    for (int c = 0; c < st->ncols; ++c) {
      red.want_min = red.want_min || st->attno[c] == COL_MIN;
      red.want_max = red.want_max || st->attno[c] == COL_MAX;
    }
    simjoin_run(args, &in, groups, pu->filter.get(), nullptr, &red);
    if (red.done) groups.merge(red);
    pu->groups = groups.finish();
  } else if (st->mode == MODE_TOPK) {
    TopKSink top(pu->keys, size_t(st->k), st->descending);
    PairReduce red;
    red.kind = PairReduce::TopK;
    red.keys_a = pu->keys.a;
    red.keys_b = pu->keys.b;
    red.k = uint64_t(st->k);
    red.descending = st->descending;
    simjoin_run(args, &in, top, pu->filter.get(), nullptr, &red);
    pu->top = top.finish();
  } else {
    // Pipelined: the engine runs on the pipe's thread from here on; nothing it touches belongs
    // to PostgreSQL except the points (kept until the pipe has stopped). Any rows will do, so
    // the pairs among the leading points come first (prefix_first_join).
    SimjoinPrepared prep = simjoin_prepare(args, &in);
    pu->prob = prep.prob;
    pu->engine_name = prep.engine->name();
    pu->engine_filters = prep.engine->applies_pair_filter();
    if (pu->engine_filters) pu->prob.filter = pu->filter.get();
    pu->pipe.reset(new PagePipe(4));
    pu->ctl.reset(new PipeControl(pu->pipe.get()));
    pu->ctl->stats.scan_s = in.scan_s;
    pu->grant.reset(new DeviceGrant(prep.engine, *pu->ctl, 0, 0, 0, true));
    pg_guard([&] { live_run_link(&pu->live, stop_pushed, st, st->css.ss.ps.state); });
    Engine* eng = prep.engine;
    Pushed* p = pu;
    pu->pipe->start([eng, p](PairSink& out) {
      FilterSink sink(p->engine_filters ? nullptr : p->filter.get(), out);
      prefix_first_join(*eng, p->prob, sink, *p->ctl, [p] { return p->pipe->drained(); });
    });
  }
}

// Frees the spool, the pushdown state and the points.
void release(SimjoinScanState* st) {
  if (st->file) BufFileClose(st->file);
  st->file = nullptr;
  if (st->points_ctx) MemoryContextDelete(st->points_ctx);  // also frees st->pushed
  st->points_ctx = nullptr;
  if (st->mem) pfree(st->mem);
  if (st->rbuf) pfree(st->rbuf);
  st->mem = st->rbuf = nullptr;
  st->mem_n = st->file_n = st->pos = 0;
  st->rbuf_n = st->rbuf_pos = 0;
  st->started = false;
  st->aborted = false;
}

// Fills the scan slot's columns from one pair; a whole-row column gets a composite datum
// (allocated in the per-tuple memory, like the function scan's projection).
void store_row(SimjoinScanState* st, TupleTableSlot* slot, int64 a, int64 b, double dist) {
  for (int c = 0; c < st->ncols; ++c) {
    const int att = st->attno[c];
    slot->tts_isnull[c] = false;
    if (att == 0) {
      Datum v[3] = {Int64GetDatum(a), Int64GetDatum(b), Float8GetDatum(dist)};
      bool n[3] = {false, false, false};
      MemoryContext old = MemoryContextSwitchTo(st->css.ss.ps.ps_ExprContext->ecxt_per_tuple_memory);
      slot->tts_values[c] = HeapTupleGetDatum(heap_form_tuple(st->row_desc, v, n));
      MemoryContextSwitchTo(old);
    } else {
      slot->tts_values[c] = att == 1 ? Int64GetDatum(a) : att == 2 ? Int64GetDatum(b) : Float8GetDatum(dist);
    }
  }
}

// The aggregate row (MODE_AGG), once.
TupleTableSlot* next_agg(SimjoinScanState* st, TupleTableSlot* slot) {
  if (st->pos > 0) return slot;
  st->pos = 1;
  static const AggregateSink none;  // a NULL relation or eps: no pairs
  const AggregateSink& a = st->pushed ? st->pushed->agg : none;
  for (int c = 0; c < st->ncols; ++c) {
    const int kind = st->attno[c];
    slot->tts_isnull[c] = kind != COL_COUNT && a.count == 0;
    switch (kind) {
      case COL_COUNT: slot->tts_values[c] = Int64GetDatum(int64(a.count)); break;
      case COL_SUM: slot->tts_values[c] = Float8GetDatum(a.sum()); break;
      case COL_MIN: slot->tts_values[c] = Float8GetDatum(a.min); break;
      case COL_MAX: slot->tts_values[c] = Float8GetDatum(a.max); break;
      case COL_AVG: slot->tts_values[c] = Float8GetDatum(a.count ? a.sum() / double(a.count) : 0); break;
      default: slot->tts_values[c] = 0; slot->tts_isnull[c] = true;
    }
  }
  return ExecStoreVirtualTuple(slot);
}

// The next group (MODE_GROUP).
TupleTableSlot* next_group(SimjoinScanState* st, TupleTableSlot* slot) {
  Pushed* pu = st->pushed;
  if (!pu || pu->out_pos >= pu->groups.size()) return slot;
  const GroupRow& g = pu->groups[pu->out_pos++];
  for (int c = 0; c < st->ncols; ++c) {
    slot->tts_isnull[c] = false;
    switch (st->attno[c]) {
      case COL_KEY: slot->tts_values[c] = Int64GetDatum(g.key); break;
      case COL_COUNT: slot->tts_values[c] = Int64GetDatum(int64(g.count)); break;
      case COL_MIN: slot->tts_values[c] = Float8GetDatum(g.min); break;
      case COL_MAX: slot->tts_values[c] = Float8GetDatum(g.max); break;
      default: slot->tts_values[c] = 0; slot->tts_isnull[c] = true;
    }
  }
  return ExecStoreVirtualTuple(slot);
}

// Waits for the pipe's next page (C++ side of next_pipelined): st->pushed->page holds it, or
// done is set.
bool pipe_wait(SimjoinScanState* st) {
  Pushed* pu = st->pushed;
  bool waiting = false;
  call_at_boundary(
      [](void* a) {
        auto* w = (std::pair<SimjoinScanState*, bool*>*)a;
        Pushed* p = w->first->pushed;
        PagePipe::Status s = p->pipe->next(&p->page, 20);
        *w->second = s == PagePipe::Status::Wait;
        if (s == PagePipe::Status::Page) p->page_pos = 0;
        if (s == PagePipe::Status::Done) {
          p->page.clear();
          p->page_pos = 0;
          p->done = true;
          record_run("gpu_simjoin", p->engine_name, p->ctl->stats);
        }
      },
      new (palloc(sizeof(std::pair<SimjoinScanState*, bool*>))) std::pair<SimjoinScanState*, bool*>(st, &waiting));
  (void)pu;
  return waiting;
}

// The next pair of a pipelined run.
TupleTableSlot* next_pipelined(SimjoinScanState* st, TupleTableSlot* slot) {
  if (st->aborted)
    ereport(ERROR, (errcode(ERRCODE_INVALID_CURSOR_STATE),
                    errmsg("the pipelined gpu_simjoin run of this scan was stopped by a subtransaction abort"),
                    errhint("Reopen the cursor.")));
  Pushed* pu = st->pushed;
  if (!pu) return slot;
  while (pu->page_pos >= pu->page.size()) {
    if (pu->done) return slot;
    if (pipe_wait(st)) CHECK_FOR_INTERRUPTS();
  }
  const PairRecord& r = pu->page[pu->page_pos++];
  int64 a, b;
  pu->keys.get(r, &a, &b);
  store_row(st, slot, a, b, r.dist);
  return ExecStoreVirtualTuple(slot);
}

// The next pair as a virtual tuple (id1, id2, dist), or an empty slot at the end.
TupleTableSlot* scan_next(ScanState* ss) {
  SimjoinScanState* st = (SimjoinScanState*)ss;
  TupleTableSlot* slot = ss->ss_ScanTupleSlot;
  if (!st->started) {
    st->started = true;
    call_at_boundary(run_join, st);
    if (st->file && BufFileSeek(st->file, 0, 0, SEEK_SET) != 0)
      ereport(ERROR, (errcode_for_file_access(), errmsg("could not rewind gpu2bs spool file")));
  }
  ExecClearTuple(slot);
  switch (st->mode) {
    case MODE_AGG: return next_agg(st, slot);
    case MODE_GROUP: return next_group(st, slot);
    case MODE_PIPELINED: return next_pipelined(st, slot);
    case MODE_TOPK: {
      Pushed* pu = st->pushed;
      if (!pu || pu->out_pos >= pu->top.size()) return slot;
      const TopRow& t = pu->top[pu->out_pos++];
      store_row(st, slot, t.id1, t.id2, t.dist);
      return ExecStoreVirtualTuple(slot);
    }
    default: break;
  }
  const PairRecord* r;
  if (st->pos < st->mem_n) {
    r = &st->mem[st->pos];
  } else if (st->pos < st->mem_n + st->file_n) {
    if (st->rbuf_pos == st->rbuf_n) {
      size_t want = size_t(std::min<uint64>(kReadChunk, st->mem_n + st->file_n - st->pos));
      size_t got = BufFileRead(st->file, st->rbuf, want * sizeof(PairRecord));
      if (got != want * sizeof(PairRecord))
        ereport(ERROR, (errcode_for_file_access(), errmsg("could not read gpu2bs spool file")));
      st->rbuf_n = want;
      st->rbuf_pos = 0;
    }
    r = &st->rbuf[st->rbuf_pos++];
  } else {
    return slot;
  }
  st->pos++;
  if (st->ncols == 0) return ExecStoreVirtualTuple(slot);  // count(*): no key lookups
  // The keys of a record a few rows ahead (pairs come in cell order, keys in input order, so
  // these lookups miss the caches): prefetched while this row goes up the plan.
  const PairRecord* ahead = st->pos + kPrefetch < st->mem_n ? &st->mem[st->pos + kPrefetch]
                            : st->rbuf_pos + kPrefetch < st->rbuf_n ? &st->rbuf[st->rbuf_pos + kPrefetch]
                                                                    : nullptr;
  if (ahead) {
    __builtin_prefetch(&st->ids_a[ahead->i]);
    __builtin_prefetch(&st->ids_b[ahead->j]);
  }
  int64 a = st->ids_a[r->i], b = st->ids_b[r->j];
  if (st->self && a > b) std::swap(a, b);
  store_row(st, slot, a, b, r->dist);
  return ExecStoreVirtualTuple(slot);
}

// EvalPlanQual recheck (a row lock or UPDATE in the same query met a concurrently updated
// row): the scan returns once the row it returned before, saved by the ROW_MARK_COPY row mark
// as a whole-row value, then ends. The scan has no relation of its own (scanrelid 0), so
// PostgreSQL leaves this to the scan.
bool scan_recheck(ScanState* ss, TupleTableSlot* slot) {
  SimjoinScanState* st = (SimjoinScanState*)ss;
  EPQState* epq = ss->ps.state->es_epq_active;
  if (!epq || st->epq_done || st->mode != MODE_ROWS || st->rti == 0) return false;
  st->epq_done = true;
  const Index rti = st->rti;
  TupleTableSlot* src = nullptr;
  if (epq->relsubs_slot && epq->relsubs_slot[rti - 1]) {
    src = epq->relsubs_slot[rti - 1];
  } else if (epq->relsubs_rowmark && epq->relsubs_rowmark[rti - 1]) {
    src = MakeSingleTupleTableSlot(st->row_desc, &TTSOpsHeapTuple);
    if (!EvalPlanQualFetchRowMark(epq, rti, src)) return false;
  } else {
    return false;
  }
  if (TupIsNull(src)) return false;
  slot_getallattrs(src);
  if (src->tts_isnull[0] || src->tts_isnull[1] || src->tts_isnull[2]) return false;
  ExecClearTuple(slot);
  store_row(st, slot, DatumGetInt64(src->tts_values[0]), DatumGetInt64(src->tts_values[1]),
            DatumGetFloat8(src->tts_values[2]));
  ExecStoreVirtualTuple(slot);
  return true;
}

void begin_scan(CustomScanState* node, EState* estate, int) {
  SimjoinScanState* st = (SimjoinScanState*)node;
  CustomScan* cs = (CustomScan*)node->ss.ps.plan;
  List* exprs = cs->custom_exprs;
  st->arg_states = ExecInitExprList(list_copy_head(exprs, st->nargs), &node->ss.ps);
  st->param_states = ExecInitExprList(list_copy_tail(exprs, st->nargs), &node->ss.ps);
  // The EXECUTE privilege on gpu_simjoin, checked as the function scan's executor does.
  const Oid funcid = Oid(intVal(list_nth(cs->custom_private, P_FUNCID)));
  const AclResult acl = pg_proc_aclcheck(funcid, GetUserId(), ACL_EXECUTE);
  if (acl != ACLCHECK_OK) aclcheck_error(acl, OBJECT_FUNCTION, get_func_name(funcid));
  InvokeFunctionExecuteHook(funcid);
  // The row type of whole-row references: RECORD with the range table entry's column names
  // (aliases included), as a function scan's whole-row Var has.
  TupleDesc desc = CreateTemplateTupleDesc(3);
  const Oid types[3] = {INT8OID, INT8OID, FLOAT8OID};
  const char* names[3] = {"id1", "id2", "dist"};
  for (int k = 0; k < 3; ++k) {
    const char* name = names[k];
    if (list_length(st->names) > k) name = strVal(list_nth(st->names, k));
    TupleDescInitEntry(desc, AttrNumber(k + 1), name, types[k], -1, 0);
  }
  st->row_desc = BlessTupleDesc(desc);
}

TupleTableSlot* exec_scan(CustomScanState* node) {
  return ExecScan(&node->ss, (ExecScanAccessMtd)scan_next, (ExecScanRecheckMtd)scan_recheck);
}

void end_scan(CustomScanState* node) { release((SimjoinScanState*)node); }

// Rescan: new parameter values run the join again; otherwise the spool (or the computed
// aggregate, groups or top rows) is read again. A pipelined run starts over.
void rescan(CustomScanState* node) {
  SimjoinScanState* st = (SimjoinScanState*)node;
  st->epq_done = false;
  if (node->ss.ps.chgParam != nullptr || !st->started || st->mode == MODE_PIPELINED) {
    release(st);
    return;
  }
  if (st->pushed) {
    st->pushed->done = false;
    st->pushed->out_pos = 0;
  }
  st->pos = 0;
  st->rbuf_n = st->rbuf_pos = 0;
  if (st->file && BufFileSeek(st->file, 0, 0, SEEK_SET) != 0)
    ereport(ERROR, (errcode_for_file_access(), errmsg("could not rewind gpu2bs spool file")));
}

// EXPLAIN: what was pushed down into the join; with ANALYZE, how the relations were read.
void explain_scan(CustomScanState* node, List*, ExplainState* es) {
  SimjoinScanState* st = (SimjoinScanState*)node;
  CustomScan* cs = (CustomScan*)node->ss.ps.plan;
  const char* desc = strVal(list_nth(cs->custom_private, P_DESC));
  if (st->mode != MODE_ROWS || es->verbose) ExplainPropertyText("Pushdown", mode_names[st->mode], es);
  if (*desc) ExplainPropertyText("Pushed Filter", desc, es);
  if (st->mode == MODE_GROUP) ExplainPropertyText("Pushed Group Key", st->side ? "id2" : "id1", es);
  if (st->mode == MODE_TOPK) {
    ExplainPropertyText("Pushed Order", st->descending ? "dist DESC, id1, id2" : "dist, id1, id2", es);
    ExplainPropertyInteger("Pushed Limit", nullptr, st->k, es);
  }
  if (es->analyze && st->scan_path != 0) {
    ExplainPropertyText("Relation Read", scan_path_name(st->scan_path), es);
    if (es->timing) ExplainPropertyFloat("Relation Read Time", "ms", st->scan_ms, 3, es);
  }
}

const CustomExecMethods exec_methods = {
    "gpu2bs simjoin", begin_scan, exec_scan, end_scan, rescan,
    nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, explain_scan};

Node* create_state(CustomScan* cs) {
  SimjoinScanState* st = (SimjoinScanState*)newNode(sizeof(SimjoinScanState), T_CustomScanState);
  st->css.methods = &exec_methods;
  List* p = cs->custom_private;
  st->form = intVal(list_nth(p, P_FORM));
  // A base relation's path: custom_relids holds the function's range table index, renumbered
  // with the range table; upper paths (aggregates, top-k) have none and no EvalPlanQual.
  st->rti = bms_membership(cs->custom_relids) == BMS_SINGLETON ? Index(bms_singleton_member(cs->custom_relids)) : 0;
  st->names = (List*)list_nth(p, P_NAMES);
  st->mode = intVal(list_nth(p, P_MODE));
  ListCell* lc;
  foreach (lc, (List*)list_nth(p, P_COLS)) st->attno[st->ncols++] = intVal(lfirst(lc));
  st->nargs = intVal(list_nth(p, P_NARGS));
  st->code = (List*)list_nth(p, P_CODE);
  st->side = intVal(list_nth(p, P_SIDE));
  st->k = strtoll(strVal(list_nth(p, P_K)), nullptr, 10);
  st->descending = intVal(list_nth(p, P_DESCENDING)) != 0;
  return (Node*)st;
}

const CustomScanMethods scan_methods = {"gpu2bs simjoin", create_state};

// ---- planner ----------------------------------------------------------------------------------

// The gpu_simjoin call of range table entry `rti`, its form (1, 2) or 0.
int simjoin_rte(PlannerInfo* root, Index rti, FuncExpr** fe_out) {
  if (rti < 1 || int(rti) >= root->simple_rel_array_size) return 0;
  RangeTblEntry* rte = root->simple_rte_array[rti];
  if (!rte || rte->rtekind != RTE_FUNCTION || rte->funcordinality || list_length(rte->functions) != 1) return 0;
  RangeTblFunction* rtf = linitial_node(RangeTblFunction, rte->functions);
  if (!IsA(rtf->funcexpr, FuncExpr)) return 0;
  FuncExpr* fe = (FuncExpr*)rtf->funcexpr;
  int form = simjoin_form(fe->funcid);
  if (form == 0 || list_length(fe->args) != form + 3 || contain_volatile_functions((Node*)fe->args)) return 0;
  *fe_out = fe;
  return form;
}

// Information an upper path carries to plan_path (custom_private of the path).
struct PathInfo {
  int form = 0;
  Index rti = 0;
  int mode = MODE_ROWS;
  List* cols = NIL;  // ColKinds of the scan columns (aggregate and group modes)
  List* aggs = NIL;  // the Aggrefs (or the key Var) the scan columns stand for
  int side = 0;
  int64 k = 0;
  bool descending = false;
};

List* info_to_list(const PathInfo& in) {
  return list_make5(list_make3(makeInteger(in.form), makeInteger(int(in.rti)), makeInteger(in.mode)), in.cols,
                    in.aggs, list_make2(makeInteger(in.side), makeString(psprintf(INT64_FORMAT, in.k))),
                    makeInteger(in.descending ? 1 : 0));
}

PathInfo info_from_list(List* l) {
  PathInfo in;
  List* a = (List*)linitial(l);
  in.form = intVal(linitial(a));
  in.rti = Index(intVal(lsecond(a)));
  in.mode = intVal(lthird(a));
  in.cols = (List*)lsecond(l);
  in.aggs = (List*)lthird(l);
  List* b = (List*)lfourth(l);
  in.side = intVal(linitial(b));
  in.k = strtoll(strVal(lsecond(b)), nullptr, 10);
  in.descending = intVal(list_nth(l, 4)) != 0;
  return in;
}

// Splits the scan's quals into the pushed predicate template (appended to *code / *params /
// desc) and those left to PostgreSQL (returned).
List* split_quals(List* clauses, Index relid, List** code, List** params, StringInfo desc) {
  List* keep = NIL;
  ListCell* lc;
  foreach (lc, clauses) {
    Node* c = (Node*)lfirst(lc);
    if (!enable_pushdown || !translate_clause(c, relid, code, params, 0, desc)) keep = lappend(keep, c);
  }
  return keep;
}

Plan* plan_path(PlannerInfo* root, RelOptInfo* rel, CustomPath* path, List* tlist, List* clauses,
                List*) {
  PathInfo info = info_from_list(path->custom_private);
  const Index relid = info.rti;
  FuncExpr* fe = nullptr;
  simjoin_rte(root, relid, &fe);
  CustomScan* cs = makeNode(CustomScan);
  cs->scan.plan.targetlist = tlist;
  cs->scan.scanrelid = 0;
  cs->flags = path->flags;
  List* code = NIL;
  List* params = NIL;
  StringInfoData desc;
  initStringInfo(&desc);
  // Upper paths: every qual of the base relation is pushed (checked when the path was made).
  List* quals = extract_actual_clauses(info.mode >= MODE_AGG || info.mode == MODE_TOPK
                                           ? root->simple_rel_array[relid]->baserestrictinfo
                                           : clauses,
                                       false);
  List* kept = split_quals(quals, relid, &code, &params, &desc);
  if (info.mode != MODE_ROWS && info.mode != MODE_PIPELINED && kept != NIL)
    elog(ERROR, "gpu2bs: a qual of a pushed-down aggregate could not be pushed");
  cs->scan.plan.qual = info.mode == MODE_ROWS || info.mode == MODE_PIPELINED ? kept : NIL;
  cs->custom_exprs = list_concat((List*)copyObjectImpl(fe->args), params);
  const Oid types[3] = {INT8OID, INT8OID, FLOAT8OID};
  const char* names[3] = {"id1", "id2", "dist"};
  List* scan_tlist = NIL;
  List* cols = NIL;
  ListCell* lc;
  int resno = 1;
  if (info.mode == MODE_AGG || info.mode == MODE_GROUP) {
    // The scan tuple holds the aggregates (and the key) themselves: the target list's Aggrefs
    // refer to these columns.
    ListCell* lc2;
    forboth (lc, info.aggs, lc2, info.cols) {
      scan_tlist = lappend(scan_tlist, makeTargetEntry((Expr*)lfirst(lc), AttrNumber(resno++), nullptr, false));
      cols = lappend(cols, makeInteger(lfirst_int(lc2)));
    }
  } else {
    // The scan tuple holds just the columns the query needs (none for count(*)), in the order
    // of the target list when that is a list of distinct plain columns and there is no qual:
    // then no projection step runs per row. Otherwise all three columns, plus the whole row
    // when the query references it (SELECT g, row_to_json(g), count(g), and the row marks of
    // UPDATE/DELETE/MERGE ... FROM and FOR UPDATE, which copy each joined row whole).
    List* colnos = NIL;
    bool plain = kept == NIL;  // quals may read columns the target list does not
    Var* whole = nullptr;
    List* vars = pull_var_clause((Node*)list_concat(list_copy(tlist), kept),
                                 PVC_RECURSE_AGGREGATES | PVC_RECURSE_WINDOWFUNCS | PVC_RECURSE_PLACEHOLDERS);
    foreach (lc, vars) {
      Var* v = (Var*)lfirst(lc);
      if (Index(v->varno) == relid && v->varattno == 0 && !whole) whole = (Var*)copyObjectImpl(v);
    }
    foreach (lc, tlist) {
      Node* e = (Node*)((TargetEntry*)lfirst(lc))->expr;
      if (!IsA(e, Var) || Index(((Var*)e)->varno) != relid || ((Var*)e)->varattno < 1 ||
          ((Var*)e)->varattno > 3 || list_member_int(colnos, ((Var*)e)->varattno)) {
        plain = false;
        break;
      }
      colnos = lappend_int(colnos, ((Var*)e)->varattno);
    }
    if (!plain) colnos = list_make3_int(1, 2, 3);
    foreach (lc, colnos) {
      const int k = lfirst_int(lc) - 1;
      scan_tlist = lappend(scan_tlist, makeTargetEntry((Expr*)makeVar(relid, AttrNumber(k + 1), types[k], -1, InvalidOid, 0),
                                                       AttrNumber(resno++), pstrdup(names[k]), false));
      cols = lappend(cols, makeInteger(k + 1));
    }
    if (whole) {
      scan_tlist = lappend(scan_tlist, makeTargetEntry((Expr*)whole, AttrNumber(resno++), pstrdup("row"), false));
      cols = lappend(cols, makeInteger(0));
    }
  }
  cs->custom_scan_tlist = scan_tlist;
  List* priv = NIL;
  priv = lappend(priv, makeInteger(info.form));
  // The entry's column names (aliases included), as a function scan's whole-row Var has them.
  List* colnames = NIL;
  const RangeTblEntry* rte = root->simple_rte_array[relid];
  if (rte->eref)
    foreach (lc, rte->eref->colnames) colnames = lappend(colnames, makeString(pstrdup(strVal(lfirst(lc)))));
  priv = lappend(priv, colnames);
  priv = lappend(priv, makeInteger(info.mode));
  priv = lappend(priv, cols);
  priv = lappend(priv, makeInteger(list_length(fe->args)));
  priv = lappend(priv, code);
  priv = lappend(priv, makeString(desc.data));
  priv = lappend(priv, makeInteger(info.side));
  priv = lappend(priv, makeString(psprintf(INT64_FORMAT, info.k)));
  priv = lappend(priv, makeInteger(info.descending ? 1 : 0));
  priv = lappend(priv, makeInteger(int(fe->funcid)));
  cs->custom_private = priv;
  cs->methods = &scan_methods;
  return &cs->scan.plan;
}

const CustomPathMethods path_methods = {"gpu2bs simjoin", plan_path, nullptr};

// True when the query level above the scan only takes rows from it (no grouping, sorting,
// window functions, set-returning target list), so it may stop reading early.
bool only_takes_rows(PlannerInfo* root) {
  Query* q = root->parse;
  return !q->hasAggs && q->groupClause == NIL && q->groupingSets == NIL && !root->hasHavingQual &&
         q->sortClause == NIL && q->distinctClause == NIL && !q->hasWindowFuncs && !q->hasTargetSRFs &&
         q->setOperations == nullptr;
}

// Offers the custom scan for gpu_simjoin(...) in FROM when its arguments need no other relation.
void pathlist_hook(PlannerInfo* root, RelOptInfo* rel, Index rti, RangeTblEntry* rte) {
  if (prev_pathlist_hook) prev_pathlist_hook(root, rel, rti, rte);
  if (!enable_customscan || rte->rtekind != RTE_FUNCTION || !bms_is_empty(rel->lateral_relids) ||
      rel->pathlist == NIL)
    return;
  FuncExpr* fe = nullptr;
  int form = simjoin_rte(root, rti, &fe);
  if (form == 0) return;
  CustomPath* cp = function_scan_custom_path(rel, &path_methods);
  PathInfo info;
  info.form = form;
  info.rti = rti;
  // A query that wants its first rows soon (LIMIT, EXISTS, cursors) and reads this scan alone:
  // pipelined, the first rows come while the join runs, the join stops when the reading does.
  if (enable_pushdown && root->tuple_fraction > 0 && bms_membership(root->all_baserels) == BMS_SINGLETON &&
      only_takes_rows(root) && root->parse->rowMarks == NIL && root->parse->commandType == CMD_SELECT) {
    info.mode = MODE_PIPELINED;
    cp->path.startup_cost *= 0.2;
  }
  cp->custom_private = info_to_list(info);
  add_path(rel, &cp->path);
}

// The base relation's custom scan context for an upper path: the rel is gpu_simjoin alone at
// this query level, all its quals are pushable, and nothing needs row marks. Returns the form.
int upper_base(PlannerInfo* root, RelOptInfo* input_rel, Index* rti, FuncExpr** fe) {
  if (!enable_customscan || !enable_pushdown || input_rel->reloptkind != RELOPT_BASEREL) return 0;
  if (bms_membership(root->all_baserels) != BMS_SINGLETON || root->parse->rowMarks != NIL ||
      root->parse->commandType != CMD_SELECT || root->parse->hasTargetSRFs || root->parse->groupingSets != NIL ||
      !bms_is_empty(input_rel->lateral_relids))
    return 0;
  const Index r = input_rel->relid;
  int form = simjoin_rte(root, r, fe);
  if (form == 0) return 0;
  List* code = NIL;
  List* params = NIL;
  StringInfoData desc;
  initStringInfo(&desc);
  ListCell* lc;
  foreach (lc, input_rel->baserestrictinfo) {
    RestrictInfo* ri = (RestrictInfo*)lfirst(lc);
    if (ri->pseudoconstant || !translate_clause((Node*)ri->clause, r, &code, &params, 0, &desc)) return 0;
  }
  *rti = r;
  return form;
}

// The cheapest custom scan path of the base relation (its startup cost is the function's).
Path* base_path(RelOptInfo* input_rel) {
  ListCell* lc;
  foreach (lc, input_rel->pathlist) {
    Path* p = (Path*)lfirst(lc);
    if (IsA(p, CustomPath) && ((CustomPath*)p)->methods == &path_methods) return p;
  }
  return nullptr;
}

// The aggregate kind of `node` over gpu_simjoin's columns, or -1.
int agg_kind(Node* node, Index rti) {
  if (!IsA(node, Aggref)) return -1;
  Aggref* a = (Aggref*)node;
  if (a->aggorder != NIL || a->aggdistinct != NIL || a->aggfilter || a->agglevelsup != 0 ||
      a->aggkind != AGGKIND_NORMAL || a->aggsplit != AGGSPLIT_SIMPLE)
    return -1;
  if (a->aggfnoid == F_COUNT_) return COL_COUNT;
  if (list_length(a->args) != 1) return -1;
  Node* arg = (Node*)((TargetEntry*)linitial(a->args))->expr;
  if (!IsA(arg, Var) || Index(((Var*)arg)->varno) != rti || ((Var*)arg)->varlevelsup != 0) return -1;
  const int att = ((Var*)arg)->varattno;
  if (a->aggfnoid == F_COUNT_ANY) return att >= 0 && att <= 3 ? COL_COUNT : -1;  // never NULL
  if (att != 3) return -1;
  switch (a->aggfnoid) {
    case F_SUM_FLOAT8: return COL_SUM;
    case F_MIN_FLOAT8: return COL_MIN;
    case F_MAX_FLOAT8: return COL_MAX;
    case F_AVG_FLOAT8: return COL_AVG;
    default: return -1;
  }
}

// A grouping column: id1 (0) or id2 (1) of the function, or -1.
int key_side(Node* node, Index rti) {
  if (!node || !IsA(node, Var) || Index(((Var*)node)->varno) != rti || ((Var*)node)->varlevelsup != 0) return -1;
  const int att = ((Var*)node)->varattno;
  return att == 1 ? 0 : att == 2 ? 1 : -1;
}

void add_upper_path(PlannerInfo* root, RelOptInfo* output_rel, PathTarget* target, Path* base,
                    const PathInfo& info, double rows, List* pathkeys) {
  CustomPath* cp = makeNode(CustomPath);
  cp->path.pathtype = T_CustomScan;
  cp->path.parent = output_rel;
  cp->path.pathtarget = target;
  cp->path.param_info = nullptr;
  cp->path.rows = rows;
  cp->path.startup_cost = base->startup_cost;
  cp->path.total_cost = base->startup_cost + rows * cpu_tuple_cost;
  cp->path.pathkeys = pathkeys;
  cp->flags = 0;
  cp->custom_private = info_to_list(info);
  cp->methods = &path_methods;
  add_path(output_rel, &cp->path);
}

// `pks` when it is one ascending key in int8's btree order (the order GroupSink::finish returns
// groups in), else NIL. GROUP BY and DISTINCT take their sort direction from ORDER BY, so
// their pathkeys may be descending and must then not be claimed.
List* ascending_key_pathkeys(List* pks) {
  if (list_length(pks) != 1) return NIL;
  const PathKey* pk = (const PathKey*)linitial(pks);
  if (pk->pk_strategy != BTLessStrategyNumber || pk->pk_nulls_first || pk->pk_opfamily != INTEGER_BTREE_FAM_OID)
    return NIL;
  return pks;
}

// Aggregates and GROUP BY id1 / id2 over the join.
void group_agg_paths(PlannerInfo* root, RelOptInfo* input_rel, RelOptInfo* output_rel) {
  Index rti;
  FuncExpr* fe;
  int form = upper_base(root, input_rel, &rti, &fe);
  Path* base = form ? base_path(input_rel) : nullptr;
  if (!base || root->hasHavingQual) return;
  Query* q = root->parse;
  PathInfo info;
  info.form = form;
  info.rti = rti;
  Node* key = nullptr;
  if (q->groupClause != NIL) {
    if (list_length(q->groupClause) != 1) return;
    SortGroupClause* sgc = (SortGroupClause*)linitial(q->groupClause);
    key = (Node*)get_sortgroupclause_expr(sgc, q->targetList);
    info.side = key_side(key, rti);
    if (info.side < 0) return;
    info.mode = MODE_GROUP;
    info.cols = list_make1_int(COL_KEY);
    info.aggs = list_make1(copyObjectImpl(key));
  } else {
    info.mode = MODE_AGG;
  }
  PathTarget* target = root->upper_targets[UPPERREL_GROUP_AGG];
  List* found = pull_var_clause((Node*)target->exprs, PVC_INCLUDE_AGGREGATES);
  ListCell* lc;
  foreach (lc, found) {
    Node* n = (Node*)lfirst(lc);
    if (IsA(n, Var)) {
      if (!key || !equal(n, key)) return;
      continue;
    }
    const int kind = agg_kind(n, rti);
    if (kind < 0) return;
    if (info.mode == MODE_GROUP && (kind == COL_SUM || kind == COL_AVG)) return;
    if (list_member(info.aggs, n)) continue;
    info.aggs = lappend(info.aggs, copyObjectImpl(n));
    info.cols = lappend_int(info.cols, kind);
  }
  // The grouped rel's row estimate (the standard paths' one).
  double rows = output_rel->rows > 0 ? output_rel->rows : 1;
  if (output_rel->pathlist != NIL) rows = ((Path*)linitial(output_rel->pathlist))->rows;
  // Groups come out in ascending key order (GroupSink::finish), so ORDER BY the key needs no Sort.
  add_upper_path(root, output_rel, target, base, info, rows,
                 info.mode == MODE_GROUP ? ascending_key_pathkeys(root->group_pathkeys) : NIL);
}

// SELECT DISTINCT id1 (or id2): the keys of the group mode without aggregates.
void distinct_paths(PlannerInfo* root, RelOptInfo* input_rel, RelOptInfo* output_rel) {
  Index rti;
  FuncExpr* fe;
  Query* q = root->parse;
  if (q->hasAggs || q->groupClause != NIL || q->hasDistinctOn || q->hasWindowFuncs ||
      list_length(q->distinctClause) != 1)
    return;
  int form = upper_base(root, input_rel, &rti, &fe);
  Path* base = form ? base_path(input_rel) : nullptr;
  PathTarget* target = root->upper_targets[UPPERREL_DISTINCT];
  if (!base || list_length(target->exprs) != 1) return;
  Node* key = (Node*)linitial(target->exprs);
  PathInfo info;
  info.form = form;
  info.rti = rti;
  info.side = key_side(key, rti);
  if (info.side < 0) return;
  info.mode = MODE_GROUP;
  info.cols = list_make1_int(COL_KEY);
  info.aggs = list_make1(copyObjectImpl(key));
  double rows = output_rel->pathlist != NIL ? ((Path*)linitial(output_rel->pathlist))->rows : 1;
  // The keys come out ascending (GroupSink::finish): ORDER BY the key needs no Sort.
  add_upper_path(root, output_rel, target, base, info, rows, ascending_key_pathkeys(root->distinct_pathkeys));
}

// ORDER BY dist [ASC|DESC] [, id1 [, id2]] with a constant LIMIT: the top k under the Limit.
void ordered_paths(PlannerInfo* root, RelOptInfo* input_rel, RelOptInfo* output_rel) {
  Index rti;
  FuncExpr* fe;
  Query* q = root->parse;
  if (q->hasAggs || q->groupClause != NIL || q->distinctClause != NIL || q->hasWindowFuncs ||
      root->sort_pathkeys == NIL || root->limit_tuples <= 0 || root->limit_tuples > 1e7)
    return;
  int form = upper_base(root, input_rel, &rti, &fe);
  Path* base = form ? base_path(input_rel) : nullptr;
  if (!base) return;
  // The sort keys: dist (either direction), then optionally id1 and id2 ascending.
  int k = 0;
  bool desc = false;
  ListCell* lc;
  foreach (lc, root->sort_pathkeys) {
    PathKey* pk = (PathKey*)lfirst(lc);
    EquivalenceClass* ec = pk->pk_eclass;
    if (ec->ec_has_volatile || list_length(ec->ec_members) < 1) return;
    int att = -1;
    ListCell* mc;
    foreach (mc, ec->ec_members) {
      EquivalenceMember* em = (EquivalenceMember*)lfirst(mc);
      Node* e = (Node*)em->em_expr;
      if (IsA(e, Var) && Index(((Var*)e)->varno) == rti && ((Var*)e)->varlevelsup == 0) att = ((Var*)e)->varattno;
    }
    const bool is_desc = pk->pk_strategy == BTGreaterStrategyNumber;
    if (k == 0) {
      if (att != 3 || pk->pk_opfamily != 1970) return;  // float_ops
      desc = is_desc;
    } else if (att != k || is_desc || pk->pk_opfamily != INTEGER_BTREE_FAM_OID) {
      return;
    }
    ++k;
  }
  if (k > 3) return;
  PathInfo info;
  info.form = form;
  info.rti = rti;
  info.mode = MODE_TOPK;
  info.k = int64(root->limit_tuples);
  info.descending = desc;
  add_upper_path(root, output_rel, root->upper_targets[UPPERREL_ORDERED], base, info,
                 std::min(root->limit_tuples, base->rows), root->sort_pathkeys);
}

// Upper-planner pushdown: aggregates, groups, DISTINCT and top-k over gpu_simjoin alone.
void upper_hook(PlannerInfo* root, UpperRelationKind stage, RelOptInfo* input_rel, RelOptInfo* output_rel,
                void* extra) {
  if (prev_upper_hook) prev_upper_hook(root, stage, input_rel, output_rel, extra);
  if (!enable_customscan || !enable_pushdown) return;
  switch (stage) {
    case UPPERREL_GROUP_AGG: group_agg_paths(root, input_rel, output_rel); break;
    case UPPERREL_DISTINCT: distinct_paths(root, input_rel, output_rel); break;
    case UPPERREL_ORDERED: ordered_paths(root, input_rel, output_rel); break;
    default: break;
  }
}

}  // namespace

extern "C" {
// Planner support function of gpu_simjoin: being called loads this library (and so registers
// the custom scan's planner hook) before the first such query's paths are built. No estimates.
PG_FUNCTION_INFO_V1(gpu2bs_simjoin_support);
Datum gpu2bs_simjoin_support(PG_FUNCTION_ARGS) { PG_RETURN_POINTER(nullptr); }
}

namespace gpu2bs {
namespace pg {

// gpu2bs.enable_customscan.
bool customscan_enabled() { return enable_customscan; }

// gpu2bs.enable_pushdown.
bool pushdown_enabled() { return enable_pushdown; }

CustomPath* function_scan_custom_path(RelOptInfo* rel, const CustomPathMethods* methods) {
  Path* fs = (Path*)linitial(rel->pathlist);
  CustomPath* cp = makeNode(CustomPath);
  cp->path.pathtype = T_CustomScan;
  cp->path.parent = rel;
  cp->path.pathtarget = rel->reltarget;
  cp->path.param_info = nullptr;
  cp->path.rows = fs->rows;
  cp->path.startup_cost = fs->startup_cost;
  cp->path.total_cost = fs->startup_cost + (fs->total_cost - fs->startup_cost) * 0.5;
  cp->flags = 0;
  cp->methods = methods;
  return cp;
}

void register_simjoin_scan() {
  DefineCustomBoolVariable("gpu2bs.enable_customscan",
                           "Runs gpu_simjoin and gpu_dbscan in FROM as custom scans that return rows without a tuplestore.",
                           nullptr, &enable_customscan, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
  DefineCustomBoolVariable("gpu2bs.enable_pushdown",
                           "Pushes quals on id1, id2 and dist, aggregates, GROUP BY id1 or id2, DISTINCT, "
                           "ORDER BY dist LIMIT k and early-stopping LIMIT into the similarity join's custom scan, "
                           "and quals on value and early-stopping LIMIT into gpu_pairwise's.",
                           "Off: the custom scan returns every pair and PostgreSQL does the rest.",
                           &enable_pushdown, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
  RegisterCustomScanMethods(&scan_methods);
  prev_pathlist_hook = set_rel_pathlist_hook;
  set_rel_pathlist_hook = pathlist_hook;
  prev_upper_hook = create_upper_paths_hook;
  create_upper_paths_hook = upper_hook;
}

}  // namespace pg
}  // namespace gpu2bs
