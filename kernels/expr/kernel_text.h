// The CUDA source text that NVRTC compiles around a generated `gpu2bs_pair` (expr_gpu.h ABI):
// a configuration block of macros written by the host (expr_gpu.cu: assemble_source), the
// prelude (kPrelude: Row, gpu2bs_col, gpu2bs_isnull, gpu2bs_raise), the generated function, then
// the kernel (kKernel). Self-contained: no #include, nothing from the system.
//
// The kernel follows the all-pairs tiling of the 2-BS framework paper (section 3.2,
// Register-SHM): a work item is a pair of tiles (ta, tb) of G2_TILE = G2_B * G2_RT rows; the
// block holds the G2_TILE rows of tile ta of side a in registers (G2_RT rows per thread, every
// referenced column), stages tile tb of side b in shared memory (column-major, with the NULL
// flags when the side has NULLs) and calls gpu2bs_pair(a row, b row) for every pair of the two
// tiles. Self jobs visit the upper triangle of tile pairs (ta <= tb) and, in a diagonal tile,
// only the pairs i < j, so every unordered pair of distinct rows is evaluated once, with a = the
// lower index. Two-relation jobs visit all Ma x Mb tile pairs, row by row. A launch covers the
// consecutive items [item0, item0 + count), per_block of them per block (the host slices the
// work so it can poll for cancel between launches).
//
// Outputs by G2_KIND:
//   0 Count (Type-I): per-thread 32-bit counters, warp shuffle reduction, one 64-bit atomic per
//     block and launch (a block examines fewer than 2^32 pairs per launch).
//   1 Sum (Type-I): per thread a float64 Neumaier (compensated) sum of the kept values widened
//     from real, the thread's pairs of one item in the order (b row j ascending, then register
//     row r ascending); at the end of every item the block combines its threads' (sum, comp)
//     pairs in a fixed tree (shuffle-down within each warp, then warp 0 over the warps in
//     order) and writes the item's pair to partial[item - item0]. The host folds the items'
//     pairs in item order (expr_gpu.cu), so the sum does not depend on the slicing, the launch
//     configuration of a slice or the scheduling of blocks.
//   2 Histogram (Type-II): the bucket of the value exactly as PostgreSQL 15's
//     width_bucket_float8 computes it (in float64, the value widened from real); values outside
//     [lo, hi) are not counted, a NaN value raises G2_HIST_NAN (PostgreSQL raises for it).
//     Counts go to `copies` private 32-bit histograms per block in shared memory (lane l uses
//     copy l % copies: warp-level output privatization, copies chosen by the privatization
//     model; with G2_TABLE the copies' bins interleaved, bin m of copy c at word m * copies + c),
//     merged into the global 64-bit histogram when the block ends; copies = 0: global 64-bit
//     atomics. The host takes the count of kept pairs as the histogram's sum. With
//     G2_EDGES the bucket comes without the float64 division: a float guess within a proven
//     rounding bound of the quotient, and for the pairs within that bound of an edge the
//     table of edges that g2_edges computes with the kernel's own bucket function (g2_visit).
//     With G2_TABLE (float32, value = F(g), the source defines gpu2bs_pair_inner and
//     gpu2bs_outer) the kernel buckets g against the thresholds that g2_tables derives from F
//     (see "Threshold table" below): without G2_CLIMB through the folded cell map (g2_cell,
//     at most one threshold per cell, no branch per pair, shared copies only), with G2_CLIMB
//     through the linear cells and a climb; that program (G2_PART 1) has no g2_check /
//     g2_tables, which form a second program (G2_PART 2).
//   3 Join (Type-III): the kept pairs to a direct output buffer: per warp and step one atomic
//     reservation on the global counter, the lanes' records at consecutive positions; records
//     past `cap` are not written, but counted, so the host sees the buffer overflow and runs
//     the slice again in smaller pieces.
// G2_COMPACT: one tile loop (every tile through the edge-tile loop): less code to compile.
// Errors: gpu2bs_raise records the first code of the block in shared memory; the block stops at
// the next item and publishes it to the call's error word (first code wins); every block stops
// at its next item once the word is set.
#pragma once

