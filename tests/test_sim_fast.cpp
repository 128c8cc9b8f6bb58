// The speed knobs of `wgfuse sim` change how fast, never what: generations in flight (the same
// trajectory as one at a time), the workgroup size (the same fitness), the stop at the end of an
// episode (fused equals per-step, which steps on), Dawn toggles (disable_robustness, dump_shaders)
// as explicit opt-ins, and the step-splitting team's strided layout; each at odd sizes.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "fuse/sim_program.h"
#include "sim/runner.h"
#include "sim/workloads.h"
#include "sim_support.h"
#include "support.h"
#include "util/error.h"

namespace wgfuse {
namespace {

using fuse::Strategy;
using test::context;

bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// Test that generations in flight change nothing but the timing: the statistics of every
// generation are those of one generation at a time, bitwise (the GA and the start states of a
// generation are queue writes, ordered with the submits), for fused and team on an odd population.
TEST(SimInFlight, SameTrajectoryAsOneAtATime) {
  for (const char* name : {"cartpole", "market"}) {
    const auto& w = sim::find_workload(name);
    sim::SimRunner r(context(), w, 37, 23, 5, 1, fuse::max_team(context(), w.spec));
    for (auto s : {Strategy::Fused, Strategy::Team}) {
      auto one = r.run(s, 5, {}, 1);
      auto three = r.run(s, 5, {}, 3);
      EXPECT_EQ(one.in_flight, 1u);
      EXPECT_EQ(three.in_flight, 3u);
      ASSERT_EQ(three.stats.size(), 5u);
      ASSERT_EQ(three.seconds.size(), 5u);
      for (size_t g = 0; g < 5; ++g) {
        EXPECT_TRUE(same_bits(one.stats[g].best, three.stats[g].best)) << name << " generation " << g;
        EXPECT_TRUE(same_bits(one.stats[g].mean, three.stats[g].mean)) << name << " generation " << g;
        EXPECT_EQ(one.stats[g].best_index, three.stats[g].best_index) << name << " generation " << g;
      }
      // The GA improves something over 5 generations (the run is not a constant).
      EXPECT_NE(one.stats.front().mean, one.stats.back().mean) << name;
      if (!three.gpu_eval_ms.empty()) {
        ASSERT_EQ(three.gpu_eval_ms.size(), 5u);
        for (double ms : three.gpu_eval_ms) EXPECT_GT(ms, 0) << name;
      }
    }
    // Per-step waits after every dispatch: one generation at a time whatever was asked.
    EXPECT_EQ(r.run(Strategy::PerStep, 1, {}, 4).in_flight, 1u);
  }
}

// Test that the workgroup size is a knob of speed only: fused, team and per-step give the same
// fitness with workgroups of 16 and 128 as with the workload's, on 37 individuals (partial last
// workgroups); sizes that are not powers of two or are over the device's limit are refused
// naming it.
TEST(SimWorkgroup, SameFitnessAndClearRefusals) {
  for (const char* name : {"acrobot", "rastrigin"}) {
    const auto& w = sim::find_workload(name);
    // At most the smallest workgroup below (a step-splitting team may exceed the subgroup).
    const uint32_t team = std::min(fuse::max_team(context(), w.spec), 16u);
    sim::SimRunner base(context(), w, 37, 40, 9, 1, team);
    const auto fused = base.evaluate_initial(Strategy::Fused);
    const auto teamed = base.evaluate_initial(Strategy::Team);
    for (uint32_t wg : {16u, 128u}) {
      sim::SimRunner r(context(), w, 37, 40, 9, 1, team, wg);
      for (auto s : {Strategy::PerStep, Strategy::Fused, Strategy::Team}) {
        const auto got = r.evaluate_initial(s);
        const auto& want = s == Strategy::Team ? teamed : fused;
        auto a = sim::compare_fitness(want, got, s == Strategy::PerStep ? 1e-5 : 0);
        EXPECT_EQ(a.over, 0u) << name << " workgroup " << wg << " " << fuse::to_string(s) << ": max rel "
                              << a.max_rel;
      }
    }
  }
  const auto& a = sim::find_workload("acrobot");
  const uint32_t top = std::min(context().limits().max_compute_invocations_per_workgroup,
                                context().limits().max_compute_workgroup_size_x);
  for (uint32_t bad : {48u, 2 * top}) {
    try {
      sim::SimRunner r(context(), a, 5, 4, 1, 1, 1, bad);
      FAIL() << "workgroup size " << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(
          std::string(e.what()).find("workgroup size " + std::to_string(bad) + " must be a power of two"),
          std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("maxComputeInvocationsPerWorkgroup"), std::string::npos)
          << e.what();
    }
  }
}

// Test the stop at the end of an episode: CartPole policies that fall within a few steps (large
// random weights) give fused (which stops) the per-step result (which steps on to L), bitwise,
// and team (which stops once its subgroup is done) within its tolerance; so do policies that
// keep going (small weights, most never fall in 60 steps).
TEST(SimEpisodeEnd, StoppingEarlyChangesNothing) {
  const auto& w = sim::find_workload("cartpole");
  const uint32_t pop = 29, steps = 60;
  sim::SimRunner r(context(), w, pop, steps, 3, 2, fuse::max_team(context(), w.spec));
  auto& prog = r.program(steps);
  for (float scale : {4.0f, 0.05f}) {
    auto genomes = test::random_floats(size_t(pop) * r.genome_len(), 77, -scale, scale);
    auto gm = sim::gene_major(genomes, pop, r.genome_len());
    auto fp = test::evaluate(prog, Strategy::PerStep, gm);
    auto ff = test::evaluate(prog, Strategy::Fused, gm);
    auto ft = test::evaluate(prog, Strategy::Team, gm);
    uint32_t short_episodes = 0;
    for (uint32_t i = 0; i < pop; ++i) {
      EXPECT_TRUE(same_bits(fp[i], ff[i]))
          << "scale " << scale << " individual " << i << ": " << fp[i] << " vs " << ff[i];
      short_episodes += fp[i] < steps;
    }
    EXPECT_EQ(sim::compare_fitness(fp, ft, 1e-5).over, 0u) << "scale " << scale;
    if (scale > 1) {
      EXPECT_GT(short_episodes, pop / 2) << "the large weights should end most episodes early";
    }
  }
}

// Test Market's prefetch of the next step's record (an override constant, by default on in teams
// of one only): on or off, every strategy gives the same fitness, bitwise, over two episodes (the
// prefetch restarts with each) of an odd population; a malformed or unknown --override is refused
// naming it.
TEST(SimOverride, MarketPrefetchChangesNothing) {
  const auto& w = sim::find_workload("market");
  const uint32_t team = fuse::max_team(context(), w.spec);
  sim::SimRunner fixed(context(), w, 37, 41, 4, 2, team);
  sim::SimRunner on(context(), w, 37, 41, 4, 2, team, 0, {{"MARKET_PREFETCH", 1}});
  sim::SimRunner off(context(), w, 37, 41, 4, 2, team, 0, {{"MARKET_PREFETCH", 0}});
  EXPECT_EQ(off.spec().overrides.at("MARKET_PREFETCH"), 0);
  for (auto s : {Strategy::PerStep, Strategy::Fused, Strategy::Team}) {
    auto a = on.evaluate_initial(s), b = off.evaluate_initial(s), c = fixed.evaluate_initial(s);
    for (uint32_t i = 0; i < 37; ++i) {
      EXPECT_TRUE(same_bits(a[i], b[i]))
          << fuse::to_string(s) << " individual " << i << ": " << a[i] << " vs " << b[i];
      EXPECT_TRUE(same_bits(a[i], c[i]))
          << fuse::to_string(s) << " individual " << i << ": " << a[i] << " vs default " << c[i];
    }
  }
  test::expect_cli_error("--adapter cpu sim market --pop 5 --steps 5 --override MARKET_PREFETCH",
                         "expected NAME=VALUE");
  test::expect_cli_error("--adapter cpu sim acrobot --pop 5 --steps 5 --override MARKET_PREFETCH=0",
                         "MARKET_PREFETCH");
}

// Test Market's split team (MARKET_SPLIT, an override; see kernels/sim_market.wgsl): a team of one
// computes the same sums in the same order either way, so per-step and fused give the same bits
// on and off; the whole team (MARKET_SPLIT=0) gives fused's bits; the split team, whose partial
// outputs and trade are added across lanes, agrees with it as --check judges (within 1e-5, or
// near the double reference, or where the episode is sensitive to rounding: at most a quarter of
// the individuals; all within 1e-4 at the GA's initial scale) over 300 hours of an odd
// population, two genome scales and two episodes.
TEST(SimOverride, MarketSplitTeamAgreesWithTheWholeTeam) {
  const auto& w = sim::find_workload("market");
  const uint32_t team = fuse::max_team(context(), w.spec), pop = 37, steps = 300;
  ASSERT_GE(team, 2u);
  sim::SimRunner split(context(), w, pop, steps, 4, 2, team);
  sim::SimRunner whole(context(), w, pop, steps, 4, 2, team, 0, {{"MARKET_SPLIT", 0}});
  const uint32_t len = split.genome_len();
  for (float scale : {1.0f, 3.0f}) {
    const auto genomes = test::random_floats(size_t(pop) * len, 7, -scale, scale);
    auto gm = sim::gene_major(genomes, pop, len);
    auto fs = test::evaluate(split.program(steps), Strategy::Fused, gm);
    for (auto s : {Strategy::PerStep, Strategy::Fused}) {
      auto a = test::evaluate(split.program(steps), s, gm), b = test::evaluate(whole.program(steps), s, gm);
      for (uint32_t i = 0; i < pop; ++i)
        EXPECT_TRUE(same_bits(a[i], b[i])) << fuse::to_string(s) << " scale " << scale << " individual " << i
                                           << ": " << a[i] << " vs " << b[i];
    }
    auto ts = test::evaluate(split.program(steps), Strategy::Team, gm);
    auto tw = test::evaluate(whole.program(steps), Strategy::Team, gm);
    for (uint32_t i = 0; i < pop; ++i) {
      ASSERT_TRUE(std::isfinite(ts[i])) << "individual " << i;
      EXPECT_TRUE(same_bits(tw[i], fs[i]))
          << "whole team, scale " << scale << " individual " << i << ": " << tw[i] << " vs fused " << fs[i];
    }
    auto j = sim::judge_over(w, genomes, steps, split.starts(), split.data().records, tw, ts, 1e-5);
    EXPECT_TRUE(j.pass()) << "split vs whole team, scale " << scale << ": " << j.over << " over 1e-5, "
                          << j.wrong << " wrong";
    EXPECT_LE(j.over, pop / 4) << "scale " << scale;
    if (scale == 1.0f) {
      EXPECT_EQ(sim::compare_fitness(tw, ts, 1e-4).over, 0u) << "scale 1: within 1e-4";
    }
    EXPECT_NE(*std::min_element(ts.begin(), ts.end()), *std::max_element(ts.begin(), ts.end()));
  }
}

// Test the toggles as explicit opt-ins: `--unsafe-no-robustness` runs, passes --check and says
// so in the text and the JSON; without it the JSON says robustness is on; `--dump-shaders` makes
// Dawn log the shaders it compiles.
TEST(SimToggles, NoRobustnessIsNamedAndDumpShadersDumps) {
  const std::string json = ::testing::TempDir() + "/sim_norobust.json";
  auto [rc, out] = test::run_wgfuse(
      "--adapter cpu sim acrobot --mode all --pop 19 --steps 25 --generations 2 --check --quiet "
      "--unsafe-no-robustness --json " +
      json);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("UNSAFE: Dawn's shader robustness is disabled"), std::string::npos) << out;
  EXPECT_NE(out.find("check passed"), std::string::npos) << out;
  auto unsafe_json = test::read_json(json);
  EXPECT_FALSE(unsafe_json["robustness"].get<bool>());
  EXPECT_EQ(unsafe_json["in_flight"], sim::kDefaultInFlight);
  auto safe = test::run_wgfuse(
      "--adapter cpu sim acrobot --mode fused --pop 5 --steps 5 --generations 1 "
      "--quiet --in-flight 3 --json " +
      json);
  ASSERT_EQ(safe.rc, 0) << safe.out;
  EXPECT_EQ(safe.out.find("UNSAFE"), std::string::npos) << safe.out;
  auto safe_json = test::read_json(json);
  EXPECT_TRUE(safe_json["robustness"].get<bool>());
  EXPECT_EQ(safe_json["modes"]["fused"]["in_flight"], 3);
  auto dump = test::run_wgfuse(
      "--adapter cpu sim rastrigin --mode fused --pop 5 --steps 7 --generations 1 "
      "--quiet --dump-shaders");
  ASSERT_EQ(dump.rc, 0) << dump.out;
  EXPECT_NE(dump.out.find("sim_fused_main"), std::string::npos) << dump.out.substr(0, 2000);
}

// Test the step-splitting team (Rastrigin): auto takes the largest team and says why, the loader
// reads SIM_TEAM_SPLITS_STEPS from the definition, and the strided layout sums every term once
// for odd populations and step counts that are no multiple of the team (against the CPU sum).
TEST(SimTeamStrided, AutoSplitsAndEveryTermOnce) {
  const auto& w = sim::find_workload("rastrigin");
  const uint32_t top = fuse::max_team(context(), w.spec);
  auto c = fuse::choose_auto(context(), w.spec, 100000);
  EXPECT_EQ(c.strategy, Strategy::Team);
  EXPECT_EQ(c.team, top);
  EXPECT_NE(c.why.find("steps are independent"), std::string::npos) << c.why;
  EXPECT_TRUE(w.spec.team_splits_steps);
  EXPECT_FALSE(sim::find_workload("cartpole").spec.team_splits_steps);
  // Data records are read as vec4s: a stride that is no multiple of 4, or does not divide the
  // data, is refused.
  const std::vector<float> records(44, 0.5f);
  EXPECT_THROW(fuse::SimProgram(context(), w.spec, 5, 2, 2, 1, records, 22), Error);
  EXPECT_THROW(fuse::SimProgram(context(), w.spec, 5, 2, 2, 1, records, 24), Error);
  EXPECT_NO_THROW(fuse::SimProgram(context(), w.spec, 5, 2, 2, 1, records, 4));
  for (uint32_t pop : {3u, 41u}) {
    for (uint32_t steps : {1u, 7u, 61u}) {
      sim::SimRunner r(context(), w, pop, steps, 2, 1, top);
      auto genomes = test::random_floats(size_t(pop) * steps, pop + steps, -5.12f, 5.12f);
      const auto gm = sim::gene_major(genomes, pop, steps);
      auto ft = test::evaluate(r.program(steps), Strategy::Team, gm);
      auto ff = test::evaluate(r.program(steps), Strategy::Fused, gm);
      for (uint32_t i = 0; i < pop; ++i) {
        double want = 10.0 * steps;
        for (uint32_t k = 0; k < steps; ++k) {
          const double x = genomes[size_t(i) * steps + k];
          want += x * x - 10 * std::cos(2 * M_PI * x);
        }
        const std::string at =
            "pop " + std::to_string(pop) + " steps " + std::to_string(steps) + " i " + std::to_string(i);
        // The same f32 terms in another order: a term missed or taken twice is off by up to 40.
        EXPECT_NEAR(ft[i], ff[i], 1e-5 * std::abs(ff[i]) + 1e-5) << at;
        // WGSL's cos is approximate: the workload's own tolerance against the reference.
        EXPECT_NEAR(ft[i], -want, std::max(w.reference_atol, w.reference_rtol * std::abs(want))) << at;
      }
    }
  }
}

// Test that a step-splitting team is bounded by its workgroup, not by the subgroup (it adds its
// lanes' sums through workgroup memory; the test above runs such a team where the adapter's
// subgroups are smaller), that a policy team stays within the smallest subgroup, and that a team
// workgroup over the device's limit is halved down to it while an explicit one is still refused.
TEST(SimTeamStrided, BoundedByTheWorkgroupNotTheSubgroup) {
  auto& ctx = context();
  const auto& w = sim::find_workload("rastrigin");
  const uint32_t limit =
      std::min(ctx.limits().max_compute_invocations_per_workgroup, ctx.limits().max_compute_workgroup_size_x);
  auto spec = w.spec;
  spec.team_workgroup_size = 4 * limit;
  const auto fitted = fuse::fit_team_workgroup(ctx, spec);
  EXPECT_EQ(fitted.team_workgroup_size, limit);
  EXPECT_EQ(fitted.workgroup_size, spec.workgroup_size);
  if (!ctx.features().subgroups) GTEST_SKIP() << "no subgroups: no team strategy";
  EXPECT_EQ(fuse::max_team(ctx, spec), std::min(spec.max_team, limit));
  EXPECT_GT(fuse::max_team(ctx, spec), ctx.adapter().subgroup_min_size);
  EXPECT_LE(fuse::max_team(ctx, sim::find_workload("acrobot").spec), ctx.adapter().subgroup_min_size);
  EXPECT_THROW(sim::SimRunner(ctx, w, 5, 5, 1, 1, 1, 2 * limit).program(5), Error);
}

}  // namespace
}  // namespace wgfuse
