// The direct heap reader: the rows of `SELECT key::int8, x::float8, ... FROM rel` for a plain heap
// table, read from its pages under the active snapshot without the executor. Used only where it
// gives exactly what that query gives (same rows and values, same order, same errors); every
// other relation, and every case where the query would raise a permission error, goes through
// SPI.
#include "pg.h"

extern "C" {
#include "access/detoast.h"
#include "access/heapam.h"
#include "access/heaptoast.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "parser/parse_coerce.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "storage/predicate.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
}

#include <pthread.h>

#include <atomic>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <csignal>
#include <cstring>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "../core/pairwise.h"
#include "heap_read.h"
#include "settings.h"

namespace gpu2bs {
namespace pg {

namespace {

// How a column's stored value becomes the query's int8 key or float8 coordinate.
enum ValKind : uint8 { VK_F8 = 0, VK_F4, VK_I2, VK_I4, VK_I8, VK_OTHER };

// The kind of a column of type `typid` (domains resolved: a cast from a domain is its base
// type's cast).
ValKind val_kind(Oid typid) {
  switch (getBaseType(typid)) {
    case FLOAT8OID: return VK_F8;
    case FLOAT4OID: return VK_F4;
    case INT2OID: return VK_I2;
    case INT4OID: return VK_I4;
    case INT8OID: return VK_I8;
    default: return VK_OTHER;
  }
}

// A stored coordinate as float8, exactly as PostgreSQL's casts to float8 convert it.
inline double datum_double(Datum d, uint8 kind) {
  switch (kind) {
    case VK_F8: return DatumGetFloat8(d);
    case VK_F4: return double(DatumGetFloat4(d));
    case VK_I2: return double(DatumGetInt16(d));
    case VK_I4: return double(DatumGetInt32(d));
    default: return double(DatumGetInt64(d));
  }
}

// A stored key as int8.
inline int64 datum_int(Datum d, uint8 kind) {
  switch (kind) {
    case VK_I2: return DatumGetInt16(d);
    case VK_I4: return DatumGetInt32(d);
    default: return DatumGetInt64(d);
  }
}

// A fixed-width coordinate stored at `p` as float8.
inline double raw_double(const char* p, uint8 kind) {
  switch (kind) {
    case VK_F8: { double v; memcpy(&v, p, 8); return v; }
    case VK_F4: { float v; memcpy(&v, p, 4); return double(v); }
    case VK_I2: { int16 v; memcpy(&v, p, 2); return double(v); }
    case VK_I4: { int32 v; memcpy(&v, p, 4); return double(v); }
    default: { int64 v; memcpy(&v, p, 8); return double(v); }
  }
}

// A fixed-width key stored at `p` as int8.
inline int64 raw_int(const char* p, uint8 kind) {
  switch (kind) {
    case VK_I2: { int16 v; memcpy(&v, p, 2); return v; }
    case VK_I4: { int32 v; memcpy(&v, p, 4); return v; }
    default: { int64 v; memcpy(&v, p, 8); return v; }
  }
}

// Offset of attribute `attno` in the data of a tuple without NULLs, or -1 when a variable-width
// attribute precedes it (offsets of fixed-width attributes depend only on the descriptor).
int fixed_offset(TupleDesc td, AttrNumber attno) {
  int off = 0;
  for (int a = 0; a < attno; ++a) {
    Form_pg_attribute att = TupleDescAttr(td, a);
    if (att->attlen <= 0) return -1;
    off = att_align_nominal(off, att->attalign);
    if (a == attno - 1) return off;
    off += att->attlen;
  }
  return -1;
}

// Whether the calling user may execute PostgreSQL's cast from a column of type `typid` (domains
// resolved) to `target`, as the SQL query's cast expression requires (none needed: true).
bool may_cast(Oid typid, Oid target) {
  const Oid base = getBaseType(typid);
  if (base == target) return true;
  Oid funcid = InvalidOid;
  if (find_coercion_pathway(target, base, COERCION_EXPLICIT, &funcid) != COERCION_PATH_FUNC) return false;
  return pg_proc_aclcheck(funcid, GetUserId(), ACL_EXECUTE) == ACLCHECK_OK;
}

// Pages pinned and parsed together: the bulk-read ring holds 32 buffers, so a scan that uses it
// pins fewer pages at a time than the ring has; a scan through shared buffers pins more.
constexpr int kChunkPagesRing = 16;
constexpr int kChunkPages = 128;
static_assert(kChunkPages < 65536, "a chunk's page count fits the 16 bits of its ticket");
// Bytes at the start of a page fetched ahead into the CPU cache: the header and the line
// pointers of about 150 tuples.
constexpr int kPrefetchHeadBytes = 640;
// Tables with fewer pages are parsed on the backend thread alone.
constexpr BlockNumber kParallelMinPages = 64;

// Where and how the fixed-layout fast path reads a tuple's key and coordinates.
struct FixedLayout {
  bool fixed;      // every attribute read sits at a constant offset in tuples without NULLs
  bool keyless;
  bool all_f8;     // every coordinate stored as float8
  int dims;
  AttrNumber maxatt;
  int key_off;
  uint8 key_kind;
  int col_off[kMaxDims];
  uint8 col_kind[kMaxDims];
};

// One pinned page of a chunk: its visible tuples' offsets (found under the share lock) and the
// row its first tuple would take if every tuple became a point.
struct ChunkPage {
  Buffer buf;
  Page page;
  BlockNumber block;
  int first_vis;        // index of its first offset in the chunk's offset array
  int nvis;
  int64 base;           // row of its first tuple
  std::atomic<bool> slow;  // a tuple needs the backend thread (NULL, short tuple, non-finite)
};

// Parses page `cp` at fixed offsets into rows base.. of `ids` / `coord`: pure memory reads of a
// pinned page, safe on a worker thread. Marks the page slow at the first tuple the fast path
// cannot take (a NULL, fewer attributes than read, a non-finite coordinate): the backend
// thread reads that page again tuple by tuple.
void parse_page_fixed(const FixedLayout& L, ChunkPage& cp, const OffsetNumber* offs, int64* ids,
                      double* const* coord) {
  if (!L.fixed) {
    cp.slow.store(true, std::memory_order_relaxed);
    return;
  }
  const int dims = L.dims;
  for (int t = 0; t < cp.nvis; ++t) {
    HeapTupleHeader th = (HeapTupleHeader)PageGetItem(cp.page, PageGetItemId(cp.page, offs[cp.first_vis + t]));
    if ((th->t_infomask & HEAP_HASNULL) || HeapTupleHeaderGetNatts(th) < L.maxatt) {
      cp.slow.store(true, std::memory_order_relaxed);
      return;
    }
    const char* tp = (const char*)th + th->t_hoff;
    double v[kMaxDims];
    bool finite = true;
    if (L.all_f8) {
      for (int d = 0; d < dims; ++d) {
        memcpy(&v[d], tp + L.col_off[d], 8);
        finite = finite && std::isfinite(v[d]);
      }
    } else {
      for (int d = 0; d < dims; ++d) {
        v[d] = raw_double(tp + L.col_off[d], L.col_kind[d]);
        finite = finite && std::isfinite(v[d]);
      }
    }
    if (!finite) {
      cp.slow.store(true, std::memory_order_relaxed);
      return;
    }
    const int64 row = cp.base + t;
    if (!L.keyless) ids[row] = raw_int(tp + L.key_off, L.key_kind);
    for (int d = 0; d < dims; ++d) coord[d][row] = v[d];
  }
}

// Worker threads that parse the pages of one chunk at a time beside the backend thread, which
// pins the pages and makes every PostgreSQL call. Workers start with every signal blocked.
class PageParsers {
 public:
  // Starts `n` workers.
  explicit PageParsers(int n) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    try {
      for (int i = 0; i < n; ++i) threads_.emplace_back([this] { work(); });
    } catch (...) {
      pthread_sigmask(SIG_SETMASK, &old, nullptr);
      stop();
      throw;
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }
  // Stops and joins the workers.
  ~PageParsers() { stop(); }
  // `n` workers, or null when n < 1 or none could be started (the backend thread then works
  // alone).
  static PageParsers* start(int n) {
    if (n < 1) return nullptr;
    try {
      return new PageParsers(n);
    } catch (...) {
      return nullptr;
    }
  }
  // Stops and joins the workers (idle between chunks: a chunk is always finished first).
  void stop() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_)
      if (t.joinable()) t.join();
    threads_.clear();
  }
  // Parses pages[0..npages) at fixed offsets on the workers and the calling thread; returns
  // when all are done.
  void parse(const FixedLayout* L, ChunkPage* pages, int npages, const OffsetNumber* offs, int64* ids,
             double* const* coord) {
    run(npages, [=](int p) { parse_page_fixed(*L, pages[p], offs, ids, coord); });
  }
  // Runs task(0..ntasks) (ntasks < 65536) on the workers and the calling thread; returns when
  // all are done. Tasks make no PostgreSQL call.
  void run(int ntasks, const std::function<void(int)>& task) {
    uint64 gen;
    {
      std::lock_guard<std::mutex> lk(mu_);
      task_ = &task;
      gen = ++gen_;
      done_.store(0, std::memory_order_relaxed);
      // Published last: a task is claimed only through a ticket of this batch's generation.
      ticket_.store(make_ticket(gen, ntasks, 0), std::memory_order_release);
    }
    cv_.notify_all();
    const int mine = run_pages(gen);
    int done = done_.fetch_add(mine, std::memory_order_acq_rel) + mine;
    // Workers finish their last task within microseconds: spin, then sleep briefly.
    for (int spins = 0; done < ntasks; ++spins) {
      if (spins > 4096) std::this_thread::sleep_for(std::chrono::microseconds(20));
      done = done_.load(std::memory_order_acquire);
    }
  }