namespace gpu2bs {
namespace exprgpu {
namespace text {

// After `typedef <float|double> real;`: the ABI types and helpers.
constexpr const char* kPrelude = R"G2SRC(
struct Row {
  const real* __restrict__ col;
  const unsigned char* __restrict__ nul;
  long long stride;
};
__shared__ int g2_block_error;  // the first code raised in this block (0: none)
// The value of column c of row r.
static __device__ __forceinline__ real gpu2bs_col(const Row& r, int c) {
  return r.col[c * r.stride];
}
// True when column c of row r is NULL.
static __device__ __forceinline__ bool gpu2bs_isnull(const Row& r, int c) {
  return r.nul != 0 && r.nul[c * r.stride] != 0;
}
// Records error `code` for the host; the first code of the block wins.
static __device__ __forceinline__ void gpu2bs_raise(int code) {
  if (code != 0) atomicCAS(&g2_block_error, 0, code);
}
// The generated functions (defined next), inlined into the kernel; gpu2bs_pair_key only where
// the source defines G2_PAIR_KEY.
__device__ __forceinline__ bool gpu2bs_pair(const Row& a, const Row& b, real* value);
__device__ __forceinline__ unsigned gpu2bs_pair_key(const Row& a, const Row& b);
)G2SRC";

// After the generated gpu2bs_pair: the kernel `g2_kernel` of the configured kind.
constexpr const char* kKernel = R"G2SRC(
#define G2_TILE (G2_B * G2_RT)
#define G2_NAC (G2_NA > 0 ? G2_NA : 1)
#define G2_NBC (G2_NB > 0 ? G2_NB : 1)
// Bytes of the staged b tile (values, then NULL flags), rounded up to 16.
#define G2_SB_BYTES ((sizeof(real) * G2_NBC * G2_TILE + (G2_NULLS_B ? G2_NBC * G2_TILE : 0) + 15) / 16 * 16)

struct G2Pair {
  unsigned i, j;
  double dist;
};

struct G2Args {
  const real* a;              // side a, column-major: a[c * na + i]
  const unsigned char* an;    // its NULL flags (same layout) or null
  long long na;
  const real* b;              // side b (self: side a)
  const unsigned char* bn;
  long long nb;
  long long ta, tb;           // tiles along a and b (self: both M)
  long long item0, count, per_block;
  int* error;                 // the call's error word (first code)
  unsigned long long* counter;  // kept pairs (Join: pairs found, also past cap)
  double2* partial;           // Sum: (sum, comp) of item item0 + k at k
  unsigned long long* hist;   // Histogram: nbuckets 64-bit counts
  double lo, hi, span, nbd;   // Histogram: bounds, hi - lo, nbuckets as double
  int nbuckets, copies, stride;
  G2Pair* out;                // Join: the direct output buffer
  unsigned long long cap;     // its capacity in pairs
  const real* edges;          // Histogram with G2_EDGES: the nbuckets + 1 edges (g2_edges)
  double q_scale, q_off, q_tol;  // G2_EDGES, used rounded to real: |fl(v * q_scale + q_off) -
                                 // Q| <= q_tol for every counted v (g2_visit)
  const float* tab_ts;        // G2_TABLE: the nbuckets + 3 thresholds of g (g2_tables)
  const unsigned* tab_ce;     // G2_TABLE: the G2_CELLS cell entries (with G2_CLIMB), else the
                              // tab_cells 32-bit entries of the folded map (g2_tables)
  const float* tab_par;       // G2_TABLE: the position map's scale and offset (g2_pos), the
                              // NaN and NULL g's outcomes (int bits), then par[4]: 1 when a
                              // folded-map cell holds two thresholds (phase 2)
  int tab_dec;                // G2_TABLE: F is non-increasing (else non-decreasing)
  int tab_bytes;              // G2_TABLE: shared bytes of the tables (before the histograms)
  int tab_cells;              // G2_TABLE without G2_CLIMB: the cells of the folded map (g2_cell)
  float tm_c, tm_w;           // the folded map's centre and half-width
  int tm_s, tm_kb;            // its shift of the bits of h and the smallest kept h >> shift
};

// The bucket of v, minus one, as PostgreSQL 15's width_bucket_float8 computes it in float64
// (the value widened from real): -1 below lo, nbuckets at or above hi (also where the quotient
// rounds up to nbuckets + 1). Non-decreasing in v for non-NaN v.
static __device__ __forceinline__ int g2_bucket(real v, const G2Args& g) {
  const double x = (double)v;
  if (x < g.lo) return -1;
  if (x >= g.hi) return g.nbuckets;
  const double q = g.nbd * (x - g.lo) / g.span + 1.0;
  const int k = (int)q - 1;
  return k < g.nbuckets ? k : g.nbuckets;
}

// Items before row r of the upper triangle of an M x M tile matrix.
static __device__ __forceinline__ long long g2_row_start(long long r, long long M) {
  return r * M - r * (r - 1) / 2;
}

// Linear item t -> tile pair (ta, tb).
static __device__ void g2_item(long long t, const G2Args& g, long long* ta, long long* tb) {
#if G2_SELF
  const long long M = g.ta;
  const double A = 2.0 * double(M) + 1.0;
  const double disc = A * A - 8.0 * double(t);
  long long r = (long long)((A - sqrt(disc > 0 ? disc : 0.0)) * 0.5);
  r = r < 0 ? 0 : (r > M - 1 ? M - 1 : r);
  while (r + 1 < M && g2_row_start(r + 1, M) <= t) ++r;
  while (r > 0 && g2_row_start(r, M) > t) --r;
  *ta = r;
  *tb = r + (t - g2_row_start(r, M));
#else
  *ta = t / g.tb;
  *tb = t - *ta * g.tb;
#endif
}

// (s, c) += x, Neumaier's compensated summation.
static __device__ __forceinline__ void g2_nadd(double& s, double& c, double x) {
  const double t = s + x;
  if (fabs(s) >= fabs(x))
    c += (s - t) + x;
  else
    c += (x - t) + s;
  s = t;
}

// Sum of a 64-bit value over the block (thread 0 gets it); `ws` holds 32 words.
static __device__ __forceinline__ unsigned long long g2_block_sum(unsigned long long v,
                                                                  unsigned long long* ws) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) ws[w] = v;
  __syncthreads();
  v = 0;
  if (w == 0) {
    v = lane < (G2_B + 31) / 32 ? ws[lane] : 0ull;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  }
  return v;
}

// Combines the threads' (s, c) pairs in a fixed tree: shuffle-down within each warp, then warp
// 0 over the warps in order; thread 0 gets the block's pair.
static __device__ __forceinline__ void g2_block_nsum(double& s, double& c, double2* ws) {
  for (int o = 16; o > 0; o >>= 1) {
    const double s2 = __shfl_down_sync(0xffffffffu, s, o);
    const double c2 = __shfl_down_sync(0xffffffffu, c, o);
    g2_nadd(s, c, s2);
    c += c2;
  }
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) ws[w] = make_double2(s, c);
  __syncthreads();
  if (w == 0) {
    const bool have = lane < (G2_B + 31) / 32;
    s = have ? ws[lane].x : 0.0;
    c = have ? ws[lane].y : 0.0;
    for (int o = 16; o > 0; o >>= 1) {
      const double s2 = __shfl_down_sync(0xffffffffu, s, o);
      const double c2 = __shfl_down_sync(0xffffffffu, c, o);
      g2_nadd(s, c, s2);
      c += c2;
    }
  }
}

// G2_TABLE without G2_CLIMB: the folded cell map of g (g2_cell), in registers.
struct G2Map {
  float c, w;  // centre and half-width
  float hmin;  // the float of bits max(kb << s, 1): the smallest h kept (g2_fold_q)
  int s, kb;   // shift of the bits of h, smallest kept h >> s
  int k2;      // 2 cells - 1 + kb: the right half's cells count down from it
  unsigned mk; // the low bits of a cell entry that hold 4 m0 (g2_m0_mask)
  unsigned ce_l, ce_r;  // shared addresses of the halves' entries minus 4 kb (g2_cell_addr)
  unsigned ts_sh;       // shared-memory address of the thresholds
};

