// The CUDA engine: lazy CUDA initialization (never at load time), the Engine implementation that
// dispatches to the family kernels (sdh.cu, pair_count.cu, join/), the per-call scope and
// transfers, the SDH privatization model, and gpu2bs_info() facts.
#include <pthread.h>

#include <algorithm>
#include <csignal>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <pthread.h>
#include <signal.h>

#include "common.cuh"
#include "core/admission.h"
#include "core/parallel.h"
#include "core/split.h"
#include "expr/expr_gpu.h"
#include "core/pair_expr.h"
#include "pairwise/pairwise_api.h"
#include "weights.h"
#include "join/chunk_sink.h"

namespace gpu2bs {
namespace cuda {

namespace {

std::atomic<size_t> g_bytes_in_use{0};
std::atomic<size_t> g_peak_bytes{0};
DeviceFacts g_facts;
int g_device_count = 0;          // CUDA devices of the machine
std::vector<int> g_all_devices;  // those the engine can use (compute capability 8.0 or newer)

// Pinned staging buffer kept for the process (cudaHostAlloc costs milliseconds): one call at a
// time borrows it; a concurrent call allocates its own.
std::mutex g_stage_mu;
char* g_stage = nullptr;
size_t g_stage_half = 0;
bool g_stage_busy = false;

void free_cached_staging() {
  std::lock_guard<std::mutex> lk(g_stage_mu);
  if (g_stage && !g_stage_busy) (void)cudaFreeHost(g_stage);
  g_stage = nullptr;
  g_stage_half = 0;
}

// The source path from "kernels/" on, so messages do not depend on the build directory.
const char* short_path(const char* file) {
  const char* k = std::strstr(file, "kernels/");
  return k ? k : file;
}

__global__ void probe_kernel(int* out) {
  if (threadIdx.x == 0 && blockIdx.x == 0) *out = 0x2b5;
}

}  // namespace

[[noreturn]] void throw_cuda(cudaError_t e, const char* expr, const char* file, int line) {
  (void)cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  std::string msg = std::string("CUDA error ") + cudaGetErrorName(e) + " (" +
                    cudaGetErrorString(e) + ") in " + expr + " at " + short_path(file) + ":" +
                    std::to_string(line);
  ErrorCode code = e == cudaErrorMemoryAllocation ? ErrorCode::OutOfMemory : ErrorCode::DeviceError;
  throw Error(code, msg, {}, {}, file, line, nullptr);  // located at the failing CUDA call
}

namespace {

std::mutex g_facts_mu;
std::map<int, std::unique_ptr<DeviceFacts>> g_dev_facts;  // devices other than the first
thread_local const DeviceFacts* t_facts = nullptr;        // the device of this thread's call

// Facts of device `ordinal` (-1: the first device), read once per process.
const DeviceFacts& facts_for(int ordinal) {
  if (ordinal < 0 || ordinal == g_facts.device) return g_facts;
  std::lock_guard<std::mutex> lk(g_facts_mu);
  std::unique_ptr<DeviceFacts>& slot = g_dev_facts[ordinal];
  if (!slot) {
    auto f = std::make_unique<DeviceFacts>();
    f->device = ordinal;
    G2_CUDA(cudaGetDeviceProperties(&f->prop, ordinal));
    if (f->prop.major < 8)
      throw Error(ErrorCode::DeviceUnavailable,
                  "GPU " + std::to_string(ordinal) + " has compute capability " +
                      std::to_string(f->prop.major) + "." + std::to_string(f->prop.minor),
                  {}, "Leave it out of gpu2bs.devices (the CUDA engine needs 8.0 or newer).");
    f->sms = f->prop.multiProcessorCount;
    f->smem_per_sm = f->prop.sharedMemPerMultiprocessor;
    f->smem_per_block_optin = f->prop.sharedMemPerBlockOptin;
    f->smem_reserved = f->prop.reservedSharedMemPerBlock;
    f->name = std::string(f->prop.name) + ", sm_" + std::to_string(f->prop.major * 10 + f->prop.minor);
    slot = std::move(f);
  }
  return *slot;
}

}  // namespace

// The facts of the device of the calling thread's current call (the first device otherwise).
const DeviceFacts& device_facts() { return t_facts ? *t_facts : g_facts; }
size_t engine_bytes_in_use() { return g_bytes_in_use.load(); }
size_t engine_peak_bytes() { return g_peak_bytes.load(); }
void reset_engine_peak_bytes() { g_peak_bytes = g_bytes_in_use.load(); }

// ---- ReuseScope ----------------------------------------------------------------------------------

namespace {
thread_local ReuseScope* t_reuse = nullptr;  // the innermost scope of this thread
}  // namespace

ReuseScope::ReuseScope(int dev) : device(dev), outer(t_reuse) { t_reuse = this; }

// Frees every kept buffer on the scope's device.
ReuseScope::~ReuseScope() {
  t_reuse = outer;
  last_run().kept_hits += hits;
  last_run().kept_misses += misses;
  int cur = -1;
  (void)cudaGetDevice(&cur);
  if (cur != device) (void)cudaSetDevice(device);
  for (const Block& b : dev) {
    (void)cudaFree(b.p);
    g_bytes_in_use -= b.bytes;
  }
  for (const Block& b : host) (void)cudaFreeHost(b.p);
  if (cur >= 0 && cur != device) (void)cudaSetDevice(cur);
}

// Sizes up to 64 KiB as they are; larger ones rounded up to an eighth of their power of two.
size_t ReuseScope::size_class(size_t bytes) {
  if (bytes <= (size_t(64) << 10)) return bytes;
  size_t p = 1;
  while (p <= bytes / 2) p *= 2;
  const size_t step = p / 8;
  return (bytes + step - 1) / step * step;
}

// The smallest kept block of `bytes` .. `bytes` * (1 + 1/slack) bytes.
void* ReuseScope::take(std::vector<Block>& from, size_t bytes, size_t* got, size_t slack) {
  size_t best = from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i].bytes >= bytes && from[i].bytes <= bytes + bytes / slack &&
        (best == from.size() || from[i].bytes < from[best].bytes))
      best = i;
  if (best == from.size()) return nullptr;
  void* p = from[best].p;
  *got = from[best].bytes;
  from[best] = from.back();
  from.pop_back();
  return p;
}

// Largest kept buffers first (they make room fastest).
void ReuseScope::evict(size_t used, size_t need, size_t limit) {
  while (!dev.empty() && used + dev_bytes + need > limit) {
    size_t big = 0;
    for (size_t i = 1; i < dev.size(); ++i)
      if (dev[i].bytes > dev[big].bytes) big = i;
    (void)cudaFree(dev[big].p);
    g_bytes_in_use -= dev[big].bytes;
    dev_bytes -= dev[big].bytes;
    dev[big] = dev.back();
    dev.pop_back();
  }
}


LastRun& last_run() {
  static thread_local LastRun r;
  return r;
}

// ---- Call ----------------------------------------------------------------------------------------

Call::Call(Control& c) : ctl(c) {
  const DeviceFacts& f = facts_for(ctl.device);
  t_facts = &f;
  G2_CUDA(cudaSetDevice(f.device));
  // The limit (a setting or the admission's grant), never above 90 % of what is free on the
  // device now (other processes' contexts and allocations are outside the admission's budget):
  // the SDH and pair count then run in blocks rather than failing in cudaMalloc.
  size_t free_b = 0, total_b = 0;
  G2_CUDA(cudaMemGetInfo(&free_b, &total_b));
  if (t_reuse && t_reuse->device == f.device) reuse_ = t_reuse;
  // Kept buffers of a ReuseScope are this query's, not other processes': they count as free.
  const size_t free_share =
      size_t(double(free_b + (reuse_ ? reuse_->dev_bytes : 0)) * 0.9);
  limit_ = ctl.device_memory_limit ? std::min(ctl.device_memory_limit, free_share) : free_share;
  G2_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  last_poll_ = Clock::now();
}

