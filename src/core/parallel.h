// Worker threads for the CPU engine, driven from the calling (PostgreSQL backend) thread, which
// never computes: it polls for query cancel and drains result pages. Workers start with every
// signal blocked so PostgreSQL's handlers run on the backend thread only.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "engine.h"

namespace gpu2bs {

// A fixed group of workers plus a bounded queue of result pages.
class WorkerGroup {
 public:
  using Page = std::vector<PairRecord>;

  // Starts `n` workers running fn(worker_index, group). `max_pages` bounds the page queue.
  WorkerGroup(int n, std::function<void(int, WorkerGroup&)> fn, size_t max_pages = 0);
  // Stops and joins the workers (also on an exception in the caller).
  ~WorkerGroup();
  WorkerGroup(const WorkerGroup&) = delete;
  WorkerGroup& operator=(const WorkerGroup&) = delete;

  // True once a stop was requested (cancel, error, or the caller gave up).
  bool stopping() const { return stop_.load(std::memory_order_relaxed); }
  // Asks every worker to stop at its next check and wakes blocked ones.
  void request_stop();
  // Worker side: hands a full page to the caller; blocks while the queue is full. Returns false
  // when stopping (the page is dropped).
  bool push_page(Page&& page);
  // Caller side: runs until every worker has returned, polling `ctl` every ctl.poll_ms and
  // handing each page to `on_page` (may be empty). Throws Error(Interrupted) on cancel and
  // rethrows the first worker exception.
  void drive(Control& ctl, const std::function<void(Page&)>& on_page = {});

 private:
  void run(int index);
  std::function<void(int, WorkerGroup&)> fn_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable main_cv_;
  std::condition_variable space_cv_;
  std::deque<Page> pages_;
  size_t max_pages_;
  int running_ = 0;
  std::exception_ptr error_;
};

// Runs body(item, worker) for item in [0, n) with dynamic scheduling on min(ctl.threads, n,
// max_workers) workers (max_workers 0: no further limit); worker indices are below that count.
// Items should take no more than a few milliseconds each.
void parallel_for(Control& ctl, size_t n, const std::function<void(size_t, int)>& body,
                  int max_workers = 0);

}  // namespace gpu2bs
