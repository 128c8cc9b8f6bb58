// Model: a decoder of llm/architecture.h (Qwen2, Qwen3, Llama) on the GPU. Weights are uploaded
// once into one weight arena in their storage format (f16, bf16, f32 or quantized:
// gpu/weight_format.h; arithmetic is f32 in every one), the KV cache is allocated for `ctx`
// positions, and the decode step is built once, from a recipe (model.cpp: the stages of each layer
// variant), into gpu::Plans encoded unchanged for every token:
//   embed, the layers (one variant, chosen by position), then the LM head, then the token picker
//   (greedy argmax, or the sampler). Every variant of the layer starts with the projection:
//   qkv_rope, and for per-head q/k norms (Qwen3) qkv_rope storing the raw heads, then
//   qk_norm_rope. Then:
//   split: attention (chunks of the cache, combined by the last workgroup of each head), o_proj +
//     residual, gate_up_silu, down + residual; split_long (from attn_long_from positions): the
//     same in chunks twice as long; short (below attn_short_max positions): attention in one
//     dispatch per head;
//   fused (Fusion::Full below attn_fuse_max positions): attend_o (attention times W_o, a partial
//     per kv head), gate_up_silu_sum (residual + partials into x_next), down + residual
//     (x = x_next + W_down act); from attn_fuse_max on, the split layer.
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
#include "gpu/plan.h"
#include "gpu/recorder.h"
#include "llm/config.h"
#include "llm/decode_kernels.h"
#include "llm/decoder.h"
#include "llm/reference.h"

