// Rotary position embedding, computed once for every user (the GPU model, the persistent decoder,
// the CPU reference, the tiny transformer): the inverse frequencies in double, as transformers'
// ROPE_INIT_FUNCTIONS define them for rope_type "default", "llama3" and "yarn", and the table of
// (cos, sin) the kernels read.
//   default  inv_freq[i] = theta^(-2i/hd)
//   llama3   wavelengths 2 pi / inv_freq above original / low_freq_factor divided by factor, below
//            original / high_freq_factor kept, between them interpolated by
//            s = (original / wavelength - low) / (high - low): (1 - s) inv_freq / factor + s inv_freq
//   factors  inv_freq[i] / freq_factors[i] (a GGUF file's rope_freqs.weight)
//   yarn     inv_freq / factor blended with inv_freq by a ramp over dims [low, high] from the
//            correction range of beta_fast, beta_slow; cos and sin scaled by the attention factor
//            (given, or 0.1 ln(factor) + 1, or the mscale / mscale_all_dim ratio)
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "llm/config.h"

namespace wgfuse::llm {

struct RopeFrequencies {
  std::vector<double> inv_freq;   // head_dim / 2 values
  double attention_factor = 1.0;  // multiplies cos and sin
};
RopeFrequencies rope_frequencies(const ModelConfig& c);

// [positions][head_dim / 2] (cos, sin) of pos * inv_freq[i], times the attention factor, rounded
// once from double.
std::vector<float> rope_table(const ModelConfig& c, uint32_t positions);

// Rotates one head (head_dim values) in place for position `pos`, in double, the pairs
// (i, i + hd/2) of Hugging Face's rotate_half.
void rope_rotate(std::span<double> head, uint32_t pos, const RopeFrequencies& f);

}  // namespace wgfuse::llm
