// Helpers shared by the LLM model tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "gpu/weight_format.h"
#include "llm/config.h"
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

// The weights as the GPU holds them in storage format t.
inline llm::HostWeights as_stored(llm::HostWeights w, gpu::WeightFormat t) {
  if (t == gpu::WeightFormat::F16) w.transform([](float v) { return half::to_float(half::from_float(v)); });
  if (t == gpu::WeightFormat::BF16)
    w.transform([](float v) { return half::bf16_to_float(half::bf16_from_float(v)); });
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

}  // namespace wgfuse::test