Call::~Call() {
  // Nothing may still run when the buffers go: wait for the streams (errors are moot here).
  if (stream_) (void)cudaStreamSynchronize(stream_);
  for (auto s : extra_)
    if (s) (void)cudaStreamSynchronize(s);
  for (auto& a : dev_) {
    if (reuse_) {
      try {
        reuse_->dev.push_back({a.p, a.bytes});
        reuse_->dev_bytes += a.bytes;
        continue;
      } catch (...) {  // no room to keep it: freed below
      }
    }
    (void)cudaFree(a.p);
    g_bytes_in_use -= a.bytes;
  }
  for (auto& h : host_) {
    if (reuse_) {
      try {
        reuse_->host.push_back({h.p, h.bytes});
        continue;
      } catch (...) {
      }
    }
    (void)cudaFreeHost(h.p);
  }
  if (stage_cached_) {
    std::lock_guard<std::mutex> lk(g_stage_mu);
    g_stage_busy = false;
  }
  for (auto e : events_) (void)cudaEventDestroy(e);
  for (auto s : extra_)
    if (s) (void)cudaStreamDestroy(s);
  if (stream_) (void)cudaStreamDestroy(stream_);
}

cudaStream_t Call::extra_stream(int k) {
  if (k < 0 || k >= kExtraStreams) throw Error(ErrorCode::Internal, "no such extra stream");
  if (!extra_[k]) G2_CUDA(cudaStreamCreateWithFlags(&extra_[k], cudaStreamNonBlocking));
  return extra_[k];
}

void* Call::alloc_bytes(size_t bytes, const char* what) {
  if (bytes == 0) return nullptr;
  size_t rounded = (bytes + 255) & ~size_t(255);
  if (reuse_) {
    // A kept buffer when one fits; else a new one of the size class (so that the next
    // sub-join's request of a slightly different size finds it), or of the exact size when
    // the class does not fit the limit.
    size_t got = 0;
    if (void* p = reuse_->take(reuse_->dev, rounded, &got, 4)) {
      if (used_ + got <= limit_) {
        dev_.push_back({p, got});
        used_ += got;
        reuse_->dev_bytes -= got;
        ++reuse_->hits;
        return p;
      }
      reuse_->dev.push_back({p, got});  // over this call's limit: back, and a new one below
    }
    ++reuse_->misses;
    const size_t cls = ReuseScope::size_class(rounded);
    reuse_->evict(used_, cls, limit_);
    if (used_ + reuse_->dev_bytes + cls <= limit_) rounded = cls;
    else reuse_->evict(used_, rounded, limit_);
    bytes = rounded;  // a kept buffer serves any request up to its accounted size
  }
  if (used_ + rounded > limit_)
    throw Error(ErrorCode::OutOfMemory, "GPU memory limit exceeded",
                std::string("Allocating ") + std::to_string(bytes) + " bytes for " + what +
                    " would bring this query's device memory to " +
                    std::to_string(used_ + rounded) + " bytes; the limit is " +
                    std::to_string(limit_) + " bytes.",
                "Raise gpu2bs.gpu_memory_limit, or use gpu2bs.device = cpu.");
  void* p = nullptr;
  G2_CUDA(cudaMalloc(&p, bytes));
  try {
    dev_.push_back({p, rounded});
  } catch (...) {
    (void)cudaFree(p);
    throw;
  }
  used_ += rounded;
  const size_t now = g_bytes_in_use += rounded;
  size_t peak = g_peak_bytes.load();
  while (now > peak && !g_peak_bytes.compare_exchange_weak(peak, now)) {
  }
  return p;
}

void Call::free(void* p) {
  if (!p) return;
  for (size_t i = 0; i < dev_.size(); ++i) {
    if (dev_[i].p != p) continue;
    (void)cudaStreamSynchronize(stream_);
    if (reuse_) {
      reuse_->dev.push_back({p, dev_[i].bytes});
      reuse_->dev_bytes += dev_[i].bytes;
    } else {
      G2_CUDA(cudaFree(p));
      g_bytes_in_use -= dev_[i].bytes;
    }
    used_ -= dev_[i].bytes;
    dev_.erase(dev_.begin() + long(i));
    return;
  }
}

void* Call::alloc_host(size_t bytes) {
  bytes = std::max<size_t>((bytes + 63) & ~size_t(63), 64);
  if (reuse_) {
    size_t got = 0;
    if (void* p = reuse_->take(reuse_->host, bytes, &got, 16)) {
      try {
        host_.push_back({p, got});
      } catch (...) {
        (void)cudaFreeHost(p);
        throw;
      }
      return p;
    }
    bytes = ReuseScope::size_class(bytes);
  }
  void* p = nullptr;
  G2_CUDA(cudaHostAlloc(&p, bytes, cudaHostAllocDefault));
  try {
    host_.push_back({p, bytes});
  } catch (...) {
    (void)cudaFreeHost(p);
    throw;
  }
  return p;
}

