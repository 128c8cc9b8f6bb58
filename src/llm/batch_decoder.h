// BatchDecoder: several sequences decoded together on one Model's weights (kernels/llm_batch.wgsl).
// Each of `slots` sequences has its own KV cache (slot-major: [slot][kv head][position][hd] per
// layer), tokens and position; one step computes one position of every active slot, so each
// weight row is read once for all of them (the products take a team of threads per row and keep a
// dot product per slot). Sequences join and leave between steps: start() prefills a prompt but
// its last token through the model's own prompt path (llm::Model, its cache copied into the
// slot), and the next step feeds the last token; stop() idles the slot from the next step.
// Each active slot's token is picked per slot: greedy argmax (the step decoder's kernels on the
// slot's rows) or its own Sampler.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gpu/context.h"
#include "gpu/plan.h"
#include "llm/model.h"
#include "llm/row_products.h"
#include "llm/sampler.h"

namespace wgfuse::llm {

class BatchDecoder {
 public:
  static constexpr uint32_t kMaxSlots = RowProducts::kMaxSlots;
  static constexpr uint32_t kNoToken = 0xffffffffu;

  // The step's plan and the slots' buffers on `model`'s weights; the model's own decode state is
  // used by start() (prefill) only. Throws Error for slots outside 1..kMaxSlots.
  BatchDecoder(Model& model, uint32_t slots);

  uint32_t slots() const { return uint32_t(pos_.size()); }
  uint32_t capacity() const { return ctx_len_; }
  bool active(uint32_t slot) const { return active_.at(slot); }
  // The position the next step computes for the slot (the tokens it holds are 0..position).
  uint32_t position(uint32_t slot) const { return pos_.at(slot); }
  // Starts `prompt` (1..capacity() tokens) in the idle `slot`, picking its tokens with the slot's
  // sampler unless params.temperature is 0 (greedy). Uses the model's decode state (resets it).
  void start(uint32_t slot, std::span<const uint32_t> prompt,
             const SamplingParams& params = {.temperature = 0});
  // start() in parts, so that the running slots keep stepping while a long prompt is fed: begin()
  // takes the idle slot (it stays out of the steps) and resets the model's decode state; each
  // prefill(max_tokens) feeds up to max_tokens more of its prompt through the model's prompt path
  // (Model::feed: no LM head, no wait: the next steps' submit follows it on the queue) and returns
  // how many; the call that has fed all but the last token puts the slot in the steps. One prompt
  // joins at a time (the model's decode state holds it), but the next may begin right after
  // without waiting for the GPU; stop() abandons it.
  void begin(uint32_t slot, std::span<const uint32_t> prompt,
             const SamplingParams& params = {.temperature = 0});
  uint32_t prefill(uint32_t max_tokens);
  // What the joins cost the host so far.
  struct JoinStats {
    uint64_t prompts = 0, tokens = 0, feeds = 0;  // prompts fed whole, prompt tokens, Model::feed calls
    double feed_ms = 0;                           // host time recording and submitting them
  };
  const JoinStats& join_stats() const { return join_stats_; }
  // The slot begin() took, until its prompt is fed.
  std::optional<uint32_t> joining() const { return joining_ ? std::optional(joining_->slot) : std::nullopt; }
  // Moves the model's sequence into the idle `slot`, where its decoding goes on: after a
  // generation on the model (Model::generate, Session::decode), its KV cache rows, its tokens and
  // its position; the next step feeds its last token. Sampled tokens go on as they would have:
  // the sampler's draw depends on the seed and the position only (llm/sampler.h).
  void adopt(uint32_t slot, const SamplingParams& params = {.temperature = 0});
  // The reverse of adopt(): moves the active slot's sequence (its KV cache rows, its tokens and its
  // position) into the model, where a generation with an empty prompt (Session::decode) goes on
  // from it, and idles the slot. Not while a prompt joins (the model's decode state holds it).
  void release(uint32_t slot);
  // Idle from the next step submitted; its tokens in the rounds in flight are dropped (collect()
  // gives kNoToken), so the slot may take a new sequence at once.
  void stop(uint32_t slot);
  static constexpr uint32_t kMaxStepsPerSubmit = 16;
  // Rounds: submit(count) records `count` positions of every active slot and submits them without
  // waiting; collect() waits for the oldest round in flight and reads its tokens back. The
  // pickers chain each slot's tokens and position on the GPU, so the next round may be submitted
  // before the last is read back, and the GPU need not wait while the host takes the tokens.
  // position() counts the steps submitted. While rounds are in flight a prompt may begin, be fed
  // and enter its slot (the model's own buffers; the queue orders it after them) and a slot may
  // stop; release() and profile() need none in flight (an Error otherwise).
  static constexpr uint32_t kMaxRoundsInFlight = 2;
  struct Round {
    // tokens[i][b]: the token picked for slot b at step i, at position first[b] + i; kNoToken
    // where the slot was idle at the submit or stopped since.
    std::vector<std::vector<uint32_t>> tokens;
    std::vector<uint32_t> first;
  };
  // A slot without room for `count` more positions must be stopped first (an Error otherwise). A
  // slot that reaches an end of sequence mid-way keeps decoding to the last step: its caller drops
  // the tokens after it.
  void submit(uint32_t count);
  uint32_t in_flight() const { return uint32_t(rounds_.size()); }
  // Throws Error when none is in flight, or the GPU's error (the round is dropped either way).
  Round collect();
  // One round, submitted and collected: out[i][b] as Round::tokens. None may be in flight before.
  std::vector<std::vector<uint32_t>> steps(uint32_t count);
  std::vector<uint32_t> step() { return steps(1)[0]; }
  // The logits the last step submitted picked the slot's token from.
  std::vector<float> read_logits(uint32_t slot);
  // Times the next step `reps` times with GPU timestamps, each dispatch in its own pass and the
  // whole step (with the pickers) in one, without advancing any slot. position: the first active
  // slot's. Throws Error where the adapter has no timestamp queries or no slot is active.
  DecodeProfile profile(uint32_t reps);

