// The similarity join's launches and result drains on the GPU: the serial launch loop with one
// result pool drained between launches (run_join; also the grid pair count's count mode), and
// the batched join (run_join_batched): result-size estimate, banks with their streams, batches,
// drains of the banks through pinned staging into the PairSink. See join.cuh.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "chunk_sink.h"
#include "join.cuh"

namespace gpu2bs {
namespace cuda {
namespace join {

// Device bytes the result pool or banks may take: all but 64 MiB of what the call has left, or
// three quarters of a smaller remainder (the join's other buffers are allocated by then; the
// quarter covers a kept buffer up to a quarter larger than asked for, see ReuseScope::take).
inline size_t pool_room(const Call& call) {
  const size_t left = call.budget_left();
  return left > (size_t(64) << 20) ? left - (size_t(64) << 20) : left / 4 * 3;
}

// The error of a result beyond gpu2bs.max_result_rows.
void too_many_pairs(uint64_t max_pairs) {
  throw Error(ErrorCode::ProgramLimit, "similarity join result exceeds gpu2bs.max_result_rows",
              "More than " + std::to_string(max_pairs) + " pairs are within eps.",
              "Use a smaller eps, or raise gpu2bs.max_result_rows.");
}

// The serial launch loop: launch, read back, drain the pool when full or done, resume.
template <typename T, int D, bool SELF, bool COUNT>
JoinResult run_join(Call& call, const DevGrid<T>& ga, const DevGrid<T>& gb, T eps2,
                    const std::vector<signed char>& offsets, PairSink* sink, uint64_t max_pairs,
                    JoinExtra* x) {
  LastRun& lr = last_run();
  Control& ctl = call.ctl;
  JoinResult res;
  if (ga.nitems == 0) return res;
  const cudaStream_t st = call.stream();
  std::unique_ptr<PrepareTimer> prep(new PrepareTimer(ctl));
  signed char* d_off = upload_offsets(call, offsets);
  const JoinPlan plan = plan_join<T, D, SELF>(call, ga, gb, d_off, int(offsets.size() / D));
  const bool reduce = COUNT && x && x->red != kRedNone;
  const auto kernel = reduce ? join_reduce_kernel_for<T, D, SELF>(plan.k)
                             : join_kernel_for<T, D, SELF, COUNT>(plan.k);
  const size_t smem = reduce && x->red == kRedHistogram ? size_t(x->nbuckets) * 4 : 0;
  int bps = 0;
  G2_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, kernel, kJT, smem));
  if (bps < 1) throw Error(ErrorCode::Internal, "CUDA join kernel does not fit on the device");
  const unsigned grid = unsigned(bps * device_facts().sms);
  const size_t warps = size_t(grid) * kWarps;
  // Static assignment: items taken by each warp (the grid is the same at every launch).
  unsigned long long* cursor = nullptr;
  if (plan.static_items) {
    cursor = call.alloc<unsigned long long>(warps, "warp cursors");
    G2_CUDA(cudaMemsetAsync(cursor, 0, warps * sizeof(unsigned long long), st));
  }
  JoinCtl* dctl = call.alloc<JoinCtl>(1, "join control");
  WarpState* resume[2] = {call.alloc<WarpState>(warps, "resume list"),
                          call.alloc<WarpState>(warps, "resume list")};
  JoinCtl* hctl = static_cast<JoinCtl*>(call.alloc_host(sizeof(JoinCtl)));
  // kRedAggregate: one part per warp, accumulated over the launches.
  AggPart* parts = nullptr;
  if (reduce && x->red == kRedAggregate) {
    std::vector<AggPart> init(warps, AggPart{0, 0.0, 0.0, HUGE_VAL, -HUGE_VAL});
    parts = call.alloc<AggPart>(warps, "aggregate parts");
    upload_bytes(call, parts, init.data(), warps * sizeof(AggPart));
  }

  // The result pool: Control::max_pages pages when set, else what the memory limit allows
  // (at most kJoinPoolMaxBytes).
  size_t page_size = 0, pool_pages = 0;
  ulonglong2* pool = nullptr;
  unsigned* page_fill = nullptr;
  std::vector<unsigned> fills;
  if (!COUNT) {
    // Control::page_pairs is honoured as the device page size when the pool is given in pages
    // (tests force many drain/resume cycles that way); otherwise pages are at most
    // kJoinPagePairs so that every warp's partly filled page wastes little of the pool.
    page_size = std::min<size_t>(std::max<size_t>(ctl.page_pairs, 64), size_t(1) << 26);
    if (!ctl.max_pages) page_size = std::min(page_size, cuda_tuning::kJoinPagePairs);
    const size_t page_bytes = page_size * sizeof(PairRecord);
    if (ctl.max_pages) {
      pool_pages = ctl.max_pages;
    } else {
      const size_t room = pool_room(call);
      pool_pages = std::min(room, cuda_tuning::kJoinPoolMaxBytes) / (page_bytes + 4);
    }
    pool_pages = std::max<size_t>(1, std::min<size_t>(pool_pages, size_t(1) << 30));
    pool = call.alloc<ulonglong2>(pool_pages * page_size, "result pool");
    page_fill = call.alloc<unsigned>(pool_pages, "page fill");
    lr.pool_pages = pool_pages;
    lr.page_pairs = page_size;
  }
  prep.reset();