// A 32-bit word of shared memory at address a (tables written before the block's first sync).
static __device__ __forceinline__ unsigned g2_lds(unsigned a) {
  unsigned v;
  asm("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(a));
  return v;
}

// The folded map's cell entries hold 4 m0 (m0 at most nbuckets + 1) in the low bits this mask
// covers and the bits of the threshold ts[m0 + 1] above those.
static __device__ __forceinline__ unsigned g2_m0_mask(int nb) {
  return (2u << (31 - __clz(4 * (nb + 1)))) - 1u;
}

// The folded map's q + kb for d = g - c: bits(max(w - |d|, hmin)) >> s. The one float maximum
// with hmin clamps both h (to the smallest subnormal) and q (to kb): for positive floats the
// order of the bits is that of the values, and max(bits, kb << s) >> s is max(bits >> s, kb).
static __device__ __forceinline__ int g2_fold_q(float d, const G2Map& m) {
  const float h = fmaxf(__fsub_rn(m.w, fabsf(d)), m.hmin);
  return __float_as_int(h) >> m.s;
}

// G2_TABLE without G2_CLIMB: the cell of g in [0, 2 H), non-decreasing in g (also for +-inf;
// NaN lands in some cell, its class is replaced). With d = g - c and h = max(w - |d|, the
// smallest subnormal) (both rounded, so non-increasing in |d|), q = max(bits(h) >> s, kb) - kb
// is in [0, H) and grows as g approaches c from either side: the left half (d < 0) counts up
// (q), the right half counts down (2 H - 1 - q). The cells are narrow where h is small, i.e.
// near c - w and c + w, in proportion to h (the bits of a float are its binade and mantissa).
static __device__ __forceinline__ int g2_cell(float x, const G2Map& m) {
  const float d = __fsub_rn(x, m.c);
  const int q = g2_fold_q(d, m);
  return d < 0.f ? q - m.kb : m.k2 - q;
}

// The shared address of the entry of x's cell (g2_cell) in the kernel's layout: the left half's
// cells in order, then the right half's in reverse (g2_fold_pos), so that both halves' entries
// lie at a base plus 4 q (the base chosen by the sign of d, kb folded into it).
static __device__ __forceinline__ unsigned g2_cell_addr(float x, const G2Map& m) {
  const float d = __fsub_rn(x, m.c);
  const int q = g2_fold_q(d, m);
  return (d < 0.f ? m.ce_l : m.ce_r) + 4u * unsigned(q);
}

// Where the kernel keeps the entry of cell j of `cells` (g2_cell_addr): j in the left half,
// 3 H - 1 - j in the right half (H = cells / 2).
static __device__ __forceinline__ int g2_fold_pos(int j, int cells) {
  const int h = cells >> 1;
  return j < h ? j : 3 * h - 1 - j;
}

// G2_TABLE: where a thread counts its pairs, all in registers (the hot loop reads no G2Args).
struct G2Bins {
  unsigned sh;               // shared-memory address of the thread's copy (bin 0)
  unsigned mul;              // the copies (bins interleaved); 0: the global histogram
  unsigned long long* hist;  // the global histogram (copies = 0)
  int nb, dec;               // nbuckets, F non-increasing
};

// Per-thread output state of one launch.
struct G2Acc {
  unsigned cnt;
  double s, c;
  unsigned hbase;          // the first word of the thread's private histogram copy
  G2Bins bins;             // G2_TABLE: the thread's bins
  float t_cs, t_co;       // G2_TABLE: the cell map
  int t_nan, t_null;      // G2_TABLE: the class offset (or -fault) of a NaN or NULL g
  const float* ts;        // G2_TABLE: the thresholds in shared memory
  const unsigned* ce;     // G2_TABLE: the cell entries in shared memory
  G2Map map;              // G2_TABLE without G2_CLIMB: the cell map
  unsigned o_nan, o_null; // G2_TABLE without G2_CLIMB: the bin offset of a NaN or NULL g
  real e_first, e_last;   // G2_EDGES: edges[0] and edges[nbuckets]
  real q_scale, q_off, q_tol;  // G2_EDGES: G2Args' as real
};

#if G2_KIND == 2 && G2_EDGES
// Added to a value below 2^22 in magnitude, 1.5 * 2^(mantissa bits) rounds it to an integer
// (round to nearest), which is then the low word of the sum's bit pattern (g2_low).
#define G2_ROUND (sizeof(real) == 4 ? (real)12582912.0f : (real)6755399441055744.0)
// x * y + z with one rounding.
static __device__ __forceinline__ real g2_fma(real x, real y, real z) {
  if (sizeof(real) == 4) return (real)__fmaf_rn((float)x, (float)y, (float)z);
  return (real)__fma_rn((double)x, (double)y, (double)z);
}
// The integer in the low word of r = G2_ROUND + integer.
static __device__ __forceinline__ int g2_low(real r) {
  if (sizeof(real) == 4) return __float_as_int((float)r) - 0x4B400000;
  return __double2loint((double)r);
}
// The bucket of a counted v from the nb + 1 edges (global memory, read through the cache),
// starting at the guess k: the k with edges[k] <= v < edges[k + 1].
static __device__ __noinline__ int g2_edge_bucket(real v, int k, const real* __restrict__ edges,
                                                  int nb) {
  k = k < 0 ? 0 : (k > nb - 1 ? nb - 1 : k);
  while (v < __ldg(edges + k)) --k;
  while (v >= __ldg(edges + k + 1)) ++k;
  return k;
}

// Order-preserving keys of the non-NaN values of real (as unsigned integers of its width).
typedef unsigned long long g2_u64;
static __device__ __forceinline__ g2_u64 g2_key(real v) {
  if (sizeof(real) == 4) {
    const unsigned u = __float_as_uint((float)v);
    return (u >> 31) ? (g2_u64)(~u) : (g2_u64)(u | 0x80000000u);
  } else {
    const g2_u64 u = (g2_u64)__double_as_longlong((double)v);
    return (u >> 63) ? ~u : (u | 0x8000000000000000ull);
  }
}
// The value of key k (g2_key's inverse).
static __device__ __forceinline__ real g2_unkey(g2_u64 k) {
  if (sizeof(real) == 4) {
    const unsigned u = (unsigned)k;
    return (real)__uint_as_float((u >> 31) ? (u & 0x7fffffffu) : ~u);
  } else {
    return (real)__longlong_as_double((long long)((k >> 63) ? (k & 0x7fffffffffffffffull) : ~k));
  }
}

// The bucket edges: thread k (0 <= k <= nbuckets) writes to out[k] the smallest non-NaN value v
// (in the order of values; -0 before +0, which share every bucket) with g2_bucket(v) >= k, by
// bisection over the keys from -inf to +inf (g2_bucket(+inf) = nbuckets). g2_bucket is
// non-decreasing, so for every non-NaN v: g2_bucket(v) = the largest k with out[k] <= v, or -1.
extern "C" __global__ void g2_edges(const G2Args g, real* out) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k > g.nbuckets) return;
  // The keys of -inf and +inf.
  g2_u64 lo = sizeof(real) == 4 ? 0x007fffffull : 0x000fffffffffffffull;
  g2_u64 hi = sizeof(real) == 4 ? 0xff800000ull : 0xfff0000000000000ull;
  while (lo < hi) {
    const g2_u64 mid = lo + (hi - lo) / 2;
    if (g2_bucket(g2_unkey(mid), g) >= k)
      hi = mid;
    else
      lo = mid + 1;
  }
  out[k] = g2_unkey(lo);
}
#endif

