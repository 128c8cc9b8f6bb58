#include "serve/generation_worker.h"

#include <algorithm>
#include <cstdio>

#include "serve/stop_strings.h"
#include "util/clock.h"
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
                                   uint32_t parallel, uint32_t join_chunk)
    : session_(session),
      device_(device),
      max_queue_(max_queue),
      parallel_(parallel),
      join_chunk_(join_chunk) {
  if (join_chunk_ == 0) throw Error("serve: the prompt chunk of a joining request must be at least 1 token");
  // The batch decodes on the step decoder's weights, which the persistent decoder releases.
  if (parallel_ > 1 && session_.options().decoder == llm::DecoderKind::Persistent)
    throw Error("serve: " + std::to_string(parallel_) +
                " requests decoded together (--parallel) run on the step decoder, which --decode persistent "
                "releases after its check: serve with --parallel 1 or with --decode steps");
  if (parallel_ > 1) {
    std::lock_guard gpu(device_);
    batch_ = std::make_unique<llm::BatchDecoder>(session_.step_decoder(), parallel_);
    session_.step_decoder().prepare_feed(join_chunk_);
    prompt_plans_ = session_.step_decoder().prompt_plans();
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
          .parallel = parallel_,
          .alone = alone_,
          .moved = moved_,
          .moved_back = moved_back_,
          .joined = join_stats_.prompts,
          .join_tokens = join_stats_.tokens,
          .join_feeds = join_stats_.feeds,
          .prompt_plans = prompt_plans_,
          .join_rounds = join_rounds_,
          .join_feed_ms = join_stats_.feed_ms,
          .longest_join_round_ms = longest_join_round_ms_,
          .decode = decode_};
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
      alone_ = true;
      announce_positions();
    }
    if (g->cancelled())
      retire(*g, [](Generation::News& n) {
        n.queue_position = 0;
        n.finish = FinishReason::Cancelled;
      });
    else
      serve(*g);
    std::lock_guard lock(mutex_);
    alone_ = false;
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
  announce_start(g);
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
    std::vector<std::shared_ptr<Generation>> dropped;  // cancelled while queued
    std::shared_ptr<Generation> alone;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(
          lock, [&] { return stopping_ || !queue_.empty() || !running_.empty() || batch_->in_flight() > 0; });
      if (stopping_) break;
      const bool idle =
          std::none_of(slots_.begin(), slots_.end(), [](const auto& s) { return s.has_value(); });
      // A batch left empty collects its rounds first, so that a lone request may run alone.
      if (idle && batch_->in_flight() == 0 && queue_.size() == 1 && !queue_.front()->cancelled()) {
        alone = queue_.front();
        queue_.pop_front();
        running_.push_back(alone);
        alone_ = true;
      }
      for (uint32_t b = 0; b < parallel_ && !queue_.empty() && !alone && !(idle && batch_->in_flight());
           ++b) {
        if (slots_[b]) continue;
        auto g = queue_.front();
        queue_.pop_front();
        running_.push_back(g);
        if (g->cancelled()) {
          dropped.push_back(g);
          --b;  // the slot is still free
        } else {
          joins_.push_back(b);
          slots_[b].emplace(slot_for(g));
        }
      }
      announce_positions();
    }
    if (alone) {
      announce_start(*alone);
      serve_alone(slot_for(alone), /*resumed=*/false);
      continue;
    }
    for (auto& g : dropped)
      retire(*g, [](Generation::News& n) {
        n.queue_position = 0;
        n.finish = FinishReason::Cancelled;
      });
    const auto round_start = SteadyClock::now();
    const bool fed = prefill_joining();
    // Two rounds in flight: the next is submitted before the last is read back, so that the GPU
    // runs it while this thread hands out the last's tokens. One request left with nobody waiting
    // gets no new round: its rounds are collected and it moves back to the step decoder.
    bool submitted = false;
    if (const auto count = next_count();
        count && batch_->in_flight() < llm::BatchDecoder::kMaxRoundsInFlight && !lone()) {
      submitted = submit_round(*count, fed ? std::optional(round_start) : std::nullopt);
      if (!submitted) continue;  // it failed: every request ended
    }
    if (batch_->in_flight() > 0 &&
        (batch_->in_flight() == llm::BatchDecoder::kMaxRoundsInFlight || !submitted))
      collect_round();
    if (const auto b = last_one()) move_back(*b);
  }
  // Stopping: the running requests end as cancelled (stop() cancelled them), the rounds in flight
  // are collected (nothing left to hand out) before the batch goes.
  for (uint32_t b = 0; b < parallel_; ++b)
    if (slots_[b]) finish(b, FinishReason::Cancelled, "the server is stopping");
  while (batch_->in_flight() > 0) collect_round();
}