  JoinArgs<T> A = join_args(ga, gb, d_off, int(offsets.size() / D), eps2);
  A.items = plan.items;
  A.nitems = ga.nitems;
  A.cursor = cursor;
  A.ctl = dctl;
  A.pool = pool;
  A.page_fill = page_fill;
  A.pool_pages = unsigned(pool_pages);
  A.page_size = unsigned(page_size);
  A.budget_ns = (unsigned long long)(cuda_tuning::kJoinSliceMs * 1e6);
  apply_extra(A, x);
  A.agg = parts;

  cudaEvent_t ev_start = call.event(true), ev_end = call.event(true), ev_done = call.event();
  unsigned long long item_next = 0;
  unsigned n_in = 0;
  int cur = 0;
  size_t pages_used = 0;
  double drain_s = 0;

  // Hands the pages [0, used) to the sink: page fills first, then the pages through the two
  // halves of the pinned staging buffer (copy of one half overlaps consuming the other).
  auto drain = [&](size_t used) {
    auto td = Clock::now();
    ++lr.drains;
    fills.resize(used);
    download(call, fills.data(), page_fill, used * 4);
    const size_t page_bytes = page_size * sizeof(PairRecord);
    const size_t per = std::max<size_t>(1, (cuda_tuning::kStagingBytes / 2) / page_bytes);
    const size_t chunk_pages = std::min(per, used);
    call.staging(0, chunk_pages * page_bytes);
    size_t issued = 0;
    int h = 0;
    auto issue = [&](int half) {
      const size_t cnt = std::min(chunk_pages, used - issued);
      call.wait(call.staging_event(half));
      G2_CUDA(cudaMemcpyAsync(call.staging(half, chunk_pages * page_bytes),
                              pool + issued * page_size, cnt * page_bytes,
                              cudaMemcpyDeviceToHost, st));
      G2_CUDA(cudaEventRecord(call.staging_event(half), st));
      const size_t first = issued;
      issued += cnt;
      return std::make_pair(first, cnt);
    };
    auto cur_chunk = issue(h);
    while (cur_chunk.second) {
      std::pair<size_t, size_t> next_chunk{issued, 0};
      if (issued < used) next_chunk = issue(h ^ 1);
      auto tw = Clock::now();
      call.wait(call.staging_event(h));
      ctl.stats.transfer_s += seconds_since(tw);
      const char* base = call.staging(h, chunk_pages * page_bytes);
      for (size_t pg = 0; pg < cur_chunk.second; ++pg) {
        const size_t nrec = fills[cur_chunk.first + pg];
        if (!nrec) continue;
        res.emitted += nrec;
        if (max_pairs && res.emitted > max_pairs) too_many_pairs(max_pairs);
        auto tm = Clock::now();
        sink->consume(reinterpret_cast<const PairRecord*>(base + pg * page_bytes), nrec);
        ctl.stats.merge_s += seconds_since(tm);
        call.poll();
      }
      // The consumed half may be overwritten only after we are done reading it: the next
      // issue() on it waits for its event, which completed; reading is finished here.
      h ^= 1;
      cur_chunk = next_chunk;
    }
    drain_s += seconds_since(td);
  };

