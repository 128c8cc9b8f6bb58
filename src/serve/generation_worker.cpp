#include "serve/generation_worker.h"

#include <cstdio>

#include "serve/stop_strings.h"
#include "util/error.h"

namespace wgfuse::serve {

Generation::News Generation::take(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return fresh_; });
  fresh_ = false;
  News out = news_;
  news_.text.clear();
  return out;
}

void Generation::update(const std::function<void(News&)>& change) {
  {
    std::lock_guard lock(mutex_);
    change(news_);
    fresh_ = true;
  }
  changed_.notify_all();
}

GenerationWorker::GenerationWorker(llm::Session& session, size_t max_queue, std::mutex& device)
    : session_(session), device_(device), max_queue_(max_queue), thread_([this] { run(); }) {}

GenerationWorker::~GenerationWorker() {
  stop();
}

std::shared_ptr<Generation> GenerationWorker::submit(GenerationRequest request) {
  auto g = std::make_shared<Generation>();
  g->request_ = std::move(request);
  g->submitted_ = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || queue_.size() >= max_queue_) return nullptr;
    queue_.push_back(g);
    announce_positions();
  }
  wake_.notify_one();
  return g;
}

// A request's position: the requests ahead of it, the running one included.
void GenerationWorker::announce_positions() {
  size_t position = running_ ? 1 : 0;
  for (auto& g : queue_) {
    if (g->news_.queue_position != position)
      g->update([&](Generation::News& n) { n.queue_position = position; });
    ++position;
  }
}

WorkerStatus GenerationWorker::status() const {
  std::lock_guard lock(mutex_);
  return {.queued = queue_.size(),
          .running = running_ ? 1u : 0u,
          .max_queue = max_queue_,
          .served = served_,
          .cancelled = cancelled_};
}

void GenerationWorker::stop() {
  std::deque<std::shared_ptr<Generation>> dropped;
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    dropped.swap(queue_);
    if (running_) running_->cancel();
  }
  wake_.notify_all();
  for (auto& g : dropped) {
    g->cancel();
    g->update([](Generation::News& n) {
      n.queue_position = 0;
      n.finish = FinishReason::Cancelled;
      n.error = "the server is stopping";
    });
  }
  if (thread_.joinable()) thread_.join();
}

void GenerationWorker::run() {
  for (;;) {
    std::shared_ptr<Generation> g;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      g = queue_.front();
      queue_.pop_front();
      running_ = g;
      announce_positions();
    }
    if (g->cancelled())
      retire(*g, [](Generation::News& n) {
        n.queue_position = 0;
        n.finish = FinishReason::Cancelled;
      });
    else
      serve(*g);
  }
}

// The status counts the request as done before its client hears the end.
void GenerationWorker::retire(Generation& g, const std::function<void(Generation::News&)>& last) {
  {
    std::lock_guard lock(mutex_);
    running_.reset();
    ++(g.cancelled() ? cancelled_ : served_);
  }
  g.update(last);
}

void GenerationWorker::serve(Generation& g) {
  const GenerationRequest& r = g.request_;
  g.update([&](Generation::News& n) {
    n.queue_position = 0;
    n.started = true;
    n.prompt_tokens = uint32_t(r.prompt.size());
  });
  StopStrings stops(r.stop);
  bool first = true;
  try {
    std::lock_guard gpu(device_);
    session_.set_sampling(r.sampling);
    session_.decoder().reset();
    llm::Stream stream;
    stream.stop = &g.stop_;
    stream.on_text = [&](std::string_view piece) {
      const std::string shown = stops.push(piece);
      if (stops.hit()) g.stop_ = true;
      const auto now = std::chrono::steady_clock::now();
      g.update([&](Generation::News& n) {
        n.text += shown;
        if (first) n.first_token_ms = std::chrono::duration<double, std::milli>(now - g.submitted_).count();
      });
      first = false;
    };
    const llm::Reply reply = session_.generate(r.prompt, r.max_tokens, stream);
    const std::string tail = stops.finish();
    const FinishReason finish = g.cancelled()                         ? FinishReason::Cancelled
                                : reply.stopped_at_eos || stops.hit() ? FinishReason::Stop
                                : reply.ids.size() >= r.max_tokens    ? FinishReason::Length
                                                                      : FinishReason::Stop;
    retire(g, [&](Generation::News& n) {
      n.text += tail;
      n.completion_tokens = uint32_t(reply.ids.size());
      n.finish = finish;
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wgfuse serve: a generation failed: %s\n", e.what());
    retire(g, [&](Generation::News& n) {
      n.finish = FinishReason::Error;
      n.error = e.what();
    });
  }
}

}  // namespace wgfuse::serve
