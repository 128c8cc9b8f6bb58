// LlamaForCausalLM (Llama 3.x, SmolLM2, ...): no biases; tied or untied head; RoPE plain or
// scaled ("llama3", "yarn"); head_dim explicit or hidden / heads.
#include "llm/architecture.h"

namespace wgfuse::llm {

const Architecture& llama_architecture() {
  using enum TensorRole;
  static const Architecture a{
      .name = "LlamaForCausalLM",
      .checkpoints = "Llama 3.x, SmolLM2",
      .gguf_name = "llama",
      .gguf_rope_pairs_adjacent = true,
      .tensors = {{Embedding},
                  {AttnNorm},
                  {FfnNorm},
                  {Q},
                  {K},
                  {V},
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