  auto tk = Clock::now();
  for (;;) {
    call.poll();
    std::memset(hctl, 0, sizeof(JoinCtl));
    hctl->item_next = item_next;
    hctl->page_next = unsigned(pages_used);
    G2_CUDA(cudaMemcpyAsync(dctl, hctl, sizeof(JoinCtl), cudaMemcpyHostToDevice, st));
    A.resume_in = resume[cur];
    A.n_in = n_in;
    A.resume_out = resume[cur ^ 1];
    G2_CUDA(cudaEventRecord(ev_start, st));
    kernel<<<grid, kJT, smem, st>>>(A);
    G2_CUDA_LAUNCH("join kernel launch");
    G2_CUDA(cudaEventRecord(ev_end, st));
    G2_CUDA(cudaMemcpyAsync(hctl, dctl, sizeof(JoinCtl), cudaMemcpyDeviceToHost, st));
    G2_CUDA(cudaEventRecord(ev_done, st));
    call.wait(ev_done);
    ++lr.launches;
    float ms = 0;
    G2_CUDA(cudaEventElapsedTime(&ms, ev_start, ev_end));
    lr.kernel_ms += ms;
    res.examined += hctl->examined;
    lr.join_slots += hctl->slots;
    res.count += hctl->count;
    if (max_pairs && res.count > max_pairs) too_many_pairs(max_pairs);
    // Resume entries no warp reached carry over behind the new ones.
    const unsigned consumed = std::min(hctl->resume_next, n_in);
    unsigned n_out = hctl->resume_out;
    if (consumed < n_in) {
      G2_CUDA(cudaMemcpyAsync(resume[cur ^ 1] + n_out, resume[cur] + consumed,
                              size_t(n_in - consumed) * sizeof(WarpState),
                              cudaMemcpyDeviceToDevice, st));
      n_out += n_in - consumed;
    }
    if (n_out > warps)
      throw Error(ErrorCode::Internal, "similarity join resume list overflow");
    cur ^= 1;
    n_in = n_out;
    item_next = std::min<unsigned long long>(hctl->item_next, ga.nitems);
    if (!COUNT) pages_used = std::min<size_t>(hctl->page_next, pool_pages);
    const bool done = item_next >= ga.nitems && n_in == 0;
    if (!COUNT && pages_used > 0 &&
        (done || hctl->pool_full ||
         double(pages_used) >= double(pool_pages) * cuda_tuning::kJoinDrainFraction)) {
      drain(pages_used);
      pages_used = 0;
    }
    if (done) break;
  }
  ctl.stats.kernel_s += std::max(0.0, seconds_since(tk) - drain_s);
  if (parts) {
    // The warps' parts merged in warp order (as AggregateSink::merge).
    std::vector<AggPart> h(warps);
    download(call, h.data(), parts, warps * sizeof(AggPart));
    for (const AggPart& P : h) {
      if (!P.count) continue;
      if (x->count == 0) {
        x->min = P.lo;
        x->max = P.hi;
      }
      x->min = std::min(x->min, P.lo);
      x->max = std::max(x->max, P.hi);
      for (double d : {P.sum, P.comp}) {
        const double t = x->sum + d;
        x->comp += std::fabs(x->sum) >= std::fabs(d) ? (x->sum - t) + d : (d - t) + x->sum;
        x->sum = t;
      }
      x->count += P.count;
    }
  }
  if (!COUNT) {
    lr.join_pairs = res.emitted;
    lr.join_streams = 1;
  }
  return res;
}

// ---- host: the batched join ---------------------------------------------------------------------
//
// Result-size estimate: the count-mode kernel runs over every s-th work item (a strided sample,
// counted in consecutive segments), giving estimated pairs per item along the item order.
// The estimate sizes the result banks (no larger than the memory budget allows) and cuts the
// items into batches whose estimated output fills kJoinBatchFill of one bank. Each bank has its
// own stream, control block and resume lists ("lane"); a batch runs in a free lane while the
// banks of earlier batches are copied, in the order they finished, through the two halves of the
// pinned staging buffer and handed to the sink on this thread. A batch whose bank fills (an underestimate) stops at a resumable point, its bank is
// drained, and it resumes in the same bank, so no pair is lost or repeated.

namespace {

// One stream with its bank of result pages, control block, resume lists and pinned buffers.
struct Lane {
  cudaStream_t st = nullptr;  // Call::extra_stream (synchronized before the Call frees anything)
  JoinCtl* dctl = nullptr;
  JoinCtl* hctl = nullptr;  // pinned
  WarpState* resume[2] = {nullptr, nullptr};
  int cur = 0;
  unsigned n_in = 0;
  ulonglong2* pool = nullptr;  // the bank
  unsigned* page_fill = nullptr;
  size_t pages = 0;
  unsigned* hfills = nullptr;  // pinned copy of page_fill
  cudaEvent_t ev_start = nullptr, ev_end = nullptr, ev_ctl = nullptr;
  enum State { Idle, Running, Draining } state = Idle;
  unsigned long long item_next = 0, item_end = 0;  // current batch (or sample segment)
  unsigned long long* cursor = nullptr;  // static assignment: per-warp items taken (batch)
  unsigned long long item_begin = 0;     // first item of the batch (static assignment)
  size_t pages_used = 0;
  bool batch_done = false;
  // drain in progress: pages [0, d_used), copied up to d_issued, handed over up to d_consumed
  size_t d_used = 0, d_issued = 0, d_consumed = 0;
  Clock::time_point issued;  // when the current launch was queued
};

// Pairs after which a piece of a large chunk ends (at the next page boundary, so a piece holds
// up to kSinkPiecePairs plus one page), so that the loop takes the other lanes' read-backs
// between the pieces (about 1 MiB of records).
constexpr size_t kSinkPiecePairs = size_t(1) << 16;

// One half of the pinned staging buffer and the chunk of a lane's pages copied into it.
struct StagingHalf {
  char* buf = nullptr;
  cudaEvent_t beg = nullptr, end = nullptr;
  Lane* lane = nullptr;  // null: free
  size_t first = 0, cnt = 0;
};

// Kernel and copy intervals (ms after a reference event) of the batched join; their union is
// the time at least one of them ran.
struct Intervals {
  std::vector<std::pair<float, float>> v;
  // Adds the interval between two completed events, measured from `ref`.
  void add(cudaEvent_t ref, cudaEvent_t b, cudaEvent_t e) {
    float tb = 0, te = 0;
    G2_CUDA(cudaEventElapsedTime(&tb, ref, b));
    G2_CUDA(cudaEventElapsedTime(&te, ref, e));
    v.emplace_back(tb, std::max(tb, te));
  }
  // Length of the union of the intervals.
  double union_ms() {
    std::sort(v.begin(), v.end());
    double total = 0, cb = 0, ce = -1;
    for (auto& x : v) {
      if (x.first > ce) {
        if (ce > cb) total += ce - cb;
        cb = x.first;
        ce = x.second;
      } else {
        ce = std::max<double>(ce, x.second);
      }
    }
    if (ce > cb) total += ce - cb;
    return total;
  }
};

// Queues one launch of `kernel` on lane L over items [L.item_next, L.item_end) of `items`,
// followed by the read-back of its control block (L.ev_ctl completes when it is on the host).
template <typename T, typename K>
void lane_launch(Lane& L, JoinArgs<T> A, K kernel, unsigned grid, const uint2* items) {
  const cudaStream_t st = L.st;
  std::memset(L.hctl, 0, sizeof(JoinCtl));
  L.hctl->item_next = L.item_next;
  L.hctl->page_next = unsigned(L.pages_used);
  G2_CUDA(cudaMemcpyAsync(L.dctl, L.hctl, sizeof(JoinCtl), cudaMemcpyHostToDevice, st));
  A.items = items;
  A.nitems = L.item_end;
  A.cursor = L.cursor;
  A.item_base = L.item_begin;
  A.ctl = L.dctl;
  A.resume_in = L.resume[L.cur];
  A.n_in = L.n_in;
  A.resume_out = L.resume[L.cur ^ 1];
  A.pool = L.pool;
  A.page_fill = L.page_fill;
  A.pool_pages = unsigned(L.pages);
  G2_CUDA(cudaEventRecord(L.ev_start, st));
  kernel<<<grid, kJT, 0, st>>>(A);
  G2_CUDA_LAUNCH("join kernel launch");
  G2_CUDA(cudaEventRecord(L.ev_end, st));
  G2_CUDA(cudaMemcpyAsync(L.hctl, L.dctl, sizeof(JoinCtl), cudaMemcpyDeviceToHost, st));
  G2_CUDA(cudaEventRecord(L.ev_ctl, st));
  L.state = Lane::Running;
  L.issued = Clock::now();
}

// Queues one count launch over the sample items [kb, ke) on lane L with the control block pair
// (d, h) of its segment and no resume list in, between the events `beg` and `end`, followed by
// the read-back of the block into h.
template <typename T, typename K>
void sample_launch(Lane& L, JoinArgs<T> A, K kernel, unsigned grid, const uint2* items, JoinCtl* d,
                   JoinCtl* h, unsigned long long kb, unsigned long long ke, cudaEvent_t beg,
                   cudaEvent_t end) {
  const cudaStream_t st = L.st;
  std::memset(h, 0, sizeof(JoinCtl));
  h->item_next = kb;
  G2_CUDA(cudaMemcpyAsync(d, h, sizeof(JoinCtl), cudaMemcpyHostToDevice, st));
  A.items = items;
  A.nitems = ke;
  A.cursor = nullptr;
  A.item_base = 0;
  A.ctl = d;
  A.resume_in = L.resume[L.cur];
  A.n_in = 0;
  A.resume_out = L.resume[L.cur ^ 1];
  A.pool = L.pool;
  A.page_fill = L.page_fill;
  A.pool_pages = unsigned(L.pages);
  G2_CUDA(cudaEventRecord(beg, st));
  kernel<<<grid, kJT, 0, st>>>(A);
  G2_CUDA_LAUNCH("join kernel launch");
  G2_CUDA(cudaEventRecord(end, st));
  G2_CUDA(cudaMemcpyAsync(h, d, sizeof(JoinCtl), cudaMemcpyDeviceToHost, st));
}

// After L.ev_ctl completed: takes the launch's counts and resume entries (entries no warp
// reached carry over behind the new ones). Returns true when the lane's item range is done.
bool lane_finish(Lane& L, JoinResult& res, size_t warps) {
  res.examined += L.hctl->examined;
  res.count += L.hctl->count;
  const unsigned consumed = std::min(L.hctl->resume_next, L.n_in);
  unsigned n_out = L.hctl->resume_out;
  if (consumed < L.n_in) {
    G2_CUDA(cudaMemcpyAsync(L.resume[L.cur ^ 1] + n_out, L.resume[L.cur] + consumed,
                            size_t(L.n_in - consumed) * sizeof(WarpState),
                            cudaMemcpyDeviceToDevice, L.st));
    n_out += L.n_in - consumed;
  }
  if (n_out > warps) throw Error(ErrorCode::Internal, "similarity join resume list overflow");
  L.cur ^= 1;
  L.n_in = n_out;
  L.item_next = std::min<unsigned long long>(L.hctl->item_next, L.item_end);
  if (L.pages) L.pages_used = std::min<size_t>(L.hctl->page_next, L.pages);
  return L.item_next >= L.item_end && L.n_in == 0;
}

}  // namespace

// The batched join (see above): estimate, banks, batches.
template <typename T, int D, bool SELF>
JoinResult run_join_batched(Call& call, const DevGrid<T>& ga, const DevGrid<T>& gb, T eps2,
                            const std::vector<signed char>& offsets, PairSink* sink,
                            uint64_t max_pairs, JoinExtra* x) {
  LastRun& lr = last_run();
  Control& ctl = call.ctl;
  JoinResult res;
  if (ga.nitems == 0) return res;
  std::unique_ptr<PrepareTimer> prep(new PrepareTimer(ctl));
  signed char* d_off = upload_offsets(call, offsets);
  // Item order, static or queued assignment and lanes per point (gpu2bs.join_balance and
  // gpu2bs.join_threads_per_point): the same plan as the serial path.
  const JoinPlan plan = plan_join<T, D, SELF>(call, ga, gb, d_off, int(offsets.size() / D));
  const auto kernel = join_kernel_for<T, D, SELF, false>(plan.k);
  const auto count_kernel = join_kernel_for<T, D, SELF, true>(plan.k);
  int bps = 0, bps_count = 0;
  G2_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, kernel, kJT, 0));
  G2_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps_count, count_kernel, kJT, 0));
  if (bps < 1 || bps_count < 1)
    throw Error(ErrorCode::Internal, "CUDA join kernel does not fit on the device");
  const unsigned grid = unsigned(bps * device_facts().sms);
  const unsigned grid_count = unsigned(bps_count * device_facts().sms);
  const size_t warps = size_t(std::max(grid, grid_count)) * kWarps;
  const int forced_streams = ctl.overrides.join_streams;
  const int streams = forced_streams > 0 ? std::min(forced_streams, Call::kExtraStreams)
                                        : cuda_tuning::kJoinStreams;

  // Lanes: streams, control blocks and resume lists (banks come after the estimate).
  std::vector<std::unique_ptr<Lane>> lanes;
  for (int k = 0; k < streams; ++k) {
    lanes.emplace_back(new Lane());
    Lane& L = *lanes.back();
    L.st = call.extra_stream(k);
    L.dctl = call.alloc<JoinCtl>(1, "join control");
    L.hctl = static_cast<JoinCtl*>(call.alloc_host(sizeof(JoinCtl)));
    L.resume[0] = call.alloc<WarpState>(warps, "resume list");
    L.resume[1] = call.alloc<WarpState>(warps, "resume list");
    L.ev_start = call.event(true);
    L.ev_end = call.event(true);
    L.ev_ctl = call.event();
    if (plan.static_items) L.cursor = call.alloc<unsigned long long>(warps, "warp cursors");
  }
  // Work queued on the call's stream (grid, offsets) precedes the lanes' work.
  cudaEvent_t ev_ready = call.event(true);
  G2_CUDA(cudaEventRecord(ev_ready, call.stream()));
  for (auto& L : lanes) G2_CUDA(cudaStreamWaitEvent(L->st, ev_ready, 0));

  JoinArgs<T> A = join_args(ga, gb, d_off, int(offsets.size() / D), eps2);
  A.budget_ns = (unsigned long long)(cuda_tuning::kJoinSliceMs * 1e6);
  apply_extra(A, x);  // the emit kernel's filter (the count kernel reads none of it)

  // 1. Result-size estimate: count mode over every stride-th item, segment by segment.
  const unsigned long long nitems = ga.nitems;
  const unsigned long long stride =
      std::max<unsigned long long>(1, (nitems + cuda_tuning::kJoinSampleItems - 1) /
                                          cuda_tuning::kJoinSampleItems);
  const unsigned long long nsample = (nitems + stride - 1) / stride;
  Lane& L0 = *lanes[0];
  const uint2* sample = plan.items;
  unsigned long long* const l0_cursor = L0.cursor;
  L0.cursor = nullptr;  // the sample pass takes its items from the queue
  if (stride > 1) {
    uint2* s = call.alloc<uint2>(nsample, "join sample");
    G2_CUDA(cudaMemcpy2DAsync(s, sizeof(uint2), plan.items, stride * sizeof(uint2), sizeof(uint2),
                              nsample, cudaMemcpyDeviceToDevice, L0.st));
    sample = s;
  }
  const int nseg = int(std::max<unsigned long long>(
      1, std::min<unsigned long long>(cuda_tuning::kJoinSampleSegments,
                                      nsample / cuda_tuning::kJoinSampleSegMin)));
  std::vector<unsigned long long> seg_begin(size_t(nseg) + 1);  // in items
  std::vector<double> per_item(static_cast<size_t>(nseg), 0.0);
  double estimate = 0;
  {
    // Every segment's first launch is queued at once, each with its own control block, and the
    // host waits once; a segment that one launch did not finish (its time slice ran out) is
    // counted again from its start with launches waited for one by one.
    Intervals kin;
    cudaEvent_t ev_sref = call.event(true);
    G2_CUDA(cudaEventRecord(ev_sref, L0.st));
    JoinCtl* seg_d = call.alloc<JoinCtl>(size_t(nseg), "join sample control");
    JoinCtl* seg_h = static_cast<JoinCtl*>(call.alloc_host(size_t(nseg) * sizeof(JoinCtl)));
    std::vector<cudaEvent_t> seg_ev(size_t(nseg) * 2);
    for (int g = 0; g < nseg; ++g) {
      const unsigned long long kb = nsample * unsigned(g) / unsigned(nseg);
      const unsigned long long ke = nsample * unsigned(g + 1) / unsigned(nseg);
      seg_begin[size_t(g)] = std::min(nitems, kb * stride);
      seg_ev[size_t(g) * 2] = call.event(true);
      seg_ev[size_t(g) * 2 + 1] = call.event(true);
      sample_launch(L0, A, count_kernel, grid_count, sample, seg_d + g, seg_h + g, kb, ke,
                    seg_ev[size_t(g) * 2], seg_ev[size_t(g) * 2 + 1]);
    }
    cudaEvent_t ev_all = call.event();
    G2_CUDA(cudaEventRecord(ev_all, L0.st));
    call.wait(ev_all);
    for (int g = 0; g < nseg; ++g) {
      kin.add(ev_sref, seg_ev[size_t(g) * 2], seg_ev[size_t(g) * 2 + 1]);
      const unsigned long long kb = nsample * unsigned(g) / unsigned(nseg);
      const unsigned long long ke = nsample * unsigned(g + 1) / unsigned(nseg);
      JoinResult seg;
      const JoinCtl& c = seg_h[g];
      if (c.item_next >= ke && c.resume_out == 0) {
        seg.count = c.count;
      } else {
        L0.item_next = kb;
        L0.item_end = ke;
        L0.n_in = 0;
        while (kb < ke) {
          lane_launch(L0, A, count_kernel, grid_count, sample);
          call.wait(L0.ev_ctl);
          kin.add(ev_sref, L0.ev_start, L0.ev_end);
          if (lane_finish(L0, seg, warps)) break;
        }
      }
      // Each sampled item stands for the `covered / sampled` items of its segment.
      const double covered = double(std::min(nitems, ke * stride) - std::min(nitems, kb * stride));
      double density = 0;
      if (ke > kb) density = double(seg.count) / double(ke - kb);
      per_item[unsigned(g)] = density;
      estimate += density * covered;
    }
    seg_begin[size_t(nseg)] = nitems;
    lr.sample_ms += kin.union_ms();  // summed over the sub-joins of a join in slabs
    L0.state = Lane::Idle;
  }
  L0.cursor = l0_cursor;
  const double scale = ctl.overrides.join_estimate_scale;
  estimate *= scale;
  for (double& d : per_item) d *= scale;
  lr.join_estimate = (unsigned long long)std::llround(estimate);
  lr.sample_items = size_t(nsample);

  // 2. Banks and batches.
  const size_t room = pool_room(call);
  const size_t cap = std::min(room, cuda_tuning::kJoinPoolMaxBytes);
  size_t page_size = 0;
  std::vector<size_t> bank_pages;
  double batch_target = 0;  // estimated pairs per batch
  if (ctl.max_pages) {
    page_size = std::min<size_t>(std::max<size_t>(ctl.page_pairs, 64), size_t(1) << 26);
    const size_t nb = std::min<size_t>(size_t(streams), ctl.max_pages);
    for (size_t k = 0; k < nb; ++k)
      bank_pages.push_back(ctl.max_pages / nb + (k < ctl.max_pages % nb ? 1 : 0));
    batch_target = double(bank_pages.back() * page_size) * cuda_tuning::kJoinBatchFill;
  } else {
    const double want = std::max(estimate * cuda_tuning::kJoinEstimateMargin, 1.0);
    const double lane_cap_pairs = double(cap) / double(streams) / double(sizeof(PairRecord));
    double nb = std::ceil(want / (lane_cap_pairs * cuda_tuning::kJoinBatchFill));
    if (want >= cuda_tuning::kJoinSplitPairs) nb = std::max(nb, double(streams));
    nb = std::max(nb, 1.0);
    const size_t lanes_wanted = size_t(std::min<double>(nb, streams));
    const double bank_pairs = want / nb / cuda_tuning::kJoinBatchFill;
    // Pages: about kJoinPagesPerWarp per resident warp, 64 .. kJoinPagePairs pairs (and at most
    // Control::page_pairs).
    const double per_page = bank_pairs / double(warps * cuda_tuning::kJoinPagesPerWarp);
    page_size = 64;
    while (double(page_size * 2) <= per_page && page_size * 2 <= cuda_tuning::kJoinPagePairs &&
           page_size * 2 <= std::max<size_t>(ctl.page_pairs, 64))
      page_size *= 2;
    size_t pages = size_t(std::ceil(bank_pairs / double(page_size)));
    pages = std::max(pages, warps * cuda_tuning::kJoinMinPagesPerWarp);
    const size_t page_bytes = page_size * sizeof(PairRecord) + 4;
    pages = std::max<size_t>(1, std::min(pages, cap / lanes_wanted / page_bytes));
    pages = std::min<size_t>(pages, size_t(1) << 30);
    bank_pages.assign(lanes_wanted, pages);
    batch_target = double(pages * page_size) * cuda_tuning::kJoinBatchFill /
                   cuda_tuning::kJoinEstimateMargin;
  }
  const auto bounds = plan_batches(seg_begin, per_item, std::max(batch_target, 1.0));
  const size_t nbatches = bounds.size() - 1;
  const size_t nlanes = std::min(bank_pages.size(), nbatches);
  const size_t chunk_bytes_max = cuda_tuning::kStagingBytes / 2;
  const size_t page_bytes = page_size * sizeof(PairRecord);
  size_t total_pages = 0;
  for (size_t k = 0; k < nlanes; ++k) {
    Lane& L = *lanes[k];
    L.pages = bank_pages[k];
    total_pages += L.pages;
    L.pool = call.alloc<ulonglong2>(L.pages * page_size, "result bank");
    L.page_fill = call.alloc<unsigned>(L.pages, "page fill");
    L.hfills = static_cast<unsigned*>(call.alloc_host(L.pages * 4));
  }
  // One staging pair (the process's cached buffer) for all lanes: the sink takes one chunk at a
  // time anyway, and a small ring stays in the CPU's caches.
  const size_t chunk_pages = std::max<size_t>(1, chunk_bytes_max / page_bytes);
  StagingHalf half[2];
  // A sink that lends pinned buffers gets the drained chunks copied straight into them; the
  // halves then hold lent buffers, given back on every exit.
  ChunkSink* direct = dynamic_cast<ChunkSink*>(sink);
  struct Lent {
    ChunkSink*& sink;
    StagingHalf* half;
    ~Lent() {
      if (!sink) return;
      for (int h = 0; h < 2; ++h)
        if (half[h].buf) {
          // A copy into the buffer may still run when an error ends the loop: wait for it
          // before the sink may lend the buffer again.
          if (half[h].end) (void)cudaEventSynchronize(half[h].end);
          sink->give_back(half[h].buf);
        }
    }
  } lent{direct, half};
  if (direct) {
    for (int h = 0; h < 2 && direct; ++h) {
      half[h].buf = direct->lend(chunk_pages * page_bytes);
      if (!half[h].buf) {
        if (h == 1) direct->give_back(half[0].buf);
        half[0].buf = nullptr;
        direct = nullptr;
      }
    }
  }
  for (int h = 0; h < 2; ++h) {
    if (!direct) half[h].buf = call.staging(h, chunk_pages * page_bytes);
    half[h].beg = call.event(true);
    half[h].end = call.event(true);
  }
  std::deque<Lane*> drainq;  // lanes whose banks are being drained, in the order they filled
  int issue_h = 0, cons_h = 0;
  A.page_size = unsigned(page_size);
  lr.pool_pages = total_pages;
  lr.page_pairs = page_size;
  lr.bank_pages = bank_pages.empty() ? 0 : bank_pages[0];
  lr.join_batches = int(nbatches);
  lr.join_streams = int(nlanes);
  prep.reset();

  // 3. The batches.
  cudaEvent_t ev_ref = call.event(true);
  G2_CUDA(cudaEventRecord(ev_ref, L0.st));
  Intervals kin, cin;
  size_t next = 0;
  double merge_s = 0, xfer_s = 0, other_s = 0;
  auto last_service = Clock::now();

  // Queues copies of the next chunks (drains in FIFO order) into the free staging halves.
  auto issue = [&]() {
    while (!half[issue_h].lane) {
      Lane* L = nullptr;
      for (Lane* q : drainq)
        if (q->d_issued < q->d_used) {
          L = q;
          break;
        }
      if (!L) return;
      StagingHalf& H = half[issue_h];
      const cudaStream_t st = L->st;
      H.lane = L;
      H.first = L->d_issued;
      H.cnt = std::min(chunk_pages, L->d_used - L->d_issued);
      G2_CUDA(cudaEventRecord(H.beg, st));
      G2_CUDA(cudaMemcpyAsync(H.buf, L->pool + H.first * page_size, H.cnt * page_bytes,
                              cudaMemcpyDeviceToHost, st));
      G2_CUDA(cudaEventRecord(H.end, st));
      L->d_issued += H.cnt;
      issue_h ^= 1;
    }
  };
  // Starts draining L's used pages: the page fills now, the pages as staging halves free up.
  auto begin_drain = [&](Lane& L) {
    ++lr.drains;
    L.d_used = L.pages_used;
    L.d_issued = 0;
    L.d_consumed = 0;
    G2_CUDA(cudaMemcpyAsync(L.hfills, L.page_fill, L.d_used * 4, cudaMemcpyDeviceToHost,
                            L.st));
    L.state = Lane::Draining;
    drainq.push_back(&L);
    issue();
  };
  auto launch = [&](Lane& L) { lane_launch(L, A, kernel, grid, plan.items); };
  // Takes the read-back of every lane whose launch completed: relaunch, drain or idle.
  auto service = [&]() {
    bool any = false;
    for (size_t k = 0; k < nlanes; ++k) {
      Lane& L = *lanes[k];
      if (L.state != Lane::Running) continue;
      const cudaError_t e = cudaEventQuery(L.ev_ctl);
      if (e == cudaErrorNotReady) continue;
      G2_CUDA(e);
      any = true;
      ++lr.launches;
      lr.launch_lag_ms += seconds_since(L.issued) * 1e3;
      kin.add(ev_ref, L.ev_start, L.ev_end);
      lr.join_slots += L.hctl->slots;
      const bool done = lane_finish(L, res, warps);
      if (max_pairs && res.count > max_pairs) too_many_pairs(max_pairs);
      L.batch_done = done;
      if (L.pages_used > 0 &&
          (done || L.hctl->pool_full ||
           double(L.pages_used) >= double(L.pages) * cuda_tuning::kJoinDrainFraction))
        begin_drain(L);
      else if (done)
        L.state = Lane::Idle;
      else
        launch(L);
    }
    last_service = Clock::now();
    return any;
  };
  // Hands the next copied chunk to the sink (false when it is not on the host yet).
  auto consume_chunk = [&]() -> bool {
    StagingHalf& H = half[cons_h];
    if (!H.lane) return false;
    const cudaError_t e = cudaEventQuery(H.end);
    if (e == cudaErrorNotReady) return false;
    G2_CUDA(e);
    cin.add(ev_ref, H.beg, H.end);
    Lane& L = *H.lane;
    const char* base = H.buf;
    const unsigned* fills = L.hfills + H.first;
    if (direct) {
      // The whole chunk goes to the sink, which hands the lent buffer on; a new one takes its
      // place (waiting, when the sink holds all it lends, for its reader to return one).
      size_t nrec = 0;
      for (size_t pg = 0; pg < H.cnt; ++pg) nrec += fills[pg];
      res.emitted += nrec;
      if (max_pairs && res.emitted > max_pairs) too_many_pairs(max_pairs);
      auto tm = Clock::now();
      char* taken = H.buf;
      H.buf = nullptr;
      direct->take(taken, fills, H.cnt, page_size);
      H.buf = direct->lend(chunk_pages * page_bytes);
      merge_s += seconds_since(tm);
      call.poll();
    }
    for (size_t pg = 0; !direct && pg < H.cnt;) {
      // A run of full pages and the page after them are contiguous records: one consume() of
      // up to about kSinkPiecePairs.
      const size_t first = pg;
      size_t nrec = 0;
      while (pg < H.cnt) {
        nrec += fills[pg];
        if (fills[pg++] != page_size || nrec >= kSinkPiecePairs) break;
      }
      if (!nrec) continue;
      res.emitted += nrec;
      if (max_pairs && res.emitted > max_pairs) too_many_pairs(max_pairs);
      auto tm = Clock::now();
      sink->consume(reinterpret_cast<const PairRecord*>(base + first * page_bytes), nrec);
      merge_s += seconds_since(tm);
      call.poll();
      // Other lanes' launches end meanwhile: keep them going while the sink works.
      if (seconds_since(last_service) > 5e-4) service();
    }
    // This half is read: it takes the next chunk, if any.
    L.d_consumed += H.cnt;
    H.lane = nullptr;
    cons_h ^= 1;
    if (L.d_consumed == L.d_used) {  // drained (the oldest drain: chunks go in FIFO order)
      if (drainq.front() != &L) throw Error(ErrorCode::Internal, "join drain order broken");
      drainq.pop_front();
      L.pages_used = 0;
      if (L.batch_done)
        L.state = Lane::Idle;
      else
        launch(L);
    }
    issue();
    return true;
  };

  auto t_loop = Clock::now();
  auto t_idle = Clock::now();
  for (;;) {
    call.poll();
    bool progressed = false;
    // Free lanes take the next batches (in the steady state batch b runs in lane b % lanes).
    for (size_t k = 0; k < nlanes && next < nbatches; ++k) {
      Lane& L = *lanes[(next + k) % nlanes];
      if (L.state != Lane::Idle) continue;
      L.item_next = bounds[next];
      L.item_end = bounds[next + 1];
      L.item_begin = L.item_next;
      if (L.cursor)  // static assignment restarts at the batch's first item
        G2_CUDA(cudaMemsetAsync(L.cursor, 0, warps * sizeof(unsigned long long), L.st));
      L.n_in = 0;
      L.pages_used = 0;
      L.batch_done = false;
      ++next;
      launch(L);
      progressed = true;
      k = size_t(-1);  // rescan from the next batch's lane
    }
    progressed |= service();
    progressed |= consume_chunk();
    bool running = false;
    for (size_t k = 0; k < nlanes; ++k) running |= lanes[k]->state == Lane::Running;
    const bool draining = !drainq.empty();
    if (progressed) {
      t_idle = Clock::now();
      continue;
    }
    if (!running && !draining && next >= nbatches) break;
    // Nothing ready: wait (a kernel, or only copies), spinning briefly then sleeping.
    auto tw = Clock::now();
    if (seconds_since(t_idle) > 2e-4) std::this_thread::sleep_for(std::chrono::microseconds(50));
    (running ? other_s : xfer_s) += seconds_since(tw);
  }
  const double loop_s = seconds_since(t_loop);
  lr.kernel_ms += kin.union_ms();
  lr.copy_ms += cin.union_ms();
  lr.join_pairs = res.emitted;
  lr.loop_ms += loop_s * 1e3;
  lr.loop_wait_ms += other_s * 1e3;
  lr.loop_copy_wait_ms += xfer_s * 1e3;
  lr.loop_sink_ms += merge_s * 1e3;
  ctl.stats.merge_s += merge_s;
  ctl.stats.transfer_s += xfer_s;
  ctl.stats.kernel_s += std::max(0.0, loop_s - merge_s - xfer_s);
  return res;
}

#define G2_RUN_ARGS(T) \
  Call&, const DevGrid<T>&, const DevGrid<T>&, T, const std::vector<signed char>&, PairSink*, \
      uint64_t, JoinExtra*
#define G2_INST_RUN(T, D)                                                       \
  template JoinResult run_join<T, D, true, true>(G2_RUN_ARGS(T));               \
  template JoinResult run_join<T, D, true, false>(G2_RUN_ARGS(T));              \
  template JoinResult run_join<T, D, false, true>(G2_RUN_ARGS(T));              \
  template JoinResult run_join<T, D, false, false>(G2_RUN_ARGS(T));             \
  template JoinResult run_join_batched<T, D, true>(G2_RUN_ARGS(T));             \
  template JoinResult run_join_batched<T, D, false>(G2_RUN_ARGS(T));
G2_JOIN_FOR_ALL(G2_INST_RUN)
#undef G2_INST_RUN
#undef G2_RUN_ARGS

}  // namespace join
}  // namespace cuda
}  // namespace gpu2bs