cudaEvent_t Call::event(bool timing) {
  cudaEvent_t e = nullptr;
  G2_CUDA(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
  try {
    events_.push_back(e);
  } catch (...) {
    (void)cudaEventDestroy(e);
    throw;
  }
  return e;
}

[[noreturn]] void Call::interrupted() {
  (void)cudaStreamSynchronize(stream_);
  for (auto s : extra_)
    if (s) (void)cudaStreamSynchronize(s);
  throw Error(ErrorCode::Interrupted, "interrupted");
}

void Call::poll() {
  last_poll_ = Clock::now();
  if (ctl.interrupt_pending()) interrupted();
}

void Call::wait(cudaEvent_t ev) {
  auto t0 = Clock::now();
  for (;;) {
    cudaError_t e = cudaEventQuery(ev);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) throw_cuda(e, "cudaEventQuery", __FILE__, __LINE__);
    poll();
    // Spin briefly (short kernels), then sleep in short steps.
    if (seconds_since(t0) > 2e-4) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

void Call::sync() {
  cudaEvent_t e = event();
  G2_CUDA(cudaEventRecord(e, stream_));
  wait(e);
}

char* Call::staging(int half, size_t min_half_bytes) {
  if (half_ < min_half_bytes) {
    if (stage_) sync();  // the old halves may still be read by queued copies
    if (!stage_) {       // first use: borrow the process's cached buffer when it is free
      std::lock_guard<std::mutex> lk(g_stage_mu);
      if (!g_stage_busy) {
        g_stage_busy = true;
        stage_cached_ = true;
      }
    }
    const size_t need = std::max<size_t>((min_half_bytes + 4095) & ~size_t(4095), 4096);
    if (stage_cached_) {
      std::lock_guard<std::mutex> lk(g_stage_mu);
      if (g_stage_half < need) {
        if (g_stage) (void)cudaFreeHost(g_stage);
        g_stage = nullptr;
        g_stage_half = 0;
        const size_t want = std::max(need, cuda_tuning::kStagingBytes / 2);
        void* p = nullptr;
        G2_CUDA(cudaHostAlloc(&p, 2 * want, cudaHostAllocDefault));
        g_stage = static_cast<char*>(p);
        g_stage_half = want;
        // Freed at exit, before the runtime's own teardown (registered after it).
        static const bool registered = std::atexit(free_cached_staging) == 0;
        (void)registered;
      }
      stage_ = g_stage;
      half_ = g_stage_half;
    } else {
      half_ = need;
      stage_ = static_cast<char*>(alloc_host(2 * half_));
    }
    if (!staging_ev_[0]) {
      staging_ev_[0] = event();
      staging_ev_[1] = event();
    }
    G2_CUDA(cudaEventRecord(staging_ev_[0], stream_));
    G2_CUDA(cudaEventRecord(staging_ev_[1], stream_));
  }
  return stage_ + size_t(half) * half_;
}

// ---- transfers -------------------------------------------------------------------------------

// The part of each staging half that one of up to `workers` threads fills: its size in bytes
// (a multiple of 4096) and, in *parts, how many such parts the halves hold.
static size_t staged_part_bytes(Call& call, int workers, int* parts) {
  call.staging(0, cuda_tuning::kStagingBytes / 2);
  call.staging(1, cuda_tuning::kStagingBytes / 2);
  const size_t piece = std::max<size_t>(4096, call.half_bytes() / size_t(workers) / 4096 * 4096);
  *parts = int(std::min<size_t>(size_t(workers), call.half_bytes() / piece));
  return piece;
}

// Queues `slices` host-to-device copies through the staging halves on `parts` of the engine's
// threads: worker w fills part w of the two halves in turn (fill(item, part) writes slice `item`
// there and returns its device destination and byte count, at most one part) and queues that
// slice's transfer on the call's stream; returns after the stream is idle. False where the
// worker threads cannot start: the slices that did go are the caller's to send again.
static bool staged_parallel(Call& call, size_t slices, size_t piece, int parts,
                            const std::function<std::pair<void*, size_t>(size_t, char*)>& fill) {
  char* const halves[2] = {call.staging(0, piece), call.staging(1, piece)};
  call.wait(call.staging_event(0));  // earlier transfers from the staging are done
  call.wait(call.staging_event(1));
  std::vector<cudaEvent_t> ev(2 * size_t(parts));
  for (auto& e : ev) e = call.event();
  std::vector<int> turn(size_t(parts), 0);
  std::vector<char> bound(size_t(parts), 0);
  int dev_id = 0;
  G2_CUDA(cudaGetDevice(&dev_id));
  const cudaStream_t st = call.stream();
  bool started = true;
  try {
    parallel_for(
        call.ctl, slices,
        [&](size_t item, int w) {
          if (!bound[size_t(w)]) {
            G2_CUDA(cudaSetDevice(dev_id));
            bound[size_t(w)] = 1;
          }
          const int h = turn[size_t(w)];
          turn[size_t(w)] ^= 1;
          const cudaEvent_t e = ev[2 * size_t(w) + size_t(h)];
          G2_CUDA(cudaEventSynchronize(e));  // the transfer that last read this part is done
          char* s = halves[h] + size_t(w) * piece;
          const std::pair<void*, size_t> d = fill(item, s);
          G2_CUDA(cudaMemcpyAsync(d.first, s, d.second, cudaMemcpyHostToDevice, st));
          G2_CUDA(cudaEventRecord(e, st));
        },
        parts);
  } catch (const Error& err) {
    if (err.code() != ErrorCode::OutOfMemory) throw;
    started = false;
  }
  call.sync();
  return started;
}

// Coordinates converted to T and copied into device SoA arrays (common.cuh).
template <typename T>
void upload_points(Call& call, const PointsView& v, T* const* dst) {
  const size_t n = v.n;
  if (n == 0) return;
  auto t0 = Clock::now();
  const int want = call.ctl.overrides.upload_workers > 0 ? call.ctl.overrides.upload_workers
                                                         : cuda_tuning::kPointUploadWorkers;
  const int workers = std::min(call.ctl.threads, want);
  if (n * size_t(v.dims) * sizeof(double) >= cuda_tuning::kParallelUploadBytes && workers >= 2) {
    // Conversion and copies overlap on the worker threads: the whole wall time is preparation.
    int parts = 0;
    const size_t piece = staged_part_bytes(call, workers, &parts);
    const size_t per = piece / sizeof(T);
    const size_t per_axis = (n + per - 1) / per;
    const bool done = staged_parallel(
        call, per_axis * size_t(v.dims), piece, parts, [&](size_t item, char* part) {
          const size_t k = item / per_axis, off = (item % per_axis) * per;
          const size_t cnt = std::min(per, n - off);
          T* s = reinterpret_cast<T*>(part);
          const double* in = v.coord[k] + off;
          for (size_t i = 0; i < cnt; ++i) s[i] = static_cast<T>(in[i]);
          return std::pair<void*, size_t>(dst[k] + off, cnt * sizeof(T));
        });
    if (done) {
      call.ctl.stats.prepare_s += seconds_since(t0);
      return;
    }
  }
  double conv_s = 0;
  const size_t per =
      std::min(n, std::max<size_t>(cuda_tuning::kStagingBytes / 2 / sizeof(T), 1024));
  call.staging(0, per * sizeof(T));
  int h = 0;
  for (int k = 0; k < v.dims; ++k) {
    for (size_t off = 0; off < n; off += per) {
      const size_t cnt = std::min(per, n - off);
      call.wait(call.staging_event(h));  // the copy that last read this half is done
      auto tc = Clock::now();
      T* s = reinterpret_cast<T*>(call.staging(h, per * sizeof(T)));
      const double* in = v.coord[k] + off;
      for (size_t i = 0; i < cnt; ++i) s[i] = static_cast<T>(in[i]);
      conv_s += seconds_since(tc);
      G2_CUDA(cudaMemcpyAsync(dst[k] + off, s, cnt * sizeof(T), cudaMemcpyHostToDevice,
                              call.stream()));
      G2_CUDA(cudaEventRecord(call.staging_event(h), call.stream()));
      h ^= 1;
    }
  }
  call.wait(call.staging_event(0));
  call.wait(call.staging_event(1));
  const double total = seconds_since(t0);
  call.ctl.stats.prepare_s += conv_s;
  call.ctl.stats.transfer_s += std::max(0.0, total - conv_s);
}

template void upload_points<float>(Call&, const PointsView&, float* const*);
template void upload_points<double>(Call&, const PointsView&, double* const*);

// Copies `bytes` from host memory to the device through the pinned staging buffer. Copies of at
// least `parallel_from` bytes go through up to `workers` of the engine's threads, each copying
// slices into its own part of the two staging halves in turn and queueing their transfers on
// the call's stream (one thread's copy out of pageable memory, 5-6 GB/s, is slower than the
// PCIe link); smaller ones through the halves in turn on this thread.
void upload_bytes(Call& call, void* dev, const void* host, size_t bytes, int workers, size_t parallel_from) {
  if (!bytes) return;
  auto t0 = Clock::now();
  workers = std::min(call.ctl.threads, workers);
  if (bytes >= parallel_from && workers >= 2) {
    int parts = 0;
    const size_t piece = staged_part_bytes(call, workers, &parts);
    const size_t slices = (bytes + piece - 1) / piece;
    // Slice `item` covers [item * piece, min(bytes, (item + 1) * piece)), so the slices cover
    // every byte once. Where the worker threads cannot start, this thread copies everything
    // (bytes copied twice are the same bytes).
    const bool done = staged_parallel(call, slices, piece, parts, [&](size_t item, char* part) {
      const size_t off = item * piece, cnt = std::min(piece, bytes - off);
      std::memcpy(part, static_cast<const char*>(host) + off, cnt);
      return std::pair<void*, size_t>(static_cast<char*>(dev) + off, cnt);
    });
    if (done) {
      call.ctl.stats.transfer_s += seconds_since(t0);
      return;
    }
  }
  const size_t per = std::min(bytes, cuda_tuning::kStagingBytes / 2);
  int h = 0;
  call.staging(0, per);
  for (size_t off = 0; off < bytes; off += per) {
    const size_t cnt = std::min(per, bytes - off);
    call.wait(call.staging_event(h));
    char* s = call.staging(h, per);
    std::memcpy(s, static_cast<const char*>(host) + off, cnt);
    G2_CUDA(cudaMemcpyAsync(static_cast<char*>(dev) + off, s, cnt, cudaMemcpyHostToDevice,
                            call.stream()));
    G2_CUDA(cudaEventRecord(call.staging_event(h), call.stream()));
    h ^= 1;
  }
  call.wait(call.staging_event(0));
  call.wait(call.staging_event(1));
  call.ctl.stats.transfer_s += seconds_since(t0);
}

void download(Call& call, void* host, const void* dev, size_t bytes) {
  if (bytes == 0) return;
  auto t0 = Clock::now();
  const size_t per = std::min(bytes, cuda_tuning::kStagingBytes / 2);
  char* s = call.staging(0, per);
  for (size_t off = 0; off < bytes; off += per) {
    const size_t cnt = std::min(per, bytes - off);
    call.wait(call.staging_event(0));
    G2_CUDA(cudaMemcpyAsync(s, static_cast<const char*>(dev) + off, cnt, cudaMemcpyDeviceToHost,
                            call.stream()));
    G2_CUDA(cudaEventRecord(call.staging_event(0), call.stream()));
    call.wait(call.staging_event(0));
    std::memcpy(static_cast<char*>(host) + off, s, cnt);
  }
  call.ctl.stats.transfer_s += seconds_since(t0);
}

// ---- SDH privatization model -----------------------------------------------------------------

double priv_latency(int k, double cl, double clp, int hs) {
  if (k <= 1) return cl;
  // Probability that the k lanes sharing a copy hit k different buckets (birthday problem).
  const double pk = std::exp(-double(k) * double(k - 1) / (2.0 * double(hs)));
  return pk * cl + (1 - pk) * priv_latency(k - 1, cl + clp, clp, hs);
}

double priv_estimate(int nbuckets, int copies, int threads, size_t tile_bytes, double n_threads,
                     const PrivMachine& m) {
  const size_t stride = copies > 1 ? size_t(nbuckets | 1) : size_t(nbuckets);
  const size_t smem = tile_bytes + size_t(copies) * stride * 4;
  if (smem > m.smem_per_block_optin) return 0;
  int blocks = int(m.smem_per_sm / (smem + m.smem_reserved));
  blocks = std::min({blocks, m.max_blocks_per_sm, m.max_threads_per_sm / threads,
                     m.reg_blocks_per_sm});
  if (blocks <= 0) return 0;
  // Occupancy alpha (threads per SM), saturating where latency is already hidden.
  const double alpha = std::min<double>(blocks * threads, cuda_tuning::kPrivAlphaSat);
  // Rounds R = T / (alpha * MP) (equation 1) times the latency of one round (equation 2). The
  // paper's ceil() is dropped: our grid is persistent (one wave, work sliced over resident
  // blocks), so the work of a resident thread scales with 1 / alpha at any N.
  const double rounds = std::max(n_threads, 1.0) / (alpha * m.sms);
  return rounds * priv_latency(32 / copies, 1.0, cuda_tuning::kPrivCLP, nbuckets);
}

PrivChoice choose_privatization(int nbuckets, int threads, size_t tile_bytes, double n_threads,
                                const PrivMachine& m, int forced_copies) {
  PrivChoice c;
  auto global = [&] {
    c.global = true;
    c.copies = 0;
    c.stride = 0;
    c.smem_bytes = tile_bytes;
    return c;
  };
  if (forced_copies < 0) return global();
  if (forced_copies > 0) {
    if (priv_estimate(nbuckets, forced_copies, threads, tile_bytes, n_threads, m) <= 0)
      return global();
    c.copies = forced_copies;
  } else {
    double best = 0;
    for (int h = 32; h >= 1; h /= 2) {  // ties keep more copies (fewer conflicts)
      double e = priv_estimate(nbuckets, h, threads, tile_bytes, n_threads, m);
      if (e > 0 && (best == 0 || e < best)) {
        best = e;
        c.copies = h;
      }
    }
    if (best == 0) return global();
  }
  c.global = false;
  c.stride = c.copies > 1 ? (nbuckets | 1) : nbuckets;
  c.smem_bytes = tile_bytes + size_t(c.copies) * size_t(c.stride) * 4;
  return c;
}

// ---- several devices ---------------------------------------------------------------------------

namespace {

// The Control of one device's share: the caller's settings, with the interrupt read from a flag
// that the calling thread sets (only the calling thread may ask the caller).
class ShareControl final : public Control {
 public:
  explicit ShareControl(const std::atomic<bool>* stop) : stop_(stop) {}
  // The calling thread's verdict, set when the caller cancels or a share fails.
  bool interrupt_pending() override { return stop_->load(); }

 private:
  const std::atomic<bool>* stop_;
};

// The device ordinals of a call: the override, else gpu2bs.devices, else every usable device.
// Throws Error(InvalidParameter) for an ordinal the machine does not have.
std::vector<int> call_devices(const Control& ctl) {
  const std::vector<int>& d = !ctl.overrides.devices.empty() ? ctl.overrides.devices : ctl.devices;
  for (int x : d)
    if (x < 0 || x >= g_device_count)
      throw Error(ErrorCode::InvalidParameter,
                  "gpu2bs.devices names device " + std::to_string(x) + ", which does not exist",
                  "This machine has " + std::to_string(g_device_count) + " CUDA device" +
                      (g_device_count == 1 ? "" : "s") + " (ordinals from 0).",
                  "Set gpu2bs.devices to all or to ordinals below " + std::to_string(g_device_count) + ".");
  if (!d.empty()) return d;
  if (!g_all_devices.empty()) return g_all_devices;
  return {g_facts.device};
}

// Bytes one share on device `dev` may allocate: the call's limit (per device) and 90 % of the
// device's free memory, divided among the shares that run on the same device.
size_t share_budget(const Control& ctl, int dev, int same_device) {
  G2_CUDA(cudaSetDevice(dev));
  size_t free_b = 0, total_b = 0;
  G2_CUDA(cudaMemGetInfo(&free_b, &total_b));
  size_t b = size_t(double(free_b) * 0.9);
  if (ctl.device_memory_limit) b = std::min(b, ctl.device_memory_limit);
  return b / size_t(std::max(1, same_device));
}

// The smallest share budget over `devs` (an ordinal listed k times counts k shares).
size_t min_share_budget(const Control& ctl, const std::vector<int>& devs) {
  size_t b = SIZE_MAX;
  for (int d : devs)
    b = std::min(b, share_budget(ctl, d, int(std::count(devs.begin(), devs.end(), d))));
  return b;
}

// Runs fn(control of share k, k) for every device of `devs` on its own thread (one CUDA stream
// set each: every share opens its own Call). The calling thread polls the caller's interrupt
// every poll_ms and runs pump(false) meanwhile, waiting up to wait_ms for a share to end
// between pumps (pump(true) once every share ended); `abort`
// releases shares blocked on the calling thread. Stats and the first share's LastRun are
// merged into the caller's; the first error is rethrown (Interrupted when the caller cancelled).
template <class F, class Pump, class Abort>
void run_shares(Control& ctl, const std::vector<int>& devs, size_t budget, size_t share_block, F fn,
                Pump pump, Abort abort, int wait_ms) {
  const int D = int(devs.size());
  std::atomic<bool> stop{false};
  std::atomic<int> left{D};
  std::vector<std::unique_ptr<ShareControl>> cs;
  std::vector<std::exception_ptr> errs(static_cast<size_t>(D));
  std::vector<LastRun> runs(static_cast<size_t>(D));
  for (int k = 0; k < D; ++k) {
    cs.push_back(std::make_unique<ShareControl>(&stop));
    Control& c = *cs.back();
    c = ctl;
    c.device = devs[size_t(k)];
    c.share = k;
    c.shares = D;
    c.share_block = share_block;
    c.device_memory_limit = budget;
    c.resolve_stats = nullptr;
    c.stats = RunStats();
  }
  std::mutex done_mu;
  std::condition_variable done_cv;  // a share ended
  std::vector<std::thread> threads;
  bool cancelled = false;
  std::exception_ptr main_err;
  try {
    // The share threads start with every signal blocked (they inherit the mask, restored on
    // the calling thread once they started), so the caller's signal handlers (PostgreSQL's)
    // run on the calling thread only.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    // Restores the caller's mask when the threads are started or a start throws (a guard on
    // the stack: nothing between the block and it can throw).
    struct Restore {
      sigset_t* m;
      bool active = true;
      void reset() {
        if (active) pthread_sigmask(SIG_SETMASK, m, nullptr);
        active = false;
      }
      ~Restore() { reset(); }
    } restore{&old};
    for (int k = 0; k < D; ++k) {
      Control* c = cs[size_t(k)].get();
      LastRun* run = runs.data() + k;
      std::exception_ptr* err = errs.data() + k;
      threads.emplace_back([&fn, &stop, &left, &done_mu, &done_cv, c, run, err, k] {
        try {
          fn(*c, k);
          *run = last_run();
        } catch (...) {
          *err = std::current_exception();
          stop = true;
        }
        {
          std::lock_guard<std::mutex> lk(done_mu);
          --left;
        }
        done_cv.notify_all();
      });
    }
    restore.reset();
    while (left.load() > 0) {
      pump(false);
      if (wait_ms > 0) {
        std::unique_lock<std::mutex> lk(done_mu);
        done_cv.wait_for(lk, std::chrono::milliseconds(wait_ms), [&] { return left.load() == 0; });
      }
      if (!stop.load() && ctl.interrupt_pending()) {
        cancelled = true;
        stop = true;
        abort();
      }
      if (stop.load()) abort();
    }
    pump(true);
  } catch (...) {
    main_err = std::current_exception();
    stop = true;
    abort();
  }
  for (auto& t : threads) t.join();
  if (main_err) std::rethrow_exception(main_err);
  if (cancelled) throw Error(ErrorCode::Interrupted, "interrupted");
  std::exception_ptr first;
  for (auto& e : errs) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const Error& x) {
      if (x.code() != ErrorCode::Interrupted) std::rethrow_exception(e);
      if (!first) first = e;
    } catch (...) {
      std::rethrow_exception(e);
    }
  }
  if (first) std::rethrow_exception(first);
  RunStats& st = ctl.stats;
  LastRun lr = runs[0];
  for (int k = 0; k < D; ++k) {
    const RunStats& s = cs[size_t(k)]->stats;
    if (k > 0) {
      lr.kernel_ms = std::max(lr.kernel_ms, runs[size_t(k)].kernel_ms);
      lr.launches += runs[size_t(k)].launches;
      lr.drains += runs[size_t(k)].drains;
    }
    st.prepare_s = std::max(st.prepare_s, s.prepare_s);
    st.transfer_s = std::max(st.transfer_s, s.transfer_s);
    st.kernel_s = std::max(st.kernel_s, s.kernel_s);
    st.merge_s = std::max(st.merge_s, s.merge_s);
    st.pairs_examined += s.pairs_examined;
    st.pairs_emitted += s.pairs_emitted;
    st.block_points = std::max(st.block_points, s.block_points);
    st.block_pairs += s.block_pairs;
    st.slabs = std::max(st.slabs, s.slabs);
  }
  st.shares = uint64_t(D);
  last_run() = lr;
}

// The block size every share of an SDH or pair count uses under `budget` (0: in memory).
size_t shares_block(const PointsView& pts, Precision prec, int nbuckets, size_t budget) {
  if (admission::tiles_bytes(pts.n, pts.dims, prec, nbuckets) <= budget) return 0;
  const size_t block = size_t(admission::block_points(budget, pts.dims, prec, nbuckets));
  if (block == 0)
    throw Error(ErrorCode::OutOfMemory, "GPU memory limit exceeded",
                "Blocks of points need at least " +
                    std::to_string(admission::tiles_block_min_bytes(pts.n, pts.dims, prec, nbuckets)) +
                    " bytes of device memory on each device; the limit leaves " +
                    std::to_string(budget) + ".",
                "Raise gpu2bs.gpu_memory_limit, or use gpu2bs.device = cpu.");
  return block;
}

// Result pages of joins on worker threads handed to the calling thread: bounded (a full queue
// blocks the producing device's drain), closed on error or cancel; consumed pages come back for
// reuse, so their memory is allocated once per queue slot. With `chunks` > 0 the queue also
// lends up to that many pinned buffers of kChunkBytes (QueueSink::lend), into which the batched
// join copies drained banks straight from the device; they come back when read.
class PageQueue {
 public:
  static constexpr size_t kChunkBytes = cuda_tuning::kStagingBytes / 2;
  // One queued page: pairs in `recs`, or a lent buffer `chunk` of pages of `page_pairs` records
  // whose first fills[k] of page k are pairs.
  struct Item {
    std::vector<PairRecord> recs;
    char* chunk = nullptr;
    std::vector<unsigned> fills;
    size_t page_pairs = 0;
  };
  explicit PageQueue(size_t cap, size_t chunks = 0) : cap_(cap), max_chunks_(chunks) {
    // give_back runs in destructors: its push_back must not allocate.
    chunk_all_.reserve(chunks);
    free_chunks_.reserve(chunks);
  }
  // Frees the lent buffers (every user of them has finished: run_shares joins its workers).
  ~PageQueue() {
    for (char* b : chunk_all_) (void)cudaFreeHost(b);
  }
  PageQueue(const PageQueue&) = delete;
  PageQueue& operator=(const PageQueue&) = delete;
  // An empty page to fill: a consumed one with its capacity kept, or a new one.
  std::vector<PairRecord> spare() {
    std::lock_guard<std::mutex> lk(mu_);
    if (free_.empty()) return {};
    std::vector<PairRecord> page = std::move(free_.back());
    free_.pop_back();
    page.clear();
    return page;
  }
  // Keeps a consumed page for spare() (as many as the queue holds, the rest freed).
  void recycle(std::vector<PairRecord>&& page) {
    std::lock_guard<std::mutex> lk(mu_);
    if (free_.size() < cap_ + 2) free_.push_back(std::move(page));
  }
  // A pinned buffer of kChunkBytes for `bytes` (null when larger or the queue lends none): a free
  // one, a new one while fewer than `chunks` exist, else the first one returned (the wait goes
  // to LastRun::queue_wait_ms). Null too when pinned memory runs out with fewer than two
  // buffers made (the join holds two at once, so it could wait for ever on one): the join then
  // copies through its staging buffer. Throws Error(Interrupted) once the queue is closed.
  char* lend(size_t bytes) {
    if (bytes > kChunkBytes || max_chunks_ == 0) return nullptr;
    std::unique_lock<std::mutex> lk(mu_);
    if (free_chunks_.empty() && chunk_all_.size() < max_chunks_) {
      // Only the worker lends, so no other buffer is made meanwhile; the reader is not held up.
      lk.unlock();
      void* p = nullptr;
      const cudaError_t rc = cudaHostAlloc(&p, kChunkBytes, cudaHostAllocDefault);
      lk.lock();
      if (rc == cudaSuccess) {
        chunk_all_.push_back(static_cast<char*>(p));
        return static_cast<char*>(p);
      }
      (void)cudaGetLastError();          // an allocation failure is not sticky: clear it
      max_chunks_ = chunk_all_.size();   // lend the buffers made so far
    }
    if (free_chunks_.empty() && chunk_all_.size() < 2) return nullptr;
    if (!closed_ && free_chunks_.empty()) {
      const auto t0 = Clock::now();
      chunk_room_.wait(lk, [&] { return closed_ || !free_chunks_.empty(); });
      last_run().queue_wait_ms += seconds_since(t0) * 1e3;
    }
    if (closed_) throw Error(ErrorCode::Interrupted, "interrupted");
    char* b = free_chunks_.back();
    free_chunks_.pop_back();
    return b;
  }
  // Returns a lent buffer (read, or not used).
  void give_back(char* buf) {
    std::lock_guard<std::mutex> lk(mu_);
    free_chunks_.push_back(buf);
    chunk_room_.notify_one();
  }
  // Adds a page of pairs (see push(Item&&)).
  void push(std::vector<PairRecord>&& page) {
    Item it;
    it.recs = std::move(page);
    push(std::move(it));
  }
  // Adds a page (producer threads; their waits for room go to their LastRun::queue_wait_ms);
  // throws Error(Interrupted) once the queue is closed.
  void push(Item&& page) {
    std::unique_lock<std::mutex> lk(mu_);
    if (!closed_ && q_.size() >= cap_) {
      const auto t0 = Clock::now();
      room_.wait(lk, [&] { return closed_ || q_.size() < cap_; });
      last_run().queue_wait_ms += seconds_since(t0) * 1e3;
    }
    if (closed_) throw Error(ErrorCode::Interrupted, "interrupted");
    q_.push_back(std::move(page));
    ready_.notify_one();
  }
  // Takes a page, waiting up to `ms` milliseconds; false when none came.
  bool pop(Item* page, int ms) {
    std::unique_lock<std::mutex> lk(mu_);
    if (!ready_.wait_for(lk, std::chrono::milliseconds(ms), [&] { return !q_.empty(); }))
      return false;
    *page = std::move(q_.front());
    q_.pop_front();
    room_.notify_one();
    return true;
  }
  // Wakes and refuses every producer from now on.
  void close() {
    std::lock_guard<std::mutex> lk(mu_);
    closed_ = true;
    room_.notify_all();
    chunk_room_.notify_all();
  }
  // Hands the queued pages to `sink` on the calling thread (waiting up to 1 ms for each unless
  // `final`), enforcing max_pairs over `*emitted`; `sink_s` (if set) adds the sink's time. A
  // chunk goes as runs of contiguous records (full pages and the page after them), its buffer
  // then given back. Returns early when `ctl` has an interrupt pending (run_shares then cancels
  // the shares).
  void drain_to(PairSink& sink, uint64_t max_pairs, uint64_t* emitted, Control& ctl, bool final,
                double* sink_s) {
    Item page;
    while (pop(&page, final ? 0 : 1)) {
      if (page.chunk) {
        // The buffer goes back to the lender once read (also when the sink throws).
        struct Back {
          PageQueue& q;
          char* b;
          ~Back() { q.give_back(b); }
        } back{*this, page.chunk};
        page.chunk = nullptr;
        size_t total = 0;
        for (unsigned f : page.fills) total += f;
        if (max_pairs && *emitted + total > max_pairs) split::throw_too_many_pairs(max_pairs);
        *emitted += total;
        const size_t page_bytes = page.page_pairs * sizeof(PairRecord);
        const auto tm = Clock::now();
        for (size_t pg = 0; pg < page.fills.size();) {
          const size_t first = pg;
          size_t nrec = 0;
          while (pg < page.fills.size()) {
            nrec += page.fills[pg];
            if (page.fills[pg++] != page.page_pairs) break;
          }
          if (nrec)
            sink.consume(reinterpret_cast<const PairRecord*>(back.b + first * page_bytes), nrec);
        }
        if (sink_s) *sink_s += seconds_since(tm);
      } else {
        if (max_pairs && *emitted + page.recs.size() > max_pairs)
          split::throw_too_many_pairs(max_pairs);
        *emitted += page.recs.size();
        const auto tm = Clock::now();
        sink.consume(page.recs.data(), page.recs.size());
        if (sink_s) *sink_s += seconds_since(tm);
        recycle(std::move(page.recs));
      }
      if (!final && ctl.interrupt_pending()) return;
    }
  }

 private:
  std::mutex mu_;
  std::condition_variable room_, ready_, chunk_room_;
  std::deque<Item> q_;
  std::vector<std::vector<PairRecord>> free_;
  size_t cap_;
  size_t max_chunks_;
  std::vector<char*> chunk_all_, free_chunks_;
  bool closed_ = false;
};

// A device's sink for one slab's sub-join (whose pairs carry the input's indices: the slab's
// points carry them, PointsView::index): queues pages of up to kBatch pairs for the calling
// thread (flush() queues the rest), and lends the queue's pinned buffers to the batched join,
// whose drained chunks it queues as they are, after the pairs held back.
class QueueSink final : public ChunkSink {
 public:
  static constexpr size_t kBatch = size_t(1) << 16;
  explicit QueueSink(PageQueue& q) : q_(q), page_(q.spare()) { page_.reserve(kBatch); }
  // Buffers the pairs of one drained page, queueing every full batch.
  void consume(const PairRecord* pairs, size_t n) override {
    while (n > 0) {
      const size_t take = std::min(n, kBatch - page_.size());
      page_.insert(page_.end(), pairs, pairs + take);
      pairs += take;
      n -= take;
      if (page_.size() == kBatch) flush();
    }
  }
  // A pinned buffer of the queue (null when it lends none of that size).
  char* lend(size_t bytes) override { return q_.lend(bytes); }
  // Queues the pairs held back, then the chunk.
  void take(char* buf, const unsigned* fills, size_t pages, size_t page_pairs) override {
    PageQueue::Item it;
    it.chunk = buf;
    it.page_pairs = page_pairs;
    try {
      it.fills.assign(fills, fills + pages);
      flush();
      q_.push(std::move(it));
    } catch (...) {
      q_.give_back(buf);
      throw;
    }
  }
  // Returns a buffer to the queue.
  void give_back(char* buf) override { q_.give_back(buf); }
  // Queues the pairs held back.
  void flush() {
    if (page_.empty()) return;
    q_.push(std::move(page_));
    page_ = q_.spare();
    page_.reserve(kBatch);
  }

 private:
  PageQueue& q_;
  std::vector<PairRecord> page_;
};

// The join over several devices: slabs (one per device, more when one slab must fit the
// smallest share budget) taken by the devices from one counter; every device drains its
// result pages into the queue, and the calling thread alone hands them to `sink`.
void simjoin_shares(const SimjoinProblem& p, PairSink& sink, Control& ctl, const std::vector<int>& devs,
                    size_t budget) {
  auto t0 = Clock::now();
  split::SlabPlan fit = split::plan_slabs_for_budget(p, budget, ctl.threads);
  const split::SlabPlan plan = fit.slabs.size() >= devs.size()
                                   ? std::move(fit)
                                   : split::plan_slabs(p, int(devs.size()), ctl.threads);
  ctl.stats.prepare_s += seconds_since(t0);
  PageQueue queue(size_t(2) * devs.size() + 2);
  std::atomic<size_t> next{0};
  uint64_t emitted = 0;
  run_shares(
      ctl, devs, budget, 0,
      [&](Control& c, int) {
        ReuseScope keep(facts_for(c.device).device);  // buffers kept from slab to slab
        for (size_t s = next++; s < plan.slabs.size(); s = next++) {
          split::SlabJobs jobs;
          split::make_slab_jobs(p, plan, s, &jobs);
          if (jobs.has_inner) {
            QueueSink q(queue);
            cuda::simjoin(jobs.inner, q, c);
            q.flush();
          }
          if (jobs.has_cross) {
            QueueSink q(queue);
            cuda::simjoin(jobs.cross, q, c);
            q.flush();
          }
        }
        c.stats.slabs = plan.slabs.size();
      },
      [&](bool final) { queue.drain_to(sink, p.max_pairs, &emitted, ctl, final, nullptr); },
      [&] { queue.close(); }, 0);
}

// Result pages the one-device slab join may queue ahead of the sink (kBatch pairs each: 64 MiB
// of host memory), enough to cover a slab's upload, grid build and estimate at the sink's pace.
constexpr size_t kSlabQueuePages = 64;

// Pinned buffers of PageQueue::kChunkBytes the slab queue lends to the drains: the two the join
// copies into and one queued for the sink (the sink is the slower side, so more queued buffers
// do not shorten the join, and each is a pinned allocation of milliseconds per call).
constexpr size_t kSlabLentBuffers = 3;

// The join in slabs on one device: a worker thread runs the slabs' sub-joins one after another
// (split::slab_simjoin: the next slab's points gathered ahead) and queues their pages; the
// calling thread hands them to `sink` meanwhile, so the sink's work overlaps the next slabs'
// uploads, grid builds, estimates and kernels. The pairs reach the sink in the order of the
// serial slab loop. The batched join drains its banks straight into pinned buffers lent by the
// queue (QueueSink as a ChunkSink), so the worker copies no pairs on the host. Stats: prepare_s
// adds the plan (`plan_s`) to the worker's, merge_s is the calling thread's time in the sink (the
// worker's hand-offs and waits for room are left out).
void simjoin_slabs(const SimjoinProblem& p, const split::SlabPlan& plan, PairSink& sink, Control& ctl,
                   size_t budget, double plan_s) {
  PageQueue queue(kSlabQueuePages, kSlabLentBuffers);
  uint64_t emitted = 0;
  double sink_s = 0;
  const RunStats before = ctl.stats;  // run_shares merges the worker's times by maximum
  ctl.stats.prepare_s = 0;
  ctl.stats.merge_s = 0;
  run_shares(
      ctl, std::vector<int>{ctl.device}, budget, 0,
      [&](Control& c, int) {
        ReuseScope keep(facts_for(c.device).device);  // buffers kept from sub-join to sub-join
        QueueSink q(queue);
        split::slab_simjoin(
            p, plan, q,
            [&](const SimjoinProblem& sub, PairSink&) {
              // The sub-joins emit input indices (engine_maps) and drain_to enforces max_pairs,
              // so they write to the queue's sink itself, which lends the drains its buffers.
              const auto ts = Clock::now();
              cuda::simjoin(sub, q, c);
              last_run().subjoin_ms += seconds_since(ts) * 1e3;
            },
            true);
        q.flush();
        c.stats.slabs = plan.slabs.size();
      },
      [&](bool final) { queue.drain_to(sink, p.max_pairs, &emitted, ctl, final, &sink_s); },
      [&] { queue.close(); }, 0);
  ctl.stats.prepare_s += before.prepare_s + plan_s;
  ctl.stats.merge_s = before.merge_s + sink_s;
  ctl.stats.shares = before.shares;  // one device
}

}  // namespace

