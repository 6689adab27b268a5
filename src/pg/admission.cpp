// Device-memory admission across backends: the table of src/core/admission.h in shared memory
// (requested by shmem_request_hook when the library is in shared_preload_libraries, else taken
// from the server's spare shared memory at first use), a spinlock around it, a condition
// variable the waiters sleep on, and the release of a backend's reservation when its call ends,
// its transaction aborts or it exits.
#include "pg.h"

extern "C" {
#include "access/twophase.h"
#include "access/xact.h"
#include "executor/execdesc.h"
#include "funcapi.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "tcop/pquery.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"
}

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>

#include "../core/admission.h"
#include "admission.h"
#include "settings.h"

namespace adm = gpu2bs::admission;

namespace gpu2bs {
namespace pg {

int gpu_memory_total_setting = 0;
int simulate_device_setting = 0;

namespace {

// The shared state: the lock, the waiters' condition variable and the table (last: it holds
// one slot per backend).
struct Shared {
  slock_t mutex;
  ConditionVariable cv;
  bool preloaded;  // placed by the shared-memory hooks at server start
  adm::Table table;
};

Shared* g_shared = nullptr;
bool g_unavailable = false;   // the spare shared memory did not suffice: no admission
bool g_callbacks = false;     // exit and transaction callbacks registered
bool g_slot_busy = false;     // this backend's slot holds a request or grant
bool g_hold = false;          // ... made by gpu2bs_admission_hold (released at transaction end)
LiveRun* g_live_runs = nullptr;  // this backend's pipelined runs still going (a linked list)
shmem_request_hook_type g_prev_request = nullptr;
shmem_startup_hook_type g_prev_startup = nullptr;

// This backend's last reservation, for gpu2bs_info().
struct LastGrant {
  bool valid;
  double wait_ms;
  uint64_t want, min, granted;
  bool blocks;  // the grant is below the in-memory path's need
} g_last = {};

const char* const kShmemName = "gpu2bs device memory admission";

// Slots: one per PGPROC (backends, auxiliary processes, prepared transactions).
uint32_t slot_count() { return uint32_t(MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts); }

Size shared_bytes() { return add_size(offsetof(Shared, table), adm::table_bytes(slot_count())); }

// Initializes or finds the shared state; caller holds AddinShmemInitLock.
void init_locked(bool preloaded) {
  bool found = false;
  Shared* s = (Shared*)ShmemInitStruct(kShmemName, shared_bytes(), &found);
  if (!found) {
    SpinLockInit(&s->mutex);
    ConditionVariableInit(&s->cv);
    s->preloaded = preloaded;
    adm::init(&s->table, slot_count(), 0);
  }
  g_shared = s;
}

// shmem_request_hook: room for the table in the main shared memory segment.
void request_hook() {
  if (g_prev_request) g_prev_request();
  RequestAddinShmemSpace(shared_bytes());
}

// shmem_startup_hook: places the table at server start.
void startup_hook() {
  if (g_prev_startup) g_prev_startup();
  LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
  init_locked(true);
  LWLockRelease(AddinShmemInitLock);
}

// This backend's slot index.
uint32_t my_slot() { return uint32_t(MyProc->pgprocno); }

// Gives back this backend's request or grant and wakes the waiters.
void release_mine() {
  if (!g_shared || !g_slot_busy || !MyProc) return;
  SpinLockAcquire(&g_shared->mutex);
  adm::release(&g_shared->table, my_slot());
  SpinLockRelease(&g_shared->mutex);
  g_slot_busy = false;
  g_hold = false;
  ConditionVariableBroadcast(&g_shared->cv);
}

// before_shmem_exit: a backend that exits gives back what it holds.
void on_exit(int, Datum) { release_mine(); }

// Stops the live pipelined runs started in subtransaction `from` or a later one (0: all of
// them); subtransaction ids grow, so those are the aborting one's and its children's.
void stop_live_runs(SubTransactionId from) {
  LiveRun* r = g_live_runs;
  while (r) {
    LiveRun* next = r->next;
    if (r->subid >= from) {
      void (*stop)(void*) = r->stop;
      void* arg = r->arg;
      live_run_unlink(r);
      stop(arg);  // frees r
    }
    r = next;
  }
}

// Transaction end: a hold ends with its transaction; a call's reservation with an abort (its
// C++ owner normally gives it back first). An abort first stops the live pipelined runs, whose
// memory contexts outlive the abort, so no engine thread holds device memory past the release.
void xact_callback(XactEvent event, void*) {
  if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT) stop_live_runs(0);
  if (!g_slot_busy) return;
  if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT ||
      (g_hold && (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT ||
                  event == XACT_EVENT_PREPARE)))
    release_mine();
}

// Subtransaction abort (an exception block): a call's reservation ends with it.
void subxact_callback(SubXactEvent event, SubTransactionId sub, SubTransactionId, void*) {
  if (event == SUBXACT_EVENT_ABORT_SUB) stop_live_runs(sub);
  if (event == SUBXACT_EVENT_ABORT_SUB && g_slot_busy && !g_hold) release_mine();
}

// Registers this backend's exit and transaction callbacks, once.
void register_callbacks() {
  if (g_callbacks) return;
  before_shmem_exit(on_exit, 0);
  RegisterXactCallback(xact_callback, nullptr);
  RegisterSubXactCallback(subxact_callback, nullptr);
  g_callbacks = true;
}

bool place();

// Attaches to the shared state (placing it in spare shared memory when the library was not
// preloaded) and registers this backend's release callbacks; false when that memory is not
// available (admission is then off, with a warning).
bool attach() {
  if (g_unavailable || !MyProc) return false;
  if (!g_shared && !place()) return false;
  register_callbacks();  // once per backend (a preloaded table is inherited from the postmaster)
  return true;
}

// Places the table in spare shared memory, or finds it there; false (with a warning) when that
// memory is not available.
bool place() {
  MemoryContext mcx = CurrentMemoryContext;
  bool ok = true;
  PG_TRY();
  {
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    init_locked(false);
    LWLockRelease(AddinShmemInitLock);
  }
  PG_CATCH();
  {
    MemoryContextSwitchTo(mcx);
    if (LWLockHeldByMe(AddinShmemInitLock)) LWLockRelease(AddinShmemInitLock);
    FlushErrorState();
    ok = false;
  }
  PG_END_TRY();
  if (!ok) {
    g_unavailable = true;
    ereport(WARNING, (errcode(ERRCODE_OUT_OF_MEMORY),
                      errmsg("gpu2bs device memory admission is off in this session"),
                      errdetail("The server's spare shared memory cannot hold its table."),
                      errhint("Add gpu2bs to shared_preload_libraries and restart the server.")));
    return false;
  }
  return true;
}

// The device the budget is a share of: the simulated size, or the GPU's memory.
uint64_t device_bytes() {
  if (simulate_device_setting > 0) return uint64_t(simulate_device_setting) << 20;
  return uint64_t(cuda_device_memory());
}

// The budget: gpu2bs.gpu_memory_total, or 90 % of the device.
uint64_t budget_bytes() {
  if (gpu_memory_total_setting > 0) return uint64_t(gpu_memory_total_setting) << 20;
  return uint64_t(double(device_bytes()) * 0.9);
}

// Megabytes, rounded up, for messages.
long long mb_up(uint64_t b) { return (long long)((b + (1u << 20) - 1) >> 20); }

// Reserves at least `min` and at most `want` bytes of `total` on each device of the mask
// `devices`, waiting (cancellable, wait
// event Extension) while they are not free. PostgreSQL code: may ereport.
uint64_t reserve_wait(uint64_t want, uint64_t min, uint64_t total, bool hold, uint64_t devices) {
  const uint32_t s = my_slot();
  adm::Table* t = &g_shared->table;
  SpinLockAcquire(&g_shared->mutex);
  adm::set_total(t, total);
  const bool busy = t->slots[s].state != adm::kFree;
  if (!busy) adm::enqueue(t, s, MyProcPid, want, min, GetCurrentTimestamp(), devices);
  adm::Outcome o;
  if (!busy) o = adm::decide(t, s);
  SpinLockRelease(&g_shared->mutex);
  if (busy)
    ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                    errmsg("this session already holds a gpu2bs device memory reservation"),
                    errhint("End the transaction that called gpu2bs_admission_hold().")));
  const TimestampTz t0 = GetCurrentTimestamp();
  if (o.decision != adm::Decision::Refuse) {
    g_slot_busy = true;
    g_hold = hold;
  }
  if (o.decision == adm::Decision::Wait) {
    SpinLockAcquire(&g_shared->mutex);
    ++t->waits;
    SpinLockRelease(&g_shared->mutex);
    PG_TRY();
    {
      for (;;) {
        // The first call prepares the sleep and returns: the state is checked again before the
        // backend sleeps, so a release in between is not missed. The timeout rereads the budget.
        (void)ConditionVariableTimedSleep(&g_shared->cv, 1000, PG_WAIT_EXTENSION);
        const uint64_t now_total = budget_bytes();
        SpinLockAcquire(&g_shared->mutex);
        adm::set_total(t, now_total);
        o = adm::decide(t, s);
        SpinLockRelease(&g_shared->mutex);
        if (o.decision != adm::Decision::Wait) break;
      }
    }
    PG_CATCH();
    {
      ConditionVariableCancelSleep();
      release_mine();  // a cancelled or failed wait leaves the queue
      PG_RE_THROW();
    }
    PG_END_TRY();
    ConditionVariableCancelSleep();
  }
  if (o.decision == adm::Decision::Refuse) {
    g_slot_busy = false;
    g_hold = false;
    ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY),
                    errmsg("gpu2bs query needs more device memory than gpu2bs.gpu_memory_total"),
                    errdetail("It needs at least %lld MB; the budget of all sessions is %lld MB.",
                              mb_up(min), mb_up(total)),
                    errhint("Raise gpu2bs.gpu_memory_total or gpu2bs.gpu_memory_limit, or use gpu2bs.device = cpu.")));
  }
  g_last.valid = true;
  g_last.wait_ms = double(GetCurrentTimestamp() - t0) / 1000.0;
  g_last.want = want;
  g_last.min = min;
  g_last.granted = o.bytes;
  g_last.blocks = o.bytes < want;
  return o.bytes;
}

