// TensorRef: a named tensor as stored in a model file (safetensors or GGUF), viewed in place: bytes
// point into a memory-mapped file that its owner (the loader) keeps open. Its dtype is a source
// encoding of gpu/weight_format.h: f32, f16, bf16, or a ggml block type (a GGUF file's q8_0, q4_K,
// ...: each row a whole number of blocks).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/weight_format.h"

namespace wgfuse::llm {

using DType = gpu::DType;

struct TensorRef {
  std::string name;  // e.g. "model.layers.0.mlp.up_proj.weight"
  DType dtype = DType::F32;
  std::vector<uint64_t> shape;  // row-major, as in the file ([out, in] for a linear weight)
  std::span<const std::byte> bytes;

  uint64_t elements() const {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    return n;
  }
  uint64_t cols() const { return shape.empty() ? 1 : shape.back(); }
  // Bytes of one row (`cols` elements; quantized: whole blocks, else an Error), and of the whole
  // tensor as its shape and dtype say.
  uint64_t row_bytes() const { return gpu::source_row_bytes(dtype, cols()); }
  uint64_t expected_bytes() const { return cols() ? row_bytes() * (elements() / cols()) : 0; }
};

// Weights by Hugging Face name (the safetensors loader provides one; tests build one over host
// vectors). Returns nullptr for a name the model does not hold.
using WeightLookup = std::function<const TensorRef*(std::string_view)>;

// The tensor `name` from `lookup`, checked to exist with exactly `shape`; throws Error naming the
// tensor and both shapes otherwise.
const TensorRef& require_tensor(const WeightLookup& lookup, const std::string& name,
                                const std::vector<uint64_t>& shape);
// The values of a tensor as doubles, in file order (quantized: dequantized as ggml defines it,
// gpu/ggml_blocks.h, and rounded to f32 as the GPU decode computes them).
std::vector<double> tensor_values(const TensorRef& t);
// Row `row` of a 2-D tensor (or the whole of a 1-D one when row is 0) as floats.
void tensor_row(const TensorRef& t, uint64_t row, std::span<float> out);
// "[a, b]"
std::string shape_text(std::span<const uint64_t> shape);

}  // namespace wgfuse::llm