// ---- the engine ------------------------------------------------------------------------------

namespace {

// Runs the engine's one-device paths on `dev` for the scope (restores Control::device after).
class OnDevice {
 public:
  OnDevice(Control& ctl, int dev) : ctl_(ctl), old_(ctl.device) { ctl.device = dev; }
  ~OnDevice() { ctl_.device = old_; }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;

 private:
  Control& ctl_;
  int old_;
};

class CudaEngine final : public Engine {
  // Resolution (resolve.cu) for 2-D and 3-D sets of 2 .. 2^32 - 1 points when the setting
  // forces it or the cost model `wins` prefers it.
  template <class W>
  static bool use_resolve(const Control& ctl, const PointsView& pts, W wins) {
    if ((pts.dims != 2 && pts.dims != 3) || pts.n < 2 || pts.n > 0xFFFFFFFFull) return false;
    if (ctl.sdh_method == SdhMethod::Brute) return false;
    // A budget set below the in-memory request (admission, gpu2bs.gpu_memory_limit): the
    // all-pairs tiles, in blocks when the points do not fit.
    if (ctl.device_memory_limit &&
        ctl.device_memory_limit < admission::tiles_want_bytes(pts.n, pts.dims, Precision::Float32, 0))
      return false;
    return ctl.sdh_method == SdhMethod::Resolve || wins();
  }