#if G2_KIND == 2 && G2_TABLE
// Threshold table of a float32 histogram whose value is F(g) (the generated gpu2bs_pair_inner
// computes g, gpu2bs_outer computes F). Per non-NaN g the class m(g) in 0 .. nbuckets + 1 is
// g2_bucket(F(g)) + 1 where F is non-decreasing, nbuckets - g2_bucket(F(g)) where it is
// non-increasing: non-decreasing in g once g2_check has found F monotone over every float of
// g's domain, free of faults, NULLs and NaN, and equal at -0 and +0. ts[j] is the smallest g
// with m(g) >= j (ts[0] = -inf; NaN where there is none, and ts[nbuckets + 2]), so m(g) is the
// largest j with ts[j] <= g; the pair is counted when 1 <= m <= nbuckets.
// The position p(g) (g2_pos) is non-decreasing in g, in [0, G2_CELLS * G2_SUB): cell p / G2_SUB,
// sub-position p % G2_SUB; the finite thresholds map into [1, G2_CELLS * G2_SUB - 2], so g
// outside their range lands on sub-positions no threshold shares. The cell's entry (g2_tables)
// holds 4 m0 in bits 16-31 (m0 the class of the smallest g of the cell: the byte offset of its
// bin), q in bits 0-7, the sub-position of ts[m0 + 1] when that threshold lies in the cell (else
// G2_SUB), and r in bits 8-15, that of ts[m0 + 2] when q is in the cell and so is that
// threshold (else G2_SUB); q <= r. As p is non-decreasing, p(g) < p(t) implies g < t and
// p(g) > p(t) implies g > t, so for g of sub-position s in the cell: s < q gives m0, q < s < r
// gives m0 + 1, and only s = q or s >= r needs the thresholds themselves (a climb from that
// class; the cells are fine enough that few pairs take it). One shared load per pair settles
// the class (G2_CLIMB; without it the folded map of g2_cell and g2_tables phase 2 replace the
// position, the cells and the climb). The shared histograms have a bin per class (0 ..
// nbuckets + 1), at byte offset 4 m of the copy, then two fault bins (without G2_CLIMB).
// Keys: order-preserving unsigned patterns of the non-NaN floats.
static __device__ __forceinline__ unsigned g2_key32(float v) {
  const unsigned u = __float_as_uint(v);
  return u ^ ((unsigned)((int)u >> 31) | 0x80000000u);
}
// The float of key k (g2_key32's inverse).
static __device__ __forceinline__ float g2_unkey32(unsigned k) {
  return __uint_as_float((k >> 31) ? (k & 0x7fffffffu) : ~k);
}
// The keys of g's domain: [-inf, +inf], or [+0, +inf] when g is never negative nor -0.
#define G2_KLO (G2_INNER_NONNEG ? 0x80000000u : 0x007fffffu)
#define G2_KHI 0xff800000u
// Sub-positions per cell (G2_SUB < 256, G2_CELLS * G2_SUB <= 2^22) and the entry's fields.
#define G2_SUB_BITS 7
#define G2_SUB (1 << G2_SUB_BITS)
#define G2_POS (G2_CELLS * G2_SUB)
#define G2_E_OFF(e) ((e) >> 16)
#define G2_E_Q(e) ((e) & 255u)
#define G2_E_R(e) (((e) >> 8) & 255u)
// The position of g: fl(g * cs + co2) clamped to [1.5 * 2^23, 1.5 * 2^23 + G2_POS - 1] (co2
// holds 1.5 * 2^23, so the value is an integer and its low word the position): non-decreasing
// in g (also for g far outside the thresholds' range and for +-inf).
static __device__ __forceinline__ int g2_pos(float x, float cs, float co2) {
  const float f = fminf(fmaxf(__fmaf_rn(x, cs, co2), 12582912.0f), 12582912.0f + (float)(G2_POS - 1));
  return __float_as_int(f) - 0x4B400000;
}
// The class m of g (above), from gpu2bs_outer and the kernel's own g2_bucket.
static __device__ int g2_class(float x, const G2Args& g) {
  real v = (real)0;
  (void)gpu2bs_outer((real)x, false, &v);
  const int b = g2_bucket(v, g);
  return g.tab_dec ? g.nbuckets - b : b + 1;
}
#if G2_PART == 2
// Checks F = gpu2bs_outer over the keys [k0, k0 + chunk) of g's domain, each thread one chunk
// (and the key before it, so consecutive chunks overlap): flags |= 1 where F decreases, 2
// where it increases, 4 where it raises a fault, is NULL or NaN, or differs between -0 and +0.
extern "C" __global__ void g2_check(unsigned chunk, unsigned* flags) {
  const unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned long long k0 = (unsigned long long)G2_KLO + t * chunk;
  if (k0 > G2_KHI) return;
  unsigned long long k1 = k0 + chunk;
  if (k1 > (unsigned long long)G2_KHI + 1) k1 = (unsigned long long)G2_KHI + 1;
  unsigned bits = 0;
  real prev = (real)0;
  bool have = false;
  for (unsigned long long k = k0 > G2_KLO ? k0 - 1 : k0; k < k1; ++k) {
    real v = (real)0;
    const int s = gpu2bs_outer((real)g2_unkey32((unsigned)k), false, &v);
    if (s != 0 || v != v) {
      bits |= 4u;
      have = false;
      continue;
    }
    if (have) {
      if (v < prev) bits |= 1u;
      if (v > prev) bits |= 2u;
    }
    prev = v;
    have = true;
  }
  if (t == 0) {
    real vn = (real)0, vp = (real)0;
    const int sn = gpu2bs_outer(-(real)0, false, &vn), sp = gpu2bs_outer((real)0, false, &vp);
    if (sn != sp || vn != vp) bits |= 4u;
  }
  if (bits) atomicOr(flags, bits);
}
// The tables: phase 0, thread j < nbuckets + 1 computes ts[j + 1] by bisection over the keys
// (ts[0] and ts[nbuckets + 2] fixed); phase 1, the position map from the finite thresholds
// (thread 0 stores it) and thread c < G2_CELLS computes the entry ce[c]: m0 by bisecting for
// the smallest key of cell c, q and r from the positions of the next two thresholds.
extern "C" __global__ void g2_tables(const G2Args g, int phase, float* ts, unsigned* ce,
                                     float* par) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  const int nb = g.nbuckets;
  const float nan = __int_as_float(0x7fffffff);
  if (phase == 0) {
    if (j == 0) {
      ts[0] = -__int_as_float(0x7f800000);
      ts[nb + 2] = nan;
      // The pairs whose g is NaN or NULL: F of those, as a class's byte offset (NULL: class 0,
      // not counted) or minus the fault that gpu2bs_pair raises for them.
      for (int w = 0; w < 2; ++w) {
        real v = (real)0;
        const int s = gpu2bs_outer(w == 0 ? (real)nan : (real)0, w == 1, &v);
        int code = 0;
        if (s > 0)
          code = -s;
        else if (s < 0)
          code = 0;
        else if (v != v)
          code = -G2_HIST_NAN;
        else
          code = 4 * (g.tab_dec ? nb - g2_bucket(v, g) : g2_bucket(v, g) + 1);
        par[2 + w] = __int_as_float(code);
      }
    }
    if (j > nb) return;
    const int want = j + 1;
    unsigned long long lo = G2_KLO, hi = (unsigned long long)G2_KHI + 1;
    while (lo < hi) {
      const unsigned long long mid = lo + (hi - lo) / 2;
      if (g2_class(g2_unkey32((unsigned)mid), g) >= want)
        hi = mid;
      else
        lo = mid + 1;
    }
    ts[want] = lo > G2_KHI ? nan : g2_unkey32((unsigned)lo);
    return;
  }
  if (phase == 2) {
    // The folded map's cells (g2_cell, parameters in g from the host): m0 is the number of
    // thresholds ts[1 ..] in cells before j (-inf ones in none: they are below every g), so a g
    // of cell j has class m0 + (g >= ts[m0 + 1]) when at most one threshold lies in the cell;
    // par[4] gets 1 where a cell holds two (the kernel with the climb then runs instead). The
    // entry of cell j is 4 m0 in the bits of g2_m0_mask and the bits of ts[m0 + 1] (NaN where
    // there is none) above, so that one 32-bit shared load per pair decides the class except
    // for a g whose bits share those upper bits.
    const int cells = g.tab_cells;
    if (j >= cells) return;
    G2Map m;
    m.c = g.tm_c;
    m.w = g.tm_w;
    m.s = g.tm_s;
    m.kb = g.tm_kb;
    m.k2 = cells - 1 + g.tm_kb;
    m.hmin = __int_as_float(max(g.tm_kb << g.tm_s, 1));
    // The cell of threshold k (ts[k] non-NaN); -1 for -inf.
    auto tcell = [&](int k) -> int {
      const float t = ts[k];
      return t == -__int_as_float(0x7f800000) ? -1 : g2_cell(t, m);
    };
    int lo = 1, hi = nb + 2;  // the first k in [1, nb + 2] with ts[k] NaN or in cell >= j
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      const float t = ts[mid];
      if (t == t && tcell(mid) < j)
        lo = mid + 1;
      else
        hi = mid;
    }
    const int m0 = lo - 1;
    ce[j] = (__float_as_uint(ts[m0 + 1]) & ~g2_m0_mask(nb)) | unsigned(4 * m0);
    const int k1 = m0 + 1, k2 = m0 + 2;
    if (k2 <= nb + 2 && ts[k1] == ts[k1] && ts[k2] == ts[k2] && tcell(k1) == j && tcell(k2) == j)
      atomicOr(reinterpret_cast<unsigned*>(par + 4), 1u);
    return;
  }
  if (j >= G2_CELLS) return;
  // The range of the finite thresholds ts[1 .. nb + 1] (non-decreasing, NaN at the end).
  float ga = 0.f, gb = 0.f;
  bool any = false;
  for (int w = 1; w <= nb + 1; ++w) {
    const float x = ts[w];
    if (x != x) break;
    if (isinf(x)) continue;
    if (!any) ga = x;
    gb = x;
    any = true;
  }
  float cs = 1.f, co = 0.f;
  if (any && gb > ga) {
    const double sc = (double)(G2_POS - 3) / ((double)gb - (double)ga);
    if (sc < 3.0e38) {
      cs = (float)sc;
      co = (float)(1.0 - (double)ga * (double)cs);
    }
  }
  const float co2 = __fadd_rn(co, 12582912.0f);
  if (j == 0) {
    par[0] = cs;
    par[1] = co2;
  }
  unsigned long long lo = G2_KLO, hi = (unsigned long long)G2_KHI + 1;
  while (lo < hi) {
    const unsigned long long mid = lo + (hi - lo) / 2;
    if (g2_pos(g2_unkey32((unsigned)mid), cs, co2) >= j * G2_SUB)
      hi = mid;
    else
      lo = mid + 1;
  }
  const int m0 = lo > G2_KHI ? nb + 1 : g2_class(g2_unkey32((unsigned)lo), g);
  // The sub-position of threshold ts[w] when it lies in cell j (NaN: none; beyond the table:
  // none), else G2_SUB.
  auto sub_in_cell = [&](int w) -> unsigned {
    if (w > nb + 2) return G2_SUB;
    const float t = ts[w];
    if (t != t) return G2_SUB;
    const int p = g2_pos(t, cs, co2);
    return (p >> G2_SUB_BITS) == j ? unsigned(p & (G2_SUB - 1)) : unsigned(G2_SUB);
  };
  const unsigned q = sub_in_cell(m0 + 1);
  const unsigned r = q < G2_SUB ? sub_in_cell(m0 + 2) : unsigned(G2_SUB);
  ce[j] = (unsigned(4 * m0) << 16) | (r << 8) | q;
}
#endif
// Counts class m's pair (off = 4 m): a shared-memory reduction (no value returned) on the
// thread's bin, word m * copies + copy (the copies' bins interleaved: lanes of different copies
// never share a bank at 32 copies and rarely at fewer), or the global bucket (copies = 0: no
// padding bins, so only classes 1 .. nbuckets).
static __device__ __forceinline__ void g2_count_class(const G2Bins& b, unsigned off) {
  if (b.mul != 0u) {
    asm volatile("red.shared.add.u32 [%0], 1;" ::"r"(b.sh + off * b.mul) : "memory");
  } else {
    const int m = int(off >> 2);
    if (m >= 1 && m <= b.nb) atomicAdd(b.hist + (b.dec ? b.nb - m : m - 1), 1ull);
  }
}
// A pair whose g is NaN or NULL: `sp`, the class offset to count or minus the fault to raise
// (out of line: rare, one copy instead of one per unrolled call).
static __device__ __noinline__ void g2_visit_special(G2Bins b, int sp) {
  if (sp >= 0)
    g2_count_class(b, unsigned(sp));
  else
    gpu2bs_raise(-sp);
}
#endif

