// Worker threads, cancel polling and the bounded result page queue.
#include "parallel.h"

#include <csignal>
#include <pthread.h>

#include "error.h"

namespace gpu2bs {

// Starts the workers with all signals blocked (the mask is inherited at creation).
WorkerGroup::WorkerGroup(int n, std::function<void(int, WorkerGroup&)> fn, size_t max_pages)
    : fn_(std::move(fn)), max_pages_(max_pages ? max_pages : size_t(4) * (n > 0 ? n : 1)) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  try {
    for (int i = 0; i < n; ++i) {
      {
        std::lock_guard<std::mutex> lk(mu_);
        ++running_;
      }
      try {
        threads_.emplace_back([this, i] { run(i); });
      } catch (...) {
        std::lock_guard<std::mutex> lk(mu_);
        --running_;
        throw;
      }
    }
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    request_stop();
    for (auto& t : threads_) t.join();
    throw Error(ErrorCode::OutOfMemory, "could not start worker threads");
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

WorkerGroup::~WorkerGroup() {
  request_stop();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

void WorkerGroup::request_stop() {
  stop_.store(true);
  std::lock_guard<std::mutex> lk(mu_);
  space_cv_.notify_all();
  main_cv_.notify_all();
}

// Body of one worker: runs fn, records the first exception, signals the caller.
void WorkerGroup::run(int index) {
  try {
    fn_(index, *this);
  } catch (...) {
    std::lock_guard<std::mutex> lk(mu_);
    if (!error_) error_ = std::current_exception();
    stop_.store(true);
    space_cv_.notify_all();
  }
  std::lock_guard<std::mutex> lk(mu_);
  --running_;
  main_cv_.notify_all();
}

bool WorkerGroup::push_page(Page&& page) {
  std::unique_lock<std::mutex> lk(mu_);
  space_cv_.wait(lk, [&] { return stopping() || pages_.size() < max_pages_; });
  if (stopping()) return false;
  pages_.push_back(std::move(page));
  main_cv_.notify_all();
  return true;
}

void WorkerGroup::drive(Control& ctl, const std::function<void(Page&)>& on_page) {
  const auto interval = std::chrono::milliseconds(ctl.poll_ms > 0 ? ctl.poll_ms : 20);
  for (;;) {
    if (ctl.interrupt_pending()) {
      request_stop();
      throw Error(ErrorCode::Interrupted, "interrupted");
    }
    Page page;
    bool have = false, done = false;
    {
      std::unique_lock<std::mutex> lk(mu_);
      main_cv_.wait_for(lk, interval, [&] { return !pages_.empty() || running_ == 0; });
      if (!pages_.empty()) {
        page = std::move(pages_.front());
        pages_.pop_front();
        have = true;
        space_cv_.notify_one();
      } else if (running_ == 0) {
        done = true;
      }
    }
    if (have) {
      if (on_page) on_page(page);  // may throw: the destructor stops the workers
      continue;
    }
    if (done) break;
  }
  for (auto& t : threads_) t.join();
  if (error_) std::rethrow_exception(error_);
}

void parallel_for(Control& ctl, size_t n, const std::function<void(size_t, int)>& body,
                  int max_workers) {
  if (n == 0) return;
  int threads = ctl.threads > 0 ? ctl.threads : 1;
  if (max_workers > 0 && threads > max_workers) threads = max_workers;
  if (size_t(threads) > n) threads = int(n);
  if (threads == 1) {
    // One worker: run on the calling thread (no thread start-up cost for small problems),
    // polling for cancel between items, which take a few milliseconds at most.
    for (size_t item = 0; item < n; ++item) {
      if (ctl.interrupt_pending()) throw Error(ErrorCode::Interrupted, "interrupted");
      body(item, 0);
    }
    return;
  }
  std::atomic<size_t> next{0};
  WorkerGroup group(threads, [&](int w, WorkerGroup& g) {
    for (;;) {
      if (g.stopping()) return;
      size_t item = next.fetch_add(1, std::memory_order_relaxed);
      if (item >= n) return;
      body(item, w);
    }
  });
  group.drive(ctl);
}

}  // namespace gpu2bs