 public:
  std::string name() const override { return "cuda (" + g_facts.name + ")"; }

  std::vector<uint64_t> sdh(const SdhProblem& p, Control& ctl) override {
    last_run() = LastRun();
    const std::vector<int> devs = call_devices(ctl);
    OnDevice on(ctl, devs[0]);
    if (devs.size() > 1 && p.pts.n >= 2 && !use_resolve(ctl, p.pts, [&] {
          return resolve_sdh_wins(p.pts.n, p.pts.dims, p.params.nbuckets);
        })) {
      // The tile pairs split across the devices; integer histograms added on the host.
      const size_t budget = min_share_budget(ctl, devs);
      const size_t block = shares_block(p.pts, p.prec, p.params.nbuckets, budget);
      std::vector<std::vector<uint64_t>> parts(devs.size());
      run_shares(ctl, devs, budget, block,
                 [&](Control& c, int k) { parts[size_t(k)] = cuda::sdh(p, c); },
                 [](bool) {}, [] {}, std::max(1, ctl.poll_ms));
      auto tm = Clock::now();
      std::vector<uint64_t> out(size_t(p.params.nbuckets), 0);
      for (const auto& h : parts)
        for (size_t b = 0; b < out.size(); ++b) out[b] += h[b];
      ctl.stats.pairs_examined -= (devs.size() - 1) * (uint64_t(p.pts.n) * (p.pts.n - 1) / 2);
      ctl.stats.merge_s += seconds_since(tm);
      return out;
    }
    if (use_resolve(ctl, p.pts, [&] {
          return resolve_sdh_wins(p.pts.n, p.pts.dims, p.params.nbuckets);
        })) {
      try {
        return resolve_sdh(p, ctl);
      } catch (const Error& e) {
        // Under a memory limit: the all-pairs path (in blocks if need be), the same counts.
        if (e.code() != ErrorCode::OutOfMemory || !ctl.device_memory_limit) throw;
        last_run() = LastRun();
      }
    }
    return cuda::sdh(p, ctl);
  }

