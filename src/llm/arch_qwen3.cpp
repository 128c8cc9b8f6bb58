// Qwen3ForCausalLM (Qwen3 dense): no q/k/v biases; q and k each RMS-normalised per head
// (self_attn.q_norm / k_norm, [head_dim], eps = rms_norm_eps) after the projection and before
// RoPE; head_dim explicit in config.json (Qwen3-0.6B: 16 heads x 128 = 2048 against hidden 1024).
#include "llm/architecture.h"

namespace wgfuse::llm {

const Architecture& qwen3_architecture() {
  using enum TensorRole;
  static const Architecture a{
      .name = "Qwen3ForCausalLM",
      .checkpoints = "Qwen3 dense",
      .gguf_name = "qwen3",
      .qk_norm = true,
      .tensors = {{Embedding},
                  {AttnNorm},
                  {FfnNorm},
                  {Q},
                  {K},
                  {V},
                  {QNorm},
                  {KNorm},
                  {O},
                  {Gate},
                  {Up},
                  {Down},
                  {FinalNorm},
                  {LmHead, true}},
  };
  return a;
}

}  // namespace wgfuse::llm
