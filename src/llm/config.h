// ModelConfig: the shape of a decoder of the Llama family (Qwen2, Qwen3, Llama; which tensors
// each has: llm/architecture.h), from a Hugging Face config.json or chosen directly (tests, the
// tiny transformer). One definition for every strategy, the GPU model and the CPU reference.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace wgfuse::llm {

// config.json "rope_scaling" (transformers 4) or "rope_parameters" (transformers 5); the
// frequencies they give are computed in llm/rope.h.
struct RopeScaling {
  // Factors: each inverse frequency divided by its own factor, as a GGUF file's rope_freqs.weight
  // gives them (llama.cpp's converter writes llama3 scaling so).
  enum class Type { Default, Llama3, Yarn, Factors };
  Type type = Type::Default;
  double factor = 1.0;
  uint32_t original_max_position_embeddings = 0;         // 0: max_position_embeddings (yarn)
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  // llama3
  double beta_fast = 32.0, beta_slow = 1.0;              // yarn
  double attention_factor = 0.0;  // yarn: scales cos and sin; 0 = derived from factor (and mscale)
  double mscale = 0.0, mscale_all_dim = 0.0;  // yarn, 0 = absent
  bool truncate = true;                       // yarn: round the correction range to whole dims
  std::vector<double> freq_factors;           // Factors: head_dim / 2 of them
  bool operator==(const RopeScaling&) const = default;
};

struct ModelConfig {
  std::string architecture = "Qwen2ForCausalLM";  // config.json "architectures"[0]
  uint32_t vocab_size = 0;
  uint32_t hidden_size = 0;        // d_model
  uint32_t intermediate_size = 0;  // SwiGLU width
  uint32_t num_layers = 0;         // "num_hidden_layers"
  uint32_t num_heads = 0;          // "num_attention_heads"
  uint32_t num_kv_heads = 0;       // "num_key_value_heads" (grouped-query attention)
  uint32_t head_dim = 0;           // hidden_size / num_heads unless config.json says otherwise
  uint32_t max_position_embeddings = 0;
  double rope_theta = 10000.0;
  double rms_norm_eps = 1e-6;
  bool tie_word_embeddings = false;
  RopeScaling rope_scaling;
  bool operator==(const ModelConfig&) const = default;
};

}  // namespace wgfuse::llm