  uint64_t pair_count(const PairCountProblem& p, Control& ctl) override {
    last_run() = LastRun();
    const std::vector<int> devs = call_devices(ctl);
    OnDevice on(ctl, devs[0]);
    // Several devices for the tiles count (forced, or where the grid does not apply); the grid
    // count and the resolution run on the first device.
    const bool tiles = ctl.overrides.count_path == 1 || !std::isfinite(p.r) || !(p.r > 0) ||
                       (p.pts.n < cuda_tuning::kGridCountMinPoints && ctl.overrides.count_path != 2);
    if (devs.size() > 1 && p.pts.n >= 2 && tiles && ctl.sdh_method != SdhMethod::Resolve) {
      const size_t budget = min_share_budget(ctl, devs);
      const size_t block = shares_block(p.pts, p.prec, 0, budget);
      std::vector<uint64_t> parts(devs.size(), 0);
      run_shares(ctl, devs, budget, block,
                 [&](Control& c, int k) { parts[size_t(k)] = cuda::pair_count(p, c); },
                 [](bool) {}, [] {}, std::max(1, ctl.poll_ms));
      uint64_t total = 0;
      for (uint64_t c : parts) total += c;
      // Every share counts all pairs as examined; the call examined each once.
      ctl.stats.pairs_examined -= (devs.size() - 1) * (uint64_t(p.pts.n) * (p.pts.n - 1) / 2);
      return total;
    }
    if (use_resolve(ctl, p.pts, [&] {
          const Bounds& box = p.box;
          double extent = 0;
          for (int k = 0; k < box.dims; ++k) extent = std::max(extent, box.hi[k] - box.lo[k]);
          return extent > 0 && resolve_count_wins(p.pts.n, p.pts.dims, p.r / extent);
        })) {
      try {
        return resolve_pair_count(p, ctl);
      } catch (const Error& e) {
        // Under a memory limit: the grid or the tiles (in blocks if need be), the same count.
        if (e.code() != ErrorCode::OutOfMemory || !ctl.device_memory_limit) throw;
        last_run() = LastRun();
      }
    }
    return cuda::pair_count(p, ctl);
  }