std::optional<uint32_t> GenerationWorker::next_count() const {
  bool wanted = false, hurry = batch_->joining() || !joins_.empty();
  uint32_t count = kStepsPerSubmit;
  for (uint32_t b = 0; b < parallel_; ++b)
    if (batch_->active(b)) {
      const Slot& s = *slots_[b];
      count = std::min(count, batch_->capacity() - batch_->position(b));
      // A request whose last token is in flight already wants nothing more: the rounds in flight
      // end it, and the tokens a later round computes for it are dropped.
      if (s.scheduled < s.g->request_.max_tokens) {
        wanted = true;
        count = std::min(count, s.g->request_.max_tokens - s.scheduled);
      }
      hurry = hurry || s.scheduled == 0;
    }
  if (!wanted || count == 0) return std::nullopt;  // 0: a full context, ended by a round in flight
  return hurry ? 1 : count;
}

bool GenerationWorker::submit_round(uint32_t count, std::optional<SteadyClock::time_point> fed_at) {
  const auto t0 = SteadyClock::now();
  const bool overlapped = batch_->in_flight() > 0;
  try {
    std::lock_guard gpu(device_);
    batch_->submit(count);
  } catch (const std::exception& e) {
    fail_all("a batched decode step failed", e.what());
    return false;
  }
  for (uint32_t b = 0; b < parallel_; ++b)
    if (batch_->active(b)) slots_[b]->scheduled += count;
  rounds_.push_back({fed_at});
  std::lock_guard lock(mutex_);
  ++decode_.rounds;
  decode_.steps += count;
  decode_.overlapped += overlapped;
  decode_.submit_ms += ms_since(t0);
  return true;
}

void GenerationWorker::collect_round() {
  const RoundInfo info = rounds_.front();
  rounds_.pop_front();
  const auto t0 = SteadyClock::now();
  llm::BatchDecoder::Round round;
  try {
    std::lock_guard gpu(device_);
    round = batch_->collect();
  } catch (const std::exception& e) {
    fail_all("a batched decode step failed", e.what());
    return;
  }
  const auto t1 = SteadyClock::now();
  // A request that ends mid-way frees its slot; the tokens computed after its end are dropped.
  for (size_t i = 0; i < round.tokens.size(); ++i)
    for (uint32_t b = 0; b < parallel_; ++b)
      if (const uint32_t id = round.tokens[i][b]; slots_[b] && id != llm::BatchDecoder::kNoToken) {
        const bool room = round.first[b] + i + 1 < batch_->capacity();
        if (const auto reason = take(*slots_[b], id, room)) finish(b, *reason);
      }
  for (auto& s : slots_)
    if (s) flush(*s);
  std::lock_guard lock(mutex_);
  decode_.wait_ms += std::chrono::duration<double, std::milli>(t1 - t0).count();
  decode_.deliver_ms += ms_since(t1);
  if (info.fed_at) {
    ++join_rounds_;
    longest_join_round_ms_ = std::max(longest_join_round_ms_, ms_since(*info.fed_at));
  }
}

void GenerationWorker::fail_all(const char* what, const std::string& error) {
  std::fprintf(stderr, "wgfuse serve: %s: %s\n", what, error.c_str());
  for (uint32_t b = 0; b < parallel_; ++b)
    if (slots_[b]) finish(b, FinishReason::Error, error);
}

GenerationWorker::Slot GenerationWorker::slot_for(const std::shared_ptr<Generation>& g) const {
  return Slot{g, llm::StreamDecoder(session_.tokenizer(), /*skip_special=*/true),
              StopStrings(g->request_.stop)};
}

void GenerationWorker::announce_start(Generation& g) {
  g.update([&](Generation::News& n) {
    n.queue_position = 0;
    n.started = true;
    n.prompt_tokens = uint32_t(g.request_.prompt.size());
  });
}

void GenerationWorker::serve_alone(Slot s, bool resumed) {
  const GenerationRequest& r = s.g->request_;
  std::optional<FinishReason> reason;
  try {
    std::lock_guard gpu(device_);
    session_.set_sampling(r.sampling);
    // A resumed request's sequence is on the decoder already (BatchDecoder::release): an empty
    // prompt goes on from it.
    if (!resumed) session_.decoder().reset();
    const std::span<const uint32_t> prompt = resumed ? std::span<const uint32_t>() : std::span(r.prompt);
    // The prompt and max_tokens fit the context (the caller checked), so the step decoder has room
    // for every token. Stops when the request ends or another one waits.
    bool company = false;
    session_.decode(prompt, r.max_tokens - s.tokens, [&](uint32_t id) {
      reason = take(s, id, /*room=*/true);
      if (reason) return false;
      flush(s);
      std::lock_guard lock(mutex_);
      company = !queue_.empty();
      return !company;
    });
    if (!reason && !company) reason = FinishReason::Length;  // (take() says so first)
    if (!reason) batch_->adopt(0, session_.resolve_sampling(r.sampling));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wgfuse serve: a generation failed: %s\n", e.what());
    {
      std::lock_guard lock(mutex_);
      alone_ = false;
    }
    return end(s, FinishReason::Error, e.what());
  }
  {
    std::lock_guard lock(mutex_);
    alone_ = false;
    if (!reason) ++moved_;
  }
  if (reason) return end(s, *reason);
  s.scheduled = s.tokens;
  slots_[0].emplace(std::move(s));
}

