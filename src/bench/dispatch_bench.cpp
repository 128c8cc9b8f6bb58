#include "bench/dispatch_bench.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>

#include "gpu/bandwidth.h"
#include "gpu/plan.h"
#include "gpu/profiler.h"
#include "gpu/recorder.h"
#include "util/clock.h"
#include "util/error.h"
#include "webgpu/api.h"

namespace wgfuse::bench {
namespace {

using Clock = std::chrono::steady_clock;
using gpu::BindGroup;
using gpu::Buffer;
using gpu::BufferBinding;
using gpu::BufferUsage;
using gpu::Kernel;

double us_since(Clock::time_point t0, Clock::time_point t1) {
  return std::chrono::duration<double, std::micro>(t1 - t0).count();
}

constexpr uint32_t kUniformSlot = 256;  // minUniformBufferOffsetAlignment is at most 256
// vec4s per workgroup of chain_fused: WORKGROUP_SIZE (256) x CHAIN_VEC4S (2), kernels/elementwise.wgsl.
constexpr uint32_t kChainGroupVec4s = 256 * 2;
constexpr uint32_t kIndependentBuffers = 4;

// One sample of a series at n dispatches.
struct Sample {
  double total_us = 0, issue_us = 0, gpu_us = -1;
};
using Run = std::function<Sample(uint32_t n)>;

struct SeriesPlan {
  Series series;
  Run run;
  Run gpu_run;  // the same work in one timestamped pass, when the variant is one pass
  bool active = true;
};

using gpu::grid_2d;

ChainParams chain_params(uint32_t n, uint32_t first, uint32_t count) {
  ChainParams p{n, first, count, 0, {}};
  for (uint32_t j = 0; j < kMaxChain; ++j) p.factors[j] = chain_factor(j);
  return p;
}

std::vector<float> random_data(uint64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(0.5f, 2.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// What one benchmarked kernel needs: two pipelines (A, and B: the same kernel with another
// PIPELINE_TAG, for the pipeline-change variant), its data, and bind groups.
struct KernelSetup {
  KernelReport report;
  Kernel* a = nullptr;
  Kernel* b = nullptr;
  std::pair<uint32_t, uint32_t> grid_a{1, 1};
  bool has_data = false;
  Buffer data, uniform, uniform2;
  BindGroup group_a, group_a2, group_b;  // group_a2: same bindings, other uniform copy
  std::vector<Buffer> independent_data;
  std::vector<BindGroup> independent_groups;
};

KernelSetup make_empty(gpu::Context& ctx) {
  KernelSetup s;
  s.report.name = "empty";
  s.report.description = "one workgroup of 64, no memory: API and launch cost";
  s.a = &ctx.kernel(gpu::embedded_kernel("dispatch", "empty"));
  s.b = &ctx.kernel(gpu::embedded_kernel("dispatch", "empty", {{"PIPELINE_TAG", 1}}));
  return s;
}

KernelSetup make_elementwise(gpu::Context& ctx, const std::string& name, uint32_t n) {
  KernelSetup s;
  s.report.name = name;
  s.report.elements = n;
  s.report.bytes_per_dispatch = uint64_t(n) * 8;  // 4 B read + 4 B written per element
  s.report.description = "x = x * a on " + std::to_string(n) + " f32, in place";
  s.has_data = true;
  s.a = &ctx.kernel(gpu::embedded_kernel("elementwise", "chain"));
  s.b = &ctx.kernel(gpu::embedded_kernel("elementwise", "chain", {{"PIPELINE_TAG", 1}}));
  s.grid_a = grid_2d((n + 255) / 256);
  auto init = random_data(n, 1234 + n);
  s.data = ctx.upload<float>(init, BufferUsage::StorageIO, name + ".x");
  auto p = chain_params(n, 0, 1);
  s.uniform = ctx.buffer(sizeof p, BufferUsage::Uniform | BufferUsage::CopyDst, name + ".params");
  s.uniform2 = ctx.buffer(sizeof p, BufferUsage::Uniform | BufferUsage::CopyDst, name + ".params2");
  ctx.write_value(s.uniform, 0, p);
  ctx.write_value(s.uniform2, 0, p);
  s.group_a = ctx.bind(*s.a, {s.data, s.uniform});
  s.group_a2 = ctx.bind(*s.a, {s.data, s.uniform2});
  s.group_b = ctx.bind(*s.b, {s.data, s.uniform});
  for (uint32_t i = 0; i < kIndependentBuffers; ++i) {
    s.independent_data.push_back(ctx.upload<float>(init, BufferUsage::StorageIO, name + ".xi"));
    s.independent_groups.push_back(ctx.bind(*s.a, {s.independent_data.back(), s.uniform}));
  }
  return s;
}

// The bare C API doing what the runtime's Recorder does: one command buffer with one compute pass
// of n dispatches, submitted. Pipelines and bind groups come from the runtime (creation is not
// measured).
void raw_submit_pass(gpu::Context& ctx, const KernelSetup& s, uint32_t n) {
  const auto& a = webgpu::api();
  WGPUCommandEncoder enc = a.DeviceCreateCommandEncoder(ctx.raw_device(), nullptr);
  WGPUComputePassEncoder pass = a.CommandEncoderBeginComputePass(enc, nullptr);
  a.ComputePassEncoderSetPipeline(pass, s.a->raw_pipeline());
  if (s.has_data) a.ComputePassEncoderSetBindGroup(pass, 0, s.group_a.raw(), 0, nullptr);
  for (uint32_t i = 0; i < n; ++i)
    a.ComputePassEncoderDispatchWorkgroups(pass, s.grid_a.first, s.grid_a.second, 1);
  a.ComputePassEncoderEnd(pass);
  WGPUCommandBuffer cb = a.CommandEncoderFinish(enc, nullptr);
  a.QueueSubmit(ctx.raw_queue(), 1, &cb);
  a.CommandBufferRelease(cb);
  a.ComputePassEncoderRelease(pass);
  a.CommandEncoderRelease(enc);
}

std::vector<SeriesPlan> plan_series(gpu::Context& ctx, KernelSetup& s, gpu::Profiler& prof) {
  std::vector<SeriesPlan> plans;
  auto add = [&](std::string variant, std::string api, std::string description, Run run, Run gpu_run = {}) {
    SeriesPlan p;
    p.series.variant = std::move(variant);
    p.series.api = std::move(api);
    p.series.description = std::move(description);
    p.run = std::move(run);
    p.gpu_run = std::move(gpu_run);
    plans.push_back(std::move(p));
  };
  // Times `issue` (which records and submits), then the wait for the GPU.
  auto timed = [&ctx](const std::function<void()>& issue) {
    Sample out;
    auto t0 = Clock::now();
    issue();
    auto t1 = Clock::now();
    ctx.wait();
    auto t2 = Clock::now();
    out.issue_us = us_since(t0, t1);
    out.total_us = us_since(t0, t2);
    return out;
  };
  auto dispatch_a = [&s](gpu::Recorder& r, const BindGroup& g) {
    r.dispatch(*s.a, g, s.grid_a.first, s.grid_a.second);
  };

  add("naive", "runtime", "encode one dispatch, submit, wait; repeated", [&ctx, &s, dispatch_a](uint32_t n) {
    Sample out;
    auto t0 = Clock::now();
    gpu::Recorder r(ctx);
    for (uint32_t i = 0; i < n; ++i) {
      dispatch_a(r, s.group_a);
      r.submit();
      ctx.wait();
    }
    out.total_us = out.issue_us = us_since(t0, Clock::now());
    return out;
  });
  add(
      "one_pass", "runtime", "all dispatches in one compute pass, one command buffer, one submit",
      [&ctx, &s, timed, dispatch_a](uint32_t n) {
        return timed([&] {
          gpu::Recorder r(ctx);
          for (uint32_t i = 0; i < n; ++i) dispatch_a(r, s.group_a);
          r.submit();
        });
      },
      [&ctx, &s, &prof, dispatch_a](uint32_t n) {
        Sample out;
        gpu::Recorder r(ctx);
        r.time_next_pass(prof);
        for (uint32_t i = 0; i < n; ++i) dispatch_a(r, s.group_a);
        prof.resolve(r);
        r.submit();
        auto ns = prof.read_ns();
        if (!ns.empty()) out.gpu_us = ns[0] / 1000.0;
        return out;
      });
  add("pass_per_dispatch", "runtime", "one compute pass per dispatch, one command buffer",
      [&ctx, &s, timed, dispatch_a](uint32_t n) {
        return timed([&] {
          gpu::Recorder r(ctx);
          for (uint32_t i = 0; i < n; ++i) {
            dispatch_a(r, s.group_a);
            r.end_pass();
          }
          r.submit();
        });
      });
  add("submit_per_dispatch", "runtime",
      "one command buffer and submit per dispatch, one wait at the end (the paper's method)",
      [&ctx, &s, timed, dispatch_a](uint32_t n) {
        return timed([&] {
          gpu::Recorder r(ctx);
          for (uint32_t i = 0; i < n; ++i) {
            dispatch_a(r, s.group_a);
            r.submit();
          }
        });
      });
  add("pipeline_change", "runtime", "one pass, alternating between two pipelines",
      [&ctx, &s, timed](uint32_t n) {
        return timed([&] {
          gpu::Recorder r(ctx);
          for (uint32_t i = 0; i < n; ++i) {
            if (i % 2)
              r.dispatch(*s.b, s.group_b, s.grid_a.first, s.grid_a.second);
            else
              r.dispatch(*s.a, s.group_a, s.grid_a.first, s.grid_a.second);
          }
          r.submit();
        });
      });
  if (s.has_data) {
    add("bindgroup_change", "runtime", "one pass, alternating between two bind groups (dependent)",
        [&ctx, &s, timed, dispatch_a](uint32_t n) {
          return timed([&] {
            gpu::Recorder r(ctx);
            for (uint32_t i = 0; i < n; ++i) dispatch_a(r, i % 2 ? s.group_a2 : s.group_a);
            r.submit();
          });
        });
    add("independent", "runtime",
        "one pass, rotating over " + std::to_string(kIndependentBuffers) +
            " separate buffers (no dependency between neighbours)",
        [&ctx, &s, timed, dispatch_a](uint32_t n) {
          return timed([&] {
            gpu::Recorder r(ctx);
            for (uint32_t i = 0; i < n; ++i) dispatch_a(r, s.independent_groups[i % kIndependentBuffers]);
            r.submit();
          });
        });
    add("uniform_update", "runtime", "a queue write of the params before each dispatch, submit each",
        [&ctx, &s, timed, dispatch_a](uint32_t n) {
          const ChainParams p = chain_params(uint32_t(s.report.elements), 0, 1);
          return timed([&] {
            gpu::Recorder r(ctx);
            for (uint32_t i = 0; i < n; ++i) {
              ctx.write_value(s.uniform, 0, p);
              dispatch_a(r, s.group_a);
              r.submit();
            }
          });
        });
  }
  add("one_pass", "raw", "the one_pass variant through bare C API calls",
      [&ctx, &s, timed](uint32_t n) { return timed([&] { raw_submit_pass(ctx, s, n); }); });
  add("submit_per_dispatch", "raw", "the submit_per_dispatch variant through bare C API calls",
      [&ctx, &s, timed](uint32_t n) {
        return timed([&] {
          for (uint32_t i = 0; i < n; ++i) raw_submit_pass(ctx, s, 1);
        });
      });
  return plans;
}

// Sweeps n = 1, 2, 4, … with all series interleaved at each n (so drift hits all alike); a
// series stops growing once one repetition's median passes the budget, after at least 3 points.
void sweep(std::vector<SeriesPlan>& plans, const BenchConfig& cfg, const std::string& kernel,
           const Progress& progress) {
  for (uint32_t n = 1; n <= cfg.max_dispatches; n *= 2) {
    bool any = false;
    for (auto& p : plans) any |= p.active;
    if (!any) break;
    progress(kernel + ": " + std::to_string(n) + (n == 1 ? " dispatch" : " dispatches"));
    std::vector<std::vector<Sample>> samples(plans.size());
    for (size_t i = 0; i < plans.size(); ++i)
      if (plans[i].active) plans[i].run(n);  // warm-up
    for (uint32_t rep = 0; rep < cfg.reps; ++rep)
      for (size_t i = 0; i < plans.size(); ++i)
        if (plans[i].active) samples[i].push_back(plans[i].run(n));
    for (size_t i = 0; i < plans.size(); ++i) {
      if (!plans[i].active) continue;
      std::vector<double> total, issue, gpu;
      for (auto& s : samples[i]) {
        total.push_back(s.total_us);
        issue.push_back(s.issue_us);
      }
      if (plans[i].gpu_run)
        for (uint32_t rep = 0; rep < cfg.reps; ++rep)
          if (double g = plans[i].gpu_run(n).gpu_us; g >= 0) gpu.push_back(g);
      Point pt;
      pt.n = n;
      pt.total_us = summarize(total);
      pt.issue_us = summarize(issue);
      if (!gpu.empty()) pt.gpu_us = summarize(gpu).median;
      plans[i].series.points.push_back(pt);
      if (pt.total_us.median > cfg.point_budget_ms * 1000 && plans[i].series.points.size() >= 3)
        plans[i].active = false;
    }
  }
  for (auto& p : plans) {
    std::vector<double> x, t, is, g, xs, ts, iss;
    for (auto& pt : p.series.points) {
      x.push_back(pt.n);
      t.push_back(pt.total_us.median);
      is.push_back(pt.issue_us.median);
      if (pt.gpu_us >= 0) g.push_back(pt.gpu_us);
      if (pt.n <= kSteadyMaxN) {
        xs.push_back(pt.n);
        ts.push_back(pt.total_us.median);
        iss.push_back(pt.issue_us.median);
      }
    }
    p.series.total = fit_line(x, t);
    p.series.issue = fit_line(x, is);
    p.series.total_steady = xs.size() >= 2 ? fit_line(xs, ts) : p.series.total;
    p.series.issue_steady = xs.size() >= 2 ? fit_line(xs, iss) : p.series.issue;
    if (g.size() == x.size()) {
      p.series.has_gpu = true;
      p.series.gpu = fit_line(x, g);
    }
  }
}

// k dispatches of one op each (`chain`) vs one dispatch of k ops (`chain_fused`, the chain length
// an override constant), on the same data, same arithmetic.
std::vector<ChainResult> run_chain(gpu::Context& ctx, const BenchConfig& cfg, uint32_t n, double copy_gbs,
                                   gpu::Profiler& prof, const Progress& progress) {
  auto& k = ctx.kernel(gpu::embedded_kernel("elementwise", "chain"));
  const auto g = grid_2d((n + 255) / 256);
  // chain_fused reads whole vec4s: the buffers hold n rounded up to a multiple of 4 floats.
  const uint32_t vec4s = (n + 3) / 4;
  const auto g_fused = grid_2d((vec4s + kChainGroupVec4s - 1) / kChainGroupVec4s);
  const auto init = random_data(uint64_t(vec4s) * 4, 99 + n);
  const uint64_t padded_bytes = uint64_t(vec4s) * 16;
  Buffer pristine = ctx.upload<float>(init, BufferUsage::StorageIO, "chain.init");
  Buffer x = ctx.upload<float>(init, BufferUsage::StorageIO, "chain.x");
  // Slots 0..15: op j alone (unfused); slot 16: ops 0..k-1 (fused), rewritten for each k.
  Buffer u =
      ctx.buffer((kMaxChain + 1) * kUniformSlot, BufferUsage::Uniform | BufferUsage::CopyDst, "chain.params");
  std::vector<BindGroup> single;
  for (uint32_t j = 0; j < kMaxChain; ++j) {
    ctx.write_value(u, j * kUniformSlot, chain_params(n, j, 1));
    single.push_back(ctx.bind(k, {x, BufferBinding(u, j * kUniformSlot, sizeof(ChainParams))}));
  }
  const BufferBinding fused_params(u, kMaxChain * kUniformSlot, sizeof(ChainParams));
  Kernel* fused_kernel = nullptr;
  BindGroup fused;
  // Every sample starts from the same data, restored on the GPU (no host transfer near timing).
  auto reset = [&] {
    gpu::Recorder r(ctx);
    r.copy(pristine, 0, x, 0, padded_bytes);
    r.submit();
    ctx.wait();
  };

  auto record = [&](gpu::Recorder& r, uint32_t ops, bool as_fused, uint32_t runs) {
    for (uint32_t m = 0; m < runs; ++m) {
      if (as_fused)
        r.dispatch(*fused_kernel, fused, g_fused.first, g_fused.second);
      else
        for (uint32_t j = 0; j < ops; ++j) r.dispatch(k, single[j], g.first, g.second);
    }
  };
  // One sample: `runs` chain runs in one timed pass; wall µs per run and GPU µs per run.
  auto sample = [&](uint32_t ops, bool as_fused, uint32_t runs) {
    reset();
    auto t0 = Clock::now();
    gpu::Recorder r(ctx);
    r.time_next_pass(prof);
    record(r, ops, as_fused, runs);
    prof.resolve(r);
    r.submit();
    ctx.wait();
    double wall = us_since(t0, Clock::now()) / runs;
    auto ns = prof.read_ns();
    return std::pair<double, double>{wall, ns.empty() ? -1.0 : ns[0] / 1000.0 / runs};
  };

  std::vector<ChainResult> results;
  std::vector<uint32_t> ks;
  for (uint32_t kk = 1; kk <= cfg.max_chain; kk = cfg.all_chain_lengths ? kk + 1 : kk * 2) ks.push_back(kk);
  for (uint32_t ops : ks) {
    progress("chain of " + std::to_string(ops) + (ops == 1 ? " op" : " ops") + " on " + std::to_string(n) +
             " floats");
    ctx.write_value(u, kMaxChain * kUniformSlot, chain_params(n, 0, ops));
    fused_kernel = &ctx.kernel(gpu::embedded_kernel("elementwise", "chain_fused", {{"CHAIN_OPS", ops}}));
    fused = ctx.bind(*fused_kernel, {x, fused_params});
    ChainResult c;
    c.elements = n;
    c.k = ops;

    // Equivalence: both from the same data, compared bitwise and against double precision.
    std::vector<std::vector<float>> out(2);
    for (int f = 0; f < 2; ++f) {
      reset();
      gpu::Recorder r(ctx);
      record(r, ops, f == 1, 1);
      r.submit();
      out[f] = ctx.read<float>(x, 0, n);
    }
    c.bitwise_equal = std::memcmp(out[0].data(), out[1].data(), size_t(n) * 4) == 0;
    for (uint32_t i = 0; i < n; ++i) {
      double want = init[i];
      for (uint32_t j = 0; j < ops; ++j) want *= double(chain_factor(j));
      c.max_rel_diff = std::max(c.max_rel_diff, std::abs(double(out[1][i]) - out[0][i]) / std::abs(want));
      c.max_rel_err_cpu = std::max(c.max_rel_err_cpu, std::abs(double(out[1][i]) - want) / std::abs(want));
    }
    // k f32 roundings of at most 2^-24 relative each.
    c.passed = c.max_rel_diff <= 1e-5 && c.max_rel_err_cpu <= ops * 6e-8 + 1e-7;

    // Enough runs per sample (~20 ms) that the submit and wait are small against the work; the
    // pilot follows a warm-up, since the first sample after the check's read-back runs slow.
    sample(ops, false, 1);
    const double pilot = sample(ops, false, 1).first;
    c.runs_per_sample = uint32_t(std::clamp(20'000.0 / std::max(pilot, 1.0), 1.0, 1024.0));
    std::vector<double> uw, fw, ug, fg;
    for (uint32_t rep = 0; rep < cfg.reps; ++rep) {
      auto [a, ag] = sample(ops, false, c.runs_per_sample);
      auto [b, bg] = sample(ops, true, c.runs_per_sample);
      uw.push_back(a);
      fw.push_back(b);
      if (ag >= 0) ug.push_back(ag);
      if (bg >= 0) fg.push_back(bg);
    }
    c.unfused_us = summarize(uw);
    c.fused_us = summarize(fw);
    c.unfused_samples_us = uw;
    c.fused_samples_us = fw;
    if (!ug.empty()) c.unfused_gpu_us = summarize(ug).median;
    if (!fg.empty()) c.fused_gpu_us = summarize(fg).median;
    c.unfused_bytes = 2ull * ops * 4 * n;
    c.fused_bytes = 2ull * 4 * n;
    c.unfused_bound_us = double(c.unfused_bytes) / (copy_gbs * 1e3);
    c.fused_bound_us = double(c.fused_bytes) / (copy_gbs * 1e3);
    results.push_back(c);
  }
  return results;
}

}  // namespace

PlanEncodeResult measure_plan_encode(gpu::Context& ctx, uint32_t dispatches, uint32_t reps) {
  constexpr uint32_t kElements = 256;  // one workgroup: the GPU work is not what is measured
  const std::array<Kernel*, 2> kernels = {
      &ctx.kernel(gpu::embedded_kernel("elementwise", "chain")),
      &ctx.kernel(gpu::embedded_kernel("elementwise", "chain", {{"PIPELINE_TAG", 1}}))};
  Buffer x = ctx.upload<float>(random_data(kElements, 5), BufferUsage::StorageIO, "encode.x");
  gpu::Plan plan(ctx, "bench.encode");
  for (uint32_t i = 0; i < dispatches; ++i)
    plan.dispatch(*kernels[i % 2], {x, plan.params(chain_params(kElements, i % kMaxChain, 1))}, {1});
  plan.build();
  std::vector<double> per_dispatch;
  for (uint32_t rep = 0; rep <= reps; ++rep) {  // the first is a warm-up
    gpu::Recorder r(ctx);
    r.raw_encoder_outside_pass();  // the command encoder exists before: the plan's own cost is timed
    auto t0 = Clock::now();
    plan.encode(r);
    const double us = us_since(t0, Clock::now());
    r.submit();
    ctx.wait();
    if (rep > 0) per_dispatch.push_back(us / dispatches);
  }
  return {dispatches, uint32_t(plan.passes()), summarize(per_dispatch)};
}

float chain_factor(uint32_t j) {
  return 1.0f + 1e-4f * float(j + 1);
}

BenchConfig BenchConfig::quick_config() {
  BenchConfig c;
  c.quick = true;
  c.reps = 3;
  c.max_dispatches = 64;
  c.point_budget_ms = 50;
  c.large_elements = 1u << 20;
  c.max_chain = 8;
  c.all_chain_lengths = false;
  return c;
}

BenchConfig BenchConfig::default_for(const gpu::AdapterInfo& adapter) {
  BenchConfig c;
  if (adapter.is_cpu) {
    c.reps = 5;
    c.max_dispatches = 1024;
    c.large_elements = 1u << 20;
    c.all_chain_lengths = false;
  }
  return c;
}

std::vector<PassTime> same_size_bound(gpu::Context& ctx, uint64_t bytes, uint32_t reps) {
  bytes = std::max<uint64_t>(bytes / 16 * 16, 16);
  const auto init = random_data(bytes / 4, 7);
  Buffer src = ctx.upload<float>(init, BufferUsage::StorageIO, "bound.src");
  Buffer dst = ctx.buffer(bytes, BufferUsage::StorageIO, "bound.dst");
  Buffer other = ctx.upload<float>(init, BufferUsage::StorageIO, "bound.other");
  Buffer one = ctx.upload<float>(std::span<const float>(init.data(), 4), BufferUsage::StorageIO, "bound.one");
  Buffer sink = ctx.buffer(16, BufferUsage::StorageIO, "bound.sink");
  // Cold runs first copy 4x the size through other buffers (untimed): past the L2 of any GPU
  // we run on for the sizes of our simulations.
  const uint64_t evict_bytes = std::min(4 * bytes, ctx.limits().max_buffer_size) / 16 * 16;
  Buffer evict_src = ctx.buffer(evict_bytes, BufferUsage::StorageIO, "bound.evict_src");
  Buffer evict_dst = ctx.buffer(evict_bytes, BufferUsage::StorageIO, "bound.evict_dst");
  auto& copy = ctx.kernel(gpu::embedded_kernel("elementwise", "copy_vec4"));
  auto& read = ctx.kernel(gpu::embedded_kernel("bench_read", "read_vec4"));
  auto& read_f32 = ctx.kernel(gpu::embedded_kernel("bench_read", "read_f32"));
  auto& rastrigin = ctx.kernel(gpu::embedded_kernel("bench_read", "read_vec4", {{"RASTRIGIN_TERM", 1}}));
  struct Pass {
    const Kernel* kernel;
    BindGroup group;
    uint64_t groups;
  };
  // Before a timed pass: nothing (warm), a copy of the same size into the buffer read (as the GA
  // writes the genomes that the evaluation reads next), or the eviction.
  const Pass write_src{&copy, ctx.bind(copy, {other, src}), (bytes / 16 + 255) / 256},
      evict{&copy, ctx.bind(copy, {evict_src, evict_dst}), (evict_bytes / 16 + 255) / 256};
  const uint64_t vec4s = bytes / 16;
  const std::vector<std::pair<std::string, Pass>> cases = {
      {"empty pass (1 workgroup reading 16 bytes)", {&read, ctx.bind(read, {one, sink}), 1}},
      {"read, 8 vec4 loads per invocation", {&read, ctx.bind(read, {src, sink}), (vec4s + 2047) / 2048}},
      {"read, 65536 invocations of vec4 loads", {&read, ctx.bind(read, {src, sink}), 256}},
      {"read, 262144 invocations of f32 loads", {&read_f32, ctx.bind(read_f32, {src, sink}), 1024}},
      {"Rastrigin terms, 65536 invocations of vec4", {&rastrigin, ctx.bind(rastrigin, {src, sink}), 256}},
      {"copy (reads and writes the size)", {&copy, ctx.bind(copy, {src, dst}), (vec4s + 255) / 256}},
  };
  gpu::Profiler prof(ctx, 1);
  auto run = [&](const Pass& p, const Pass* before) {  // µs of the one timed pass
    gpu::Recorder r(ctx);
    if (before) {
      const auto g = grid_2d(before->groups);
      r.dispatch(*before->kernel, before->group, g.first, g.second);
      r.end_pass();
    }
    const auto g = grid_2d(p.groups);
    const auto t0 = Clock::now();
    r.time_next_pass(prof);
    r.dispatch(*p.kernel, p.group, g.first, g.second);
    prof.resolve(r);
    r.submit();
    ctx.wait();
    const double wall = us_since(t0, Clock::now());
    const auto ns = prof.read_ns();
    return ns.empty() ? wall : ns[0] / 1000.0;
  };
  std::vector<PassTime> out;
  for (auto& [name, p] : cases) {
    run(p, nullptr);  // compile, first touch
    std::vector<double> warm, written, cold;
    for (uint32_t i = 0; i < reps; ++i) {
      warm.push_back(run(p, nullptr));
      written.push_back(run(p, &write_src));
      cold.push_back(run(p, &evict));
    }
    out.push_back({name, summarize(warm).median, summarize(written).median, summarize(cold).median});
  }
  return out;
}

BenchReport run_dispatch_bench(gpu::Context& ctx, const BenchConfig& cfg, const Progress& progress) {
  auto t0 = Clock::now();
  BenchReport r;
  r.config = cfg;
  r.date_utc = utc_now();
  gpu::Profiler prof(ctx, 1);

  const uint64_t copy_bytes =
      std::min<uint64_t>(uint64_t(cfg.large_elements) * 4, ctx.limits().max_buffer_size);
  progress("device copy bandwidth");
  const auto copy = gpu::measure_copy_bandwidth(ctx, prof, copy_bytes, cfg.reps);
  r.copy_bandwidth_gbs = copy.kernel_gbs;
  r.copy_command_bandwidth_gbs = copy.command_gbs;
  r.copy_command_gpu_bandwidth_gbs = copy.command_gpu_gbs;

  auto wanted = [&](const std::string& name) {
    return cfg.only_kernels.empty() ||
           std::find(cfg.only_kernels.begin(), cfg.only_kernels.end(), name) != cfg.only_kernels.end();
  };
  std::vector<std::function<KernelSetup()>> makers;
  if (wanted("empty")) makers.push_back([&] { return make_empty(ctx); });
  if (wanted("small")) makers.push_back([&] { return make_elementwise(ctx, "small", cfg.small_elements); });
  if (wanted("large")) makers.push_back([&] { return make_elementwise(ctx, "large", cfg.large_elements); });
  for (auto& make : makers) {
    KernelSetup s = make();
    auto plans = plan_series(ctx, s, prof);
    sweep(plans, cfg, s.report.name, progress);
    for (auto& p : plans) {
      if (p.series.api == "runtime" && p.series.variant == "one_pass" && p.series.has_gpu &&
          p.series.gpu.slope > 0 && s.report.bytes_per_dispatch > 0)
        s.report.achieved_bandwidth_gbs = double(s.report.bytes_per_dispatch) / (p.series.gpu.slope * 1e3);
      s.report.series.push_back(std::move(p.series));
    }
    r.kernels.push_back(std::move(s.report));
  }
  for (uint32_t n : {cfg.small_elements, cfg.large_elements}) {
    auto c = run_chain(ctx, cfg, n, r.copy_bandwidth_gbs, prof, progress);
    r.chain.insert(r.chain.end(), c.begin(), c.end());
  }
  progress("plan encode cost");
  r.plan_encode = measure_plan_encode(ctx, 500, std::max<uint32_t>(cfg.reps, 5));
  r.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

}  // namespace wgfuse::bench