  // Joins that hand their pairs to the sink (no pushed-down filter or reduction) run in slabs
  // over several devices, or in slabs one after another on one device when the points and grid
  // exceed the budget; otherwise in memory on the first device.
  void simjoin(const SimjoinProblem& p, PairSink& sink, Control& ctl) override {
    last_run() = LastRun();
    const std::vector<int> devs = call_devices(ctl);
    OnDevice on(ctl, devs[0]);
    if (!p.filter && !p.stage && !p.reduce && p.a.n > 0 && p.b.n > 0) {
      const size_t budget = min_share_budget(ctl, devs);
      if (devs.size() > 1) return simjoin_shares(p, sink, ctl, devs, budget);
      auto t0 = Clock::now();
      const split::SlabPlan plan = split::plan_slabs_for_budget(p, budget, ctl.threads);
      const double plan_s = seconds_since(t0);
      if (plan.slabs.size() > 1) return simjoin_slabs(p, plan, sink, ctl, budget, plan_s);
      ctl.stats.prepare_s += plan_s;
    }
    cuda::simjoin(p, sink, ctl);
  }

  // Weighted SDH and pair count: the all-pairs weighted kernels (weights.cu), no resolution.
  WeightedCounts sdh_weighted(const SdhProblem& p, const double* w, Control& ctl) override {
    last_run() = LastRun();
    return cuda::sdh_weighted(p, w, ctl);
  }

  WeightedCounts pair_count_weighted(const PairCountProblem& p, const double* w,
                                     Control& ctl) override {
    last_run() = LastRun();
    return cuda::pair_count_weighted(p, w, ctl);
  }

  std::vector<uint64_t> rdf(const RdfProblem& p, Control& ctl) override {
    last_run() = LastRun();
    return cuda::rdf(p, ctl);
  }

  WeightedCounts rdf_weighted(const RdfProblem& p, const double* wa, const double* wb,
                              Control& ctl) override {
    last_run() = LastRun();
    return cuda::rdf_weighted(p, wa, wb, ctl);
  }

  // The join and the pair count over a periodic box (kernels/periodic.cu).
  void periodic_join(const PeriodicJoin& p, PairSink& sink, Control& ctl) override {
    last_run() = LastRun();
    cuda::periodic_join(p, &sink, ctl);
  }
  uint64_t periodic_count(const PeriodicJoin& p, Control& ctl) override {
    last_run() = LastRun();
    return cuda::periodic_join(p, nullptr, ctl);
  }

  // The pushed-down filter and reductions run in the join kernel (kernels/join/kernel.cu).
  bool applies_pair_filter() const override { return true; }
  bool reduces_pairs(PairReduce::Kind) const override { return true; }

  // Pair expressions: the generated `gpu2bs_pair` source compiled with NVRTC and run in the
  // tiled kernel families (kernels/expr/); device faults come back as PostgreSQL's errors.
  PairExprResult pair_expr(const PairExprProblem& p, PairSink* sink, Control& ctl) override {
    last_run() = LastRun();
    exprgpu::Job job;
    switch (p.kind) {
      case PairExprKind::Count: job.kind = exprgpu::Kind::Count; break;
      case PairExprKind::Sum: job.kind = exprgpu::Kind::Sum; break;
      case PairExprKind::Histogram: job.kind = exprgpu::Kind::Histogram; break;
      case PairExprKind::Join: job.kind = exprgpu::Kind::Join; break;
    }
    job.self = p.self;
    job.float32 = p.prec == Precision::Float32;
    job.a = exprgpu::Side{p.a.data, p.a.nulls, p.a.n, p.a.ncols};
    job.b = p.self ? job.a : exprgpu::Side{p.b.data, p.b.nulls, p.b.n, p.b.ncols};
    job.device_source = p.device_source.empty() ? generate_pair_source(*p.expr, p.kind, p.prec) : p.device_source;
    job.lo = p.lo;
    job.hi = p.hi;
    job.nbuckets = p.nbuckets;
    job.max_pairs = p.max_pairs;
    exprgpu::Result r = exprgpu::run(job, sink, ctl);
    if (r.error > 0 && r.error < kExprFaultCount) throw ExprError(ExprFault(r.error));
    if (r.error != 0)
      throw Error(ErrorCode::Internal, "pair expression kernel reported an unknown error code " + std::to_string(r.error));
    PairExprResult out;
    out.count = r.count;
    out.sum = r.sum;
    out.sum_has_inf = false;  // the device sum does not say; an infinite sum is reported as overflow
    out.hist = std::move(r.hist);
    return out;
  }

