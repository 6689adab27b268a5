// User-defined pair expressions on the GPU (expr_gpu.h): assembles the kernel source around the
// generated gpu2bs_pair (kernel_text.h), gets the module from the NVRTC cache (nvrtc.cu),
// uploads the sides and runs the tile kernel in slices of tile pairs, polling for cancel between
// launches, then collects the kind's output:
//   Count      the 64-bit counter;
//   Sum        each item's (sum, comp) partial, folded on the host in item order with
//              Neumaier's compensated summation, the sum = sum + comp at the end (a NaN or
//              infinite sum as it is);
//   Histogram  the 64-bit histogram;
//   Join       each slice's direct output buffer, handed to the sink a page at a time on the
//              calling thread; a slice whose pairs overflow the buffer runs again in pieces.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <deque>
#include <future>

#include "../common.cuh"
#include "core/pair_expr.h"
#include "expr_gpu.h"
#include "kernel_text.h"
#include "nvrtc_cache.h"

namespace gpu2bs {
namespace exprgpu {

namespace {

using cuda::Call;
using cuda::Clock;
using cuda::seconds_since;

// What the kernel source is specialized on (besides the generated function).
struct Config {
  bool float32 = false;
  Kind kind = Kind::Count;
  bool self = false;
  int na = 0, nb = 0;          // columns of a and b
  bool nulls_a = false, nulls_b = false;
  int threads = 128, rows = 2;  // block size, register rows per thread
  bool edges = false;           // Histogram: buckets through the edge table (hist_plan)
  bool table = false;           // Histogram: value = F(g) through the threshold table of g
  bool safe = false;            // G2_SAFE: every input value within safe_inputs' bounds
  bool compact = false;         // G2_COMPACT: one tile loop (no full-tile specialization)
  bool climb = false;           // G2_CLIMB: the table's linear cells with the climb
};

// True when every value of the side, rounded to float32, is 0, NaN or of magnitude within
// [2^-kPairExprSafeExponent, 2^kPairExprSafeExponent] (the generated g then drops the overflow
// and underflow checks that cannot fire for such values).
bool safe_inputs(const Side& s) {
  const float lo = std::ldexp(1.0f, -kPairExprSafeExponent), hi = std::ldexp(1.0f, kPairExprSafeExponent);
  const size_t m = size_t(s.ncols) * size_t(s.n);
  for (size_t k = 0; k < m; ++k) {
    const float a = std::fabs(float(s.data[k]));
    if (!(a == 0.0f || a != a || (a >= lo && a <= hi))) return false;
  }
  return true;
}

// set_histogram_table's switch.
std::atomic<bool> g_table_on{true};
// set_table_climb's switch.
std::atomic<bool> g_table_climb{false};

// The folded cell map of kernel_text.h (g2_cell) for the thresholds of a table, and its cells.
struct FoldMap {
  float c = 0, w = 0;
  int s = 0, kb = 0, cells = 0;
};

// g2_cell on the host (the same float operations, rounded to nearest).
int fold_cell(float x, const FoldMap& m) {
  const float d = x - m.c;
  const int hb = std::max(m.kb << m.s, 1);
  float hmin;
  std::memcpy(&hmin, &hb, 4);
  const float h = std::fmax(m.w - std::fabs(d), hmin);
  int bits;
  std::memcpy(&bits, &h, 4);
  const int q = bits >> m.s;
  return d < 0.f ? q - m.kb : m.cells - 1 + m.kb - q;
}

// The coarsest folded map (fewest cells, at most max_cells) whose cells each hold at most one
// of the finite thresholds ts[1 .. nb + 1], centred on their range; false when none does (the
// device checks the chosen map again while it builds the entries).
bool choose_fold_map(const std::vector<float>& ts, int max_cells, FoldMap* out) {
  std::vector<float> fin;
  for (size_t k = 1; k + 1 < ts.size(); ++k)
    if (std::isfinite(ts[k])) fin.push_back(ts[k]);
  if (fin.empty()) return false;
  const float ga = fin.front(), gb = fin.back();
  FoldMap m;
  m.c = float(0.5 * (double(ga) + double(gb)));
  m.w = std::nextafter(float(std::max(double(gb) - double(m.c), double(m.c) - double(ga))), INFINITY);
  if (!std::isfinite(m.w)) return false;
  int top;
  std::memcpy(&top, &m.w, 4);
  for (int s = 23; s >= 0; --s) {
    m.s = s;
    int lo = top >> s;
    for (float t : fin) {
      const float h = std::fmax(m.w - std::fabs(t - m.c), std::numeric_limits<float>::denorm_min());
      int bits;
      std::memcpy(&bits, &h, 4);
      lo = std::min(lo, bits >> s);
    }
    m.kb = std::max(lo, (top >> s) - max_cells / 2 + 1);
    m.cells = 2 * ((top >> s) - m.kb + 1);
    bool ok = true;
    int prev = -1;
    for (size_t k = 0; k < fin.size() && ok; ++k) {
      const int p = fold_cell(fin[k], m);
      ok = p > prev;
      prev = p;
    }
    if (ok) {
      *out = m;
      return true;
    }
  }
  return false;
}

// The histogram's bucket computation without the float64 division (kernel_text.h, g2_visit):
// q_scale = nbuckets / (hi - lo) and q_off = -lo * q_scale as real, and the bound q_tol on
// |fl(v * q_scale + q_off) - Q| over the counted v (|v| <= max(|lo|, |hi|)), Q = nbuckets *
// (v - lo) / (hi - lo) exactly. The error terms, with u the unit roundoff of real: q_scale
// and q_off rounded (u |v| Q', u |lo| Q', Q' = nbuckets / (hi - lo)), the fused multiply-add
// rounded (u |t| <= u (nbuckets + 1)), and the float64 quotient's own rounding (four
// operations, below 2^-30 for the bucket counts allowed). Used where q_tol < 1/4 and
// nbuckets <= kExprHistEdgesMaxBuckets.
struct HistPlan {
  bool use = false;
  double q_scale = 0, q_off = 0, q_tol = 0;
};

// The job's HistPlan (use = false: the float64 quotient per pair).
HistPlan hist_plan(const Job& job) {
  HistPlan h;
  if (job.kind != Kind::Histogram || job.nbuckets < 1 ||
      job.nbuckets > cuda_tuning::kExprHistEdgesMaxBuckets)
    return h;
  const double u = job.float32 ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53);
  const double span = job.hi - job.lo;
  const double nbd = double(job.nbuckets);
  h.q_scale = nbd / span;
  h.q_off = -job.lo * h.q_scale;
  const double m = std::max(std::fabs(job.lo), std::fabs(job.hi));
  h.q_tol = 1.01 * u * (2.0 * m * h.q_scale + nbd + 2.0) + std::ldexp(1.0, -30);
  h.use = std::isfinite(h.q_scale) && std::isfinite(h.q_off) && h.q_tol < 0.25;
  return h;
}

// The full source NVRTC compiles: configuration macros, prelude, generated function, kernel.
// `part`: 0 the whole program, 1 a threshold-table histogram's tile kernel alone, 2 its check
// and table kernels alone (two programs, compiled side by side).
std::string assemble_source(const Config& c, const std::string& device_source, int part = 0) {
  std::string s;
  s.reserve(device_source.size() + 12000);
  s += c.float32 ? "typedef float real;\n" : "typedef double real;\n";
  auto def = [&](const char* name, long long v) {
    s += "#define ";
    s += name;
    s += " ";
    s += std::to_string(v);
    s += "\n";
  };
  def("G2_F32", c.float32 ? 1 : 0);
  def("G2_KIND", int(c.kind));
  def("G2_SELF", c.self ? 1 : 0);
  def("G2_NA", c.na);
  def("G2_NB", c.nb);
  def("G2_NULLS_A", c.nulls_a ? 1 : 0);
  def("G2_NULLS_B", c.nulls_b ? 1 : 0);
  def("G2_B", c.threads);
  def("G2_RT", c.rows);
  def("G2_HIST_NAN", kHistogramNaN);
  def("G2_EDGES", c.edges ? 1 : 0);
  def("G2_TABLE", c.table ? 1 : 0);
  def("G2_SAFE", c.safe ? 1 : 0);
  def("G2_PART", part);
  def("G2_COMPACT", c.compact ? 1 : 0);
  def("G2_CELLS", cuda_tuning::kExprTableCells);
  def("G2_CLIMB", c.climb ? 1 : 0);
  s += text::kPrelude;
  s += "#line 1 \"gpu2bs_pair\"\n";
  s += device_source;
  s += "\n#line 1 \"gpu2bs_kernel\"\n";
  s += text::kKernel;
  return s;
}

// The kernel's parameter block: G2Args of kernel_text.h, member for member.
struct Args {
  const void* a;
  const unsigned char* an;
  long long na;
  const void* b;
  const unsigned char* bn;
  long long nb;
  long long ta, tb;
  long long item0, count, per_block;
  int* error;
  unsigned long long* counter;
  double2* partial;
  unsigned long long* hist;
  double lo, hi, span, nbd;
  int nbuckets, copies, stride;
  void* out;
  unsigned long long cap;
  const void* edges;
  double q_scale, q_off, q_tol;
  const float* tab_ts;
  const unsigned* tab_ce;
  const float* tab_par;
  int tab_dec;
  int tab_bytes;
  int tab_cells;
  float tm_c, tm_w;
  int tm_s, tm_kb;
};

// (s, c) += x, Neumaier's compensated summation (the device's g2_nadd).
inline void nadd(double& s, double& c, double x) {
  const double t = s + x;
  if (std::fabs(s) >= std::fabs(x))
    c += (s - t) + x;
  else
    c += (x - t) + s;
  s = t;
}

// True when any of the `cols` x n flags is set.
bool any_null(const Side& s, int cols) {
  if (!s.nulls) return false;
  const size_t m = size_t(cols) * size_t(s.n);
  for (size_t k = 0; k < m; ++k)
    if (s.nulls[k]) return true;
  return false;
}

// Uploads `cols` columns of side s, converted to T (round to nearest), column-major; and its
// NULL flags when `nulls`. Returns the device columns; *dn = the device flags or null.
template <typename T>
const T* upload_side(Call& call, const Side& s, int cols, bool nulls, const unsigned char** dn) {
  *dn = nullptr;
  const size_t m = size_t(cols) * size_t(s.n);
  if (m == 0) return nullptr;
  auto t0 = Clock::now();
  T* d = call.alloc<T>(m, "pair expression columns");
  std::vector<T> host(m);
  for (size_t k = 0; k < m; ++k) host[k] = static_cast<T>(s.data[k]);
  call.ctl.stats.prepare_s += seconds_since(t0);
  cuda::upload_bytes(call, d, host.data(), m * sizeof(T));
  if (nulls) {
    unsigned char* dnul = call.alloc<unsigned char>(m, "pair expression null flags");
    cuda::upload_bytes(call, dnul, s.nulls, m);
    *dn = dnul;
  }
  return d;
}

// Checks the job's shape before anything runs.
void check_job(const Job& job) {
  const Side& b = job.self ? job.a : job.b;
  for (const Side* s : {&job.a, &b}) {
    if (s->n < 0 || s->ncols < 0 || (s->n > 0 && s->ncols > 0 && !s->data))
      throw Error(ErrorCode::Internal, "pair expression side without data");
    if (s->n > int64_t(0xFFFFFFFFll))
      throw Error(ErrorCode::ProgramLimit, "too many rows for a pair expression",
                  "A side has " + std::to_string(s->n) + " rows; the GPU engine takes at most " +
                      "4294967295.");
  }
  if (job.kind == Kind::Histogram &&
      (job.nbuckets < 1 || !(job.lo < job.hi) || !std::isfinite(job.lo) || !std::isfinite(job.hi)))
    throw Error(ErrorCode::Internal, "pair expression histogram with bad bounds");
  if (job.device_source.empty()) throw Error(ErrorCode::Internal, "pair expression without source");
}

// Runs g2_check of a G2_TABLE module over every float of g's domain ([+0, +inf] with
// `nonneg`, else [-inf, +inf]) and returns Module::table_state's outcome.
int table_check(Call& call, const detail::Module& mod, bool nonneg) {
  unsigned* flags = call.alloc<unsigned>(1, "table check flags");
  G2_CUDA(cudaMemsetAsync(flags, 0, sizeof(unsigned), call.stream()));
  const unsigned long long klo = nonneg ? 0x80000000ull : 0x007fffffull, khi = 0xff800000ull;
  const unsigned chunk = 256;
  const unsigned long long threads = (khi - klo + 1 + chunk - 1) / chunk;
  const int bt = 256;
  unsigned ch = chunk;
  void* params[] = {&ch, &flags};
  G2_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(mod.check), dim3(unsigned((threads + bt - 1) / bt)),
                           dim3(bt), params, 0, call.stream()));
  unsigned f = 0;
  cuda::download(call, &f, flags, sizeof f);
  if (f & 4u) return 3;
  if (!(f & 1u)) return 1;
  if (!(f & 2u)) return 2;
  return 3;
}

}  // namespace

