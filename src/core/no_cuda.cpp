// Linked instead of kernels/ when the build found no nvcc: the CUDA engine is absent and the
// CPU engine answers every query.
#include "engine.h"

namespace gpu2bs {

// No CUDA engine in this build.
Engine* cuda_engine(std::string* why) {
  if (why) *why = "this build has no CUDA engine (nvcc was not found when it was compiled)";
  return nullptr;
}

// No GPU facts to report.
InfoRows cuda_info() { return {}; }

// This build has no CUDA engine.
bool built_with_cuda() { return false; }

// No run-time compiler in this build: pair expressions run on the CPU.
InfoRows expr_compiler_info() { return {{"nvrtc", "not built (no CUDA engine in this build)"}}; }

}  // namespace gpu2bs