// Plain-data arguments of reserve_wait for pg_guard.
struct ReserveArgs {
  uint64_t want, min, total, granted, devices;
};

// The mask of the devices a call of `ctl` uses: gpu2bs.devices (every usable device for
// "all"; device 0 when the device is simulated), all of them or the first one.
uint64_t call_device_mask(const Control& ctl, bool all_devices) {
  std::vector<int> devs = ctl.devices;
  if (devs.empty() && simulate_device_setting <= 0) devs = cuda_device_ordinals();
  if (devs.empty()) devs.push_back(0);
  if (!all_devices) devs.resize(1);
  return adm::device_mask(devs.data(), devs.size());
}

}  // namespace

// Links a pipelined run into the backend's list of live runs.
void live_run_link(LiveRun* r, void (*stop)(void*), void* arg, const void* estate) {
  register_callbacks();
  live_run_unlink(r);
  r->stop = stop;
  r->arg = arg;
  r->subid = GetCurrentSubTransactionId();
  if (ActivePortal && ActivePortal->queryDesc && (const void*)ActivePortal->queryDesc->estate == estate &&
      ActivePortal->createSubid < r->subid)
    r->subid = ActivePortal->createSubid;
  r->prev = nullptr;
  r->next = g_live_runs;
  if (g_live_runs) g_live_runs->prev = r;
  g_live_runs = r;
  r->linked = true;
}

