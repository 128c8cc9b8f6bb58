#include "fuse/evolution.h"

#include <algorithm>
#include <cstring>

#include "util/error.h"

namespace wgfuse::fuse {

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
  uint64_t groups = (genes + kWorkgroup - 1) / kWorkgroup;
  uint64_t max_x = lim.max_compute_workgroups_per_dimension;
  breed_x_ = uint32_t(std::min<uint64_t>(groups, max_x));
  breed_y_ = uint32_t((groups + breed_x_ - 1) / breed_x_);
  if (breed_y_ > max_x) throw Error("too many genes for one 2D dispatch on this device");
  params_ = ctx.buffer(sizeof(EvolveParams), gpu::BufferUsage::Uniform | gpu::BufferUsage::CopyDst, "ga.params");
  stats_ = ctx.buffer(16 + 4 * kMaxElites, gpu::BufferUsage::StorageIO, "ga.stats");
  parents_ = ctx.buffer(uint64_t(pop) * 8, gpu::BufferUsage::StorageIO, "ga.parents");
}

gpu::KernelDesc Evolution::desc(const char* entry) const {
  return gpu::embedded_kernel("sim_evolve", entry, {{"WORKGROUP_SIZE", double(kWorkgroup)}});
}

void Evolution::compile() {
  for (const char* e : {"reduce", "select_parents", "breed"}) ctx_->kernel(desc(e));
}

gpu::BindGroup Evolution::group(const gpu::Kernel& k, const gpu::Buffer& fitness, const gpu::Buffer& src,
                                const gpu::Buffer& dst) {
  return ctx_->bind(k, {params_, fitness, stats_, parents_, src, dst});
}

uint32_t Evolution::record(gpu::Recorder& rec, uint32_t generation, const gpu::Buffer& fitness,
                           const gpu::Buffer& src, const gpu::Buffer& dst) {
  EvolveParams p{pop_, genome_len_, generation, cfg_.seed, cfg_.tournament, cfg_.elites,
                 cfg_.rate, cfg_.sigma, cfg_.lo, cfg_.hi, 0, 0};
  ctx_->write_value(params_, 0, p);
  auto& reduce = ctx_->kernel(desc("reduce"));
  auto& select = ctx_->kernel(desc("select_parents"));
  auto& breed = ctx_->kernel(desc("breed"));
  rec.dispatch(reduce, group(reduce, fitness, src, dst), 1);
  rec.dispatch(select, group(select, fitness, src, dst), (pop_ + kWorkgroup - 1) / kWorkgroup);
  rec.dispatch(breed, group(breed, fitness, src, dst), breed_x_, breed_y_);
  return 3;
}

GenerationStats Evolution::read_stats() {
  auto w = ctx_->read<uint32_t>(stats_, 0, 4);
  GenerationStats s;
  std::memcpy(&s.best, &w[0], 4);
  std::memcpy(&s.mean, &w[1], 4);
  s.best_index = w[2];
  s.nonfinite = w[3];
  return s;
}

}  // namespace wgfuse::fuse
