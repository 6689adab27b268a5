// Grid index of the similarity join (and the grid pair count) on the GPU: cell keys, radix sort,
// run-length encoding into cells, gather of the points in cell order, work items; the host
// build (gpu2bs::Grid) when the key needs more than 64 bits. See join.cuh.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>

#include <cmath>
#include <cstring>
#include <vector>

#include "join.cuh"

namespace gpu2bs {
namespace cuda {
namespace join {

namespace {

// grid_cell_coord() on the device: same IEEE operations (no contraction), same clamping.
__device__ __forceinline__ long long cell_coord(double v, double lo, double inv) {
  const double c = floor(op_mul(op_sub(v, lo), inv));
  if (!(c > 0)) return 0;
  if (c > kMaxCellCoord) return (long long)kMaxCellCoord;
  return (long long)c;
}

template <typename T, int D>
__global__ void key_kernel(Coords<T> pts, unsigned n, Geometry g, unsigned long long* keys,
                           unsigned* idx) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    unsigned long long key = 0;
#pragma unroll
    for (int k = 0; k < D; ++k)
      key |= (unsigned long long)cell_coord(double(pts.c[k][i]), g.lo[k], g.inv) << g.shift[k];
    keys[i] = key;
    idx[i] = i;
  }
}

template <int D>
__global__ void decode_kernel(const unsigned long long* keys, unsigned ncells, Geometry g,
                              long long* ccoord) {
  for (unsigned c = blockIdx.x * blockDim.x + threadIdx.x; c < ncells;
       c += gridDim.x * blockDim.x) {
    const unsigned long long key = keys[c];
#pragma unroll
    for (int k = 0; k < D; ++k) {
      const unsigned long long mask = g.bits[k] ? (~0ull >> (64 - g.bits[k])) : 0ull;
      ccoord[size_t(c) * D + k] = (long long)((key >> g.shift[k]) & mask);
    }
  }
}

// Sets one word on the device.
__global__ void set_u32_kernel(unsigned* p, unsigned v) { *p = v; }

template <typename T, int D>
__global__ void gather_kernel(Coords<T> in, const unsigned* order, unsigned n, Coords<T> out) {
  for (unsigned s = blockIdx.x * blockDim.x + threadIdx.x; s < n; s += gridDim.x * blockDim.x) {
    const unsigned i = order[s];
#pragma unroll
    for (int k = 0; k < D; ++k) const_cast<T*>(out.c[k])[s] = in.c[k][i];
  }
}

// order[s] = index[order[s]]: sorted position -> the input index the points carry.
__global__ void compose_kernel(unsigned* order, const unsigned* index, unsigned n) {
  for (unsigned s = blockIdx.x * blockDim.x + threadIdx.x; s < n; s += gridDim.x * blockDim.x)
    order[s] = index[order[s]];
}

// Items per cell: ceil(points / kRows).
__global__ void item_count_kernel(const unsigned* start, unsigned ncells, unsigned* cnt) {
  for (unsigned c = blockIdx.x * blockDim.x + threadIdx.x; c < ncells;
       c += gridDim.x * blockDim.x)
    cnt[c] = (start[c + 1] - start[c] + kRows - 1) / kRows;
}

__global__ void item_fill_kernel(const unsigned* start, unsigned ncells, const unsigned* off,
                                 uint2* items) {
  for (unsigned c = blockIdx.x * blockDim.x + threadIdx.x; c < ncells;
       c += gridDim.x * blockDim.x) {
    unsigned o = off[c];
    for (unsigned r = start[c]; r < start[c + 1]; r += kRows) items[o++] = make_uint2(c, r);
  }
}

}  // namespace

Geometry make_geometry(const Bounds& box, double eps, Precision prec, int dims, bool host_grid) {
  Geometry g{};
  g.side = grid_cell_side(eps, box);
  g.inv = std::isfinite(g.side) && g.side > 0 ? 1.0 / g.side : 0.0;
  for (int k = 0; k < dims; ++k) {
    g.lo[k] = box.lo[k];
    // Largest rounded coordinate: rounding and the cell formula are monotone.
    const double vmax = prec == Precision::Float32 ? double(float(box.hi[k])) : box.hi[k];
    const int64_t cmax = grid_cell_coord(vmax, box.lo[k], g.inv);
    int bits = 0;
    while (bits < 63 && (uint64_t(cmax) >> bits) != 0) ++bits;
    g.bits[k] = bits;
  }
  int acc = 0;
  for (int k = dims - 1; k >= 0; --k) {
    g.shift[k] = acc;
    acc += g.bits[k];
  }
  g.total_bits = acc;
  g.host = acc > 64 || host_grid;
  return g;
}

template <typename T, int D>
DevGrid<T> build_grid(Call& call, const PointsView& v, const Geometry& g, Precision prec) {
  LastRun& lr = last_run();
  DevGrid<T> G;
  const unsigned n = unsigned(v.n);
  G.n = n;
  const cudaStream_t st = call.stream();
  Coords<T> raw{};
  for (int k = 0; k < D; ++k) {
    raw.c[k] = call.alloc<T>(n, "points");
    G.c.c[k] = call.alloc<T>(n, "sorted points");
  }
  PrepareTimer prep(call.ctl);
  upload_points<T>(call, v, const_cast<T* const*>(raw.c));
  // The points carry input indices (a slab of a larger join): the grid order maps to them
  // after the gather, so the join emits the input's indices.
  unsigned* index = nullptr;
  if (v.index) {
    index = call.alloc<unsigned>(n, "input indices");
    upload_bytes(call, index, v.index, size_t(n) * 4);
  }
  cudaEvent_t e0 = call.event(true), e1 = call.event(true);
  G2_CUDA(cudaEventRecord(e0, st));
  if (!g.host) {
    unsigned long long* keys_in = call.alloc<unsigned long long>(n, "cell keys");
    unsigned long long* keys_out = call.alloc<unsigned long long>(n, "cell keys");
    unsigned* idx_in = call.alloc<unsigned>(n, "grid order");
    G.order = call.alloc<unsigned>(n, "grid order");
    key_kernel<T, D><<<blocks_for(n, 256), 256, 0, st>>>(raw, n, g, keys_in, idx_in);
    G2_CUDA_LAUNCH("key_kernel");
    const unsigned long long* sorted = keys_in;
    if (g.total_bits > 0) {
      size_t tmp_bytes = 0;
      G2_CUDA(cub::DeviceRadixSort::SortPairs(nullptr, tmp_bytes, keys_in, keys_out, idx_in,
                                              G.order, n, 0, g.total_bits, st));
      void* tmp = call.alloc_bytes(tmp_bytes, "radix sort");
      G2_CUDA(cub::DeviceRadixSort::SortPairs(tmp, tmp_bytes, keys_in, keys_out, idx_in, G.order,
                                              n, 0, g.total_bits, st));
      sorted = keys_out;
    } else {
      G2_CUDA(cudaMemcpyAsync(G.order, idx_in, size_t(n) * 4, cudaMemcpyDeviceToDevice, st));
    }
    // Cells: run-length encoding of the sorted keys, starts by an exclusive sum.
    unsigned long long* ukeys = keys_in == sorted ? keys_out : keys_in;  // free buffer
    unsigned* counts = idx_in;
    unsigned* nruns = call.alloc<unsigned>(1, "cell count");
    size_t tmp_bytes = 0;
    G2_CUDA(cub::DeviceRunLengthEncode::Encode(nullptr, tmp_bytes, sorted, ukeys, counts, nruns,
                                               n, st));
    void* tmp = call.alloc_bytes(tmp_bytes, "run-length encoding");
    G2_CUDA(cub::DeviceRunLengthEncode::Encode(tmp, tmp_bytes, sorted, ukeys, counts, nruns, n,
                                               st));
    G.ncells = read_value(call, nruns);
    G.start = call.alloc<unsigned>(size_t(G.ncells) + 1, "cell starts");
    tmp_bytes = 0;
    G2_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, tmp_bytes, counts, G.start, G.ncells, st));
    void* tmp2 = call.alloc_bytes(tmp_bytes, "scan");
    G2_CUDA(cub::DeviceScan::ExclusiveSum(tmp2, tmp_bytes, counts, G.start, G.ncells, st));
    set_u32_kernel<<<1, 1, 0, st>>>(G.start + G.ncells, n);
    G2_CUDA_LAUNCH("set_u32_kernel");
    G.ccoord = call.alloc<long long>(size_t(G.ncells) * D, "cell coordinates");
    decode_kernel<D><<<blocks_for(G.ncells, 256), 256, 0, st>>>(ukeys, G.ncells, g, G.ccoord);
    G2_CUDA_LAUNCH("decode_kernel");
  } else {
    lr.host_grid = true;
    // Rounded coordinates in float64, then gpu2bs::Grid exactly as the CPU engine builds it.
    std::vector<double> rounded(size_t(n) * D);
    const double* rc[kMaxDims] = {};
    for (int k = 0; k < D; ++k) {
      double* out = rounded.data() + size_t(k) * n;
      for (size_t i = 0; i < n; ++i)
        out[i] = prec == Precision::Float32 ? double(float(v.coord[k][i])) : v.coord[k][i];
      rc[k] = out;
    }
    Grid grid(D, n, rc, g.lo, g.side);
    G.ncells = unsigned(grid.num_cells());
    std::vector<unsigned> start(size_t(G.ncells) + 1);
    std::vector<long long> ccoord(size_t(G.ncells) * D);
    for (size_t c = 0; c < G.ncells; ++c) {
      start[c] = unsigned(grid.cell_begin(c));
      for (int k = 0; k < D; ++k) ccoord[c * D + k] = grid.cell_coord(c)[k];
    }
    start[G.ncells] = n;
    G.order = call.alloc<unsigned>(n, "grid order");
    G.start = call.alloc<unsigned>(start.size(), "cell starts");
    G.ccoord = call.alloc<long long>(ccoord.size(), "cell coordinates");
    upload_bytes(call, G.order, grid.order().data(), size_t(n) * 4);
    upload_bytes(call, G.start, start.data(), start.size() * 4);
    upload_bytes(call, G.ccoord, ccoord.data(), ccoord.size() * 8);
  }
  gather_kernel<T, D><<<blocks_for(n, 256), 256, 0, st>>>(raw, G.order, n, G.c);
  G2_CUDA_LAUNCH("gather_kernel");
  if (index) {
    compose_kernel<<<blocks_for(n, 256), 256, 0, st>>>(G.order, index, n);
    G2_CUDA_LAUNCH("compose_kernel");
  }
  // Work items: runs of up to kRows points of one cell.
  unsigned* cnt = call.alloc<unsigned>(size_t(G.ncells) + 1, "item counts");
  unsigned* off = call.alloc<unsigned>(size_t(G.ncells) + 1, "item offsets");
  G2_CUDA(cudaMemsetAsync(cnt, 0, (size_t(G.ncells) + 1) * 4, st));
  item_count_kernel<<<blocks_for(G.ncells, 256), 256, 0, st>>>(G.start, G.ncells, cnt);
  G2_CUDA_LAUNCH("item_count_kernel");
  size_t tmp_bytes = 0;
  G2_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, tmp_bytes, cnt, off, G.ncells + 1, st));
  void* tmp = call.alloc_bytes(tmp_bytes, "scan");
  G2_CUDA(cub::DeviceScan::ExclusiveSum(tmp, tmp_bytes, cnt, off, G.ncells + 1, st));
  G.nitems = read_value(call, off + G.ncells);
  G.item_off = off;
  G.items = call.alloc<uint2>(G.nitems, "work items");
  item_fill_kernel<<<blocks_for(G.ncells, 256), 256, 0, st>>>(G.start, G.ncells, off, G.items);
  G2_CUDA_LAUNCH("item_fill_kernel");
  G2_CUDA(cudaEventRecord(e1, st));
  call.wait(e1);
  float ms = 0;
  G2_CUDA(cudaEventElapsedTime(&ms, e0, e1));
  lr.grid_ms += ms;
  return G;
}

std::vector<signed char> offsets_for(int dims, bool self) {
  std::vector<signed char> out;
  if (self) out.assign(size_t(dims), 0);
  for (int v : neighbour_offsets(dims, self)) out.push_back(static_cast<signed char>(v));
  return out;
}

signed char* upload_offsets(Call& call, const std::vector<signed char>& off) {
  signed char* d = call.alloc<signed char>(off.size(), "neighbour offsets");
  upload_bytes(call, d, off.data(), off.size());
  return d;
}

#define G2_INST_GRID(T, D) \
  template DevGrid<T> build_grid<T, D>(Call&, const PointsView&, const Geometry&, Precision);
G2_JOIN_FOR_ALL(G2_INST_GRID)
#undef G2_INST_GRID

}  // namespace join
}  // namespace cuda
}  // namespace gpu2bs
