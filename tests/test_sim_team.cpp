// The team strategy (a team of TEAM invocations per individual, weights in private memory,
// values exchanged by subgroup shuffles), generated for every workload from its one definition:
// its fitness equals per-step's within the tolerance of fused, for every individual of odd
// populations (teams past the population write nothing), with every team size the adapter
// allows, and agrees with the CPU double reference; --mode auto names its choice.
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

// Random MountainCar policies never reach the goal: give hidden unit 0 a strong weight on the
// velocity and logits 0 and 2 opposite weights on it (push along the velocity, which pumps
// energy), so that the random rest of each genome decides how soon the car gets there.
void pump_energy(std::vector<float>& genomes, uint32_t pop) {
  const size_t len = 99, w2 = 16 * 2 + 16;  // W1[16][2], b1[16], then W2[3][16]
  for (uint32_t i = 0; i < pop; ++i) {
    genomes[i * len + 1] = 10;            // W1[0][1]: velocity
    genomes[i * len + w2 + 0 * 16] = -3;  // W2[0][0]: push left when moving left
    genomes[i * len + w2 + 2 * 16] = 3;   // W2[2][0]: push right when moving right
  }
}

// Expects, for every team size from 2 to the largest the adapter allows, that team equals per-step
// (and fused) within 1e-5 relative for every individual of odd populations
// (Market's split team: as --check judges it, sim::judge_over)
// (37: a partial last workgroup; 3: less than one), on random genomes of two scales (the GA's
// initial U(-1, 1), and U(-3, 3), where the tanh units saturate), with two episodes, and agrees
// with the CPU double reference like the other strategies.
void expect_team_equals_per_step(const sim::Workload& w) {
  const uint32_t top = fuse::max_team(context(), w.spec);
  ASSERT_GE(top, 2u) << w.name;
  for (uint32_t team = 2; team <= top; team *= 2) {
    for (uint32_t pop : {37u, 3u}) {
      // Long enough for random Acrobot policies to differ (few swing up within 100 steps).
      const uint32_t steps = w.name == "acrobot" ? 300 : w.name == "mountaincar" ? 200 : 45;
      sim::SimRunner r(context(), w, pop, steps, 13, 2, team);
      auto& prog = r.program(steps);
      const uint32_t len = r.genome_len();
      for (float scale : {1.0f, 3.0f}) {
        auto genomes = test::random_floats(size_t(pop) * len, 100 + pop, -scale, scale);
        if (w.name == "mountaincar") pump_energy(genomes, pop);
        auto gm = sim::gene_major(genomes, pop, len);
        auto fp = evaluate(prog, Strategy::PerStep, gm);
        auto ff = evaluate(prog, Strategy::Fused, gm);
        auto ft = evaluate(prog, Strategy::Team, gm);
        const std::string at = w.name + " team " + std::to_string(team) + " pop " + std::to_string(pop) +
                               " scale " + std::to_string(scale);
        for (uint32_t i = 0; i < pop; ++i) ASSERT_TRUE(std::isfinite(fp[i])) << at << ", individual " << i;
        auto pt = sim::compare_fitness(fp, ft, 1e-5);
        if (w.name == "market") {
          // Its split team adds partial sums in another order (kernels/sim_market.wgsl): as
          // --check, an individual over 1e-5 must be near the double reference or sensitive
          // to rounding.
          auto j = sim::judge_over(w, genomes, steps, r.starts(), r.data().records, fp, ft, 1e-5);
          EXPECT_TRUE(j.pass()) << at << ": " << j.over << " over 1e-5, " << j.wrong << " wrong (max rel "
                                << pt.max_rel << ")";
          EXPECT_LE(j.over, pop / 4) << at;
        } else {
          EXPECT_EQ(pt.over, 0u) << at << ": team vs per-step max rel " << pt.max_rel << ", first at "
                                 << pt.first_over << ": " << (pt.first_over >= 0 ? ft[pt.first_over] : 0)
                                 << " vs " << (pt.first_over >= 0 ? fp[pt.first_over] : 0);
          EXPECT_EQ(sim::compare_fitness(ff, ft, 1e-5).over, 0u) << at << ": team vs fused";
        }
        // Not a constant: the policies matter (a wrong broadcast changes the actions).
        if (pop > 3) {
          EXPECT_NE(*std::min_element(ft.begin(), ft.end()), *std::max_element(ft.begin(), ft.end()))
              << at << ": every individual has the same fitness";
        }
        for (uint32_t i = 0; i < pop; i += 5) {
          std::span<const float> genome(genomes.data() + size_t(i) * len, len);
          auto ref = sim::reference_run(w, genome, steps, r.starts(), r.data().records);
          const double err = std::abs(ft[i] - ref.fitness);
          if (err > std::max(w.reference_atol, w.reference_rtol * std::abs(ref.fitness))) {
            EXPECT_LT(ref.min_margin, w.boundary_margin)
                << at << ", individual " << i << ": GPU " << ft[i] << ", reference " << ref.fitness;
          }
        }
      }
    }
  }
}

