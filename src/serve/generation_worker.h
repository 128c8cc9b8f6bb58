// The generation worker of `wgfuse serve --model`: one thread owns the llm::Session (and so the
// GPU) and serves the requests queued by the connection threads, which never touch the GPU; a
// connection thread follows its request through a Generation (queue position, text as it comes,
// the end) and cancels it when its client leaves.
//
// Scheduling today is sequential: one request at a time, first come first served, each from an
// empty KV cache (so that its tokens are those `wgfuse generate` gives for the same prompt and
// settings). Batched decoding (N sequences per step) would change run() and nothing a connection
// thread sees.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "llm/session.h"

namespace wgfuse::serve {

struct GenerationRequest {
  std::vector<uint32_t> prompt;
  uint32_t max_tokens = 0;  // checked against the context by the caller (at least 1)
  llm::SamplingOverrides sampling;
  std::vector<std::string> stop;  // non-empty strings
};

enum class FinishReason { None, Stop, Length, Cancelled, Error };

// What a connection thread sees of its request. Thread-safe.
class Generation {
 public:
  struct News {
    size_t queue_position = 0;  // requests ahead of this one, the running one included
    bool started = false;       // the worker has taken it
    std::string text;           // text since the last take()
    FinishReason finish = FinishReason::None;
    uint32_t prompt_tokens = 0, completion_tokens = 0;
    std::string error;          // FinishReason::Error: why
    double first_token_ms = 0;  // from submission to the first token
  };
  // Waits up to `timeout` for anything new, then returns the state and the text since the last
  // take() (which it clears).
  News take(std::chrono::milliseconds timeout);
  size_t queue_position() {
    std::lock_guard lock(mutex_);
    return news_.queue_position;
  }
  // The client left or the server stops: a queued request is dropped, a running one ends at the next
  // token.
  void cancel() {
    cancelled_ = true;
    stop_ = true;
  }
  bool cancelled() const { return cancelled_; }

 private:
  friend class GenerationWorker;
  void update(const std::function<void(News&)>& change);

  GenerationRequest request_;
  std::chrono::steady_clock::time_point submitted_;
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> stop_{false};  // the session's stop flag: cancelled, or a stop string seen
  std::mutex mutex_;
  std::condition_variable changed_;
  News news_;
  bool fresh_ = true;  // news_ changed since the last take()
};

struct WorkerStatus {
  size_t queued = 0, running = 0, max_queue = 0;
  uint64_t served = 0, cancelled = 0;  // requests finished, and those cut short (client left, stop)
  uint32_t parallel = 1;               // sequences decoded at once
};

class GenerationWorker {
 public:
  // `session` is loaded; from now on only the worker's thread uses it for generation, holding
  // `device` while it uses the GPU.
  GenerationWorker(llm::Session& session, size_t max_queue, std::mutex& device);
  ~GenerationWorker();
  GenerationWorker(const GenerationWorker&) = delete;
  GenerationWorker& operator=(const GenerationWorker&) = delete;

  // Queues the request; nullptr when max_queue requests wait already (or the worker has stopped).
  std::shared_ptr<Generation> submit(GenerationRequest request);
  WorkerStatus status() const;
  // Cancels every request (they finish as Cancelled) and ends the thread.
  void stop();

 private:
  void run();
  void serve(Generation& g);  // ends with retire()
  void retire(Generation& g, const std::function<void(Generation::News&)>& last);
  void announce_positions();  // under mutex_

  llm::Session& session_;
  std::mutex& device_;
  const size_t max_queue_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Generation>> queue_;
  std::shared_ptr<Generation> running_;
  uint64_t served_ = 0, cancelled_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace wgfuse::serve