 private:
  // A chunk's ticket: its generation (32 bits), its page count and the next page to take (16
  // bits each), so that a worker still running for an earlier chunk takes nothing of this one.
  static uint64 make_ticket(uint64 gen, int npages, int next) {
    return (gen & 0xffffffffu) << 32 | uint64(npages) << 16 | uint64(next);
  }
  // Takes pages of chunk `gen` until none is left; the number parsed. The chunk's pointers are
  // read only after a page is claimed: the backend thread changes them only once every claimed
  // page is counted in done_.
  int run_pages(uint64 gen) {
    int mine = 0;
    uint64 t = ticket_.load(std::memory_order_acquire);
    for (;;) {
      if (t >> 32 != (gen & 0xffffffffu)) return mine;
      const int npages = int(t >> 16 & 0xffff), p = int(t & 0xffff);
      if (p >= npages) return mine;
      if (!ticket_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel, std::memory_order_acquire))
        continue;
      (*task_)(p);
      ++mine;
      t = ticket_.load(std::memory_order_acquire);
    }
  }
  // A worker: waits for each chunk and parses its share.
  void work() {
    uint64 seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return quit_ || gen_ != seen; });
        if (quit_) return;
        seen = gen_;
      }
      const int mine = run_pages(seen);
      done_.fetch_add(mine, std::memory_order_acq_rel);
    }
  }
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool quit_ = false;
  uint64 gen_ = 0;
  const std::function<void(int)>* task_ = nullptr;
  std::atomic<uint64> ticket_{0};
  std::atomic<int> done_{0};
};

}  // namespace

// Whether the relation `rel` as such can be read by the direct reader: the setting is on, no
// hook may refuse what the SQL query does (permission checks, name lookups, function calls), a
// heap table or populated materialized view without inheritance children, no row-level
// security for the calling user, an MVCC snapshot. PostgreSQL code.
static bool direct_relation_ok(Relation rel) {
  if (!direct_scan_setting || ExecutorCheckPerms_hook != nullptr || object_access_hook != nullptr) return false;
  const char kind = rel->rd_rel->relkind;
  if (kind != RELKIND_RELATION && !(kind == RELKIND_MATVIEW && RelationIsPopulated(rel))) return false;
  if (rel->rd_tableam != GetHeapamTableAmRoutine() || RELATION_IS_OTHER_TEMP(rel)) return false;
  const Oid relid = RelationGetRelid(rel);
  if (has_subclass(relid)) return false;
  if (!ActiveSnapshotSet() || !IsMVCCSnapshot(GetActiveSnapshot())) return false;
  return check_enable_rls(relid, InvalidOid, true) != RLS_ENABLED;
}

// Whether the direct reader gives exactly the SQL query's rows and errors (heap_read.h).
bool direct_read_eligible(Relation rel, AttrNumber key, const AttrNumber* cols, int dims, RelPoints* out) {
  out->direct = false;
  if (!direct_relation_ok(rel)) return false;
  const Oid relid = RelationGetRelid(rel);
  TupleDesc td = RelationGetDescr(rel);
  if (!out->keyless) {
    const ValKind k = val_kind(TupleDescAttr(td, key - 1)->atttypid);
    if ((k != VK_I2 && k != VK_I4 && k != VK_I8) || !may_cast(TupleDescAttr(td, key - 1)->atttypid, INT8OID))
      return false;
    out->key_att = key;
    out->key_kind = k;
  }
  for (int d = 0; d < dims; ++d) {
    const ValKind k = val_kind(TupleDescAttr(td, cols[d] - 1)->atttypid);
    if (k == VK_OTHER || !may_cast(TupleDescAttr(td, cols[d] - 1)->atttypid, FLOAT8OID)) return false;
    out->col_att[d] = cols[d];
    out->col_kind[d] = k;
  }
  // The SELECT names the relation schema-qualified (USAGE on the schema) and needs SELECT on
  // the table or on every column it reads; without them the SPI path raises the query's own
  // error.
  const Oid user = GetUserId();
  if (pg_namespace_aclcheck(RelationGetNamespace(rel), user, ACL_USAGE) != ACLCHECK_OK) return false;
  if (pg_class_aclcheck(relid, user, ACL_SELECT) != ACLCHECK_OK) {
    if (!out->keyless && pg_attribute_aclcheck(relid, key, user, ACL_SELECT) != ACLCHECK_OK) return false;
    for (int d = 0; d < dims; ++d)
      if (pg_attribute_aclcheck(relid, cols[d], user, ACL_SELECT) != ACLCHECK_OK) return false;
  }
  out->direct = true;
  return true;
}

