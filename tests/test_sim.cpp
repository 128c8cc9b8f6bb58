// The simulation workloads: the CPU references against the published equations written out
// independently here, the RNG, the workload registry and the `wgfuse sim` command.
#include <array>
#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "sim/market_data.h"
#include "sim/reference.h"
#include "sim/rng.h"
#include "sim/workloads.h"
#include "support.h"
#include "util/error.h"

namespace wgfuse {
namespace {

constexpr double kPi = 3.14159265358979323846;

// ---- The published equations, written out again (Gymnasium classic_control, in double) ----

using V4 = std::array<double, 4>;

// Acrobot, book dynamics (Sutton and Barto): d/dt (th1, th2, dth1, dth2) at torque a.
V4 acrobot_derivative(const V4& s, double a) {
  const double m1 = 1, m2 = 1, l1 = 1, lc1 = 0.5, lc2 = 0.5, I1 = 1, I2 = 1, g = 9.8;
  double c2 = std::cos(s[1]), s2 = std::sin(s[1]);
  double d1 = m1 * lc1 * lc1 + m2 * (l1 * l1 + lc2 * lc2 + 2 * l1 * lc2 * c2) + I1 + I2;
  double d2 = m2 * (lc2 * lc2 + l1 * lc2 * c2) + I2;
  double phi2 = m2 * lc2 * g * std::sin(s[0] + s[1]);  // cos(x - pi/2) = sin(x)
  double phi1 = -m2 * l1 * lc2 * s[3] * s[3] * s2 - 2 * m2 * l1 * lc2 * s[3] * s[2] * s2 +
                (m1 * lc1 + m2 * l1) * g * std::sin(s[0]) + phi2;
  double dd2 =
      (a + d2 / d1 * phi1 - m2 * l1 * lc2 * s[2] * s[2] * s2 - phi2) / (m2 * lc2 * lc2 + I2 - d2 * d2 / d1);
  double dd1 = -(d2 * dd2 + phi1) / d1;
  return {s[2], s[3], dd1, dd2};
}

V4 rk4(const std::function<V4(const V4&)>& f, const V4& y, double h) {
  auto add = [](const V4& a, const V4& b, double k) {
    return V4{a[0] + k * b[0], a[1] + k * b[1], a[2] + k * b[2], a[3] + k * b[3]};
  };
  V4 k1 = f(y), k2 = f(add(y, k1, h / 2)), k3 = f(add(y, k2, h / 2)), k4 = f(add(y, k3, h));
  V4 out;
  for (int i = 0; i < 4; ++i) out[i] = y[i] + h / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
  return out;
}

double wrap_pi(double x) {
  while (x > kPi) x -= 2 * kPi;
  while (x < -kPi) x += 2 * kPi;
  return x;
}

// Test that the Acrobot reference follows the book dynamics under RK4 over a 40-step
// trajectory with every torque, including wrapping and velocity clipping.
TEST(SimReference, AcrobotTrajectoryMatchesPublishedEquations) {
  V4 want{0.05, -0.08, 0.03, 0.09};
  sim::AcrobotState got{want[0], want[1], want[2], want[3]};
  double max_err = 0;
  bool wrapped = false;
  for (int t = 0; t < 40; ++t) {
    double torque = (t / 5) % 3 - 1.0;  // bang-bang pumping: -1, 0, +1 in blocks of 5
    if (t >= 10) torque = got.dth1 >= 0 ? 1.0 : -1.0;
    V4 n = rk4([&](const V4& s) { return acrobot_derivative(s, torque); }, want, 0.2);
    n[0] = wrap_pi(n[0]);
    n[1] = wrap_pi(n[1]);
    n[2] = std::min(std::max(n[2], -4 * kPi), 4 * kPi);
    n[3] = std::min(std::max(n[3], -9 * kPi), 9 * kPi);
    if (std::abs(n[1]) > 2.5) wrapped = true;
    want = n;
    got = sim::acrobot_step(got, torque);
    max_err = std::max({max_err, std::abs(got.th1 - want[0]), std::abs(got.th2 - want[1]),
                        std::abs(got.dth1 - want[2]), std::abs(got.dth2 - want[3])});
    ASSERT_LT(max_err, 1e-9) << "step " << t;
    EXPECT_EQ(sim::acrobot_terminal(got), -std::cos(want[0]) - std::cos(want[1] + want[0]) > 1.0);
  }
  (void)wrapped;
}

// Test one Acrobot step against numbers worked out by hand from the equations at rest: hanging
// straight down with no torque nothing moves; with torque +1 the second joint accelerates
// positively and the first negatively (the reaction).
TEST(SimReference, AcrobotAtRest) {
  auto s = sim::acrobot_step({0, 0, 0, 0}, 0.0);
  EXPECT_NEAR(s.th1, 0, 1e-15);
  EXPECT_NEAR(s.dth2, 0, 1e-15);
  auto p = sim::acrobot_step({0, 0, 0, 0}, 1.0);
  EXPECT_GT(p.dth2, 0);
  EXPECT_LT(p.dth1, 0);
  // At rest d1 = 0.25 + (1 + 0.25 + 1) + 2 = 4.5, d2 = (0.25 + 0.5) + 1 = 1.75, so the initial
  // ddth2 = 1 / (0.25 + 1 - 1.75^2 / 4.5) = 1.6363...; dth2 after 0.2 s is close to 0.2 * that.
  double dd2 = 1.0 / (1.25 - 1.75 * 1.75 / 4.5);
  EXPECT_NEAR(p.dth2, 0.2 * dd2, 0.02);
}

// Test the CartPole reference against the Euler equations over 30 steps of alternating pushes,
// and its termination at 12 degrees and 2.4 m.
TEST(SimReference, CartPoleTrajectoryMatchesPublishedEquations) {
  double x = 0.01, xd = -0.02, th = 0.03, thd = 0.04;
  sim::CartPoleState got{x, xd, th, thd};
  for (int t = 0; t < 30; ++t) {
    int action = (t % 3 == 0) ? 1 : 0;
    double force = action ? 10.0 : -10.0;
    double ct = std::cos(th), st = std::sin(th);
    double temp = (force + 0.05 * thd * thd * st) / 1.1;
    double thacc = (9.8 * st - ct * temp) / (0.5 * (4.0 / 3.0 - 0.1 * ct * ct / 1.1));
    double xacc = temp - 0.05 * thacc * ct / 1.1;
    x += 0.02 * xd;
    xd += 0.02 * xacc;
    th += 0.02 * thd;
    thd += 0.02 * thacc;
    got = sim::cartpole_step(got, action);
    ASSERT_NEAR(got.x, x, 1e-12) << t;
    ASSERT_NEAR(got.x_dot, xd, 1e-12) << t;
    ASSERT_NEAR(got.theta, th, 1e-12) << t;
    ASSERT_NEAR(got.theta_dot, thd, 1e-12) << t;
  }
  EXPECT_TRUE(sim::cartpole_terminal({0, 0, 0.21, 0}));
  EXPECT_FALSE(sim::cartpole_terminal({0, 0, 0.209, 0}));
  EXPECT_TRUE(sim::cartpole_terminal({-2.41, 0, 0, 0}));
  EXPECT_FALSE(sim::cartpole_terminal({2.39, 0, 0, 0}));
}

// Test the MountainCar reference against its update rule, including the left wall (velocity
// zeroed) and the goal.
TEST(SimReference, MountainCarTrajectoryMatchesPublishedEquations) {
  double p = -0.5, v = 0;
  sim::MountainCarState got{p, v};
  bool hit_wall = false;
  for (int t = 0; t < 200; ++t) {
    int action = (t < 30 || (t >= 60 && t < 120)) ? 0 : 2;  // rock: left, right, left into the wall, right
    v += (action - 1) * 0.001 + std::cos(3 * p) * (-0.0025);
    v = std::min(std::max(v, -0.07), 0.07);
    p += v;
    p = std::min(std::max(p, -1.2), 0.6);
    if (p == -1.2 && v < 0) {
      v = 0;
      hit_wall = true;
    }
    got = sim::mountaincar_step(got, action);
    ASSERT_DOUBLE_EQ(got.pos, p) << t;
    ASSERT_DOUBLE_EQ(got.vel, v) << t;
  }
  EXPECT_TRUE(hit_wall);
  EXPECT_TRUE(sim::mountaincar_terminal({0.5, 0.0}));
  EXPECT_FALSE(sim::mountaincar_terminal({0.5, -0.001}));
  EXPECT_FALSE(sim::mountaincar_terminal({0.49, 0.01}));
}

// Test the PCG hash against values computed independently (Python, bench/baselines/sim_common.py
// implements the same function) and that the uniforms are exact and in range.
TEST(SimRng, HashAndUniformsAreThePublishedOnes) {
  EXPECT_EQ(sim::pcg_hash(0), 129708002u);
  EXPECT_EQ(sim::pcg_hash(1), 2831084092u);
  EXPECT_EQ(sim::hash4(1, 2, 3, 4), 1787075052u);
  EXPECT_EQ(sim::hash4(7, 1, 65535, 162), 1951673424u);
  EXPECT_EQ(sim::unit_sym(0), -1.0f);
  EXPECT_EQ(sim::unit_sym(0xffffffffu), 1.0f - 1.0f / 8388608.0f);
  for (uint32_t k = 0; k < 1000; ++k) {
    float u = sim::unit_sym(sim::pcg_hash(k));
    double exact = double(sim::pcg_hash(k) >> 8) / 8388608.0 - 1.0;
    ASSERT_EQ(double(u), exact);
  }
}

// Test that the market generator is deterministic, seed-dependent, prefix-consistent across
// lengths, and gives sane hourly returns.
TEST(SimMarket, DeterministicAndSane) {
  auto a = sim::generate_market(300, 1), b = sim::generate_market(300, 1), c = sim::generate_market(300, 2);
  auto d = sim::generate_market(100, 1);
  EXPECT_EQ(a.records, b.records);
  EXPECT_NE(a.records, c.records);
  ASSERT_EQ(a.records.size(), 300u * sim::kMarketRecord);
  for (size_t i = 0; i < d.records.size(); ++i) ASSERT_EQ(d.records[i], a.records[i]) << i;
  double sq = 0;
  for (uint32_t t = 0; t < 300; ++t)
    for (uint32_t k = 0; k < sim::kAssets; ++k) {
      double r = a.records[t * sim::kMarketRecord + sim::kFeatures + k];
      ASSERT_LT(std::abs(r), 0.05);
      sq += r * r;
    }
  double hourly_vol = std::sqrt(sq / (300 * sim::kAssets));
  EXPECT_GT(hourly_vol, 0.0005);  // 5% a year
  EXPECT_LT(hourly_vol, 0.01);    // 94% a year
}

// Test that the device layout of the market records holds every value of the host record where
// kernels/sim_market.wgsl reads it (features at 0..5, group g's returns at 8 + 4 g) and zeros in
// the padding, and that a partial record is refused.
TEST(SimMarket, DeviceRecordsVec4Layout) {
  const uint32_t steps = 37;
  auto m = sim::generate_market(steps, 3);
  auto dev = sim::device_records(m.records);
  ASSERT_EQ(dev.size(), size_t(steps) * sim::kMarketDeviceRecord);
  for (uint32_t t = 0; t < steps; ++t) {
    const float* rec = &m.records[size_t(t) * sim::kMarketRecord];
    const float* d = &dev[size_t(t) * sim::kMarketDeviceRecord];
    for (uint32_t k = 0; k < sim::kFeatures; ++k) ASSERT_EQ(d[k], rec[k]) << t << " " << k;
    ASSERT_EQ(d[6], 0.0f);
    ASSERT_EQ(d[7], 0.0f);
    for (uint32_t g = 0; g < 4; ++g)
      for (uint32_t a = 0; a < 4; ++a)
        ASSERT_EQ(d[8 + 4 * g + a], rec[sim::kFeatures + 4 * g + a]) << t << " " << g << " " << a;
  }
  std::vector<float> partial(m.records.begin(), m.records.end() - 1);
  EXPECT_THROW(sim::device_records(partial), Error);
}

// Test that unknown workloads list the known ones.
TEST(SimWorkloads, UnknownNameListsKnown) {
  try {
    sim::find_workload("pong");
    FAIL();
  } catch (const Error& e) {
    std::string m = e.what();
    for (auto n : {"rastrigin", "acrobot", "cartpole", "mountaincar", "market"})
      EXPECT_NE(m.find(n), std::string::npos) << m;
  }
}

// Test that a workload describes itself: its reference and its data are members, so a copy under
// another name runs the same reference, and only the workloads with data produce records of their
// stride, one per step.
TEST(SimWorkloads, DescribeThemselves) {
  auto renamed = sim::find_workload("cartpole");
  renamed.name = "cartpole-copy";
  std::vector<float> g(renamed.genome_length(100));
  for (size_t k = 0; k < g.size(); ++k) g[k] = float(std::sin(0.7 * double(k) + 0.3));
  EXPECT_EQ(sim::reference_fitness(renamed, g, 100, {.seed = 5}, {}),
            sim::reference_fitness(sim::find_workload("cartpole"), g, 100, {.seed = 5}, {}));
  renamed.reference = nullptr;
  EXPECT_THROW(sim::reference_fitness(renamed, g, 100, {.seed = 5}, {}), Error);
  for (auto& w : sim::workloads()) {
    EXPECT_TRUE(w.reference) << w.name;
    if (!w.data) continue;
    auto d = w.data(41, 7);
    EXPECT_GT(d.stride, 0u) << w.name;
    EXPECT_EQ(d.records.size(), size_t(41) * d.stride) << w.name;
    EXPECT_EQ(d.device_stride % 4, 0u) << w.name;  // the kernels read vec4s
    EXPECT_GE(d.device_stride, d.stride) << w.name;
    EXPECT_EQ(d.device.size(), size_t(41) * d.device_stride) << w.name;
  }
  EXPECT_TRUE(sim::find_workload("market").data);
  EXPECT_FALSE(sim::find_workload("acrobot").data);
}

// Test that the reference gives the Acrobot's -1 per step until the terminal step and CartPole's
// +1 per step including the terminal one.
TEST(SimReference, RewardConventions) {
  const auto& cp = sim::find_workload("cartpole");
  std::vector<float> zero(cp.genome_length(500), 0.0f);  // all logits 0: action 0 (push left)
  double f = sim::reference_fitness(cp, zero, 500, {.seed = 1}, {});
  // Pushing left every step: the pole falls right within about a second.
  EXPECT_GT(f, 5);
  EXPECT_LT(f, 60);
  EXPECT_EQ(f, std::floor(f));
  const auto& ac = sim::find_workload("acrobot");
  std::vector<float> none(ac.genome_length(500), 0.0f);
  EXPECT_EQ(sim::reference_fitness(ac, none, 500, {.seed = 1}, {}), -500.0);  // torque -1 for ever: never up
  const auto& mc = sim::find_workload("mountaincar");
  std::vector<float> idle(mc.genome_length(200), 0.0f);
  EXPECT_EQ(sim::reference_fitness(mc, idle, 200, {.seed = 1}, {}), -200.0);
}

// Test the policy against logits worked out by hand: 2 inputs, 2 hidden units, 3 outputs.
TEST(SimReference, MlpArgmaxByHand) {
  // W1 = [[1, 0], [0, 1]], b1 = [0, 0.5], W2 = [[1, 0], [0, 1], [-1, -1]], b2 = [0, 0, 0.25]
  const std::vector<float> g = {1, 0, 0, 1, 0, 0.5f, 1, 0, 0, 1, -1, -1, 0, 0, 0.25f};
  const double obs[2] = {0.5, 0.0};
  // h = (tanh 0.5, tanh 0.5); logits = (tanh 0.5, tanh 0.5, 0.25 - 2 tanh 0.5): a tie of 0 and 1.
  double margin = INFINITY;
  EXPECT_EQ(sim::mlp_argmax(g, 2, 2, 3, obs, &margin), 0);  // ties -> lowest index
  EXPECT_EQ(margin, 0.0);
  const double obs2[2] = {0.3, 0.1};  // h = (tanh 0.3, tanh 0.6): output 1 wins
  margin = INFINITY;
  EXPECT_EQ(sim::mlp_argmax(g, 2, 2, 3, obs2, &margin), 1);
  EXPECT_NEAR(margin, std::tanh(0.6) - std::tanh(0.3), 1e-7);
  const double obs3[2] = {-1.0, -1.5};  // h = (tanh -1, tanh -1): logit 2 = 0.25 + 2 tanh 1 wins
  EXPECT_EQ(sim::mlp_argmax(g, 2, 2, 3, obs3), 2);
  EXPECT_THROW(sim::mlp_argmax(std::span<const float>(g).first(14), 2, 2, 3, obs), Error);
}

// Test the command end to end: --check passes at a small size and the JSON has the documented
// fields.
TEST(SimCli, CheckPassesAndJsonHasTheFields) {
  std::string json = ::testing::TempDir() + "/sim_cartpole.json";
  auto [rc, out] = test::run_wgfuse(
      "--adapter cpu sim cartpole --mode all --pop 67 --steps 40 --generations 2 --check --quiet --json " +
      json);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("check passed"), std::string::npos) << out;
  std::ifstream f(json);
  auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j["workload"], "cartpole");
  EXPECT_EQ(j["pop"], 67);
  EXPECT_EQ(j["steps"], 40);
  for (auto m : {"perstep", "batched", "fused"}) {
    ASSERT_TRUE(j["modes"].contains(m)) << m;
    EXPECT_GT(j["modes"][m]["gen_per_s"]["median"].get<double>(), 0);
    EXPECT_EQ(j["modes"][m]["best_fitness"].size(), 2u);
  }
  EXPECT_EQ(j["modes"]["perstep"]["dispatches_per_generation"], 40 + 2 + 3);
  EXPECT_EQ(j["modes"]["perstep"]["submits_per_generation"], 40 + 2);
  EXPECT_EQ(j["modes"]["batched"]["submits_per_generation"], 1);
  EXPECT_EQ(j["modes"]["fused"]["dispatches_per_generation"], 4);
  EXPECT_TRUE(j["check"]["pass"].get<bool>());
  EXPECT_TRUE(j["speedups"].contains("fused_vs_perstep"));
  EXPECT_TRUE(j["adapter"].contains("device"));
  EXPECT_EQ(j["sample_fitness"]["values"].size(), 64u);
  EXPECT_EQ(j["sample_fitness"]["reference"].size(), 64u);
  EXPECT_EQ(j["sample_fitness"]["indices"][1], 1);  // 1 * 67 / 64
}