// Four consecutive values of a staged column (16-byte aligned) with vector loads.
static __device__ __forceinline__ void g2_load4(const real* p, real* out) {
  if (sizeof(real) == 4) {
    const float4 v = *reinterpret_cast<const float4*>(p);
    out[0] = v.x;
    out[1] = v.y;
    out[2] = v.z;
    out[3] = v.w;
  } else {
    const double2 v0 = *reinterpret_cast<const double2*>(p);
    const double2 v1 = *reinterpret_cast<const double2*>(p + 2);
    out[0] = v0.x;
    out[1] = v0.y;
    out[2] = v1.x;
    out[3] = v1.y;
  }
}

#if G2_KIND == 0 && defined(G2_PAIR_KEY)
// cnt += the number of keys k[i] <= G2_KEY_MAX: each as the carry of G2_KEY_MAX - k[i]
// (sub.cc sets the carry when nothing is borrowed), the carries added two at a time (ptxas
// emits one IADD3 with carry out per key and one IADD3.X with two carry-ins per two keys).
template <int N>
static __device__ __forceinline__ void g2_count_keys(unsigned& cnt, const unsigned (&k)[N]) {
  static_assert(N % 2 == 0, "keys come in twos");
#pragma unroll
  for (int i = 0; i < N; i += 2)
    asm("{\n\t.reg .u32 t;\n\t"
        "sub.cc.u32 t, %1, %2;\n\t"
        "addc.cc.u32 %0, %0, 0;\n\t"
        "sub.cc.u32 t, %1, %3;\n\t"
        "addc.u32 %0, %0, 0;\n\t}"
        : "+r"(cnt)
        : "r"((unsigned)(G2_KEY_MAX)), "r"(k[i]), "r"(k[i + 1]));
}
#endif

