// Model: a decoder of llm/architecture.h (Qwen2, Qwen3, Llama) on the GPU. Weights are uploaded once
// into one weight arena in their storage format (f16, bf16 or f32: gpu/weight_format.h; arithmetic
// is f32 in every one), the KV cache is allocated for `ctx` positions, and the decode step is
// resolved once into lists of dispatches (kernel, bind group, grid) recorded unchanged for every token:
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
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpu/context.h"
#include "gpu/recorder.h"
#include "llm/config.h"
#include "llm/decode_kernels.h"
#include "llm/decoder.h"
#include "llm/reference.h"
#include "llm/step.h"

namespace wgfuse::llm {

// Fusion::Full decodes positions below attn_fuse_max with the fused layer (4 dispatches), later
// ones with split attention and the combination folded into o_proj (5); Fusion::None always with
// the split layer as it was (6), for comparison.
enum class Fusion { None, Full };
Fusion parse_fusion(std::string_view s);  // "none" | "full"; throws Error otherwise

struct ModelOptions {
  // How the weight matrices are stored on the GPU; nullopt ("--dtype auto"): the checkpoint's
  // own 16-bit type (storage_format()).
  std::optional<gpu::WeightFormat> dtype;
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

// The step decoder (see the top of this file) behind llm::Decoder.
class Model : public Decoder {
 public:
  Model(gpu::Context& ctx, ModelConfig cfg, const WeightLookup& weights, ModelOptions options = {});

  const ModelConfig& config() const override { return cfg_; }
  uint32_t capacity() const override { return ctx_len_; }
  void reset() override;

  // Appends `ids` to the sequence and feeds every unfed token through the model. The logits of
  // the last are then in the logits buffer (read_logits); a generate() with an empty prompt picks
  // from them. Picks no token.
  void prefill(std::span<const uint32_t> ids);
  std::vector<float> read_logits() override;
  // Times the decode step (then `picker`, or greedy argmax when empty) at the position after the
  // last generate(), `reps` times; the device is left as it was. Needs timestamp queries.
  DecodeProfile profile_decode(std::span<const Step> picker, uint32_t reps);
  DecodeBuffers decode_buffers() const { return {logits_, tokens_, state_}; }
  // The decode step (without the picker) that decodes position pos.
  std::span<const Step> decode_step(uint32_t pos) const;
  uint32_t short_max() const;  // attend_short's positions: 0 = not used

 private:
  struct Layer {
    gpu::TensorView qkv, qkv_bias, input_norm, o, post_norm, gate_up, down;  // views of the weight arena
    gpu::TensorView qk_norm;  // q_norm then k_norm (architectures with qk_norm), else empty
    gpu::Buffer k_cache, v_cache;
  };
  void upload_weights(const WeightLookup& weights);
  gpu::Buffer scratch(std::string_view label, uint64_t words);
  void build_steps();
  // Decoder's hooks: the device position is state word 0; the picker is options.picker or argmax.
  bool logits_ready() const override { return logits_fresh_ && fed_ == seq_.size(); }
  const gpu::Buffer& tokens_buffer() const override { return tokens_; }
  void set_position() override;
  void record_prompt_phase(gpu::Recorder& rec, const GenerateOptions& opt) override;
  void record_steps(gpu::Recorder& rec, uint32_t pos, uint32_t k, const GenerateOptions& opt) override;
  std::span<const Step> picker(const GenerateOptions& opt) const;
  // Records (and submits, but for the last chunk) every unfed position through the model and
  // the LM head; state word 0 is left on the last position, for the picker.
  void record_prompt(gpu::Recorder& rec);
  std::vector<Step> prompt_steps(uint32_t T);  // a prompt chunk of T tokens: embedding .. last layer
  void count_buffer(const gpu::Buffer& b) { stats_.gpu_memory_bytes += b.size(); }

  ModelConfig cfg_;
  ModelOptions opt_;
  uint32_t ctx_len_;
  std::vector<Layer> layers_;
  gpu::TensorView embedding_, lm_head_, final_norm_;  // views of the weight arena
  gpu::Buffer rope_;
  gpu::Buffer x_, q_, att_, act_, att_partials_, logits_, part_v_, part_i_, tokens_, state_;
  gpu::Buffer x_next_, o_parts_;  // the fused layer: the residual stream after attention, attend_o's partials
  gpu::Buffer x_rows_, q_rows_, att_rows_, act_rows_;  // prefill activations [chunk][width]
  std::vector<Step> step_;                             // embedding .. LM head, split attention
  // Fusion::Full (else empty): the step with fused layers, and with o_proj_combine (long contexts).
  std::vector<Step> fused_step_, long_step_, short_step_;
  std::vector<Step> argmax_;   // the greedy picker
  Step advance_{};             // ends a prompt position instead of the LM head and the picker
  bool logits_fresh_ = false;  // prefill() left the logits of the last fed token
};

}  // namespace wgfuse::llm
