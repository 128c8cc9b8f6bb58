// Writes AWQ and GPTQ folders for tests (llm/hf_quant.h's layouts): float matrices quantized to
// 4-bit (GPTQ also 8-bit) groups (round to nearest over each group's range; GPTQ's sym with z =
// 2^(bits - 1)) and packed as the
// formats' descriptions say, sharing no code with the reader, so a test that writes and reads
// back checks one implementation against another.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "llm/config.h"
#include "llm/hf_quant.h"
#include "llm/safetensors_writer.h"

namespace wgfuse::llm {

struct QuantizedLinearData {
  std::vector<TensorData> tensors;  // P.qweight, P.qzeros, P.scales (GPTQ: and P.g_idx), raw
  std::vector<float> dequantized;   // (q - z) s of each weight, [out, in]
};

// The layer P = `prefix` of weights `w` ([out, in], row-major) quantized as `q` says.
QuantizedLinearData quantize_linear(const HfQuantConfig& q, const std::string& prefix,
                                    std::span<const float> w, uint64_t out, uint64_t in);

// write_random_model's model (f16) with every linear layer's weight quantized as `q` says and
// config.json's quantization_config; returns the tensors as the model reads them (the linear
// layers' weights dequantized, under their ".weight" names).
std::vector<TensorData> write_random_quantized_model(const std::filesystem::path& dir, const ModelConfig& c,
                                                     const HfQuantConfig& q, uint32_t seed);

}  // namespace wgfuse::llm
