// ModelConfig: the shape of a Qwen2-architecture decoder, from a Hugging Face config.json
// (Qwen2.5) or chosen directly (the tiny transformer). One definition for every strategy, the
// GPU model and the CPU reference.
#pragma once
#include <cstdint>
#include <string>

namespace wgfuse::llm {

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
  bool attention_bias = true;  // Qwen2 has biases on q/k/v, none on o_proj
};

}  // namespace wgfuse::llm