// Reads the relation's points from its heap pages (heap_read.h).
void direct_read_points(RelPoints* out, MemoryContext ctx, DirectBadRow* bad) {
  Relation rel = relation_open(out->relid, NoLock);  // locked by open_locked
  TupleDesc td = RelationGetDescr(rel);
  const int dims = out->dims;
  const bool keyless = out->keyless;
  // Tuples without NULLs holding every attribute read are read at fixed offsets when no
  // variable-width attribute precedes the last one read (on worker threads for large tables);
  // others are deformed by a slot on the backend thread.
  FixedLayout L;
  L.keyless = keyless;
  L.dims = dims;
  L.maxatt = keyless ? 0 : out->key_att;
  for (int d = 0; d < dims; ++d) L.maxatt = Max(L.maxatt, out->col_att[d]);
  L.key_off = keyless ? 0 : fixed_offset(td, out->key_att);
  L.key_kind = out->key_kind;
  L.fixed = L.key_off >= 0;
  L.all_f8 = true;
  for (int d = 0; d < dims; ++d) {
    L.col_off[d] = fixed_offset(td, out->col_att[d]);
    L.col_kind[d] = out->col_kind[d];
    L.fixed = L.fixed && L.col_off[d] >= 0;
    L.all_f8 = L.all_f8 && out->col_kind[d] == VK_F8;
  }
  const AttrNumber maxatt = L.maxatt;
  TupleTableSlot* slot = MakeSingleTupleTableSlot(td, &TTSOpsHeapTuple);
  HeapTupleData tup;
  tup.t_tableOid = out->relid;
  // A sequential scan as the executor's (bulk-read buffer strategy for large tables, page-mode
  // visibility, serializable predicate lock), but always from block 0. Pages are read here
  // rather than through heapgetpage: on a page marked all-visible (under a snapshot not taken
  // during recovery) with no serializable conflict check needed, every normal line pointer is a
  // visible tuple; other pages are checked tuple by tuple as heapgetpage checks them.
  TableScanDesc scan = table_beginscan_strat(rel, GetActiveSnapshot(), 0, nullptr, true, false);
  HeapScanDesc hs = (HeapScanDesc)scan;
  Snapshot snapshot = scan->rs_snapshot;
  const BlockNumber nblocks = hs->rs_nblocks;
  // At most an eighth of shared buffers pinned at once (as the bulk-read ring is capped), so a
  // tiny shared_buffers leaves other backends buffers to pin.
  const int chunk = Max(1, Min(hs->rs_strategy ? kChunkPagesRing : kChunkPages, NBuffers / 8));
  const uint8 key_kind = out->key_kind;
  uint8 col_kind[kMaxDims];
  int col_idx[kMaxDims];  // 0-based attribute index of each coordinate
  for (int d = 0; d < dims; ++d) {
    col_kind[d] = out->col_kind[d];
    col_idx[d] = out->col_att[d] - 1;
  }
  const int key_idx = out->key_att - 1;
  // The arrays and row count in locals (stores through them cannot change them), written back
  // around every growth and at the end.
  int64 n = out->n, cap = out->cap;
  int64* ids = out->ids;
  double* coord[kMaxDims];
  for (int d = 0; d < dims; ++d) coord[d] = out->coord[d];
  // Room for `need` rows in the arrays, of which `points` (`need` when negative) are points for
  // sure and must fit the point limit.
  auto ensure = [&](int64 need, int64 points = -1) {
    if (need <= cap) return;
    out->n = n;
    grow_points(out, ctx, need, points);
    cap = out->cap;
    ids = out->ids;
    for (int d = 0; d < dims; ++d) coord[d] = out->coord[d];
  };
  // Appends the tuple at `th` (line pointer `lpp` of block `b`, offset `lineoff`) as the SPI
  // receiver would: 0 when it became a point, 1 when a NULL skipped it, 2 when a NaN or
  // infinite coordinate stopped the read (recorded in `bad`).
  auto take = [&](HeapTupleHeader th, ItemId lpp, BlockNumber b, OffsetNumber lineoff) -> int {
    int64 k = 0;
    double v[kMaxDims];
    if (L.fixed && !(th->t_infomask & HEAP_HASNULL) && HeapTupleHeaderGetNatts(th) >= maxatt) {
      const char* tp = (const char*)th + th->t_hoff;
      if (!keyless) k = raw_int(tp + L.key_off, key_kind);
      for (int d = 0; d < dims; ++d) v[d] = raw_double(tp + L.col_off[d], col_kind[d]);
    } else {
      tup.t_len = ItemIdGetLength(lpp);
      tup.t_data = th;
      ItemPointerSet(&tup.t_self, b, lineoff);
      ExecStoreHeapTuple(&tup, slot, false);
      slot_getsomeattrs(slot, maxatt);
      if (!keyless) {
        if (slot->tts_isnull[key_idx]) return 1;
        k = datum_int(slot->tts_values[key_idx], key_kind);
      }
      for (int d = 0; d < dims; ++d) {
        if (slot->tts_isnull[col_idx[d]]) return 1;
        v[d] = datum_double(slot->tts_values[col_idx[d]], col_kind[d]);
      }
    }
    bool finite = true;
    for (int d = 0; d < dims; ++d) finite = finite && std::isfinite(v[d]);
    if (!finite) {
      int d = 0;
      while (std::isfinite(v[d])) ++d;
      bad->bad = true;
      bad->nan = std::isnan(v[d]);
      bad->key = k;
      bad->col = d;
      return 2;
    }
    ensure(n + 1);
    if (!keyless) ids[n] = k;
    for (int d = 0; d < dims; ++d) coord[d][n] = v[d];
    ++n;
    return 0;
  };
  const bool count_stats = pgstat_should_count_relation(rel);
  // Workers beside the backend thread when the fast path applies to a table large enough.
  int workers = 0;
  if (L.fixed && nblocks >= kParallelMinPages) workers = Min(PgControl().threads, 64) - 1;
  ChunkPage* pages = (ChunkPage*)palloc(sizeof(ChunkPage) * chunk);
  for (int p = 0; p < chunk; ++p) new (&pages[p]) ChunkPage();
  OffsetNumber* offs = (OffsetNumber*)palloc(sizeof(OffsetNumber) * chunk * MaxHeapTuplesPerPage);
  // Without threads (none could be started) the backend thread parses alone.
  PageParsers* volatile parsers = PageParsers::start(workers);
  PG_TRY();
  {
    for (BlockNumber b0 = 0; b0 < nblocks && !bad->bad; b0 += chunk) {
      // Pin the chunk's pages and find their visible tuples (PostgreSQL calls: this thread).
      const int np = int(Min(BlockNumber(chunk), nblocks - b0));
      int nvis_total = 0;
      // First pin them all, asking the CPU for each page's header and line pointers, so the
      // visibility pass below finds them in cache rather than waiting on memory page by page.
      for (int p = 0; p < np; ++p) {
        CHECK_FOR_INTERRUPTS();
        ChunkPage& cp = pages[p];
        cp.buf = ReadBufferExtended(rel, MAIN_FORKNUM, b0 + p, RBM_NORMAL, hs->rs_strategy);
        heap_page_prune_opt(rel, cp.buf);
        const char* head = (const char*)BufferGetPage(cp.buf);
        for (int line = 0; line < kPrefetchHeadBytes; line += 64) __builtin_prefetch(head + line);
      }
      for (int p = 0; p < np; ++p) {
        const BlockNumber b = b0 + p;
        ChunkPage& cp = pages[p];
        LockBuffer(cp.buf, BUFFER_LOCK_SHARE);
        Page page = BufferGetPage(cp.buf);
        TestForOldSnapshot(snapshot, rel, page);
        const OffsetNumber lines = PageGetMaxOffsetNumber(page);
        const bool all_visible = PageIsAllVisible(page) && !snapshot->takenDuringRecovery;
        const bool ssi = CheckForSerializableConflictOutNeeded(rel, snapshot);
        OffsetNumber* vis = offs + nvis_total;
        int nvis = 0;
        if (all_visible && !ssi) {
          // Every normal line pointer is a tuple the snapshot sees.
          for (OffsetNumber lineoff = FirstOffsetNumber; lineoff <= lines; ++lineoff)
            if (ItemIdIsNormal(PageGetItemId(page, lineoff))) vis[nvis++] = lineoff;
        } else {
          HeapTupleData loctup;
          loctup.t_tableOid = out->relid;
          for (OffsetNumber lineoff = FirstOffsetNumber; lineoff <= lines; ++lineoff) {
            ItemId lpp = PageGetItemId(page, lineoff);
            if (!ItemIdIsNormal(lpp)) continue;
            loctup.t_data = (HeapTupleHeader)PageGetItem(page, lpp);
            loctup.t_len = ItemIdGetLength(lpp);
            ItemPointerSet(&loctup.t_self, b, lineoff);
            const bool valid = all_visible || HeapTupleSatisfiesVisibility(&loctup, snapshot, cp.buf);
            HeapCheckForSerializableConflictOut(valid, rel, &loctup, cp.buf, snapshot);
            if (valid) vis[nvis++] = lineoff;
          }
        }
        // The offsets are read after the lock is released: the pin keeps the tuples in place
        // (pruning needs a cleanup lock), as heapgetpage's callers read them.
        LockBuffer(cp.buf, BUFFER_LOCK_UNLOCK);
        cp.page = page;
        cp.block = b;
        cp.first_vis = nvis_total;
        cp.nvis = nvis;
        cp.base = n + nvis_total;
        cp.slow.store(false, std::memory_order_relaxed);
        nvis_total += nvis;
      }
      // Parse at fixed offsets (workers and this thread), rows placed as if every tuple
      // became a point: scratch room for the chunk's visible tuples, of which those with a
      // NULL or NaN coordinate drop out below, so only the rows kept are held to the limit.
      ensure(n + nvis_total, n);
      if (parsers) {
        // A C++ exception (the task's allocation) must not leave the PG_TRY block: it becomes
        // an ereport outside the handler.
        bool failed = false;
        try {
          parsers->parse(&L, pages, np, offs, ids, coord);
        } catch (...) {
          failed = true;
        }
        if (failed) ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
      } else
        for (int p = 0; p < np; ++p) parse_page_fixed(L, pages[p], offs, ids, coord);
      // In page order: close the gaps left by skipped rows and read slow pages tuple by tuple.
      for (int p = 0; p < np && !bad->bad; ++p) {
        ChunkPage& cp = pages[p];
        int seen = cp.nvis;  // tuples returned (up to a bad row)
        if (!cp.slow.load(std::memory_order_relaxed)) {
          if (n != cp.base) {
            if (!keyless) memmove(ids + n, ids + cp.base, sizeof(int64) * cp.nvis);
            for (int d = 0; d < dims; ++d) memmove(coord[d] + n, coord[d] + cp.base, sizeof(double) * cp.nvis);
          }
          n += cp.nvis;
        } else {
          for (int t = 0; t < cp.nvis; ++t) {
            const OffsetNumber lineoff = offs[cp.first_vis + t];
            ItemId lpp = PageGetItemId(cp.page, lineoff);
            if (take((HeapTupleHeader)PageGetItem(cp.page, lpp), lpp, cp.block, lineoff) == 2) {
              seen = t + 1;
              break;
            }
          }
        }
        if (count_stats) rel->pgstat_info->t_counts.t_tuples_returned += seen;
      }
      for (int p = 0; p < np; ++p) ReleaseBuffer(pages[p].buf);
      // The rows kept from the chunk, now points, held to the limit (54000 beyond it).
      if (uint64_t(n) > kMaxPoints) {
        struct Want {
          uint64_t n;
          const char* name;
        } want = {uint64_t(n), out->relname};
        call_at_boundary([](void* w) {
          check_point_count(static_cast<Want*>(w)->n, static_cast<Want*>(w)->name);
        }, &want);
      }
    }
  }
  PG_CATCH();
  {
    // Workers are idle here (PostgreSQL errors come only from this thread's calls between
    // parses); the resource owner releases the pins.
    delete parsers;
    PG_RE_THROW();
  }
  PG_END_TRY();
  delete parsers;
  pfree(offs);
  pfree(pages);
  out->n = n;
  ExecClearTuple(slot);
  ExecDropSingleTupleTableSlot(slot);
  table_endscan(scan);
  relation_close(rel, NoLock);
}