// One pair: register row `ra` of the thread against row `rb` of side b (global index jg).
// `ok` says the pair exists (both rows real, i < j in a diagonal tile). Every lane of the warp
// calls it with the same b row (Join: the warp-wide reservation).
static __device__ __forceinline__ void g2_visit(const G2Args& g, G2Acc& acc, const Row& ra,
                                                const Row& rb, unsigned* sh, bool ok,
                                                long long i, long long jg) {
  real v = real(0);
  bool keep = false;
#if !(G2_KIND == 2 && G2_TABLE)
  if (ok) keep = gpu2bs_pair(ra, rb, &v);
#endif
#if G2_KIND == 0
  acc.cnt += keep ? 1u : 0u;
#elif G2_KIND == 1
  if (keep) {
    g2_nadd(acc.s, acc.c, (double)v);
    acc.cnt += 1u;
  }
#elif G2_KIND == 2 && G2_TABLE && !G2_CLIMB
  // The value is F(g): at most one threshold per cell (g2_tables phase 2), so the class is the
  // cell's m0 plus (g >= ts[m0 + 1]). The cell's entry e holds 4 m0 in its low bits (mask mk)
  // and the upper bits of t = ts[m0 + 1] above: the floats whose upper bits are t's form one
  // interval of values holding t and the float of e, so a g outside it compares with the
  // float of e as with t; a g inside it compares with t itself (shared memory, loaded only by
  // the lanes with such a g). The sign bit is left out of the test: -0 and +0 are equal values
  // with different signs, so a zero g beside a threshold of zero's upper bits (a subnormal t,
  // m0 = 0: e is +0 or -0) compares with t itself. A g that is NaN or NULL (s = 2, 3) or a pair not
  // kept (s = 0: class 0, not counted) takes its bin by selection: no branch per pair. The
  // count is a shared-memory reduction on the thread's copy (always shared here); the
  // reduction has no memory clobber, so the table loads of the step's pairs interleave.
  (void)keep;
  if (ok) {
    float x = 0.f;
    const int s = gpu2bs_pair_inner(ra, rb, &x);
    const unsigned e = g2_lds(g2_cell_addr(x, acc.map));
    unsigned off = e & acc.map.mk;
    bool up = x >= __uint_as_float(e);
    if (((__float_as_uint(x) ^ e) & 0x7fffffffu) <= acc.map.mk)
      up = x >= __uint_as_float(g2_lds(acc.map.ts_sh + off));
    off += up ? 4u : 0u;
    off = s == 1 ? off : (s == 2 ? acc.o_nan : (s == 3 ? acc.o_null : 0u));
    asm volatile("red.shared.add.u32 [%0], 1;" ::"r"(acc.bins.sh + off * acc.bins.mul));
  }
#elif G2_KIND == 2 && G2_TABLE
  // The value is F(g): the class of g from its cell's entry and, for few pairs, the thresholds
  // (exactly g2_bucket(F(g)), see g2_tables); g NaN or NULL: the outcome g2_tables derived.
  (void)keep;
  if (ok) {
    float x = 0.f;
    const int s = gpu2bs_pair_inner(ra, rb, &x);
    if (s == 1) {
      const int p = g2_pos(x, acc.t_cs, acc.t_co);
      const unsigned e = acc.ce[p >> G2_SUB_BITS];
      const unsigned sub = unsigned(p) & unsigned(G2_SUB - 1), q = G2_E_Q(e);
      unsigned off = G2_E_OFF(e) + (sub > q ? 4u : 0u);
      if (sub == q || sub >= G2_E_R(e)) {
        while (x >= *reinterpret_cast<const float*>(reinterpret_cast<const char*>(acc.ts) + off + 4)) off += 4;
      }
      g2_count_class(acc.bins, off);
    } else if (s >= 2) {  // g NaN or NULL: F's outcome for those (g2_tables)
      g2_visit_special(acc.bins, s == 2 ? acc.t_nan : acc.t_null);
    }
  }
#elif G2_KIND == 2
  if (keep) {
#if G2_EDGES
    // Counted iff edges[0] <= v < edges[nbuckets]. Q = nbuckets * (v - lo) / (hi - lo) in exact
    // arithmetic; the bucket is floor of the computed quotient, which lies within 2^-40 of Q.
    // t = fl(v * q_scale + q_off) lies within q_tol of Q (the host's bound on the rounding of
    // q_scale, q_off and the fused multiply-add, plus the quotient's). With m the integer
    // nearest t and d = t - m (exact), |d| > q_tol puts Q and the computed quotient strictly
    // between the same two integers: the bucket is m - 1 + (d > 0). Otherwise (pairs within
    // q_tol of an edge) the edges decide: the k with edges[k] <= v < edges[k + 1].
    if (v >= acc.e_first && v < acc.e_last) {
      const real t = g2_fma(v, acc.q_scale, acc.q_off);
      const real r = t + G2_ROUND;
      const real d = t - (r - G2_ROUND);
      int k = g2_low(r) - (d > real(0) ? 0 : 1);
      if (fabs(d) <= acc.q_tol) k = g2_edge_bucket(v, k, g.edges, g.nbuckets);
      if (g.copies > 0)
        atomicAdd(sh + acc.hbase + k, 1u);
      else
        atomicAdd(g.hist + k, 1ull);
    } else if (v != v) {
      gpu2bs_raise(G2_HIST_NAN);
    }
#else
    if (v != v) {
      gpu2bs_raise(G2_HIST_NAN);
    } else {
      const int k = g2_bucket(v, g);
      if (k >= 0 && k < g.nbuckets) {
        if (g.copies > 0)
          atomicAdd(sh + acc.hbase + k, 1u);
        else
          atomicAdd(g.hist + k, 1ull);
      }
    }
#endif
  }
#else
  const unsigned m = __ballot_sync(0xffffffffu, keep);
  if (m) {
    const int lane = threadIdx.x & 31;
    const int lead = __ffs(m) - 1;
    unsigned long long base = 0;
    if (lane == lead) base = atomicAdd(g.counter, (unsigned long long)__popc(m));
    base = __shfl_sync(0xffffffffu, base, lead);
    if (keep) {
      const unsigned long long pos = base + (unsigned long long)__popc(m & ((1u << lane) - 1u));
      if (pos < g.cap) {
        g.out[pos].i = (unsigned)i;
        g.out[pos].j = (unsigned)jg;
        g.out[pos].dist = (double)v;
      }
    }
  }
#endif
}

