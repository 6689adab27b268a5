// DBSCAN on the device (Engine::dbscan_components): the similarity join's grid index (grid.cu),
// then three passes over each point's neighbours in its cell and the 3^d adjacent cells, with no
// pair leaving the device:
//   1. count:  neighbours within eps (itself included) -> core flag (count >= minpoints);
//   2. link:   a core point hooks its set to the set of every core neighbour of larger sorted
//              position (union-find as ECL-CC: the larger root goes under the smaller by
//              compare-and-swap, finds halve the path); a point that is not core keeps its
//              nearest core neighbour by (dist, key, input index);
//   3. label:  each point's representative (pointer jumping to the root of its set, or of its
//              nearest core point's set), scattered by input index.
// The sets do not depend on the order of the hooks (the components are those of the core-core
// neighbour graph), and the nearest core point is a minimum under a total order, so the answer
// is the CPU engine's. Distances are decided exactly as the join decides them (sq_dist in T,
// d2 <= eps2; dist = sqrt(d2) in T). Launches cover kDbscanLaunchPoints points each, the host
// polling for a cancel between them.
#include <vector>

#include "join.cuh"

namespace gpu2bs {
namespace cuda {

namespace {

using namespace join;

constexpr unsigned kNoPoint = 0xFFFFFFFFu;
constexpr int kDbT = cuda_tuning::kDbscanThreads;

// The grid, the neighbour offsets and eps^2 the passes read.
template <typename T>
struct DbGrid {
  Coords<T> c;                 // points sorted by cell
  const unsigned* order;       // sorted position -> input index
  const unsigned* start;       // cell starts (ncells + 1)
  const long long* ccoord;     // cell coordinates, lexicographic
  unsigned ncells;
  const unsigned* cell_of;     // sorted position -> cell
  const signed char* offsets;  // all 3^d offsets
  int noffsets;
  T eps2;
};

// Calls f(j, d2) for every sorted position j within eps of sorted position s (s included).
template <typename T, int D, typename F>
__device__ __forceinline__ void for_neighbours(const DbGrid<T>& G, unsigned s, F&& f) {
  const unsigned cell = G.cell_of[s];
  T p[D];
#pragma unroll
  for (int k = 0; k < D; ++k) p[k] = G.c.c[k][s];
  long long base[D];
#pragma unroll
  for (int k = 0; k < D; ++k) base[k] = G.ccoord[size_t(cell) * D + k];
  for (int o = 0; o < G.noffsets; ++o) {
    long long key[D];
    bool centre = true;
#pragma unroll
    for (int k = 0; k < D; ++k) {
      const signed char d = G.offsets[o * D + k];
      centre = centre && d == 0;
      key[k] = base[k] + d;
    }
    const long long nc = centre ? (long long)cell : find_cell<D>(G.ccoord, G.ncells, key);
    if (nc < 0) continue;
    const unsigned e = G.start[nc + 1];
    for (unsigned j = G.start[nc]; j < e; ++j) {
      T q[D];
#pragma unroll
      for (int k = 0; k < D; ++k) q[k] = G.c.c[k][j];
      const T d2 = sq_dist<T, D>(p, q);
      if (d2 <= G.eps2) f(j, d2);
    }
  }
}

// The cell of every sorted position (upper bound in the cell starts, less one).
__global__ void cell_of_kernel(const unsigned* start, unsigned ncells, unsigned n, unsigned* out) {
  for (unsigned s = blockIdx.x * blockDim.x + threadIdx.x; s < n; s += gridDim.x * blockDim.x) {
    unsigned lo = 0, hi = ncells;  // first cell whose start exceeds s
    while (lo < hi) {
      const unsigned mid = (lo + hi) >> 1;
      if (start[mid] <= s)
        lo = mid + 1;
      else
        hi = mid;
    }
    out[s] = lo - 1;
  }
}

// Pass 1 over sorted positions [s0, s1): neighbours counted, core flag set, every core point its
// own set (parent = itself), every other point kNoPoint; pairs within eps (distinct points, each
// unordered pair twice) added to *pairs2.
template <typename T, int D>
__global__ void __launch_bounds__(kDbT) count_kernel(DbGrid<T> G, unsigned s0, unsigned s1,
                                                      unsigned long long minpoints,
                                                      unsigned* parent,
                                                      unsigned long long* pairs2) {
  const unsigned s = s0 + blockIdx.x * blockDim.x + threadIdx.x;
  unsigned long long cnt = 0;
  if (s < s1) {
    for_neighbours<T, D>(G, s, [&](unsigned, T) { ++cnt; });
    parent[s] = cnt >= minpoints ? s : kNoPoint;
  }
  unsigned long long extra = cnt ? cnt - 1 : 0;
  for (int d = 16; d > 0; d >>= 1) extra += __shfl_down_sync(0xffffffffu, extra, d);
  if ((threadIdx.x & 31) == 0 && extra) atomicAdd(pairs2, extra);
}

// The root of x's set, halving the path on the way (parents only ever decrease, so a stale read
// still names an ancestor).
__device__ __forceinline__ unsigned find_root(volatile unsigned* parent, unsigned x) {
  unsigned cur = parent[x];
  if (cur != x) {
    unsigned prev = x, next;
    while (cur > (next = parent[cur])) {
      parent[prev] = next;
      prev = cur;
      cur = next;
    }
  }
  return cur;
}

// Joins the sets of core points u and v: the larger root is hooked under the smaller by
// compare-and-swap, retried from the value found when another thread hooked it first.
__device__ __forceinline__ void hook(unsigned* parent, unsigned u, unsigned v) {
  volatile unsigned* vp = parent;
  unsigned ru = find_root(vp, u), rv = find_root(vp, v);
  while (ru != rv) {
    if (ru < rv) {
      const unsigned ret = atomicCAS(parent + rv, rv, ru);
      if (ret == rv) return;
      rv = ret;
    } else {
      const unsigned ret = atomicCAS(parent + ru, ru, rv);
      if (ret == ru) return;
      ru = ret;
    }
  }
}

// Pass 2 over sorted positions [s0, s1): a core point hooks every core neighbour of larger
// sorted position; any other point records its nearest core neighbour (dist = sqrt(d2) in T,
// then the smaller key, then the smaller input index) in near[s], or kNoPoint.
template <typename T, int D>
__global__ void __launch_bounds__(kDbT) link_kernel(DbGrid<T> G, unsigned s0, unsigned s1,
                                                     unsigned* parent, const uint8_t* core,
                                                     const long long* keys, unsigned* near) {
  const unsigned s = s0 + blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= s1) return;
  if (core[s]) {
    for_neighbours<T, D>(G, s, [&](unsigned j, T) {
      if (j > s && core[j]) hook(parent, s, j);
    });
    return;
  }
  unsigned best = kNoPoint, best_in = 0;
  T best_d = T(0);
  long long best_key = 0;
  for_neighbours<T, D>(G, s, [&](unsigned j, T d2) {
    if (!core[j]) return;
    const T d = op_sqrt(d2);
    const unsigned jin = G.order[j];
    const long long kj = keys[jin];
    if (best == kNoPoint || d < best_d ||
        (d == best_d && (kj < best_key || (kj == best_key && jin < best_in)))) {
      best = j;
      best_in = jin;
      best_d = d;
      best_key = kj;
    }
  });
  near[s] = best;
}

// The core flags from the parents of pass 1 (a core point's parent is never kNoPoint).
__global__ void core_kernel(const unsigned* parent, unsigned n, uint8_t* core) {
  for (unsigned s = blockIdx.x * blockDim.x + threadIdx.x; s < n; s += gridDim.x * blockDim.x)
    core[s] = parent[s] != kNoPoint;
}

// Pass 3 over sorted positions [s0, s1): per input index, the root of the point's set (core),
// of its nearest core point's set (border), or kNoPoint (noise), and the core flag.
__global__ void label_kernel(const unsigned* parent, const unsigned* near, const uint8_t* core,
                             const unsigned* order, unsigned s0, unsigned s1, unsigned* root_out,
                             uint8_t* core_out) {
  for (unsigned s = s0 + blockIdx.x * blockDim.x + threadIdx.x; s < s1;
       s += gridDim.x * blockDim.x) {
    unsigned x = core[s] ? s : near[s];
    if (x != kNoPoint)
      for (unsigned p = parent[x]; p != x; p = parent[x]) x = p;
    const unsigned in = order[s];
    root_out[in] = x;
    core_out[in] = core[s];
  }
}

// Launches `launch` over [0, n) in ranges of points, waiting (and polling for a cancel) after
// each: ranges start at kDbscanFirstLaunchPoints and double up to kDbscanLaunchPoints while a
// launch takes under a quarter of kDbscanLaunchMs, and halve when one takes longer, so that dense
// data (a point's work grows with its neighbours) still polls every few hundred milliseconds.
// The kernel time goes to stats.kernel_s.
template <typename L>
void over_ranges(Call& call, unsigned n, L&& launch) {
  using namespace cuda_tuning;
  unsigned step = unsigned(std::min(kDbscanFirstLaunchPoints, kDbscanLaunchPoints));
  cudaEvent_t e0 = call.event(true), e1 = call.event(true);
  for (unsigned s0 = 0; s0 < n;) {
    const unsigned s1 = s0 + std::min(step, n - s0);
    G2_CUDA(cudaEventRecord(e0, call.stream()));
    launch(s0, s1, (s1 - s0 + kDbT - 1) / kDbT);
    G2_CUDA_LAUNCH("dbscan pass");
    G2_CUDA(cudaEventRecord(e1, call.stream()));
    call.wait(e1);
    float ms = 0;
    G2_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    call.ctl.stats.kernel_s += ms * 1e-3;
    last_run().kernel_ms += ms;
    s0 = s1;
    if (ms > kDbscanLaunchMs && step > unsigned(kDbT))
      step /= 2;
    else if (ms < kDbscanLaunchMs / 4 && size_t(step) * 2 <= kDbscanLaunchPoints)
      step *= 2;
  }
}

// DBSCAN of one element type and dimension.
template <typename T, int D>
void dbscan_run(const SimjoinProblem& p, const int64_t* keys, int64_t minpoints,
                DbscanComponents& out, Control& ctl) {
  Call call(ctl);
  auto t0 = Clock::now();
  const Geometry g = make_geometry(p.box, p.eps, p.prec, D, ctl.overrides.host_grid);
  ctl.stats.prepare_s += seconds_since(t0);
  const T eps2 = sizeof(T) == 4 ? T(p.eps2_f) : T(p.eps2);
  const unsigned n = unsigned(p.a.n);
  const DevGrid<T> ga = build_grid<T, D>(call, p.a, g, p.prec);
  const cudaStream_t st = call.stream();
  unsigned* cell_of = call.alloc<unsigned>(n, "dbscan cells");
  unsigned* parent = call.alloc<unsigned>(n, "dbscan sets");
  unsigned* near = call.alloc<unsigned>(n, "dbscan nearest core");
  uint8_t* core = call.alloc<uint8_t>(n, "dbscan core flags");
  unsigned* root_out = call.alloc<unsigned>(n, "dbscan labels");
  uint8_t* core_out = call.alloc<uint8_t>(n, "dbscan core flags");
  unsigned long long* pairs2 = call.alloc<unsigned long long>(1, "dbscan pair count");
  long long* d_keys = call.alloc<long long>(n, "keys");
  const std::vector<signed char> off = offsets_for(D, false);
  DbGrid<T> G{};
  {
    PrepareTimer prep(ctl);
    upload_bytes(call, d_keys, keys, size_t(n) * sizeof(long long));
    G.c = ga.c;
    G.order = ga.order;
    G.start = ga.start;
    G.ccoord = ga.ccoord;
    G.ncells = ga.ncells;
    G.cell_of = cell_of;
    G.offsets = upload_offsets(call, off);
    G.noffsets = int(off.size()) / D;
    G.eps2 = eps2;
    G2_CUDA(cudaMemsetAsync(pairs2, 0, 8, st));
    cell_of_kernel<<<blocks_for(n, 256), 256, 0, st>>>(ga.start, ga.ncells, n, cell_of);
    G2_CUDA_LAUNCH("cell_of_kernel");
  }
  // Pass 1 (minpoints = 1 still counts: it gives the pair count; every point is then core).
  const unsigned long long mp = (unsigned long long)minpoints;
  over_ranges(call, n, [&](unsigned s0, unsigned s1, unsigned blocks) {
    count_kernel<T, D><<<blocks, kDbT, 0, st>>>(G, s0, s1, mp, parent, pairs2);
  });
  core_kernel<<<blocks_for(n, 256), 256, 0, st>>>(parent, n, core);
  G2_CUDA_LAUNCH("core_kernel");
  // Pass 2, then the labels.
  over_ranges(call, n, [&](unsigned s0, unsigned s1, unsigned blocks) {
    link_kernel<T, D><<<blocks, kDbT, 0, st>>>(G, s0, s1, parent, core, d_keys, near);
  });
  over_ranges(call, n, [&](unsigned s0, unsigned s1, unsigned) {
    label_kernel<<<blocks_for(s1 - s0, 256), 256, 0, st>>>(parent, near, core, ga.order, s0, s1,
                                                          root_out, core_out);
  });
  out.root.resize(n);
  out.core.resize(n);
  download(call, out.root.data(), root_out, size_t(n) * 4);
  download(call, out.core.data(), core_out, n);
  unsigned long long p2 = 0;
  download(call, &p2, pairs2, 8);
  out.neighbour_pairs = p2 / 2;
}

// DBSCAN of one element type, dispatched on the dimension.
template <typename T>
void dbscan_dims(const SimjoinProblem& p, const int64_t* keys, int64_t minpoints,
                 DbscanComponents& out, Control& ctl) {
  switch (p.a.dims) {
    case 2: return dbscan_run<T, 2>(p, keys, minpoints, out, ctl);
    case 3: return dbscan_run<T, 3>(p, keys, minpoints, out, ctl);
    case 4: return dbscan_run<T, 4>(p, keys, minpoints, out, ctl);
    case 5: return dbscan_run<T, 5>(p, keys, minpoints, out, ctl);
    case 6: return dbscan_run<T, 6>(p, keys, minpoints, out, ctl);
    default:
      throw Error(ErrorCode::InvalidParameter, "points must have 2 to 6 coordinates");
  }
}

}  // namespace

void dbscan(const SimjoinProblem& p, const int64_t* keys, int64_t minpoints, DbscanComponents& out,
            Control& ctl) {
  out.core.clear();
  out.root.clear();
  out.neighbour_pairs = 0;
  if (p.a.n == 0) return;
  if (p.prec == Precision::Float32)
    dbscan_dims<float>(p, keys, minpoints, out, ctl);
  else
    dbscan_dims<double>(p, keys, minpoints, out, ctl);
}

}  // namespace cuda
}  // namespace gpu2bs
