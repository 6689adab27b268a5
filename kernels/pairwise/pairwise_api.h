// CUDA-free declarations of the GPU all-pairs vectors (kernels/pairwise/pairwise.cu) for the
// engine, tests and benchmarks.
#pragma once

#include <cstddef>
#include <string>

#include "core/engine.h"
#include "core/pairwise.h"
#include "../tuning.h"

namespace gpu2bs {
namespace cuda {

// The GPU all-pairs computation (CudaEngine::pairwise).
void pairwise(const PairwiseProblem& p, PairSink& sink, Control& ctl);

// cuBLAS for the fast path: "available: libcublas.so.13 (version ...)" or "unavailable: why".
// The first call loads it (dlopen) and creates the handle.
std::string pairwise_blas_status();

// Launch parameters of the pairwise kernels: the defaults of kernels/tuning.h; benchmarks change
// them to compare (process-wide, not synchronized: set them before the calls).
struct PairwiseTuning {
  bool wide = cuda_tuning::kPairwiseWide;                  // 128 x 128 exact kNN kernel
  bool symmetric = cuda_tuning::kPairwiseSymmetric;        // self kNN over half the tiles
  long long sym_blocks_per_launch = cuda_tuning::kPairwiseSymBlocksPerLaunch;
  int blocks_per_sm = cuda_tuning::kPairwiseKnnBlocksPerSm;  // exact kNN blocks wanted per SM
  size_t chunk_rows = cuda_tuning::kPairwiseKnnChunkRows;    // exact kNN rows per launch
  size_t fast_chunk_bytes = cuda_tuning::kPairwiseFastChunkBytes;  // fast path GEMM output
  bool certified_exact = true;  // exact precision through the certified tensor-core candidates
  bool fp16_gemm = cuda_tuning::kPairwiseFp16Gemm;  // candidates from FP16 (else TF32) GEMM
  bool fold_gemm = cuda_tuning::kPairwiseFoldGemm;  // FP16 GEMM with the norms folded in first
  bool select_prefilter = cuda_tuning::kPairwiseSelectPrefilter;  // one ballot per step first
  bool fast_overlap = cuda_tuning::kPairwiseFastOverlap;  // certify beside the next chunk
  bool fast_stream_emit = cuda_tuning::kPairwiseFastStreamEmit;  // sink each chunk's rows early
  size_t fast_edge_rows = cuda_tuning::kPairwiseFastEdgeRows;  // rows of the first, last chunk
  int upload_workers = cuda_tuning::kPairwiseUploadWorkers;  // threads copying the vectors up
  size_t upload_parallel_bytes = cuda_tuning::kPairwiseParallelUploadBytes;  // ... above this
  // Exact precision: abandon the certified path past this fraction of rows recomputed.
  double certified_max_redo_self = cuda_tuning::kPairwiseCertifiedMaxRedoSelf;
  double certified_max_redo_two = cuda_tuning::kPairwiseCertifiedMaxRedoTwo;
};
PairwiseTuning& pairwise_tuning();

// What the last pairwise call on this thread did (tests and benchmarks read it).
struct PairwiseLastRun {
  bool fast = false;        // the tensor-core path answered (cuBLAS loaded, metric with a GEMM form)
  bool fold = false;        // tensor-core path: folded FP16 GEMM (scores as its output)
  bool fp16 = false;        // tensor-core path: FP16 GEMM of rows scaled one by one (else TF32)
  bool exact = true;        // the precision asked for was exact
  bool abandoned = false;   // exact: the certified path gave way to the SIMT kernel (cost guard)
  size_t rows = 0;          // rows of a
  bool cpu = false;         // k above the device list capacity: the CPU engine answered
  size_t recomputed = 0;    // fast path: rows recomputed exactly (certificate failed)
  double upload_ms = 0;     // host to device copies of the vectors (and their allocation)
  double upload_alloc_ms = 0;  // the device allocation of the vectors, part of upload_ms
  double gemm_ms = 0;       // fast path: FP16 or TF32 GEMM (events)
  double select_ms = 0;     // fast path: candidate selection on the GEMM output (events)
  double rerank_ms = 0;     // fast path: exact keys of the candidates (events)
  double prep_ms = 0;       // fast path: norms, FP16 copies, allocations before the first GEMM
  double wait_ms = 0;       // fast path: host waiting for a chunk's candidates
  double certify_ms = 0;    // fast path: host merge and certificate
  double exact_ms = 0;      // exact kNN kernels (events; the fast path's recomputed rows)
  double emit_ms = 0;       // kNN lists handed to the sink (values computed on the host)
  double emit_tail_ms = 0;  // the part of emit_ms after the last chunk's certificate
};
PairwiseLastRun& pairwise_last_run();

// The path of the last pairwise call on this thread, in words (gpu2bs_info() row
// pairwise_last_path): "none", "cpu engine (k above 256)", "SIMT exact kernel", "certified
// folded FP16 (or FP16, or TF32) candidates, R of N rows recomputed by the exact kernel", or the
// SIMT kernel after the certified path gave way.
std::string pairwise_last_path();

}  // namespace cuda
}  // namespace gpu2bs
