#include "sim/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>

#include "gpu/profiler.h"
#include "gpu/recorder.h"
#include "sim/reference.h"
#include "util/error.h"

namespace wgfuse::sim {

using fuse::Strategy;

namespace {

// |x - y| / max(|x|, |y|): 0 where equal (or both NaN), infinite where one alone is NaN.
double relative_difference(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y) ? 0.0 : INFINITY;
  const double den = std::max(std::abs(x), std::abs(y));
  return x == y ? 0.0 : (den > 0 ? std::abs(x - y) / den : INFINITY);
}

}  // namespace

Agreement compare_fitness(const std::vector<float>& a, const std::vector<float>& b, double rtol) {
  if (a.size() != b.size()) throw Error("compare_fitness: sizes differ");
  Agreement r;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], 4) != 0) r.bitwise = false;
    const double rel = relative_difference(a[i], b[i]);
    r.max_rel = std::max(r.max_rel, rel);
    if (!(rel <= rtol)) {
      if (r.first_over < 0) r.first_over = int64_t(i);
      ++r.over;
    }
  }
  return r;
}

OverJudged judge_over(const Workload& w, std::span<const float> genomes, uint32_t steps, const Starts& starts,
                      std::span<const float> data, const std::vector<float>& perstep,
                      const std::vector<float>& other, double rtol) {
  OverJudged j;
  j.over = compare_fitness(perstep, other, rtol).over;
  if (j.over > kMaxJudged) {
    j.judged = false;
    return j;
  }
  if (!w.reference) {  // nothing to judge them by
    j.wrong = j.over;
    return j;
  }
  const size_t len = w.genome_length(steps);
  for (size_t i = 0; i < perstep.size() && j.over; ++i) {
    const double a = perstep[i], b = other[i];
    // Within rtol as compare_fitness measures it; a NaN is always judged (even on both sides).
    if (!std::isnan(a) && relative_difference(a, b) <= rtol) continue;
    const auto genome = genomes.subspan(i * len, len);
    const double ref = reference_fitness(w, genome, steps, starts, data, uint32_t(i));
    const double tol = std::max(w.reference_atol, w.reference_rtol * std::abs(ref));
    if (std::abs(b - ref) <= tol) {
      ++j.near_reference;
      continue;
    }
    // Four nudges: signs alternating, then three hashed patterns (one direction can miss).
    bool sensitive = std::abs(a - ref) > tol;
    for (uint32_t probe = 0; probe < 4 && !sensitive; ++probe) {
      std::vector<float> nudged(genome.begin(), genome.end());
      for (size_t k = 0; k < len; ++k) {
        const uint32_t bit = probe == 0 ? uint32_t(k) : uint32_t(k * 2654435761u) >> (probe + 6);
        nudged[k] *= bit & 1 ? 1.0f + 0x1p-20f : 1.0f - 0x1p-20f;
      }
      const double mv = reference_fitness(w, nudged, steps, starts, data, uint32_t(i));
      sensitive = std::abs(mv - ref) > tol;
    }
    if (sensitive)
      ++j.sensitive;
    else
      ++j.wrong;
  }
  return j;
}

std::vector<float> gene_major(const std::vector<float>& genomes, uint32_t pop, uint32_t len) {
  std::vector<float> out(genomes.size());
  for (uint32_t i = 0; i < pop; ++i)
    for (uint32_t k = 0; k < len; ++k) out[size_t(k) * pop + i] = genomes[size_t(i) * len + k];
  return out;
}

