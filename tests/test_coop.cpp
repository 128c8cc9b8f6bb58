// The cooperative strategy (a team of invocations per individual, weights in registers, the
// hidden state exchanged through workgroup memory): it evaluates the same Market definition as
// the other strategies, so its fitness equals per-step's within the tolerance of fused, for
// every individual, including those of a partly filled last workgroup; workloads without a
// cooperative form refuse it by name.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "fuse/sim_program.h"
#include "gpu/recorder.h"
#include "sim/reference.h"
#include "sim/runner.h"
#include "sim/workloads.h"
#include "sim_support.h"
#include "support.h"
#include "util/error.h"

namespace wgfuse {
namespace {

using fuse::Strategy;
using test::context;
using test::evaluate;

// Test that coop equals per-step (and fused) within 1e-5 relative for every individual of odd
// populations (37: 4 full workgroups and a partial one; 3: less than one workgroup), on random
// genomes of two scales (the GA's initial U(-1, 1), and U(-3, 3), where the tanh units
// saturate), and agrees with the CPU double reference like the other strategies.
TEST(Coop, MarketEqualsPerStepOnRandomGenomes) {
  const auto& w = sim::find_workload("market");
  ASSERT_TRUE(w.spec.has_coop());
  for (uint32_t pop : {37u, 3u}) {
    const uint32_t steps = 45;
    sim::SimRunner r(context(), w, pop, steps, 13);
    auto& prog = r.program(steps);
    for (float scale : {1.0f, 3.0f}) {
      auto genomes = test::random_floats(size_t(pop) * w.genome_len, 100 + pop, -scale, scale);
      auto gm = sim::gene_major(genomes, pop, w.genome_len);
      auto fp = evaluate(prog, Strategy::PerStep, gm);
      auto ff = evaluate(prog, Strategy::Fused, gm);
      auto fc = evaluate(prog, Strategy::Coop, gm);
      for (uint32_t i = 0; i < pop; ++i) ASSERT_TRUE(std::isfinite(fp[i])) << "per-step, individual " << i;
      auto pc = sim::compare_fitness(fp, fc, 1e-5);
      EXPECT_EQ(pc.over, 0u) << "pop " << pop << " scale " << scale << ": coop vs per-step max rel "
                             << pc.max_rel << ", first at " << pc.first_over << ": "
                             << (pc.first_over >= 0 ? fc[pc.first_over] : 0) << " vs "
                             << (pc.first_over >= 0 ? fp[pc.first_over] : 0);
      EXPECT_EQ(sim::compare_fitness(ff, fc, 1e-5).over, 0u) << "coop vs fused, pop " << pop;
      // Not a constant: the individuals differ.
      EXPECT_NE(*std::min_element(fc.begin(), fc.end()), *std::max_element(fc.begin(), fc.end()));
      // The CPU double reference, as --check compares every strategy (rtol/atol of the workload).
      for (uint32_t i = 0; i < pop; i += 5) {
        std::span<const float> genome(genomes.data() + size_t(i) * w.genome_len, w.genome_len);
        double want = sim::reference_fitness(w, genome, steps, r.starts(), r.data().records);
        EXPECT_LE(std::abs(fc[i] - want), std::max(w.reference_atol, w.reference_rtol * std::abs(want)))
            << "individual " << i << " scale " << scale;
      }
    }
  }
}

// Test that the runner's strategies (the path of `wgfuse sim`) include coop: one dispatch per
// evaluation, four per generation with the GA, and the same best fitness as fused each generation
// within the tolerance.
TEST(Coop, RunsAGenerationLikeFused) {
  const auto& w = sim::find_workload("market");
  sim::SimRunner r(context(), w, 37, 20, 5);
  EXPECT_EQ(r.program(20).dispatches(Strategy::Coop), 1u);
  auto fused = r.run(Strategy::Fused, 2);
  auto coop = r.run(Strategy::Coop, 2);
  EXPECT_EQ(coop.dispatches_per_generation, 4u);
  EXPECT_EQ(coop.submits_per_generation, 1u);
  for (size_t g = 0; g < 2; ++g)
    EXPECT_NEAR(coop.stats[g].best, fused.stats[g].best, 1e-5 * std::abs(fused.stats[g].best)) << g;
}

// Test that the dynamics have one definition: the generated Market module defines the shared
// pieces once and the cooperative entry point beside the others; the other workloads have no
// cooperative kernel and refuse the strategy by name.
TEST(Coop, OneDefinitionAndClearRefusal) {
  const auto& m = sim::find_workload("market");
  auto src = fuse::generated_source(m.spec);
  // Declarations start a line (the comments of sim_common.wgsl quote the contract indented).
  for (auto fn : {"\nfn market_trade(", "\nfn market_hidden(", "\nfn market_output(", "\nfn market_observe(",
                  "\nfn sim_step(", "\nfn sim_coop_main("}) {
    auto a = src.find(fn);
    ASSERT_NE(a, std::string::npos) << fn;
    EXPECT_EQ(src.find(fn, a + 1), std::string::npos) << fn << " defined twice";
  }
  EXPECT_EQ(fuse::parse_strategy("coop"), Strategy::Coop);
  EXPECT_EQ(fuse::to_string(Strategy::Coop), "coop");
  const auto& a = sim::find_workload("acrobot");
  EXPECT_FALSE(a.spec.has_coop());
  EXPECT_EQ(fuse::generated_source(a.spec).find("sim_coop_main"), std::string::npos);
  sim::SimRunner r(context(), a, 5, 4, 1);
  try {
    r.evaluate_initial(Strategy::Coop);
    FAIL() << "acrobot accepted the coop strategy";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no cooperative form"), std::string::npos) << e.what();
  }
}

// Test the command: `--mode all` on Market runs and checks coop and reports it in the JSON;
// `--mode coop` on a workload without it is an error that says so, and `all` there says that
// coop was not run.
TEST(Coop, Cli) {
  std::string json = ::testing::TempDir() + "/sim_market_coop.json";
  auto [rc, out] = test::run_wgfuse(
      "--adapter cpu sim market --pop 37 --steps 30 --generations 2 --check --quiet --json " + json);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("coop vs perstep:    ok"), std::string::npos) << out;
  std::ifstream f(json);
  auto j = nlohmann::json::parse(f);
  ASSERT_TRUE(j["modes"].contains("coop"));
  EXPECT_EQ(j["modes"]["coop"]["dispatches_per_generation"], 4);
  EXPECT_EQ(j["modes"]["coop"]["submits_per_generation"], 1);
  EXPECT_EQ(j["modes"]["coop"]["best_fitness"].size(), 2u);
  EXPECT_TRUE(j["check"]["coop_vs_perstep"]["pass"].get<bool>());
  EXPECT_TRUE(j["check"]["reference"]["coop"]["pass"].get<bool>());
  EXPECT_TRUE(j["speedups"].contains("coop_vs_fused"));
  EXPECT_EQ(j["sample_fitness"]["strategy"], "fused");

  auto refused = test::run_wgfuse("--adapter cpu sim cartpole --mode coop --pop 5 --steps 5");
  EXPECT_NE(refused.rc, 0);
  EXPECT_NE(refused.out.find("has no cooperative form"), std::string::npos) << refused.out;
  auto all = test::run_wgfuse("--adapter cpu sim cartpole --pop 5 --steps 5 --generations 1 --quiet");
  EXPECT_EQ(all.rc, 0) << all.out;
  EXPECT_NE(all.out.find("coop: not run, cartpole has no cooperative form"), std::string::npos) << all.out;
}

}  // namespace
}  // namespace wgfuse
