#include "sim/evolution.h"

#include <algorithm>
#include <cstring>

#include "util/error.h"

namespace wgfuse::sim {

namespace {
constexpr uint32_t kWorkgroup = 64;
}

Evolution::Evolution(gpu::Context& ctx, uint32_t pop, uint32_t genome_len, GaConfig config)
    : ctx_(&ctx), pop_(pop), genome_len_(genome_len), cfg_(config) {
  if (pop < 2) throw Error("the genetic algorithm needs a population of at least 2");
  if (cfg_.tournament < 1) throw Error("tournament size must be at least 1");
  if (cfg_.elites < 1 || cfg_.elites > kMaxElites || cfg_.elites >= pop)
    throw Error("elites must be between 1 and " + std::to_string(kMaxElites) + " and below the population");
  const auto& lim = ctx.limits();
  uint64_t genes = uint64_t(pop) * genome_len;
  if (genes * 4 > lim.max_storage_buffer_binding_size)
    throw Error("population " + std::to_string(pop) + " x genome " + std::to_string(genome_len) + " f32 (" +
                std::to_string(genes * 4) + " bytes) is over the device's maxStorageBufferBindingSize (" +
                std::to_string(lim.max_storage_buffer_binding_size) + ")");
  if (genes >= (uint64_t(1) << 32)) throw Error("population x genome length must be below 2^32");
  // Workgroups of the select and breed dispatches per grid dimension.
  auto within_limit = [&](uint32_t groups, const std::string& what) {
    if (groups > lim.max_compute_workgroups_per_dimension)
      throw Error(
          what + " needs " + std::to_string(groups) +
          " workgroups of the GA in one dimension, over the device's maxComputeWorkgroupsPerDimension (" +
          std::to_string(lim.max_compute_workgroups_per_dimension) + ")");
    return groups;
  };
  groups_ = within_limit((pop + kWorkgroup - 1) / kWorkgroup, "population " + std::to_string(pop));
  breed_y_ = within_limit((genome_len + kGenesPerThread - 1) / kGenesPerThread,
                          "genome length " + std::to_string(genome_len));
  params_ =
      ctx.buffer(sizeof(EvolveParams), gpu::BufferUsage::Uniform | gpu::BufferUsage::CopyDst, "ga.params");
  params_ring_ = ctx.buffer(kParamsRing * sizeof(EvolveParams),
                            gpu::BufferUsage::CopySrc | gpu::BufferUsage::CopyDst, "ga.params_ring");
  stats_ = ctx.buffer(16 + 4 * kMaxElites, gpu::BufferUsage::StorageIO, "ga.stats");
  parents_ = ctx.buffer(uint64_t(pop) * 8, gpu::BufferUsage::StorageIO, "ga.parents");
}

void Evolution::compile() {
  if (reduce_) return;
  // sim_evolve.wgsl includes sim_rng.wgsl: the GA draws from the same RNG as the simulations.
  auto kernel = [&](const char* entry) {
    return &ctx_->kernel(gpu::embedded_kernel("sim_evolve", entry, {{"WORKGROUP_SIZE", double(kWorkgroup)}}));
  };
  reduce_ = kernel("reduce");
  select_ = kernel("select_parents");
  breed_ = kernel("breed");
}

std::array<std::pair<const gpu::Kernel*, gpu::Grid>, Evolution::kKernels> Evolution::grids() const {
  return {{{reduce_, gpu::Grid{1}}, {select_, gpu::Grid{groups_}}, {breed_, gpu::Grid{groups_, breed_y_}}}};
}

gpu::Plan& Evolution::plan(const gpu::Buffer& fitness, const gpu::Buffer& src, const gpu::Buffer& dst) {
  const auto key = std::tuple{fitness.id(), src.id(), dst.id()};
  if (auto it = plans_.find(key); it != plans_.end()) return it->second;
  compile();
  if (plans_.size() >= 8) plans_.clear();  // the GA alternates two; a caller cycling more rebuilds
  gpu::Plan p(*ctx_, "ga");
  for (const auto& [k, grid] : grids()) p.dispatch(*k, {params_, fitness, stats_, parents_, src, dst}, grid);
  p.build();
  return plans_.emplace(key, std::move(p)).first->second;
}

EvolveParams Evolution::params_of(uint32_t generation) const {
  return {.pop = pop_,
          .genome_len = genome_len_,
          .tournament = cfg_.tournament,
          .elites = cfg_.elites,
          .rate = cfg_.rate,
          .sigma = cfg_.sigma,
          .lo = cfg_.lo,
          .hi = cfg_.hi,
          .select_key = ga_stream_key(cfg_.seed, kStreamSelect, generation),
          .cross_key = ga_stream_key(cfg_.seed, kStreamCross, generation),
          .mutate_key = ga_stream_key(cfg_.seed, kStreamMutate, generation),
          .pad = 0};
}

void Evolution::record_params(gpu::Recorder& rec, uint32_t generation) {
  const uint64_t at = uint64_t(generation % kParamsRing) * sizeof(EvolveParams);
  ctx_->write_value(params_ring_, at, params_of(generation));
  rec.copy(params_ring_, at, params_, 0, sizeof(EvolveParams));
}

uint32_t Evolution::record(gpu::Recorder& rec, uint32_t generation, const gpu::Buffer& fitness,
                           const gpu::Buffer& src, const gpu::Buffer& dst, gpu::Profiler* per_kernel,
                           Params params) {
  if (params == Params::QueueWrite) ctx_->write_value(params_, 0, params_of(generation));
  if (per_kernel) {
    compile();
    for (const auto& [k, grid] : grids()) {
      rec.time_next_pass(*per_kernel);
      rec.dispatch(*k, ctx_->bind(*k, {params_, fitness, stats_, parents_, src, dst}), grid.x, grid.y);
    }
    rec.end_pass();
    return kKernels;
  }
  auto& steps = plan(fitness, src, dst);
  steps.encode(rec);
  return uint32_t(steps.dispatches());
}

GenerationStats Evolution::read_stats() {
  return decode_stats(ctx_->read_bytes(stats_, 0, kStatsBytes));
}

void Evolution::copy_stats(gpu::Recorder& rec, const gpu::Buffer& staging, uint64_t offset) {
  rec.copy(stats_, 0, staging, offset, kStatsBytes);
}

GenerationStats Evolution::decode_stats(std::span<const std::byte> bytes) {
  if (bytes.size() < kStatsBytes)
    throw Error("GA statistics: " + std::to_string(bytes.size()) + " bytes, want 16");
  uint32_t w[4];
  std::memcpy(w, bytes.data(), kStatsBytes);
  GenerationStats s;
  std::memcpy(&s.best, &w[0], 4);
  std::memcpy(&s.mean, &w[1], 4);
  s.best_index = w[2];
  s.nonfinite = w[3];
  return s;
}

}  // namespace wgfuse::sim
