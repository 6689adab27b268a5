// NVRTC opened at run time (dlopen, never linked) and the per-process cache of compiled
// pair-expression modules, keyed by the whole kernel source (generated function, precision,
// kind, columns, NULL layout and tile configuration are all in it) and the device's compute
// capability. Loaded with cudaLibraryLoadData, unloaded least recently used first beyond
// kCacheModules.
#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "../common.cuh"
#include "expr_gpu.h"
#include "nvrtc_cache.h"

#ifndef GPU2BS_CUDA_HOME
#define GPU2BS_CUDA_HOME "/usr/local/cuda"
#endif

namespace gpu2bs {
namespace exprgpu {
namespace detail {

namespace {

// The NVRTC entry points used, declared here so no NVRTC header or library is needed to build.
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;
constexpr nvrtcResult kNvrtcSuccess = 0;
constexpr nvrtcResult kNvrtcErrorInvalidOption = 5;  // NVRTC_ERROR_INVALID_OPTION

struct Nvrtc {
  void* handle = nullptr;
  std::string path;     // the file opened
  int major = 0, minor = 0;
  std::vector<int> archs;  // compute capabilities NVRTC compiles CUBIN for (empty: unknown)
  const char* (*GetErrorString)(nvrtcResult) = nullptr;
  nvrtcResult (*Version)(int*, int*) = nullptr;
  nvrtcResult (*CreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                               const char* const*) = nullptr;
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetPTX)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*DestroyProgram)(nvrtcProgram*) = nullptr;
  nvrtcResult (*GetNumSupportedArchs)(int*) = nullptr;
  nvrtcResult (*GetSupportedArchs)(int*) = nullptr;
};

std::mutex g_nvrtc_mu;
bool g_nvrtc_tried = false;
Nvrtc g_nvrtc;
std::string g_nvrtc_why;

// Resolves `name` into `fn`; false (and `why` set) when the library lacks it.
template <typename F>
bool resolve(void* h, const char* name, F* fn, std::string* why) {
  *fn = reinterpret_cast<F>(dlsym(h, name));
  if (!*fn && why) *why = std::string("the NVRTC library has no ") + name;
  return *fn != nullptr;
}

// Opens the first NVRTC library found: the sonames of CUDA 13 and 12, the unversioned name,
// then lib64/ of $CUDA_HOME, $CUDA_PATH and the toolkit this extension was built with.
void open_nvrtc() {
  std::vector<std::string> names = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
  for (const char* env : {"CUDA_HOME", "CUDA_PATH"}) {
    const char* v = std::getenv(env);
    if (v && *v) names.push_back(std::string(v) + "/lib64/libnvrtc.so");
  }
  names.push_back(std::string(GPU2BS_CUDA_HOME) + "/lib64/libnvrtc.so");
  std::string errors;
  void* h = nullptr;
  for (const auto& n : names) {
    h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h) break;
    const char* e = dlerror();
    if (errors.empty() && e) errors = e;
  }
  if (!h) {
    g_nvrtc_why = "NVRTC not found (tried libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so and "
                  "lib64/ of the CUDA toolkit): " + errors;
    return;
  }
  Nvrtc n;
  n.handle = h;
  std::string why;
  const bool ok = resolve(h, "nvrtcGetErrorString", &n.GetErrorString, &why) &&
                  resolve(h, "nvrtcVersion", &n.Version, &why) &&
                  resolve(h, "nvrtcCreateProgram", &n.CreateProgram, &why) &&
                  resolve(h, "nvrtcCompileProgram", &n.CompileProgram, &why) &&
                  resolve(h, "nvrtcGetPTXSize", &n.GetPTXSize, &why) &&
                  resolve(h, "nvrtcGetPTX", &n.GetPTX, &why) &&
                  resolve(h, "nvrtcGetProgramLogSize", &n.GetProgramLogSize, &why) &&
                  resolve(h, "nvrtcGetProgramLog", &n.GetProgramLog, &why) &&
                  resolve(h, "nvrtcDestroyProgram", &n.DestroyProgram, &why);
  if (!ok) {
    g_nvrtc_why = why;
    dlclose(h);
    return;
  }
  // CUBIN output and the architecture list are newer than NVRTC itself: optional.
  resolve(h, "nvrtcGetCUBINSize", &n.GetCUBINSize, nullptr);
  resolve(h, "nvrtcGetCUBIN", &n.GetCUBIN, nullptr);
  resolve(h, "nvrtcGetNumSupportedArchs", &n.GetNumSupportedArchs, nullptr);
  resolve(h, "nvrtcGetSupportedArchs", &n.GetSupportedArchs, nullptr);
  if (n.Version(&n.major, &n.minor) != kNvrtcSuccess) {
    g_nvrtc_why = "nvrtcVersion failed";
    dlclose(h);
    return;
  }
  int na = 0;
  if (n.GetNumSupportedArchs && n.GetSupportedArchs && n.GetNumSupportedArchs(&na) == kNvrtcSuccess &&
      na > 0) {
    n.archs.resize(size_t(na));
    if (n.GetSupportedArchs(n.archs.data()) != kNvrtcSuccess) n.archs.clear();
  }
  Dl_info info{};
  n.path = dladdr(reinterpret_cast<void*>(n.Version), &info) && info.dli_fname ? info.dli_fname
                                                                                 : "libnvrtc";
  g_nvrtc = n;
}

// The opened NVRTC, or null with `why` set.
const Nvrtc* nvrtc(std::string* why) {
  std::lock_guard<std::mutex> lk(g_nvrtc_mu);
  if (!g_nvrtc_tried) {
    g_nvrtc_tried = true;
    open_nvrtc();
  }
  if (!g_nvrtc.handle) {
    if (why) *why = g_nvrtc_why;
    return nullptr;
  }
  return &g_nvrtc;
}

// Throws Error(Internal) naming a failed NVRTC call, its file and line and NVRTC's error name.
void check_nvrtc(const Nvrtc& n, nvrtcResult r, const char* expr, const char* file, int line) {
  if (r == kNvrtcSuccess) return;
  const char* s = n.GetErrorString ? n.GetErrorString(r) : "unknown";
  throw Error(ErrorCode::Internal,
              std::string("NVRTC error ") + s + " in " + expr + " at kernels/expr/nvrtc.cu:" +
                  std::to_string(line),
              {}, {}, file, line, nullptr);
}
#define G2_NVRTC(n, expr) check_nvrtc((n), (expr), #expr, __FILE__, __LINE__)

// ---- the cache -----------------------------------------------------------------------------

struct Cache {
  std::mutex mu;
  // Most recently used first; the map points into the list.
  std::list<std::pair<std::string, std::shared_ptr<const Module>>> lru;
  std::unordered_map<std::string, decltype(lru)::iterator> index;
  unsigned long long compiled = 0, hits = 0, evicted = 0;
  double last_ms = 0, total_ms = 0;
  double last_nvrtc_ms = 0, last_load_ms = 0;  // the last compile's NVRTC and load parts
  std::string last_target;
};

// Never destroyed: unloading at process exit would race the CUDA runtime's own teardown.
Cache& cache() {
  static Cache* c = new Cache();
  return *c;
}

int g_tile_threads = 0, g_tile_rows = 0;
const char* g_fast_compile = nullptr;  // bench override of the level (null: none)
std::atomic<int> g_compact{-1};         // bench override of the compact tile loop (-1: none)

// Compiles `source` for `arch` into a loaded module (no cache); *nvrtc_ms = the NVRTC part
// (program creation, compile, image), *load_ms = cudaLibraryLoadData and the kernel lookup.
std::shared_ptr<Module> compile(const Nvrtc& n, const std::string& source, int arch, const std::string& fast,
                                double* nvrtc_ms, double* load_ms) {
  const auto t0 = std::chrono::steady_clock::now();
  // CUBIN for the device when NVRTC knows its architecture; else PTX for the newest virtual
  // architecture NVRTC has at or below it, compiled by the driver at load time.
  bool cubin = n.GetCUBIN && n.GetCUBINSize;
  int target = arch;
  if (cubin && !n.archs.empty()) {
    bool known = false;
    int below = 0;
    for (int a : n.archs) {
      if (a == arch) known = true;
      if (a <= arch && a > below) below = a;
    }
    if (!known) {
      cubin = false;
      if (below == 0)
        throw Error(ErrorCode::DeviceUnavailable,
                    "NVRTC cannot compile for this GPU",
                    "NVRTC " + std::to_string(n.major) + "." + std::to_string(n.minor) +
                        " has no architecture at or below sm_" + std::to_string(arch) + ".");
      target = below;
    }
  }
  const std::string arch_opt =
      std::string("--gpu-architecture=") + (cubin ? "sm_" : "compute_") + std::to_string(target);
  std::vector<const char*> opts = {arch_opt.c_str(), "-std=c++17",      "--fmad=false",
                                   "--ftz=false",    "--prec-div=true", "--prec-sqrt=true",
                                   "-default-device"};
  // --Ofast-compile exists from NVRTC 12.8 on; an older one compiles at the full level.
  const std::string fast_opt = "--Ofast-compile=" + fast;
  const bool has_fast = n.major > 12 || (n.major == 12 && n.minor >= 8);
  if (!fast.empty() && has_fast) opts.push_back(fast_opt.c_str());
  // -minimal (NVRTC 12.4 and later) leaves out the texture, surface, device-runtime and CUDA
  // API declarations the program does not use: a shorter front end, the same CUBIN. An NVRTC
  // that rejects the option compiles the program again without it, and the process stops
  // passing it.
  static std::atomic<bool> minimal_refused{false};
  const bool minimal = (n.major > 12 || (n.major == 12 && n.minor >= 4)) &&
                       !minimal_refused.load(std::memory_order_relaxed);
  if (minimal) opts.push_back("-minimal");
  nvrtcProgram prog = nullptr;
  struct Guard {
    const Nvrtc& n;
    nvrtcProgram* p;
    ~Guard() {
      if (*p) (void)n.DestroyProgram(p);
    }
  } guard{n, &prog};
  G2_NVRTC(n, n.CreateProgram(&prog, source.c_str(), "gpu2bs_pair.cu", 0, nullptr, nullptr));
  nvrtcResult r = n.CompileProgram(prog, int(opts.size()), opts.data());
  if (r == kNvrtcErrorInvalidOption && minimal) {
    minimal_refused.store(true, std::memory_order_relaxed);
    opts.pop_back();
    (void)n.DestroyProgram(&prog);
    prog = nullptr;
    G2_NVRTC(n, n.CreateProgram(&prog, source.c_str(), "gpu2bs_pair.cu", 0, nullptr, nullptr));
    r = n.CompileProgram(prog, int(opts.size()), opts.data());
  }
  if (r != kNvrtcSuccess) {
    size_t ls = 0;
    std::string log;
    if (n.GetProgramLogSize(prog, &ls) == kNvrtcSuccess && ls > 1) {
      log.resize(ls);
      if (n.GetProgramLog(prog, &log[0]) != kNvrtcSuccess) log.clear();
      while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    }
    if (log.size() > 8000) log = log.substr(0, 8000) + "\n...";
    throw Error(ErrorCode::Internal, "pair expression kernel does not compile",
                std::string("NVRTC: ") + n.GetErrorString(r) + (log.empty() ? "" : "\n" + log));
  }
  std::vector<char> image;
  size_t size = 0;
  if (cubin) {
    G2_NVRTC(n, n.GetCUBINSize(prog, &size));
    image.resize(size);
    G2_NVRTC(n, n.GetCUBIN(prog, image.data()));
  } else {
    G2_NVRTC(n, n.GetPTXSize(prog, &size));
    image.resize(size);
    G2_NVRTC(n, n.GetPTX(prog, image.data()));
  }
  const auto t1 = std::chrono::steady_clock::now();
  auto m = std::make_shared<Module>();
  m->target = (cubin ? "sm_" : "compute_") + std::to_string(target);
  G2_CUDA(cudaLibraryLoadData(&m->lib, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  const bool tables = source.find("#define G2_PART 2\n") != std::string::npos;
  if (!tables) G2_CUDA(cudaLibraryGetKernel(&m->kernel, m->lib, "g2_kernel"));
  if (source.find("#define G2_EDGES 1\n") != std::string::npos &&
      cudaLibraryGetKernel(&m->edges, m->lib, "g2_edges") != cudaSuccess) {
    (void)cudaGetLastError();
    m->edges = nullptr;
  }
  if (tables) {
    G2_CUDA(cudaLibraryGetKernel(&m->check, m->lib, "g2_check"));
    G2_CUDA(cudaLibraryGetKernel(&m->tables, m->lib, "g2_tables"));
  }
  *nvrtc_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  *load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
  return m;
}

}  // namespace

// Unloads the library (the last holder let it go).
Module::~Module() {
  if (lib) (void)cudaLibraryUnload(lib);
}

std::shared_ptr<const Module> module_for(const std::string& source, int arch,
                                         const std::string& fast_compile, double* compile_ms,
                                         bool* hit) {
  std::string why;
  const Nvrtc* n = nvrtc(&why);
  if (!n)
    throw Error(ErrorCode::DeviceUnavailable, "NVRTC is not available", why,
                "Install the CUDA runtime compiler (libnvrtc), or use gpu2bs.device = cpu.");
  const std::string fast = fast_compile_level(fast_compile);
  std::string key = "sm_" + std::to_string(arch) + " O" + fast + "\n" + source;
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lk(c.mu);
    auto f = c.index.find(key);
    if (f != c.index.end()) {
      c.lru.splice(c.lru.begin(), c.lru, f->second);
      ++c.hits;
      *compile_ms = 0;
      *hit = true;
      return f->second->second;
    }
  }
  // Compiled outside the lock: NVRTC takes a while and another thread may need other modules.
  const auto t0 = std::chrono::steady_clock::now();
  double nvrtc_ms = 0, load_ms = 0;
  std::shared_ptr<const Module> m = compile(*n, source, arch, fast, &nvrtc_ms, &load_ms);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::lock_guard<std::mutex> lk(c.mu);
  ++c.compiled;
  c.last_ms = ms;
  c.total_ms += ms;
  c.last_nvrtc_ms = nvrtc_ms;
  c.last_load_ms = load_ms;
  c.last_target = m->target;
  *compile_ms = ms;
  *hit = false;
  auto f = c.index.find(key);
  if (f != c.index.end()) {  // compiled meanwhile by another thread: keep one
    c.lru.splice(c.lru.begin(), c.lru, f->second);
    return f->second->second;
  }
  c.lru.emplace_front(std::move(key), m);
  c.index[c.lru.front().first] = c.lru.begin();
  while (c.lru.size() > kCacheModules) {  // a running call keeps its module alive
    c.index.erase(c.lru.back().first);
    c.lru.pop_back();
    ++c.evicted;
  }
  return m;
}

size_t cached_modules() {
  std::lock_guard<std::mutex> lk(cache().mu);
  return cache().lru.size();
}

void set_tile_override(int threads, int rows_per_thread) {
  g_tile_threads = threads;
  g_tile_rows = rows_per_thread;
}

void set_fast_compile_override(const char* level) { g_fast_compile = level; }

// Sets the compact-loop override (negative: none, 0 off, positive on).
void set_compact_override(int mode) { g_compact.store(mode < 0 ? -1 : (mode > 0 ? 1 : 0)); }

// The compact-loop override: -1 none, 0 off, 1 on.
int compact_override() { return g_compact.load(); }

std::string fast_compile_level(const std::string& wanted) {
  return g_fast_compile ? g_fast_compile : wanted;
}

void get_tile_config(bool float32, int* threads, int* rows_per_thread, bool table) {
  *threads = g_tile_threads > 0 ? g_tile_threads
             : table            ? cuda_tuning::kExprTableThreads
                                : cuda_tuning::kExprThreads;
  *rows_per_thread = g_tile_rows > 0 ? g_tile_rows
                     : table         ? cuda_tuning::kExprTableRegRows
                     : float32       ? cuda_tuning::kExprRegRows
                                     : cuda_tuning::kExprRegRowsF64;
}

}  // namespace detail