namespace wgfuse::llm {

// Fusion::Full decodes positions below attn_fuse_max with the fused layer (4 dispatches), later
// ones with the split layer; Fusion::None with the short layer, then the split one (5 each).
enum class Fusion { None, Full };
Fusion parse_fusion(std::string_view s);  // "none" | "full"; throws Error otherwise

struct ModelOptions {
  // How the weight matrices are stored on the GPU; nullopt ("--dtype auto"): the checkpoint's
  // own 16-bit type (storage_format()).
  std::optional<gpu::WeightFormat> dtype;
  // None by default: on the H100 (2026-11-22, 0.5B f16) the split layers ran 905 tok/s, Full
  // with attend_o 774: fewer dispatches did not make a faster step (docs/RESULTS.md).
  Fusion fusion = Fusion::None;
  // Positions from which Fusion::Full uses the split attention: attend_o redoes a group's whole
  // attention in every row block, cheap only while the cache is short (an estimate; measure it
  // with `generate --attn-fuse-max`).
  uint32_t attn_fuse_max = 512;
  // Fusion::None: positions below which each layer's decode attention is one dispatch per head
  // (attend_short) instead of split along the cache; 0 = always split.
  // Capped at Model::kAttendShortSpan / head_dim (docs/RESULTS.md, sessions 4, 20 and 30).
  uint32_t attn_short_max = 256;
  // Positions from which the split attention takes chunks of twice attention.chunk (from where the
  // split begins, if that is later): fewer for each head's last workgroup to combine, where the
  // cache is long enough to fill the GPU with them (faster from ~2,000 positions on the H200,
  // slower at 1,000: docs/RESULTS.md, session 29); 0 = never.
  uint32_t attn_long_from = 2048;
  uint32_t ctx = 4096;  // KV-cache positions; at most max_position_embeddings
  // Prompt tokens per prefill submit (tiled matrix-matrix kernels); 0 feeds prompts through
  // decode steps instead, one position at a time.
  uint32_t prefill_chunk = 4096;
  // Chunks of up to this many tokens go through the row products of kernels/llm_batch.wgsl
  // instead, in passes of kShortPassTokens: each weight row is read once for a pass's tokens by
  // enough workgroups for the whole GPU, where the tiled products give a short chunk a handful of
  // workgroups that each loop over all of K. 0 = always the tiled products; at most
  // kPromptTokenTile.
  uint32_t prefill_short_max = 64;
  PromptTile prefill_tile;  // forced on every prompt product; tokens == 0: DecodeKernels::prompt_tile
  PromptAttention prefill_attention = PromptAttention::Auto;
  // Workgroups that share out a tiled prefill attention tile's keys, 1 to
  // DecodeKernels::kPromptAttentionMaxSplits; 0: DecodeKernels::prompt_attention_splits.
  uint32_t prefill_attention_splits = 0;
  AttentionSplit attention;  // how decode attention is split along the cache
  // Plans for a device granting at most this many bytes per buffer and per binding (a browser's
  // limits: `serve --limits`); 0: this device's. The weight arena is split into buffers within it;
  // any other buffer over it is an Error naming the buffer and the limit.
  uint64_t binding_limit = 0;
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
  std::string name;                            // the plan step's name (gpu::Plan::step_name)
  uint64_t bytes = 0, bytes_per_position = 0;  // its gpu::StepInfo
  std::vector<double> us;                      // one per repetition
};
struct DecodeProfile {
  uint32_t position = 0;              // the cache position the step decoded
  std::vector<StepTiming> steps;      // each dispatch in its own timed pass
  std::vector<double> whole_step_us;  // all of them in one timed pass, one per repetition
};

// Times the dispatches of `plans` (a decode step, in order) with GPU timestamps, `reps` times: each
// dispatch in its own pass, then all of them in one. `restore` runs before each timed pass and at
// the end (the step's pickers advance the positions it decodes). Throws Error naming the adapter
// where it has no timestamp queries.
DecodeProfile profile_plans(gpu::Context& ctx, std::span<gpu::Plan* const> plans, uint32_t reps,
                            uint32_t position, const std::function<void()>& restore);

// One weight tensor of an arena buffer, for a plan written down: where it lies (the view: offset,
// bytes, rows x cols, row_bytes, format) and how its rows come from the file's tensors `sources`:
// "rows" (in order), "qkv_rope_pairs" (qkv_source_row), "gate_up_interleaved"
// (gate_up_source_row), "vector" (one row, the whole 1-D tensor), "qkv_bias" (one row in
// qkv_rope_pairs order; zeros without sources).
struct WeightTensor {
  gpu::TensorView view;
  std::string packing;
  std::vector<std::string> sources;
};
// What one of the model's buffers holds before the first token, for a plan written down
// (llm/plan_file.h, docs/PLAN.md).
struct BufferContents {
  enum class Kind { Zeros, Weights, Rope } kind = Kind::Zeros;
  std::vector<WeightTensor> tensors;     // Weights: the arena's tensors placed in this buffer
  uint32_t positions = 0, head_dim = 0;  // Rope
};
struct NamedBuffer {
  std::string name;
  gpu::Buffer buffer;
  BufferContents contents;
};

// `Model::profile_prefill`: the last prompt chunk's dispatches timed by GPU timestamps.
struct PrefillProfile {
  uint32_t first = 0, tokens = 0;  // the chunk: its first position and length
  struct Kernel {
    std::string name;
    uint64_t flops = 0;      // multiply-adds count 2
    std::vector<double> us;  // one per repetition
  };
  std::vector<Kernel> steps;           // each dispatch in its own timed pass
  std::vector<double> whole_chunk_us;  // all of them in one timed pass, one per repetition
};

// The step decoder (see the top of this file) behind llm::Decoder.
class Model : public Decoder {
 public:
  Model(gpu::Context& ctx, ModelConfig cfg, const WeightLookup& weights, ModelOptions options = {});

  const ModelConfig& config() const override { return cfg_; }
  const ModelOptions& options() const { return opt_; }
  // Every buffer of the model, by name, with what it holds before the first token.
  const std::vector<NamedBuffer>& buffers() const { return named_; }
  uint32_t capacity() const override { return ctx_len_; }
  void reset() override;

