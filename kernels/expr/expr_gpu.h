// User-defined two-body operators on the GPU: a pair expression, generated as CUDA source from
// the analyzed SQL expression (src/core, never from user text), compiled at run time with NVRTC
// and run in the tiled all-pairs kernel families of the 2-BS framework (Type-I reduction, Type-II
// histogram, Type-III direct output). NVRTC is opened with dlopen at first use, so the extension
// loads and the CPU engine answers where the library is absent.
//
// ABI of the generated source (`Job::device_source`). The kernel prelude defines, before it:
//
//   typedef float real;   or   typedef double real;      (Job::float32)
//   struct Row {                                          one point of a side
//     const real* __restrict__ col;                      column c of this point: col[c * stride]
//     const unsigned char* __restrict__ nul;             nul[c * stride] != 0: column c is NULL
//     long long stride;                                  (nul may be null: no NULLs on that side)
//   };
//   __device__ real gpu2bs_col(const Row& r, int c);      the value of column c
//   __device__ bool gpu2bs_isnull(const Row& r, int c);   true when column c is NULL
//   __device__ void gpu2bs_raise(int code);               records an error (ExprError) for the
//                                                         host to raise; the pair then counts as
//                                                         not kept
//
// and the generated source defines exactly one function:
//
//   __device__ bool gpu2bs_pair(const Row& a, const Row& b, real* value);
//
// returning true when the pair is kept (its predicate is true and, for Sum / Histogram, its value
// is not NULL), with *value set for Sum and Histogram. A Count source may also define
//
//   #define G2_PAIR_KEY 1
//   #define G2_KEY_MAX <unsigned constant below 0xffffffff>
//   __device__ unsigned gpu2bs_pair_key(const Row& a, const Row& b);
//
// where gpu2bs_pair_key(a, b) <= G2_KEY_MAX exactly when gpu2bs_pair(a, b, ..) is true, raising
// the same errors (e.g. the bit pattern of a float32 value that is never negative or -0, for a
// predicate `value <= constant`): the kernel then counts full tiles with a carry chain on the
// keys. A float32 Histogram source (the code generator's, or a hand-written one under
// #if G2_F32) may also define (G2_INNER)
//
//   #define G2_INNER 1
//   #define G2_INNER_NONNEG <1: g is never negative nor -0>
//   __device__ int gpu2bs_pair_inner(const Row& a, const Row& b, real* x);   predicate and g:
//                                   0 not kept, 1 kept with g in *x, 2 g NaN, 3 g NULL
//                                   (g stored in *x on every outcome spares the kernel a
//                                   select per pair)
//   __device__ int gpu2bs_outer(real x, bool xnull, real* value);            value = F(x):
//                                   0 with *value, -1 NULL, else the fault (not raised)
//
// where gpu2bs_pair's value is F(g): the kernel then buckets g through a threshold table
// (kernel_text.h) once F passes the device's check. The configuration block defines G2_F32
// (1: real is float) and G2_SAFE (1: every input value is 0, NaN or of magnitude within
// 2^+-kPairExprSafeExponent) for the source's #if. Rows of a side are laid out column-major
// (Side::data[c * n + i]); the kernels may stage tiles of rows in shared memory and hand the
// function Rows that point there (stride = tile length). Compiled without FMA contraction
// (--fmad=false) so `+ - * / sqrt` round as the CPU engine's evaluation does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/engine.h"

namespace gpu2bs {
namespace exprgpu {

// Errors the generated code raises, as gpu2bs_raise codes: the numbers of ExprFault
// (src/core/pair_expr.h), which the CUDA engine turns back into ExprError with PostgreSQL's
// SQLSTATE; Result::error carries the first one raised. The kernels themselves raise only
// kHistogramNaN. (kInvalidArgument and kOutOfRange are older names: ExprFault's 2 and 3 are
// Overflow and Underflow.)
enum ExprError : int {
  kNoError = 0,
  kDivisionByZero = 1,   // 22012
  kInvalidArgument = 2,  // 2201F (power) / 2201E (ln, sqrt of a negative) / 22003 (acos...)
  kOutOfRange = 3,       // 22003
  kHistogramNaN = 10     // 2201G: width_bucket of a NaN value (raised by the Histogram kernel,
                         // as PostgreSQL raises it; the same number as ExprFault::HistogramNaN)
};

// The points of one side: ncols float64 columns of n rows, column-major (data[c * n + i]);
// nulls in the same layout (1 = NULL) or null when no value is NULL.
struct Side {
  const double* data = nullptr;
  const uint8_t* nulls = nullptr;
  int64_t n = 0;
  int ncols = 0;
};

// What to compute over the pairs: all (i, j) of a x b, or with `self` the unordered pairs
// i < j of a (b ignored).
enum class Kind : uint8_t {
  Count,      // Type-I: kept pairs
  Sum,        // Type-I: sum of value over kept pairs (float64 accumulation)
  Histogram,  // Type-II: width_bucket(value, lo, hi, nbuckets) as PostgreSQL computes it;
              // values outside [lo, hi) are not counted
  Join        // Type-III: the kept pairs (i, j), handed to the sink a page at a time
};

struct Job {
  Kind kind = Kind::Count;
  bool self = false;
  bool float32 = false;        // real = float (gpu2bs.precision = float4) or double
  Side a, b;
  std::string device_source;   // defines gpu2bs_pair (ABI above)
  double lo = 0, hi = 0;       // Histogram
  int nbuckets = 0;            // Histogram
  uint64_t max_pairs = 0;      // Join: Error(ProgramLimit) beyond this many pairs (0: none)
};

struct Result {
  uint64_t count = 0;              // kept pairs (every kind)
  double sum = 0;                  // Sum
  std::vector<uint64_t> hist;      // Histogram: nbuckets counts
  int error = kNoError;            // first error raised by the generated code
  double compile_ms = 0;           // NVRTC compile time of this call (0 on a cache hit)
  bool cache_hit = false;          // module found in this process's cache
  bool table = false;              // Histogram: buckets through the threshold table of g
                                   // (value = F(g), F checked monotone on the device)
  bool table_dec = false;          // with `table`: F is non-increasing
  bool table_climb = false;        // with `table`: the kernel with the climb ran (some cell of
                                   // the folded map held two thresholds, or no shared copy fit)
  std::vector<float> thresholds;   // with `table`: ts[0 .. nbuckets + 2] of kernel_text.h (tests)
  double check_ms = 0;             // time of the module's monotonicity check (0: known already)
};

// Runs the job on the current CUDA device. Join pairs go to `sink` (PairRecord: i, j and
// dist = the value, or 0 without one). Polls ctl.interrupt_pending() at least every
// ctl.poll_ms; honours ctl.device_memory_limit. Throws gpu2bs::Error (NVRTC missing or a
// compile failure: Internal with the log; interrupts; out of memory).
Result run(const Job& job, PairSink* sink, Control& ctl);

// True when NVRTC could be opened (opens it on the first call); `why` says why not.
bool nvrtc_available(std::string* why);

// Rows for gpu2bs_info(): the NVRTC library opened (or why not), modules compiled, cache hits,
// total and last compile time.
InfoRows nvrtc_info();

}  // namespace exprgpu
}  // namespace gpu2bs