// Whether gpu_pairwise's relation can be read by the direct vector reader (heap_read.h).
bool direct_vectors_eligible(Relation rel, AttrNumber key, AttrNumber vec, DirectVectors* out) {
  if (!direct_relation_ok(rel)) return false;
  const Oid relid = RelationGetRelid(rel);
  TupleDesc td = RelationGetDescr(rel);
  const Oid keytype = TupleDescAttr(td, key - 1)->atttypid;
  const ValKind k = val_kind(keytype);
  if ((k != VK_I2 && k != VK_I4 && k != VK_I8) || !may_cast(keytype, INT8OID)) return false;
  const Oid vt = getBaseType(TupleDescAttr(td, vec - 1)->atttypid);
  if (vt != FLOAT4ARRAYOID && vt != FLOAT8ARRAYOID) return false;
  // The SELECT names the relation schema-qualified and reads both columns.
  const Oid user = GetUserId();
  if (pg_namespace_aclcheck(RelationGetNamespace(rel), user, ACL_USAGE) != ACLCHECK_OK) return false;
  if (pg_class_aclcheck(relid, user, ACL_SELECT) != ACLCHECK_OK &&
      (pg_attribute_aclcheck(relid, key, user, ACL_SELECT) != ACLCHECK_OK ||
       pg_attribute_aclcheck(relid, vec, user, ACL_SELECT) != ACLCHECK_OK))
    return false;
  out->relid = relid;
  out->key_att = key;
  out->key_kind = k;
  out->vec_att = vec;
  out->f8 = vt == FLOAT8ARRAYOID;
  return true;
}

