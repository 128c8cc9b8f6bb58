#include "util/worker_pool.h"

#include <algorithm>
#include <utility>

namespace wgfuse::util {

WorkerPool::WorkerPool(unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard l(m_);
    stop_ = true;
  }
  start_.notify_all();
  for (auto& t : workers_) t.join();
}

void WorkerPool::drain() {
  for (size_t i; !failed_.load(std::memory_order_relaxed) && (i = next_.fetch_add(1)) < n_;) {
    try {
      (*fn_)(i);
    } catch (...) {
      std::lock_guard l(m_);
      if (!error_) error_ = std::current_exception();
      failed_ = true;
    }
  }
}

void WorkerPool::work() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock l(m_);
      start_.wait(l, [&] { return stop_ || batch_ != seen; });
      if (stop_) return;
      seen = batch_;
    }
    drain();
    std::lock_guard l(m_);
    if (--busy_ == 0) done_.notify_one();
  }
}

void WorkerPool::run(size_t n, const std::function<void(size_t)>& fn) {
  {
    std::lock_guard l(m_);
    fn_ = &fn;
    n_ = n;
    next_ = 0;
    failed_ = false;
    error_ = nullptr;
    busy_ = workers_.size();
    ++batch_;
  }
  start_.notify_all();
  drain();
  std::unique_lock l(m_);
  done_.wait(l, [&] { return busy_ == 0; });
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

}  // namespace wgfuse::util