SimRunner::SimRunner(gpu::Context& ctx, const Workload& w, uint32_t pop, uint32_t steps, uint32_t seed,
                     uint32_t episodes, uint32_t team, uint32_t workgroup,
                     std::map<std::string, double> overrides)
    : ctx_(&ctx),
      w_(&w),
      spec_(w.spec),
      pop_(pop),
      steps_(steps),
      seed_(seed),
      episodes_(episodes),
      team_(team),
      genome_len_(w.genome_length(steps)) {
  if (workgroup) spec_.workgroup_size = spec_.team_workgroup_size = workgroup;
  for (auto& [name, value] : overrides) spec_.overrides[name] = value;
  if (pop < 2) throw Error("population must be at least 2");
  if (steps < 1) throw Error("steps must be at least 1");
  const auto& lim = ctx.limits();
  if (genome_bytes() > lim.max_storage_buffer_binding_size)
    throw Error(
        w.name + ": population " + std::to_string(pop) + " x " + std::to_string(genome_len_) + " genes (" +
        std::to_string(genome_bytes()) + " bytes) is over the device's " + "maxStorageBufferBindingSize (" +
        std::to_string(lim.max_storage_buffer_binding_size) + "): lower --pop to at most " +
        std::to_string(lim.max_storage_buffer_binding_size / (uint64_t(genome_len_) * sizeof(float))));
  if (w.data) data_ = w.data(steps, seed);
  auto cfg = w.ga;
  cfg.seed = seed;
  evo_ = std::make_unique<Evolution>(ctx, pop, genome_len_, cfg);
  program(steps);  // checks the sizes against the device before anything big is allocated
  initial_ = sim::initial_genomes(w, pop, steps, seed);
  initial_device_ = gene_major(initial_, pop, genome_len_);
  for (int i = 0; i < 2; ++i)
    genomes_[i] =
        ctx.buffer(genome_bytes(), gpu::BufferUsage::StorageIO, w.name + ".genomes" + std::to_string(i));
  fitness_ = ctx.buffer(uint64_t(pop) * 4, gpu::BufferUsage::StorageIO, w.name + ".fitness");
}

fuse::SimProgram& SimRunner::program(uint32_t steps) {
  auto& p = programs_[steps];
  if (!p) {
    std::span<const float> data;
    uint32_t stride = 0;
    if (data_.device_stride) {
      data = std::span<const float>(data_.device).first(size_t(steps) * data_.device_stride);
      stride = data_.device_stride;
    }
    p = std::make_unique<fuse::SimProgram>(*ctx_, spec_, pop_, steps, w_->genome_length(steps), seed_, data,
                                           stride, episodes_, team_);
  }
  return *p;
}

void SimRunner::compile() {
  program(steps_).compile();
  evo_->compile();
}

std::vector<float> SimRunner::evaluate_initial(Strategy s, uint32_t steps, uint32_t generation) {
  if (steps == 0) steps = steps_;
  if (w_->genome_length(steps) != genome_len_)
    throw Error(w_->name +
                ": the genome length is the step count, so it cannot be evaluated at other lengths");
  ctx_->write(genomes_[0], 0, std::as_bytes(std::span<const float>(initial_device_)));
  // NaN first: an individual the strategy did not write cannot keep an earlier evaluation's
  // value and pass a comparison.
  const std::vector<float> nan(pop_, std::numeric_limits<float>::quiet_NaN());
  ctx_->write(fitness_, 0, std::as_bytes(std::span<const float>(nan)));
  auto& prog = program(steps);
  prog.set_generation(generation);
  gpu::Recorder rec(*ctx_);
  prog.evaluate(s, rec, genomes_[0], fitness_);
  rec.submit();
  return ctx_->read<float>(fitness_, 0, pop_);
}

double SimRunner::evaluation_us_back_to_back(Strategy s, uint32_t count) {
  if (fuse::row(s).wait_each_dispatch)
    throw Error("evaluations back to back: strategy '" + fuse::to_string(s) + "' waits after every dispatch");
  if (count == 0) throw Error("evaluations back to back: a count of 0");
  gpu::Profiler prof(*ctx_, 1);
  if (!prof.enabled()) return 0;
  // Copies of the population taken in turn, 256 MB in all (4 MB on a CPU) but at most 6
  // (SimProgram caches 8 plans): back to back over one copy, a population that fits in the GPU's
  // L2 is read from there, not from memory as the copy kernel's 256 MB are. (Six copies of a
  // population under ~10 MB still fit in an H100's 50 MB L2: the rate is then L2's.)
  const uint64_t bytes = genome_bytes();
  const uint64_t total = ctx_->adapter().is_cpu ? 4u << 20 : 256u << 20;
  const uint32_t copies = uint32_t(std::clamp<uint64_t>((total + bytes - 1) / bytes, 1, 6));
  std::vector<gpu::Buffer> populations;
  for (uint32_t k = 0; k < copies; ++k)
    populations.push_back(
        ctx_->upload<float>(initial_device_, gpu::BufferUsage::StorageIO, w_->name + ".copy"));
  auto& prog = program(steps_);
  prog.set_generation(0);
  gpu::Recorder rec(*ctx_);
  rec.time_next_pass(prof);
  for (uint32_t i = 0; i < count; ++i) prog.evaluate(s, rec, populations[i % copies], fitness_);
  rec.end_pass();
  prof.resolve(rec);
  rec.submit();
  const auto ns = prof.read_ns();
  return ns.empty() ? 0 : ns[0] / 1e3 / count;
}

