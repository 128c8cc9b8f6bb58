// The genetic algorithm's generation step on the GPU (kernels/sim_evolve.wgsl): three dispatches
// (reduce, select, breed), then one 16-byte read-back of the statistics (best, mean). Genomes are
// double-buffered: breed reads one buffer and writes the other. The three dispatches are a
// gpu::Plan per (fitness, src, dst), built once; a generation writes its params (one queue
// write, or a copy from a ring recorded into the command buffer where several generations share
// one) and encodes the plan.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <tuple>
#include <utility>

#include "gpu/buffer.h"
#include "gpu/context.h"
#include "gpu/plan.h"
#include "gpu/profiler.h"
#include "gpu/recorder.h"
#include "sim/rng.h"

namespace wgfuse::sim {

// Mirrors EvolveParams in kernels/sim_evolve.wgsl.
struct EvolveParams {
  uint32_t pop, genome_len, tournament, elites;
  float rate, sigma, lo, hi;
  uint32_t select_key, cross_key, mutate_key;  // ga_stream_key of each stream
  uint32_t pad;
};
static_assert(sizeof(EvolveParams) == 48);
static_assert(offsetof(EvolveParams, rate) == 16);
static_assert(offsetof(EvolveParams, select_key) == 32);

inline constexpr uint32_t kMaxElites = 8;       // MAX_ELITES in kernels/sim_evolve.wgsl
inline constexpr uint32_t kGenesPerThread = 8;  // GENES_PER_THREAD there
inline constexpr uint32_t kStreamSelect = 3;    // the GA's key streams (sim/rng.h has the others)
inline constexpr uint32_t kStreamCross = 4;
inline constexpr uint32_t kStreamMutate = 5;

// The first three rounds of hash5(seed, stream, generation, child, gene), the same for a whole
// generation: hash5(...) == pcg_hash(pcg_hash(ga_stream_key(...) + child) + gene).
constexpr uint32_t ga_stream_key(uint32_t seed, uint32_t stream, uint32_t generation) {
  return pcg_hash(pcg_hash(pcg_hash(seed) + stream) + generation);
}
static_assert(pcg_hash(pcg_hash(ga_stream_key(7, kStreamCross, 9) + 11) + 13) ==
              hash5(7, kStreamCross, 9, 11, 13));

struct GaConfig {
  uint32_t tournament = 3;
  uint32_t elites = 1;            // the E best are kept unchanged, 1 <= E <= kMaxElites
  float rate = 0.1f;              // probability that a gene mutates
  float sigma = 0.1f;             // standard deviation of a mutation
  float lo = -1e30f, hi = 1e30f;  // genes are clamped to [lo, hi] after mutation
  uint32_t seed = 1;
};

struct GenerationStats {
  float best = 0, mean = 0;
  uint32_t best_index = 0, nonfinite = 0;
};

class Evolution {
 public:
  Evolution(gpu::Context& ctx, uint32_t pop, uint32_t genome_len, GaConfig config);
  void compile();
  // Records reduce + select + breed (src -> dst). Returns the number of dispatches (3).
  // `per_kernel`: each of the three in its own pass, timed by it (3 timed passes; to see what
  // each kernel costs: the pass boundaries add their own time). `params`: QueueWrite writes the
  // generation's params now (ordered with submits); Recorded: record_params already recorded them.
  enum class Params { QueueWrite, Recorded };
  uint32_t record(gpu::Recorder& rec, uint32_t generation, const gpu::Buffer& fitness, const gpu::Buffer& src,
                  const gpu::Buffer& dst, gpu::Profiler* per_kernel = nullptr,
                  Params params = Params::QueueWrite);
  // Records the params of `generation` inside `rec`'s command buffer: queue-written into slot
  // generation % kParamsRing of a ring, then copied by a command (as
  // fuse::SimProgram::record_generation), so that up to kParamsRing generations, each with its own
  // params, can share one command buffer. Recorded before the evaluation, the copy sits beside the
  // evaluation's own instead of between the two passes.
  void record_params(gpu::Recorder& rec, uint32_t generation);
  static constexpr uint32_t kParamsRing = 16;
  static constexpr uint32_t kKernels = 3;
  // Reads the statistics recorded last (waits for submitted work).
  GenerationStats read_stats();
  // Records a copy of the statistics (kStatsBytes) into `staging` (MapRead | CopyDst) at
  // `offset`, for a read-back that waits only for this command buffer (Context::map_read).
  void copy_stats(gpu::Recorder& rec, const gpu::Buffer& staging, uint64_t offset);
  static constexpr uint64_t kStatsBytes = 16;
  static GenerationStats decode_stats(std::span<const std::byte> bytes);

 private:
  EvolveParams params_of(uint32_t generation) const;
  // The three kernels in order with their grids (after compile()).
  std::array<std::pair<const gpu::Kernel*, gpu::Grid>, kKernels> grids() const;
  gpu::Plan& plan(const gpu::Buffer& fitness, const gpu::Buffer& src, const gpu::Buffer& dst);
  gpu::Context* ctx_;
  uint32_t pop_, genome_len_;
  GaConfig cfg_;
  // The params are rewritten (queue write) when a generation is recorded: queue writes are
  // ordered with submits, so generations already in flight keep the values they were given.
  gpu::Buffer params_, params_ring_, stats_, parents_;
  uint32_t groups_ = 0;   // of children (select, and breed's x)
  uint32_t breed_y_ = 0;  // breed's runs of kGenesPerThread genes
  const gpu::Kernel *reduce_ = nullptr, *select_ = nullptr, *breed_ = nullptr;  // by compile()
  std::map<std::tuple<uint64_t, uint64_t, uint64_t>, gpu::Plan> plans_;         // by buffer ids
};

}  // namespace wgfuse::sim
