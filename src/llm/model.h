// Model: a decoder of llm/architecture.h (Qwen2, Qwen3, Llama) on the GPU. Weights are uploaded once in the
// storage dtype (f16 packed two to a u32, or f32; arithmetic is f32 either way), the KV cache is allocated
// for `ctx` positions, and the decode step is resolved once into lists of dispatches (kernel, bind group,
// grid) recorded unchanged for every token:
//   embed; per layer (split): qkv_rope (with per-head q/k norms, Qwen3: qkv_rope storing the raw
//   heads, then qk_norm_rope), attend (chunks, combine; below attn_short_max positions
//   one attend_short dispatch instead), o_proj + residual, gate_up_silu, down + residual;
//   per layer (fused, Fusion::Full below attn_fuse_max positions): qkv_rope, attend_o (attention
//   times W_o, a partial per kv head), gate_up_silu_sum (residual + partials into x_next),
//   down + residual (x = x_next + W_down act);
//   per layer (Fusion::Full from attn_fuse_max positions on): the split layer with
//   attend_combine folded into o_proj (o_proj_combine), 5 dispatches;
//   LM head; token picker (greedy argmax, or the sampler)
// The step reads and advances a device-side decode state (state word 0 = pos), and the picker
// writes tokens[pos + 1], which the next step's embedding reads: K steps go into one command
// buffer with no host sync, and the host reads the tokens back once per K steps.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpu/context.h"
#include "gpu/recorder.h"
#include "llm/config.h"
#include "llm/decode_kernels.h"
#include "llm/reference.h"
#include "llm/step.h"

namespace wgfuse::llm {

// Fusion::Full decodes positions below attn_fuse_max with the fused layer (4 dispatches), later
// ones with split attention and the combination folded into o_proj (5); Fusion::None always with
// the split layer as it was (6), for comparison.
enum class Fusion { None, Full };
Fusion parse_fusion(std::string_view s);  // "none" | "full"; throws Error otherwise

struct ModelOptions {
  WeightDType dtype = WeightDType::F16;
  // None by default: on the H100 (2026-11-22, 0.5B f16) the split layers ran 905 tok/s, Full
  // with attend_o 774, Full with o_proj_combine at every position 905 short and 548 vs 717 at
  // 4,000 positions: fewer dispatches did not make a faster step (docs/RESULTS.md).
  Fusion fusion = Fusion::None;
  // Positions from which Fusion::Full uses the split attention: attend_o redoes a group's whole
  // attention in every row block, cheap only while the cache is short (an estimate; measure it
  // with `generate --attn-fuse-max`).
  uint32_t attn_fuse_max = 512;
  // Fusion::None: positions below which each layer's decode attention is one dispatch per head
  // (attend_short) instead of chunks and their combination (2 dispatches); 0 = always split. On
  // the H100 (0.5B f16): 1,099 tok/s at positions 16-143 against 960 with 0; 930 against 901 at
  // positions 448-507.
  uint32_t attn_short_max = 512;
  uint32_t ctx = 4096;  // KV-cache positions; at most max_position_embeddings
  // Prompt tokens per prefill submit (tiled matrix-matrix kernels); 0 feeds prompts through
  // decode steps instead, one position at a time.
  uint32_t prefill_chunk = 512;
  AttentionSplit attention;  // how decode attention is split along the cache
  // Called while uploading: bytes uploaded so far, bytes in all.
  std::function<void(uint64_t done, uint64_t total)> progress;
};

// What a token picker (greedy argmax here, or the sampler) works on. Contract: read logits
// f32[vocab] and tokens[0..pos]; write tokens[pos + 1]; set state word 0 to pos + 1.
struct DecodeBuffers {
  const gpu::Buffer& logits;  // f32[vocab]
  const gpu::Buffer& tokens;  // u32[ctx + 1]
  const gpu::Buffer& state;   // u32[4], word 0 = pos
};

struct GenerateOptions {
  uint32_t steps_per_submit = 8;  // K decode steps per command buffer
  std::vector<uint32_t> eos_ids;  // generation stops after the first of these (it is reported)
  std::span<const Step> picker;   // the sampler's steps; empty: greedy argmax
  // Debug path: called after every step with its logits (forces K = 1; each call is a read-back,
  // counted in the stats).
  std::function<void(std::span<const float> logits)> on_logits;
};

struct ModelStats {
  uint64_t weight_bytes = 0, kv_cache_bytes = 0, gpu_memory_bytes = 0;  // all of the model's buffers
  double upload_ms = 0;
  uint32_t dispatches_per_step = 0;       // one decode step: embedding .. picker (fused when enabled)
  uint32_t dispatches_per_step_long = 0;  // the same from attn_fuse_max (attn_short_max) positions on
  // The last generate(): the prompt phase (prompt positions + the first generated token) and
  // the decode phase (every later token).
  uint64_t prompt_tokens = 0, generated_tokens = 0;
  double prefill_ms = 0, decode_ms = 0;
  // decode_tokens: generated tokens delivered by the decode phase (the rate's numerator);
  // decode_steps: steps computed, which may run past an EOS inside the last command buffers.
  uint64_t decode_dispatches = 0, decode_submits = 0, decode_readbacks = 0, decode_tokens = 0,
           decode_steps = 0;
  uint64_t debug_readbacks = 0;  // logits read back (GenerateOptions::on_logits, read_logits)
};

// `Model::profile_decode`: one decode step's dispatches timed by GPU timestamps.
struct StepTiming {
  const Step* step;
  std::vector<double> us;  // one per repetition
};
struct DecodeProfile {
  uint32_t position = 0;              // the cache position the step decoded
  std::vector<StepTiming> steps;      // each dispatch in its own timed pass
  std::vector<double> whole_step_us;  // all of them in one timed pass, one per repetition
};

class Model {
 public:
  Model(gpu::Context& ctx, ModelConfig cfg, const WeightLookup& weights, ModelOptions options = {});