ModeRun SimRunner::run(Strategy s, uint32_t generations,
                       const std::function<void(uint32_t, const GenerationStats&, double)>& progress,
                       uint32_t in_flight, uint32_t per_submit, bool ga_kernels) {
  if (per_submit < 1 || per_submit > kMaxPerSubmit)
    throw Error("generations per submit: " + std::to_string(per_submit) + ", want 1 to " +
                std::to_string(kMaxPerSubmit));
  ModeRun out;
  out.strategy = s;
  // Per-step waits after every dispatch, so it runs one generation at a time.
  const bool one_at_a_time = fuse::row(s).wait_each_dispatch;
  const uint32_t depth = one_at_a_time ? 1 : std::max(1u, in_flight);
  const uint32_t batch = one_at_a_time ? 1 : per_submit;
  out.in_flight = depth;
  out.per_submit = batch;
  auto& prog = program(steps_);
  // Timed passes of a generation: the evaluation, then the GA (one pass, or one per kernel).
  const uint32_t passes = 1 + (ga_kernels ? Evolution::kKernels : 1);
  const uint64_t ticks_bytes = 16ull * passes;  // begin and end of each
  const uint64_t stats_bytes = Evolution::kStatsBytes * batch;
  // Per slot of the pipeline (one command buffer of `batch` generations): timestamps of their
  // passes and a staging buffer that receives each generation's GA statistics, then all the
  // timestamps, read once the command buffer is done.
  std::vector<std::unique_ptr<gpu::Profiler>> profs;
  std::vector<gpu::Buffer> staging;
  for (uint32_t k = 0; k < depth; ++k) {
    profs.push_back(std::make_unique<gpu::Profiler>(*ctx_, passes * batch));
    staging.push_back(ctx_->buffer(stats_bytes + ticks_bytes * batch,
                                   gpu::BufferUsage::MapRead | gpu::BufferUsage::CopyDst,
                                   w_->name + ".readback" + std::to_string(k)));
  }
  const bool timed_gpu = profs[0]->enabled() && s != Strategy::PerStep;
  // Records generations first .. first + count - 1 (genomes[cur] -> genomes[1 - cur], then
  // back) into pipeline slot `slot` and submits them as one command buffer. One generation per
  // submit writes the params of the evaluation and the GA with queue writes (ordered with the
  // submits, so the generations in flight keep theirs); several copy them from rings inside the
  // command buffer, both before the evaluation.
  uint32_t dispatches = 0, submits = 0;
  auto submit_generations = [&](uint32_t first, uint32_t count, int cur, uint32_t slot) {
    gpu::Recorder rec(*ctx_);
    dispatches = submits = 0;
    for (uint32_t i = 0; i < count; ++i, cur = 1 - cur) {
      const uint32_t g = first + i;
      if (batch > 1) {
        prog.record_generation(rec, g);  // this generation's start states
        evo_->record_params(rec, g);
      } else {
        prog.set_generation(g);
      }
      if (timed_gpu) rec.time_next_pass(*profs[slot]);
      auto c = prog.evaluate(s, rec, genomes_[cur], fitness_);
      rec.end_pass();  // the evaluation in its own pass, the GA in the next, each timed
      if (timed_gpu && !ga_kernels) rec.time_next_pass(*profs[slot]);
      dispatches += c.dispatches +
                    evo_->record(rec, g, fitness_, genomes_[cur], genomes_[1 - cur],
                                 timed_gpu && ga_kernels ? profs[slot].get() : nullptr,
                                 batch > 1 ? Evolution::Params::Recorded : Evolution::Params::QueueWrite);
      submits += c.submits;
      evo_->copy_stats(rec, staging[slot], Evolution::kStatsBytes * i);
    }
    if (timed_gpu) profs[slot]->resolve_to(rec, staging[slot], stats_bytes);
    rec.submit();
    out.dispatches_per_generation = dispatches / count;
    out.submits_per_generation = (submits + 1 + count - 1) / count;  // rounded up (see ModeRun)
  };
  // Waits for the command buffer in `slot` only (not for those submitted after it): the
  // statistics of its `count` generations, and their raw timestamps (ns: begin and end of each
  // timed pass, generation after generation) into `ticks` where timed.
  auto collect = [&](uint32_t slot, uint32_t count, std::vector<uint64_t>* ticks) {
    auto bytes = ctx_->map_read(staging[slot], stats_bytes + (timed_gpu ? ticks_bytes * count : 0));
    std::vector<GenerationStats> st;
    for (uint32_t i = 0; i < count; ++i)
      st.push_back(Evolution::decode_stats(std::span(bytes).subspan(Evolution::kStatsBytes * i)));
    if (timed_gpu && ticks) {
      ticks->resize(2 * passes * count);
      std::memcpy(ticks->data(), bytes.data() + stats_bytes, ticks_bytes * count);
    }
    return st;
  };
  auto ms_between = [](uint64_t from, uint64_t to) { return to >= from ? double(to - from) / 1e6 : 0.0; };
  // Warm-up: first use of pipelines and of every slot's buffers, discarded.
  for (uint32_t slot = 0; slot < depth; ++slot) {
    ctx_->write(genomes_[0], 0, std::as_bytes(std::span<const float>(initial_device_)));
    submit_generations(0, batch, 0, slot);
    collect(slot, batch, nullptr);
  }
  ctx_->write(genomes_[0], 0, std::as_bytes(std::span<const float>(initial_device_)));
  ctx_->wait();
  // Up to `depth` command buffers in flight: batch b + depth - 1 is submitted before b is read,
  // so that the host's recording, submit and read-back overlap the GPU's work. A generation's
  // time is the interval between the read-backs of its command buffer's predecessor and its own,
  // over the generations in it.
  const uint32_t batches = (generations + batch - 1) / batch;
  auto count_of = [&](uint32_t b) { return std::min(batch, generations - b * batch); };
  auto last = std::chrono::steady_clock::now();
  uint64_t previous_end = 0;  // the last timestamp of the generation read before
  uint32_t submitted = 0;
  int cur = 0;
  for (uint32_t b = 0; b < batches; ++b) {
    for (; submitted < batches && submitted < b + depth; ++submitted) {
      submit_generations(submitted * batch, count_of(submitted), cur, submitted % depth);
      if (count_of(submitted) % 2) cur = 1 - cur;
    }
    std::vector<uint64_t> ticks;
    const auto stats = collect(b % depth, count_of(b), &ticks);
    const auto now = std::chrono::steady_clock::now();
    const double sec = std::chrono::duration<double>(now - last).count() / double(stats.size());
    last = now;
    for (uint32_t i = 0; i < stats.size(); ++i) {
      const uint32_t g = b * batch + i;
      out.seconds.push_back(sec);
      out.stats.push_back(stats[i]);
      if (!ticks.empty()) {
        const uint64_t* t = ticks.data() + 2 * passes * i;
        out.gpu_eval_ms.push_back(ms_between(t[0], t[1]));
        out.gpu_ga_ms.push_back(ms_between(t[2], t[2 * passes - 1]));
        out.gpu_between_passes_ms.push_back(ms_between(t[1], t[2]));
        if (g > 0) out.gpu_between_generations_ms.push_back(ms_between(previous_end, t[0]));
        previous_end = t[2 * passes - 1];
        if (ga_kernels) {
          auto& k = out.gpu_ga_kernel_ms.emplace_back();
          for (uint32_t j = 0; j < Evolution::kKernels; ++j) k[j] = ms_between(t[2 + 2 * j], t[3 + 2 * j]);
        }
      }
      if (progress) progress(g, stats[i], sec);
    }
  }
  return out;
}

