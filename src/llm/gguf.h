// GGUF files (llama.cpp's model format, versions 2 and 3) read in place: the file is
// memory-mapped, its header checked field by field, and every tensor is viewed in the mapping.
// The format (ggml's docs/gguf.md), little-endian, and what we check:
//   u32 magic "GGUF", u32 version (2 or 3), u64 tensor_count, u64 metadata_kv_count
//   metadata_kv_count times: string key, u32 value type, value
//       string = u64 length + bytes; array = u32 element type + u64 count + elements
//       (no arrays of arrays); a bool is 0 or 1; keys are unique and not empty
//   tensor_count times: string name (1..63 bytes, unique), u32 n_dims (1..4), u64 dims[n_dims]
//       (ggml order: dims[0] is the row length), u32 ggml type, u64 offset
//   padding to general.alignment (a u32 power of two; 32 when absent), then the tensor data:
//       each offset a multiple of the alignment, each tensor (dims[0] a whole number of its
//       type's blocks) inside the file, no two overlapping.
// Every count is checked against the bytes that remain before anything is sized by it, so a
// corrupt file is an Error naming the file, the field, its value and the limit, never a crash
// or a huge allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/weight_format.h"
#include "llm/safetensors.h"
#include "llm/tensor.h"

namespace wgfuse::llm {

// A metadata value's type (the numbers are the file's).
enum class GgufType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};
const char* to_string(GgufType t);

// A ggml tensor type: its id in the file, name, and block (block_elements elements stored in
// block_bytes bytes; 1 and the element size for the plain types).
struct GgmlType {
  uint32_t id;
  const char* name;  // ggml's: "F16", "Q4_K", ...
  uint32_t block_elements;
  uint32_t block_bytes;
  // The source encoding wgfuse loads it as; nullopt: not supported yet (named in the error).
  std::optional<gpu::DType> dtype;
};
// nullptr for an id ggml does not define (or no longer does).
const GgmlType* find_ggml_type(uint32_t id);
// "F32, F16, Q4_0, ...": the ggml types wgfuse loads.
std::string supported_ggml_types();

struct GgufValue {
  GgufType type = GgufType::U8;
  GgufType element_type = GgufType::U8;  // arrays
  uint64_t count = 0;                    // arrays: elements
  // A scalar's bytes, a string's characters, or a numeric array's elements (little-endian).
  std::span<const std::byte> bytes;
  std::vector<std::string_view> strings;  // an array of strings
};

struct GgufTensor {
  std::string name;
  const GgmlType* type = nullptr;
  std::vector<uint64_t> shape;  // row-major as wgfuse writes shapes: the file's dims reversed
  uint64_t offset = 0;          // from the start of the data section
  std::span<const std::byte> bytes;
};

struct GgufContents {
  uint32_t version = 0;
  uint32_t alignment = 32;
  uint64_t data_offset = 0;                                 // where the tensor data starts in the file
  std::vector<std::pair<std::string, GgufValue>> metadata;  // in file order
  std::vector<GgufTensor> tensors;                          // in file order
};

// Parses and checks a GGUF file held in `file` (all of its bytes); the views point into it.
// Needs nothing but the bytes: the libFuzzer target calls it directly.
GgufContents parse_gguf(std::span<const std::byte> file, const std::string& file_name);

// One mapped and checked GGUF file, with typed access to its metadata. Getters return nullopt
// for an absent key and throw an Error naming the file, the key, its type and the type wanted
// when the value has another type.
class GgufFile {
 public:
  explicit GgufFile(const std::string& path);

  const std::string& path() const { return map_.path(); }
  uint32_t version() const { return c_.version; }
  const std::vector<GgufTensor>& tensors() const { return c_.tensors; }
  const GgufTensor* find_tensor(std::string_view name) const;
  const GgufValue* find(std::string_view key) const;

  std::optional<uint64_t> uint(std::string_view key) const;  // any integer type, not negative
  std::optional<double> number(std::string_view key) const;  // any integer or float type
  std::optional<bool> boolean(std::string_view key) const;
  std::optional<std::string_view> string(std::string_view key) const;
  // Arrays: of strings; of integers (any integer element type) as int64.
  std::optional<std::span<const std::string_view>> strings(std::string_view key) const;
  std::optional<std::vector<int64_t>> integers(std::string_view key) const;

  // `t` as a TensorRef named `name` (the types of supported_ggml_types()); an Error naming the
  // tensor, its type and the types wgfuse loads for another.
  TensorRef tensor_ref(const GgufTensor& t, std::string name) const;
  // "F16 x 170, Q4_K x 2": the tensor types and how many tensors have each, most first.
  std::string type_summary() const;

 private:
  [[noreturn]] void wrong_type(std::string_view key, const GgufValue& v, const char* wanted) const;
  MappedFile map_;
  GgufContents c_;
};

// True when `path` is a file (not a folder) that starts with the GGUF magic.
bool is_gguf_file(const std::string& path);

}  // namespace wgfuse::llm
