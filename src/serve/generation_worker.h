// The generation worker of `wgfuse serve --model`: one thread owns the llm::Session (and so the
// GPU) and serves the requests queued by the connection threads, which never touch the GPU; a
// connection thread follows its request through a Generation (queue position, text as it comes,
// the end) and cancels it when its client leaves.
//
// Scheduling: with parallel = 1 one request at a time, first come first served, each from an
// empty KV cache through the session's own decoder (K steps per submit). With parallel = N > 1
// up to N requests are decoded together (llm::BatchDecoder): a request joins a free slot between
// steps, its prompt prefilled in chunks of join_chunk tokens between steps (so that the running
// requests keep receiving tokens), each step gives every running request its next token, and a
// request that ends or whose client left frees its slot at the next step; the others wait, first
// come first served. A request that finds the batch empty and nobody waiting runs alone through
// the session's decoder, as with parallel = 1, looking at the queue after every read-back: when
// another arrives it moves into a slot of the batch (BatchDecoder::adopt) and goes on there; when
// the batch is down to one request and nobody waits, that one moves back out to the session's
// decoder once its rounds in flight are read back (BatchDecoder::release). The batch decodes in
// rounds of a few steps with two rounds in flight: the next round is submitted before the last is
// read back, so the GPU runs it while the worker hands out the last's tokens (one news update per
// request and round); a request that ends mid-round frees its slot at once, its tokens in the round
// still in flight dropped. The joining prompts of a round are fed one after another without
// waiting for the GPU, and the round takes one step while any prompt joins.
// Either way a request's tokens are those `wgfuse generate` gives for the same prompt (and seed),
// whatever runs beside it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "llm/batch_decoder.h"
#include "llm/session.h"
#include "llm/tokenizer.h"
#include "serve/stop_strings.h"

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
    size_t queue_position = 0;  // requests ahead of this one, the running ones included
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
  bool alone = false;                  // a request runs alone through the session's decoder now
  uint64_t moved = 0;                  // requests begun alone and moved into the batch
  uint64_t moved_back = 0;             // requests left alone in the batch and moved back out
  // Joins (parallel > 1): prompts fed into the batch, their tokens, Model::feed calls and their host
  // time, the prompt chunk plans built, the rounds that fed a prompt (each ends with a batched
  // submit's read-back) and the longest of them: what a running stream waits while others join.
  uint64_t joined = 0, join_tokens = 0, join_feeds = 0, prompt_plans = 0, join_rounds = 0;
  double join_feed_ms = 0, longest_join_round_ms = 0;
  // The batched rounds (parallel > 1), those submitted while another was in flight, and the
  // worker's time on them: recording and submitting, waiting for the read-backs, handing out the
  // tokens (text, stop strings, the clients' news).
  struct Rounds {
    uint64_t rounds = 0, steps = 0, overlapped = 0;
    double submit_ms = 0, wait_ms = 0, deliver_ms = 0;
  } decode;
};

class GenerationWorker {
 public:
  // `session` is loaded; from now on only the worker's thread uses it for generation, holding
  // `device` while it uses the GPU. `parallel`: requests decoded together, 1 to
  // llm::BatchDecoder::kMaxSlots (an Error otherwise).
  // join_chunk: prompt tokens of the joining requests prefilled between two batched submits, one
  // request's prompt after another's (so that every free slot fills in one round when the prompts
  // are short); their plans are built with the worker.
  static constexpr uint32_t kJoinChunk = 512;
  // Batched steps per round (BatchDecoder::submit): one read-back for several tokens. Two rounds
  // are in flight, so a request that arrives waits for two at most before its prompt is fed.
  // While a prompt joins each round takes one step, so that the rounds stay short, and so does
  // the round of a joined request's first token.
  static constexpr uint32_t kStepsPerSubmit = 4;
  GenerationWorker(llm::Session& session, size_t max_queue, std::mutex& device, uint32_t parallel = 1,
                   uint32_t join_chunk = kJoinChunk);
  ~GenerationWorker();
  GenerationWorker(const GenerationWorker&) = delete;
  GenerationWorker& operator=(const GenerationWorker&) = delete;

