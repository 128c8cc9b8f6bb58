#include "fuse/sim_program.h"

#include <algorithm>
#include <regex>

#include "util/error.h"

namespace wgfuse::fuse {

bool offered(const gpu::Context& ctx, Strategy s) {
  return !row(s).optional || ctx.features().subgroups;
}

void require_offered(const gpu::Context& ctx, Strategy s) {
  if (!offered(ctx, s))
    throw Error("strategy " + to_string(s) +
                " needs the adapter's 'subgroups' feature, which this adapter does not offer; use fused");
}

uint32_t workgroup_size(const SimDefinition& spec, Strategy s) {
  return row(s).grid == Grid::PerTeam && spec.team_workgroup_size ? spec.team_workgroup_size
                                                                  : spec.workgroup_size;
}

SimDefinition fit_team_workgroup(const gpu::Context& ctx, SimDefinition spec) {
  const auto& lim = ctx.limits();
  const uint32_t top = std::min(lim.max_compute_invocations_per_workgroup, lim.max_compute_workgroup_size_x);
  while (spec.team_workgroup_size > top && spec.team_workgroup_size > spec.workgroup_size)
    spec.team_workgroup_size /= 2;
  return spec;
}

uint32_t max_team(const gpu::Context& ctx, const SimDefinition& spec) {
  if (!ctx.features().subgroups) return 1;
  // A step-splitting team adds its lanes' sums through workgroup memory, so only the workgroup
  // bounds it; a policy team exchanges by subgroup shuffles and must fit in the smallest subgroup.
  const uint32_t wg = workgroup_size(fit_team_workgroup(ctx, spec), Strategy::Team);
  uint32_t m = spec.team_splits_steps ? std::min(spec.max_team, wg)
                                      : std::min({spec.max_team, ctx.adapter().subgroup_min_size, wg});
  uint32_t p = 1;
  while (p * 2 <= m) p *= 2;
  return p;
}

void check_team(const gpu::Context& ctx, const SimDefinition& spec, uint32_t team) {
  const uint32_t m = max_team(ctx, spec);
  if (team == 0 || (team & (team - 1)) != 0 || team > m)
    throw Error("simulation '" + spec.name + "': team size " + std::to_string(team) +
                " must be a power of two from 1 to " + std::to_string(m) +
                " (the smallest of the workload's " + std::to_string(spec.max_team) +
                (spec.team_splits_steps ? std::string()
                                        : ", the adapter's smallest subgroup, " +
                                              std::to_string(ctx.adapter().subgroup_min_size)) +
                ", and the workgroup size " +
                std::to_string(workgroup_size(fit_team_workgroup(ctx, spec), Strategy::Team)) + ")");
}

AutoChoice choose_auto(const gpu::Context& ctx, const SimDefinition& spec, uint32_t pop) {
  if (!ctx.features().subgroups)
    return {Strategy::Fused, 1, "fused: the adapter has no subgroups, so no team strategy"};
  const uint32_t m = max_team(ctx, spec);
  if (spec.team_splits_steps && m > 1)
    return {Strategy::Team, m,
            "team of " + std::to_string(m) + ": the steps are independent, so the largest team (" +
                std::to_string(m) +
                ": workload, workgroup) streams the genes with the most "
                "loads in flight (" +
                std::to_string(uint64_t(pop) * m) + " invocations)"};
  const uint32_t top = spec.auto_max_team ? std::min(spec.auto_max_team, m) : m;
  uint32_t team = std::min(std::max(1u, spec.auto_min_team), top);
  const uint64_t invocations = spec.auto_invocations ? spec.auto_invocations : kAutoTargetInvocations;
  while (team < top && uint64_t(pop) * team < invocations) team *= 2;
  const std::string target = std::to_string(invocations);
  if (team == 1)
    return {Strategy::Fused, 1,
            "fused: population " + std::to_string(pop) + " alone reaches " + target + " invocations"};
  return {Strategy::Team, team,
          "team of " + std::to_string(team) + ": population " + std::to_string(pop) + " x " +
              std::to_string(team) + " lanes = " + std::to_string(uint64_t(pop) * team) +
              " invocations (target " + target +
              (spec.auto_min_team > 1 ? ", team at least " + std::to_string(spec.auto_min_team) : "") +
              ", at most " + std::to_string(top) +
              (top < m ? ": the workload's measured best" : ": workload, smallest subgroup, workgroup") +
              ")"};
}

namespace {

// The module's text before the definition, which follows it on a line of its own.
std::string module_head(const SimDefinition& spec, Strategy s) {
  std::string head(gpu::kernel_source(row(s).grid == Grid::PerTeam ? "sim_team" : "sim_solo"));
  for (std::string_view family : {std::string_view("sim_common"), std::string_view(spec.policy)}) {
    if (family.empty()) continue;
    if (!head.empty() && head.back() != '\n') head += '\n';
    head += gpu::kernel_source(family);
  }
  if (!head.empty() && head.back() != '\n') head += '\n';
  return head;
}

}  // namespace

std::string generated_source(const SimDefinition& spec, Strategy s) {
  std::string src = module_head(spec, s) + spec.source;
  if (!src.empty() && src.back() != '\n') src += '\n';
  return src + std::string(gpu::kernel_source("sim_entries"));
}

uint32_t definition_first_line(const SimDefinition& spec, Strategy s) {
  const auto head = module_head(spec, s);
  return uint32_t(std::count(head.begin(), head.end(), '\n')) + 1;
}

std::string locate_wgsl_error(const SimDefinition& spec, Strategy s, const std::string& message) {
  // gpu::Context's form: "kernel 'NAME': WGSL error at line N, column C: MESSAGE", one per line.
  static const std::regex at(R"(kernel '[^']*': WGSL error at line (\d+), column (\d+): )");
  const uint32_t first = definition_first_line(spec, s);
  const uint32_t lines = uint32_t(std::count(spec.source.begin(), spec.source.end(), '\n')) +
                         (spec.source.empty() || spec.source.back() == '\n' ? 0 : 1);
  std::string out;
  auto it = message.cbegin();
  for (std::smatch m; std::regex_search(it, message.cend(), m, at); it = m.suffix().first) {
    out.append(it, m.prefix().second);
    const uint32_t line = uint32_t(std::stoul(m[1].str()));
    if (line >= first && line < first + lines)
      out += spec.origin + ":" + std::to_string(line - first + 1) + ":" + m[2].str() + ": WGSL error: ";
    else
      out += "simulation '" + spec.name + "': WGSL error in wgfuse's part of the generated module (line " +
             m[1].str() + ", column " + m[2].str() + " of `wgfuse sim " + spec.origin + " --dump-wgsl" +
             (s == Strategy::Team ? " --mode team" : "") + "`): ";
  }
  out.append(it, message.cend());
  return out;
}

SimProgram::SimProgram(gpu::Context& ctx, SimDefinition spec, uint32_t pop, uint32_t steps,
                       uint32_t genome_len, uint32_t seed, std::span<const float> data, uint32_t data_stride,
                       uint32_t episodes, uint32_t team)
    : ctx_(&ctx),
      spec_(fit_team_workgroup(ctx, std::move(spec))),
      params_{.pop = pop,
              .steps = steps,
              .genome_len = genome_len,
              .seed = seed,
              .data_stride = data_stride,
              .generation = 0,
              .episodes = episodes,
              .pad0 = 0} {
  if (pop == 0 || steps == 0 || genome_len == 0 || episodes == 0)
    throw Error("simulation '" + spec_.name +
                "': population, steps, genome length and episodes must be positive");
  if (episodes > kMaxEpisodes)
    throw Error("simulation '" + spec_.name + "': " + std::to_string(episodes) +
                " episodes, over the limit of " + std::to_string(kMaxEpisodes));
  const auto& lim = ctx.limits();
  for (uint32_t wg : {spec_.workgroup_size, workgroup_size(spec_, Strategy::Team)}) {
    const uint32_t top =
        std::min(lim.max_compute_invocations_per_workgroup, lim.max_compute_workgroup_size_x);
    if (wg == 0 || (wg & (wg - 1)) != 0 || wg > top)
      throw Error("simulation '" + spec_.name + "': workgroup size " + std::to_string(wg) +
                  " must be a power of two from 1 to " + std::to_string(top) +
                  " (the device's maxComputeInvocationsPerWorkgroup and maxComputeWorkgroupSizeX)");
  }
  check_team(ctx, spec_, team);
  team_ = team;
  groups_ = (pop + spec_.workgroup_size - 1) / spec_.workgroup_size;
  if (groups_ > lim.max_compute_workgroups_per_dimension)
    throw Error("simulation '" + spec_.name + "': population " + std::to_string(pop) + " needs " +
                std::to_string(groups_) + " workgroups of " + std::to_string(spec_.workgroup_size) +
                ", over the device's maxComputeWorkgroupsPerDimension (" +
                std::to_string(lim.max_compute_workgroups_per_dimension) + ")");
  slot_bytes_ = fuse::slot_bytes(spec_);
  uint64_t slot_total = uint64_t(pop) * slot_bytes_;
  if (slot_total > lim.max_storage_buffer_binding_size)
    throw Error("simulation '" + spec_.name + "': the state of " + std::to_string(pop) + " individuals (" +
                std::to_string(slot_total) + " bytes) is over the device's maxStorageBufferBindingSize (" +
                std::to_string(lim.max_storage_buffer_binding_size) + ")");
  if (!data.empty() && (data_stride == 0 || data_stride % 4 != 0 || data.size() % data_stride != 0))
    throw Error("simulation '" + spec_.name + "': its data stride (" + std::to_string(data_stride) +
                " f32) must be a positive multiple of 4 (kernels read records as vec4) dividing its " +
                std::to_string(data.size()) + " f32");
  uint64_t data_bytes = data.size_bytes();
  if (data_bytes > lim.max_storage_buffer_binding_size)
    throw Error("simulation '" + spec_.name + "': its data (" + std::to_string(data_bytes) +
                " bytes) is over the device's maxStorageBufferBindingSize (" +
                std::to_string(lim.max_storage_buffer_binding_size) + ")");
  source_ = generated_source(spec_, Strategy::Fused);
  if (ctx.features().subgroups) team_source_ = generated_source(spec_, Strategy::Team);
  params_buf_ = ctx.upload<SimParams>(std::span<const SimParams>(&params_, 1), gpu::BufferUsage::Uniform,
                                      spec_.name + ".params");
  if (data.empty()) {
    const float zeros[4] = {};  // one vec4: the smallest binding of sim_data
    data_ =
        ctx.upload<float>(std::span<const float>(zeros), gpu::BufferUsage::Storage, spec_.name + ".nodata");
  } else {
    data_ = ctx.upload<float>(data, gpu::BufferUsage::Storage, spec_.name + ".data");
  }
}

void SimProgram::set_generation(uint32_t g) {
  if (g == params_.generation) return;
  params_.generation = g;
  ctx_->write(params_buf_, 0, std::as_bytes(std::span<const SimParams>(&params_, 1)));
}

void SimProgram::record_generation(gpu::Recorder& rec, uint32_t g) {
  params_.generation = g;
  if (!params_ring_)
    params_ring_ =
        ctx_->buffer(kParamsRing * sizeof(SimParams), gpu::BufferUsage::CopySrc | gpu::BufferUsage::CopyDst,
                     spec_.name + ".params_ring");
  const uint64_t at = uint64_t(g % kParamsRing) * sizeof(SimParams);
  ctx_->write(params_ring_, at, std::as_bytes(std::span<const SimParams>(&params_, 1)));
  rec.copy(params_ring_, at, params_buf_, 0, sizeof(SimParams));
}

void SimProgram::ensure_slots() {
  if (slots_ && slots_.size() >= uint64_t(params_.pop) * slot_bytes_) return;
  slots_ =
      ctx_->buffer(uint64_t(params_.pop) * slot_bytes_, gpu::BufferUsage::StorageIO, spec_.name + ".slots");
}

void SimProgram::compile() {
  if (init_) return;
  auto overrides = [&](Strategy s) {
    auto o = spec_.overrides;
    o["WORKGROUP_SIZE"] = double(workgroup_size(spec_, s));
    if (row(s).grid == Grid::PerTeam) o["TEAM"] = double(team_);
    return o;
  };
  // A WGSL error is told at the line of the definition's file where it lies there.
  auto kernel = [&](std::string_view entry, Strategy s = Strategy::Fused) {
    const bool team = row(s).grid == Grid::PerTeam;
    try {
      return &ctx_->kernel({"sim." + spec_.name + (team ? ".team" : ""), team ? team_source_ : source_,
                            std::string(entry), overrides(s)});
    } catch (const Error& e) {
      throw Error(locate_wgsl_error(spec_, s, e.what()));
    }
  };
  init_ = kernel(kInitEntry);
  fitness_ = kernel(kFitnessEntry);
  next_episode_ = kernel(kNextEpisodeEntry);
  for (auto& r : strategies()) {
    if (entries_.count(r.entry) || !offered(*ctx_, r.id)) continue;
    entries_[r.entry] = kernel(r.entry, r.grid == Grid::PerTeam ? r.id : Strategy::Fused);
  }
}

gpu::BindGroup SimProgram::group(const gpu::Kernel& k, const gpu::Buffer& genomes,
                                 const gpu::Buffer& fitness) {
  // The fused strategy never touches the slots: without per-step runs, bind one slot's worth.
  if (!slots_ && !no_slots_)
    no_slots_ = ctx_->buffer(slot_bytes_, gpu::BufferUsage::StorageIO, spec_.name + ".noslots");
  return ctx_->bind(k, {params_buf_, genomes, data_, fitness, slots_ ? slots_ : no_slots_});
}

uint64_t SimProgram::dispatches(Strategy s) const {
  return dispatch_count(s, params_.steps, params_.episodes);
}

gpu::Plan& SimProgram::plan(Strategy s, const gpu::Buffer& genomes, const gpu::Buffer& fitness) {
  const auto& r = row(s);
  require_offered(*ctx_, s);
  // Strategies that differ only in how they wait (per-step, batched) share one plan.
  for (auto& other : strategies())
    if (other.entry == r.entry && other.dispatches == r.dispatches && other.grid == r.grid) {
      s = other.id;
      break;
    }
  const auto key = std::tuple{s, genomes.id(), fitness.id()};
  if (auto it = plans_.find(key); it != plans_.end()) return it->second;
  compile();
  if (plans_.size() >= 8) plans_.clear();
  gpu::Plan p(*ctx_, "sim." + spec_.name + "." + to_string(s));
  uint32_t groups = groups_;
  if (r.grid == Grid::PerTeam) {
    const uint64_t invocations = uint64_t(params_.pop) * team_;
    const uint32_t wg = workgroup_size(spec_, s);
    groups = uint32_t((invocations + wg - 1) / wg);
    if (groups > ctx_->limits().max_compute_workgroups_per_dimension)
      throw Error("simulation '" + spec_.name + "': population " + std::to_string(params_.pop) +
                  " in teams of " + std::to_string(team_) + " needs " + std::to_string(groups) +
                  " workgroups of " + std::to_string(wg) +
                  ", over the device's maxComputeWorkgroupsPerDimension (" +
                  std::to_string(ctx_->limits().max_compute_workgroups_per_dimension) + ")");
  }
  const gpu::Kernel& k = *entries_.at(r.entry);
  if (r.dispatches == Dispatches::One) {
    p.dispatch(k, group(k, genomes, fitness), {groups});
  } else {
    ensure_slots();
    p.dispatch(*init_, group(*init_, genomes, fitness), {groups});
    const auto step_group = group(k, genomes, fitness);
    const auto next_group = group(*next_episode_, genomes, fitness);
    for (uint32_t e = 0; e < params_.episodes; ++e) {
      if (e > 0) p.dispatch(*next_episode_, next_group, {groups});
      for (uint32_t t = 0; t < params_.steps; ++t) p.dispatch(k, step_group, {groups});
    }
    p.dispatch(*fitness_, group(*fitness_, genomes, fitness), {groups});
  }
  p.build();
  return plans_.emplace(key, std::move(p)).first->second;
}

void SimProgram::record_init_and_steps(gpu::Recorder& rec, const gpu::Buffer& genomes, uint32_t n) {
  // The fitness binding is unused by init and step; the genomes buffer cannot stand in (read-only
  // and read-write use of one buffer in a dispatch is invalid), so bind a placeholder.
  if (!no_fitness_) no_fitness_ = ctx_->buffer(4, gpu::BufferUsage::StorageIO, spec_.name + ".nofitness");
  auto& p = plan(Strategy::Batched, genomes, no_fitness_);
  p.encode(rec, 0, 1);                                   // init
  for (uint32_t t = 0; t < n; ++t) p.encode(rec, 1, 1);  // a step
}

EvalCounts SimProgram::evaluate(Strategy strategy, gpu::Recorder& rec, const gpu::Buffer& genomes,
                                const gpu::Buffer& fitness) {
  auto& p = plan(strategy, genomes, fitness);
  EvalCounts c;
  c.dispatches = p.dispatches();
  if (!row(strategy).wait_each_dispatch) {
    p.encode(rec);
    return c;
  }
  // Submit and wait after init and after every step; the fitness dispatch is only recorded.
  for (size_t i = 0; i + 1 < p.steps(); ++i) {
    p.encode(rec, i, 1);
    rec.submit();
    ++c.submits;
    ctx_->wait();
  }
  p.encode(rec, p.steps() - 1, 1);
  return c;
}

}  // namespace wgfuse::fuse
