// Safetensors files read in place: the file is memory-mapped, its JSON header checked against
// the format (https://huggingface.co/docs/safetensors, "Format"), and every tensor is a
// TensorRef whose bytes point into the mapping. The format, and what we check:
//   8 bytes   N, the header length, unsigned little-endian (N <= 100 MiB and within the file)
//   N bytes   a JSON object (starting with '{', maybe padded with spaces): name -> {"dtype",
//             "shape", "data_offsets": [begin, end]}, plus an optional "__metadata__" (ignored)
//   rest      the data: the ranges, relative to its start, must tile it exactly (sorted, no
//             overlap, no hole, ending at the end of the file), each as long as shape x dtype
//             size, and each aligned to its dtype's size in the file.
// Only F32, F16 and BF16 are accepted (what Qwen2 checkpoints use), and I32 (the packed integers
// of AWQ and GPTQ checkpoints, llm/hf_quant.h); any other dtype is an error naming it. Every error is a
// wgfuse::Error naming the file, the tensor and the problem.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "llm/tensor.h"

namespace wgfuse::llm {

// Parses and checks the header of a safetensors file held in `file` (all of its bytes). The
// returned TensorRefs point into `file`, in file order. `file_name` names the file in errors.
// Needs nothing but the bytes: the libFuzzer target calls it directly.
std::vector<TensorRef> parse_safetensors(std::span<const std::byte> file, const std::string& file_name);

// A read-only memory mapping of a whole file; moves, never copies; unmapped on destruction.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

// One mapped and checked safetensors file. The TensorRefs stay valid as long as this object
// lives (moving it keeps them valid: the mapping does not move).
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);

  const std::string& path() const { return map_.path(); }
  const std::vector<TensorRef>& tensors() const { return tensors_; }

 private:
  MappedFile map_;
  std::vector<TensorRef> tensors_;
};

// Tensor data as f32 on the host (for the CPU reference and for conversions before upload):
// F32 copied, F16 and BF16 widened exactly (a quantized tensor: dequantized, tensor_values). `in`
// holds out.size() elements of an unquantized `dtype`, so a loader can convert a tensor chunk by
// chunk.
void to_f32(DType dtype, std::span<const std::byte> in, std::span<float> out);
std::vector<float> to_f32(const TensorRef& t);

// The name used in safetensors files ("F32", "F16", "BF16"; ggml's for the quantized types).
const char* dtype_name(DType t);

}  // namespace wgfuse::llm