  bool pair_expr_available(std::string* why) const override { return exprgpu::nvrtc_available(why); }

  // DBSCAN on the device (kernels/join/dbscan.cu): only core flags and representatives return.
  bool dbscan_components(const SimjoinProblem& p, const int64_t* keys, int64_t minpoints,
                         DbscanComponents& out, Control& ctl) override {
    last_run() = LastRun();
    if (p.filter || p.stage || p.reduce || !p.self) return false;
    cuda::dbscan(p, keys, minpoints, out, ctl);
    return true;
  }

  void pairwise(const PairwiseProblem& p, PairSink& sink, Control& ctl) override {
    last_run() = LastRun();
    cuda::pairwise(p, sink, ctl);
  }
};

std::mutex g_init_mu;
bool g_init_tried = false;
std::string g_why;
std::unique_ptr<CudaEngine> g_engine;

// First use in this process: find a device, check it runs our code, remember the answer.
void initialize() {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    const char* what = e == cudaErrorInsufficientDriver ? "no CUDA driver"
                       : e == cudaErrorNoDevice         ? "no CUDA device"
                                                        : "CUDA unavailable";
    g_why = std::string(what) + ": cudaGetDeviceCount returned " + cudaGetErrorName(e);
    (void)cudaGetLastError();
    return;
  }
  if (count <= 0) {
    g_why = "no CUDA device: cudaGetDeviceCount found none";
    return;
  }
  DeviceFacts f;
  f.device = 0;
  e = cudaGetDeviceProperties(&f.prop, f.device);
  if (e != cudaSuccess) {
    g_why = std::string("CUDA unavailable: cudaGetDeviceProperties returned ") +
            cudaGetErrorName(e);
    (void)cudaGetLastError();
    return;
  }
  const int cc = f.prop.major * 10 + f.prop.minor;
  if (f.prop.major < 8) {
    g_why = std::string("GPU ") + f.prop.name + " has compute capability " +
            std::to_string(f.prop.major) + "." + std::to_string(f.prop.minor) +
            "; the CUDA engine needs 8.0 or newer";
    return;
  }
  f.sms = f.prop.multiProcessorCount;
  f.smem_per_sm = f.prop.sharedMemPerMultiprocessor;
  f.smem_per_block_optin = f.prop.sharedMemPerBlockOptin;
  f.smem_reserved = f.prop.reservedSharedMemPerBlock;
  f.name = std::string(f.prop.name) + ", sm_" + std::to_string(cc);
  // A probe kernel: the context starts and this build's code runs on the device.
  int* d = nullptr;
  int h = 0;
  auto fail = [&](cudaError_t err, const char* step) {
    g_why = std::string("CUDA probe failed on ") + f.prop.name + ": " + step + " returned " +
            cudaGetErrorName(err);
    (void)cudaGetLastError();
    if (d) (void)cudaFree(d);
  };
  if ((e = cudaSetDevice(f.device)) != cudaSuccess) return fail(e, "cudaSetDevice");
  if ((e = cudaMalloc(&d, sizeof(int))) != cudaSuccess) return fail(e, "cudaMalloc");
  probe_kernel<<<1, 32>>>(d);
  if ((e = cudaGetLastError()) != cudaSuccess) return fail(e, "probe kernel launch");
  if ((e = cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost)) != cudaSuccess)
    return fail(e, "cudaMemcpy");
  (void)cudaFree(d);
  d = nullptr;
  if (h != 0x2b5) {
    g_why = std::string("CUDA probe failed on ") + f.prop.name + ": wrong probe result";
    return;
  }
  g_facts = f;
  g_device_count = count;
  g_all_devices.clear();
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) == cudaSuccess && prop.major >= 8) g_all_devices.push_back(d);
  }
  (void)cudaGetLastError();
  g_engine.reset(new CudaEngine());
}

std::string mb(size_t bytes) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.1f", double(bytes) / (1024.0 * 1024.0));
  return buf;
}

std::string version(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

}  // namespace
}  // namespace cuda

Engine* cuda_engine(std::string* why) {
  std::lock_guard<std::mutex> lk(cuda::g_init_mu);
  if (!cuda::g_init_tried) {
    cuda::g_init_tried = true;
    try {
      cuda::initialize();
    } catch (const std::exception& e) {
      cuda::g_why = std::string("CUDA initialization failed: ") + e.what();
      cuda::g_engine.reset();
    }
  }
  if (!cuda::g_engine && why) *why = cuda::g_why;
  return cuda::g_engine.get();
}

InfoRows cuda_info() {
  InfoRows rows;
  std::string why;
  if (!cuda_engine(&why)) return rows;
  const auto& f = cuda::g_facts;
  rows.emplace_back("gpu_device", f.prop.name);
  rows.emplace_back("gpu_sm_count", std::to_string(f.sms));
  rows.emplace_back("gpu_compute_capability",
                    std::to_string(f.prop.major) + "." + std::to_string(f.prop.minor));
  size_t free_b = 0, total_b = 0;
  if (cudaSetDevice(f.device) == cudaSuccess && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
    rows.emplace_back("gpu_memory_total_mb", cuda::mb(total_b));
    rows.emplace_back("gpu_memory_free_mb", cuda::mb(free_b));
  } else {
    (void)cudaGetLastError();
    rows.emplace_back("gpu_memory_total_mb", cuda::mb(f.prop.totalGlobalMem));
  }
  rows.emplace_back("gpu_memory_in_use_mb", cuda::mb(cuda::engine_bytes_in_use()));
  int drv = 0, rt = 0;
  if (cudaDriverGetVersion(&drv) == cudaSuccess) rows.emplace_back("cuda_driver_version", cuda::version(drv));
  if (cudaRuntimeGetVersion(&rt) == cudaSuccess) rows.emplace_back("cuda_runtime_version", cuda::version(rt));
  (void)cudaGetLastError();
  rows.emplace_back("cublas", cuda::pairwise_blas_status());
  rows.emplace_back("pairwise_last_path", cuda::pairwise_last_path());
  // Every device of the machine: name, SMs, memory, and whether gpu2bs.devices = all uses it.
  rows.emplace_back("gpu_device_count", std::to_string(cuda::g_device_count));
  for (int d = 0; d < cuda::g_device_count; ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;
    }
    const bool used = std::find(cuda::g_all_devices.begin(), cuda::g_all_devices.end(), d) !=
                      cuda::g_all_devices.end();
    rows.emplace_back("gpu_device_" + std::to_string(d),
                      std::string(prop.name) + ", " + std::to_string(prop.multiProcessorCount) +
                          " SMs, " + cuda::mb(prop.totalGlobalMem) + " MB, compute capability " +
                          std::to_string(prop.major) + "." + std::to_string(prop.minor) +
                          (used ? "" : " (not usable: needs 8.0)"));
  }
  return rows;
}

bool built_with_cuda() { return true; }

// The device's whole memory (cudaDeviceProp::totalGlobalMem), 0 without a usable GPU.
size_t cuda_device_memory() {
  std::string why;
  if (!cuda_engine(&why)) return 0;
  return cuda::g_facts.prop.totalGlobalMem;
}

std::vector<int> cuda_device_ordinals() {
  std::string why;
  if (!cuda_engine(&why)) return {};
  if (!cuda::g_all_devices.empty()) return cuda::g_all_devices;
  return {cuda::g_facts.device};
}

InfoRows expr_compiler_info() { return exprgpu::nvrtc_info(); }

}  // namespace gpu2bs