  const ModelConfig& config() const { return cfg_; }
  uint32_t capacity() const { return ctx_len_; }
  // Positions in the KV cache, and the sequence so far (its last token may not be fed yet).
  uint32_t length() const { return fed_; }
  const std::vector<uint32_t>& sequence() const { return seq_; }
  void reset();

  // Appends `ids` to the sequence and feeds every unfed token through the model. The logits of
  // the last are then in the logits buffer (read_logits). Picks no token.
  void prefill(std::span<const uint32_t> ids);
  // Appends `prompt`, then generates up to n tokens: each is passed to on_token (false stops)
  // and returned. Stops after an EOS id; tokens computed past it in a K batch are discarded.
  std::vector<uint32_t> generate(std::span<const uint32_t> prompt, uint32_t n,
                                 const std::function<bool(uint32_t)>& on_token = {},
                                 const GenerateOptions& options = {});

  std::vector<float> read_logits();  // debug read-back of the last logits (counted)
  // Times the decode step (then `picker`, or greedy argmax when empty) at the position after the
  // last generate(), `reps` times; the device is left as it was. Needs timestamp queries.
  DecodeProfile profile_decode(std::span<const Step> picker, uint32_t reps);
  DecodeBuffers decode_buffers() const { return {logits_, tokens_, state_}; }
  // The decode step (without the picker) that decodes position pos.
  std::span<const Step> decode_step(uint32_t pos) const;
  uint32_t short_max() const;  // attend_short's positions: 0 = not used
  const ModelStats& stats() const { return stats_; }

 private:
  struct Layer {
    gpu::Buffer qkv, qkv_bias, input_norm, o, post_norm, gate_up, down, k_cache, v_cache;
    gpu::Buffer qk_norm;  // q_norm then k_norm (architectures with qk_norm), else none
  };
  void upload_weights(const WeightLookup& weights);
  gpu::Buffer scratch(std::string_view label, uint64_t words);
  void build_steps();
  // Appends ids to seq_, writes the unwritten tail of seq_ to the device and sets pos = fed_.
  void push_sequence(std::span<const uint32_t> ids);
  // Records (and submits, but for the last chunk) every unfed position through the model and
  // the LM head; state word 0 is left on the last position, for the picker.
  void record_prompt(gpu::Recorder& rec);
  std::vector<Step> prompt_steps(uint32_t T);  // a prompt chunk of T tokens: embedding .. last layer
  void count_buffer(const gpu::Buffer& b) { stats_.gpu_memory_bytes += b.size(); }

  gpu::Context* ctx_;
  ModelConfig cfg_;
  ModelOptions opt_;
  uint32_t ctx_len_;
  uint64_t total_upload_ = 0, done_upload_ = 0;
  std::vector<Layer> layers_;
  gpu::Buffer embedding_, lm_head_, final_norm_, rope_;
  gpu::Buffer x_, q_, att_, act_, att_partials_, logits_, part_v_, part_i_, tokens_, state_;
  gpu::Buffer x_next_, o_parts_;  // the fused layer: the residual stream after attention, attend_o's partials
  gpu::Buffer x_rows_, q_rows_, att_rows_, act_rows_;  // prefill activations [chunk][width]
  gpu::Buffer token_staging_[2];                       // decode tokens read back, one per batch in flight
  std::vector<Step> step_;                             // embedding .. LM head, split attention
  // Fusion::Full (else empty): the step with fused layers, and with o_proj_combine (long contexts).
  std::vector<Step> fused_step_, long_step_, short_step_;
  std::vector<Step> argmax_;  // the greedy picker
  Step advance_{};            // ends a prompt position instead of the LM head and the picker
  std::vector<uint32_t> seq_;
  uint32_t fed_ = 0;
  uint32_t written_ = 0;       // tokens of seq_ already in the device tokens buffer
  bool logits_fresh_ = false;  // prefill() left the logits of the last fed token
  ModelStats stats_;
};

}  // namespace wgfuse::llm
