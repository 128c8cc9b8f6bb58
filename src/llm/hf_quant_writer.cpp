#include "llm/hf_quant_writer.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "llm/architecture.h"
#include "util/error.h"
#include "util/half.h"

namespace wgfuse::llm {
namespace {

std::string words_bytes(const std::vector<uint32_t>& words) {
  std::string s(4 * words.size(), '\0');
  std::memcpy(s.data(), words.data(), s.size());  // little-endian hosts (as the reader)
  return s;
}

bool is_linear(TensorRole r) {
  using enum TensorRole;
  return r == Q || r == K || r == V || r == O || r == Gate || r == Up || r == Down;
}

}  // namespace

QuantizedLinearData quantize_linear(const HfQuantConfig& q, const std::string& prefix,
                                    std::span<const float> w, uint64_t out, uint64_t in) {
  const bool awq = q.method == HfQuantConfig::Method::Awq;
  const uint64_t group = q.group_size ? q.group_size : in, groups = in / group;
  const uint32_t bits = q.bits, per = 32 / bits, levels = (1u << bits) - 1;
  if ((bits != 4 && bits != 8) || (awq && bits != 4))
    throw Error("quantize_linear: " + std::to_string(bits) + "-bit " + (awq ? "AWQ" : "GPTQ") +
                " is not written");
  if (w.size() != out * in || out % per || in % per || in % group)
    throw Error("quantize_linear: " + prefix + " [" + std::to_string(out) + ", " + std::to_string(in) +
                "] is not whole words of " + std::to_string(per) + " and groups of " + std::to_string(group));
  // AWQ's gemm packing: slot k of a word holds column 8w + order[k].
  constexpr uint32_t order[8] = {0, 2, 4, 6, 1, 3, 5, 7};
  std::vector<uint32_t> qweight(out * in / per, 0), qzeros(groups * out / per, 0), g_idx(in);
  std::vector<uint16_t> scales(groups * out);
  QuantizedLinearData d;
  d.dequantized.resize(out * in);
  std::vector<uint32_t> quants(out * in), zeros(groups * out);  // [out, in], [groups, out]
  for (uint64_t g = 0; g < groups; ++g)
    for (uint64_t o = 0; o < out; ++o) {
      const auto x = w.subspan(o * in + g * group, group);
      double lo = *std::min_element(x.begin(), x.end()), hi = *std::max_element(x.begin(), x.end());
      const bool sym = q.method == HfQuantConfig::Method::Gptq && q.sym;
      if (sym)
        hi = std::max(std::abs(lo), std::abs(hi)), lo = -hi;
      else
        lo = std::min(lo, 0.0), hi = std::max(hi, 0.0);
      const uint16_t s_bits = half::from_float(float(std::max((hi - lo) / levels, 1e-5)));
      const double s = half::to_float(s_bits);
      const int z = sym ? int(levels + 1) / 2 : std::clamp(int(std::lround(-lo / s)), 0, int(levels));
      scales[g * out + o] = s_bits;
      zeros[g * out + o] = uint32_t(z);
      for (uint64_t j = 0; j < group; ++j) {
        const uint64_t i = g * group + j;
        const int v = std::clamp(int(std::lround(x[j] / s)) + z, 0, int(levels));
        quants[o * in + i] = uint32_t(v);
        d.dequantized[o * in + i] = float((v - z) * s);
      }
    }
  for (uint64_t i = 0; i < in; ++i) g_idx[i] = uint32_t(i / group);
  for (uint64_t o = 0; o < out; ++o)
    for (uint64_t i = 0; i < in; ++i) {
      const uint32_t v = quants[o * in + i];
      if (awq) {
        const uint32_t slot = uint32_t(std::find(order, order + 8, o % 8) - order);
        qweight[i * (out / 8) + o / 8] |= v << (4 * slot);
      } else {
        qweight[(i / per) * out + o] |= v << (bits * (i % per));
      }
    }
  for (uint64_t g = 0; g < groups; ++g)
    for (uint64_t o = 0; o < out; ++o) {
      const uint32_t z = q.zero_minus_one ? (zeros[g * out + o] - 1) & levels : zeros[g * out + o];
      const uint32_t slot = awq ? uint32_t(std::find(order, order + 8, o % 8) - order) : uint32_t(o % per);
      qzeros[g * (out / per) + o / per] |= z << (bits * slot);
    }
  std::string scale_bytes(2 * scales.size(), '\0');
  std::memcpy(scale_bytes.data(), scales.data(), scale_bytes.size());
  d.tensors.push_back({prefix + ".qweight",
                       awq ? std::vector{in, out / 8} : std::vector{in / per, out},
                       {},
                       "I32",
                       words_bytes(qweight)});
  d.tensors.push_back({prefix + ".qzeros", {groups, out / per}, {}, "I32", words_bytes(qzeros)});
  d.tensors.push_back({prefix + ".scales", {groups, out}, {}, "F16", scale_bytes});
  if (!awq) d.tensors.push_back({prefix + ".g_idx", {in}, {}, "I32", words_bytes(g_idx)});
  return d;
}

std::vector<TensorData> write_random_quantized_model(const std::filesystem::path& dir, const ModelConfig& c,
                                                     const HfQuantConfig& q, uint32_t seed) {
  std::vector<TensorData> read = write_random_model(dir, c, DType::F16, seed), written;
  for (const ExpectedTensor& e : expected_tensors(c)) {
    auto t = std::find_if(read.begin(), read.end(), [&](const TensorData& x) { return x.name == e.name; });
    if (!is_linear(e.role)) {
      written.push_back(*t);
      continue;
    }
    const std::string prefix = e.name.substr(0, e.name.rfind(".weight"));
    QuantizedLinearData l = quantize_linear(q, prefix, t->values, e.shape[0], e.shape[1]);
    for (TensorData& p : l.tensors) written.push_back(std::move(p));
    t->values = std::move(l.dequantized);
  }
  std::string config = model_config_json(c);
  config.insert(config.rfind('}'), ",\n  \"quantization_config\": " + quantization_config_json(q) + "\n");
  std::filesystem::remove(dir / "model.safetensors");
  write_model_folder(dir, config, written, DType::F16);
  return read;
}

}  // namespace wgfuse::llm
