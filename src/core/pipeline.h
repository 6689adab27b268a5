// The pair pipeline's outputs computed before pairs reach the caller (DESIGN.md "The pair
// pipeline"): a pair predicate (pair_ir.h) applied to each result page, then one of
//   AggregateSink  count, sum, min, max of dist over all kept pairs;
//   GroupSink      per-key count, min and max of dist for id1 (or id2) of each kept pair;
//   TopKSink       the k best pairs by dist (ascending or descending), ties by (id1, id2);
//   PagePipe       pages handed over from an engine running on its own thread through a
//                  bounded queue, so the caller reads the first pages while the join runs and
//                  stops the join when it has read enough.
// No PostgreSQL and no CUDA headers here.
#pragma once

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "engine.h"
#include "pair_ir.h"

namespace gpu2bs {

// Applies `pred` to each page (unless the engine already did: Engine::applies_pair_filter)
// and hands the kept pairs to `next`.
class FilterSink final : public PairSink {
 public:
  FilterSink(const PairFilter* filter, PairSink& next) : filter_(filter), next_(next) {}
  void consume(const PairRecord* pairs, size_t n) override;

 private:
  const PairFilter* filter_;
  PairSink& next_;
  std::vector<PairRecord> buf_;
};

// Drops the pairs whose two points both lie in the leading prefix of their inputs (i < prefix_a
// and j < prefix_b) and hands the others to `next`: the second phase of a prefix-first join
// (prefix_first_join), whose first phase returned exactly those pairs.
class ExcludePrefixSink final : public PairSink {
 public:
  ExcludePrefixSink(PairSink& next, size_t prefix_a, size_t prefix_b)
      : next_(next), pa_(prefix_a), pb_(prefix_b) {}
  void consume(const PairRecord* pairs, size_t n) override;

 private:
  PairSink& next_;
  size_t pa_, pb_;
  std::vector<PairRecord> buf_;
};

// Rows of a join read under a LIMIT (any rows will do): the pairs among the leading points of
// the inputs first, then the rest. The first phase joins the first `prefix` points of each input
// (a small grid, about (prefix / n)^2 of the pairs) so the first rows come without waiting for
// the whole input's grid; the second joins everything and drops the pairs the first returned, so
// every pair comes exactly once. Inputs shorter than kPrefixMinPoints go in one phase. Between
// the phases `go_on` (when set) is asked whether the reader still wants rows (PagePipe::drained:
// a LIMIT met by the first phase's pages then ends the query without the whole input's grid).
// Returns the prefix used (0: one phase).
constexpr size_t kPrefixMinPoints = 4096;
constexpr size_t kPrefixDivisor = 16;     // prefix = n / 16 (about 1/256 of the pairs) ...
constexpr size_t kPrefixFloor = 1024;     // ... and at least this many points
size_t prefix_first_join(Engine& eng, const SimjoinProblem& p, PairSink& sink, Control& ctl,
                         const std::function<bool()>& go_on = nullptr);

// count(*), sum, min, max of dist. The sum is compensated (Neumaier), so it does not depend on
// the order pages arrive in beyond the last bits.
class AggregateSink final : public PairSink {
 public:
  void consume(const PairRecord* pairs, size_t n) override;
  // Adds a partial result (count, sum with its compensation, min, max).
  void merge(uint64_t c, double s, double comp, double lo, double hi);
  uint64_t count = 0;
  double min = 0, max = 0;
  double sum() const { return sum_ + comp_; }

 private:
  double sum_ = 0, comp_ = 0;
};

// AggregateSink's reduction run in the engine's workers (PairStage): one partial per worker,
// merged by finish(). `pred` (reading dist only, or empty) selects the pairs.
class AggregateStage final : public PairStage {
 public:
  explicit AggregateStage(const PairPredicate* pred);
  void start(int workers) override { parts_.assign(size_t(std::max(workers, 1)), Part()); }
  void consume(const PairRecord* pairs, size_t n, int worker) override;
  // The merged result.
  void finish(AggregateSink* out) const;
  // When the selection is an interval of dist (PairPredicate::dist_interval; no predicate: all
  // of it), sets it and returns true: an engine may then reduce in its kernel and add() the
  // parts instead of handing pages to consume().
  bool dist_interval(double* lo, bool* lo_incl, double* hi, bool* hi_incl) const;
  // Adds a worker's reduced part (count, sum and compensation, min, max).
  void add(int worker, uint64_t count, double sum, double comp, double min, double max);

