// TensorRef: a named tensor as stored in a model file (safetensors), viewed in place: bytes point
// into a memory-mapped file that its owner (the loader) keeps open.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace wgfuse::llm {

enum class DType { F32, F16, BF16 };

constexpr uint64_t dtype_bytes(DType t) {
  return t == DType::F32 ? 4 : 2;
}

struct TensorRef {
  std::string name;  // e.g. "model.layers.0.self_attn.q_proj.weight"
  DType dtype = DType::F32;
  std::vector<uint64_t> shape;  // row-major, as in the file ([out, in] for a linear weight)
  std::span<const std::byte> bytes;

  uint64_t elements() const {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    return n;
  }
};

}  // namespace wgfuse::llm
