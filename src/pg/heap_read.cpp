// The direct heap reader: the rows of `SELECT key::int8, x::float8, ... FROM rel` for a plain heap
// table, read from its pages under the active snapshot without the executor. Used only where it
// gives exactly what that query gives (same rows and values, same order, same errors); every
// other relation, and every case where the query would raise a permission error, goes through
// SPI.
#include "pg.h"

extern "C" {
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relation.h"
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
#include "utils/lsyscache.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
}

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

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
  // Parses pages[0..npages) on the workers and the calling thread; returns when all are done.
  void parse(const FixedLayout* L, ChunkPage* pages, int npages, const OffsetNumber* offs, int64* ids,
             double* const* coord) {
    uint64 gen;
    {
      std::lock_guard<std::mutex> lk(mu_);
      L_ = L;
      pages_ = pages;
      offs_ = offs;
      ids_ = ids;
      coord_ = coord;
      gen = ++gen_;
      done_.store(0, std::memory_order_relaxed);
      // Published last: a page is claimed only through a ticket of this chunk's generation.
      ticket_.store(make_ticket(gen, npages, 0), std::memory_order_release);
    }
    cv_.notify_all();
    const int mine = run_pages(gen);
    int done = done_.fetch_add(mine, std::memory_order_acq_rel) + mine;
    // Workers finish their last page within microseconds: spin, then sleep briefly.
    for (int spins = 0; done < npages; ++spins) {
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
      parse_page_fixed(*L_, pages_[p], offs_, ids_, coord_);
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
  const FixedLayout* L_ = nullptr;
  ChunkPage* pages_ = nullptr;
  const OffsetNumber* offs_ = nullptr;
  int64* ids_ = nullptr;
  double* const* coord_ = nullptr;
  std::atomic<uint64> ticket_{0};
  std::atomic<int> done_{0};
};

}  // namespace

// Whether the direct reader gives exactly the SQL query's rows and errors (heap_read.h).
bool direct_read_eligible(Relation rel, AttrNumber key, const AttrNumber* cols, int dims, RelPoints* out) {
  out->direct = false;
  // Hooks may refuse what the SQL query does (permission checks, name lookups, function calls).
  if (!direct_scan_setting || ExecutorCheckPerms_hook != nullptr || object_access_hook != nullptr) return false;
  const char kind = rel->rd_rel->relkind;
  if (kind != RELKIND_RELATION && !(kind == RELKIND_MATVIEW && RelationIsPopulated(rel))) return false;
  if (rel->rd_tableam != GetHeapamTableAmRoutine() || RELATION_IS_OTHER_TEMP(rel)) return false;
  const Oid relid = RelationGetRelid(rel);
  if (has_subclass(relid)) return false;
  if (!ActiveSnapshotSet() || !IsMVCCSnapshot(GetActiveSnapshot())) return false;
  if (check_enable_rls(relid, InvalidOid, true) == RLS_ENABLED) return false;
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
  PageParsers* volatile parsers = nullptr;
  if (workers > 0) {
    try {
      parsers = new PageParsers(workers);
    } catch (...) {
      parsers = nullptr;
    }
  }
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
      if (parsers)
        parsers->parse(&L, pages, np, offs, ids, coord);
      else
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

}  // namespace pg
}  // namespace gpu2bs
