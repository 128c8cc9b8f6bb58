// Hugging Face folders quantized by AutoAWQ (4 bits) or GPTQ (auto-gptq, optimum, GPTQModel; 4 or
// 8 bits), as the official Qwen2.5-*-Instruct-AWQ, -GPTQ-Int4 and -GPTQ-Int8 repositories ship
// them: config.json's "quantization_config", and per linear layer P (P.weight absent) the tensors
//   AWQ (quant_method "awq", version "gemm", zero_point true, bits 4):
//     P.qweight  I32 [in, out/8]   8 quants of one input row per word, along the output
//                                  dimension: output column 8w + order[k] at bits 4k, order
//                                  [0, 2, 4, 6, 1, 3, 5, 7]
//     P.qzeros   I32 [in/g, out/8] the zero points, packed as qweight
//     P.scales   F16 [in/g, out]
//   GPTQ (quant_method "gptq", checkpoint_format "gptq" or "gptq_v2", bits b = 4 or 8, n = 32 / b
//   quants per word):
//     P.qweight  I32 [in/n, out]   n quants of one output column per word, along the input
//                                  dimension: input row nw + k at bits bk
//     P.qzeros   I32 [in/g, out/n] the zero points, output column nw + k at bits bk; the
//                                  "gptq" (v1) format stores z - 1 (read back as (stored + 1)
//                                  mod 2^b, as auto-gptq's dequantization does), gptq_v2 z
//     P.scales   F16 [in/g, out]
//     P.g_idx    I32 [in]          each input row's group: must be row / g (desc_act false, or
//                                  an act-order checkpoint whose order is the identity)
// with weight (o, i) = (q - z) s, g = group_size (GPTQ's -1: the whole row). Each layer becomes
// rows [out, in] of a GPU block format at open, bit for bit the same values: 4 bits q4_zp
// (gpu/weight_format.h: blocks of 32 repeating their group's s and z), 8 bits q8_0 (d = s, q - z
// as int8: symmetric checkpoints, z = 128, only); so the loader, the kernels and the reference see
// tensor types they know. What is not supported is refused naming the file, field or tensor and
// the value: other methods or bits, AWQ's gemv/marlin packings, GPTQ's marlin format, asymmetric
// 8-bit zero points, groups that are not a multiple of 32 or do not divide the row, a reordered
// g_idx, missing tensors.
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
  uint32_t bits = 4;            // AWQ 4; GPTQ 4 or 8
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
  std::string layer;  // for messages: the file, the layer's name and shape, the method
};
// Finds and checks P.qweight, P.qzeros, P.scales (and P.g_idx) for a layer of [out, in]: dtypes,
// shapes, group size and g_idx; `lookup` finds tensors by name, `where` names the folder in errors.
QuantizedLinear quantized_linear(const HfQuantConfig& q, const WeightLookup& lookup,
                                 const std::string& prefix, uint64_t out, uint64_t in,
                                 const std::string& where);

// The layer's weights (o, i) = (q - z) s as floats [out, in] (exact), read from the format's
// definition above: the CPU dequantizer.
std::vector<float> dequantize_linear(const HfQuantConfig& q, const QuantizedLinear& t);
// The layer as rows [out, in] of a GPU block format with the same values: 4-bit as q4_zp,
// 8-bit (sym, zero point 128) as q8_0 (an Error naming the file and layer otherwise).
struct QuantizedRows {
  DType type;
  std::vector<std::byte> bytes;
};
QuantizedRows quantized_linear_to_rows(const HfQuantConfig& q, const QuantizedLinear& t);

}  // namespace wgfuse::llm