  // Appends `ids` to the sequence and feeds every unfed token through the model. The logits of
  // the last are then in the logits buffer (read_logits); a generate() with an empty prompt picks
  // from them. Picks no token.
  void prefill(std::span<const uint32_t> ids);
  // prefill() for a batch's joining prompt (BatchDecoder): no LM head and no wait for the GPU (the
  // queue keeps whatever is submitted later after it). A chunk of T tokens runs on the plan of T
  // rounded up to kFeedTokenStep (the kernels compute the chunk's own rows: state word 2), so that
  // a few plans serve every prompt length.
  void feed(std::span<const uint32_t> ids);
  static constexpr uint32_t kFeedTokenStep = 16;
  // Builds now the plans feed() takes for chunks of up to `tokens` (and compiles their pipelines),
  // so that no join waits for them.
  void prepare_feed(uint32_t tokens);
  size_t prompt_plans() const { return prompt_.size(); }  // prompt chunk plans built so far
  std::vector<float> read_logits() override;
  // Times the decode step (then `picker`, or greedy argmax when empty) at the position after the
  // last generate(), `reps` times; the device is left as it was. Needs timestamp queries.
  DecodeProfile profile_decode(gpu::Plan* picker, uint32_t reps);
  // Times the last prompt chunk of the last generate() again, `reps` times (it rewrites the same
  // cache rows). Needs timestamp queries.
  PrefillProfile profile_prefill(uint32_t reps);
  DecodeBuffers decode_buffers() const { return {logits_, tokens_, state_}; }
  // The matrices as the weight arena placed them (Q/K/V and gate/up packed: llm/architecture.h),
  // for a decoder that binds the same buffer (PersistentOptions::matrices_from).
  struct LayerMatrices {
    gpu::TensorView qkv, o, gate_up, down;
  };
  struct Matrices {
    std::vector<LayerMatrices> layers;
    gpu::TensorView embedding, lm_head;
  };
  Matrices matrices() const;
  // Layer l's KV cache: f32 [kv heads][capacity()][head_dim] each, K after RoPE.
  struct LayerCache {
    const gpu::Buffer& k;
    const gpu::Buffer& v;
  };
  LayerCache kv_cache(uint32_t layer) const { return {layers_.at(layer).k_cache, layers_.at(layer).v_cache}; }
  // The layer variants of the decode step, each from a position on (the first from 0): what
  // decodes position pos is the last whose `from` <= pos.
  enum class LayerVariant { Split, SplitLong, Short, Fused };
  struct DecodeVariant {
    LayerVariant variant;
    uint32_t from;
    gpu::Plan body;  // embedding .. the last layer
  };
  const std::vector<DecodeVariant>& decode_variants() const { return variants_; }
  // The embedding and layers that decode position pos (then lm_head(), then a picker).
  gpu::Plan& decode_body(uint32_t pos);
  gpu::Plan& lm_head() { return head_; }
  gpu::Plan& argmax() { return argmax_; }
  // Ends a prompt position fed through decode_body() instead of the LM head and the picker.
  gpu::Plan& advance() { return advance_; }
  // A prompt chunk of T tokens, embedding .. last layer (built once per T); then the last
  // token's row of the chunk's residual stream (residual_row_bytes()) is copied into the decode
  // step's before the LM head. Up to options().prefill_short_max tokens: short passes (where
  // heads x head_dim is a multiple of 4).
  gpu::Plan& prompt_chunk(uint32_t T);
  // Tokens per short prefill pass: the row products' slots.
  static constexpr uint32_t kShortPassTokens = 16;
  uint64_t residual_row_bytes() const { return 4ull * pad8(cfg_.hidden_size); }
  // attend_short's workgroup reads a head's K and V rows alone: positions x head_dim floats of
  // each. Past this many the split along the cache is as fast or faster (0.5B, head_dim 64:
  // from between 200 and 300 positions on the H200; 1.5B, head_dim 128: level at 200).
  static constexpr uint32_t kAttendShortSpan = 256 * 64;
  uint32_t short_max() const;  // attend_short's positions: 0 = not used

