// Linked instead of kernels/ when the build found no nvcc: the CUDA engine is absent and the
// CPU engine answers every query.
#include "engine.h"
#include "error.h"
#include "../../kernels/expr/expr_gpu.h"

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

// No GPU in this build.
size_t cuda_device_memory() { return 0; }

std::vector<int> cuda_device_ordinals() { return {}; }

namespace exprgpu {

// No GPU to run pair expressions on in this build.
Result run(const Job&, PairSink*, Control&) {
  throw Error(ErrorCode::DeviceUnavailable, "no usable GPU",
              "this build has no CUDA engine (nvcc was not found when it was compiled)");
}

// No NVRTC in a build without the CUDA engine.
bool nvrtc_available(std::string* why) {
  if (why) *why = "this build has no CUDA engine";
  return false;
}

// No NVRTC facts to report.
InfoRows nvrtc_info() { return {}; }

}  // namespace exprgpu

// No run-time compiler in this build: pair expressions run on the CPU.
InfoRows expr_compiler_info() { return {{"nvrtc_library", "not built (no CUDA engine in this build)"}}; }

}  // namespace gpu2bs