#if G2_PART != 2
// The tile kernel: items [item0, item0 + count), per_block consecutive items per block.
extern "C" __global__ void __launch_bounds__(G2_B) g2_kernel(const G2Args g) {
  extern __shared__ __align__(16) unsigned char g2_smem[];
  real* sb = reinterpret_cast<real*>(g2_smem);
  unsigned char* sbn = g2_smem + sizeof(real) * G2_NBC * G2_TILE;
#if G2_KIND == 2 && G2_TABLE
  unsigned* sh = reinterpret_cast<unsigned*>(g2_smem + G2_SB_BYTES + g.tab_bytes);
#else
  unsigned* sh = reinterpret_cast<unsigned*>(g2_smem + G2_SB_BYTES);
#endif
  __shared__ int g2_stop;
  __shared__ unsigned long long g2_ws[32];
  __shared__ double2 g2_ws2[32];
  const int tid = threadIdx.x;
  G2Acc acc;
  acc.cnt = 0;
  acc.s = 0.0;
  acc.c = 0.0;
  acc.hbase = 0;
  acc.e_first = acc.e_last = real(0);
  acc.q_scale = acc.q_off = acc.q_tol = real(0);
  if (tid == 0) {
    g2_block_error = 0;
    g2_stop = 0;
  }
#if G2_KIND == 2
  if (g.copies > 0) {
#if G2_TABLE
    acc.hbase = unsigned((tid & 31) % g.copies);
#else
    acc.hbase = unsigned((tid & 31) % g.copies) * unsigned(g.stride);
#endif
    for (int k = tid; k < g.copies * g.stride; k += G2_B) sh[k] = 0u;
  }
#endif
#if G2_KIND == 2 && G2_TABLE
  {
    float* ts = reinterpret_cast<float*>(g2_smem + G2_SB_BYTES);
    unsigned* ce = reinterpret_cast<unsigned*>(ts + g.nbuckets + 3);
    for (int k = tid; k < g.nbuckets + 3; k += G2_B) ts[k] = g.tab_ts[k];
#if G2_CLIMB
    for (int k = tid; k < G2_CELLS; k += G2_B) ce[k] = g.tab_ce[k];
#else
    {
      for (int k = tid; k < g.tab_cells; k += G2_B) ce[g2_fold_pos(k, g.tab_cells)] = g.tab_ce[k];
      acc.map.mk = g2_m0_mask(g.nbuckets);
      acc.map.c = g.tm_c;
      acc.map.w = g.tm_w;
      acc.map.s = g.tm_s;
      acc.map.kb = g.tm_kb;
      acc.map.k2 = g.tab_cells - 1 + g.tm_kb;
      acc.map.hmin = __int_as_float(max(g.tm_kb << g.tm_s, 1));
      // A NaN or NULL g: its class's bin, or the fault bins nbuckets + 2 and + 3 (raised when
      // the block ends).
      const int tn = __float_as_int(g.tab_par[2]), tl = __float_as_int(g.tab_par[3]);
      acc.o_nan = tn >= 0 ? unsigned(tn) : 4u * unsigned(g.nbuckets + 2);
      acc.o_null = tl >= 0 ? unsigned(tl) : 4u * unsigned(g.nbuckets + 3);
    }
#endif
    acc.ts = ts;
    acc.ce = ce;
    {
      const unsigned ce_sh = unsigned(__cvta_generic_to_shared(ce));
      acc.map.ce_l = ce_sh - 4u * unsigned(g.tm_kb);
      acc.map.ce_r = ce_sh + 4u * unsigned((g.tab_cells >> 1) - g.tm_kb);
    }
    // The address of ts[1] (the threshold of class offset 4 m0 is at 4 m0 past it), opaque to
    // the compiler so that it stays in one register instead of being rebuilt per pair.
    acc.map.ts_sh = unsigned(__cvta_generic_to_shared(ts + 1));
    asm volatile("mov.u32 %0, %0;" : "+r"(acc.map.ts_sh));
    acc.bins.sh = unsigned(__cvta_generic_to_shared(sh + acc.hbase));
    acc.bins.mul = g.copies > 0 ? unsigned(g.copies) : 0u;
    acc.bins.hist = g.hist;
    acc.bins.nb = g.nbuckets;
    acc.bins.dec = g.tab_dec;
    acc.t_cs = g.tab_par[0];
    acc.t_co = g.tab_par[1];
    acc.t_nan = __float_as_int(g.tab_par[2]);
    acc.t_null = __float_as_int(g.tab_par[3]);
  }
#endif
  __syncthreads();
#if G2_KIND == 2 && G2_EDGES
  acc.e_first = g.edges[0];
  acc.e_last = g.edges[g.nbuckets];
  acc.q_scale = (real)g.q_scale;
  acc.q_off = (real)g.q_off;
  acc.q_tol = (real)g.q_tol;
#endif
  long long it = g.item0 + (long long)blockIdx.x * g.per_block;
  long long end = it + g.per_block;
  if (end > g.item0 + g.count) end = g.item0 + g.count;
  long long ta = 0, tb = 0, cur_a = -1;
  if (it < end) g2_item(it, g, &ta, &tb);
  real ar[G2_RT][G2_NAC];
  unsigned char anl[G2_RT][G2_NAC];
  bool av[G2_RT];
  bool afull = false;
  for (; it < end; ++it) {
    if (ta != cur_a) {  // tile ta of side a into registers
      cur_a = ta;
      afull = (ta + 1) * G2_TILE <= g.na;
#pragma unroll
      for (int r = 0; r < G2_RT; ++r) {
        const long long idx = ta * G2_TILE + r * G2_B + tid;
        av[r] = idx < g.na;
#pragma unroll
        for (int c = 0; c < G2_NAC; ++c) {
          ar[r][c] = (G2_NA > 0 && av[r]) ? g.a[c * g.na + idx] : real(0);
          anl[r][c] = (G2_NULLS_A && G2_NA > 0 && av[r]) ? g.an[c * g.na + idx] : (unsigned char)0;
        }
      }
    }
    if (tid == 0 && g2_block_error == 0 && *(volatile int*)g.error != 0) g2_stop = 1;
    __syncthreads();  // everyone is done with the previous tile b
    if (g2_block_error != 0 || g2_stop != 0) break;
    const long long j0 = tb * G2_TILE;
    for (int j = tid; j < G2_TILE; j += G2_B) {
      const long long idx = j0 + j;
      const bool in = idx < g.nb;
#pragma unroll
      for (int c = 0; c < G2_NBC; ++c) {
        sb[c * G2_TILE + j] = (G2_NB > 0 && in) ? g.b[c * g.nb + idx] : real(0);
        if (G2_NULLS_B) sbn[c * G2_TILE + j] = (G2_NB > 0 && in) ? g.bn[c * g.nb + idx] : (unsigned char)0;
      }
    }
    __syncthreads();
    const int nr = (int)(g.nb - j0 < G2_TILE ? g.nb - j0 : G2_TILE);
    Row ra[G2_RT];
#pragma unroll
    for (int r = 0; r < G2_RT; ++r) {
      ra[r].col = ar[r];
      ra[r].nul = G2_NULLS_A ? anl[r] : 0;
      ra[r].stride = 1;
    }
    const long long i0 = ta * G2_TILE + tid;
    const bool diag = G2_SELF && ta == tb;
#if G2_KIND == 0 && defined(G2_PAIR_KEY)
    if (!diag && afull && nr == G2_TILE) {
      // Full tiles of a count whose predicate is key <= G2_KEY_MAX (gpu2bs_pair_key): the
      // 4 x G2_RT keys of a step, then the carry chain of g2_count_keys.
#pragma unroll 1
      for (int j = 0; j < G2_TILE; j += 4) {
        real bq[G2_NBC * 4];
        unsigned char bnq[G2_NBC * 4];
#pragma unroll
        for (int c = 0; c < G2_NBC; ++c) {
          g2_load4(sb + c * G2_TILE + j, bq + c * 4);
          if (G2_NULLS_B) {
            const unsigned w = *reinterpret_cast<const unsigned*>(sbn + c * G2_TILE + j);
#pragma unroll
            for (int u = 0; u < 4; ++u) bnq[c * 4 + u] = (unsigned char)(w >> (8 * u));
          }
        }
        unsigned kq[4 * G2_RT];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          Row rb;
          rb.col = bq + u;
          rb.nul = G2_NULLS_B ? bnq + u : 0;
          rb.stride = 4;
#pragma unroll
          for (int r = 0; r < G2_RT; ++r) kq[u * G2_RT + r] = gpu2bs_pair_key(ra[r], rb);
        }
        g2_count_keys<4 * G2_RT>(acc.cnt, kq);
      }
    } else
#endif
#if !G2_COMPACT
    if (!diag && afull && nr == G2_TILE) {
      // Full tiles: every pair exists, no predicate. Four b rows at a time come from shared
      // memory with vector loads (one per column) into registers; their Rows point there
      // (stride 4), so every column access of the generated function is a register.
      // 4 x G2_RT inlined calls per step.
#pragma unroll 1
      for (int j = 0; j < G2_TILE; j += 4) {
        real bq[G2_NBC * 4];
        unsigned char bnq[G2_NBC * 4];
#pragma unroll
        for (int c = 0; c < G2_NBC; ++c) {
          g2_load4(sb + c * G2_TILE + j, bq + c * 4);
          if (G2_NULLS_B) {
            const unsigned w = *reinterpret_cast<const unsigned*>(sbn + c * G2_TILE + j);
#pragma unroll
            for (int u = 0; u < 4; ++u) bnq[c * 4 + u] = (unsigned char)(w >> (8 * u));
          }
        }
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          Row rb;
          rb.col = bq + u;
          rb.nul = G2_NULLS_B ? bnq + u : 0;
          rb.stride = 4;
#pragma unroll
          for (int r = 0; r < G2_RT; ++r) g2_visit(g, acc, ra[r], rb, sh, true, i0 + r * G2_B, j0 + j + u);
        }
      }
    } else
