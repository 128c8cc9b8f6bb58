// TinyRunner: the tiny transformer's generation on the GPU by each strategy, over buffers made
// once: packed weights, KV cache, activations, tokens (prompt, then generated), logits, positions.
//   eager    one dispatch per op, submit and wait each
//   batched  the same dispatches, the whole generation in one command buffer
//   layer    one dispatch per layer per token (plus embedding, and head + next token)
//   single   one dispatch for the whole generation, one workgroup per sequence (activations in
//            workgroup memory where they fit, else in storage)
// Before every run the logits are poisoned with NaN, the generated tokens with 0xFFFFFFFF and the
// positions reset, so a value a strategy failed to write cannot pass the check.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/context.h"
#include "gpu/plan.h"
#include "gpu/profiler.h"
#include "tiny/tiny_model.h"

namespace wgfuse::tiny {

enum class Strategy { Eager, Batched, Layer, Single };
inline constexpr Strategy kStrategies[] = {Strategy::Eager, Strategy::Batched, Strategy::Layer,
                                           Strategy::Single};
std::string_view strategy_name(Strategy s);
Strategy parse_strategy(std::string_view name);  // throws Error listing the names

// How the fused strategies (layer, single) spread their work; 0 = chosen automatically.
struct Tuning {
  uint32_t threads = 0;  // per workgroup (a multiple of 32); auto: 131,072 / sequences as a power
                         // of two in [128, 512] (at most the device's maximum)
  uint32_t lanes = 0;    // the most threads sharing one item (a power of two); auto: the adapter's
                         // smallest subgroup (at most 32), 1 without subgroups
  enum class Activations { Auto, Workgroup, Storage } single_activations = Activations::Auto;
};

// What a runner resolved: threads, the lane cap, each op's lanes, where single keeps activations.
struct Resolved {
  uint32_t threads = 0, lanes = 0;
  uint32_t qkv = 1, o = 1, gate_up = 1, down = 1, head = 1, scores = 1, attend = 1;
  bool single_in_workgroup = true;
};

struct RunStats {
  double seconds = 0;       // wall clock of the generation (submits and waits; no upload or read-back)
  uint64_t dispatches = 0;  // of the whole generation
  uint64_t submits = 0;
};

class TinyRunner {
 public:
  // Throws Error naming the device limit a size does not fit (binding size, workgroups per
  // dimension, threads per workgroup, workgroup memory where single's activations are asked there).
  TinyRunner(gpu::Context& ctx, const TinyModel& model, std::string_view prompt, uint32_t tokens,
             uint32_t sequences, const Tuning& tuning = {});
  ~TinyRunner();

  // Resets the outputs and runs the whole generation once.
  RunStats run(Strategy s);
  // As run(), with GPU timestamps around its passes: the GPU time in ns, or a negative value
  // when the device has no timestamp queries.
  double gpu_ns(Strategy s);
  // Resets the outputs (poison) without running anything: what a strategy that writes nothing leaves.
  void reset();

  const Resolved& resolved() const { return resolved_; }

  // Sequence `seq`'s generated tokens [tokens] and logits [tokens][256] of the last run.
  std::vector<uint32_t> tokens(uint32_t seq);
  std::vector<float> logits(uint32_t seq);

 private:
  struct Impl;
  RunStats execute(Strategy s, gpu::Profiler* prof, double* gpu_ns);
  gpu::Context* ctx_;
  uint32_t prompt_len_, tokens_, sequences_;
  std::vector<uint32_t> initial_tokens_;  // [seq][capacity]
  Resolved resolved_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace wgfuse::tiny
