#include "serve/generation_worker.h"

#include <algorithm>
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

GenerationWorker::GenerationWorker(llm::Session& session, size_t max_queue, std::mutex& device,
                                   uint32_t parallel)
    : session_(session), device_(device), max_queue_(max_queue), parallel_(parallel) {
  if (parallel_ > 1) {
    std::lock_guard gpu(device_);
    batch_ = std::make_unique<llm::BatchDecoder>(session_.step_decoder(), parallel_);
    slots_.resize(parallel_);
  }
  thread_ = std::thread([this] { parallel_ > 1 ? run_batched() : run(); });
}

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

// A request's position: the requests ahead of it, the running ones included.
void GenerationWorker::announce_positions() {
  size_t position = running_.size();
  for (auto& g : queue_) {
    if (g->news_.queue_position != position)
      g->update([&](Generation::News& n) { n.queue_position = position; });
    ++position;
  }
}

WorkerStatus GenerationWorker::status() const {
  std::lock_guard lock(mutex_);
  return {.queued = queue_.size(),
          .running = running_.size(),
          .max_queue = max_queue_,
          .served = served_,
          .cancelled = cancelled_,
          .parallel = parallel_};
}

void GenerationWorker::stop() {
  std::deque<std::shared_ptr<Generation>> dropped;
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    dropped.swap(queue_);
    for (auto& g : running_) g->cancel();
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
      running_.push_back(g);
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
    std::erase_if(running_, [&](const std::shared_ptr<Generation>& r) { return r.get() == &g; });
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

void GenerationWorker::run_batched() {
  for (;;) {
    std::vector<std::pair<uint32_t, std::shared_ptr<Generation>>> joining;
    std::vector<std::shared_ptr<Generation>> dropped;  // cancelled while queued
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty() || !running_.empty(); });
      if (stopping_) break;
      for (uint32_t b = 0; b < parallel_ && !queue_.empty(); ++b) {
        if (slots_[b]) continue;
        auto g = queue_.front();
        queue_.pop_front();
        running_.push_back(g);
        if (g->cancelled()) {
          dropped.push_back(g);
          --b;  // the slot is still free
        } else {
          joining.push_back({b, g});
          slots_[b].emplace(Slot{g, llm::StreamDecoder(session_.tokenizer(), /*skip_special=*/true),
                                 StopStrings(g->request_.stop)});
        }
      }
      announce_positions();
    }
    for (auto& g : dropped)
      retire(*g, [](Generation::News& n) {
        n.queue_position = 0;
        n.finish = FinishReason::Cancelled;
      });
    for (auto& [b, g] : joining) join(b, g);
    bool any = false;
    for (auto& s : slots_) any = any || s.has_value();
    if (!any) continue;
    std::vector<uint32_t> ids;
    try {
      std::lock_guard gpu(device_);
      ids = batch_->step();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "wgfuse serve: a batched decode step failed: %s\n", e.what());
      for (uint32_t b = 0; b < parallel_; ++b)
        if (slots_[b]) finish(b, FinishReason::Error, e.what());
      continue;
    }
    for (uint32_t b = 0; b < parallel_; ++b)
      if (slots_[b] && ids[b] != llm::BatchDecoder::kNoToken) deliver(b, ids[b]);
  }
  // Stopping: the running requests end as cancelled (stop() cancelled them).
  for (uint32_t b = 0; b < parallel_; ++b)
    if (slots_[b]) finish(b, FinishReason::Cancelled, "the server is stopping");
}

bool GenerationWorker::join(uint32_t b, const std::shared_ptr<Generation>& g) {
  const GenerationRequest& r = g->request_;
  g->update([&](Generation::News& n) {
    n.queue_position = 0;
    n.started = true;
    n.prompt_tokens = uint32_t(r.prompt.size());
  });
  try {
    const llm::SamplingParams params = session_.resolve_sampling(r.sampling);
    std::lock_guard gpu(device_);
    batch_->start(b, r.prompt, params);
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wgfuse serve: a generation failed: %s\n", e.what());
    finish(b, FinishReason::Error, e.what());
    return false;
  }
}

void GenerationWorker::deliver(uint32_t b, uint32_t id) {
  Slot& s = *slots_[b];
  Generation& g = *s.g;
  ++s.tokens;
  const auto& stop_ids = session_.stop_ids();
  const bool eos = std::find(stop_ids.begin(), stop_ids.end(), id) != stop_ids.end();
  if (!eos && id < session_.tokenizer().vocab_size()) {
    const std::string shown = s.stops.push(s.text.push(int32_t(id)));
    const auto now = std::chrono::steady_clock::now();
    g.update([&](Generation::News& n) {
      n.text += shown;
      if (s.tokens == 1)
        n.first_token_ms = std::chrono::duration<double, std::milli>(now - g.submitted_).count();
    });
  }
  if (g.cancelled()) return finish(b, FinishReason::Cancelled);
  if (eos || s.stops.hit()) return finish(b, FinishReason::Stop);
  if (s.tokens >= g.request_.max_tokens || batch_->position(b) >= batch_->capacity())
    return finish(b, FinishReason::Length);
}

void GenerationWorker::finish(uint32_t b, FinishReason reason, const std::string& error) {
  Slot s = std::move(*slots_[b]);
  slots_[b].reset();
  {
    std::lock_guard gpu(device_);
    batch_->stop(b);
  }
  std::string tail;
  if (reason != FinishReason::Error) {
    tail = s.stops.push(s.text.finish());
    tail += s.stops.finish();
  }
  retire(*s.g, [&](Generation::News& n) {
    n.queue_position = 0;
    n.text += tail;
    n.completion_tokens = s.tokens;
    n.finish = reason;
    n.error = error;
  });
}

}  // namespace wgfuse::serve
