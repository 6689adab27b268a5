// gpu_pairwise at engine level (no PostgreSQL): timings of the exact and fast kNN and of the
// l1 threshold join, for test/gpu/bench_pairwise.sh (GPU) and the 2-core CPU comparison.
//   bench_pairwise knn FILE N D K REPS OUT [cpu|gpu] [metric]
//       self kNN over N x D float32 vectors (raw little-endian file); median of REPS runs of
//       exact (on the GPU also exact through the SIMT kernel alone, fast, fp16: fast with the
//       FP16 GEMM of rows scaled one by one, tf32: fast with the TF32 GEMM, and batch: fast with
//       chunks of equal size and every list handed to the sink after the last chunk); writes
//       each run's lists as int32 (N x K) to OUT.exact.i32, OUT.simt.i32, OUT.fast.i32,
//       OUT.fp16.i32, OUT.tf32.i32 and OUT.batch.i32.
//   bench_pairwise sweep FILE N D K REPS [fast]
//       GPU only: self kNN l2 under the launch parameters of kernels/tuning.h and alternatives
//       (tile shape, rows per launch, blocks per SM, fast path GEMM chunk and type, upload
//       threads, streamed result, first and last chunk rows), with the time split; `fast`: the
//       fast path's alternatives only.
//   bench_pairwise l1thr N D REPS [cpu|gpu]
//       self l1 threshold join of N x D uniform [0, 1) vectors (generated here), threshold at the
//       mean minus 4 standard deviations of the pair distance; pairs/s and dimension-terms/s.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/engine.h"
#include "core/pairwise.h"
#ifdef G2_BENCH_CUDA
#include "kernels/pairwise/pairwise_api.h"
#endif

using namespace gpu2bs;