namespace detail {
void set_histogram_table(bool on) { g_table_on.store(on); }
void set_table_climb(bool on) { g_table_climb.store(on); }
}  // namespace detail

Result run(const Job& job, PairSink* sink, Control& ctl) {
  std::string why;
  if (!cuda_engine(&why)) throw Error(ErrorCode::DeviceUnavailable, "no usable GPU", why);
  check_job(job);
  const Side& A = job.a;
  const Side& B = job.self ? job.a : job.b;
  Result res;
  if (job.kind == Kind::Histogram) res.hist.assign(size_t(job.nbuckets), 0);
  if (A.n == 0 || B.n == 0 || (job.self && A.n < 2)) return res;

  Config cfg;
  cfg.float32 = job.float32;
  cfg.kind = job.kind;
  cfg.self = job.self;
  cfg.na = A.ncols;
  cfg.nb = B.ncols;
  cfg.nulls_a = any_null(A, A.ncols);
  cfg.nulls_b = job.self ? cfg.nulls_a : any_null(B, B.ncols);
  const HistPlan hp = hist_plan(job);
  cfg.table = job.kind == Kind::Histogram && job.float32 && g_table_on.load() &&
              job.nbuckets <= cuda_tuning::kExprTableMaxBuckets &&
              job.device_source.find("#define G2_INNER 1\n") != std::string::npos;
  detail::get_tile_config(job.float32, &cfg.threads, &cfg.rows, cfg.table);
  // Join: tiles of at most 256 rows, so the smallest direct output buffer (one tile pair's
  // pairs) stays at 1 MB.
  if (job.kind == Kind::Join) cfg.rows = std::max(1, std::min(cfg.rows, 256 / cfg.threads));
  cfg.edges = hp.use && !cfg.table;
  cfg.safe = cfg.table && safe_inputs(A) && (job.self || safe_inputs(B));
  // NVRTC's faster, less optimizing mode where the kernel is short next to the compile.
  const double pairs_all =
      job.self ? double(A.n) * double(A.n - 1) / 2 : double(A.n) * double(B.n);
  const std::string fast_compile =
      pairs_all <= cuda_tuning::kExprFastCompileMaxPairs ? cuda_tuning::kExprFastCompile : "";
  // Joins (both precisions), float64 sums and float64 histograms of such calls also get one
  // tile loop instead of two: the full-tile loop's four-row unrolled copies of the pair
  // function are most of the code NVRTC optimizes (measured: -45 % compile time for a join; a
  // float64 energy sum 323 -> 238 ms for a kernel +8.5 %). Float32 histograms and sums keep
  // both loops: their pair functions are cheap next to the staged loads the compact loop adds
  // per pair (kernel +25 % for both). A sum visits each thread's pairs in the same order in
  // both loops: the same bits.
  const int compact_override = detail::compact_override();
  cfg.compact = compact_override >= 0
                    ? compact_override > 0
                    : !detail::fast_compile_level(fast_compile).empty() &&
                          (job.kind == Kind::Join ||
                           (!job.float32 && (job.kind == Kind::Sum || job.kind == Kind::Histogram)));
  const std::string source = assemble_source(cfg, job.device_source, cfg.table ? 1 : 0);
  const auto& facts = cuda::device_facts();
  const int arch = facts.prop.major * 10 + facts.prop.minor;
  auto tc = Clock::now();
  // A threshold-table histogram has two programs (the tile kernel; the check and the tables),
  // compiled side by side: the compile takes as long as the longer one.
  std::future<std::shared_ptr<const detail::Module>> tab_future;
  double tab_ms = 0;
  bool tab_hit = true;
  if (cfg.table) {
    const std::string tab_source = assemble_source(cfg, job.device_source, 2);
    tab_future = std::async(std::launch::async, [tab_source, arch, fast_compile, &tab_ms, &tab_hit] {
      return detail::module_for(tab_source, arch, fast_compile, &tab_ms, &tab_hit);
    });
  }
  std::shared_ptr<const detail::Module> mod =
      detail::module_for(source, arch, fast_compile, &res.compile_ms, &res.cache_hit);
  std::shared_ptr<const detail::Module> tab;
  if (cfg.table) {
    tab = tab_future.get();
    if (!(res.cache_hit && tab_hit)) res.compile_ms = seconds_since(tc) * 1e3;
    res.cache_hit = res.cache_hit && tab_hit;
  }
  Call call(ctl);
  if (cfg.table) {
    // F checked once per module; where it fails, the source without the table.
    int st = tab->table_state.load();
    if (st == 0) {
      const auto tk = Clock::now();
      st = table_check(call, *tab, job.device_source.find("#define G2_INNER_NONNEG 1\n") != std::string::npos);
      tab->table_state.store(st);
      res.check_ms = seconds_since(tk) * 1e3;
    }
    if (st == 3) {
      cfg.table = false;
      cfg.safe = false;
      cfg.edges = hp.use;
      cfg.compact = false;  // float32: the full-tile loop (above)
      detail::get_tile_config(job.float32, &cfg.threads, &cfg.rows, false);
      double ms = 0;
      bool hit = false;
      mod = detail::module_for(assemble_source(cfg, job.device_source), arch, fast_compile, &ms, &hit);
      res.compile_ms += ms;
      res.cache_hit = res.cache_hit && hit;
    } else {
      res.table = true;
      res.table_dec = st == 2;
    }
  }
  ctl.stats.prepare_s += seconds_since(tc);
  const void* fn = reinterpret_cast<const void*>(mod->kernel);

  cuda::LastRun& lr = cuda::last_run();
  lr = cuda::LastRun();
  const size_t rs = job.float32 ? sizeof(float) : sizeof(double);
  const void* da;
  const void* db;
  const unsigned char* dan = nullptr;
  const unsigned char* dbn = nullptr;
  if (job.float32) {
    da = upload_side<float>(call, A, A.ncols, cfg.nulls_a, &dan);
    db = job.self ? da : upload_side<float>(call, B, B.ncols, cfg.nulls_b, &dbn);
  } else {
    da = upload_side<double>(call, A, A.ncols, cfg.nulls_a, &dan);
    db = job.self ? da : upload_side<double>(call, B, B.ncols, cfg.nulls_b, &dbn);
  }
  if (job.self) dbn = dan;

  const int threads = cfg.threads;
  const long long tile = (long long)cfg.threads * cfg.rows;
  const long long Ma = (A.n + tile - 1) / tile, Mb = (B.n + tile - 1) / tile;
  const long long total = job.self ? Ma * (Ma + 1) / 2 : Ma * Mb;
  const double pairs_per_item = double(tile) * double(tile);

  // Shared memory: the staged b tile (values, NULL flags) and the private histograms.
  const int nbc = std::max(cfg.nb, 1);
  const size_t sb_bytes =
      (rs * nbc * tile + (cfg.nulls_b ? size_t(nbc) * tile : 0) + 15) / 16 * 16;
  size_t smem = sb_bytes;
  Args g{};
  g.a = da;
  g.an = dan;
  g.na = A.n;
  g.b = db;
  g.bn = dbn;
  g.nb = B.n;
  g.ta = Ma;
  g.tb = job.self ? Ma : Mb;
  int* d_err = call.alloc<int>(1, "error word");
  unsigned long long* d_counter = call.alloc<unsigned long long>(1, "counter");
  G2_CUDA(cudaMemsetAsync(d_err, 0, sizeof(int), call.stream()));
  G2_CUDA(cudaMemsetAsync(d_counter, 0, 8, call.stream()));
  g.error = d_err;
  g.counter = d_counter;
  // The threshold table's kernel with the climb (G2_CLIMB), compiled where the folded map does
  // not fit the thresholds or the counts must go to the global histogram.
  auto to_climb = [&] {
    if (cfg.climb) return;
    cfg.climb = true;
    res.table_climb = true;
    double ms = 0;
    bool hit = false;
    mod = detail::module_for(assemble_source(cfg, job.device_source, 1), arch, fast_compile, &ms, &hit);
    res.compile_ms += ms;
    res.cache_hit = res.cache_hit && hit;
    fn = reinterpret_cast<const void*>(mod->kernel);
  };
  if (job.kind == Kind::Histogram) {
    g.hist = call.alloc<unsigned long long>(size_t(job.nbuckets), "histogram");
    G2_CUDA(cudaMemsetAsync(g.hist, 0, 8 * size_t(job.nbuckets), call.stream()));
    g.lo = job.lo;
    g.hi = job.hi;
    g.span = job.hi - job.lo;
    g.nbd = double(job.nbuckets);
    g.nbuckets = job.nbuckets;
    if (cfg.table) {
      // The thresholds of g and the cell entries, by bisection with the module's own F and
      // bucket function (g2_tables); they stay in shared memory in front of the histograms.
      // Phase 0 the thresholds; then, where every cell of the folded map (chosen here from
      // them) holds at most one, phase 2 its entries for the kernel without the climb, else
      // phase 1 the linear cells and the kernel with the climb (compiled now).
      const int nb = job.nbuckets, cells = cuda_tuning::kExprTableCells;
      float* ts = call.alloc<float>(size_t(nb) + 3, "histogram thresholds");
      unsigned* ce = call.alloc<unsigned>(
          size_t(std::max(cells, cuda_tuning::kExprTableMapCells)), "histogram cell entries");
      float* par = call.alloc<float>(5, "histogram position map");
      G2_CUDA(cudaMemsetAsync(par, 0, 5 * sizeof(float), call.stream()));
      g.tab_ts = ts;
      g.tab_ce = ce;
      g.tab_par = par;
      g.tab_dec = res.table_dec ? 1 : 0;
      // Launches g2_tables' phase over n threads.
      auto tables = [&](int phase, int n) {
        void* params[] = {&g, &phase, &ts, &ce, &par};
        const int et = 128;
        G2_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(tab->tables), dim3(unsigned((n + et - 1) / et)),
                                 dim3(et), params, 0, call.stream()));
      };
      tables(0, nb + 1);
      bool one = false;
      if (!g_table_climb.load()) {
        std::vector<float> tsv(size_t(nb) + 3);
        cuda::download(call, tsv.data(), ts, sizeof(float) * tsv.size());
        FoldMap fm;
        if (choose_fold_map(tsv, cuda_tuning::kExprTableMapCells, &fm)) {
          g.tab_cells = fm.cells;
          g.tm_c = fm.c;
          g.tm_w = fm.w;
          g.tm_s = fm.s;
          g.tm_kb = fm.kb;
          tables(2, fm.cells);
          unsigned two = 0;
          cuda::download(call, &two, par + 4, sizeof two);
          one = two == 0;
        }
      }
      if (one) {
        g.tab_bytes = int((4 * (size_t(nb) + 3) + 4 * size_t(g.tab_cells) + 15) / 16 * 16);
      } else {
        tables(1, cells);
        g.tab_bytes = int((4 * (size_t(nb) + 3) + 4 * size_t(cells) + 15) / 16 * 16);
        to_climb();
      }
    }
    if (cfg.edges) {
      // The edges, by bisection with the kernel's own bucket function (g2_edges).
      if (!mod->edges) throw Error(ErrorCode::Internal, "pair expression module without g2_edges");
      void* e = call.alloc_bytes(rs * (size_t(job.nbuckets) + 1), "histogram edges");
      g.edges = e;
      g.q_scale = hp.q_scale;
      g.q_off = hp.q_off;
      g.q_tol = hp.q_tol;
      void* params[] = {&g, &e};
      const int et = 128;
      G2_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(mod->edges),
                               dim3(unsigned((job.nbuckets + 1 + et - 1) / et)), dim3(et), params, 0,
                               call.stream()));
    }
    // Output privatization (framework paper 3.3.2): the model picks the copies per block or
    // global memory, for this kernel's register-limited occupancy.
    cuda::PrivMachine m;
    m.sms = facts.sms;
    m.smem_per_sm = facts.smem_per_sm;
    m.smem_per_block_optin = facts.smem_per_block_optin;
    m.smem_reserved = facts.smem_reserved;
    m.max_threads_per_sm = facts.prop.maxThreadsPerMultiProcessor;
    m.max_blocks_per_sm = facts.prop.maxBlocksPerMultiProcessor;
    // The privatization choice for the current kernel `fn` and table size.
    auto choose = [&] {
      int regs_bps = 0;
      G2_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&regs_bps, fn, threads, 0));
      m.reg_blocks_per_sm = std::max(1, regs_bps);
      // With the table, a copy has a bin per class (nbuckets + 2, the two outer ones unread) and
      // two fault bins (a NaN or NULL g that raises; read without the climb).
      // The table's copies have their bins interleaved (kernel_text.h), so more copies also mean
      // fewer bank conflicts, which the model does not weigh: kExprTableCopies where set, halved
      // until the copies fit in a block's shared memory (else the model).
      int forced_copies = ctl.overrides.sdh_copies;
      if (forced_copies == 0 && cfg.table)
        for (int c = cuda_tuning::kExprTableCopies; c >= 1 && forced_copies == 0; c /= 2) {
          const size_t stride = c > 1 ? size_t((job.nbuckets + 4) | 1) : size_t(job.nbuckets + 4);
          if (sb_bytes + size_t(g.tab_bytes) + size_t(c) * stride * 4 + 1024 <= facts.smem_per_block_optin)
            forced_copies = c;
        }
      return cuda::choose_privatization(job.nbuckets + (cfg.table ? 4 : 0), threads,
                                        sb_bytes + size_t(g.tab_bytes), double(A.n) / cfg.rows, m,
                                        forced_copies);
    };
    cuda::PrivChoice ch = choose();
    if (cfg.table && !cfg.climb && ch.global) {
      // Without the climb the kernel counts only in shared memory.
      int phase = 1, cells = cuda_tuning::kExprTableCells;
      float* ts = const_cast<float*>(g.tab_ts);
      unsigned* ce = const_cast<unsigned*>(g.tab_ce);
      float* par = const_cast<float*>(g.tab_par);
      void* params[] = {&g, &phase, &ts, &ce, &par};
      G2_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(tab->tables), dim3(unsigned((cells + 127) / 128)),
                               dim3(128), params, 0, call.stream()));
      g.tab_bytes = int((4 * (size_t(job.nbuckets) + 3) + 4 * size_t(cells) + 15) / 16 * 16);
      to_climb();
      ch = choose();
    }
    g.copies = ch.global ? 0 : ch.copies;
    g.stride = ch.global ? 0 : ch.stride;
    smem = ch.smem_bytes;
    lr.sdh_copies = g.copies;
  }

  // Join: the direct output buffer, sized from the budget left after the inputs.
  size_t cap = 0;
  if (job.kind == Kind::Join) {
    const size_t min_cap = size_t(pairs_per_item);  // one item's pairs always fit
    const size_t by_budget =
        size_t(double(call.budget_left()) * cuda_tuning::kExprJoinBudgetShare) / sizeof(PairRecord);
    cap = std::max(min_cap, std::min(cuda_tuning::kExprJoinCapPairs, by_budget));
    g.out = call.alloc<PairRecord>(cap, "pair expression join buffer");
    g.cap = cap;
  }

  G2_CUDA(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  int bps = 0;
  G2_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, fn, threads, smem));
  if (bps < 1)
    throw Error(ErrorCode::Internal, "pair expression kernel does not fit on the device",
                "Shared memory per block: " + std::to_string(smem) + " bytes.");
  const long long G = (long long)bps * facts.sms;
  // A block's work per launch stays below 2^32 pairs (32-bit private counters).
  const long long max_per_block = std::max(1LL, (long long)(4294967295.0 / pairs_per_item));
  long long max_items = G * max_per_block;
  if (job.kind == Kind::Sum)
    max_items = std::min({max_items, cuda_tuning::kExprSumMaxItems, total});

  // Slots: per launch in flight, pinned copies of the error word, the counter (Join) and the
  // items' partial sums (Sum).
  const bool serial = job.kind == Kind::Join;  // the sink drains each slice before the next
  const int nslots = serial ? 1 : 2;
  struct Slot {
    int* err;
    unsigned long long* counter;
    double2* partial_host;
    double2* partial_dev;
  };
  Slot slots[2] = {};
  {
    // One pinned block for every slot: [err, pad, counter] per slot, then the partial sums.
    const size_t head = 16 * size_t(nslots);
    const size_t part = job.kind == Kind::Sum ? sizeof(double2) * size_t(max_items) : 0;
    char* pinned = static_cast<char*>(call.alloc_host(head + part * size_t(nslots)));
    for (int k = 0; k < nslots; ++k) {
      slots[k].err = reinterpret_cast<int*>(pinned + 16 * k);
      slots[k].counter = reinterpret_cast<unsigned long long*>(pinned + 16 * k + 8);
      if (part) {
        slots[k].partial_host = reinterpret_cast<double2*>(pinned + head + part * size_t(k));
        slots[k].partial_dev = call.alloc<double2>(size_t(max_items), "partial sums");
      }
    }
  }

  const double target_s = cuda_tuning::kSliceTargetMs * 1e-3;
  auto clamp_items = [&](double v) {
    return std::max(1LL, std::min<long long>(max_items, (long long)std::min(v, 9e18)));
  };
  // The first slice: one item per resident block, at most the guess (an expensive expression
  // is measured before a long slice runs); later slices from the measured rate.
  long long slice = clamp_items(std::min(
      double(G), cuda_tuning::kExprGuessPairsPerSec * target_s / pairs_per_item));
  const cudaStream_t streams[2] = {call.stream(), serial ? call.stream() : call.extra_stream(0)};
  const cudaEvent_t t_start = call.event(true);
  G2_CUDA(cudaEventRecord(t_start, streams[0]));
  if (!serial) G2_CUDA(cudaStreamWaitEvent(streams[1], t_start, 0));
  struct Inflight {
    cudaEvent_t start, end;
    long long item0, items;
    int slot;
  };
  cudaEvent_t evs[3] = {call.event(true), call.event(true), call.event(true)};
  // Serial slices are timed from their own start (the host drains pages between them).
  const cudaEvent_t ev_start = serial ? call.event(true) : nullptr;
  std::deque<Inflight> inflight;
  int n_launched = 0;
  long long next = 0;
  cudaEvent_t prev_end = t_start;
  float span_ms = 0;
  double kernel_ms = 0;
  double sum_s = 0, sum_c = 0;
  uint64_t emitted = 0;
  int error = kNoError;
  std::vector<PairRecord> page_buf;
  auto t0 = Clock::now();
  while ((next < total && error == kNoError) || !inflight.empty()) {
    if (next < total && error == kNoError && int(inflight.size()) < nslots) {
      call.poll();
      const long long cnt = std::min(slice, total - next);
      const long long per_block = (cnt + G - 1) / G;
      const long long grid = (cnt + per_block - 1) / per_block;
      const int sl = n_launched % nslots;
      const cudaStream_t st = streams[n_launched & 1];
      Args a = g;
      a.item0 = next;
      a.count = cnt;
      a.per_block = per_block;
      a.partial = slots[sl].partial_dev;
      if (serial) {
        G2_CUDA(cudaMemsetAsync(d_counter, 0, 8, st));
        G2_CUDA(cudaEventRecord(ev_start, st));
      }
      void* params[] = {&a};
      G2_CUDA(cudaLaunchKernel(fn, dim3(unsigned(grid)), dim3(unsigned(threads)), params, smem, st));
      G2_CUDA(cudaMemcpyAsync(slots[sl].err, d_err, sizeof(int), cudaMemcpyDeviceToHost, st));
      if (serial)
        G2_CUDA(cudaMemcpyAsync(slots[sl].counter, d_counter, 8, cudaMemcpyDeviceToHost, st));
      if (job.kind == Kind::Sum)
        G2_CUDA(cudaMemcpyAsync(slots[sl].partial_host, slots[sl].partial_dev,
                                sizeof(double2) * size_t(cnt), cudaMemcpyDeviceToHost, st));
      Inflight f{ev_start, evs[n_launched % 3], next, cnt, sl};
      G2_CUDA(cudaEventRecord(f.end, st));
      inflight.push_back(f);
      next += cnt;
      ++n_launched;
      ++lr.launches;
      continue;
    }
    Inflight f = inflight.front();
    inflight.pop_front();
    call.wait(f.end);
    float ms = 0, span = 0;
    G2_CUDA(cudaEventElapsedTime(&ms, serial ? f.start : prev_end, f.end));
    G2_CUDA(cudaEventElapsedTime(&span, t_start, f.end));
    span_ms = std::max(span_ms, span);
    prev_end = f.end;
    const Slot& s = slots[f.slot];
    if (*s.err != kNoError) {
      if (error == kNoError) error = *s.err;
      continue;  // drain what is in flight, launch nothing more
    }
    if (job.kind == Kind::Sum) {
      for (long long k = 0; k < f.items; ++k) {  // item order
        nadd(sum_s, sum_c, s.partial_host[k].x);
        sum_c += s.partial_host[k].y;
      }
    }
    long long want = slice;
    if (ms > 0.05)
      want = clamp_items(std::max(double(slice) / 4,
                                  std::min(double(slice) * 4,
                                           double(f.items) * (cuda_tuning::kSliceTargetMs / double(ms)))));
    else
      want = clamp_items(double(slice) * 4);
    if (serial) {
      const unsigned long long found = *s.counter;
      if (found > cap) {
        // The slice's pairs overflow the buffer: run it again in pieces that fit (one item's
        // pairs always do).
        next = f.item0;
        slice = std::max(1LL, (long long)(double(f.items) * double(cap) / (2.0 * double(found))));
        continue;
      }
      if (found) {
        if (job.max_pairs && emitted + found > job.max_pairs)
          throw Error(ErrorCode::ProgramLimit, "the join result exceeds gpu2bs.max_result_rows",
                      "More than " + std::to_string(job.max_pairs) +
                          " pairs satisfy the predicate.",
                      "Raise gpu2bs.max_result_rows (0: unlimited) or narrow the predicate.");
        auto td = Clock::now();
        page_buf.resize(size_t(found));
        cuda::download(call, page_buf.data(), g.out, size_t(found) * sizeof(PairRecord));
        if (sink) {
          const size_t page = std::max<size_t>(ctl.page_pairs, 1);
          for (size_t o = 0; o < page_buf.size(); o += page)
            sink->consume(page_buf.data() + o, std::min(page, page_buf.size() - o));
        }
        emitted += found;
        ctl.stats.merge_s += seconds_since(td);
        // Keep the next slice's expected pairs within half the buffer.
        const double per_item = double(found) / double(f.items);
        want = std::min<long long>(want, clamp_items(0.5 * double(cap) / per_item));
      }
      kernel_ms += ms;
    }
    slice = want;
  }
  if (!serial) {
    const cudaEvent_t joined = call.event();
    G2_CUDA(cudaEventRecord(joined, streams[1]));
    G2_CUDA(cudaStreamWaitEvent(streams[0], joined, 0));
    kernel_ms = span_ms;
  }
  lr.kernel_ms += kernel_ms;
  ctl.stats.kernel_s += seconds_since(t0);
  res.error = error;
  if (error != kNoError) return res;

  if (job.kind == Kind::Join) {
    res.count = emitted;
    ctl.stats.pairs_emitted += emitted;
    lr.join_pairs = emitted;
  } else {
    unsigned long long c = 0;
    cuda::download(call, &c, d_counter, 8);
    res.count = c;
  }
  if (job.kind == Kind::Sum) res.sum = std::isfinite(sum_s) ? sum_s + sum_c : sum_s;
  if (job.kind == Kind::Histogram) {
    cuda::download(call, res.hist.data(), g.hist, 8 * size_t(job.nbuckets));
    res.count = 0;
    for (uint64_t h : res.hist) res.count += h;
    if (res.table) {
      res.thresholds.resize(size_t(job.nbuckets) + 3);
      cuda::download(call, res.thresholds.data(), g.tab_ts, sizeof(float) * res.thresholds.size());
    }
  }
  ctl.stats.pairs_examined +=
      job.self ? uint64_t(A.n) * uint64_t(A.n - 1) / 2 : uint64_t(A.n) * uint64_t(B.n);
  return res;
}

}  // namespace exprgpu
}  // namespace gpu2bs
