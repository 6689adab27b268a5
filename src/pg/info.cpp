// gpu2bs_info(): which engine answers and why, threads, precision, the GPU if any, and the
// timings of this backend's last run.
#include "pg.h"

extern "C" {
#include "funcapi.h"
#include "utils/builtins.h"
}

#include <thread>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "../core/cpu_kernels.h"
#include "../core/error.h"
#include "admission.h"
#include "settings.h"

using namespace gpu2bs;
using namespace gpu2bs::pg;

// gpu2bs_info() RETURNS TABLE(name text, value text)
GPU2BS_FUNCTION(gpu2bs_info) {
  InfoRows rows;
  rows.emplace_back("version", GPU2BS_VERSION);
  std::string reason;
  try {
    Engine* eng = choose_engine(&reason);
    rows.emplace_back("engine", eng->name());
  } catch (const Error& e) {
    rows.emplace_back("engine", std::string("none: ") + e.what());
    reason = e.detail();
  }
  rows.emplace_back("engine_reason", reason);
  rows.emplace_back("cuda_build", built_with_cuda() ? "yes" : "no");
  rows.emplace_back("cpu_isa", cpu_kernels().isa);
  rows.emplace_back("cpu_threads", std::to_string(PgControl().threads));
  rows.emplace_back("cpu_cores", std::to_string(std::thread::hardware_concurrency()));
  rows.emplace_back("precision", current_precision() == Precision::Float32 ? "float4" : "float8");
  for (auto& r : cuda_info()) rows.push_back(r);
  for (auto& r : expr_compiler_info()) rows.push_back(r);
#ifdef __GLIBC__
  // Bytes the C allocator has handed out and not taken back in this backend (every arena,
  // mmapped chunks included; free memory the allocator keeps for reuse excluded).
  struct mallinfo2 mi = mallinfo2();
  rows.emplace_back("backend_malloc_in_use_bytes", std::to_string(mi.uordblks + mi.hblkhd));
#endif
  for (auto& r : admission_rows()) rows.push_back(r);
  for (auto& r : last_run_rows()) rows.push_back(r);
  ReturnSetInfo* rsinfo = (ReturnSetInfo*)fcinfo->resultinfo;
  const auto* data = rows.data();
  const size_t n = rows.size();
  pg_guard([&] {
    InitMaterializedSRF(fcinfo, 0);
    for (size_t i = 0; i < n; ++i) {
      Datum values[2] = {CStringGetTextDatum(data[i].first.c_str()),
                         CStringGetTextDatum(data[i].second.c_str())};
      bool nulls[2] = {false, false};
      tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
  });
  return (Datum)0;
}