std::optional<uint32_t> GenerationWorker::lone() {
  if (batch_->joining() || !joins_.empty()) return std::nullopt;
  std::optional<uint32_t> live;
  for (uint32_t b = 0; b < parallel_; ++b)
    if (slots_[b]) {
      if (live || !batch_->active(b)) return std::nullopt;
      live = b;
    }
  std::lock_guard lock(mutex_);
  if (!live || !queue_.empty() || stopping_) return std::nullopt;
  return live;
}

std::optional<uint32_t> GenerationWorker::last_one() {
  if (batch_->in_flight() > 0) return std::nullopt;
  const auto live = lone();
  if (!live) return std::nullopt;
  std::lock_guard lock(mutex_);
  alone_ = true;
  ++moved_back_;
  return live;
}

void GenerationWorker::move_back(uint32_t b) {
  Slot s = std::move(*slots_[b]);
  slots_[b].reset();
  try {
    std::lock_guard gpu(device_);
    batch_->release(b);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wgfuse serve: moving a request out of the batch failed: %s\n", e.what());
    {
      std::lock_guard lock(mutex_);
      alone_ = false;
    }
    std::lock_guard gpu(device_);
    batch_->stop(b);
    return end(s, FinishReason::Error, e.what());
  }
  serve_alone(std::move(s), /*resumed=*/true);
}

bool GenerationWorker::prefill_joining() {
  // A request that left while its prompt waits or is fed frees its slot now.
  for (uint32_t b = 0; b < parallel_; ++b)
    if (slots_[b] && !batch_->active(b) && slots_[b]->g->cancelled()) finish(b, FinishReason::Cancelled);
  const uint32_t budget0 = join_chunk_;
  uint32_t budget = budget0;
  while (budget > 0 && (batch_->joining() || !joins_.empty())) {
    if (!batch_->joining()) {
      const uint32_t b = joins_.front();
      joins_.pop_front();
      join(b);
      continue;
    }
    const uint32_t b = *batch_->joining();
    try {
      std::lock_guard gpu(device_);
      budget -= batch_->prefill(budget);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "wgfuse serve: a prompt's prefill failed: %s\n", e.what());
      finish(b, FinishReason::Error, e.what());
    }
  }
  std::lock_guard gpu(device_);
  std::lock_guard lock(mutex_);
  join_stats_ = batch_->join_stats();
  prompt_plans_ = session_.step_decoder().prompt_plans();
  return budget < budget0;
}

bool GenerationWorker::join(uint32_t b) {
  const GenerationRequest& r = slots_[b]->g->request_;
  announce_start(*slots_[b]->g);
  try {
    const llm::SamplingParams params = session_.resolve_sampling(r.sampling);
    std::lock_guard gpu(device_);
    batch_->begin(b, r.prompt, params);
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wgfuse serve: a generation failed: %s\n", e.what());
    finish(b, FinishReason::Error, e.what());
    return false;
  }
}

std::optional<FinishReason> GenerationWorker::take(Slot& s, uint32_t id, bool room) {
  Generation& g = *s.g;
  if (++s.tokens == 1) s.first_token = std::chrono::steady_clock::now();
  const auto& stop_ids = session_.stop_ids();
  const bool eos = std::find(stop_ids.begin(), stop_ids.end(), id) != stop_ids.end();
  if (!eos && id < session_.tokenizer().vocab_size()) s.shown += s.stops.push(s.text.push(int32_t(id)));
  if (g.cancelled()) return FinishReason::Cancelled;
  if (eos || s.stops.hit()) return FinishReason::Stop;
  if (s.tokens >= g.request_.max_tokens || !room) return FinishReason::Length;
  return std::nullopt;
}

void GenerationWorker::tell(Slot& s, Generation::News& n) {
  n.text += s.shown;
  s.shown.clear();
  if (s.tokens > 0 && !s.first_told)
    n.first_token_ms = std::chrono::duration<double, std::milli>(s.first_token - s.g->submitted_).count();
  s.first_told = s.tokens > 0;
}

void GenerationWorker::flush(Slot& s) {
  if (!s.shown.empty() || (s.tokens > 0 && !s.first_told))
    s.g->update([&](Generation::News& n) { tell(s, n); });
}

void GenerationWorker::finish(uint32_t b, FinishReason reason, const std::string& error) {
  Slot s = std::move(*slots_[b]);
  slots_[b].reset();
  std::erase(joins_, b);
  {
    std::lock_guard gpu(device_);
    batch_->stop(b);
  }
  end(s, reason, error);
}

void GenerationWorker::end(Slot& s, FinishReason reason, const std::string& error) {
  if (reason != FinishReason::Error) {
    s.shown += s.stops.push(s.text.finish());
    s.shown += s.stops.finish();
  }
  retire(*s.g, [&](Generation::News& n) {
    tell(s, n);
    n.queue_position = 0;
    n.completion_tokens = s.tokens;
    n.finish = reason;
    n.error = error;
  });
}

}  // namespace wgfuse::serve