 private:
  struct alignas(64) Part {
    uint64_t count = 0;
    double sum = 0, comp = 0, min = 0, max = 0;
  };
  const PairPredicate* pred_;
  // The selection as an interval of dist, when it is one (see dist_interval).
  bool interval_ = false;
  double lo_ = -HUGE_VAL, hi_ = HUGE_VAL;
  bool lo_incl_ = true, hi_incl_ = true;
  std::vector<Part> parts_;
};

// One group of GroupSink's result.
struct GroupRow {
  int64_t key;
  uint64_t count;
  double min, max;
};

// Per-key count, min and max of dist, keyed by id1 (side 0) or id2 (side 1) of each pair, as
// GROUP BY id1 / id2 over gpu_simjoin's rows: in a self-join a pair counts for its smaller key
// under id1 and for its larger key under id2, exactly as the rows (id1 < id2) read.
class GroupSink final : public PairSink {
 public:
  GroupSink(const PairKeys& keys, int side, size_t na, size_t nb);
  void consume(const PairRecord* pairs, size_t n) override;
  // Adds per-point results computed elsewhere (PairReduce::Group, same indexing and side).
  void merge(const PairReduce& r);
  // The groups with at least one pair, by key; equal keys (a key column that is not unique)
  // are merged.
  std::vector<GroupRow> finish() const;

 private:
  PairKeys keys_;
  int side_;
  const int64_t* group_ids_;
  struct Cell {
    uint64_t count;
    double min, max;
  };
  std::vector<Cell> cells_;  // one per point: one cache line touched per pair
};

// One row of a top-k result.
struct TopRow {
  double dist;
  int64_t id1, id2;
  uint32_t i = 0, j = 0;  // the pair's input indices (PairRecord::i, j)
};

// The k best pairs: smallest (or, descending, largest) dist, ties by ascending (id1, id2).
class TopKSink final : public PairSink {
 public:
  TopKSink(const PairKeys& keys, size_t k, bool descending) : keys_(keys), k_(k), desc_(descending) {}
  void consume(const PairRecord* pairs, size_t n) override;
  // The rows in order, best first.
  std::vector<TopRow> finish();
  // True when a pair at distance d cannot enter the kept rows: k rows are kept and d is worse
  // than the worst of them (a tie on dist may still enter, by its keys).
  bool rejects(double d) const {
    if (k_ == 0) return true;
    if (heap_.size() < k_) return false;
    const double worst = heap_.front().dist;
    return desc_ ? d < worst : d > worst;
  }
  // When k rows are kept (k > 0), sets *d to the dist of the worst of them and returns true.
  bool worst(double* d) const {
    if (k_ == 0 || heap_.size() < k_) return false;
    *d = heap_.front().dist;
    return true;
  }
  // The kept pairs (at most k, in no particular order), as the engine's records.
  std::vector<PairRecord> records() const;
  // True when a comes before b in the result order.
  bool before(const TopRow& a, const TopRow& b) const {
    if (a.dist != b.dist) return desc_ ? a.dist > b.dist : a.dist < b.dist;
    if (a.id1 != b.id1) return a.id1 < b.id1;
    return a.id2 < b.id2;
  }

 private:
  PairKeys keys_;
  size_t k_;
  bool desc_;
  std::vector<TopRow> heap_;  // a max-heap under before(): the worst kept row on top
};

// Runs an engine call on its own thread (every signal blocked) whose pages come back through a
// bounded queue. The engine's Control must report interrupt_pending() once stop() was asked
// (StopControl below does).
class PagePipe {
 public:
  using Page = std::vector<PairRecord>;
  enum class Status { Page, Done, Wait };

  explicit PagePipe(size_t max_pages) : max_pages_(std::max<size_t>(max_pages, 1)) {}
  ~PagePipe() { stop(); }
  PagePipe(const PagePipe&) = delete;
  PagePipe& operator=(const PagePipe&) = delete;

  // Starts produce(sink) on the pipe's thread; `sink` queues the pages.
  void start(std::function<void(PairSink&)> produce);
  // The next page (Page), the end (Done; rethrows the producer's error, if any), or Wait when
  // nothing came within `wait_ms` milliseconds.
  Status next(Page* page, int wait_ms);
  // Asks the producer to stop, waits for its thread and drops queued pages. Idempotent.
  void stop();
  bool stopping() const { return stop_.load(std::memory_order_relaxed); }
  // Producer side: waits until the reader has taken every queued page and asks for more (true)
  // or the pipe is stopping (false).
  bool drained();

 private:
  class QueueSink;
  size_t max_pages_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Page> pages_;
  bool done_ = false;
  bool wanting_ = false;  // the reader found the queue empty and waits for a page
  std::exception_ptr error_;
};

}  // namespace gpu2bs