  // Queues the request; nullptr when max_queue requests wait already (or the worker has stopped).
  std::shared_ptr<Generation> submit(GenerationRequest request);
  WorkerStatus status() const;
  // Cancels every request (they finish as Cancelled) and ends the thread.
  void stop();

 private:
  // A request in a slot of the batch: its text and stop strings as they come.
  struct Slot {
    std::shared_ptr<Generation> g;
    llm::StreamDecoder text;
    StopStrings stops;
    uint32_t tokens = 0;     // generated, an EOS id included
    uint32_t scheduled = 0;  // tokens once the rounds in flight are read back (in the batch)
    std::string shown;       // text not yet handed to the client
    std::chrono::steady_clock::time_point first_token;
    bool first_told = false;  // the client has its first token's time
  };
  struct RoundInfo {                                              // the worker's record of a round in flight
    std::optional<std::chrono::steady_clock::time_point> fed_at;  // it fed prompts: the feeds' start
  };
  void run();                 // parallel = 1
  void run_batched();         // parallel > 1
  void serve(Generation& g);  // ends with retire()
  // parallel > 1, the batch empty and nobody waiting: decodes the request through the session's
  // decoder until it ends or another request arrives, then moves it into the batch's slot 0.
  // resumed: the request comes out of the batch (move_back), its sequence on the decoder already.
  void serve_alone(Slot s, bool resumed);
  // The slot of the one request left in the batch when no prompt joins and nobody waits.
  std::optional<uint32_t> lone();
  // lone() once no round is in flight (then counted as alone and moved back), else nullopt.
  std::optional<uint32_t> last_one();
  // The steps of the next round: up to kStepsPerSubmit, as many as every running request has
  // room for in the context and still wants (one while prompts join or a joined request awaits
  // the round of its first token); nullopt when no running request wants more than the rounds in
  // flight give it, or one's context is full until they end it.
  std::optional<uint32_t> next_count() const;
  // Submits a round; false when it failed (every request ended with the error).
  bool submit_round(uint32_t count, std::optional<std::chrono::steady_clock::time_point> fed_at);
  // Reads the oldest round back and hands its tokens out; ends the requests that are done.
  void collect_round();
  void fail_all(const char* what, const std::string& error);
  // Moves slot b's request out of the batch into the session's decoder (BatchDecoder::release)
  // and serves it there.
  void move_back(uint32_t b);
  // Begins the prompt of slot b's request in the batch; false (the request retired) when it failed.
  bool join(uint32_t b);
  // Up to join_chunk prompt tokens of the joining requests, in slot order of arrival; true when
  // it fed any.
  bool prefill_joining();
  Slot slot_for(const std::shared_ptr<Generation>& g) const;
  void announce_start(Generation& g);
  // Takes the request's next token into its text; the reason it ends, if it does (`room`: the
  // context has no room for another token).
  std::optional<FinishReason> take(Slot& s, uint32_t id, bool room);
  // What the client has not heard yet (text, the first token's time) into its news: one update for
  // all the tokens of a round.
  void tell(Slot& s, Generation::News& n);
  void flush(Slot& s);
  void finish(uint32_t b, FinishReason reason, const std::string& error = {});
  void end(Slot& s, FinishReason reason, const std::string& error = {});
  void retire(Generation& g, const std::function<void(Generation::News&)>& last);
  void announce_positions();  // under mutex_

  llm::Session& session_;
  std::mutex& device_;
  const size_t max_queue_;
  const uint32_t parallel_, join_chunk_;
  std::unique_ptr<llm::BatchDecoder> batch_;
  std::vector<std::optional<Slot>> slots_;  // parallel > 1: the batch's slots, worker thread only
  std::deque<uint32_t> joins_;              // slots whose request waits to begin its prompt
  std::deque<RoundInfo> rounds_;            // the batch's rounds in flight, oldest first
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Generation>> queue_;
  std::vector<std::shared_ptr<Generation>> running_;
  uint64_t served_ = 0, cancelled_ = 0, moved_ = 0, moved_back_ = 0;
  uint64_t join_rounds_ = 0;  // (worker thread; status() reads them under mutex_)
  double longest_join_round_ms_ = 0;
  WorkerStatus::Rounds decode_;
  llm::BatchDecoder::JoinStats join_stats_;
  size_t prompt_plans_ = 0;
  bool alone_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace wgfuse::serve
