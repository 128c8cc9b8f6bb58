// Common random numbers and --episodes: every individual of a generation is scored on the same
// start states (so that fitness compares policies, not the luck of a slot), drawn afresh each
// generation; fitness is the mean return over the episodes, in every strategy and the CPU
// reference. One test per invariant of docs/SIMULATIONS.md ("Which invariants hold").
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "fuse/sim_program.h"
#include "gpu/recorder.h"
#include "sim/reference.h"
#include "sim/rng.h"
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

// Every strategy the test adapter can run.
std::vector<Strategy> offered() {
  std::vector<Strategy> out;
  for (auto& r : fuse::strategies())
    if (fuse::offered(context(), r.id)) out.push_back(r.id);
  return out;
}

// Invariant (every workload): one genome copied into every slot of an odd-sized population gets
// the same fitness in every slot, under every strategy and with several episodes: an elite copied
// into slot 0 is scored on the start states of everyone else.
TEST(SimCommonRandomNumbers, AGenomeScoresTheSameInEverySlot) {
  for (auto& w : sim::workloads()) {
    const uint32_t pop = 21, steps = 40, episodes = 3;
    sim::SimRunner r(context(), w, pop, steps, 9, episodes);
    auto& prog = r.program(steps);
    prog.set_generation(4);
    const uint32_t len = r.genome_len();
    auto one = test::random_floats(len, 77, -1.0f, 1.0f);
    std::vector<float> copies;
    for (uint32_t i = 0; i < pop; ++i) copies.insert(copies.end(), one.begin(), one.end());
    for (auto s : offered()) {
      auto f = evaluate(prog, s, sim::gene_major(copies, pop, len));
      for (uint32_t i = 1; i < pop; ++i)
        ASSERT_EQ(std::memcmp(&f[i], &f[0], 4), 0)
            << w.name << " " << fuse::to_string(s) << ": slot " << i << " " << f[i] << " vs slot 0 " << f[0];
      ASSERT_TRUE(std::isfinite(f[0])) << w.name;
    }
  }
}

// Invariant (random-start workloads): the start states are drawn afresh each generation, the
// same for every individual: the state after init equals the hash draw of (seed, generation,
// episode 0) in every slot; and a generation's fitness is the reference's on that generation's
// start states, averaged over the episodes.
TEST(SimCommonRandomNumbers, StartStatesChangeWithTheGenerationAndMatchTheReference) {
  struct Start {
    const char* name;
    uint32_t vars;
    float scale, offset;  // variable k = offset + scale * unit_sym(...) for k < vars
  };
  for (auto [name, vars, scale, offset] : {Start{"acrobot", 4, 0.1f, 0.0f}, Start{"cartpole", 4, 0.05f, 0.0f},
                                           Start{"mountaincar", 1, 0.1f, -0.5f}}) {
    const auto& w = sim::find_workload(name);
    const uint32_t pop = 33, steps = 60, episodes = 2, seed = 5;
    sim::SimRunner r(context(), w, pop, steps, seed, episodes);
    auto& prog = r.program(steps);
    auto genomes = context().upload<float>(r.initial_genomes_device(), gpu::BufferUsage::StorageIO, "crn.g");
    std::vector<float> first_var;
    for (uint32_t gen : {0u, 3u}) {
      prog.set_generation(gen);
      gpu::Recorder rec(context());
      prog.record_init_and_steps(rec, genomes, 0);
      rec.submit();
      auto all = context().read<float>(prog.slots(), 0, size_t(pop) * prog.slot_bytes() / 4);
      const size_t words = prog.slot_bytes() / 4, state = fuse::kSlotHeaderBytes / 4;
      for (uint32_t i = 0; i < pop; ++i)
        for (uint32_t k = 0; k < vars; ++k)
          ASSERT_EQ(all[i * words + state + k], offset + sim::init_uniform(seed, gen, 0, k, scale))
              << name << " generation " << gen << " individual " << i << " variable " << k;
      first_var.push_back(all[state]);
      auto f = r.evaluate_initial(Strategy::Fused, 0, gen);
      uint32_t agree = 0, boundary = 0;
      for (uint32_t i = 0; i < pop; i += 4) {
        std::span<const float> genome(r.initial_genomes().data() + size_t(i) * r.genome_len(),
                                      r.genome_len());
        auto ref = sim::reference_run(w, genome, steps, r.starts(gen), {});
        if (std::abs(f[i] - ref.fitness) <= w.reference_atol)
          ++agree;
        else if (ref.min_margin < w.boundary_margin)
          ++boundary;
        else
          ADD_FAILURE() << name << " generation " << gen << " individual " << i << ": GPU " << f[i]
                        << ", reference " << ref.fitness << " (margin " << ref.min_margin << ")";
      }
      EXPECT_GE(2 * agree, agree + boundary) << name;
    }
    EXPECT_NE(first_var[0], first_var[1]) << name << ": generation 3 starts where generation 0 did";
  }
}

