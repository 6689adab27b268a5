// The pair pipeline's sinks and the page pipe (pipeline.h).
#include "pipeline.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <pthread.h>

#include "arith.h"
#include "error.h"

namespace gpu2bs {

void FilterSink::consume(const PairRecord* pairs, size_t n) {
  if (!filter_) {
    next_.consume(pairs, n);
    return;
  }
  buf_.assign(pairs, pairs + n);
  const size_t kept = filter_->select(buf_.data(), n);
  if (kept) next_.consume(buf_.data(), kept);
}

void ExcludePrefixSink::consume(const PairRecord* pairs, size_t n) {
  buf_.clear();
  for (size_t k = 0; k < n; ++k)
    if (pairs[k].i >= pa_ || pairs[k].j >= pb_) buf_.push_back(pairs[k]);
  if (!buf_.empty()) next_.consume(buf_.data(), buf_.size());
}

// The prefix of an input of n points for the first phase (0: too small for two phases).
static size_t prefix_of(size_t n) {
  if (n < kPrefixMinPoints) return 0;
  return std::max(kPrefixFloor, n / kPrefixDivisor);
}

size_t prefix_first_join(Engine& eng, const SimjoinProblem& p, PairSink& sink, Control& ctl,
                         const std::function<bool()>& go_on) {
  const size_t pa = prefix_of(p.a.n), pb = p.self ? pa : prefix_of(p.b.n);
  if (pa == 0 || pb == 0) {
    eng.simjoin(p, sink, ctl);
    return 0;
  }
  SimjoinProblem first = p;
  first.a.n = pa;
  first.b.n = pb;
  eng.simjoin(first, sink, ctl);
  if (go_on && !go_on()) return pa;
  ExcludePrefixSink rest(sink, pa, pb);
  eng.simjoin(p, rest, ctl);
  return pa;
}

void AggregateSink::consume(const PairRecord* pairs, size_t n) {
  if (n == 0) return;
  if (count == 0) min = max = pairs[0].dist;
  double s = sum_, c = comp_, lo = min, hi = max;
  for (size_t p = 0; p < n; ++p) {
    const double d = pairs[p].dist;
    neumaier_add(s, c, d);
    lo = std::min(lo, d);
    hi = std::max(hi, d);
  }
  sum_ = s;
  comp_ = c;
  min = lo;
  max = hi;
  count += n;
}


void AggregateSink::merge(uint64_t c, double s, double comp, double lo, double hi) {
  if (c == 0) return;
  if (count == 0) {
    min = lo;
    max = hi;
  }
  min = std::min(min, lo);
  max = std::max(max, hi);
  neumaier_add(sum_, comp_, s);
  neumaier_add(sum_, comp_, comp);
  count += c;
}

AggregateStage::AggregateStage(const PairPredicate* pred) : pred_(pred) {
  interval_ = !pred_ || pred_->empty() || pred_->dist_interval(&lo_, &lo_incl_, &hi_, &hi_incl_);
}

void AggregateStage::consume(const PairRecord* pairs, size_t n, int worker) {
  Part& p = parts_[size_t(worker)];
  double s = p.sum, c = p.comp, lo = p.min, hi = p.max;
  uint64_t k = p.count;
  for (size_t q = 0; q < n; ++q) {
    const double d = pairs[q].dist;
    if (interval_) {
      if (!(lo_incl_ ? d >= lo_ : d > lo_) || !(hi_incl_ ? d <= hi_ : d < hi_)) continue;
    } else if (!pred_->keep(0, 0, d)) {
      continue;
    }
    if (k == 0) lo = hi = d;
    neumaier_add(s, c, d);
    lo = std::min(lo, d);
    hi = std::max(hi, d);
    ++k;
  }
  p.sum = s;
  p.comp = c;
  p.min = lo;
  p.max = hi;
  p.count = k;
}

bool AggregateStage::dist_interval(double* lo, bool* lo_incl, double* hi, bool* hi_incl) const {
  *lo = lo_;
  *hi = hi_;
  *lo_incl = lo_incl_;
  *hi_incl = hi_incl_;
  return interval_;
}

void AggregateStage::add(int worker, uint64_t count, double sum, double comp, double min, double max) {
  if (count == 0) return;
  Part& p = parts_[size_t(worker)];
  if (p.count == 0) {
    p.min = min;
    p.max = max;
  }
  neumaier_add(p.sum, p.comp, sum);
  neumaier_add(p.sum, p.comp, comp);
  p.min = std::min(p.min, min);
  p.max = std::max(p.max, max);
  p.count += count;
}

void AggregateStage::finish(AggregateSink* out) const {
  for (const Part& p : parts_) out->merge(p.count, p.sum, p.comp, p.min, p.max);
}

GroupSink::GroupSink(const PairKeys& keys, int side, size_t na, size_t nb) : keys_(keys), side_(side) {
  // Self-join: both sides index the one point set. Two relations: id1 indexes a, id2 b.
  const size_t n = keys.self ? na : side == 0 ? na : nb;
  group_ids_ = keys.self ? keys.a : side == 0 ? keys.a : keys.b;
  cells_.assign(n, Cell{0, HUGE_VAL, -HUGE_VAL});
}

void GroupSink::consume(const PairRecord* pairs, size_t n) {
  const int64_t* a = keys_.a;
  for (size_t p = 0; p < n; ++p) {
    const PairRecord& r = pairs[p];
    uint32_t g;
    if (keys_.self) {
      // id1 is the smaller key of the pair (either point when the keys are equal).
      const bool i_small = a[r.i] <= a[r.j];
      g = (side_ == 0) == i_small ? r.i : r.j;
    } else {
      g = side_ == 0 ? r.i : r.j;
    }
    Cell& c = cells_[g];
    c.count++;
    c.min = std::min(c.min, r.dist);
    c.max = std::max(c.max, r.dist);
  }
}

void GroupSink::merge(const PairReduce& r) {
  if (r.group_count.size() != cells_.size() || r.group_min.size() != cells_.size() ||
      r.group_max.size() != cells_.size())
    throw Error(ErrorCode::Internal, "group reduction of another point set");
  for (size_t g = 0; g < cells_.size(); ++g) {
    if (!r.group_count[g]) continue;
    Cell& c = cells_[g];
    c.count += r.group_count[g];
    c.min = std::min(c.min, r.group_min[g]);
    c.max = std::max(c.max, r.group_max[g]);
  }
}

std::vector<GroupRow> GroupSink::finish() const {
  std::vector<GroupRow> rows;
  for (size_t g = 0; g < cells_.size(); ++g)
    if (cells_[g].count) rows.push_back(GroupRow{group_ids_[g], cells_[g].count, cells_[g].min, cells_[g].max});
  // Rows come in point order; keys read in the relation's order are often sorted already.
  auto by_key = [](const GroupRow& x, const GroupRow& y) { return x.key < y.key; };
  if (!std::is_sorted(rows.begin(), rows.end(), by_key)) std::sort(rows.begin(), rows.end(), by_key);
  size_t out = 0;
  for (size_t k = 0; k < rows.size(); ++k) {
    if (out > 0 && rows[out - 1].key == rows[k].key) {
      GroupRow& m = rows[out - 1];
      m.count += rows[k].count;
      m.min = std::min(m.min, rows[k].min);
      m.max = std::max(m.max, rows[k].max);
    } else {
      rows[out++] = rows[k];
    }
  }
  rows.resize(out);
  return rows;
}

void TopKSink::consume(const PairRecord* pairs, size_t n) {
  if (k_ == 0) return;
  auto cmp = [this](const TopRow& x, const TopRow& y) { return before(x, y); };
  for (size_t p = 0; p < n; ++p) {
    const double d = pairs[p].dist;
    if (heap_.size() == k_) {
      // Cheap rejection on dist alone before the keys are looked up.
      const double worst = heap_.front().dist;
      if (desc_ ? d < worst : d > worst) continue;
    }
    TopRow row;
    row.dist = d;
    row.i = pairs[p].i;
    row.j = pairs[p].j;
    keys_.get(pairs[p], &row.id1, &row.id2);
    if (heap_.size() < k_) {
      heap_.push_back(row);
      std::push_heap(heap_.begin(), heap_.end(), cmp);
    } else if (before(row, heap_.front())) {
      std::pop_heap(heap_.begin(), heap_.end(), cmp);
      heap_.back() = row;
      std::push_heap(heap_.begin(), heap_.end(), cmp);
    }
  }
}

std::vector<PairRecord> TopKSink::records() const {
  std::vector<PairRecord> out;
  out.reserve(heap_.size());
  for (const TopRow& r : heap_) out.push_back(PairRecord{r.i, r.j, r.dist});
  return out;
}

std::vector<TopRow> TopKSink::finish() {
  std::vector<TopRow> rows = heap_;
  std::sort(rows.begin(), rows.end(), [this](const TopRow& x, const TopRow& y) { return before(x, y); });
  return rows;
}

// Queues copies of the engine's pages; blocks while the queue is full; throws Interrupted once
// the pipe stops (the engine unwinds).
class PagePipe::QueueSink final : public PairSink {
 public:
  explicit QueueSink(PagePipe* pipe) : pipe_(pipe) {}
  void consume(const PairRecord* pairs, size_t n) override {
    if (n == 0) return;
    Page page(pairs, pairs + n);
    std::unique_lock<std::mutex> lk(pipe_->mu_);
    pipe_->cv_.wait(lk, [&] { return pipe_->stopping() || pipe_->pages_.size() < pipe_->max_pages_; });
    if (pipe_->stopping()) throw Error(ErrorCode::Interrupted, "result pipe stopped");
    pipe_->pages_.push_back(std::move(page));
    pipe_->cv_.notify_all();
  }

