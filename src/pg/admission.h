// Device-memory admission across backends (docs/concurrency.md): every GPU call reserves its
// device memory in a table in shared memory before it runs, waits (cancellable) while the
// budget gpu2bs.gpu_memory_total is taken, and gives it back when it ends, fails or its backend
// exits. The accounting is src/core/admission.h; this is the shared memory, the lock, the
// condition variable and the settings.
#pragma once

#include <cstdint>
#include <string>

#include "../core/engine.h"

namespace gpu2bs {
namespace pg {

extern int gpu_memory_total_setting;    // MB, 0: 90 % of the device's memory
extern int simulate_device_setting;     // MB, 0: off (test hook: admission on the CPU engine)

// Registers the settings and, when loaded by shared_preload_libraries, the shared-memory hooks
// (from _PG_init).
void define_admission();

// One engine call's reservation: waits in the constructor until `want` bytes (or, when
// `min` < `want`, at least `min` for the block path, taken below `in_memory` bytes) are
// granted, sets
// ctl.device_memory_limit to the grant, and gives it back in the destructor. It does nothing
// (no limit set) when `eng` is the CPU engine and no device is simulated, or when admission is
// unavailable (its shared memory could not be had). `want` = 0 asks for the per-query limit
// (gpu2bs.gpu_memory_limit) or, without one, the whole budget. The bytes are reserved on each
// device the call uses: every device of gpu2bs.devices when `all_devices` (the SDH, pair count
// and join, which split across them), else the first one.
class DeviceGrant {
 public:
  DeviceGrant(Engine* eng, Control& ctl, uint64_t want, uint64_t min, uint64_t in_memory = 0,
              bool all_devices = false);
  ~DeviceGrant();
  DeviceGrant(const DeviceGrant&) = delete;
  DeviceGrant& operator=(const DeviceGrant&) = delete;
  bool active() const { return active_; }
  uint64_t granted() const { return granted_; }
  // True when the grant is below what the in-memory path needs (the call runs in blocks).
  bool blocks() const { return active_ && granted_ < in_memory_; }

 private:
  bool active_ = false;
  uint64_t in_memory_ = 0;
  uint64_t granted_ = 0;
};

// What an SDH or pair count over `pts` asks for, and the least it runs with (blocks).
uint64_t admission_want(const PointsView& pts, Precision prec, int nbuckets);
uint64_t admission_min(const PointsView& pts, Precision prec, int nbuckets);
// What a pair count of radius r asks for: admission_want, and with a finite positive r at
// least what its grid needs (grid_count_bytes).
uint64_t admission_want_count(const PointsView& pts, Precision prec, double r);
// The bytes below which that call runs in blocks (the all-pairs path's points in memory).
uint64_t admission_in_memory(const PointsView& pts, Precision prec, int nbuckets);

// A pipelined run (an engine on its own thread feeding a custom scan) in this backend's list of
// live runs: a transaction abort stops every listed run, a subtransaction abort those started
// in it or in its children, before admission gives this backend's reservation back, since the
// run's memory context may outlive the abort. stop(arg) joins the run's thread and frees the
// run (its device memory grant included); it is called at most once, after the run is unlinked.
struct LiveRun {
  void (*stop)(void*) = nullptr;
  void* arg = nullptr;
  uint32_t subid = 0;  // the subtransaction that started the run
  LiveRun* prev = nullptr;
  LiveRun* next = nullptr;
  bool linked = false;
};

// Links `r`, a run of the executor state `estate`, into the list: under the subtransaction
// that created the active portal when that portal runs `estate` (a cursor outlives the aborts
// of later subtransactions), else under the current one. PostgreSQL code: may ereport (it
// registers the transaction callbacks on first use).
void live_run_link(LiveRun* r, void (*stop)(void*), void* arg, const void* estate);
// Unlinks `r` when linked (the run's owner calls it when the run ends normally).
void live_run_unlink(LiveRun* r) noexcept;

// True when the CUDA engine is `eng`'s engine or a device is simulated on the CPU engine.
bool admission_applies(Engine* eng);

// Rows for gpu2bs_info(): the admission's state and this backend's last reservation.
InfoRows admission_rows();

}  // namespace pg
}  // namespace gpu2bs
