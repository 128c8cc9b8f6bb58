// Sampling the next token on the GPU (kernels/llm_sample.wgsl), and its CPU reference.
//
// Hugging Face transformers' order: repetition penalty -> temperature -> top-k -> top-p -> a draw
// from the softmax of what is left.
//   - repetition penalty p: every distinct id in tokens[0 ..= pos] (the whole sequence so far, the
//     prompt included, as HF does; llama.cpp looks at the last 64 only): logit < 0 ? logit * p :
//     logit / p. Then logit / temperature. Both in f32, as HF does on f32 logits.
//   - top-k: keeps every token at or above the k-th largest value (ties at the k-th all stay, as in
//     HF); k >= vocab keeps all. No cap on k.
//   - top-p: keeps the tokens with less than top_p of the (top-k) mass strictly above them, i.e. the
//     smallest set of highest tokens reaching top_p, tokens of equal value kept or dropped together
//     (HF sorts, so it splits ties in sort order).
//   - the draw: u = sample_draw(seed, pos) / 2^32; the token is the first, in id order, whose
//     cumulative kept mass exceeds u * (kept mass). The same seed gives the same tokens however many
//     steps a submit holds.
//   - temperature 0 is greedy: the penalty, then the first id at the maximum (as argmax).
//   - NaN counts as -inf; when no logit is above -inf the pick is kNoFiniteLogit (as argmax's).
// On the GPU masses are exact integer sums of f32 exp(x - max) in 2^-44 units; the reference adds
// exp in double. They choose the same token unless a decision lies within a rounding error of a
// boundary; the reference says when it does (ReferenceSample::near_boundary).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gpu/buffer.h"
#include "gpu/kernel.h"
#include "gpu/plan.h"

namespace wgfuse::gpu {
class Context;
class Recorder;
}  // namespace wgfuse::gpu

namespace wgfuse::llm {

struct SamplingParams {
  double temperature = 1.0;         // --temp: 0 = greedy, else in [1e-6, 1e6]
  int64_t top_k = 0;                // --top-k: 0 = off
  double top_p = 1.0;               // --top-p: in (0, 1], 1 = off
  double repetition_penalty = 1.0;  // --repeat-penalty: > 0, 1 = off
  uint64_t seed = 0;                // --seed
};

// Throws wgfuse::Error naming the flag (or, with `file`, that file's key), the value and the
// allowed range.
void validate(const SamplingParams& params, const std::string& file = {});

// The 32-bit uniform draw for position `pos`, exactly as the kernel computes it.
uint32_t sample_draw(uint64_t seed, uint32_t pos);

// The id the pickers (argmax and the sampler) write when no logit is above -inf (all NaN or
// -inf): outside every vocabulary, so the host stops (GeneratedTokens) instead of printing a draw.
inline constexpr uint32_t kNoFiniteLogit = 0xffffffffu;

struct ReferenceSample {
  uint32_t id = 0;  // kNoFiniteLogit when no logit is above -inf
  // A decision (the top-p cut or the draw) lies within boundary_eps (relative to the mass) of a
  // boundary, so an f32 exp could tip it: the GPU may then choose differently.
  bool near_boundary = false;
};
// The CPU reference in double for the token after position `pos`: tokens[0 ..= pos] are the
// sequence so far.
ReferenceSample sample_reference(std::span<const float> logits, std::span<const uint32_t> tokens,
                                 uint32_t pos, const SamplingParams& params, double boundary_eps = 1e-6);

// Mirrors `Params` in kernels/llm_sample.wgsl.
struct SamplerParams {
  uint32_t vocab, chunk, groups, top_k;
  float top_p, temperature, penalty;
  uint32_t greedy, seed_lo, seed_hi, pad0, pad1;
};
static_assert(sizeof(SamplerParams) == 48);
static_assert(offsetof(SamplerParams, top_p) == 16 && offsetof(SamplerParams, greedy) == 28 &&
              offsetof(SamplerParams, seed_lo) == 32);
// SamplerParams' fields in order, a 32-bit word each: {name, "u32" | "f32"}, as a written plan
// names the words of its params record (docs/PLAN.md).
inline constexpr std::pair<const char*, const char*> kSamplerParamsFields[] = {
    {"vocab", "u32"},   {"chunk", "u32"},       {"groups", "u32"},  {"top_k", "u32"},
    {"top_p", "f32"},   {"temperature", "f32"}, {"penalty", "f32"}, {"greedy", "u32"},
    {"seed_lo", "u32"}, {"seed_hi", "u32"},     {"pad0", "u32"},    {"pad1", "u32"}};
static_assert(std::size(kSamplerParamsFields) * 4 == sizeof(SamplerParams));

// Created once per vocabulary size; set_params then plan() once per set of buffers. The plan reads
// logits f32[vocab] and tokens u32[..] with state u32[0] = pos, writes tokens[pos + 1] (when it
// fits) and state[0] = pos + 1 in its last dispatch (one invocation).
class Sampler {
 public:
  // Masses are 64-bit sums of weights up to 2^45 each.
  static constexpr uint32_t kMaxVocab = 1u << 19;

  Sampler(gpu::Context& ctx, uint32_t vocab_size);

  // Validates and writes the uniform (seen by work submitted after this call). Rebuild plan() when
  // top-k, top-p or greedy are switched on or off: they change the dispatches.
  void set_params(const SamplingParams& params);
  const SamplingParams& params() const { return params_; }

  // The token picker's dispatches over these buffers, or ranges of them (built on first encode).
  gpu::Plan plan(const gpu::Binding& logits, const gpu::Binding& tokens, const gpu::Binding& state);
  // Dispatches per sampled token with the current params.
  uint32_t dispatches() const;

  uint32_t vocab_size() const { return gpu_params_.vocab; }
  // The sampler's own buffers, for a plan written down: the uniform (a SamplerParams record the
  // host writes), the keys and the scratch (no initial contents needed).
  const gpu::Buffer& uniform() const { return uniform_; }
  const gpu::Buffer& keys() const { return keys_; }
  const gpu::Buffer& scratch() const { return scratch_; }
  const SamplerParams& record() const { return gpu_params_; }

 private:
  bool top_k_on() const { return gpu_params_.top_k != 0; }
  bool top_p_on() const { return gpu_params_.top_p < 1.0f; }

  gpu::Context* ctx_;
  SamplingParams params_;
  SamplerParams gpu_params_{};
  gpu::Buffer uniform_, keys_, scratch_;
};

}  // namespace wgfuse::llm