namespace {

// Bytes of a one-dimensional array without a NULL bitmap before its elements, counted from the
// end of the varlena header: ndim, dataoffset, elemtype, dims[0], lbound[0].
constexpr int32 kArrayHead = 20;
// Toast chunks of a value assembled from the TOAST relation's pages at most (a 64-bit mask of
// the chunks seen per value); larger values go through detoast_attr.
constexpr int32 kMaxDirectChunks = 64;

// Chunks of an uncompressed external value of `extsize` bytes.
inline int32 toast_chunks(int32 extsize) { return (extsize - 1) / int32(TOAST_MAX_CHUNK_SIZE) + 1; }

// An external uncompressed vector awaiting its chunks: the toast pointer, the row it fills and
// the bytes its elements take.
struct ToastRef {
  varatt_external ptr;
  int64 row;
};

// What the workers of the TOAST read share: the values awaited (a hash of their value ids), the
// rows they fill, and per value the mask of chunks seen and whether a chunk did not fit.
struct ToastAssembly {
  const ToastRef* refs;
  int64 nrefs;
  const uint32* slots;     // entry index + 1 per hash slot, 0 empty
  uint64 mask;             // slots - 1
  std::atomic<uint64>* seen;
  std::atomic<uint8>* odd;
  char* dest;              // float4: the rows; float8: a staging area of nrefs * d doubles
  bool f8;
  int d;
  Oid elemtype;

  // The entry awaiting value `vid`, or -1.
  int64 find(Oid vid) const {
    uint64 h = (uint64(vid) * 0x9E3779B97F4A7C15ull) >> 20 & mask;
    for (;;) {
      const uint32 s = slots[h];
      if (s == 0) return -1;
      if (refs[s - 1].ptr.va_valueid == vid) return int64(s) - 1;
      h = (h + 1) & mask;
    }
  }
  // Where entry `e`'s elements go.
  char* dest_of(int64 e) const {
    return f8 ? dest + Size(e) * Size(d) * 8 : dest + Size(refs[e].row) * Size(d) * 4;
  }
};

// Copies the chunks on TOAST page `cp` (tuples at offs[first_vis..]) into the values awaiting
// them: pure memory reads of a pinned page, safe on a worker thread. A chunk of an awaited value
// with an unexpected number, size or storage, or a first chunk whose array head is not that of a
// one-dimensional array without NULLs of d elements, marks the value odd (read again through
// detoast_attr).
void assemble_toast_page(const ToastAssembly& A, const ChunkPage& cp, const OffsetNumber* offs) {
  for (int t = 0; t < cp.nvis; ++t) {
    HeapTupleHeader th = (HeapTupleHeader)PageGetItem(cp.page, PageGetItemId(cp.page, offs[cp.first_vis + t]));
    if ((th->t_infomask & HEAP_HASNULL) || HeapTupleHeaderGetNatts(th) < 3) continue;
    const char* tp = (const char*)th + th->t_hoff;
    Oid vid;
    memcpy(&vid, tp, sizeof vid);
    const int64 e = A.find(vid);
    if (e < 0) continue;
    int32 seq;
    memcpy(&seq, tp + 4, sizeof seq);
    // chunk_data follows two int4 columns: at offset 8, aligned for any varlena header.
    const struct varlena* cv = (const struct varlena*)(tp + 8);
    const char* data;
    int32 size;
    if (VARATT_IS_4B_U(cv)) {
      data = VARDATA(cv);
      size = int32(VARSIZE(cv)) - VARHDRSZ;
    } else if (VARATT_IS_1B(cv) && !VARATT_IS_1B_E(cv)) {
      data = VARDATA_SHORT(cv);
      size = int32(VARSIZE_SHORT(cv)) - VARHDRSZ_SHORT;
    } else {
      A.odd[e].store(1, std::memory_order_relaxed);
      continue;
    }
    const int32 extsize = VARATT_EXTERNAL_GET_EXTSIZE(A.refs[e].ptr);
    const int32 nch = toast_chunks(extsize);
    const int32 want = seq >= 0 && seq < nch - 1 ? int32(TOAST_MAX_CHUNK_SIZE)
                                                 : extsize - (nch - 1) * int32(TOAST_MAX_CHUNK_SIZE);
    if (seq < 0 || seq >= nch || size != want) {
      A.odd[e].store(1, std::memory_order_relaxed);
      continue;
    }
    const uint64 bit = uint64(1) << seq;
    if (A.seen[e].fetch_or(bit, std::memory_order_relaxed) & bit) {
      A.odd[e].store(1, std::memory_order_relaxed);
      continue;
    }
    char* dst = A.dest_of(e);
    if (seq == 0) {
      int32 head[5];
      memcpy(head, data, sizeof head);
      if (head[0] != 1 || head[1] != 0 || Oid(head[2]) != A.elemtype || head[3] != A.d) {
        A.odd[e].store(1, std::memory_order_relaxed);
        continue;
      }
      memcpy(dst, data + kArrayHead, Size(size - kArrayHead));
    } else {
      memcpy(dst + Size(seq) * TOAST_MAX_CHUNK_SIZE - kArrayHead, data, Size(size));
    }
  }
}

// The shape of array `arr` as gpu_pairwise's receiver checks it, before its elements: 0, or the
// problem code (5 multi-dimensional, 4 empty, 2 NULL element, 1 too long or not `d` long when
// d >= 0). *len is its length.
int vector_shape(ArrayType* arr, int d, int* len) {
  const int ndim = ARR_NDIM(arr);
  *len = 0;
  if (ndim > 1) return 5;
  *len = ndim == 0 ? 0 : ARR_DIMS(arr)[0];
  if (*len == 0) return 4;
  if (ARR_HASNULL(arr) && array_contains_nulls(arr)) return 2;
  if (d < 0 ? *len > kMaxVectorDims : *len != d) return 1;
  return 0;
}

// Converts `len` elements at `src` (float4, or float8 with `f8`) to float32 at `dst` with the
// receiver's checks: 0, 3 at the first NaN or infinite element, 6 at the first float8 beyond
// float4 range.
int vector_values(const char* src, bool f8, int len, float* dst) {
  if (!f8) {
    const float* s = (const float*)src;
    bool finite = true;
    for (int k = 0; k < len; ++k) {
      finite = finite && std::isfinite(s[k]);
      dst[k] = s[k];
    }
    return finite ? 0 : 3;
  }
  const double* s = (const double*)src;
  for (int k = 0; k < len; ++k) {
    if (!std::isfinite(s[k])) return 3;
    if (std::fabs(s[k]) > double(FLT_MAX)) return 6;
    dst[k] = float(s[k]);
  }
  return 0;
}

// Checks `len` float32 elements at `v` (already converted from float4) for NaN or infinity.
bool floats_finite(const float* v, int len) {
  bool finite = true;
  for (int k = 0; k < len; ++k) finite = finite && std::isfinite(v[k]);
  return finite;
}

}  // namespace