namespace {

using Clock = std::chrono::steady_clock;

struct Ctl : Control {
  Ctl() { threads = int(std::max(1u, std::thread::hardware_concurrency())); }
};

// Keeps the lists (kNN) or counts the pairs (threshold).
struct Sink : PairSink {
  std::vector<int32_t>* lists = nullptr;
  size_t k = 0;
  size_t n = 0;
  std::vector<size_t> fill;
  void consume(const PairRecord* p, size_t m) override {
    n += m;
    if (!lists) return;
    for (size_t t = 0; t < m; ++t) {
      size_t& f = fill[p[t].i];
      if (f < k) (*lists)[size_t(p[t].i) * k + f++] = int32_t(p[t].j);
    }
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Engine* engine(const char* which) {
  static std::unique_ptr<Engine> cpu = make_cpu_engine();
  if (which && std::string(which) == "cpu") return cpu.get();
  std::string why;
  Engine* g = cuda_engine(&why);
  if (!g) {
    fprintf(stderr, "no GPU: %s\n", why.c_str());
    exit(2);
  }
  return g;
}

#ifdef G2_BENCH_CUDA
// Where the last GPU run's time went (host clock for uploads and host work, events for kernels).
void print_breakdown(PairwisePrecision prec) {
  const cuda::PairwiseLastRun& r = cuda::pairwise_last_run();
  (void)prec;
  if (!r.fast)
    printf("      last run: upload %.1f ms (allocation %.1f ms), exact kNN kernels %.1f ms, result "
           "sink %.1f ms\n", r.upload_ms, r.upload_alloc_ms, r.exact_ms, r.emit_ms);
  else
    printf("      last run: upload %.1f ms (allocation %.1f ms), %s GEMM %.1f ms, selection %.1f ms, exact re-rank "
           "%.1f ms, host merge+certificate %.1f ms, exact recompute %.1f ms (%zu rows), result "
           "sink %.1f ms (%.1f ms after the last certificate); host: before the first GEMM %.1f "
           "ms, waiting for chunks %.1f ms\n",
           r.upload_ms, r.upload_alloc_ms, r.fold ? "folded FP16" : r.fp16 ? "FP16" : "TF32", r.gemm_ms, r.select_ms, r.rerank_ms,
           r.certify_ms, r.exact_ms, r.recomputed, r.emit_ms, r.emit_tail_ms, r.prep_ms, r.wait_ms);
}

// Reads N x D float32 from a raw file into v; false when it cannot.
bool read_vectors(const char* file, size_t n, int d, VectorSet* v) {
  v->n = n;
  v->d = d;
  v->storage.resize(n * size_t(d));
  v->data = v->storage.data();
  FILE* f = fopen(file, "rb");
  const bool ok = f && fread(v->data, sizeof(float), v->storage.size(), f) == v->storage.size();
  if (f) fclose(f);
  if (!ok) fprintf(stderr, "cannot read %zu x %d float32 from %s\n", n, d, file);
  return ok;
}

// The launch parameters of kernels/tuning.h against alternatives, self kNN l2 on the GPU:
// median of REPS end-to-end and kernel times per configuration.
int sweep(int argc, char** argv) {
  if (argc < 7) return 1;
  const size_t n = size_t(atoll(argv[3]));
  const int d = atoi(argv[4]), k = atoi(argv[5]), reps = atoi(argv[6]);
  VectorSet v;
  if (!read_vectors(argv[2], n, d, &v)) return 2;
  Engine* eng = engine("gpu");
  const PairwiseMetric m = parse_pairwise_metric("l2");
  const cuda::PairwiseTuning def = cuda::pairwise_tuning();
  struct Conf {
    const char* name;
    PairwisePrecision prec;
    cuda::PairwiseTuning t;
  };
  std::vector<Conf> confs;
  auto add = [&](const char* name, PairwisePrecision prec, auto change) {
    cuda::PairwiseTuning t = def;
    change(t);
    confs.push_back(Conf{name, prec, t});
  };
  using T = cuda::PairwiseTuning;
  const auto E = PairwisePrecision::Exact, F = PairwisePrecision::Fast;
  add("exact 64x64 tiles (4x4/thread), 16384 rows/launch, 4 blocks/SM", E, [](T& t) { t.wide = false; t.chunk_rows = 16384; });
  add("exact 128x128 tiles (8x8/thread), defaults (upper triangle)", E, [](T&) {});
  add("exact 128x128, whole matrix (not symmetric)", E, [](T& t) { t.symmetric = false; });
  add("exact 128x128 upper triangle, 8192 tiles/launch", E, [](T& t) { t.sym_blocks_per_launch = 8192; });
  add("exact 128x128 upper triangle, 131072 tiles/launch", E, [](T& t) { t.sym_blocks_per_launch = 131072; });
  add("exact 128x128 whole matrix, 16384 rows/launch", E, [](T& t) { t.symmetric = false; t.chunk_rows = 16384; });
  add("exact 128x128 whole matrix, 2 blocks/SM wanted", E, [](T& t) { t.symmetric = false; t.blocks_per_sm = 2; });
  add("exact 128x128 whole matrix, 8 blocks/SM wanted", E, [](T& t) { t.symmetric = false; t.blocks_per_sm = 8; });
  add("fast, GEMM chunk 1 GB", F, [](T& t) { t.fast_chunk_bytes = size_t(1) << 30; });
  add("fast, GEMM chunk 4 GB", F, [](T& t) { t.fast_chunk_bytes = size_t(4) << 30; });
  add("fast, folded FP16 GEMM", F, [](T& t) { t.fold_gemm = true; });
  add("fast, folded FP16 GEMM, selection without prefilter", F, [](T& t) {
    t.fold_gemm = true;
    t.select_prefilter = false;
  });
  add("fast, TF32 GEMM", F, [](T& t) {
    t.fold_gemm = false;
    t.fp16_gemm = false;
  });
  add("fast, TF32 GEMM, selection without prefilter", F, [](T& t) {
    t.fold_gemm = false;
    t.fp16_gemm = false;
    t.select_prefilter = false;
  });
  add("fast, FP16 GEMM", F, [](T& t) {
    t.fold_gemm = false;
    t.fp16_gemm = true;
  });
  add("fast, FP16 GEMM, selection without prefilter", F, [](T& t) {
    t.fold_gemm = false;
    t.fp16_gemm = true;
    t.select_prefilter = false;
  });
  add("fast, one chunk at a time (certification not overlapped)", F,
      [](T& t) { t.fast_overlap = false; });
  add("fast, single-threaded upload", F, [](T& t) { t.upload_workers = 1; });
  add("fast, 4 upload threads", F, [](T& t) { t.upload_workers = 4; });
  add("fast, 12 upload threads", F, [](T& t) { t.upload_workers = 12; });
  add("fast, 16 upload threads", F, [](T& t) { t.upload_workers = 16; });
  add("fast, lists to the sink after the last chunk", F, [](T& t) { t.fast_stream_emit = false; });
  add("fast, chunks of equal size (no short first and last)", F, [](T& t) { t.fast_edge_rows = 0; });
  add("fast, first and last chunk 1024 rows", F, [](T& t) { t.fast_edge_rows = 1024; });
  add("fast, first and last chunk 4096 rows", F, [](T& t) { t.fast_edge_rows = 4096; });
  add("fast, equal chunks, lists after the last chunk (before)", F, [](T& t) {
    t.fast_edge_rows = 0;
    t.fast_stream_emit = false;
  });
  add("fast, FP16 GEMM chunk 2 GB", F, [](T& t) {
    t.fold_gemm = false;
    t.fp16_gemm = true;
    t.fast_chunk_bytes = size_t(2) << 30;
  });
  printf("sweep: self kNN l2, n = %zu, d = %d, k = %d, median of %d (defaults: wide %d, %d "
         "blocks/SM, %zu rows/launch, fast chunk %zu MB)\n", n, d, k, reps, int(def.wide),
         def.blocks_per_sm, def.chunk_rows, def.fast_chunk_bytes >> 20);
  const bool fast_only = argc > 7 && std::string(argv[7]) == "fast";
  for (const Conf& c : confs) {
    if (fast_only && c.prec != F) continue;
    cuda::pairwise_tuning() = c.t;
    PairwiseProblem p = make_pairwise(m, v, nullptr, k, true, 0, false, c.prec, 0);
    std::vector<double> wall, kern;
    for (int r = 0; r < reps; ++r) {
      Ctl ctl;
      Sink s;
      auto t0 = Clock::now();
      eng->pairwise(p, s, ctl);
      wall.push_back(std::chrono::duration<double>(Clock::now() - t0).count() * 1e3);
      kern.push_back(ctl.stats.kernel_s * 1e3);
    }
    printf("  %-62s %8.1f ms end to end, %8.1f ms kernels\n", c.name, median(wall), median(kern));
    print_breakdown(c.prec);
  }
  cuda::pairwise_tuning() = def;
  return 0;
}
#endif

int knn(int argc, char** argv) {
  if (argc < 8) return 1;
  const char* file = argv[2];
  const size_t n = size_t(atoll(argv[3]));
  const int d = atoi(argv[4]);
  const int k = atoi(argv[5]);
  const int reps = atoi(argv[6]);
  const std::string out = argv[7];
  Engine* eng = engine(argc > 8 ? argv[8] : "gpu");
  const std::string metric = argc > 9 ? argv[9] : "l2";
  VectorSet v;
  v.n = n;
  v.d = d;
  v.storage.resize(n * size_t(d));
  v.data = v.storage.data();
  FILE* f = fopen(file, "rb");
  if (!f || fread(v.data, sizeof(float), v.storage.size(), f) != v.storage.size()) {
    fprintf(stderr, "cannot read %zu x %d float32 from %s\n", n, d, file);
    return 2;
  }
  fclose(f);
  const PairwiseMetric m = parse_pairwise_metric(metric);
  normalize_vectors(m, &v);
  const bool gpu = eng->name().rfind("cuda", 0) == 0;
  printf("engine: %s, self kNN %s, n = %zu, d = %d, k = %d, %d runs\n", eng->name().c_str(),
         metric.c_str(), n, d, k, reps);
  // exact (certified tensor-core candidates where they apply), simt (exact through the SIMT
  // kernel alone), fast (the default GEMM), fp16: fast with the FP16 GEMM of rows scaled one by
  // one, tf32: fast with the TF32 GEMM, and batch: fast with chunks of equal size and the lists
  // handed to the sink after the last chunk.
  for (int mode = 0; mode < 6; ++mode) {
    if (mode > 0 && !gpu) break;
    const PairwisePrecision prec = mode >= 2 ? PairwisePrecision::Fast : PairwisePrecision::Exact;
    const char* name = mode == 0   ? "exact"
                       : mode == 1 ? "simt"
                       : mode == 2 ? "fast"
                       : mode == 3 ? "fp16"
                       : mode == 4 ? "tf32"
                                   : "batch";
#ifdef G2_BENCH_CUDA
    const cuda::PairwiseTuning saved = cuda::pairwise_tuning();
    if (mode == 1) cuda::pairwise_tuning().certified_exact = false;
    if (mode == 3 || mode == 4) cuda::pairwise_tuning().fold_gemm = false;
    if (mode == 5) {
      cuda::pairwise_tuning().fast_edge_rows = 0;
      cuda::pairwise_tuning().fast_stream_emit = false;
    }
    if (mode == 3) cuda::pairwise_tuning().fp16_gemm = true;
#endif
    PairwiseProblem p = make_pairwise(m, v, nullptr, k, true, 0, false, prec, 0);
    std::vector<double> wall, kern;
    std::vector<int32_t> lists(n * size_t(k), -1);
    size_t recomputed = 0;
    bool fast_on = false;
    for (int r = 0; r < reps; ++r) {
      Ctl ctl;
      Sink s;
      s.lists = &lists;
      s.k = size_t(k);
      s.fill.assign(n, 0);
      auto t0 = Clock::now();
      eng->pairwise(p, s, ctl);
      wall.push_back(std::chrono::duration<double>(Clock::now() - t0).count() * 1e3);
      kern.push_back(ctl.stats.kernel_s * 1e3);
#ifdef G2_BENCH_CUDA
      if (gpu) {
        recomputed = cuda::pairwise_last_run().recomputed;
        fast_on = cuda::pairwise_last_run().fast;
      }
#endif
    }
    printf("%-5s median of %d: %.1f ms end to end (upload, kernels, merge), %.1f ms kernels",
           name, reps, median(wall), median(kern));
    if (gpu)
      printf("; tensor-core path %s, %zu rows recomputed exactly", fast_on ? "on" : "off",
             recomputed);
    printf("  [runs:");
    for (double w : wall) printf(" %.1f", w);
    printf("]\n");
#ifdef G2_BENCH_CUDA
    if (gpu) {
      print_breakdown(prec);
      printf("      path: %s\n", cuda::pairwise_last_path().c_str());
    }
    cuda::pairwise_tuning() = saved;
#endif
    const std::string path = out + "." + name + ".i32";
    FILE* o = fopen(path.c_str(), "wb");
    if (o) {
      fwrite(lists.data(), sizeof(int32_t), lists.size(), o);
      fclose(o);
    }
  }
#ifdef G2_BENCH_CUDA
  if (gpu) printf("cublas: %s\n", cuda::pairwise_blas_status().c_str());
#endif
  return 0;
}

int l1thr(int argc, char** argv) {
  if (argc < 5) return 1;
  const size_t n = size_t(atoll(argv[2]));
  const int d = atoi(argv[3]);
  const int reps = atoi(argv[4]);
  Engine* eng = engine(argc > 5 ? argv[5] : "gpu");
  VectorSet v;
  v.n = n;
  v.d = d;
  v.storage.resize(n * size_t(d));
  v.data = v.storage.data();
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (auto& e : v.storage) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    e = float(x >> 40) * (1.0f / 16777216.0f);
  }
  // |u - v| of two uniforms: mean 1/3, variance 1/18.
  const double thr = d / 3.0 - 4 * std::sqrt(d / 18.0);
  const PairwiseMetric m = parse_pairwise_metric("l1");
  PairwiseProblem p = make_pairwise(m, v, nullptr, 0, false, thr, true, PairwisePrecision::Exact, 0);
  std::vector<double> wall, kern;
  size_t pairs = 0;
  for (int r = 0; r < reps; ++r) {
    Ctl ctl;
    Sink s;
    auto t0 = Clock::now();
    eng->pairwise(p, s, ctl);
    wall.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    kern.push_back(ctl.stats.kernel_s);
    pairs = s.n;
  }
  const double all = double(n) * double(n - 1) / 2;
  const double terms = all * d;
  printf("engine: %s, l1 self threshold join, n = %zu, d = %d, threshold %.1f: %zu pairs\n",
         eng->name().c_str(), n, d, thr, pairs);
  printf("median of %d: %.3f s end to end, %.3f s kernels; %.3g pairs/s, %.3g dimension terms/s "
         "(kernels: %.3g terms/s)  [runs:", reps, median(wall), median(kern), all / median(wall),
         terms / median(wall), terms / median(kern));
  for (double w : wall) printf(" %.3f", w);
  printf("]\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  int rc = 1;
  if (mode == "knn") rc = knn(argc, argv);
  if (mode == "l1thr") rc = l1thr(argc, argv);
#ifdef G2_BENCH_CUDA
  if (mode == "sweep") rc = sweep(argc, argv);
#endif
  if (rc == 1)
    fprintf(stderr,
            "usage: bench_pairwise knn FILE N D K REPS OUT [cpu|gpu] [metric]\n"
            "       bench_pairwise l1thr N D REPS [cpu|gpu]\n"
            "       bench_pairwise sweep FILE N D K REPS   (GPU: launch parameters)\n");
  return rc;
}
