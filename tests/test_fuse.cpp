// One definition, three strategies, on a real adapter: per-step, batched and fused agree with each
// other and with the CPU double-precision reference; the per-step state trajectories follow the
// reference step by step; the GA on the GPU keeps its elite and reduces correctly.
#include <cmath>
#include <cstring>

#include "fuse/sim_program.h"
#include "gpu/recorder.h"
#include "sim/evolution.h"
#include "sim/reference.h"
#include "sim/rng.h"
#include "sim/runner.h"
#include "sim_support.h"
#include "support.h"
#include "util/error.h"

namespace wgfuse {
namespace {

using fuse::Strategy;
using test::context;

struct Case {
  const char* workload;
  uint32_t pop, steps;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.workload << " pop " << c.pop << " L " << c.steps;
}

class FuseStrategies : public ::testing::TestWithParam<Case> {};

// Test that per-step and batched agree bitwise, fused within 1e-5 relative, for every
// individual of an odd-sized population, and all three with the CPU reference on a sample.
TEST_P(FuseStrategies, AgreeWithEachOtherAndTheReference) {
  auto c = GetParam();
  const auto& w = sim::find_workload(c.workload);
  sim::SimRunner r(context(), w, c.pop, c.steps, 7);
  auto fp = r.evaluate_initial(Strategy::PerStep);
  auto fb = r.evaluate_initial(Strategy::Batched);
  auto ff = r.evaluate_initial(Strategy::Fused);
  auto pb = sim::compare_fitness(fp, fb, 0);
  EXPECT_TRUE(pb.bitwise) << "per-step vs batched: first difference at " << pb.first_over;
  auto pf = sim::compare_fitness(fp, ff, 1e-5);
  EXPECT_EQ(pf.over, 0u) << "fused vs per-step: max rel " << pf.max_rel << ", first at " << pf.first_over
                         << ": " << (pf.first_over >= 0 ? ff[pf.first_over] : 0) << " vs "
                         << (pf.first_over >= 0 ? fp[pf.first_over] : 0);
  // Not a constant: the population spreads.
  float lo = *std::min_element(fp.begin(), fp.end()), hi = *std::max_element(fp.begin(), fp.end());
  if (w.name != "acrobot") {
    EXPECT_LT(lo, hi) << "all individuals have the same fitness";
  }
  for (auto s : {Strategy::PerStep, Strategy::Batched, Strategy::Fused}) {
    auto ref = r.check_reference(s, 32);
    EXPECT_TRUE(ref.pass()) << fuse::to_string(s) << ": " << ref.agree << "/" << ref.samples << " at "
                            << ref.horizon << " steps; first bad " << ref.first_bad << ": GPU " << ref.got
                            << ", reference " << ref.want;
  }
}

INSTANTIATE_TEST_SUITE_P(FuseWorkloads, FuseStrategies,
                         ::testing::Values(Case{"rastrigin", 67, 301}, Case{"acrobot", 67, 120},
                                           Case{"cartpole", 67, 200}, Case{"mountaincar", 67, 200},
                                           Case{"market", 67, 300}),
                         [](const auto& info) { return std::string(info.param.workload); });

// Reads the per-step slots: word 0 is t, then the State's words.
// Slot `ind` of the per-step strategies: word 0 the step count, then (from kState) the State.
constexpr size_t kState = fuse::kSlotHeaderBytes / 4;
std::vector<float> slot_words(const fuse::SimProgram& p, uint32_t ind) {
  auto all = context().read<float>(p.slots(), 0, p.slots().size() / 4);
  uint32_t words = p.slot_bytes() / 4;
  return std::vector<float>(all.begin() + size_t(ind) * words, all.begin() + size_t(ind + 1) * words);
}

uint32_t as_u32(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Test that the GPU's Acrobot state follows the double-precision reference step by step for 25
// steps (5 s simulated), within f32 error, from the same initial state and with the same actions.
// The angles within 5e-4 rad: WGSL's sin and cos may be off by 2^-11 (4.9e-4), and from some
// starts (this seed's common start state) the chaotic dynamics grow SwiftShader's error to
// 2.5e-4 by step 25; a wrong term in the equations is off by far more.
TEST(FuseTrajectories, AcrobotFollowsTheReference) {
  const auto& w = sim::find_workload("acrobot");
  const uint32_t pop = 5, n = 25;
  sim::SimRunner r(context(), w, pop, n, 3);
  auto& prog = r.program(n);
  auto genomes = context().upload<float>(r.initial_genomes_device(), gpu::BufferUsage::StorageIO, "genomes");
  for (uint32_t ind = 0; ind < pop; ++ind) {
    std::span<const float> g(r.initial_genomes().data() + ind * 163, 163);
    sim::AcrobotState s{sim::init_uniform(3, 0, 0, 0, 0.1f), sim::init_uniform(3, 0, 0, 1, 0.1f),
                        sim::init_uniform(3, 0, 0, 2, 0.1f), sim::init_uniform(3, 0, 0, 3, 0.1f)};
    for (uint32_t t = 1; t <= n; t += 6) {
      gpu::Recorder rec(context());
      prog.record_init_and_steps(rec, genomes, t);
      rec.submit();
      auto words = slot_words(prog, ind);
      ASSERT_EQ(as_u32(words[0]), t);
      // The reference from the start, with the actions of its own policy.
      sim::AcrobotState ref = s;
      for (uint32_t k = 0; k < t; ++k) {
        double obs[6] = {std::cos(ref.th1), std::sin(ref.th1), std::cos(ref.th2),
                         std::sin(ref.th2), ref.dth1,          ref.dth2};
        const int act = sim::mlp_argmax(g, 6, 16, 3, obs);
        if (sim::acrobot_terminal(ref)) break;
        ref = sim::acrobot_step(ref, act - 1.0);
      }
      EXPECT_NEAR(words[kState + 0], ref.th1, 5e-4) << "individual " << ind << " step " << t;
      EXPECT_NEAR(words[kState + 1], ref.th2, 5e-4) << "individual " << ind << " step " << t;
      EXPECT_NEAR(words[kState + 2], ref.dth1, 1e-3) << "individual " << ind << " step " << t;
      EXPECT_NEAR(words[kState + 3], ref.dth2, 1e-3) << "individual " << ind << " step " << t;
    }
  }
}

// Test that the GPU's CartPole and MountainCar states follow the reference step by step, within
// the error WGSL allows its sin and cos.
TEST(FuseTrajectories, CartPoleAndMountainCarFollowTheReference) {
  {
    const auto& w = sim::find_workload("cartpole");
    sim::SimRunner r(context(), w, 3, 30, 5);
    auto& prog = r.program(30);
    auto genomes =
        context().upload<float>(r.initial_genomes_device(), gpu::BufferUsage::StorageIO, "genomes");
    gpu::Recorder rec(context());
    prog.record_init_and_steps(rec, genomes, 12);
    rec.submit();
    for (uint32_t ind = 0; ind < 3; ++ind) {
      std::span<const float> g(r.initial_genomes().data() + ind * 114, 114);
      sim::CartPoleState s{sim::init_uniform(5, 0, 0, 0, 0.05f), sim::init_uniform(5, 0, 0, 1, 0.05f),
                           sim::init_uniform(5, 0, 0, 2, 0.05f), sim::init_uniform(5, 0, 0, 3, 0.05f)};
      uint32_t taken = 0;
      for (; taken < 12 && !sim::cartpole_terminal(s); ++taken) {
        double obs[4] = {s.x, s.x_dot, s.theta, s.theta_dot};
        s = sim::cartpole_step(s, sim::mlp_argmax(g, 4, 16, 2, obs));
      }
      // WGSL allows sin and cos an absolute error of 2^-11 (SwiftShader's measured ~1e-5 here):
      // about 2e-4 per step on theta_dot at worst, so 12 steps stay within 2e-3. A wrong
      // equation is off by far more (the states move by ~1 over these steps).
      auto words = slot_words(prog, ind);
      EXPECT_NEAR(words[kState + 0], s.x, 2e-3) << ind;
      EXPECT_NEAR(words[kState + 1], s.x_dot, 2e-3) << ind;
      EXPECT_NEAR(words[kState + 2], s.theta, 2e-3) << ind;
      EXPECT_NEAR(words[kState + 3], s.theta_dot, 2e-3) << ind;
      EXPECT_EQ(words[kState + 4], float(taken)) << ind;  // return = steps taken
    }
  }
  {
    const auto& w = sim::find_workload("mountaincar");
    sim::SimRunner r(context(), w, 3, 50, 5);
    auto& prog = r.program(50);
    auto genomes =
        context().upload<float>(r.initial_genomes_device(), gpu::BufferUsage::StorageIO, "genomes");
    gpu::Recorder rec(context());
    prog.record_init_and_steps(rec, genomes, 50);
    rec.submit();
    for (uint32_t ind = 0; ind < 3; ++ind) {
      std::span<const float> g(r.initial_genomes().data() + ind * 99, 99);
      sim::MountainCarState s{double(-0.5f + sim::init_uniform(5, 0, 0, 0, 0.1f)), 0.0};
      for (int t = 0; t < 50; ++t) {
        double obs[2] = {s.pos, s.vel / 0.07};
        s = sim::mountaincar_step(s, sim::mlp_argmax(g, 2, 16, 3, obs));
      }
      // cos(3 pos) within 2^-11 (WGSL): velocity error <= 50 x 0.0025 x 2^-11 = 6e-5 after 50
      // steps, position error a multiple of that.
      auto words = slot_words(prog, ind);
      EXPECT_NEAR(words[kState + 0], s.pos, 1e-3) << ind;
      EXPECT_NEAR(words[kState + 1], s.vel, 6e-5) << ind;
    }
  }
}

// Test the GA's reduction (best, its index, mean, the elites) against the CPU on an odd-sized
// fitness vector with a tie and a NaN, and that the elites are copied unchanged.
TEST(FuseEvolution, ReduceAndElitism) {
  auto& ctx = context();
  const uint32_t pop = 1001, len = 13;
  auto fit = test::random_floats(pop, 21, -5.0f, 5.0f);
  fit[800] = 7.5f;
  fit[500] = 7.5f;  // a tie: the lower index first
  fit[77] = 6.0f;
  fit[3] = NAN;
  auto genomes = test::random_floats(size_t(pop) * len, 22, -1.0f, 1.0f);
  auto fbuf = ctx.upload<float>(fit, gpu::BufferUsage::StorageIO, "fit");
  auto src = ctx.upload<float>(genomes, gpu::BufferUsage::StorageIO, "src");
  auto dst = ctx.buffer(genomes.size() * 4, gpu::BufferUsage::StorageIO, "dst");
  sim::GaConfig cfg;
  cfg.seed = 9;
  cfg.lo = -1;
  cfg.hi = 1;
  cfg.elites = 3;
  sim::Evolution evo(ctx, pop, len, cfg);
  gpu::Recorder rec(ctx);
  EXPECT_EQ(evo.record(rec, 0, fbuf, src, dst), 3u);
  rec.submit();
  auto st = evo.read_stats();
  double sum = 0;
  for (uint32_t i = 0; i < pop; ++i)
    if (i != 3) sum += fit[i];
  EXPECT_EQ(st.best, 7.5f);
  EXPECT_EQ(st.best_index, 500u);
  EXPECT_EQ(st.nonfinite, 1u);
  EXPECT_NEAR(st.mean, sum / (pop - 1), 1e-4);
  // Gene-major storage: gene k of individual c at k * pop + c. Children 0, 1, 2 are the elites
  // 500, 800, 77 in that order.
  auto out = ctx.read_all<float>(dst);
  const uint32_t elites[3] = {500, 800, 77};
  for (uint32_t c = 0; c < 3; ++c)
    for (uint32_t k = 0; k < len; ++k)
      EXPECT_EQ(out[k * pop + c], genomes[k * pop + elites[c]]) << "elite " << c << " gene " << k;
  // Other children: every gene in range, most copied from some parent unchanged.
  size_t copied = 0, others = 0;
  for (size_t e = 0; e < out.size(); ++e) {
    if (e % pop < 3) continue;
    ++others;
    ASSERT_GE(out[e], -1.0f);
    ASSERT_LE(out[e], 1.0f);
    size_t k = e / pop;
    for (uint32_t p = 0; p < pop; ++p)
      if (genomes[k * pop + p] == out[e]) {
        ++copied;
        break;
      }
  }
  double frac = double(copied) / double(others);
  EXPECT_GT(frac, 0.85);  // mutation rate 0.1
  EXPECT_LT(frac, 0.95);
}

// Test that evolution on the GPU improves CartPole and that all strategies follow the same
// evolution. (The best fitness may decrease here: the start states are drawn afresh each
// generation, so the elite is re-scored; tests/test_sim_episodes.cpp checks that invariant
// where the starts are fixed.)
TEST(FuseEvolution, ImprovesAndAgreesAcrossStrategies) {
  const auto& w = sim::find_workload("cartpole");
  sim::SimRunner r(context(), w, 128, 150, 11);
  auto fused = r.run(Strategy::Fused, 6);
  auto batched = r.run(Strategy::Batched, 6);
  ASSERT_EQ(fused.stats.size(), 6u);
  EXPECT_GT(fused.stats.back().mean, fused.stats.front().mean);
  for (size_t g = 0; g < fused.stats.size(); ++g) {
    EXPECT_EQ(fused.stats[g].best, batched.stats[g].best) << g;
    EXPECT_EQ(fused.stats[g].mean, batched.stats[g].mean) << g;
  }
  EXPECT_EQ(fused.dispatches_per_generation, 4u);
  EXPECT_EQ(batched.dispatches_per_generation, 150u + 2 + 3);
}

// Test that the generated module is the three files in order and names every entry point.
TEST(FuseSource, GeneratedFromOneDefinition) {
  const auto& w = sim::find_workload("acrobot");
  auto src = fuse::generated_source(w.spec);
  auto a = src.find("fn pcg_hash"), b = src.find("fn acrobot_dsdt"), c = src.find("fn sim_fused_main");
  ASSERT_NE(a, std::string::npos);
  ASSERT_NE(b, std::string::npos);
  ASSERT_NE(c, std::string::npos);
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  for (auto e : {fuse::kInitEntry, fuse::kFitnessEntry})
    EXPECT_NE(src.find(std::string("fn ") + e), std::string::npos) << e;
}

// Test that each workload's WGSL State struct has the size of its header (state_bytes,
// from which the slot buffers are sized; test::slots_that_fit).
TEST(FuseSource, StateSizeMatchesTheHeader) {
  for (auto& w : sim::workloads())
    EXPECT_EQ(test::slots_that_fit(w.spec, 1000), 1000u)
        << w.name << ": WGSL State is not " << w.spec.state_bytes << " bytes";
}

// Test that every strategy row names an entry point that each workload offering it defines, that
// names round-trip, and that an unknown name is refused with the table's names.
TEST(FuseStrategyTable, RowsMatchTheSources) {
  for (auto& w : sim::workloads()) {
    for (auto& r : fuse::strategies()) {
      EXPECT_EQ(fuse::parse_strategy(r.name), r.id);
      EXPECT_EQ(fuse::to_string(r.id), r.name);
      const auto src = fuse::generated_source(w.spec, r.id);
      EXPECT_NE(src.find("fn " + std::string(r.entry) + "("), std::string::npos) << w.name << " " << r.name;
    }
  }
  EXPECT_EQ(fuse::dispatch_count(fuse::Strategy::Batched, 37), 39u);
  EXPECT_EQ(fuse::dispatch_count(fuse::Strategy::Fused, 37), 1u);
  try {
    fuse::parse_strategy("eager");
    FAIL() << "an unknown strategy was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("perstep, batched, fused, team"), std::string::npos) << e.what();
  }
}

// Test that a population needing more workgroups than a dimension allows is refused by name.
TEST(FuseLimits, TooManyWorkgroupsNamesTheLimit) {
  auto& ctx = context();
  const auto& w = sim::find_workload("rastrigin");
  uint32_t pop = (ctx.limits().max_compute_workgroups_per_dimension + 1) * 64;
  try {
    fuse::SimProgram p(ctx, w.spec, pop, 4, 4, 1, {}, 0);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("maxComputeWorkgroupsPerDimension"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace wgfuse

namespace wgfuse {
namespace {

// Test that the comparisons behind --check can fail: one ulp is not bitwise, a relative
// difference over the tolerance is counted, NaN against a number is a difference, and a
// reference check with an unexplained difference, or with more boundary cases than agreements,
// does not pass.
TEST(FuseChecks, ComparisonsCanFail) {
  std::vector<float> a{1.0f, -2.0f, 0.0f, 5.0f}, b = a;
  EXPECT_TRUE(sim::compare_fitness(a, b, 0).bitwise);
  b[1] = std::nextafter(-2.0f, 0.0f);
  auto r = sim::compare_fitness(a, b, 1e-5);
  EXPECT_FALSE(r.bitwise);
  EXPECT_EQ(r.over, 0u);
  b[3] = 5.001f;
  r = sim::compare_fitness(a, b, 1e-5);
  EXPECT_EQ(r.over, 1u);
  EXPECT_EQ(r.first_over, 3);
  b[3] = NAN;
  EXPECT_EQ(sim::compare_fitness(a, b, 1e-5).over, 1u);
  sim::ReferenceCheck c;
  c.samples = 10;
  c.agree = 10;
  EXPECT_TRUE(c.pass());
  c.agree = 9;
  EXPECT_FALSE(c.pass());  // one unexplained difference
  c.at_boundary = 1;
  EXPECT_TRUE(c.pass());
  c.agree = 4;
  c.at_boundary = 6;
  EXPECT_FALSE(c.pass());  // mostly "at a boundary" is no evidence
}

// Test that the reference reports how close an episode came to a decision: a policy with all
// logits equal is exactly at an argmax tie.
TEST(FuseChecks, ReferenceMarginSeesTies) {
  const auto& cp = sim::find_workload("cartpole");
  std::vector<float> zero(114, 0.0f);
  auto r = sim::reference_run(cp, zero, 50, {.seed = 1}, {});
  EXPECT_EQ(r.min_margin, 0.0);
  const auto& rs = sim::find_workload("rastrigin");
  std::vector<float> x(10, 0.5f);
  EXPECT_TRUE(std::isinf(sim::reference_run(rs, x, 10, {.seed = 1}, {}).min_margin));
}

}  // namespace
}  // namespace wgfuse