ReferenceCheck SimRunner::check_reference(Strategy s, uint32_t samples) {
  ReferenceCheck r;
  r.horizon = std::min(steps_, w_->reference_horizon);
  r.samples = std::min(samples, pop_);
  auto got = evaluate_initial(s, r.horizon);
  for (uint32_t k = 0; k < r.samples; ++k) {
    uint32_t i = uint32_t(uint64_t(k) * pop_ / r.samples);
    std::span<const float> genome(initial_.data() + size_t(i) * genome_len_, genome_len_);
    auto ref = reference_run(*w_, genome, r.horizon, starts(), data_.records, i);
    double want = ref.fitness;
    double err = std::abs(double(got[i]) - want);
    double rel = want != 0 ? err / std::abs(want) : (err == 0 ? 0 : INFINITY);
    if (err <= std::max(w_->reference_atol, w_->reference_rtol * std::abs(want))) {
      ++r.agree;
      r.max_abs = std::max(r.max_abs, err);
      r.max_rel = std::max(r.max_rel, rel);
    } else if (ref.min_margin < w_->boundary_margin) {
      ++r.at_boundary;
      r.max_boundary_margin = std::max(r.max_boundary_margin, ref.min_margin);
    } else if (r.first_bad < 0) {
      r.first_bad = i;
      r.got = got[i];
      r.want = want;
      r.margin = ref.min_margin;
    }
  }
  return r;
}

}  // namespace wgfuse::sim
