// TensorRef: a named tensor as stored in a model file (safetensors), viewed in place: bytes point
// into a memory-mapped file that its owner (the loader) keeps open.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wgfuse::llm {

enum class DType { F32, F16, BF16 };

constexpr uint64_t dtype_bytes(DType t) {
  return t == DType::F32 ? 4 : 2;
}

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
};

// Weights by Hugging Face name (the safetensors loader provides one; tests build one over host
// vectors). Returns nullptr for a name the model does not hold.
using WeightLookup = std::function<const TensorRef*(std::string_view)>;

// The tensor `name` from `lookup`, checked to exist with exactly `shape`; throws Error naming the
// tensor and both shapes otherwise.
const TensorRef& require_tensor(const WeightLookup& lookup, const std::string& name,
                                const std::vector<uint64_t>& shape);
// The values of a tensor (F32, F16 or BF16) as doubles, in file order.
std::vector<double> tensor_values(const TensorRef& t);
// Row `row` of a 2-D tensor (or the whole of a 1-D one when row is 0) as floats.
void tensor_row(const TensorRef& t, uint64_t row, std::span<float> out);
// "[a, b]"
std::string shape_text(std::span<const uint64_t> shape);

}  // namespace wgfuse::llm