// Reads the relation's vectors from its heap pages and its TOAST relation's (heap_read.h).
//
// Matching toast chunks by value id gives the values the snapshot sees: a value is reached only
// through a main tuple the snapshot sees, whose toast pointer names the value id; chunks are
// never updated, only inserted with their value and deleted with it, and they cannot be removed
// while a snapshot that sees the main tuple exists; a new value gets a value id that no indexed
// chunk carries (GetNewOidWithIndex; index entries already marked dead are skipped, so after an
// OID wraparound dead, unpruned chunks may share a live value's id). The guarantee is therefore
// the chunk check: a value whose chunks do not arrive exactly once each, with the sizes its
// toast pointer implies (a duplicate sequence number, one out of range, a wrong size), is read
// again through detoast_attr after the workers end, which overwrites whatever was copied and
// raises PostgreSQL's own error for a damaged value; otherwise every chunk with the value's id
// is the value's, whatever its own visibility, as PostgreSQL's toast fetch also reads chunks
// with a non-MVCC toast snapshot.
void direct_read_vectors(const DirectVectors& dv, const char* relname, MemoryContext ctx, DirectVectorRows* out) {
  Relation rel = relation_open(dv.relid, NoLock);  // locked by open_locked
  TupleDesc td = RelationGetDescr(rel);
  const Oid toastrelid = rel->rd_rel->reltoastrelid;
  const bool f8 = dv.f8;
  const int width = f8 ? 8 : 4;
  const int key_idx = dv.key_att - 1, vec_idx = dv.vec_att - 1;
  const AttrNumber maxatt = Max(dv.key_att, dv.vec_att);
  TupleTableSlot* slot = MakeSingleTupleTableSlot(td, &TTSOpsHeapTuple);
  HeapTupleData tup;
  tup.t_tableOid = dv.relid;
  MemoryContext tmp = AllocSetContextCreate(CurrentMemoryContext, "gpu2bs detoast", ALLOCSET_DEFAULT_SIZES);
  const auto t_main = std::chrono::steady_clock::now();
  auto t_toast = t_main, t_check = t_main;
  BlockNumber toast_blocks = 0;
  // The main relation as the executor's sequential scan reads it (see direct_read_points), on
  // this thread: per row its key and its vector, copied into the row's slot now when stored
  // inline, assembled below when stored out of line (a toast entry per such row).
  TableScanDesc scan = table_beginscan_strat(rel, GetActiveSnapshot(), 0, nullptr, true, false);
  HeapScanDesc hs = (HeapScanDesc)scan;
  Snapshot snapshot = scan->rs_snapshot;
  const BlockNumber nblocks = hs->rs_nblocks;
  // Rows reserved up front from the catalog's estimate, at most 2^20 before the arrays grow.
  const int64 expect = rel->rd_rel->reltuples > 0 ? int64(rel->rd_rel->reltuples) : 0;
  const int64 first_cap = Max(int64(1024), Min(expect + expect / 16 + 1024, int64(1) << 20));
  int64 n = 0, cap = 0;
  int64* ids = nullptr;
  float* rows = nullptr;
  int64 nrefs = 0, refs_cap = 0;
  ToastRef* refs = nullptr;
  int d = -1;
  int64 d_ref = -1;  // the toast entry whose length fixed d (unverified until its chunks arrive)
  // Room for one more row (d known).
  auto grow_rows = [&]() {
    if (n < cap) return;
    const int64 ncap = cap ? cap * 2 : first_cap;
    if (ncap > int64(UINT32_MAX) + 1)
      ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED), errmsg("too many rows in %s for gpu_pairwise", relname)));
    ids = (int64*)realloc_big(ctx, ids, Size(n) * sizeof(int64), Size(ncap) * sizeof(int64));
    rows = (float*)realloc_big(ctx, rows, Size(n) * Size(d) * sizeof(float), Size(ncap) * Size(d) * sizeof(float));
    cap = ncap;
  };
  // Records the first bad row and stops the read.
  auto stop = [&](int code, int64 key, int len) {
    out->bad = code;
    out->bad_key = key;
    out->bad_len = len;
  };
  // Takes array `arr` of the row with key `key` into the next row.
  auto take_array = [&](ArrayType* arr, int64 key) {
    int len;
    const int code = vector_shape(arr, d, &len);
    if (code) return stop(code, key, len);
    if (d < 0) d = len;
    grow_rows();
    const int vcode = vector_values(ARR_DATA_PTR(arr), f8, len, rows + Size(n) * Size(d));
    if (vcode) return stop(vcode, key, len);
    ids[n++] = key;
  };
  const bool count_stats = pgstat_should_count_relation(rel);
  OffsetNumber vis[MaxHeapTuplesPerPage];
  for (BlockNumber b = 0; b < nblocks && !out->bad; ++b) {
    CHECK_FOR_INTERRUPTS();
    Buffer buf = ReadBufferExtended(rel, MAIN_FORKNUM, b, RBM_NORMAL, hs->rs_strategy);
    heap_page_prune_opt(rel, buf);
    LockBuffer(buf, BUFFER_LOCK_SHARE);
    Page page = BufferGetPage(buf);
    TestForOldSnapshot(snapshot, rel, page);
    const OffsetNumber lines = PageGetMaxOffsetNumber(page);
    const bool all_visible = PageIsAllVisible(page) && !snapshot->takenDuringRecovery;
    const bool ssi = CheckForSerializableConflictOutNeeded(rel, snapshot);
    int nvis = 0;
    for (OffsetNumber lineoff = FirstOffsetNumber; lineoff <= lines; ++lineoff) {
      ItemId lpp = PageGetItemId(page, lineoff);
      if (!ItemIdIsNormal(lpp)) continue;
      if (all_visible && !ssi) {
        vis[nvis++] = lineoff;
        continue;
      }
      HeapTupleData loctup;
      loctup.t_tableOid = dv.relid;
      loctup.t_data = (HeapTupleHeader)PageGetItem(page, lpp);
      loctup.t_len = ItemIdGetLength(lpp);
      ItemPointerSet(&loctup.t_self, b, lineoff);
      const bool valid = all_visible || HeapTupleSatisfiesVisibility(&loctup, snapshot, buf);
      HeapCheckForSerializableConflictOut(valid, rel, &loctup, buf, snapshot);
      if (valid) vis[nvis++] = lineoff;
    }
    // The pin keeps the tuples in place once the lock is released (see direct_read_points).
    LockBuffer(buf, BUFFER_LOCK_UNLOCK);
    int seen = nvis;
    for (int t = 0; t < nvis && !out->bad; ++t) {
      ItemId lpp = PageGetItemId(page, vis[t]);
      tup.t_len = ItemIdGetLength(lpp);
      tup.t_data = (HeapTupleHeader)PageGetItem(page, lpp);
      ItemPointerSet(&tup.t_self, b, vis[t]);
      ExecStoreHeapTuple(&tup, slot, false);
      slot_getsomeattrs(slot, maxatt);
      if (slot->tts_isnull[key_idx] || slot->tts_isnull[vec_idx]) continue;
      const int64 key = datum_int(slot->tts_values[key_idx], dv.key_kind);
      struct varlena* v = (struct varlena*)DatumGetPointer(slot->tts_values[vec_idx]);
      if (VARATT_IS_EXTERNAL_ONDISK(v)) {
        varatt_external ptr;
        VARATT_EXTERNAL_GET_POINTER(ptr, v);
        const int32 ext = int32(VARATT_EXTERNAL_GET_EXTSIZE(ptr));
        const bool compressed = ext < ptr.va_rawsize - int32(VARHDRSZ);
        // Uncompressed in this relation's TOAST relation, sized as a one-dimensional array
        // without NULLs of the length d asks for (the head is checked when it arrives).
        if (!compressed && ptr.va_toastrelid == toastrelid && ext > kArrayHead &&
            (ext - kArrayHead) % width == 0 && toast_chunks(ext) <= kMaxDirectChunks) {
          const int64 len = (ext - kArrayHead) / width;
          if (d < 0 ? len <= kMaxVectorDims : len == d) {
            if (d < 0) {
              d = int(len);
              d_ref = nrefs;
            }
            if (nrefs == refs_cap) {
              const int64 ncap = refs_cap ? refs_cap * 2 : 1024;
              refs = (ToastRef*)realloc_big(tmp, refs, Size(nrefs) * sizeof(ToastRef), Size(ncap) * sizeof(ToastRef));
              refs_cap = ncap;
            }
            grow_rows();
            refs[nrefs].ptr = ptr;
            refs[nrefs++].row = n;
            ids[n++] = key;
            continue;
          }
        }
      }
      // Everything else: a plain inline array in place, the rest through detoast_attr.
      if (VARATT_IS_4B_U(v)) {
        take_array((ArrayType*)v, key);
      } else {
        MemoryContext old = MemoryContextSwitchTo(tmp);
        ArrayType* arr = (ArrayType*)detoast_attr(v);
        MemoryContextSwitchTo(old);
        if (VARATT_IS_EXTENDED(v) && !VARATT_IS_SHORT(v)) ++out->detoasted;
        take_array(arr, key);
        pfree(arr);
      }
      if (out->bad) seen = t + 1;
    }
    if (count_stats) rel->pgstat_info->t_counts.t_tuples_returned += seen;
    ReleaseBuffer(buf);
  }
  ExecClearTuple(slot);
  ExecDropSingleTupleTableSlot(slot);
  table_endscan(scan);
  const Size dd = Size(Max(d, 1));
  // Per toast entry: 0 assembled from the TOAST pages (values unchecked), 1 read through
  // detoast_attr (checked, the first bad one in bad_e).
  int64 bad_e = -1;
  int bad_code = 0, bad_len = 0;
  uint8* state = nrefs ? (uint8*)palloc0(Size(nrefs)) : nullptr;
  bool toast_read = false;
  t_toast = t_check = std::chrono::steady_clock::now();
  if (nrefs > 0) {
    Relation trel = table_open(toastrelid, AccessShareLock);
    const BlockNumber tblocks = RelationGetNumberOfBlocks(trel);
    toast_blocks = tblocks;
    // The TOAST pages are read in full when the awaited chunks fill at least a quarter of them
    // (four chunks fit a page); fewer values are fetched one by one through the toast index.
    int64 want_chunks = 0;
    for (int64 e = 0; e < nrefs; ++e) want_chunks += toast_chunks(VARATT_EXTERNAL_GET_EXTSIZE(refs[e].ptr));
    toast_read = want_chunks >= int64(tblocks);
    std::atomic<uint64>* seen = (std::atomic<uint64>*)palloc(sizeof(std::atomic<uint64>) * Size(nrefs));
    std::atomic<uint8>* odd = (std::atomic<uint8>*)palloc(sizeof(std::atomic<uint8>) * Size(nrefs));
    for (int64 e = 0; e < nrefs; ++e) {
      new (&seen[e]) std::atomic<uint64>(0);
      new (&odd[e]) std::atomic<uint8>(toast_read ? 0 : 1);
    }
    char* stage = f8 ? (char*)alloc_big(tmp, Size(nrefs) * dd * 8) : nullptr;
    ToastAssembly A;
    A.refs = refs;
    A.nrefs = nrefs;
    A.seen = seen;
    A.odd = odd;
    A.dest = f8 ? stage : (char*)rows;
    A.f8 = f8;
    A.d = d;
    A.elemtype = f8 ? FLOAT8OID : FLOAT4OID;
    uint64 nslots = 1;
    while (nslots < uint64(nrefs) * 2) nslots <<= 1;
    uint32* slots = (uint32*)alloc_big(tmp, Size(nslots) * sizeof(uint32));
    memset(slots, 0, Size(nslots) * sizeof(uint32));
    A.slots = slots;
    A.mask = nslots - 1;
    if (toast_read) {
      // One entry per value id; a value id met again (one value in two rows) reads its second
      // row through detoast_attr.
      for (int64 e = 0; e < nrefs; ++e) {
        const Oid vid = refs[e].ptr.va_valueid;
        uint64 h = (uint64(vid) * 0x9E3779B97F4A7C15ull) >> 20 & A.mask;
        while (slots[h] != 0 && refs[slots[h] - 1].ptr.va_valueid != vid) h = (h + 1) & A.mask;
        if (slots[h] != 0)
          odd[e].store(1, std::memory_order_relaxed);
        else
          slots[h] = uint32(e + 1);
      }
      BufferAccessStrategy strat = tblocks > BlockNumber(NBuffers / 4) ? GetAccessStrategy(BAS_BULKREAD) : nullptr;
      const int chunk = Max(1, Min(strat ? kChunkPagesRing : kChunkPages, NBuffers / 8));
      ChunkPage* pages = (ChunkPage*)palloc(sizeof(ChunkPage) * chunk);
      for (int p = 0; p < chunk; ++p) new (&pages[p]) ChunkPage();
      OffsetNumber* offs = (OffsetNumber*)palloc(sizeof(OffsetNumber) * chunk * MaxHeapTuplesPerPage);
      const int workers = tblocks >= kParallelMinPages ? Min(PgControl().threads, 64) - 1 : 0;
      PageParsers* volatile parsers = PageParsers::start(workers);
      PG_TRY();
      {
        for (BlockNumber b0 = 0; b0 < tblocks; b0 += chunk) {
          const int np = int(Min(BlockNumber(chunk), tblocks - b0));
          int noffs = 0;
          for (int p = 0; p < np; ++p) {
            CHECK_FOR_INTERRUPTS();
            ChunkPage& cp = pages[p];
            cp.buf = ReadBufferExtended(trel, MAIN_FORKNUM, b0 + p, RBM_NORMAL, strat);
            const char* head = (const char*)BufferGetPage(cp.buf);
            for (int line = 0; line < 128; line += 64) __builtin_prefetch(head + line);  // 4 line pointers
          }
          // Every normal line pointer, visible or not: the value ids decide (see above).
          for (int p = 0; p < np; ++p) {
            ChunkPage& cp = pages[p];
            LockBuffer(cp.buf, BUFFER_LOCK_SHARE);
            Page page = BufferGetPage(cp.buf);
            const OffsetNumber lines = PageGetMaxOffsetNumber(page);
            cp.page = page;
            cp.block = b0 + p;
            cp.first_vis = noffs;
            for (OffsetNumber lineoff = FirstOffsetNumber; lineoff <= lines; ++lineoff)
              if (ItemIdIsNormal(PageGetItemId(page, lineoff))) offs[noffs++] = lineoff;
            cp.nvis = noffs - cp.first_vis;
            LockBuffer(cp.buf, BUFFER_LOCK_UNLOCK);
          }
          if (parsers) {
            // A C++ exception (the task's allocation) must not leave the PG_TRY block: it
            // becomes an ereport outside the handler.
            bool failed = false;
            try {
              parsers->run(np, [&](int p) { assemble_toast_page(A, pages[p], offs); });
            } catch (...) {
              failed = true;
            }
            if (failed) ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
          } else {
            for (int p = 0; p < np; ++p) assemble_toast_page(A, pages[p], offs);
          }
          for (int p = 0; p < np; ++p) ReleaseBuffer(pages[p].buf);
        }
      }
      PG_CATCH();
      {
        delete parsers;
        PG_RE_THROW();
      }
      PG_END_TRY();
      delete parsers;
      if (strat) FreeAccessStrategy(strat);
      pfree(offs);
      pfree(pages);
    }
    table_close(trel, NoLock);
    // Values not assembled in full: through detoast_attr on this thread, in row order.
    for (int64 e = 0; e < nrefs; ++e) {
      const int32 ext = VARATT_EXTERNAL_GET_EXTSIZE(refs[e].ptr);
      const uint64 full = toast_chunks(ext) == 64 ? ~uint64(0) : (uint64(1) << toast_chunks(ext)) - 1;
      if (!odd[e].load(std::memory_order_relaxed) && seen[e].load(std::memory_order_relaxed) == full) {
        ++out->toast_pages;
        continue;
      }
      CHECK_FOR_INTERRUPTS();
      char ext_datum[VARHDRSZ_EXTERNAL + sizeof(varatt_external)];
      SET_VARTAG_EXTERNAL(ext_datum, VARTAG_ONDISK);
      memcpy(VARDATA_EXTERNAL(ext_datum), &refs[e].ptr, sizeof(varatt_external));
      MemoryContext old = MemoryContextSwitchTo(tmp);
      ArrayType* arr = (ArrayType*)detoast_attr((struct varlena*)ext_datum);
      MemoryContextSwitchTo(old);
      ++out->detoasted;
      int len;
      int code = vector_shape(arr, d, &len);
      // The entry that fixed d from its size alone turned out longer or shorter: d was wrong
      // for the rows after it, which the SPI path reads exactly.
      if (e == d_ref && code == 1 && len != d && len <= kMaxVectorDims) {
        out->retry = true;
        pfree(arr);
        break;
      }
      if (!code) code = vector_values(ARR_DATA_PTR(arr), f8, len, rows + Size(refs[e].row) * dd);
      state[e] = 1;
      if (code && bad_e < 0) {
        bad_e = e;
        bad_code = code;
        bad_len = len;
      }
      pfree(arr);
    }
    t_check = std::chrono::steady_clock::now();
    // The assembled values' checks (and float8 conversion) on worker threads, in blocks of
    // entries; the first bad entry of each block.
    if (!out->retry) {
      constexpr int64 kBlock = 4096;
      const int64 nblk = (nrefs + kBlock - 1) / kBlock;
      int64* first_bad = (int64*)palloc(sizeof(int64) * Size(nblk));
      uint8* first_code = (uint8*)palloc(Size(nblk));
      auto check_block = [&](int blk) {
        first_bad[blk] = -1;
        const int64 e1 = Min(nrefs, (blk + 1) * kBlock);
        for (int64 e = blk * kBlock; e < e1; ++e) {
          int code;
          if (state[e] == 1) continue;
          if (f8) {
            code = vector_values(stage + Size(e) * dd * 8, true, d, rows + Size(refs[e].row) * dd);
          } else {
            code = floats_finite(rows + Size(refs[e].row) * dd, d) ? 0 : 3;
          }
          if (code) {
            first_bad[blk] = e;
            first_code[blk] = uint8(code);
            return;
          }
        }
      };
      const int workers = nrefs >= 4 * kBlock ? Min(PgControl().threads, 64) - 1 : 0;
      PageParsers* checkers = PageParsers::start(workers);
      // Slices of 256 blocks (about a million entries), with a cancel check between them: the
      // workers are stopped before PostgreSQL's error leaves this frame.
      for (int64 b0 = 0; b0 < nblk; b0 += 256) {
        if (INTERRUPTS_PENDING_CONDITION()) {
          const bool had = checkers != nullptr;
          delete checkers;
          checkers = nullptr;
          CHECK_FOR_INTERRUPTS();
          // An interrupt that raised nothing (a barrier, a held-off cancel): workers again.
          if (had) checkers = PageParsers::start(workers);
        }
        const int nb = int(Min(int64(256), nblk - b0));
        bool failed = false;
        if (checkers) {
          try {
            checkers->run(nb, [&](int i) { check_block(int(b0 + i)); });
          } catch (...) {
            failed = true;
          }
        }
        if (failed) {
          delete checkers;
          ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
        }
        if (!checkers)
          for (int i = 0; i < nb; ++i) check_block(int(b0 + i));
      }
      delete checkers;
      // The first bad row: every entry precedes a bad row found in the main relation.
      for (int64 blk = 0; blk < nblk; ++blk) {
        if (first_bad[blk] < 0) continue;
        if (bad_e < 0 || first_bad[blk] < bad_e) {
          bad_e = first_bad[blk];
          bad_code = first_code[blk];
          bad_len = d;
        }
        break;
      }
      if (bad_e >= 0) stop(bad_code, ids[refs[bad_e].row], bad_len);
      pfree(first_bad);
      pfree(first_code);
    }
    pfree(seen);
    pfree(odd);
  }
  if (state) pfree(state);
  MemoryContextDelete(tmp);
  const auto t_end = std::chrono::steady_clock::now();
  auto ms = [](std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  elog(DEBUG1, "gpu_pairwise direct read of %s: " INT64_FORMAT " rows, main relation %.1f ms (%u pages), "
       "TOAST %.1f ms (%u pages, %s), checks %.1f ms", relname, n, ms(t_main, t_toast), nblocks,
       ms(t_toast, t_check), toast_blocks, toast_read ? "read in full" : "values fetched one by one",
       ms(t_check, t_end));
  relation_close(rel, NoLock);
  if (out->retry) {
    if (ids) pfree(ids);
    if (rows) pfree(rows);
    ids = nullptr;
    rows = nullptr;
    n = 0;
  }
  out->n = n;
  out->d = d;
  out->ids = ids;
  out->rows = rows;
}

}  // namespace pg
}  // namespace gpu2bs
