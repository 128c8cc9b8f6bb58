// The tiny transformer's model: a Qwen2-architecture decoder (llm::ModelConfig, the CPU reference
// llm::ref::Decoder) at tiny sizes over a byte vocabulary of 256, its weights (random from a seed
// or a Qwen2 safetensors folder), their packing for the kernels (kernels/tiny_common.wgsl) and the
// double-precision reference generation every strategy is checked against.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "llm/config.h"
#include "llm/reference.h"

namespace wgfuse::tiny {

inline constexpr uint32_t kVocab = 256;       // bytes
inline constexpr uint32_t kMaxTokens = 256;   // generated per sequence
inline constexpr uint32_t kMaxPrompt = 256;   // prompt bytes
inline constexpr uint32_t kMaxWidth = 4096;   // d_model (the sweep reaches 3,072, a real model's)
inline constexpr uint32_t kArgmaxParts = 16;  // ARG_PARTS in tiny_common.wgsl

struct Shape {
  uint32_t d = 64;
  uint32_t layers = 4;
  uint32_t heads = 2;
  uint32_t kv_heads = 0;  // 0: as many as heads
};

// The Qwen2 config of `s`: head_dim d / heads, SwiGLU width 4 d, RMSNorm eps 1e-6, RoPE theta
// 10,000, q/k/v biases, an untied LM head. Throws Error naming the field and its limits.
llm::ModelConfig tiny_config(const Shape& s);
// Checks a config (given or read from a folder) against what the kernels implement.
void validate_config(const llm::ModelConfig& c, const std::string& source);

struct TinyModel {
  llm::ModelConfig config;
  llm::ref::Weights weights;
  std::string source;  // "random (seed N)" or the folder
};

// Uniform random weights from `seed` (llm::HostWeights::random).
TinyModel random_model(const llm::ModelConfig& c, uint32_t seed);
// A Qwen2ForCausalLM folder (config.json + safetensors), validated whole before use.
TinyModel load_model(const std::filesystem::path& dir);
// The weights of random_model(c, seed) as such a folder (config.json + model.safetensors, F32),
// for the PyTorch baselines.
void write_model(const std::filesystem::path& dir, const llm::ModelConfig& c, uint32_t seed);

// Floats of one sequence's activations in the kernels (A_* in tiny_common.wgsl).
uint64_t activation_floats(const llm::ModelConfig& c, uint32_t capacity);
// Floats of one sequence's KV cache: layers x (K, V) x kv_heads x capacity x head_dim.
uint64_t kv_floats(const llm::ModelConfig& c, uint32_t capacity);
// The weights in the kernels' layout (W_*, L_* in tiny_common.wgsl), each RMSNorm's weights folded
// into the matrix it feeds (q|k|v, gate|up, LM head), with the RoPE table for `capacity` positions
// computed in double.
std::vector<float> pack_weights(const llm::ModelConfig& c, const llm::ref::Weights& w, uint32_t capacity);

// Sequence i's prompt: each byte b of `prompt` mapped to (b + i) % 256.
std::vector<uint32_t> sequence_prompt(std::string_view prompt, uint32_t i);

struct Generation {
  std::vector<uint32_t> tokens;             // [tokens]
  std::vector<std::vector<double>> logits;  // [tokens][256]: the logits each token was chosen from
};
// The double-precision reference: the prompt, then `tokens` greedy tokens.
Generation reference_generation(const TinyModel& m, std::span<const uint32_t> prompt, uint32_t tokens);

}  // namespace wgfuse::tiny
