// NVRTC at run time and the per-process module cache of the pair-expression kernels
// (kernels/expr/nvrtc.cu). NVRTC is opened with dlopen at first use (never linked); compiled
// images are loaded with the CUDA runtime's context-independent library API
// (cudaLibraryLoadData / cudaLibraryGetKernel), so the extension needs neither libnvrtc nor
// libcuda at link time.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <memory>
#include <string>

namespace gpu2bs {
namespace exprgpu {
namespace detail {

// A loaded module: the library, its kernel `g2_kernel` and, where the source defines it, the
// histogram's edge kernel `g2_edges`; or, for the second program of a threshold-table
// histogram (G2_PART 2), its kernels `g2_check` and `g2_tables` alone. Unloaded when the last
// holder (the cache, a running call) lets it go.
struct Module {
  cudaLibrary_t lib = nullptr;
  cudaKernel_t kernel = nullptr;
  cudaKernel_t edges = nullptr;
  cudaKernel_t check = nullptr;   // G2_PART 2 sources: g2_check and g2_tables
  cudaKernel_t tables = nullptr;
  // G2_PART 2 sources: the outcome of g2_check on this module (0 not run yet, 1 F non-decreasing,
  // 2 F non-increasing, 3 not monotone or not free of faults, NULLs and NaN: no table).
  mutable std::atomic<int> table_state{0};
  std::string target;  // "sm_90" (CUBIN) or "compute_90" (PTX, JIT-compiled by the driver)
  ~Module();
};

// The module for `source` on the device of compute capability `arch` (major * 10 + minor),
// compiled with NVRTC's --Ofast-compile=`fast_compile` ("" for none; the bench override
// replaces it): from the cache, or compiled with NVRTC and loaded (then cached; the least
// recently used module is unloaded beyond kCacheModules). The level is part of the key.
// *compile_ms: NVRTC compile plus load time of this call (0 on a hit); *hit: found in the
// cache. Throws Error(DeviceUnavailable) without NVRTC, Error(Internal) with the compile log
// when the source does not compile.
std::shared_ptr<const Module> module_for(const std::string& source, int arch,
                                         const std::string& fast_compile, double* compile_ms,
                                         bool* hit);

// Most modules kept loaded per process.
constexpr size_t kCacheModules = 64;

// Cached modules now (tests).
size_t cached_modules();

// Tile configuration override for benchmarks (threads per block, rows per thread; 0: the
// default of each precision). Not used by the SQL layer.
void set_tile_override(int threads, int rows_per_thread);
// The tile configuration of a call: the override, else the default of its precision, or of a
// threshold-table histogram (`table`).
void get_tile_config(bool float32, int* threads, int* rows_per_thread, bool table = false);
// NVRTC --Ofast-compile level override for benchmarks ("" none, "min", ...; null: the level
// each call asks for, see expr_gpu.cu). Part of the module cache key.
void set_fast_compile_override(const char* level);
// The level a compile asking for `wanted` gets (the override, where one is set).
std::string fast_compile_level(const std::string& wanted);
// Test and benchmark hook: 1 gives every call the compact tile loop (G2_COMPACT), 0 none, -1
// (the default) the choice each call makes by kind and compile level (expr_gpu.cu).
void set_compact_override(int mode);
int compact_override();
// Test and benchmark hook: false turns the histogram threshold table off (every pair evaluates
// gpu2bs_pair and its bucket), true (the default) lets calls use it where it applies.
void set_histogram_table(bool on);
// Tests: true makes threshold-table histograms use the kernel with the climb (the cell entries
// of kExprTableCells linear cells) even where every folded cell holds at most one threshold.
void set_table_climb(bool on);

}  // namespace detail
}  // namespace exprgpu
}  // namespace gpu2bs
