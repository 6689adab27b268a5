// gpu2bs.* settings, engine choice, and the Control that polls PostgreSQL's interrupt flags.
#include "pg.h"

extern "C" {
#include "access/parallel.h"
#include "pgstat.h"
#include "storage/proc.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
}

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <thread>

#include "../core/error.h"
#include "../core/pipeline.h"
#include "../core/split.h"
#include "settings.h"

namespace gpu2bs {
namespace pg {

int device_setting = DEVICE_AUTO;
int precision_setting = PRECISION_FLOAT4;
int cpu_threads_setting = 0;
double max_result_rows_setting = 1e9;
int gpu_memory_limit_setting = 0;
int result_page_setting = 16384;
int join_balance_setting = int(JoinBalance::Auto);
int join_threads_per_point_setting = 0;
int pairwise_precision_setting = 0;
int sdh_method_setting = int(SdhMethod::Auto);
bool enable_join_setting = true;
bool direct_scan_setting = true;
char* devices_setting = nullptr;

namespace {

const struct config_enum_entry device_options[] = {
    {"auto", DEVICE_AUTO, false}, {"cpu", DEVICE_CPU, false}, {"gpu", DEVICE_GPU, false},
    {nullptr, 0, false}};

const struct config_enum_entry precision_options[] = {
    {"float4", PRECISION_FLOAT4, false}, {"float8", PRECISION_FLOAT8, false},
    {"float32", PRECISION_FLOAT4, true}, {"float64", PRECISION_FLOAT8, true},
    {nullptr, 0, false}};

const struct config_enum_entry balance_options[] = {
    {"auto", int(JoinBalance::Auto), false},
    {"workqueue", int(JoinBalance::WorkQueue), false},
    {"cell", int(JoinBalance::Cell), false},
    {"sortbywl", int(JoinBalance::SortByWorkload), false},
    {nullptr, 0, false}};

const struct config_enum_entry pairwise_precision_options[] = {
    {"exact", 0, false}, {"fast", 1, false}, {nullptr, 0, false}};
const struct config_enum_entry sdh_method_options[] = {
    {"auto", int(SdhMethod::Auto), false},
    {"brute", int(SdhMethod::Brute), false},
    {"resolve", int(SdhMethod::Resolve), false},
    {nullptr, 0, false}};

// GUC check hook of gpu2bs.join_threads_per_point: 0 (automatic) or a power of two up to 32
// (the join kernel is instantiated for those; a warp step holds 32 / k query points).
bool check_threads_per_point(int* newval, void** /*extra*/, GucSource /*source*/) {
  const int k = *newval;
  if (k == 0 || k == 1 || k == 2 || k == 4 || k == 8 || k == 16 || k == 32) return true;
  GUC_check_errdetail("gpu2bs.join_threads_per_point must be 0 (automatic), 1, 2, 4, 8, 16 or 32.");
  return false;
}

// True when a gpu2bs.devices value is "all" (any case, spaces ignored).
bool devices_all(const char* v) {
  std::string t;
  for (const char* c = v; *c; ++c)
    if (!isspace((unsigned char)*c)) t += char(tolower((unsigned char)*c));
  return t == "all";
}

// GUC check hook of gpu2bs.devices: "all" or a comma list of distinct device ordinals (whether
// each exists is checked when a GPU call runs: the hook never initializes CUDA).
bool check_devices(char** newval, void** /*extra*/, GucSource /*source*/) {
  std::vector<int> d;
  std::string err;
  if (*newval && (devices_all(*newval) || split::parse_devices(*newval, 1 << 20, &d, &err))) return true;
  GUC_check_errdetail("gpu2bs.devices must be \"all\" or a comma list of distinct device ordinals such as \"0,1\": %s.",
                      *newval ? err.c_str() : "no value");
  return false;
}

// GUC check hook of gpu2bs.max_result_rows: a whole number of rows (a fraction such as 0.5 would
// truncate to 0, which means no limit).
bool check_max_result_rows(double* newval, void** /*extra*/, GucSource /*source*/) {
  if (*newval == std::floor(*newval)) return true;
  GUC_check_errdetail("gpu2bs.max_result_rows must be a whole number of rows (0 means no limit).");
  return false;
}

struct LastRun {
  char function[64];
  char engine[128];
  RunStats stats;
  TimestampTz at;  // when the run ended
  int scan_path;   // ScanPath bits of the relations the call read (0: none read by a relation form)
  int64 toast_pages;  // out-of-line values the direct reader assembled from TOAST pages
  int64 detoasted;    // values it read through detoast_attr
  bool valid;
} last_run = {};

// ScanPath bits of the relation reads since the last recorded run.
int pending_scan_path = 0;
// The direct vector reader's value counts since the last recorded run.
int64 pending_toast_pages = 0, pending_detoasted = 0;

// A run in a parallel worker (the whole aggregate below a single-copy Gather, or a sub-plan run
// by workers) is handed to the leader through a small file in the data directory, named after
// the leader's PID: the worker exits with the query and has no other channel back that does not
// need the library preloaded. The leader's gpu2bs_info() adopts it when it is newer than its own
// last run and not older than the leader itself (a file left by an earlier backend with the same
// PID), and removes it. Plain POSIX calls: nothing here raises a PostgreSQL error.
void worker_record_path(char* buf, size_t cap, int leader_pid) {
  snprintf(buf, cap, "%s/gpu2bs-last-run.%d", PG_STAT_TMP_DIR, leader_pid);
}

// In a parallel worker: writes `run` for the leader (write to a temporary name, then rename).
void hand_to_leader(const LastRun& run) {
  if (!IsParallelWorker() || !MyProc || !MyProc->lockGroupLeader) return;
  char path[MAXPGPATH], tmp[MAXPGPATH + 16];
  worker_record_path(path, sizeof path, MyProc->lockGroupLeader->pid);
  snprintf(tmp, sizeof tmp, "%s.%d", path, MyProcPid);
  const int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, S_IRUSR | S_IWUSR);
  if (fd < 0) return;
  const bool ok = write(fd, &run, sizeof run) == ssize_t(sizeof run);
  close(fd);
  if (!ok || rename(tmp, path) != 0) unlink(tmp);
}

// In the leader: adopts a worker's run handed over since this backend's own last run.
void adopt_from_workers() {
  char path[MAXPGPATH];
  worker_record_path(path, sizeof path, MyProcPid);
  const int fd = open(path, O_RDONLY);
  if (fd < 0) return;
  LastRun run;
  const bool ok = read(fd, &run, sizeof run) == ssize_t(sizeof run);
  close(fd);
  unlink(path);
  if (!ok || !run.valid || run.at < MyStartTimestamp || (last_run.valid && run.at <= last_run.at)) return;
  run.function[sizeof run.function - 1] = '\0';
  run.engine[sizeof run.engine - 1] = '\0';
  last_run = run;
}

}  // namespace

void define_settings() {
  DefineCustomEnumVariable("gpu2bs.device", "Engine for two-body statistics: auto, cpu or gpu.",
                           "auto uses the GPU when one is usable and the CPU engine otherwise; "
                           "gpu raises an error when no GPU is usable.",
                           &device_setting, DEVICE_AUTO, device_options, PGC_USERSET, 0, nullptr,
                           nullptr, nullptr);
  DefineCustomEnumVariable("gpu2bs.precision", "Arithmetic precision of distances: float4 or float8.",
                           "float4 rounds coordinates to float4 and computes in float4 (the "
                           "default); float8 computes in float8.",
                           &precision_setting, PRECISION_FLOAT4, precision_options, PGC_USERSET, 0,
                           nullptr, nullptr, nullptr);
  DefineCustomIntVariable("gpu2bs.cpu_threads", "Worker threads of the CPU engine (0: one per core).",
                          nullptr, &cpu_threads_setting, 0, 0, 1024, PGC_USERSET, 0, nullptr,
                          nullptr, nullptr);
  DefineCustomRealVariable("gpu2bs.max_result_rows",
                           "Largest similarity join result before it is stopped with an error (0: no limit).",
                           "A whole number of rows from 0 to 1e15; 0 means no limit.",
                           &max_result_rows_setting, 1e9, 0, 1e15, PGC_USERSET, 0,
                           check_max_result_rows, nullptr, nullptr);
  DefineCustomIntVariable("gpu2bs.gpu_memory_limit",
                          "Device memory the GPU engine may allocate per query (0: 90% of free memory).",
                          nullptr, &gpu_memory_limit_setting, 0, 0, 16 * 1024 * 1024, PGC_USERSET,
                          GUC_UNIT_MB, nullptr, nullptr, nullptr);
  DefineCustomStringVariable("gpu2bs.devices",
                             "GPUs one query uses: all, or a comma list of device ordinals.",
                             "SDH and pair count by tiles split their tile pairs across the devices "
                             "and add the integer counts; the similarity join splits its points "
                             "into slabs with an eps halo, joined on the devices.",
                             &devices_setting, "all", PGC_USERSET, 0, check_devices, nullptr, nullptr);
  DefineCustomEnumVariable("gpu2bs.join_balance",
                           "Load balancing of the similarity join: auto, workqueue, cell or sortbywl.",
                           "Similarity-join load-imbalance paper. GPU (work items of up to 32 rows "
                           "of one grid cell, taken by warps): workqueue sorts the items by "
                           "estimated workload, largest first, and hands them out from one atomic "
                           "queue (WORKQUEUE, section III-D); sortbywl sorts them the same way and "
                           "assigns them statically (SORTBYWL, section III-C); cell keeps cell "
                           "order with static assignment (GPUCALCGLOBAL baseline, section II-C3). "
                           "auto (default) is cell on the GPU and workqueue on the CPU, the fastest end to end "
                           "of the strategies in the join benchmarks (docs/settings.md).",
                           &join_balance_setting, int(JoinBalance::Auto), balance_options,
                           PGC_USERSET, 0, nullptr, nullptr, nullptr);
  DefineCustomIntVariable("gpu2bs.join_threads_per_point",
                          "GPU similarity join: lanes sharing one query point (0: automatic).",
                          "k of the similarity-join load-imbalance paper, section III-A: 1, 2, 4, "
                          "8, 16 or 32 lanes compare one query point with k candidates at a time; "
                          "0 picks k from the workload estimate (kernels/tuning.h).",
                          &join_threads_per_point_setting, 0, 0, 32, PGC_USERSET, 0,
                          check_threads_per_point, nullptr, nullptr);
  DefineCustomEnumVariable("gpu2bs.pairwise_precision",
                           "gpu_pairwise arithmetic on the GPU: exact or fast.",
                           "exact computes every pair in float32 in a fixed order (the same bits "
                           "on the CPU and the GPU); fast (l2, sqeuclidean, cosine, dot on a GPU "
                           "with cuBLAS) ranks by a TF32 tensor-core GEMM, re-ranks the candidates "
                           "with the exact arithmetic and recomputes exactly every row whose "
                           "candidate set an error bound cannot certify, so it returns what exact "
                           "returns. The CPU engine always computes exactly.",
                           &pairwise_precision_setting, 0, pairwise_precision_options, PGC_USERSET,
                           0, nullptr, nullptr, nullptr);
  DefineCustomEnumVariable("gpu2bs.sdh_method",
                           "Method of gpu_sdh and gpu_pair_count: auto, brute or resolve.",
                           "brute computes every pair (all-pairs tiles; the pair count may use "
                           "its grid); resolve walks a density map of the points (2-D and 3-D) "
                           "and counts whole cell pairs whose distance range provably falls in "
                           "one bucket, or on one side of r, computing only the other pairs; "
                           "auto (default) chooses by each engine's cost model. Every method "
                           "gives the same counts.",
                           &sdh_method_setting, int(SdhMethod::Auto), sdh_method_options,
                           PGC_USERSET, 0, nullptr, nullptr, nullptr);
  DefineCustomIntVariable("gpu2bs.result_page_pairs",
                          "Pairs per result page of the similarity join (bounds buffered results).",
                          nullptr, &result_page_setting, 16384, 64, 1 << 24, PGC_USERSET, 0,
                          nullptr, nullptr, nullptr);
  DefineCustomBoolVariable("gpu2bs.enable_join",
                           "Offers the planner a gpu2bs join for inner joins of two tables whose join "
                           "quals are all pair expressions (distance predicates by the grid-indexed "
                           "similarity join).",
                           "Off: PostgreSQL plans such joins as it does without gpu2bs.",
                           &enable_join_setting, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
  DefineCustomBoolVariable("gpu2bs.direct_scan",
                           "Reads the relations of the relation forms (gpu_simjoin, gpu_sdh(rel), "
                           "gpu_pair_count(rel), gpu_rdf, gpu_dbscan, gpu_pairwise) straight from the "
                           "heap pages where that gives exactly the rows of the SQL query.",
                           "Off: every relation is read by an SQL query through SPI.",
                           &direct_scan_setting, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
}

Precision current_precision() {
  return precision_setting == PRECISION_FLOAT8 ? Precision::Float64 : Precision::Float32;
}

Engine* choose_engine(std::string* reason) {
  static std::unique_ptr<Engine> cpu = make_cpu_engine();
  if (device_setting == DEVICE_CPU) {
    *reason = "gpu2bs.device = cpu";
    return cpu.get();
  }
  std::string why;
  Engine* gpu = cuda_engine(&why);
  if (gpu) {
    *reason = device_setting == DEVICE_GPU ? "gpu2bs.device = gpu" : "gpu2bs.device = auto and a GPU is usable";
    return gpu;
  }
  if (device_setting == DEVICE_GPU)
    throw Error(ErrorCode::DeviceUnavailable, "no usable GPU", why,
                "Set gpu2bs.device = auto or cpu to use the CPU engine.");
  *reason = "gpu2bs.device = auto and no GPU: " + why;
  return cpu.get();
}

Engine* choose_expr_engine(std::string* reason) {
  Engine* eng = choose_engine(reason);
  std::string why;
  if (eng->pair_expr_available(&why)) return eng;
  if (device_setting == DEVICE_GPU)
    throw Error(ErrorCode::DeviceUnavailable, "the GPU cannot run pair expressions", why,
                "Set gpu2bs.device = auto or cpu to use the CPU engine.");
  static std::unique_ptr<Engine> cpu = make_cpu_engine();
  *reason = "gpu2bs.device = auto and pair expressions cannot run on the GPU: " + why;
  return cpu.get();
}

PgControl::PgControl() {
  threads = cpu_threads_setting > 0 ? cpu_threads_setting
                                    : int(std::max(1u, std::thread::hardware_concurrency()));
  page_pairs = size_t(result_page_setting);
  device_memory_limit = size_t(gpu_memory_limit_setting) * 1024 * 1024;
  join_balance = JoinBalance(join_balance_setting);
  join_threads_per_point = join_threads_per_point_setting;
  sdh_method = SdhMethod(sdh_method_setting);
  // "all" leaves the list empty (every usable device); the check hook accepted the text.
  std::string err;
  if (devices_setting && !devices_all(devices_setting) &&
      !split::parse_devices(devices_setting, 1 << 20, &devices, &err))
    devices.clear();
}

// Cancel, statement timeout and termination requests (read only; processed at the boundary).
bool PgControl::interrupt_pending() { return QueryCancelPending || ProcDiePending; }

// The pipe's stop, then query cancel.
bool PipeControl::interrupt_pending() { return pipe_->stopping() || PgControl::interrupt_pending(); }

// The name of ScanPath bits `path` as gpu2bs_info() and EXPLAIN show it.
const char* scan_path_name(int path) {
  return path == SCAN_DIRECT ? "direct" : path == SCAN_SPI ? "spi" : "direct, spi";
}

// Keeps `path` for the next record_run.
void note_scan_path(int path) { pending_scan_path = path; }

// Keeps the direct vector reader's value counts for the next record_run.
void note_toast_reads(int64 toast_pages, int64 detoasted) {
  pending_toast_pages = toast_pages;
  pending_detoasted = detoasted;
}

void record_run(const std::string& function, const std::string& engine, const RunStats& stats) {
  snprintf(last_run.function, sizeof last_run.function, "%s", function.c_str());
  snprintf(last_run.engine, sizeof last_run.engine, "%s", engine.c_str());
  last_run.stats = stats;
  last_run.at = GetCurrentTimestamp();
  last_run.scan_path = pending_scan_path;
  pending_scan_path = 0;
  last_run.toast_pages = pending_toast_pages;
  last_run.detoasted = pending_detoasted;
  pending_toast_pages = pending_detoasted = 0;
  last_run.valid = true;
  hand_to_leader(last_run);
}

InfoRows last_run_rows() {
  InfoRows rows;
  adopt_from_workers();
  if (!last_run.valid) return rows;
  char buf[64];
  auto ms = [&](double s) {
    snprintf(buf, sizeof buf, "%.3f", s * 1e3);
    return std::string(buf);
  };
  rows.emplace_back("last_function", last_run.function);
  rows.emplace_back("last_engine", last_run.engine);
  rows.emplace_back("last_scan_ms", ms(last_run.stats.scan_s));
  if (last_run.scan_path != 0)
    rows.emplace_back("last_scan_path", scan_path_name(last_run.scan_path));
  if (last_run.toast_pages + last_run.detoasted > 0) {
    rows.emplace_back("last_toast_values_from_pages", std::to_string(last_run.toast_pages));
    rows.emplace_back("last_toast_values_detoasted", std::to_string(last_run.detoasted));
  }
  rows.emplace_back("last_prepare_ms", ms(last_run.stats.prepare_s));
  rows.emplace_back("last_transfer_ms", ms(last_run.stats.transfer_s));
  rows.emplace_back("last_kernel_ms", ms(last_run.stats.kernel_s));
  rows.emplace_back("last_merge_ms", ms(last_run.stats.merge_s));
  rows.emplace_back("last_pairs_examined", std::to_string(last_run.stats.pairs_examined));
  rows.emplace_back("last_pairs_emitted", std::to_string(last_run.stats.pairs_emitted));
  rows.emplace_back("last_block_points", std::to_string(last_run.stats.block_points));
  rows.emplace_back("last_block_pairs", std::to_string(last_run.stats.block_pairs));
  rows.emplace_back("last_devices", std::to_string(std::max<uint64_t>(1, last_run.stats.shares)));
  rows.emplace_back("last_slabs", std::to_string(last_run.stats.slabs));
  return rows;
}

}  // namespace pg
}  // namespace gpu2bs
