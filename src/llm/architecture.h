// Architectures as data. A decoder of the Llama family (Qwen2, Qwen3, Llama) is a table of
// tensors, each with a role; the roles' names (Hugging Face and GGUF) and shapes are written once
// here, and one file per architecture (arch_qwen2.cpp, arch_qwen3.cpp, arch_llama.cpp) states
// which roles it has and what sets it apart (q/k/v biases, per-head q/k norms). Everything that
// runs a model reads the table: the GPU model, the persistent decoder, the CPU reference, random
// test weights, folder validation and the tiny transformer.
//
// Adding an architecture: a new arch_NAME.cpp with its Architecture, listed in architectures()
// (architecture.cpp); a new role only where a tensor of a new kind appears (name, shape here,
// its math in the reference and the kernels).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "llm/config.h"
#include "llm/tensor.h"

namespace wgfuse::llm {

enum class TensorRole : uint8_t {
  Embedding,
  AttnNorm,  // RMSNorm before attention ("input_layernorm")
  Q,
  K,
  V,
  QBias,
  KBias,
  VBias,
  QNorm,  // per-head RMSNorm of q after the projection, before RoPE ([head_dim])
  KNorm,
  O,
  FfnNorm,  // RMSNorm before the MLP ("post_attention_layernorm")
  Gate,
  Up,
  Down,
  FinalNorm,
  LmHead,
};
inline constexpr size_t kTensorRoles = size_t(TensorRole::LmHead) + 1;

bool per_layer(TensorRole r);
// The tensor's name in a Hugging Face checkpoint and in a GGUF file (llama.cpp's names) for
// `layer` (ignored by the roles outside the layers).
std::string hf_name(TensorRole r, uint32_t layer = 0);
std::string gguf_name(TensorRole r, uint32_t layer = 0);
// Its shape, row-major as stored ([out, in] for a linear weight).
std::vector<uint64_t> tensor_shape(TensorRole r, const ModelConfig& c);
bool is_norm(TensorRole r);

struct TensorSpec {
  TensorRole role;
  bool untied_only = false;  // present only when tie_word_embeddings is false (the LM head)
};

struct Architecture {
  std::string_view name;         // config.json "architectures"[0]
  std::string_view checkpoints;  // what it runs, for messages: "Qwen2 and Qwen2.5"
  std::string_view gguf_name;    // a GGUF file's general.architecture (llama.cpp's LLM_ARCH_NAMES)
  // llama.cpp's converter stores this architecture's q and k rows (weights and biases) permuted so
  // that each head's RoPE pairs are adjacent: GGUF row 2j + t of a head is Hugging Face row
  // t * head_dim / 2 + j (convert_hf_to_gguf's LlamaModel.permute).
  bool gguf_rope_pairs_adjacent = false;
  // Biases on q, k and v (Qwen2, always). Without: config.json "attention_bias" must not be true.
  bool qkv_bias = false;
  // q and k each normalised per head (QNorm, KNorm) between the projection and RoPE (Qwen3).
  bool qk_norm = false;
  // Every tensor, in the order random weights draw them (HostWeights::random).
  std::vector<TensorSpec> tensors;
};

// Every architecture wgfuse runs.
std::span<const Architecture* const> architectures();
// The architecture named `name` (config.json "architectures"[0]); throws Error naming it and
// listing the supported ones. `source` names the file in the message.
const Architecture& find_architecture(std::string_view name, const std::string& source = "model config");
// The same by GGUF general.architecture ("qwen2", "qwen3", "llama").
const Architecture& find_gguf_architecture(std::string_view gguf_name, const std::string& source);
const Architecture& architecture_of(const ModelConfig& c);
std::string supported_architectures();  // "Qwen2ForCausalLM (Qwen2 and Qwen2.5), ..."

// The checks every runner of `c` relies on: sizes positive, heads a multiple of kv heads, head_dim
// even (RoPE pairs), a known architecture, RoPE scaling parameters in range. Errors start with
// `source`.
void check_config(const ModelConfig& c, const std::string& source = "model config");

// The tensors `c` needs, with names and shapes, in table order (per layer where per_layer).
struct ExpectedTensor {
  std::string name;
  std::vector<uint64_t> shape;
  TensorRole role;
  uint32_t layer = 0;
};
std::vector<ExpectedTensor> expected_tensors(const ModelConfig& c);

// Every tensor of `c` found in `lookup` and shape-checked (before anything is uploaded); by role.
class ModelTensors {
 public:
  ModelTensors(const ModelConfig& c, const WeightLookup& lookup);
  // The tensor of role r (in `layer` for per-layer roles); Error when the table has none.
  const TensorRef& operator()(TensorRole r, uint32_t layer = 0) const;
  // nullptr when the architecture (or the config: a tied head) has no such tensor.
  const TensorRef* find(TensorRole r, uint32_t layer = 0) const;
  const Architecture& architecture() const { return *arch_; }

 private:
  const Architecture* arch_;
  std::vector<std::array<const TensorRef*, kTensorRoles>>
      layers_;  // [num_layers + 1]: the last holds the rest
};

// The fused matrices' row orders (packed row -> source row), read by kernels/llm_common.wgsl.
// Q/K/V: q rows, then k rows, each head's rows as RoPE pairs (i, i + hd/2); then v rows in order.
// Returns {0 = q, 1 = k, 2 = v; row within that projection}.
std::pair<uint32_t, uint32_t> qkv_source_row(uint32_t packed, uint32_t head_dim, uint32_t q_rows,
                                             uint32_t kv_rows);
// Gate/up: gate 0, up 0, gate 1, ... Returns {0 = gate, 1 = up; row}.
std::pair<uint32_t, uint32_t> gate_up_source_row(uint32_t packed);

// A fused matrix of `layer`: its source tensors and, for each packed row, {index into sources,
// row of that source}; WeightLoader::matrix takes them as they are (its per-row copy path).
struct PackedMatrix {
  std::vector<const TensorRef*> sources;
  uint32_t rows = 0;
  std::function<std::pair<uint32_t, uint32_t>(uint32_t packed)> source_row;
};
PackedMatrix packed_qkv(const ModelTensors& t, const ModelConfig& c, uint32_t layer);      // sources q, k, v
PackedMatrix packed_gate_up(const ModelTensors& t, const ModelConfig& c, uint32_t layer);  // gate, up
// The Q/K/V bias in packed order (zeros for an architecture without biases).
std::vector<float> packed_qkv_bias(const ModelTensors& t, const ModelConfig& c, uint32_t layer);

}  // namespace wgfuse::llm
