// gpu2bs.* settings (GUCs) and the choice of engine they imply.
#pragma once

#include <string>

#include "../core/engine.h"

namespace gpu2bs {
class PagePipe;
namespace pg {

enum DeviceSetting { DEVICE_AUTO = 0, DEVICE_CPU = 1, DEVICE_GPU = 2 };
enum PrecisionSetting { PRECISION_FLOAT4 = 0, PRECISION_FLOAT8 = 1 };

extern int device_setting;
extern int precision_setting;
extern int cpu_threads_setting;       // 0: every core
extern double max_result_rows_setting;  // 0: unlimited
extern int gpu_memory_limit_setting;  // MB, 0: 90% of free device memory
extern int result_page_setting;       // pairs per result page
extern int join_balance_setting;      // JoinBalance
extern int join_threads_per_point_setting;  // GPU join lanes per query point (0: automatic)
extern int pairwise_precision_setting;  // PairwisePrecision: exact or fast (gpu_pairwise)
extern int sdh_method_setting;        // SdhMethod
extern bool enable_join_setting;      // gpu2bs.enable_join: the planner's join path
extern bool direct_scan_setting;      // gpu2bs.direct_scan: the direct heap reader (heap_read.cpp)
extern char* devices_setting;         // gpu2bs.devices: "all" or a list of GPU ordinals

// Registers the settings (from _PG_init).
void define_settings();

// Precision chosen by gpu2bs.precision.
Precision current_precision();

// The engine that answers now, with the reason for the choice. Throws
// Error(DeviceUnavailable) for gpu2bs.device = gpu without a usable GPU.
Engine* choose_engine(std::string* reason);

// The engine that runs pair expressions: choose_engine's, except that with gpu2bs.device = auto
// a GPU without NVRTC leaves them to the CPU engine. Throws Error(DeviceUnavailable) for
// gpu2bs.device = gpu when the GPU cannot run them.
Engine* choose_expr_engine(std::string* reason);

// Control with the settings applied and query cancel wired to PostgreSQL's interrupt flags.
class PgControl : public Control {
 public:
  PgControl();
  bool interrupt_pending() override;
};

// Control of an engine running on a page pipe's thread (pipelined scans): stops when the pipe
// stops, or on query cancel.
class PipeControl final : public PgControl {
 public:
  explicit PipeControl(const PagePipe* pipe) : pipe_(pipe) {}
  bool interrupt_pending() override;

 private:
  const PagePipe* pipe_;
};

// How a relation form read its relations (gpu2bs_info(): last_scan_path).
enum ScanPath { SCAN_DIRECT = 1, SCAN_SPI = 2 };
// "direct", "spi" or "direct, spi" for ScanPath bits `path` (nonzero).
const char* scan_path_name(int path);
// Notes how the call's relations were read (ScanPath bits) for the next recorded run.
void note_scan_path(int path);
// Notes how many out-of-line vectors the direct reader assembled from TOAST pages and how many
// it read through detoast_attr (gpu2bs_info(): last_toast_values_*) for the next recorded run.
void note_toast_reads(int64 toast_pages, int64 detoasted);

// Remembers the last run of this backend (for gpu2bs_info()).
void record_run(const std::string& function, const std::string& engine, const RunStats& stats);
InfoRows last_run_rows();

}  // namespace pg
}  // namespace gpu2bs
