// The GA's generation on the GPU (kernels/sim_evolve.wgsl) against a CPU reference of the same
// algorithm, individual by individual and gene by gene: the statistics bit for bit (the mean's f32
// sum in the kernel's order: 256 strided partial sums, then a pairwise tree), the elites, every
// child's parents and crossover choices exactly, unmutated genes bit for bit and mutated ones
// against a double-precision Gaussian. Odd sizes, ties, NaN and infinities.
#include <cmath>
#include <cstring>
#include <limits>

#include "fuse/strategy.h"
#include "gpu/profiler.h"
#include "gpu/recorder.h"
#include "sim/evolution.h"
#include "sim/rng.h"
#include "sim/runner.h"
#include "support.h"
#include "util/error.h"

namespace wgfuse {
namespace {

using test::context;

constexpr uint32_t kNone = 0xffffffffu;
constexpr uint32_t kStreamSelect = 3, kStreamCross = 4, kStreamMutate = 5;  // sim_evolve.wgsl
constexpr uint32_t kReduceThreads = 256;                                    // REDUCE_SIZE there

bool finite(float x) {
  return std::isfinite(x);
}
// a (index ia) beats b: larger finite fitness, ties to the lower index; non-finite loses.
bool beats(float a, uint32_t ia, float b, uint32_t ib) {
  if (!finite(a)) return false;
  if (!finite(b)) return true;
  return a > b || (a == b && ia < ib);
}
bool better(float a, uint32_t ia, float b, uint32_t ib) {
  if (ia == kNone) return false;
  if (ib == kNone) return true;
  return beats(a, ia, b, ib);
}

struct RefStats {
  float best = 0, mean = 0;
  uint32_t best_index = 0, nonfinite = 0;
  std::vector<uint32_t> elites;
};

// The reduction with the kernel's partition: thread t scans t, t + 256, ... in order, then a
// pairwise tree over the threads (which fixes the f32 sum's bits and, among non-finite fitness
// only, which individual is taken).
RefStats reference_reduce(const std::vector<float>& fit, uint32_t elites) {
  const uint32_t pop = uint32_t(fit.size());
  RefStats r;
  for (uint32_t e = 0; e < elites; ++e) {
    std::vector<float> best(kReduceThreads, 0.0f), sum(kReduceThreads, 0.0f);
    std::vector<uint32_t> idx(kReduceThreads, kNone), bad(kReduceThreads, 0);
    for (uint32_t t = 0; t < kReduceThreads; ++t)
      for (uint32_t i = t; i < pop; i += kReduceThreads) {
        if (finite(fit[i]))
          sum[t] += fit[i];
        else
          ++bad[t];
        const bool taken = std::find(r.elites.begin(), r.elites.end(), i) != r.elites.end();
        if (!taken && better(fit[i], i, best[t], idx[t])) {
          best[t] = fit[i];
          idx[t] = i;
        }
      }
    for (uint32_t w = kReduceThreads / 2; w > 0; w /= 2)
      for (uint32_t t = 0; t < w; ++t) {
        if (better(best[t + w], idx[t + w], best[t], idx[t])) {
          best[t] = best[t + w];
          idx[t] = idx[t + w];
        }
        sum[t] += sum[t + w];
        bad[t] += bad[t + w];
      }
    r.elites.push_back(idx[0]);
    if (e == 0) {
      r.best = best[0];
      r.best_index = idx[0];
      r.nonfinite = bad[0];
      const uint32_t good = pop - bad[0];
      r.mean = good > 0 ? sum[0] / float(good) : 0.0f;
    }
  }
  return r;
}

uint32_t reference_tournament(const std::vector<float>& fit, const sim::GaConfig& cfg, uint32_t gen,
                              uint32_t child, uint32_t which) {
  const uint32_t pop = uint32_t(fit.size());
  uint32_t w = sim::hash5(cfg.seed, kStreamSelect, gen, child, which * 64) % pop;
  for (uint32_t k = 1; k < cfg.tournament; ++k) {
    const uint32_t c = sim::hash5(cfg.seed, kStreamSelect, gen, child, which * 64 + k) % pop;
    if (beats(fit[c], c, fit[w], w)) w = c;
  }
  return w;
}

// (0, 1], exact in f32 (the kernel's unit_open).
double unit_open(uint32_t h) {
  return (double(h >> 8) + 1.0) / 16777216.0;
}

// How far the kernel's f32 Box-Muller z = sqrt(-2 log u1) cos(2 pi u2) may be from the exact one
// under WGSL's accuracy (twice over): log within 2^-21 absolute on [0.5, 2], 3 ULP elsewhere; cos
// within 2^-11 absolute; sqrt, the products and the argument's rounding within a few ULP.
double gaussian_tolerance(double u1) {
  const double l = -2.0 * std::log(u1);
  const double dl = 2 * 2 * (u1 >= 0.5 ? 0x1p-21 : 3 * 0x1p-23 * std::abs(std::log(u1)));
  const double r = std::sqrt(l), dr = std::sqrt(l + dl) - std::sqrt(std::max(0.0, l - dl));
  return dr + 2 * 0x1p-11 * r + 1e-6 * (1 + r);
}

struct Case {
  uint32_t pop, len, elites, tournament, generation;
  uint32_t nonfinite;  // individuals given NaN or an infinity
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << "pop " << c.pop << " len " << c.len << " E " << c.elites << " T " << c.tournament << " non-finite "
      << c.nonfinite;
}

class SimGa : public ::testing::TestWithParam<Case> {};

// Test one GPU generation against the CPU reference above, everything checked exactly except
// the mutated genes' Gaussian (f32 log/cos/sqrt on the GPU: within WGSL's accuracy of them).
TEST_P(SimGa, GenerationMatchesTheCpuReference) {
  const Case c = GetParam();
  auto& ctx = context();
  auto fit = test::random_floats(c.pop, 31 + c.pop, -5.0f, 5.0f);
  fit[c.pop / 2] = fit[c.pop / 3];  // a tie
  const float bad[3] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                        -std::numeric_limits<float>::infinity()};
  for (uint32_t k = 0; k < c.nonfinite; ++k) fit[(k * 7919u + 5) % c.pop] = bad[k % 3];
  const auto genomes = test::random_floats(size_t(c.pop) * c.len, 41 + c.len, -1.0f, 1.0f);
  sim::GaConfig cfg;
  cfg.seed = 12345;
  cfg.elites = c.elites;
  cfg.tournament = c.tournament;
  cfg.rate = 0.2f;
  cfg.sigma = 0.3f;
  cfg.lo = -1.05f;
  cfg.hi = 1.05f;
  auto fbuf = ctx.upload<float>(fit, gpu::BufferUsage::StorageIO, "fit");
  auto src = ctx.upload<float>(genomes, gpu::BufferUsage::StorageIO, "src");
  auto dst = ctx.buffer(genomes.size() * 4, gpu::BufferUsage::StorageIO, "dst");
  sim::Evolution evo(ctx, c.pop, c.len, cfg);
  gpu::Recorder rec(ctx);
  evo.record(rec, c.generation, fbuf, src, dst);
  rec.submit();
  const auto st = evo.read_stats();
  const auto out = ctx.read_all<float>(dst);

