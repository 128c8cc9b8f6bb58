// The bench's own measurements: the fused elementwise chain (kernels/elementwise.wgsl, chain_fused)
// and the copy bandwidths it is held against.
#include "bench/dispatch_bench.h"
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

}  // namespace
}  // namespace wgfuse