TEST(SimTeam, EqualsPerStepForEveryWorkload) {
  ASSERT_TRUE(fuse::offered(context(), Strategy::Team)) << "the test adapter has no subgroups";
  for (auto& w : sim::workloads()) expect_team_equals_per_step(w);
}

// Test the same of the MLP workloads with "policy": "mlp_tree" (kernels/sim_mlp_tree.wgsl: the
// logits as a tree, each lane over its own units), loaded from the built-in's file with only that
// field changed: its team sizes agree bitwise with per-step and fused, and with the reference.
TEST(SimTeam, TreePolicyEqualsPerStep) {
  ASSERT_TRUE(fuse::offered(context(), Strategy::Team)) << "the test adapter has no subgroups";
  for (auto& name : {"acrobot", "cartpole", "mountaincar"}) {
    std::string text = sim::find_workload(name).spec.source;
    const std::string from = "\"policy\": \"mlp\"";
    ASSERT_NE(text.find(from), std::string::npos) << name;
    text.replace(text.find(from), from.size(), "\"policy\": \"mlp_tree\"");
    const auto w = sim::load_workload(text, std::string(name) + "_tree.wgsl");
    ASSERT_EQ(w.spec.policy, "sim_mlp_tree") << name;
    EXPECT_NE(fuse::generated_source(w.spec, Strategy::Team).find("\nfn mlp_tree4("), std::string::npos);
    expect_team_equals_per_step(w);
  }
}

// Test that the runner's generations run the team strategy: one dispatch per evaluation, four per
// generation with the GA, and the same best fitness as fused each generation within 1e-5.
TEST(SimTeam, RunsAGenerationLikeFused) {
  for (const char* name : {"market", "acrobot", "rastrigin"}) {
    const auto& w = sim::find_workload(name);
    sim::SimRunner r(context(), w, 37, 20, 5, 1, 4);
    EXPECT_EQ(r.program(20).dispatches(Strategy::Team), 1u);
    auto fused = r.run(Strategy::Fused, 2);
    auto team = r.run(Strategy::Team, 2);
    EXPECT_EQ(team.dispatches_per_generation, 4u);
    EXPECT_EQ(team.submits_per_generation, 1u);
    for (size_t g = 0; g < 2; ++g)
      EXPECT_NEAR(team.stats[g].best, fused.stats[g].best, 1e-5 * std::abs(fused.stats[g].best)) << name << g;
  }
}

// Test that the dynamics have one definition: the team module is the team prefix and the same
// workload family as the fused one; the fused module needs no subgroups; bad team sizes are
// refused with the limit named.
TEST(SimTeam, OneDefinitionAndClearRefusals) {
  for (auto& w : sim::workloads()) {
    const auto solo = fuse::generated_source(w.spec, Strategy::Fused);
    const auto team = fuse::generated_source(w.spec, Strategy::Team);
    // The definition's text, whole, between the head and the entry points; each once.
    const auto& def = w.spec.source;
    EXPECT_EQ(test::occurrences(solo, def), 1u) << w.name;
    EXPECT_EQ(test::occurrences(team, def), 1u) << w.name;
    EXPECT_LT(solo.find(def), solo.find("\nfn sim_fused_main(")) << w.name;
    EXPECT_GT(solo.find(def), solo.find("\nfn gene(")) << w.name;
    for (auto fn : {"\nfn pcg_hash(", "\nfn gene(", "\nfn sim_fused_main("})
      EXPECT_EQ(test::occurrences(solo, fn), 1u) << w.name << fn;
    EXPECT_EQ(test::occurrences(solo, "\nfn mlp_argmax("), w.spec.policy == "sim_mlp" ? 1u : 0u) << w.name;
    EXPECT_EQ(solo.find("enable subgroups"), std::string::npos) << w.name;
    EXPECT_EQ(team.rfind("enable subgroups;", 0), 0u) << w.name;
    for (auto fn : {"\nfn sim_step(", "\nfn sim_load(", "\nfn sim_team_main("}) {
      auto a = team.find(fn);
      ASSERT_NE(a, std::string::npos) << w.name << fn;
      EXPECT_EQ(team.find(fn, a + 1), std::string::npos) << w.name << fn << " defined twice";
    }
  }
  EXPECT_EQ(fuse::parse_strategy("team"), Strategy::Team);
  const auto& a = sim::find_workload("acrobot");
  for (uint32_t bad : {0u, 3u, 2 * fuse::max_team(context(), a.spec)}) {
    try {
      sim::SimRunner r(context(), a, 5, 4, 1, 1, bad);
      FAIL() << "team size " << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("must be a power of two from 1 to"), std::string::npos)
          << e.what();
    }
  }
}