  const RefStats ref = reference_reduce(fit, c.elites);
  EXPECT_EQ(std::memcmp(&st.best, &ref.best, 4), 0) << st.best << " vs " << ref.best;
  EXPECT_EQ(std::memcmp(&st.mean, &ref.mean, 4), 0) << st.mean << " vs " << ref.mean;
  EXPECT_EQ(st.best_index, ref.best_index);
  EXPECT_EQ(st.nonfinite, ref.nonfinite);
  double sum = 0;
  uint32_t good = 0;
  for (float f : fit)
    if (finite(f)) sum += f, ++good;
  EXPECT_NEAR(st.mean, sum / good, 1e-5 * std::max(1.0, std::abs(sum / good)));

  uint32_t mutated = 0, wrong = 0;
  for (uint32_t child = 0; child < c.pop && wrong < 10; ++child) {
    uint32_t pa, pb;
    if (child < c.elites) {
      pa = pb = ref.elites[child];
    } else {
      pa = reference_tournament(fit, cfg, c.generation, child, 0);
      pb = reference_tournament(fit, cfg, c.generation, child, 1);
    }
    for (uint32_t k = 0; k < c.len; ++k) {
      const size_t e = size_t(k) * c.pop + child;  // gene-major
      double want, tol = 0;
      bool exact = true;
      if (child < c.elites) {
        want = genomes[size_t(k) * c.pop + pa];
      } else {
        const uint32_t hc = sim::hash5(cfg.seed, kStreamCross, c.generation, child, k);
        want = genomes[size_t(k) * c.pop + ((hc & 1) == 0 ? pa : pb)];
        const uint32_t hm = sim::hash5(cfg.seed, kStreamMutate, c.generation, child, k);
        if (unit_open(hm) <= double(cfg.rate)) {
          const double u1 = unit_open(sim::pcg_hash(hm + 1)), u2 = unit_open(sim::pcg_hash(hm + 2));
          const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
          want = std::clamp(want + double(cfg.sigma) * z, double(cfg.lo), double(cfg.hi));
          tol = double(cfg.sigma) * gaussian_tolerance(u1) + 1e-6;
          exact = false;
          ++mutated;
        }
      }
      const bool ok = exact ? double(out[e]) == want : std::abs(double(out[e]) - want) <= tol;
      if (!ok) {
        ++wrong;
        ADD_FAILURE() << "child " << child << " gene " << k << (exact ? " (copied)" : " (mutated)")
                      << ": GPU " << out[e] << ", reference " << want;
      }
    }
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_TRUE(c.pop * c.len < 100 || mutated > 0) << "no gene mutated";
}

INSTANTIATE_TEST_SUITE_P(OddSizes, SimGa,
                         ::testing::Values(Case{1001, 13, 3, 3, 4, 5}, Case{37, 1, 1, 1, 0, 0},
                                           Case{4099, 70, 8, 5, 17, 40}, Case{257, 33, 2, 2, 9, 1},
                                           // fewer finite than elites: non-finite ones are taken
                                           Case{600, 3, 4, 3, 2, 598}));

bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// Test that several generations per command buffer (their params copied from rings inside it)
// and timing each GA kernel in its own pass change nothing but the timing: every generation's
// statistics are those of one generation per submit, bitwise, for batched, fused and team on an
// odd population, with a last command buffer of an odd number of generations (7 = 4 + 3); and
// that a count past the rings is refused.
TEST(SimPerSubmit, SameTrajectoryAsOneGenerationPerSubmit) {
  for (const char* name : {"cartpole", "market"}) {
    const auto& w = sim::find_workload(name);
    sim::SimRunner r(context(), w, 37, 23, 5, 1, fuse::max_team(context(), w.spec));
    for (auto s : {fuse::Strategy::Batched, fuse::Strategy::Fused, fuse::Strategy::Team}) {
      const uint32_t gens = 7;
      auto one = r.run(s, gens, {}, 1, 1);
      auto four = r.run(s, gens, {}, 2, 4);
      auto timed = r.run(s, gens, {}, 2, 1, true);
      auto deflt = r.run(s, gens);  // kDefaultPerSubmit: all 7 in one command buffer
      EXPECT_EQ(four.per_submit, 4u);
      ASSERT_EQ(four.stats.size(), gens);
      ASSERT_EQ(four.seconds.size(), gens);
      ASSERT_EQ(timed.stats.size(), gens);
      for (size_t g = 0; g < gens; ++g) {
        for (auto* other : {&four, &timed, &deflt}) {
          EXPECT_TRUE(same_bits(one.stats[g].best, other->stats[g].best)) << name << " generation " << g;
          EXPECT_TRUE(same_bits(one.stats[g].mean, other->stats[g].mean)) << name << " generation " << g;
          EXPECT_EQ(one.stats[g].best_index, other->stats[g].best_index) << name << " generation " << g;
        }
      }
      EXPECT_NE(one.stats.front().mean, one.stats.back().mean) << name;
      EXPECT_EQ(four.dispatches_per_generation, one.dispatches_per_generation) << name;
      if (!four.gpu_eval_ms.empty()) {
        ASSERT_EQ(four.gpu_eval_ms.size(), gens);
        ASSERT_EQ(four.gpu_between_generations_ms.size(), gens - 1);
        for (size_t g = 0; g < gens; ++g) EXPECT_GT(four.gpu_ga_ms[g], 0) << name;
        ASSERT_EQ(timed.gpu_ga_kernel_ms.size(), gens);
        for (auto& k : timed.gpu_ga_kernel_ms)
          for (double ms : k) EXPECT_GT(ms, 0) << name;
      }
    }
  }
  const auto& w = sim::find_workload("cartpole");
  sim::SimRunner r(context(), w, 37, 23, 5);
  EXPECT_THROW(r.run(fuse::Strategy::Fused, 2, {}, 2, sim::kMaxPerSubmit + 1), Error);
}

// --bandwidth's kernel rate: evaluations back to back in one timed pass. Refuses what cannot run
// that way, times where the adapter has timestamps, and leaves a later run as it would have been.
TEST(SimBackToBack, TimesTheEvaluationAloneAndChangesNothing) {
  const auto& w = sim::find_workload("rastrigin");
  sim::SimRunner r(context(), w, 53, 29, 3, 1, fuse::max_team(context(), w.spec));
  EXPECT_THROW(r.evaluation_us_back_to_back(fuse::Strategy::PerStep, 2), Error);
  EXPECT_THROW(r.evaluation_us_back_to_back(fuse::Strategy::Fused, 0), Error);
  const auto before = r.run(fuse::Strategy::Team, 3);
  for (auto s : {fuse::Strategy::Fused, fuse::Strategy::Team}) {
    const double us = r.evaluation_us_back_to_back(s, 3);
    if (gpu::Profiler(context(), 1).enabled())
      EXPECT_GT(us, 0) << fuse::to_string(s);
    else
      EXPECT_EQ(us, 0) << fuse::to_string(s);
  }
  const auto after = r.run(fuse::Strategy::Team, 3);
  for (size_t g = 0; g < 3; ++g) {
    EXPECT_TRUE(same_bits(before.stats[g].best, after.stats[g].best)) << "generation " << g;
    EXPECT_TRUE(same_bits(before.stats[g].mean, after.stats[g].mean)) << "generation " << g;
  }
}

}  // namespace
}  // namespace wgfuse