 private:
  PagePipe* pipe_;
};

void PagePipe::start(std::function<void(PairSink&)> produce) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  try {
    thread_ = std::thread([this, produce] {
      QueueSink sink(this);
      std::exception_ptr err;
      try {
        produce(sink);
      } catch (...) {
        err = std::current_exception();
      }
      std::lock_guard<std::mutex> lk(mu_);
      if (!stopping()) error_ = err;
      done_ = true;
      cv_.notify_all();
    });
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    throw Error(ErrorCode::OutOfMemory, "could not start the result thread");
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

PagePipe::Status PagePipe::next(Page* page, int wait_ms) {
  std::unique_lock<std::mutex> lk(mu_);
  if (pages_.empty() && !done_) {
    wanting_ = true;  // the reader has read every page: a producer in drained() may go on
    cv_.notify_all();
  }
  cv_.wait_for(lk, std::chrono::milliseconds(wait_ms), [&] { return !pages_.empty() || done_; });
  if (!pages_.empty()) {
    wanting_ = false;
    *page = std::move(pages_.front());
    pages_.pop_front();
    cv_.notify_all();
    return Status::Page;
  }
  if (!done_) return Status::Wait;
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
  return Status::Done;
}

bool PagePipe::drained() {
  std::unique_lock<std::mutex> lk(mu_);
  cv_.wait(lk, [&] { return stopping() || (pages_.empty() && wanting_); });
  return !stopping();
}

void PagePipe::stop() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_.store(true);
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  pages_.clear();
}

}  // namespace gpu2bs