#endif
    {
      // Edge tiles (G2_COMPACT: every tile), one staged b row at a time.
      for (int j = 0; j < nr; ++j) {
        Row rb;
        rb.col = sb + j;
        rb.nul = G2_NULLS_B ? sbn + j : 0;
        rb.stride = G2_TILE;
#pragma unroll
        for (int r = 0; r < G2_RT; ++r)
          g2_visit(g, acc, ra[r], rb, sh, av[r] && (!diag || r * G2_B + tid < j), i0 + r * G2_B,
                   j0 + j);
      }
    }
#if G2_KIND == 1
    // The item's (sum, comp) in the fixed tree order.
    g2_block_nsum(acc.s, acc.c, g2_ws2);
    if (tid == 0) g.partial[it - g.item0] = make_double2(acc.s, acc.c);
    acc.s = 0.0;
    acc.c = 0.0;
#endif
#if G2_SELF
    if (++tb == g.tb) {
      ++ta;
      tb = ta;
    }
#else
    if (++tb == g.tb) {
      ++ta;
      tb = 0;
    }
#endif
  }
#if G2_KIND == 2
  __syncthreads();
  if (g.copies > 0) {
    for (int k = tid; k < g.nbuckets; k += G2_B) {
#if G2_TABLE
      const int bin = g.tab_dec ? g.nbuckets - k : k + 1;  // the class of bucket k
      unsigned long long s = 0;
      for (int c = 0; c < g.copies; ++c) s += sh[bin * g.copies + c];
#else
      const int bin = k;
      unsigned long long s = 0;
      for (int c = 0; c < g.copies; ++c) s += sh[c * g.stride + bin];
#endif
      if (s) atomicAdd(g.hist + k, s);
    }
#if G2_TABLE && !G2_CLIMB
    // The fault bins: a NaN or NULL g whose F raises.
    if (tid < 2) {
      unsigned s = 0;
      for (int c = 0; c < g.copies; ++c) s += sh[(g.nbuckets + 2 + tid) * g.copies + c];
      if (s) gpu2bs_raise(-__float_as_int(g.tab_par[2 + tid]));
    }
#endif
  }
#endif
#if G2_KIND != 3
  const unsigned long long total = g2_block_sum(acc.cnt, g2_ws);
  if (tid == 0 && total) atomicAdd(g.counter, total);
#endif
  __syncthreads();
  if (tid == 0 && g2_block_error != 0) atomicCAS(g.error, 0, g2_block_error);
}
#endif
)G2SRC";

}  // namespace text
}  // namespace exprgpu
}  // namespace gpu2bs
