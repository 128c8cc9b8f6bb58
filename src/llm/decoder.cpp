#include "llm/decoder.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <string>

#include "llm/generated_tokens.h"
#include "util/clock.h"
#include "util/error.h"

namespace wgfuse::llm {

void Decoder::reset() {
  seq_.clear();
  fed_ = written_ = 0;
}

void Decoder::resume(std::span<const uint32_t> tokens, uint32_t fed) {
  if (fed > tokens.size())
    throw Error("resume: " + std::to_string(fed) + " positions fed of a sequence of " +
                std::to_string(tokens.size()) + " tokens");
  reset();
  push_sequence(tokens);
  fed_ = fed;
  set_position();
}

void Decoder::push_sequence(std::span<const uint32_t> ids) {
  const uint32_t vocab = config().vocab_size;
  for (uint32_t id : ids)
    if (id >= vocab)
      throw Error("token id " + std::to_string(id) + " is outside the vocabulary (vocab_size " +
                  std::to_string(vocab) + ")");
  if (seq_.size() + ids.size() > capacity())
    throw Error("the sequence (" + std::to_string(seq_.size() + ids.size()) +
                " tokens) is longer than --ctx " + std::to_string(capacity()));
  seq_.insert(seq_.end(), ids.begin(), ids.end());
  if (written_ < seq_.size()) {
    ctx_->write(tokens_buffer(), 4ull * written_, std::as_bytes(std::span(seq_).subspan(written_)));
    written_ = uint32_t(seq_.size());
  }
  if (fed_ < seq_.size()) set_position();
}

std::vector<uint32_t> Decoder::generate(std::span<const uint32_t> prompt, uint32_t n,
                                        const std::function<bool(uint32_t)>& on_token,
                                        const GenerateOptions& opt) {
  check(opt);
  if (n == 0) throw Error("generate: the number of tokens to generate (-n) must be at least 1");
  const bool from_logits = prompt.empty() && logits_ready();
  // The last token generated is never fed, so positions up to length + n - 2 are used.
  const uint64_t length = seq_.size() + prompt.size();
  if (length + n - 1 > capacity())
    throw Error("generate: " + std::to_string(length) + " tokens + " + std::to_string(n) +
                " to generate exceed --ctx " + std::to_string(capacity()));
  if (!from_logits) {
    if (fed_ == length) throw Error("generate: empty prompt");
    push_sequence(prompt);
  }
  const uint32_t K = opt.on_logits ? 1 : std::max<uint32_t>(1, opt.steps_per_submit);
  // The logits callback reads the logits buffer, which the next step overwrites: then one
  // command buffer at a time.
  const uint32_t depth = opt.on_logits ? 1 : 2;
  const uint32_t first = uint32_t(seq_.size());  // index of the first generated token
  stats_.prompt_tokens = seq_.size() - fed_;
  stats_.generated_tokens = stats_.decode_dispatches = stats_.decode_submits = stats_.decode_readbacks =
      stats_.decode_tokens = stats_.decode_steps = stats_.debug_readbacks = 0;
  stats_.prefill_ms = stats_.decode_ms = 0;
  for (auto& b : staging_)
    if (b.size() < kStatusBytes + 4ull * K)
      b = ctx_->buffer(kStatusBytes + 4ull * K, gpu::BufferUsage::MapRead | gpu::BufferUsage::CopyDst,
                       "llm.tokens_out");

  GeneratedTokens out(config().vocab_size, n, on_token, opt.eos_ids, seq_);
  gpu::Recorder rec(*ctx_);
  // Ends a batch: its status words and `count` tokens from index `at` into staging slot `slot`.
  auto end_batch = [&](uint32_t at, uint32_t count, uint32_t slot) {
    record_status(rec, staging_[slot]);
    rec.copy(tokens_buffer(), 4ull * at, staging_[slot], kStatusBytes, 4ull * count);
    rec.submit();
  };
  // Reads a batch back and reports its tokens as far as they are wanted; false when check_status
  // discarded it.
  auto take = [&](uint32_t count, uint32_t slot) {
    const auto bytes = ctx_->map_read(staging_[slot], kStatusBytes + 4ull * count);
    std::vector<uint32_t> words(bytes.size() / 4);
    std::memcpy(words.data(), bytes.data(), bytes.size());
    if (!check_status(std::span<const uint32_t, 4>(words.data(), 4))) return false;
    if (opt.on_logits) opt.on_logits(read_logits());
    for (size_t i = 4; i < words.size(); ++i) out.take(words[i]);
    return true;
  };

  // The prompt phase: every unfed prompt position, then the first generated token.
  auto t0 = SteadyClock::now();
  for (;;) {
    record_prompt_phase(rec, opt);
    end_batch(first, 1, 0);
    if (take(1, 0)) break;
    restart(fed_);
  }
  stats_.prefill_ms = ms_since(t0);

  // The decode phase. A buffer whose tokens are no longer wanted (EOS, on_token said stop) still
  // runs and is discarded.
  struct Batch {
    uint32_t count, slot;
  };
  std::deque<Batch> in_flight;
  uint32_t scheduled = uint32_t(out.ids().size()), next_slot = 0;
  t0 = SteadyClock::now();
  const uint64_t d0 = rec.dispatches(), s0 = rec.submits();
  while (!out.stopped()) {
    while (in_flight.size() < depth && scheduled < n) {
      const uint32_t k = std::min<uint32_t>(K, n - scheduled);
      record_steps(rec, first + scheduled - 1, k, opt);  // feeds token first + scheduled - 1 on
      end_batch(first + scheduled, k, next_slot);
      in_flight.push_back({k, next_slot});
      scheduled += k;
      stats_.decode_steps += k;
      next_slot = (next_slot + 1) % depth;
    }
    const Batch b = in_flight.front();
    in_flight.pop_front();
    ++stats_.decode_readbacks;
    if (!take(b.count, b.slot)) {  // it and the batches after it run again (those did nothing)
      in_flight.clear();
      scheduled = uint32_t(out.ids().size());
      restart(uint32_t(seq_.size()) - 1);  // the last token taken is fed next
    }
  }
  stats_.decode_ms = ms_since(t0);
  stats_.decode_tokens = out.ids().size() - 1;
  stats_.decode_dispatches = rec.dispatches() - d0;
  stats_.decode_submits = rec.submits() - s0;
  stats_.generated_tokens = out.ids().size();
  fed_ = uint32_t(seq_.size()) - 1;  // the last token is known but not fed
  written_ = uint32_t(seq_.size());
  return out.release();
}

}  // namespace wgfuse::llm
