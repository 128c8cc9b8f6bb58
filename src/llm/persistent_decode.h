// PersistentDecoder (issue 9, experimental): greedy decoding of a Qwen2 or Llama model with
// ONE dispatch per position (kernels/llm_persistent_decode.wgsl): its workgroups share every
// stage's work and meet at grid barriers between stages (5 per layer + 1), reading weights from
// one packed buffer. Beside llm::Model, which stays the reference: a grid barrier is only
// trustworthy where check_grid_sync (persistent.h) passed for the grid, and the results only
// where they were checked equal to Model's (`wgfuse generate --decode persistent`).
// The prompt goes through the same dispatch, one position at a time (a position whose next token
// is already known picks none).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "gpu/context.h"
#include "llm/config.h"
#include "llm/decode_kernels.h"
#include "llm/model.h"
#include "llm/persistent.h"
#include "llm/reference.h"

namespace wgfuse::llm {

struct PersistentOptions {
  WeightDType dtype = WeightDType::F16;
  uint32_t ctx = 4096;            // KV-cache positions
  uint32_t workgroups = 1;        // the grid: at most what check_grid_sync saw co-resident
  uint32_t workgroup_size = 256;  // a power of two, >= head_dim and >= the row team (32 or the subgroup)
  // Atomic loads a workgroup spends waiting at one grid barrier before the dispatch gives up (an
  // Error after the submit, not a hang).
  uint32_t spin_limit = 1u << 22;
  std::function<void(uint64_t done, uint64_t total)> progress;  // upload bytes
};

// Why the persistent decoder cannot run `c`'s architecture (its constructor refuses it with this),
// or empty: the CLI falls back to the step decoder instead.
std::string persistent_unsupported(const ModelConfig& c);

class PersistentDecoder {
 public:
  PersistentDecoder(gpu::Context& ctx, ModelConfig cfg, const WeightLookup& weights,
                    PersistentOptions options = {});

  const ModelConfig& config() const { return cfg_; }
  uint32_t workgroups() const { return opt_.workgroups; }
  const std::vector<uint32_t>& sequence() const { return seq_; }
  uint32_t barriers_per_token() const;  // grid barriers inside one dispatch: 5 per layer + 1
  void reset();

  // Appends `prompt` (at least one token unless the last call left one unfed) and generates up to
  // n greedy tokens, as Model::generate: on_token (false stops), EOS ids, K = steps_per_submit
  // dispatches per submit, on_logits after every step (then K = 1). options.picker must be empty
  // (greedy only). Throws Error when a grid barrier timed out; the decoder is then unusable.
  std::vector<uint32_t> generate(std::span<const uint32_t> prompt, uint32_t n,
                                 const std::function<bool(uint32_t)>& on_token = {},
                                 const GenerateOptions& options = {});
  std::vector<float> read_logits();  // the logits of the last position computed
  // As Model's: decode_steps = decode_dispatches (one per token), dispatches_per_step = 1.
  const ModelStats& stats() const { return stats_; }

 private:
  void upload_weights(const WeightLookup& weights);
  // Records `count` dispatches (positions) and a copy of the control words and of tokens
  // [first, first + picked) into the staging buffer; submits; returns those tokens. Throws Error
  // when a barrier timed out.
  std::vector<uint32_t> run(uint32_t count, uint32_t first, uint32_t picked, gpu::Recorder& rec);

  gpu::Context* ctx_;
  ModelConfig cfg_;
  PersistentOptions opt_;
  std::map<std::string, double> layout_;  // the kernel's offsets and shapes
  gpu::Buffer weights_, vectors_, live_, kv_, tokens_, control_, zero_, staging_;
  const gpu::Kernel* kernel_ = nullptr;
  gpu::BindGroup group_;
  uint32_t logits_word_ = 0;
  std::vector<uint32_t> seq_;
  uint32_t fed_ = 0;
  bool broken_ = false;
  ModelStats stats_;
};

// The grid of a persistent decode: `requested` workgroups if check_grid_sync passes for them, or
// with requested = 0 the largest power of two up to `most` that passes; workgroups = 0 and the
// last failure's message when none does (the caller falls back to the step decoder).
// `spin_limit`: the probe's wait per barrier (0 makes it fail, to exercise the fallback).
struct GridChoice {
  uint32_t workgroups = 0;
  std::string reason;
};
GridChoice choose_grid(gpu::Context& ctx, uint32_t requested, uint32_t workgroup_size, uint32_t spin_limit,
                       uint32_t most = 1024);

// The check before a persistent decode is trusted: n greedy tokens after `prompt` from both
// decoders (each is reset before and after), every step's logits compared (max |a - b| / max |b|
// <= tol). Returns what differs, or empty when they agree. Throws what either decoder throws.
std::string compare_with_steps(Model& steps, PersistentDecoder& persistent, std::span<const uint32_t> prompt,
                               uint32_t n, double tol);

}  // namespace wgfuse::llm
