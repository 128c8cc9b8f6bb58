// WorkerPool: a fixed set of threads that run batches of independent items, one batch at a time;
// the calling thread works on each batch too. For host loops over large memory (filling upload
// staging from mapped files), where one core cannot reach the memory's bandwidth.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace wgfuse::util {

class WorkerPool {
 public:
  // `threads` in all, the caller's included; 0: std::thread::hardware_concurrency().
  explicit WorkerPool(unsigned threads = 0);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  unsigned threads() const { return unsigned(workers_.size()) + 1; }
  // fn(i) for every i in [0, n), spread over the threads; returns when every call has returned.
  // The first exception thrown is rethrown here; items not yet started when it was thrown are
  // skipped.
  void run(size_t n, const std::function<void(size_t)>& fn);

 private:
  void work();
  void drain();  // runs items of the current batch until none is left

  std::vector<std::thread> workers_;
  std::mutex m_;
  std::condition_variable start_, done_;
  const std::function<void(size_t)>* fn_ = nullptr;
  size_t n_ = 0;
  std::atomic<size_t> next_{0};
  std::atomic<bool> failed_{false};
  std::exception_ptr error_;
  size_t busy_ = 0;  // workers not yet through the current batch
  uint64_t batch_ = 0;
  bool stop_ = false;
};

}  // namespace wgfuse::util