 private:
  friend class BatchDecoder;  // decodes several sequences on these weights
  struct Layer {
    gpu::TensorView qkv, qkv_bias, input_norm, o, post_norm, gate_up, down;  // views of the weight arena
    gpu::TensorView qk_norm;  // q_norm then k_norm (architectures with qk_norm), else empty
    gpu::Buffer k_cache, v_cache;
  };
  void upload_weights(const WeightLookup& weights);
  gpu::Buffer scratch(std::string_view label, uint64_t words);
  // Counts `b` in the stats and names it.
  gpu::Buffer keep(gpu::Buffer b, std::string name, BufferContents contents = {});
  void build_plans();
  gpu::Plan layers_plan(LayerVariant v);
  // prompt_chunk() of T <= prefill_short_max: the chunk's tokens in passes of kShortPassTokens
  // through every layer, each pass's records and state words made on the GPU from the chunk's
  // (kernels/llm_batch.wgsl prompt_pass), so the host writes the same state words as for a tiled
  // chunk.
  gpu::Plan short_prompt_chunk(uint32_t T);
  // Decoder's hooks: the device position is state word 0; the picker is options.picker or argmax.
  bool logits_ready() const override { return logits_fresh_ && fed_ == seq_.size(); }
  const gpu::Buffer& tokens_buffer() const override { return tokens_; }
  void set_position() override;
  void record_prompt_phase(gpu::Recorder& rec, const GenerateOptions& opt) override;
  void record_steps(gpu::Recorder& rec, uint32_t pos, uint32_t k, const GenerateOptions& opt) override;
  gpu::Plan& picker(const GenerateOptions& opt);
  // Records (and submits, but for the last chunk) every unfed position through the model and
  // (`head`) the LM head; state word 0 is left on the last position, for the picker.
  void record_prompt(gpu::Recorder& rec, bool head = true);
  // Records prompt_chunk(T), submitting a tiled chunk after its first 1, 2, 4, ... layers (up to
  // half of them) as soon as they are recorded: the GPU starts while the host records (and Dawn
  // translates) the rest.
  void encode_prompt_chunk(gpu::Recorder& rec, uint32_t T);
  // The plan length feed() takes for a chunk of T tokens from position `first`.
  uint32_t feed_plan_tokens(uint32_t first, uint32_t T) const;

  ModelConfig cfg_;
  ModelOptions opt_;
  uint32_t ctx_len_;
  std::vector<Layer> layers_;
  gpu::TensorView embedding_, lm_head_, final_norm_;  // views of the weight arena
  gpu::Buffer rope_;
  gpu::Buffer x_, q_, att_, act_, att_partials_, att_arrivals_, logits_, part_v_, part_i_, tokens_, state_;
  gpu::Buffer x_next_, o_parts_;  // the fused layer: the residual stream after attention, attend_o's partials
  gpu::Buffer x_rows_, q_rows_, att_rows_, act_rows_;  // prefill activations [chunk][width]
  gpu::Buffer k_slices_;                               // prefill: the K-split products' sums per slice
  uint32_t prompt_rows_ = 0;  // token rows of the prefill activations and of k_slices_
  // Short prefill passes: each pass's slot records and state words; Q/K/V before the q/k norms.
  gpu::Buffer pass_records_, pass_state_, pass_qkv_;
  std::vector<DecodeVariant> variants_;
  gpu::Plan head_, argmax_, advance_;
  struct PromptPlan {
    gpu::Plan plan;
    std::vector<size_t> layer_ends;  // a tiled chunk's step counts up to each layer's end (short: none)
  };
  std::map<uint32_t, PromptPlan> prompt_;  // by chunk length
  std::vector<NamedBuffer> named_;
  bool logits_fresh_ = false;  // prefill() left the logits of the last fed token
};

}  // namespace wgfuse::llm