// Unlinks a run from the backend's list of live runs.
void live_run_unlink(LiveRun* r) noexcept {
  if (!r->linked) return;
  if (r->prev) r->prev->next = r->next;
  else g_live_runs = r->next;
  if (r->next) r->next->prev = r->prev;
  r->prev = r->next = nullptr;
  r->linked = false;
}

void define_admission() {
  DefineCustomIntVariable("gpu2bs.gpu_memory_total",
                          "Device memory all sessions' GPU calls may hold together on each device (0: 90% of the device).",
                          "Every device has this budget on its own; a call reserves on every "
                          "device it uses. A call that would exceed it waits (wait event "
                          "Extension) until others give memory back, or runs the SDH and pair "
                          "count in blocks of points with what is free.",
                          &gpu_memory_total_setting, 0, 0, 16 * 1024 * 1024, PGC_SIGHUP,
                          GUC_UNIT_MB, nullptr, nullptr, nullptr);
  DefineCustomIntVariable("gpu2bs.simulate_device_memory",
                          "Test hook: admission for CPU engine calls as on a device of this size (0: off).",
                          "The CPU engine's calls reserve what the GPU engine would need on a "
                          "device of this many MB (each ordinal of gpu2bs.devices a device of "
                          "its own) and wait like GPU calls; the CPU engine still computes the "
                          "result.",
                          &simulate_device_setting, 0, 0, 16 * 1024 * 1024, PGC_SUSET, GUC_UNIT_MB,
                          nullptr, nullptr, nullptr);
  if (process_shared_preload_libraries_in_progress) {
    g_prev_request = shmem_request_hook;
    shmem_request_hook = request_hook;
    g_prev_startup = shmem_startup_hook;
    shmem_startup_hook = startup_hook;
  }
}

