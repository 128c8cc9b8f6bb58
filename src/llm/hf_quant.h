// Hugging Face folders quantized to 4 bits by AutoAWQ or GPTQ (auto-gptq, optimum, GPTQModel),
// as the official Qwen2.5-*-Instruct-AWQ and -GPTQ-Int4 repositories ship them: config.json's
// "quantization_config", and per linear layer P (P.weight absent) the tensors
//   AWQ (quant_method "awq", version "gemm", zero_point true):
//     P.qweight  I32 [in, out/8]   8 quants of one input row per word, along the output
//                                  dimension: output column 8w + order[k] at bits 4k, order
//                                  [0, 2, 4, 6, 1, 3, 5, 7]
//     P.qzeros   I32 [in/g, out/8] the zero points, packed as qweight
//     P.scales   F16 [in/g, out]
//   GPTQ (quant_method "gptq", checkpoint_format "gptq" or "gptq_v2"):
//     P.qweight  I32 [in/8, out]   8 quants of one output column per word, along the input
//                                  dimension: input row 8w + k at bits 4k
//     P.qzeros   I32 [in/g, out/8] the zero points, output column 8w + k at bits 4k; the
//                                  "gptq" (v1) format stores z - 1 (read back as (stored + 1)
//                                  mod 16, as auto-gptq's dequantization does), gptq_v2 z
//     P.scales   F16 [in/g, out]
//     P.g_idx    I32 [in]          each input row's group: must be row / g (desc_act false, or
//                                  an act-order checkpoint whose order is the identity)
// with weight (o, i) = (q - z) s, g = group_size (GPTQ's -1: the whole row). Each layer becomes
// q4_zp rows [out, in] at open (gpu/weight_format.h: blocks of 32 repeating their group's s and z;
// bit for bit the same values), so the loader, the kernels and the reference see one more
// quantized tensor type. What is not supported is refused naming the file, field or tensor and the
// value: other methods or bits, AWQ's gemv/marlin packings, GPTQ's marlin format, groups that are
// not a multiple of 32 or do not divide the row, a reordered g_idx, missing tensors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llm/tensor.h"

namespace wgfuse::llm {

struct HfQuantConfig {
  enum class Method { Awq, Gptq };
  Method method = Method::Awq;
  uint32_t bits = 4;
  uint32_t group_size = 128;    // 0: one group per row (GPTQ's -1)
  bool zero_minus_one = false;  // GPTQ's v1 checkpoint_format: the stored zero point is z - 1
  bool sym = false;             // GPTQ's "sym" (z = 8): for the test writer; the reader reads z
  bool desc_act = false;        // for messages: the checkpoint says act-order
};

// config.json's "quantization_config" (nullopt when absent or null); `file_name` names the file.
std::optional<HfQuantConfig> parse_quantization_config(std::string_view config_json,
                                                       const std::string& file_name);
// The same as config.json writes it (for the test writer).
std::string quantization_config_json(const HfQuantConfig& q);

// The tensors of one quantized linear layer, checked by quantized_linear().
struct QuantizedLinear {
  const TensorRef* qweight = nullptr;
  const TensorRef* qzeros = nullptr;
  const TensorRef* scales = nullptr;
  const TensorRef* g_idx = nullptr;  // GPTQ's, optional
  uint64_t out = 0, in = 0;
};
// Finds and checks P.qweight, P.qzeros, P.scales (and P.g_idx) for a layer of [out, in]: dtypes,
// shapes, group size and g_idx; `lookup` finds tensors by name, `where` names the folder in errors.
QuantizedLinear quantized_linear(const HfQuantConfig& q, const WeightLookup& lookup,
                                 const std::string& prefix, uint64_t out, uint64_t in,
                                 const std::string& where);

// The layer's weights (o, i) = (q - z) s as floats [out, in] (exact), read from the format's
// definition above: the CPU dequantizer.
std::vector<float> dequantize_linear(const HfQuantConfig& q, const QuantizedLinear& t);
// The layer as q4_zp rows [out, in] (gpu/ggml_blocks.h's q4_zp blocks): the same values.
std::vector<std::byte> quantized_linear_to_q4_zp(const HfQuantConfig& q, const QuantizedLinear& t);

}  // namespace wgfuse::llm