bool nvrtc_available(std::string* why) { return detail::nvrtc(why) != nullptr; }

InfoRows nvrtc_info() {
  InfoRows rows;
  std::string why;
  const detail::Nvrtc* n = detail::nvrtc(&why);
  if (!n) {
    rows.emplace_back("nvrtc_library", "unavailable: " + why);
    return rows;
  }
  rows.emplace_back("nvrtc_library", n->path + " (NVRTC " + std::to_string(n->major) + "." +
                                         std::to_string(n->minor) + ")");
  detail::Cache& c = detail::cache();
  std::lock_guard<std::mutex> lk(c.mu);
  char buf[64];
  rows.emplace_back("nvrtc_modules_compiled", std::to_string(c.compiled));
  rows.emplace_back("nvrtc_cache_hits", std::to_string(c.hits));
  rows.emplace_back("nvrtc_cache_modules", std::to_string(c.lru.size()) + " of " +
                                               std::to_string(detail::kCacheModules));
  snprintf(buf, sizeof buf, "%.1f", c.last_ms);
  rows.emplace_back("nvrtc_compile_ms_last", buf);
  snprintf(buf, sizeof buf, "nvrtc %.1f, load %.1f", c.last_nvrtc_ms, c.last_load_ms);
  rows.emplace_back("nvrtc_compile_split_ms_last", buf);
  snprintf(buf, sizeof buf, "%.1f", c.total_ms);
  rows.emplace_back("nvrtc_compile_ms_total", buf);
  if (!c.last_target.empty()) rows.emplace_back("nvrtc_target", c.last_target);
  return rows;
}

}  // namespace exprgpu
}  // namespace gpu2bs
