// CUDA-free declarations of the GPU all-pairs vectors (kernels/pairwise/pairwise.cu) for the
// engine, tests and benchmarks.
#pragma once

#include <cstddef>
#include <string>

#include "core/engine.h"
#include "core/pairwise.h"

namespace gpu2bs {
namespace cuda {

// The GPU all-pairs computation (CudaEngine::pairwise).
void pairwise(const PairwiseProblem& p, PairSink& sink, Control& ctl);

// cuBLAS for the fast path: "available: libcublas.so.13 (version ...)" or "unavailable: why".
// The first call loads it (dlopen) and creates the handle.
std::string pairwise_blas_status();

// What the last pairwise call on this thread did (tests and benchmarks read it).
struct PairwiseLastRun {
  bool fast = false;        // the TF32 path answered (cuBLAS loaded, metric with a GEMM form)
  bool cpu = false;         // k above the device list capacity: the CPU engine answered
  size_t recomputed = 0;    // fast path: rows recomputed exactly (certificate failed)
};
PairwiseLastRun& pairwise_last_run();

}  // namespace cuda
}  // namespace gpu2bs