// Test that --episodes N is the mean of the N single-episode returns, in f32 in episode order,
// and that per-step and batched (with the between-episode dispatches) and fused agree on it.
TEST(SimEpisodes, FitnessIsTheMeanOverTheEpisodes) {
  const auto& w = sim::find_workload("cartpole");
  const uint32_t pop = 19, steps = 70, episodes = 3, seed = 12;
  sim::SimRunner multi(context(), w, pop, steps, seed, episodes);
  auto fp = multi.evaluate_initial(Strategy::PerStep, 0, 2);
  auto fb = multi.evaluate_initial(Strategy::Batched, 0, 2);
  auto ff = multi.evaluate_initial(Strategy::Fused, 0, 2);
  EXPECT_TRUE(sim::compare_fitness(fp, fb, 0).bitwise);
  EXPECT_EQ(sim::compare_fitness(fp, ff, 1e-5).over, 0u);
  EXPECT_EQ(multi.program(steps).dispatches(Strategy::Batched), uint64_t(episodes) * (steps + 1) + 1);
  // The episodes one at a time, from the reference's start states: the GPU's mean must equal
  // the f32 mean of the reference's episode returns (CartPole's returns are step counts, exact).
  bool spread = false;
  for (uint32_t i = 0; i < pop; ++i) {
    std::span<const float> genome(multi.initial_genomes().data() + size_t(i) * w.genome_len, w.genome_len);
    float total = 0;
    double margin = INFINITY, first = NAN;
    for (uint32_t e = 0; e < episodes; ++e) {
      auto one = w.reference({.genome = genome, .steps = steps, .seed = seed, .generation = 2, .episode = e});
      total += float(one.fitness);
      margin = std::min(margin, one.min_margin);
      if (e == 0) first = one.fitness;
      spread = spread || one.fitness != first;
    }
    if (margin >= w.boundary_margin) {
      EXPECT_EQ(ff[i], total / float(episodes)) << "individual " << i;
    }
  }
  EXPECT_TRUE(spread) << "the episodes all had the same return: their start states may not differ";
  EXPECT_THROW(sim::SimRunner(context(), w, pop, steps, seed, 0), Error);
  EXPECT_THROW(sim::SimRunner(context(), w, pop, steps, seed, fuse::kMaxEpisodes + 1), Error);
}

// Invariant (deterministic-start workloads, Market and Rastrigin): a genome's fitness does not
// depend on the generation, so under elitism the best fitness never decreases, with several
// episodes too; and every strategy follows the same evolution.
TEST(SimElitism, BestNeverDecreasesWhereStartsAreFixed) {
  for (const char* name : {"rastrigin", "market"}) {
    const auto& w = sim::find_workload(name);
    sim::SimRunner r(context(), w, 45, 30, 3, 2);
    auto g0 = r.evaluate_initial(Strategy::Fused, 0, 0);
    EXPECT_EQ(g0, r.evaluate_initial(Strategy::Fused, 0, 7)) << name << ": fitness depends on the generation";
    auto fused = r.run(Strategy::Fused, 6);
    auto batched = r.run(Strategy::Batched, 6);
    for (size_t g = 1; g < fused.stats.size(); ++g) {
      EXPECT_GE(fused.stats[g].best, fused.stats[g - 1].best) << name << " generation " << g;
      EXPECT_EQ(fused.stats[g].best, batched.stats[g].best) << name << " generation " << g;
    }
    EXPECT_GT(fused.stats.back().best, fused.stats.front().best) << name << ": no progress in 6 generations";
  }
}

// Test the command: --episodes reaches every strategy and the check, the JSON records it with
// the dispatch counts it implies, and an out-of-range value is refused.
TEST(SimEpisodes, Cli) {
  std::string json = ::testing::TempDir() + "/sim_episodes.json";
  auto [rc, out] = test::run_wgfuse(
      "--adapter cpu sim cartpole --mode all --pop 33 --steps 30 --episodes 3 "
      "--generations 1 --check --quiet --json " +
      json);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("check passed"), std::string::npos) << out;
  EXPECT_NE(out.find("episodes 3"), std::string::npos) << out;
  std::ifstream f(json);
  auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j["episodes"], 3);
  EXPECT_EQ(j["modes"]["perstep"]["dispatches_per_generation"], 3 * (30 + 1) + 1 + 3);
  EXPECT_EQ(j["modes"]["fused"]["dispatches_per_generation"], 4);
  auto bad = test::run_wgfuse("--adapter cpu sim cartpole --episodes 0 --pop 5 --steps 5");
  EXPECT_NE(bad.rc, 0);
  EXPECT_NE(bad.out.find("--episodes"), std::string::npos) << bad.out;
}

}  // namespace
}  // namespace wgfuse