// Test that `wgfuse sim W --check` passes for every workload at small sizes (what CI runs on
// SwiftShader).
TEST(SimCli, CheckPassesForEveryWorkloadAtSmallSizes) {
  for (auto& w : sim::workloads()) {
    auto [rc, out] = test::run_wgfuse("--adapter cpu sim " + w.name +
                                      " --pop 33 --steps 70 --generations 1 --check --quiet");
    EXPECT_EQ(rc, 0) << w.name << ":\n" << out;
    EXPECT_NE(out.find("check passed"), std::string::npos) << w.name << ":\n" << out;
  }
}

// Test that an unknown workload and a population over the device's limits are clear errors, the
// latter with the fix.
TEST(SimCli, ClearErrors) {
  auto pong = test::run_wgfuse("--adapter cpu sim pong");
  EXPECT_NE(pong.rc, 0);
  EXPECT_NE(pong.out.find("unknown workload 'pong'"), std::string::npos) << pong.out;
  auto big = test::run_wgfuse("--adapter cpu sim market --pop 4000000 --steps 10");
  EXPECT_NE(big.rc, 0);
  EXPECT_NE(big.out.find("maxStorageBufferBindingSize"), std::string::npos) << big.out;
  EXPECT_NE(big.out.find("lower --pop to at most"), std::string::npos) << big.out;
}

}  // namespace
}  // namespace wgfuse
