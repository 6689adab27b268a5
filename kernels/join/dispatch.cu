// The similarity join's entry point on the GPU: grid geometry (over the problem's bounds), the
// grids of both sides, then the batched join (or the serial drain when a benchmark asks for it).
// See join.cuh.
#include <cstring>

#include "core/engine.h"
#include "join.cuh"

namespace gpu2bs {
namespace cuda {

namespace {

using namespace join;

// The pushed-down filter of `p` on the device: the program and, when it reads them (or
// `need_keys`), the keys by input index.
void upload_filter(Call& call, const SimjoinProblem& p, bool need_keys, JoinExtra* x) {
  const PairFilter* f = p.filter;
  const PairReduce* r = p.reduce;
  if (f && !f->predicate().empty()) {
    const std::vector<PairInstr>& code = f->predicate().code;
    PairInstr* d = call.alloc<PairInstr>(code.size(), "pair predicate");
    upload_bytes(call, d, code.data(), code.size() * sizeof(PairInstr));
    x->pred = d;
    x->pred_n = int(code.size());
    need_keys = need_keys || f->predicate().uses_keys();
  }
  if (!need_keys) return;
  const int64_t* ka = f ? f->keys().a : r ? r->keys_a : nullptr;
  const int64_t* kb = f ? f->keys().b : r ? r->keys_b : nullptr;
  if (!ka || !kb) throw Error(ErrorCode::Internal, "pushed-down filter without keys");
  long long* da = call.alloc<long long>(p.a.n, "keys");
  upload_bytes(call, da, ka, p.a.n * sizeof(long long));
  x->keys_a = x->keys_b = da;
  if (!p.self) {
    long long* db = call.alloc<long long>(p.b.n, "keys");
    upload_bytes(call, db, kb, p.b.n * sizeof(long long));
    x->keys_b = db;
  }
}

// The reduction p.reduce on the device (kModeReduce), with p.filter applied first.
template <typename T, int D, bool SELF>
JoinResult reduce_run(Call& call, const SimjoinProblem& p, PairSink& sink, const DevGrid<T>& ga,
                      const DevGrid<T>& gb, T eps2, const std::vector<signed char>& off) {
  PairReduce& r = *p.reduce;
  Control& ctl = call.ctl;
  JoinExtra x;
  {
    PrepareTimer prep(ctl);
    upload_filter(call, p, r.kind == PairReduce::Group && SELF, &x);
  }
  JoinResult res;
  if (r.kind == PairReduce::Aggregate) {
    x.red = kRedAggregate;
    res = run_join<T, D, SELF, true>(call, ga, gb, eps2, off, nullptr, p.max_pairs, &x);
    r.count = x.count;
    r.sum = x.sum;
    r.comp = x.comp;
    r.min = x.min;
    r.max = x.max;
  } else if (r.kind == PairReduce::Group) {
    // Per point of the group side: count, min and max (as bits: all ones and zero start them).
    const size_t n = SELF || r.side == 0 ? p.a.n : p.b.n;
    x.red = kRedGroup;
    x.group_side = r.side;
    x.g_count = call.alloc<unsigned long long>(n, "group counts");
    G2_CUDA(cudaMemsetAsync(x.g_count, 0, n * 8, call.stream()));
    if (r.want_min) {
      x.g_min = call.alloc<unsigned long long>(n, "group minima");
      G2_CUDA(cudaMemsetAsync(x.g_min, 0xFF, n * 8, call.stream()));
    }
    if (r.want_max) {
      x.g_max = call.alloc<unsigned long long>(n, "group maxima");
      G2_CUDA(cudaMemsetAsync(x.g_max, 0, n * 8, call.stream()));
    }
    res = run_join<T, D, SELF, true>(call, ga, gb, eps2, off, nullptr, p.max_pairs, &x);
    auto tm = Clock::now();
    r.group_count.resize(n);
    std::vector<unsigned long long> lo(n, 0), hi(n, 0);
    download(call, r.group_count.data(), x.g_count, n * 8);
    if (x.g_min) download(call, lo.data(), x.g_min, n * 8);
    if (x.g_max) download(call, hi.data(), x.g_max, n * 8);
    r.group_min.resize(n);
    r.group_max.resize(n);
    for (size_t g = 0; g < n; ++g) {
      std::memcpy(&r.group_min[g], &lo[g], 8);
      std::memcpy(&r.group_max[g], &hi[g], 8);
    }
    ctl.stats.merge_s += seconds_since(tm);
  } else {
    // Top-k: a histogram of the kept pairs' distances finds the bucket holding the k-th best;
    // a second pass emits the kept pairs of that bucket and the better ones (ties included),
    // from which the sink picks the k best.
    if (r.k == 0) {
      r.done = true;
      return res;
    }
    x.red = kRedHistogram;
    x.nbuckets = kTopKBuckets;
    x.bucket_scale = double(kTopKBuckets) / p.eps;
    std::vector<unsigned long long> hist(kTopKBuckets);
    x.hist = call.alloc<unsigned long long>(kTopKBuckets, "top-k histogram");
    G2_CUDA(cudaMemsetAsync(x.hist, 0, kTopKBuckets * 8, call.stream()));
    res = run_join<T, D, SELF, true>(call, ga, gb, eps2, off, nullptr, p.max_pairs, &x);
    download(call, hist.data(), x.hist, kTopKBuckets * 8);
    unsigned b = r.descending ? 0u : kTopKBuckets - 1u;
    uint64_t acc = 0;
    for (unsigned s = 0; s < kTopKBuckets; ++s) {
      const unsigned q = r.descending ? kTopKBuckets - 1u - s : s;
      acc += hist[q];
      if (acc >= r.k) {
        b = q;
        break;
      }
    }
    JoinExtra y = x;
    y.red = kRedNone;
    y.hist = nullptr;
    y.sel = r.descending ? 2 : 1;
    y.sel_bucket = b;
    const JoinResult e = run_join<T, D, SELF, false>(call, ga, gb, eps2, off, &sink, 0, &y);
    res.emitted = e.emitted;
    res.examined += e.examined;
  }
  r.done = true;
  return res;
}

// The join of one element type and dimension.
template <typename T, int D>
void simjoin_run(const SimjoinProblem& p, PairSink& sink, Control& ctl) {
  Call call(ctl);
  auto t0 = Clock::now();
  const Geometry g = make_geometry(p.box, p.eps, p.prec, D, ctl.overrides.host_grid);
  ctl.stats.prepare_s += seconds_since(t0);
  const T eps2 = sizeof(T) == 4 ? T(p.eps2_f) : T(p.eps2);
  const DevGrid<T> ga = build_grid<T, D>(call, p.a, g, p.prec);
  JoinResult r;
  const bool serial = ctl.overrides.join_serial_drain;
  if (p.self) {
    const auto off = offsets_for(D, true);
    if (p.reduce) {
      r = reduce_run<T, D, true>(call, p, sink, ga, ga, eps2, off);
    } else {
      JoinExtra x;
      if (p.filter) upload_filter(call, p, false, &x);
      r = serial ? run_join<T, D, true, false>(call, ga, ga, eps2, off, &sink, p.max_pairs, &x)
                 : run_join_batched<T, D, true>(call, ga, ga, eps2, off, &sink, p.max_pairs, &x);
    }
  } else {
    const DevGrid<T> gb = build_grid<T, D>(call, p.b, g, p.prec);
    const auto off = offsets_for(D, false);
    if (p.reduce) {
      r = reduce_run<T, D, false>(call, p, sink, ga, gb, eps2, off);
    } else {
      JoinExtra x;
      if (p.filter) upload_filter(call, p, false, &x);
      r = serial ? run_join<T, D, false, false>(call, ga, gb, eps2, off, &sink, p.max_pairs, &x)
                 : run_join_batched<T, D, false>(call, ga, gb, eps2, off, &sink, p.max_pairs, &x);
    }
  }
  ctl.stats.pairs_examined += r.examined;
  ctl.stats.pairs_emitted += r.emitted;
}

// The join of one element type, dispatched on the dimension.
template <typename T>
void simjoin_dims(const SimjoinProblem& p, PairSink& sink, Control& ctl) {
  switch (p.a.dims) {
    case 2: return simjoin_run<T, 2>(p, sink, ctl);
    case 3: return simjoin_run<T, 3>(p, sink, ctl);
    case 4: return simjoin_run<T, 4>(p, sink, ctl);
    case 5: return simjoin_run<T, 5>(p, sink, ctl);
    case 6: return simjoin_run<T, 6>(p, sink, ctl);
    default:
      throw Error(ErrorCode::InvalidParameter, "points must have 2 to 6 coordinates");
  }
}

}  // namespace

void simjoin(const SimjoinProblem& p, PairSink& sink, Control& ctl) {
  if (p.a.n == 0 || p.b.n == 0) {  // point counts were checked by make_simjoin
    if (p.reduce) {  // no pairs: empty results of the right shape
      PairReduce& r = *p.reduce;
      if (r.kind == PairReduce::Group) {
        const size_t n = p.self || r.side == 0 ? p.a.n : p.b.n;
        r.group_count.assign(n, 0);
        r.group_min.assign(n, 0.0);
        r.group_max.assign(n, 0.0);
      }
      r.done = true;
    }
    return;
  }
  // Points that carry input indices (slabs) come without a filter or reduction, whose keys
  // are looked up by position.
  if ((p.a.index || p.b.index) && (p.filter || p.reduce))
    throw Error(ErrorCode::Internal, "similarity join of indexed points with a filter or reduction");
  if (p.prec == Precision::Float32)
    simjoin_dims<float>(p, sink, ctl);
  else
    simjoin_dims<double>(p, sink, ctl);
}

}  // namespace cuda
}  // namespace gpu2bs