 private:
  // A product of llm_batch.wgsl over the slots' rows (bindings: w, x, norm, the slot records, then
  // `outputs`).
  gpu::Dispatch product(const char* entry, const gpu::TensorView& w, const gpu::Binding& x, uint32_t x_stride,
                        const gpu::Binding& norm, std::vector<gpu::Binding> outputs,
                        std::map<std::string, double> constants) const {
    return products_.product(entry, w, x, x_stride, norm, slots_, std::move(outputs), std::move(constants));
  }
  void build_step();
  gpu::Binding slot_state(uint32_t b) const;
  gpu::Binding slot_tokens(uint32_t b) const;
  gpu::Binding slot_logits(uint32_t b) const;
  void write_records();  // every slot's record from pos_ and active_
  void check_idle(uint32_t slot) const;
  void check_none_in_flight(const char* what) const;
  // Puts `tokens` (0..fed in the model's KV cache, the next step feeds tokens[fed]) into the slot
  // with its picker: the one way a sequence enters a slot (start, adopt).
  void occupy(uint32_t slot, std::span<const uint32_t> tokens, uint32_t fed, const SamplingParams& params);
  // Copies KV cache rows 0..rows - 1 between the model's cache and the slot's (to_slot: into the slot).
  void copy_cache(uint32_t slot, uint32_t rows, bool to_slot);

  Model& model_;
  gpu::Context& ctx_;
  const ModelConfig& cfg_;
  uint32_t ctx_len_;
  RowProducts products_;
  uint64_t tokens_stride_, logits_stride_;                  // words per slot
  uint64_t x_stride_, q_stride_, raw_stride_, act_stride_;  // floats per slot row
  gpu::Buffer slots_, tokens_, logits_, x_, raw_, q_, att_, act_, part_v_, part_i_;
  gpu::Buffer staging_[kMaxRoundsInFlight];     // a round's tokens, read back; by turns
  std::vector<gpu::Buffer> k_cache_, v_cache_;  // per layer
  gpu::Plan step_;
  gpu::Plan argmax_;  // every greedy slot's token
  struct SlotSampler {
    std::unique_ptr<Sampler> sampler;
    std::optional<gpu::Plan> plan;
  };
  std::vector<SlotSampler> samplers_;  // per slot; no plan: greedy
  std::vector<uint32_t> pos_;
  std::vector<bool> active_;
  // Per slot, changed whenever a sequence enters or leaves it: a round's tokens go to the sequence
  // that was in the slot when it was submitted, or nowhere.
  std::vector<uint64_t> tenure_;  // from 1
  struct InFlight {
    uint32_t count, staging;
    std::vector<uint32_t> first;   // per slot: the position of step 0
    std::vector<uint64_t> tenure;  // per slot: tenure_ at the submit, 0 for a slot idle then
  };
  std::deque<InFlight> rounds_;
  uint32_t next_staging_ = 0;
  struct Joining {  // begin()'s prompt, fed in parts
    uint32_t slot;
    std::vector<uint32_t> prompt;
    SamplingParams params;
    uint32_t fed = 0;
  };
  std::optional<Joining> joining_;
  JoinStats join_stats_;
};

}  // namespace wgfuse::llm
