// Qwen2ForCausalLM (Qwen2, Qwen2.5): biases on q, k and v (none on o); plain or scaled RoPE.
#include "llm/architecture.h"

namespace wgfuse::llm {

const Architecture& qwen2_architecture() {
  using enum TensorRole;
  static const Architecture a{
      .name = "Qwen2ForCausalLM",
      .checkpoints = "Qwen2 and Qwen2.5",
      .gguf_name = "qwen2",
      .qkv_bias = true,
      .tensors = {{Embedding},
                  {AttnNorm},
                  {FfnNorm},
                  {Q},
                  {K},
                  {V},
                  {QBias},
                  {KBias},
                  {VBias},
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