// Test --mode auto's choice: a team large enough to reach the target number of invocations, at
// most the largest allowed; fused once the population alone reaches it.
TEST(SimTeam, AutoChoosesFromThePopulation) {
  const auto& w = sim::find_workload("market");
  const uint32_t top = fuse::max_team(context(), w.spec);
  // Market: teams of 4 whatever the population (its measured best), where subgroups allow.
  for (uint32_t pop : {512u, 10000u, 65536u}) {
    auto c = fuse::choose_auto(context(), w.spec, pop);
    EXPECT_EQ(c.strategy, Strategy::Team);
    EXPECT_EQ(c.team, std::min(4u, top)) << pop;
    EXPECT_NE(c.why.find("team of"), std::string::npos) << c.why;
    EXPECT_NE(c.why.find("target 40000"), std::string::npos) << c.why;
  }
  // The team grows from the smallest until the population reaches the target, up to the largest.
  auto spec = w.spec;
  spec.auto_min_team = 2;
  spec.auto_max_team = 0;
  EXPECT_EQ(fuse::choose_auto(context(), spec, 20000).team, std::min(2u, top));
  EXPECT_EQ(fuse::choose_auto(context(), spec, 19999).team, std::min(4u, top));
  EXPECT_EQ(fuse::choose_auto(context(), spec, 1000).team, top);
  spec.auto_max_team = 2;
  auto capped = fuse::choose_auto(context(), spec, 1000);
  EXPECT_EQ(capped.team, std::min(2u, top));
  if (top > 2) {
    EXPECT_NE(capped.why.find("measured best"), std::string::npos) << capped.why;
  }
  auto gym = fuse::choose_auto(context(), sim::find_workload("acrobot").spec, 20000);
  EXPECT_EQ(gym.strategy, Strategy::Fused);
  EXPECT_EQ(gym.team, 1u);
  EXPECT_NE(gym.why.find("alone reaches"), std::string::npos) << gym.why;
}

// Test the command: `--mode all` runs and checks team (on a gym workload and Market) and reports
// it in the JSON; the default `--mode auto` runs one strategy and says why.
TEST(SimTeam, Cli) {
  for (const char* name : {"market", "cartpole"}) {
    std::string json = ::testing::TempDir() + "/sim_team_" + name + ".json";
    auto [rc, out] =
        test::run_wgfuse(std::string("--adapter cpu sim ") + name +
                         " --mode all --pop 37 --steps 30 --generations 2 --check --quiet --json " + json);
    ASSERT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("team vs perstep:    ok"), std::string::npos) << out;
    std::ifstream f(json);
    auto j = nlohmann::json::parse(f);
    ASSERT_TRUE(j["modes"].contains("team")) << name;
    EXPECT_EQ(j["modes"]["team"]["dispatches_per_generation"], 4);
    EXPECT_EQ(j["modes"]["team"]["best_fitness"].size(), 2u);
    EXPECT_TRUE(j["check"]["team_vs_perstep"]["pass"].get<bool>());
    EXPECT_TRUE(j["check"]["reference"]["team"]["pass"].get<bool>());
    EXPECT_TRUE(j["speedups"].contains("team_vs_fused"));
    const auto& ms = j["modes"]["team"]["gpu_evaluation_ms"];
    if (!ms.is_null()) {  // where the adapter has timestamp queries
      const double bytes = 37.0 * j["genome_len"].get<double>() * 4;
      EXPECT_NEAR(j["modes"]["team"]["genome_read_gb_per_s"].get<double>(),
                  bytes / (ms["median"].get<double>() * 1e6), 1e-9 * bytes);
    }
  }
  std::string json = ::testing::TempDir() + "/sim_auto.json";
  auto [rc, out] = test::run_wgfuse(
      "--adapter cpu sim acrobot --pop 37 --steps 20 --generations 1 --quiet --json " + json);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("mode auto: team of 4"), std::string::npos) << out;
  std::ifstream f(json);
  auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j["auto"]["strategy"], "team");
  EXPECT_EQ(j["auto"]["team"], 4);
  EXPECT_EQ(j["modes"].size(), 1u);
  auto bad = test::run_wgfuse("--adapter cpu sim acrobot --mode team --team 3 --pop 5 --steps 5");
  EXPECT_NE(bad.rc, 0);
  EXPECT_NE(bad.out.find("power of two"), std::string::npos) << bad.out;
}

}  // namespace
}  // namespace wgfuse
