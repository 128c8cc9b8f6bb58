#include "bench/barrier_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "gpu/kernel.h"
#include "gpu/profiler.h"
#include "gpu/recorder.h"
#include "util/clock.h"
#include "util/error.h"

namespace wgfuse::bench {
namespace {

using gpu::Buffer;
using gpu::BufferUsage;

// Mirrors kernels/bench_barrier.wgsl.
constexpr uint32_t kFailedWord = 1, kFlagsWord = 32, kFlagStride = 8;
constexpr uint32_t kTimedSpinLimit = 1u << 22;

uint32_t stored_word(uint32_t i, uint32_t k) {
  return (i * 2654435761u) ^ (k * 40503u + 1u);
}
uint32_t source_of(uint32_t i, uint32_t k, uint32_t r, uint32_t n, uint32_t wg) {
  return uint32_t((uint64_t(i) + uint64_t(wg) * (r + 1) + uint64_t(k) * 13) % n);
}
uint32_t lcg(uint32_t x) {
  return x * 1664525u + 1013904223u;
}

struct Grid {
  gpu::Context& ctx;
  const BarrierConfig& cfg;
  uint32_t groups;
  uint32_t n() const { return groups * cfg.workgroup_size; }
};

// What one timed run leaves behind: `ctl`'s failure word and the per-invocation words.
struct Buffers {
  Buffer ctl, ctl_zeros, out, out_init, shared;
};

Buffers make_buffers(Grid& g, const std::vector<uint32_t>& out_init) {
  const uint64_t ctl_words = kFlagsWord + uint64_t(g.groups) * kFlagStride;
  std::vector<uint32_t> zeros(ctl_words, 0);
  auto io = BufferUsage::StorageIO;
  return {g.ctx.upload<uint32_t>(zeros, io, "barrier.ctl"),
          g.ctx.upload<uint32_t>(zeros, io, "barrier.ctl_zeros"),
          g.ctx.upload<uint32_t>(out_init, io, "barrier.out"),
          g.ctx.upload<uint32_t>(out_init, io, "barrier.out_init"),
          g.ctx.buffer(8ull * g.n(), io, "barrier.shared")};
}

gpu::Kernel& kernel(Grid& g, const std::string& entry, uint32_t barriers, uint32_t spin_limit) {
  return g.ctx.kernel(gpu::embedded_kernel("bench_barrier", entry,
                                           {{"WG", g.cfg.workgroup_size},
                                            {"BARRIERS", barriers},
                                            {"SPIN_LIMIT", spin_limit},
                                            {"READS", g.cfg.reads},
                                            {"FLAG_STRIDE", kFlagStride}}));
}

// Resets the control words and `out`, then runs `dispatches` dispatches of `k` in one pass, timed;
// returns µs (GPU timestamps where the adapter has them, else wall clock of submit and wait).
double timed_run(Grid& g, gpu::Profiler& prof, Buffers& b, gpu::Kernel& k, const gpu::BindGroup& group,
                 uint32_t dispatches) {
  gpu::Recorder rec(g.ctx);
  rec.copy(b.ctl_zeros, 0, b.ctl, 0, b.ctl.size());
  rec.copy(b.out_init, 0, b.out, 0, b.out.size());
  rec.submit();
  g.ctx.wait();
  const auto t0 = SteadyClock::now();
  if (prof.enabled()) rec.time_next_pass(prof);
  for (uint32_t i = 0; i < dispatches; ++i) rec.dispatch(k, group, g.groups);
  if (prof.enabled()) prof.resolve(rec);
  rec.submit();
  g.ctx.wait();
  const double wall_us = ms_since(t0) * 1000.0;
  if (!prof.enabled()) return wall_us;
  const auto ns = prof.read_ns();
  if (ns.empty()) throw Error("barrier benchmark: the timed pass returned no timestamps");
  return ns[0] / 1000.0;
}

// True when `groups` workgroups all met one counter barrier within the probe's spin limit.
bool co_resident(Grid& g, gpu::Profiler& prof) {
  Buffers b = make_buffers(g, std::vector<uint32_t>(g.n(), 0));
  auto& k = kernel(g, "counter", 1, g.cfg.probe_spin);
  timed_run(g, prof, b, k, g.ctx.bind(k, {b.ctl}), 1);
  return g.ctx.read<uint32_t>(b.ctl, kFailedWord, 1)[0] == 0;
}

BarrierResult measure(Grid& g, gpu::Profiler& prof, const std::string& design) {
  const uint32_t n = g.n(), K = g.cfg.barriers, wg = g.cfg.workgroup_size;
  const bool is_dispatch = design == "dispatch", exchange = design.starts_with("exchange");
  std::vector<uint32_t> init(n, 0);
  if (is_dispatch) {
    std::mt19937 rng(11);
    for (auto& v : init) v = rng();
  }
  Buffers b = make_buffers(g, init);
  const std::string entry = is_dispatch ? "step" : design;
  // "dispatch" times K + 1 dispatches of the step against one; the others one dispatch of K
  // barriers against one of none.
  auto& base = kernel(g, entry, 0, kTimedSpinLimit);
  auto& with = is_dispatch ? base : kernel(g, entry, K, kTimedSpinLimit);
  auto bind = [&](gpu::Kernel& k) {
    if (is_dispatch) return g.ctx.bind(k, {b.out});
    if (exchange) return g.ctx.bind(k, {b.ctl, b.out, b.shared});
    return g.ctx.bind(k, {b.ctl});
  };
  const auto base_group = bind(base), with_group = bind(with);

  // What `out` must hold after a run with K barriers (K + 1 steps).
  std::vector<uint32_t> want(n, 0);
  for (uint32_t i = 0; i < n; ++i) {
    if (is_dispatch) {
      want[i] = init[i];
      for (uint32_t s = 0; s <= K; ++s) want[i] = lcg(want[i]);
    } else if (exchange) {
      for (uint32_t k = 0; k < K; ++k)
        for (uint32_t r = 0; r < g.cfg.reads; ++r) want[i] += stored_word(source_of(i, k, r, n, wg), k);
    }
  }

  BarrierResult r{.design = design, .workgroups = g.groups};
  std::vector<double> base_us, with_us;
  uint32_t wrong_runs = 0, failed_runs = 0;
  for (uint32_t rep = 0; rep < g.cfg.reps + 1; ++rep) {  // the first of each is a warm-up
    const double tb = timed_run(g, prof, b, base, base_group, 1);
    const double tw = timed_run(g, prof, b, with, with_group, is_dispatch ? K + 1 : 1);
    if (!is_dispatch && g.ctx.read<uint32_t>(b.ctl, kFailedWord, 1)[0] != 0) ++failed_runs;
    if ((is_dispatch || exchange) && g.ctx.read_all<uint32_t>(b.out) != want) ++wrong_runs;
    if (rep == 0) continue;
    base_us.push_back(tb);
    with_us.push_back(tw);
  }
  r.base_us = summarize(base_us);
  r.with_us = summarize(with_us);
  std::vector<double> per;
  for (double t : with_us) per.push_back((t - r.base_us.median) / K);
  r.per_barrier_us = summarize(per);
  if (failed_runs)
    r.failure = std::to_string(failed_runs) + " of " + std::to_string(g.cfg.reps + 1) +
                " runs had a waiter give up at a barrier";
  else if (wrong_runs)
    r.failure = std::to_string(wrong_runs) + " of " + std::to_string(g.cfg.reps + 1) +
                " runs read a value other than the one stored before the barrier";
  r.passed = r.failure.empty();
  return r;
}

}  // namespace

BarrierConfig BarrierConfig::quick_config() {
  BarrierConfig c;
  // One workgroup: SwiftShader runs workgroups on CPU threads and does not keep two co-resident
  // reliably, so a grid of two may time out at a barrier (reported as a failed check).
  c.workgroups = {1};
  c.workgroup_size = 64;
  c.barriers = 8;
  c.reps = 3;
  c.probe_spin = 1u << 20;  // SwiftShader runs workgroups on CPU threads: a waiter may wait long
  return c;
}

BarrierConfig BarrierConfig::default_for(const gpu::AdapterInfo& adapter) {
  if (adapter.is_cpu) return quick_config();
  BarrierConfig c;
  c.workgroups = {1, 32, 66, 132, 264, 528};
  return c;
}

BarrierReport run_barrier_bench(gpu::Context& ctx, const BarrierConfig& cfg,
                                const std::function<void(const std::string&)>& progress) {
  if (cfg.barriers == 0) throw Error("barrier benchmark: --barriers must be at least 1");
  BarrierReport report{.config = cfg, .date_utc = utc_now()};
  gpu::Profiler prof(ctx, 1);
  report.gpu_timestamps = prof.enabled();
  for (uint32_t groups : cfg.workgroups) {
    Grid g{ctx, cfg, groups};
    progress("probing " + std::to_string(groups) + " workgroups");
    if (!co_resident(g, prof)) {
      report.not_co_resident.push_back(groups);
      continue;
    }
    for (const char* design : {"counter", "flags", "exchange_atomic", "exchange_plain", "dispatch"}) {
      progress(std::string(design) + ", " + std::to_string(groups) + " workgroups");
      report.results.push_back(measure(g, prof, design));
    }
  }
  return report;
}

nlohmann::json to_json(const BarrierReport& r, const nlohmann::json& adapter) {
  auto summary = [](const Summary& s) {
    return nlohmann::json{{"median", s.median}, {"min", s.min}, {"max", s.max}};
  };
  nlohmann::json results = nlohmann::json::array();
  for (auto& x : r.results)
    results.push_back({{"design", x.design},
                       {"workgroups", x.workgroups},
                       {"base_us", summary(x.base_us)},
                       {"with_barriers_us", summary(x.with_us)},
                       {"per_barrier_us", summary(x.per_barrier_us)},
                       {"passed", x.passed},
                       {"failure", x.failure}});
  return {{"schema", "wgfuse.barrier/1"},
          {"date_utc", r.date_utc},
          {"adapter", adapter},
          {"timing", r.gpu_timestamps ? "gpu timestamps" : "wall clock"},
          {"workgroup_size", r.config.workgroup_size},
          {"barriers", r.config.barriers},
          {"reads", r.config.reads},
          {"reps", r.config.reps},
          {"not_co_resident", r.not_co_resident},
          {"results", results}};
}

std::string to_table(const BarrierReport& r, const gpu::AdapterInfo& adapter) {
  std::string s = "Grid barriers on " + adapter.device + " (" + adapter.backend + "), workgroups of " +
                  std::to_string(r.config.workgroup_size) + ", K = " + std::to_string(r.config.barriers) +
                  ", " + (r.gpu_timestamps ? "GPU timestamps" : "wall clock") + ", median of " +
                  std::to_string(r.config.reps) + "\n";
  s += "dispatch: K dependent dispatches of the same grid in one pass, per dispatch\n\n";
  char line[200];
  std::snprintf(line, sizeof line, "%-16s %10s %14s %20s %12s  %s\n", "design", "workgroups",
                "per barrier us", "[min-max]", "base us", "check");
  s += line;
  for (auto& x : r.results) {
    char range[40];
    std::snprintf(range, sizeof range, "[%.2f-%.2f]", x.per_barrier_us.min, x.per_barrier_us.max);
    std::snprintf(line, sizeof line, "%-16s %10u %14.2f %20s %12.1f  %s\n", x.design.c_str(), x.workgroups,
                  x.per_barrier_us.median, range, x.base_us.median, x.passed ? "ok" : x.failure.c_str());
    s += line;
  }
  if (!r.not_co_resident.empty()) {
    s += "\nnot co-resident (the probe's waiters gave up), not measured:";
    for (uint32_t g : r.not_co_resident) s.append(" ").append(std::to_string(g));
    s += "\n";
  }
  return s;
}

}  // namespace wgfuse::bench