uint64_t admission_want(const PointsView& pts, Precision prec, int nbuckets) {
  return adm::tiles_want_bytes(pts.n, pts.dims, prec, nbuckets);
}

uint64_t admission_want_count(const PointsView& pts, Precision prec, double r) {
  const uint64_t tiles = adm::tiles_want_bytes(pts.n, pts.dims, prec, 0);
  if (!std::isfinite(r) || !(r > 0)) return tiles;
  return std::max(tiles, adm::grid_count_bytes(pts.n, pts.dims, prec));
}

uint64_t admission_min(const PointsView& pts, Precision prec, int nbuckets) {
  return adm::tiles_block_min_bytes(pts.n, pts.dims, prec, nbuckets);
}

uint64_t admission_in_memory(const PointsView& pts, Precision prec, int nbuckets) {
  return adm::tiles_bytes(pts.n, pts.dims, prec, nbuckets);
}

bool admission_applies(Engine* eng) {
  if (simulate_device_setting > 0) return true;
  std::string why;
  return eng != nullptr && eng == cuda_engine(&why);
}

DeviceGrant::DeviceGrant(Engine* eng, Control& ctl, uint64_t want, uint64_t min, uint64_t in_memory,
                         bool all_devices) {
  if (!admission_applies(eng)) return;
  ReserveArgs a{want, min, 0, 0, 0};
  bool attached = false;
  bool nested = false;
  uint64_t shared_grant = 0;
  pg_guard([&] {
    attached = attach();
    if (!attached) return;
    if (g_slot_busy && !g_hold) {  // a second call of this backend runs under the first's grant
      nested = true;
      shared_grant = g_last.granted;
      return;
    }
    // A parallel worker whose leader holds a grant runs under it: waiting for the leader's
    // memory while the leader waits for the worker would never end.
    const PGPROC* leader = MyProc->lockGroupLeader;
    if (leader && leader != MyProc && uint32_t(leader->pgprocno) < g_shared->table.nslots) {
      SpinLockAcquire(&g_shared->mutex);
      const adm::Slot ls = g_shared->table.slots[leader->pgprocno];
      SpinLockRelease(&g_shared->mutex);
      if (ls.state == adm::kGranted) {
        nested = true;
        shared_grant = ls.granted;
        return;
      }
    }
    a.total = budget_bytes();
    if (a.total == 0) return;
    const uint64_t limit = uint64_t(gpu_memory_limit_setting) << 20;
    if (a.want == 0) {
      a.want = limit ? limit : a.total;
      a.min = a.want;
    } else if (limit && limit < a.want) {
      if (limit < a.min)
        ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY),
                        errmsg("gpu2bs.gpu_memory_limit is below what the call needs on the device"),
                        errdetail("It needs at least %lld MB (blocks of points); the limit is %lld MB.",
                                  mb_up(a.min), mb_up(limit)),
                        errhint("Raise gpu2bs.gpu_memory_limit, or use gpu2bs.device = cpu.")));
      a.want = limit;  // the per-query limit caps the request (the call runs in blocks)
    }
    if (a.min > a.want) a.min = a.want;
    a.devices = call_device_mask(ctl, all_devices);
    a.granted = reserve_wait(a.want, a.min, a.total, false, a.devices);
  });
  if (nested) {
    ctl.device_memory_limit = size_t(shared_grant);
    return;
  }
  if (!attached || a.total == 0) return;
  active_ = true;
  in_memory_ = in_memory ? in_memory : a.want;
  granted_ = a.granted;
  g_last.want = want ? want : a.want;  // before the per-query limit
  g_last.blocks = granted_ < in_memory_;
  ctl.device_memory_limit = size_t(granted_);
}

DeviceGrant::~DeviceGrant() {
  if (active_) release_mine();
}

