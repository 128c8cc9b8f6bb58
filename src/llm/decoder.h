// Decoder: what every LLM decoder offers (llm::Model, the step decoder; llm::PersistentDecoder, one
// dispatch per token), and the generation loop they share. A decoder keeps a sequence of token
// ids, its KV cache holding the positions fed so far, and the tokens on the device (u32
// [capacity + 1]); generate() appends a prompt and decodes after it:
//   the prompt phase: every unfed position, the pick of the first new token, one read-back;
//   the decode phase: K steps per command buffer (K = steps_per_submit), each buffer ending with a
//   copy of its K tokens into a staging buffer of its own; two buffers in flight, so that the
//   host's recording, submission and read-back overlap the GPU's work.
// A subclass records the phases (record_prompt_phase, record_steps) and keeps the device's position
// in step with the host's (set_position); everything else is written here once.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "gpu/context.h"
#include "gpu/plan.h"
#include "gpu/recorder.h"
#include "gpu/weight_format.h"
#include "llm/config.h"

namespace wgfuse::llm {

struct GenerateOptions {
  uint32_t steps_per_submit = 8;  // K decode steps per command buffer
  std::vector<uint32_t> eos_ids;  // generation stops after the first of these (it is reported)
  gpu::Plan* picker = nullptr;    // the sampler's plan; nullptr: greedy argmax
  // Debug path: called after every step with its logits (forces K = 1; each call is a read-back,
  // counted in the stats).
  std::function<void(std::span<const float> logits)> on_logits;
};

// One meaning for every decoder. The sizes and the upload are set when the decoder is built; the
// rest describe the last generate().
struct DecoderStats {
  uint64_t weight_bytes = 0, kv_cache_bytes = 0, gpu_memory_bytes = 0;  // all of the decoder's buffers
  gpu::WeightFormat weight_format = gpu::WeightFormat::F16;             // the format of most matrix bytes
  // Every format the matrices are stored in, with its matrices and their bytes, most bytes first
  // (a GGUF file mixes types tensor by tensor).
  struct FormatUse {
    gpu::WeightFormat format;
    uint32_t matrices = 0;
    uint64_t bytes = 0;
  };
  std::vector<FormatUse> weight_formats;
  // The matrix bytes one decode step reads: every layer's matrices, the LM head and one embedding
  // row (the KV cache read grows with the position: --profile).
  uint64_t weight_bytes_per_token = 0;
  double upload_ms = 0;
  // Dispatches that decode one token (embedding .. picker): the step decoder's list, 1 for the
  // persistent decoder; _long: the same from position long_from on (attn_fuse_max, or
  // attn_short_max as capped by head_dim; 0: one list throughout).
  uint32_t dispatches_per_step = 0, dispatches_per_step_long = 0, long_from = 0;
  // The prompt phase (prompt positions + the first generated token) and the decode phase (every
  // later token).
  uint64_t prompt_tokens = 0, generated_tokens = 0;
  double prefill_ms = 0, decode_ms = 0;
  // decode_tokens: generated tokens delivered by the decode phase (the rate's numerator);
  // decode_steps: tokens computed, which may run past an EOS inside the last command buffers;
  // decode_dispatches, decode_submits, decode_readbacks: what the decode phase recorded,
  // submitted and read back for them.
  uint64_t decode_dispatches = 0, decode_submits = 0, decode_readbacks = 0, decode_tokens = 0,
           decode_steps = 0;
  uint64_t debug_readbacks = 0;  // logits read back since the last generate() began (on_logits, read_logits)
  // The persistent decoder: reads of a word another workgroup wrote before a grid barrier that still
  // found its previous value (each discards its batch), since the decoder was built.
  uint64_t stale_reads = 0;
  std::map<std::string, uint64_t> stale_reads_by_region;  // (regions with none left out)
  // Batches of tokens (the prompt phase, or K decode steps) whose dispatches read a stale word and
  // were therefore discarded and run again, since the decoder was built.
  uint64_t batches_run_again = 0;
};

class Decoder {
 public:
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;
  virtual ~Decoder() = default;

  virtual const ModelConfig& config() const = 0;
  virtual uint32_t capacity() const = 0;  // KV-cache positions (--ctx)
  // Positions in the KV cache, and the sequence so far (its last token may not be fed yet).
  uint32_t length() const { return fed_; }
  const std::vector<uint32_t>& sequence() const { return seq_; }
  virtual void reset();  // an empty sequence; the next generate() starts afresh
  // Takes `tokens` as the sequence, positions 0..fed - 1 of it already in the KV cache (written by
  // the caller: BatchDecoder::release), so that the next generate() goes on from it.
  void resume(std::span<const uint32_t> tokens, uint32_t fed);

  // Appends `prompt`, then generates up to n tokens: each is passed to on_token (false stops)
  // and returned. Stops after an EOS id; tokens computed past it in a K batch are discarded.
  std::vector<uint32_t> generate(std::span<const uint32_t> prompt, uint32_t n,
                                 const std::function<bool(uint32_t)>& on_token = {},
                                 const GenerateOptions& options = {});
  virtual std::vector<float> read_logits() = 0;  // debug read-back of the last logits (counted)
  const DecoderStats& stats() const { return stats_; }

 protected:
  explicit Decoder(gpu::Context& ctx) : ctx_(&ctx) {}

  // Throws Error for options this decoder cannot run.
  virtual void check(const GenerateOptions&) const {}
  // True when the logits of the whole sequence are on the device already (Model::prefill): an
  // empty prompt then picks from them.
  virtual bool logits_ready() const { return false; }
  virtual const gpu::Buffer& tokens_buffer() const = 0;  // u32 [capacity + 1]
  // Called when tokens were appended past the fed ones: the device's position becomes fed_.
  virtual void set_position() = 0;
  // Records every unfed position of the sequence (none when logits_ready()) and the pick of the
  // token after the last; may submit parts of it itself.
  virtual void record_prompt_phase(gpu::Recorder& rec, const GenerateOptions& opt) = 0;
  // Records k decode steps, the first feeding position pos, each picking the next token.
  virtual void record_steps(gpu::Recorder& rec, uint32_t pos, uint32_t k, const GenerateOptions& opt) = 0;
  // Up to 16 bytes of device state copied into the staging buffer's head with every batch of
  // tokens and checked when it is read back (the persistent decoder's barrier status). False: the
  // batch's tokens are discarded, and so are those of the batches recorded after it; the decoder
  // then runs again from the first token not taken, after restart(its position).
  virtual void record_status(gpu::Recorder&, const gpu::Buffer& /*staging*/) {}
  virtual bool check_status(std::span<const uint32_t, 4> /*words*/) { return true; }
  // Readies the device to decode from position pos again (the tokens known: the sequence so far).
  virtual void restart(uint32_t /*pos*/) {}

  // Checks ids (vocabulary, capacity), appends them, writes the unwritten tail to the device.
  void push_sequence(std::span<const uint32_t> ids);

  gpu::Context* ctx_;
  std::vector<uint32_t> seq_;
  uint32_t fed_ = 0;      // positions in the KV cache
  uint32_t written_ = 0;  // tokens of seq_ already in the device tokens buffer
  DecoderStats stats_;

 private:
  static constexpr uint64_t kStatusBytes = 16;  // the staging buffer's head (record_status)
  gpu::Buffer staging_[2];                      // tokens read back, one per batch in flight
};

}  // namespace wgfuse::llm
