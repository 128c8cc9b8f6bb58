#include "llm/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace wgfuse::llm {
namespace {

using Type = RopeScaling::Type;

// The dimension (of hd) at which a frequency makes `rotations` turns over `positions`.
double correction_dim(double rotations, double hd, double theta, double positions) {
  return hd * std::log(positions / (rotations * 2 * std::numbers::pi)) / (2 * std::log(theta));
}

double yarn_mscale(double scale, double mscale) {
  return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

}  // namespace

RopeFrequencies rope_frequencies(const ModelConfig& c) {
  const RopeScaling& s = c.rope_scaling;
  const uint32_t half = c.head_dim / 2;
  const double hd = c.head_dim;
  RopeFrequencies f;
  f.inv_freq.resize(half);
  for (uint32_t i = 0; i < half; ++i) f.inv_freq[i] = std::pow(c.rope_theta, -2.0 * i / hd);
  if (s.type == Type::Llama3) {
    const double original = s.original_max_position_embeddings;
    const double low_wavelength = original / s.low_freq_factor,
                 high_wavelength = original / s.high_freq_factor;
    for (double& v : f.inv_freq) {
      const double wavelength = 2 * std::numbers::pi / v;
      if (wavelength > low_wavelength) {
        v /= s.factor;
      } else if (wavelength >= high_wavelength) {
        const double smooth =
            (original / wavelength - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        v = (1 - smooth) * v / s.factor + smooth * v;
      }
    }
  } else if (s.type == Type::Factors) {
    for (uint32_t i = 0; i < half; ++i) f.inv_freq[i] /= s.freq_factors.at(i);
  } else if (s.type == Type::Yarn) {
    const double original =
        s.original_max_position_embeddings ? s.original_max_position_embeddings : c.max_position_embeddings;
    double low = correction_dim(s.beta_fast, hd, c.rope_theta, original);
    double high = correction_dim(s.beta_slow, hd, c.rope_theta, original);
    if (s.truncate) low = std::floor(low), high = std::ceil(high);
    low = std::max(low, 0.0);
    high = std::min(high, hd - 1);
    if (low == high) high += 0.001;  // no division by zero in the ramp
    for (uint32_t i = 0; i < half; ++i) {
      // extrapolation's share: 1 for the fast (low) dims, 0 for the slow ones
      const double extrapolate = 1 - std::clamp((i - low) / (high - low), 0.0, 1.0);
      f.inv_freq[i] = f.inv_freq[i] / s.factor * (1 - extrapolate) + f.inv_freq[i] * extrapolate;
    }
    f.attention_factor = s.attention_factor > 0 ? s.attention_factor
                         : s.mscale && s.mscale_all_dim
                             ? yarn_mscale(s.factor, s.mscale) / yarn_mscale(s.factor, s.mscale_all_dim)
                             : yarn_mscale(s.factor, 1.0);
  }
  return f;
}

std::vector<float> rope_table(const ModelConfig& c, uint32_t positions) {
  const RopeFrequencies f = rope_frequencies(c);
  const size_t half = f.inv_freq.size();
  std::vector<float> t(2 * half * positions);
  for (uint32_t pos = 0; pos < positions; ++pos)
    for (size_t i = 0; i < half; ++i) {
      const double angle = double(pos) * f.inv_freq[i];
      t[2 * (pos * half + i)] = float(std::cos(angle) * f.attention_factor);
      t[2 * (pos * half + i) + 1] = float(std::sin(angle) * f.attention_factor);
    }
  return t;
}

void rope_rotate(std::span<double> head, uint32_t pos, const RopeFrequencies& f) {
  const size_t half = head.size() / 2;
  for (size_t i = 0; i < half; ++i) {
    const double angle = double(pos) * f.inv_freq[i];
    const double cs = std::cos(angle) * f.attention_factor, sn = std::sin(angle) * f.attention_factor;
    const double a = head[i], b = head[i + half];
    head[i] = a * cs - b * sn;  // x * cos + rotate_half(x) * sin, rotate_half(x) = (-x2, x1)
    head[i + half] = b * cs + a * sn;
  }
}

}  // namespace wgfuse::llm
