// Writes GGUF files for tests, from the format description (ggml's docs/gguf.md), sharing no code
// with the reader (llm/gguf.h): metadata of the common types, tensors of any ggml type given as
// their stored bytes, version 3, little-endian, data aligned to `alignment`. And a model file as
// llama.cpp's converter writes one (gguf_model_writer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "llm/architecture.h"
#include "llm/config.h"
#include "llm/safetensors_writer.h"
#include "llm/tensor.h"

namespace wgfuse::llm {

class GgufWriter {
 public:
  void add_u32(const std::string& key, uint32_t v);
  void add_f32(const std::string& key, float v);
  void add_bool(const std::string& key, bool v);
  void add_string(const std::string& key, const std::string& v);
  void add_strings(const std::string& key, const std::vector<std::string>& v);
  void add_i32s(const std::string& key, const std::vector<int32_t>& v);
  // A tensor of row-major `shape` (written as ggml's reversed dims) and ggml type id `ggml_type`,
  // `data` as stored.
  void add_tensor(const std::string& name, const std::vector<uint64_t>& shape, uint32_t ggml_type,
                  std::string data);

  std::string bytes(uint32_t alignment = 32) const;
  void write(const std::filesystem::path& file, uint32_t alignment = 32) const;

 private:
  void key(const std::string& k, uint32_t type);
  std::string kv_;
  uint64_t kv_count_ = 0;
  struct Tensor {
    std::string name;
    std::vector<uint64_t> shape;
    uint32_t type;
    std::string data;
  };
  std::vector<Tensor> tensors_;
};

// A model of config `c` as llama.cpp's convert_hf_to_gguf.py writes it: general.architecture and
// the <arch>.* keys, the tensors (Hugging Face names, as write_random_model returns them) under
// llama.cpp's names, q and k rows permuted for the architectures the converter permutes, 2-D
// tensors as `dtype`, 1-D ones (norms, biases) as F32. No tokenizer keys.
GgufWriter gguf_model_writer(const ModelConfig& c, const std::vector<TensorData>& tensors, DType dtype);
// The same with each tensor's type chosen by `type_of` (a mix, as llama-quantize writes one);
// quantized types through gpu/ggml_blocks.h's test quantizer, row by row.
GgufWriter gguf_model_writer(const ModelConfig& c, const std::vector<TensorData>& tensors,
                             const std::function<DType(const ExpectedTensor&)>& type_of);

// A Hugging Face BPE tokenizer (`dir`'s tokenizer.json and tokenizer_config.json) as
// convert_hf_to_gguf.py writes it into a GGUF file (get_vocab_base, SpecialVocab): ids up to the
// model's vocabulary (padding rows as unused [PAD<id>] tokens), added tokens as control (special,
// or looking like <|...|>) or user-defined, merges as "left right", the eos and pad ids, the chat
// template (`add_bos`: the file asks for a BOS on every encode, as Llama 3's do). An Error names
// the file and what it lacks.
void add_hf_tokenizer(GgufWriter& w, const std::filesystem::path& dir, uint32_t model_vocab,
                      const std::string& pre = "qwen2", bool add_bos = false);

}  // namespace wgfuse::llm
