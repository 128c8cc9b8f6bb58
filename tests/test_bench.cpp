// The bench's own measurements: the fused elementwise chain (kernels/elementwise.wgsl, chain_fused)
// and the copy bandwidths it is held against.
#include <algorithm>

#include "bench/barrier_bench.h"
#include "bench/dispatch_bench.h"
#include "gpu/recorder.h"
#include "support.h"

namespace wgfuse {
namespace {

// A bench run of the chain only (the dispatch sweep reduced to the empty kernel at N = 1, 2).
bench::BenchReport chain_run(uint32_t small, uint32_t large, uint32_t max_chain) {
  auto cfg = bench::BenchConfig::quick_config();
  cfg.only_kernels = {"empty"};
  cfg.max_dispatches = 2;
  cfg.reps = 1;
  cfg.small_elements = small;
  cfg.large_elements = large;
  cfg.max_chain = max_chain;
  cfg.all_chain_lengths = true;
  return bench::run_dispatch_bench(test::context(), cfg, [](const std::string&) {});
}

// Test that the fused chain (one dispatch, the chain length an override constant, vec4 loads) is
// bitwise equal to the unfused chain and within k f32 roundings of the double-precision product,
// for every chain length 1..16 (whole and partial groups of four factors) and for sizes that are
// not a multiple of 4 (the vec4 kernel's padded tail) or of the workgroup's span.
TEST(BenchChain, FusedIsBitwiseTheUnfusedChainForEveryLength) {
  const auto r = chain_run(1001, 4099, bench::kMaxChain);
  ASSERT_EQ(r.chain.size(), 2 * bench::kMaxChain);
  for (const auto& c : r.chain) {
    SCOPED_TRACE("n " + std::to_string(c.elements) + ", k " + std::to_string(c.k));
    EXPECT_TRUE(c.bitwise_equal);
    EXPECT_TRUE(c.passed) << "max rel diff " << c.max_rel_diff << ", vs CPU " << c.max_rel_err_cpu;
    // The factors are 1 + 1e-4 (j + 1): a chain that skipped an op would be off by ~1e-4.
    EXPECT_LT(c.max_rel_err_cpu, 1e-5);
    EXPECT_EQ(c.fused_bytes, 8ull * c.elements);
    EXPECT_EQ(c.unfused_bytes, 8ull * c.k * c.elements);
  }
}

// Test that copyBufferToBuffer is measured both by wall clock and, where the adapter has
// timestamps, by the GPU span between two timed passes around the copies.
TEST(BenchChain, CopyCommandBandwidthByWallClockAndTimestamps) {
  const auto r = chain_run(64, 1u << 16, 1);
  EXPECT_GT(r.copy_bandwidth_gbs, 0);
  EXPECT_GT(r.copy_command_bandwidth_gbs, 0);
  if (test::context().features().timestamp_query)
    EXPECT_GT(r.copy_command_gpu_bandwidth_gbs, 0);
  else
    EXPECT_LT(r.copy_command_gpu_bandwidth_gbs, 0);
}

// Test that the same-size read kernels (kernels/bench_read.wgsl) load every element of their
// buffer whatever the grid (one load round per invocation, or fewer invocations striding): a
// single value past the threshold, wherever it lies, must reach the sink, through vec4 and f32
// loads and through Rastrigin's term (x^2 of 1.8e19 = 3.24e38); an element skipped would leave
// the sink zero.
TEST(BenchRead, ReadKernelsLoadEveryElement) {
  auto& ctx = test::context();
  const uint32_t floats = 4 * 5003;  // not a multiple of the workgroup or of the unroll
  const std::vector<float> zeros(4, 0.0f);
  struct Variant {
    std::string entry;
    bool rastrigin;
    uint32_t per_load;  // floats per load
  };
  for (const auto& v :
       {Variant{"read_vec4", false, 4}, Variant{"read_vec4", true, 4}, Variant{"read_f32", false, 1}}) {
    auto& k =
        ctx.kernel(gpu::embedded_kernel("bench_read", v.entry, {{"RASTRIGIN_TERM", v.rastrigin ? 1 : 0}}));
    const uint32_t loads = floats / v.per_load;
    for (uint32_t pos : {0u, 1u, 2591u, floats - 1}) {
      for (uint32_t groups : {1u, 3u, (loads + 2047) / 2048}) {
        SCOPED_TRACE(v.entry + (v.rastrigin ? " (Rastrigin)" : "") + ", element " + std::to_string(pos) +
                     ", " + std::to_string(groups) + " workgroups");
        std::vector<float> data(floats);
        for (size_t i = 0; i < data.size(); ++i) data[i] = 0.25f + 0.5f * float(i % 7) / 7.0f;
        data[pos] = v.rastrigin ? 1.8e19f : 3.2e38f;
        auto src = ctx.upload<float>(data, gpu::BufferUsage::StorageIO, "test.read.src");
        auto sink = ctx.upload<float>(zeros, gpu::BufferUsage::StorageIO, "test.read.sink");
        gpu::Recorder r(ctx);
        r.dispatch(k, ctx.bind(k, {src, sink}), groups);
        r.submit();
        const auto out = ctx.read_all<float>(sink);
        EXPECT_GT(*std::max_element(out.begin(), out.end()), 3.0e38f);
      }
    }
  }
}

// Test that the same-size bound measures every case, each a positive time.
TEST(BenchRead, SameSizeBoundTimesEveryCase) {
  const auto cases = bench::same_size_bound(test::context(), 1u << 16, 1);
  ASSERT_EQ(cases.size(), 6u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_GT(c.warm_us, 0);
    EXPECT_GT(c.written_us, 0);
    EXPECT_GT(c.cold_us, 0);
  }
}

// Test that the barrier suite runs every design at CI scale, checks what it reads across each
// barrier (the exchange's sums, the dispatch chain's words) and reports a per-barrier time; and
// that a grid the probe cannot keep co-resident is reported, not timed.
TEST(BenchBarrier, EveryDesignRunsAndChecksItsReads) {
  auto cfg = bench::BarrierConfig::quick_config();
  cfg.reads = 3;
  const auto r = bench::run_barrier_bench(test::context(), cfg, [](const std::string&) {});
  ASSERT_EQ(r.results.size(), 5u);
  for (const auto& x : r.results) {
    SCOPED_TRACE(x.design);
    EXPECT_TRUE(x.passed) << x.failure;
    EXPECT_EQ(x.workgroups, 1u);
    EXPECT_GT(x.with_us.median, 0.0);
  }
  const auto json = bench::to_json(r, nlohmann::json::object());
  EXPECT_EQ(json["results"].size(), 5u);
  EXPECT_NE(bench::to_table(r, test::context().adapter()).find("exchange_atomic"), std::string::npos);
}

}  // namespace
}  // namespace wgfuse
