// A Hugging Face model folder, opened and checked before anything reaches the GPU:
//   config.json                      -> ModelConfig (an architecture of llm/architecture.h)
//   generation_config.json (if any)  -> GenerationConfig (EOS ids, sampling defaults)
//   model.safetensors, or model.safetensors.index.json + its shards -> TensorRefs, memory-mapped
// A folder quantized by AutoAWQ or GPTQ (config.json's quantization_config, llm/hf_quant.h) has
// each linear layer as packed tensors: they become one q4_zp tensor under the layer's ".weight"
// name at open (a host copy), the packed tensors' names leave the index.
// Or a GGUF file (llm/gguf_model.h) in place of the folder: config, generation ids and tensors
// from it, the tensors named as in a Hugging Face checkpoint.
// The weights stay mapped while the ModelFiles lives; TensorRefs point into the mappings.
// Opening checks that every tensor of the architecture's table exists with the shape config.json
// implies (and num_hidden_layers against the layers the files hold), so a loader never uploads
// half a model. Every error is a wgfuse::Error naming the file
// and the field or tensor.
#pragma once

#include <deque>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "llm/config.h"
#include "llm/hf_quant.h"
#include "llm/safetensors.h"
#include "llm/tensor.h"

namespace wgfuse::llm {

class GgufFile;
struct ExpectedTensor;

// Token ids and sampling defaults from generation_config.json (and, for the ids, config.json).
// Defaults are those of Hugging Face's GenerationConfig.
struct GenerationConfig {
  std::vector<uint32_t> eos_token_ids;  // "eos_token_id": an int or a list
  std::optional<uint32_t> bos_token_id;
  std::optional<uint32_t> pad_token_id;
  bool do_sample = false;
  double temperature = 1.0;
  uint32_t top_k = 50;
  double top_p = 1.0;
  double repetition_penalty = 1.0;
};

// config.json text -> ModelConfig. Required: architectures (one of llm/architecture.h),
// vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
// max_position_embeddings. Defaults as in transformers' configs: num_key_value_heads =
// num_attention_heads, head_dim = hidden_size / num_attention_heads, rope_theta 10000 (top level or
// rope_parameters), rms_norm_eps 1e-6, tie_word_embeddings false. RoPE scaling of type llama3 or
// yarn is read; other types, sliding windows, mixtures of experts, activations other than silu and
// biases the kernels lack are refused naming the field. `file_name` names the file in errors.
ModelConfig parse_model_config(std::string_view json_text, const std::string& file_name);

// Reads the generation keys present in `json_text` (generation_config.json, or config.json
// for the token ids) over the values already in `into`.
void apply_generation_config(std::string_view json_text, const std::string& file_name,
                             GenerationConfig& into);

class ModelFiles {
 public:
  // Reads config.json and generation_config.json, maps and checks every safetensors file, and
  // requires every tensor of the architecture's table (expected_tensors) with its shape.
  // A GGUF file instead of a folder: the file is mapped and checked, its tensors required under
  // their llama.cpp names (q and k rows put back in Hugging Face's order where the converter
  // permuted them: a host copy of those tensors).
  explicit ModelFiles(const std::filesystem::path& dir);
  ~ModelFiles();
  ModelFiles(ModelFiles&&) noexcept;

  // The folder, or the GGUF file.
  const std::filesystem::path& dir() const { return dir_; }
  const GgufFile* gguf() const { return gguf_.get(); }
  // The file's tensor types and how many tensors have each: "BF16 x 290" (for reports).
  std::string tensor_types() const;
  const ModelConfig& config() const { return config_; }
  const GenerationConfig& generation() const { return generation_; }
  // config.json's quantization_config, or nullptr.
  const HfQuantConfig* quantization() const { return quant_ ? &*quant_ : nullptr; }

  // nullptr when no file holds `name`.
  const TensorRef* find(std::string_view name) const;
  // The tensor, which must exist with exactly `shape`; the error names the tensor, its file,
  // the expected and the actual shape.
  const TensorRef& require(std::string_view name, const std::vector<uint64_t>& shape) const;

  // The safetensors file holding `t` (for messages), and totals for a progress bar.
  const std::string& file_of(const TensorRef& t) const;
  // What the folder holds that wgfuse does not use (transformers warns of the same and runs):
  // tensors outside the architecture's table, a tied model's differing lm_head.
  const std::vector<std::string>& warnings() const { return warnings_; }
  size_t tensor_count() const { return by_name_.size(); }
  uint64_t total_bytes() const;

 private:
  void index_file(SafetensorsFile&& f);
  void open_gguf();
  // num_hidden_layers against the layers the files hold, then require() for every entry of
  // expected_tensors(config()); what is left over goes to warnings_.
  void validate();
  // The quantized linear layers of `table` (P.qweight present, P.weight absent) as q4_zp tensors.
  void convert_quantized(const std::vector<ExpectedTensor>& table);

  std::filesystem::path dir_;
  ModelConfig config_;
  GenerationConfig generation_;
  std::vector<SafetensorsFile> files_;
  std::unique_ptr<GgufFile> gguf_;
  std::deque<TensorRef> gguf_refs_;               // the GGUF tensors under Hugging Face names
  std::deque<std::vector<std::byte>> reordered_;  // q and k rows in Hugging Face's order
  std::optional<HfQuantConfig> quant_;
  std::deque<TensorRef> quantized_refs_;               // AWQ/GPTQ layers as q4_zp
  std::deque<std::vector<std::byte>> quantized_rows_;  // their rows
  struct Located {
    const TensorRef* ref;
    size_t file;  // index into files_ (0 for a GGUF file)
  };
  std::unordered_map<std::string, Located> by_name_;
  std::vector<std::string> warnings_;
};

}  // namespace wgfuse::llm
