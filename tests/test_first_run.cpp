// What a new user meets first: the drivers' noise hidden unless -v, a plain note when the CPU
// adapter stands in for a GPU, and bench figures that are withheld when their fit is unreliable.
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "bench/dispatch_bench.h"
#include "support.h"
#include "webgpu/diagnostics.h"

namespace wgfuse {
namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Test that what is written to fd 2 inside a capture is dropped, and replayed with the "dawn"
// prefix when verbose; output after the capture reaches stderr as before.
TEST(FirstRun, CapturedStderrIsShownOnlyWhenVerbose) {
  for (bool verbose : {false, true}) {
    webgpu::set_verbose(verbose);
    ::testing::internal::CaptureStderr();
    {
      webgpu::CapturedStderr capture;
      const char line[] = "Warning: vkCreateInstance: Found no drivers!\n";
      ASSERT_EQ(write(2, line, sizeof line - 1), ssize_t(sizeof line - 1));
    }
    std::fprintf(stderr, "after\n");
    const std::string err = ::testing::internal::GetCapturedStderr();
    webgpu::set_verbose(false);
    EXPECT_EQ(contains(err, "wgfuse: dawn: Warning: vkCreateInstance: Found no drivers!"), verbose) << err;
    EXPECT_EQ(contains(err, "Found no drivers"), verbose) << err;
    EXPECT_TRUE(contains(err, "after")) << err;
  }
}

// Test that `wgfuse info` prints no Dawn or Vulkan-loader warnings without -v, and, where it fell
// back to the CPU adapter, says so plainly; with -v the drivers' messages are shown.
TEST(FirstRun, InfoHidesDriverMessagesUnlessVerbose) {
  auto quiet = test::run_wgfuse("info", "", "&1 >/dev/null");
  ASSERT_EQ(quiet.rc, 0) << quiet.out;
  for (const char* noise : {"Warning:", "vkCreateInstance", "VK_ERROR", "CheckVkSuccessImpl", "Null backend"})
    EXPECT_FALSE(contains(quiet.out, noise)) << quiet.out;
  if (!contains(quiet.out, "no GPU found")) GTEST_SKIP() << "a GPU adapter was found; nothing to hide";
  EXPECT_TRUE(contains(quiet.out, "using SwiftShader (CPU)") &&
              contains(quiet.out, "not representative of a GPU"))
      << quiet.out;
  auto verbose = test::run_wgfuse("-v info", "", "&1 >/dev/null");
  ASSERT_EQ(verbose.rc, 0) << verbose.out;
  EXPECT_TRUE(contains(verbose.out, "wgfuse: dawn: ")) << verbose.out;
}

// A report of one kernel whose fits are given: naive (always clean) and one_pass at both APIs.
bench::BenchReport report_with(const LinearFit& one_pass_runtime) {
  bench::BenchReport r;
  r.date_utc = "2026-01-01T00:00:00Z";
  r.wall_s = 1;
  bench::KernelReport k;
  k.name = "empty";
  auto series = [](const char* variant, const char* api, LinearFit f) {
    bench::Series s;
    s.variant = variant;
    s.api = api;
    s.total = s.issue = s.total_steady = s.issue_steady = f;
    for (uint32_t n : {1u, 2u, 4u}) s.points.push_back({n, {1, 1, 1}, {1, 1, 1}, -1});
    return s;
  };
  k.series.push_back(series("naive", "runtime", {48.762, 3.5, 0.9998}));
  k.series.push_back(series("one_pass", "runtime", one_pass_runtime));
  k.series.push_back(series("one_pass", "raw", {0.753, 12.25, 0.9986}));
  r.kernels.push_back(k);
  return r;
}

// Test that a fit with R² below the threshold is flagged in JSON and shown as no figure in the
// table (nor in the ratio and the framework-overhead difference built on it), and that the CPU
// adapter's note explains why; a clean fit is shown as a number.
TEST(FirstRun, UnreliableFitsAreNotShownAsFigures) {
  gpu::AdapterInfo cpu;
  cpu.is_cpu = true;
  const LinearFit noisy{-7.961, 120.5, 0.46};
  auto bad = report_with(noisy);
  auto table = bench::to_table(bad, cpu);
  EXPECT_TRUE(contains(table, "(R^2 0.46)")) << table;
  EXPECT_FALSE(contains(table, "-7.961")) << table;
  EXPECT_TRUE(contains(table, "difference unreliable / unreliable")) << table;
  EXPECT_TRUE(contains(table, "CPU adapter:")) << table;
  auto j = bench::to_json(bad, nlohmann::json::object());
  EXPECT_EQ(j.at("min_reliable_r2").get<double>(), bench::kMinReliableR2);
  const auto& s = j.at("kernels")[0].at("series")[1];
  ASSERT_EQ(s.at("variant"), "one_pass");
  EXPECT_FALSE(s.at("total_steady").at("reliable").get<bool>());
  EXPECT_FALSE(s.at("cpu_issue_steady").at("reliable").get<bool>());
  EXPECT_TRUE(s.at("naive_ratio").is_null());
  EXPECT_FALSE(j.at("kernels")[0].at("framework_overhead")[0].at("reliable").get<bool>());

  gpu::AdapterInfo gpu;
  auto good = report_with({0.824, 10.5, 0.9992});
  table = bench::to_table(good, gpu);
  EXPECT_TRUE(contains(table, "0.824")) << table;
  EXPECT_FALSE(contains(table, "(R^2")) << table;
  EXPECT_FALSE(contains(table, "CPU adapter:")) << table;
  j = bench::to_json(good, nlohmann::json::object());
  EXPECT_TRUE(j.at("kernels")[0].at("series")[1].at("total_steady").at("reliable").get<bool>());
  EXPECT_NEAR(j.at("kernels")[0].at("series")[1].at("naive_ratio").get<double>(), 48.762 / 0.824, 1e-9);
  EXPECT_TRUE(j.at("kernels")[0].at("framework_overhead")[0].at("reliable").get<bool>());
}

// Test that the bench's progress lines count in good English: "1 dispatch", "2 dispatches",
// "chain of 1 op".
TEST(FirstRun, BenchProgressGrammar) {
  auto cfg = bench::BenchConfig::quick_config();
  cfg.only_kernels = {"empty"};
  cfg.max_dispatches = 4;
  cfg.reps = 1;
  cfg.small_elements = 1000;
  cfg.large_elements = 3001;
  cfg.max_chain = 2;
  std::vector<std::string> lines;
  bench::run_dispatch_bench(test::context(), cfg, [&](const std::string& l) { lines.push_back(l); });
  auto has = [&](const std::string& l) { return std::find(lines.begin(), lines.end(), l) != lines.end(); };
  EXPECT_TRUE(has("empty: 1 dispatch"));
  EXPECT_TRUE(has("empty: 2 dispatches"));
  EXPECT_TRUE(has("chain of 1 op on 1000 floats"));
  EXPECT_TRUE(has("chain of 2 ops on 1000 floats"));
  for (auto& l : lines) EXPECT_FALSE(contains(l, " 1 dispatches") || contains(l, " 1 ops")) << l;
}

}  // namespace
}  // namespace wgfuse
