#include "llm/tensor.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "gpu/ggml_blocks.h"
#include "util/error.h"
#include "util/half.h"

namespace wgfuse::llm {
namespace {

// One 16-bit float of a tensor (IEEE half, or bfloat16 when t is BF16).
double half16_value(uint16_t bits, DType t) {
  return t == DType::BF16 ? half::bf16_to_float(bits) : half::to_float(bits);
}

// Element i of an unquantized tensor.
double element(const TensorRef& t, uint64_t i) {
  const std::byte* p = t.bytes.data();
  if (t.dtype == DType::F32) {
    float v;
    std::memcpy(&v, p + 4 * i, 4);
    return v;
  }
  uint16_t bits;
  std::memcpy(&bits, p + 2 * i, 2);
  return half16_value(bits, t.dtype);
}

}  // namespace

std::string shape_text(std::span<const uint64_t> shape) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
  s << "]";
  return s.str();
}

const TensorRef& require_tensor(const WeightLookup& lookup, const std::string& name,
                                const std::vector<uint64_t>& shape) {
  const TensorRef* t = lookup(name);
  if (!t)
    throw Error("model weights: missing tensor '" + name + "' (expected shape " + shape_text(shape) + ")");
  if (t->shape != shape)
    throw Error("model weights: tensor '" + name + "' has shape " + shape_text(t->shape) +
                " but config.json implies " + shape_text(shape));
  if (t->bytes.size() != t->expected_bytes())
    throw Error("model weights: tensor '" + name + "' holds " + std::to_string(t->bytes.size()) +
                " bytes, its shape and dtype need " + std::to_string(t->expected_bytes()));
  return *t;
}

std::vector<double> tensor_values(const TensorRef& t) {
  std::vector<double> out(t.elements());
  if (!gpu::is_quantized(t.dtype)) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = element(t, i);
    return out;
  }
  std::vector<float> row(t.cols());
  for (uint64_t r = 0; r < out.size() / row.size(); ++r) {
    tensor_row(t, r, row);
    std::copy(row.begin(), row.end(), out.begin() + ptrdiff_t(r * row.size()));
  }
  return out;
}

void tensor_row(const TensorRef& t, uint64_t row, std::span<float> out) {
  const uint64_t cols = t.cols();
  if (out.size() > cols || (row + 1) * cols > t.elements())
    throw Error("tensor '" + t.name + "': row " + std::to_string(row) + " of " + std::to_string(out.size()) +
                " values is outside its shape " + shape_text(t.shape));
  if (gpu::is_quantized(t.dtype)) {
    const uint64_t rb = t.row_bytes();
    const std::vector<double> v = gpu::dequantize_row(t.dtype, t.bytes.subspan(row * rb, rb), cols);
    for (size_t c = 0; c < out.size(); ++c) out[c] = float(v[c]);
    return;
  }
  for (size_t c = 0; c < out.size(); ++c) out[c] = float(element(t, row * cols + c));
}

}  // namespace wgfuse::llm