InfoRows admission_rows() {
  InfoRows rows;
  if (!g_shared) {
    rows.emplace_back("admission", g_unavailable ? "off (no shared memory)" : "not attached");
  } else {
    SpinLockAcquire(&g_shared->mutex);
    const adm::Table t = g_shared->table;  // the header (first slot too)
    const bool pre = g_shared->preloaded;
    SpinLockRelease(&g_shared->mutex);
    rows.emplace_back("admission", pre ? "on (shared_preload_libraries)" : "on (spare shared memory)");
    rows.emplace_back("admission_total_mb", std::to_string(mb_up(t.total)));
    rows.emplace_back("admission_reserved_mb", std::to_string(mb_up(t.reserved)));
    rows.emplace_back("admission_peak_mb", std::to_string(mb_up(t.peak)));
    rows.emplace_back("admission_grants", std::to_string(t.grants));
    rows.emplace_back("admission_waits", std::to_string(t.waits));
    rows.emplace_back("admission_block_grants", std::to_string(t.block_grants));
    // Devices other than 0 that held reservations: their own reserved and peak bytes.
    for (uint32_t d = 1; d < adm::kMaxDevices; ++d) {
      if (!t.dev_peak[d]) continue;
      rows.emplace_back("admission_device_" + std::to_string(d) + "_reserved_mb",
                        std::to_string(mb_up(t.dev_reserved[d])));
      rows.emplace_back("admission_device_" + std::to_string(d) + "_peak_mb",
                        std::to_string(mb_up(t.dev_peak[d])));
    }
  }
  if (g_last.valid) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.3f", g_last.wait_ms);
    rows.emplace_back("last_admission_wait_ms", buf);
    rows.emplace_back("last_admission_want_bytes", std::to_string(g_last.want));
    rows.emplace_back("last_admission_granted_bytes", std::to_string(g_last.granted));
    rows.emplace_back("last_admission_blocks", g_last.blocks ? "yes" : "no");
  }
  return rows;
}

}  // namespace pg
}  // namespace gpu2bs

using namespace gpu2bs::pg;

// gpu2bs_admission_hold(megabytes): test hook; reserves device memory in the admission table
// on the first device of gpu2bs.devices until the end of the transaction, waiting like a GPU
// call.
GPU2BS_FUNCTION(gpu2bs_admission_hold) {
  const int32 mbytes = PG_GETARG_INT32(0);
  uint64_t granted = 0;
  const uint64_t devices = [] {
    PgControl ctl;  // the first device of gpu2bs.devices
    return call_device_mask(ctl, false);
  }();
  pg_guard([&] {
    if (mbytes <= 0)
      ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                      errmsg("gpu2bs_admission_hold needs a positive number of megabytes")));
    if (!attach())
      ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                      errmsg("gpu2bs device memory admission is off in this session")));
    const uint64_t total = budget_bytes();
    if (total == 0)
      ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                      errmsg("no device memory budget"),
                      errhint("Set gpu2bs.simulate_device_memory or gpu2bs.gpu_memory_total, or use a GPU.")));
    const uint64_t want = uint64_t(mbytes) << 20;
    granted = reserve_wait(want, want, total, true, devices);
  });
  PG_RETURN_INT32(int32(granted >> 20));
}

// gpu2bs_admission(): one row per backend with a request or grant in the admission table.
GPU2BS_FUNCTION(gpu2bs_admission) {
  ReturnSetInfo* rsinfo = (ReturnSetInfo*)fcinfo->resultinfo;
  pg_guard([&] {
    InitMaterializedSRF(fcinfo, 0);
    if (!attach()) return;
    const uint32_t n = g_shared->table.nslots;
    for (uint32_t k = 0; k < n; ++k) {
      SpinLockAcquire(&g_shared->mutex);
      const gpu2bs::admission::Slot e = g_shared->table.slots[k];
      SpinLockRelease(&g_shared->mutex);
      if (e.state == gpu2bs::admission::kFree) continue;
      Datum v[6];
      bool nulls[6] = {false, false, false, false, false, false};
      v[0] = Int32GetDatum(e.pid);
      v[1] = CStringGetTextDatum(e.state == gpu2bs::admission::kWaiting ? "waiting" : "granted");
      v[2] = Int64GetDatum(int64(e.want));
      v[3] = Int64GetDatum(int64(e.min));
      v[4] = Int64GetDatum(int64(e.granted));
      v[5] = TimestampTzGetDatum(TimestampTz(e.since_us));
      tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nulls);
    }
  });
  return (Datum)0;
}
