// NVRTC at run time and the per-process module cache of the pair-expression kernels
// (kernels/expr/nvrtc.cu). NVRTC is opened with dlopen at first use (never linked); compiled
// images are loaded with the CUDA runtime's context-independent library API
// (cudaLibraryLoadData / cudaLibraryGetKernel), so the extension needs neither libnvrtc nor
// libcuda at link time.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <string>

namespace gpu2bs {
namespace exprgpu {
namespace detail {

// A loaded module: the library, its kernel `g2_kernel` and, where the source defines it, the
// histogram's edge kernel `g2_edges`. Unloaded when the last holder (the cache, a running call)
// lets it go.
struct Module {
  cudaLibrary_t lib = nullptr;
  cudaKernel_t kernel = nullptr;
  cudaKernel_t edges = nullptr;
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
void get_tile_config(bool float32, int* threads, int* rows_per_thread);
// NVRTC --Ofast-compile level override for benchmarks ("" none, "min", ...; null: the level
// each call asks for, see expr_gpu.cu). Part of the module cache key.
void set_fast_compile_override(const char* level);

}  // namespace detail
}  // namespace exprgpu
}  // namespace gpu2bs
