#include "sim/reference.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <string>

#include "sim/market_data.h"
#include "sim/rng.h"
#include "util/error.h"

namespace wgfuse::sim {
namespace {

constexpr double kPi = std::numbers::pi;

void acrobot_dsdt(const double s[4], double a, double out[4]) {
  const double m1 = 1, m2 = 1, l1 = 1, lc1 = 0.5, lc2 = 0.5, I1 = 1, I2 = 1, g = 9.8;
  const double theta1 = s[0], theta2 = s[1], dtheta1 = s[2], dtheta2 = s[3];
  const double d1 = m1 * lc1 * lc1 + m2 * (l1 * l1 + lc2 * lc2 + 2 * l1 * lc2 * std::cos(theta2)) + I1 + I2;
  const double d2 = m2 * (lc2 * lc2 + l1 * lc2 * std::cos(theta2)) + I2;
  const double phi2 = m2 * lc2 * g * std::cos(theta1 + theta2 - kPi / 2.0);
  const double phi1 = -m2 * l1 * lc2 * dtheta2 * dtheta2 * std::sin(theta2) -
                      2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * std::sin(theta2) +
                      (m1 * lc1 + m2 * l1) * g * std::cos(theta1 - kPi / 2) + phi2;
  const double ddtheta2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * dtheta1 * dtheta1 * std::sin(theta2) - phi2) /
                          (m2 * lc2 * lc2 + I2 - d2 * d2 / d1);
  const double ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
  out[0] = dtheta1;
  out[1] = dtheta2;
  out[2] = ddtheta1;
  out[3] = ddtheta2;
}

double wrap(double x, double m, double M) {
  const double diff = M - m;
  while (x > M) x -= diff;
  while (x < m) x += diff;
  return x;
}

ReferenceRun rastrigin(std::span<const float> x) {
  double f = 0;
  for (float v : x) f += double(v) * v - 10.0 * std::cos(2.0 * kPi * v) + 10.0;
  return {-f, INFINITY};
}

// Start-state variable k of episode e (sim_common.wgsl's init_uniform).
float start_var(const Episode& e, uint32_t k, float scale) {
  return init_uniform(e.seed, e.generation, e.episode, k, scale);
}

ReferenceRun acrobot(const Episode& e) {
  std::span<const float> g = e.genome;
  const uint32_t steps = e.steps;
  AcrobotState s{start_var(e, 0, 0.1f), start_var(e, 1, 0.1f), start_var(e, 2, 0.1f), start_var(e, 3, 0.1f)};
  double ret = 0, margin = INFINITY;
  for (uint32_t t = 0; t < steps; ++t) {
    double obs[6] = {std::cos(s.th1), std::sin(s.th1), std::cos(s.th2), std::sin(s.th2), s.dth1, s.dth2};
    int action = mlp_argmax(g, 6, 16, 3, obs, &margin);
    s = acrobot_step(s, action - 1.0);
    margin = std::min(margin, std::abs(-std::cos(s.th1) - std::cos(s.th2 + s.th1) - 1.0));
    if (acrobot_terminal(s)) break;
    ret -= 1;
  }
  return {ret, margin};
}

ReferenceRun cartpole(const Episode& e) {
  std::span<const float> g = e.genome;
  const uint32_t steps = e.steps;
  CartPoleState s{start_var(e, 0, 0.05f), start_var(e, 1, 0.05f), start_var(e, 2, 0.05f),
                  start_var(e, 3, 0.05f)};
  double ret = 0, margin = INFINITY;
  const double theta_limit = 12 * 2 * kPi / 360;
  for (uint32_t t = 0; t < steps; ++t) {
    double obs[4] = {s.x, s.x_dot, s.theta, s.theta_dot};
    s = cartpole_step(s, mlp_argmax(g, 4, 16, 2, obs, &margin));
    ret += 1;
    margin = std::min({margin, std::abs(std::abs(s.x) - 2.4), std::abs(std::abs(s.theta) - theta_limit)});
    if (cartpole_terminal(s)) break;
  }
  return {ret, margin};
}

ReferenceRun mountaincar(const Episode& e) {
  std::span<const float> g = e.genome;
  const uint32_t steps = e.steps;
  MountainCarState s{double(-0.5f + start_var(e, 0, 0.1f)), 0.0};
  double ret = 0, margin = INFINITY;
  for (uint32_t t = 0; t < steps; ++t) {
    double obs[2] = {s.pos, s.vel / 0.07};
    int action = mlp_argmax(g, 2, 16, 3, obs, &margin);
    // The left wall zeroes the velocity when pos + v' < -1.2: a discontinuity too.
    double v = std::clamp(s.vel + ((action - 1) * 0.001 + std::cos(3 * s.pos) * (-0.0025)), -0.07, 0.07);
    if (v < 0) margin = std::min(margin, std::abs(s.pos + v + 1.2));
    s = mountaincar_step(s, action);
    ret -= 1;
    margin = std::min(margin, std::abs(s.pos - 0.5));
    if (s.pos >= 0.5) margin = std::min(margin, std::abs(s.vel));
    if (mountaincar_terminal(s)) break;
  }
  return {ret, margin};
}

ReferenceRun market(std::span<const float> g, uint32_t steps, std::span<const float> data) {
  if (data.size() < size_t(steps) * kMarketRecord) throw Error("market reference: too little data");
  double h[16] = {}, pos[4] = {}, fb[2] = {};
  double sum_r = 0, sum_r2 = 0, equity = 0, peak = 0, mdd = 0;
  for (uint32_t t = 0; t < steps; ++t) {
    const float* rec = &data[size_t(t) * kMarketRecord];
    double x[8];
    for (int k = 0; k < 6; ++k) x[k] = rec[k];
    x[6] = fb[0];
    x[7] = fb[1];
    double hn[16];
    for (int j = 0; j < 16; ++j) {
      double a = g[384 + j];
      for (int k = 0; k < 8; ++k) a += double(g[j * 8 + k]) * x[k];
      double rec = 0;
      for (int m = 0; m < 16; ++m) rec += double(g[128 + j * 16 + m]) * h[m];
      hn[j] = std::tanh(a + 0.25 * rec);
    }
    double out[6];
    for (int o = 0; o < 6; ++o) {
      double a = g[496 + o];
      for (int j = 0; j < 16; ++j) a += double(g[400 + o * 16 + j]) * hn[j];
      out[o] = a;
    }
    double r = 0, turnover = 0;
    for (int gr = 0; gr < 4; ++gr) {
      double p = std::tanh(out[gr]);
      double group_ret =
          (double(rec[6 + 4 * gr]) + rec[7 + 4 * gr] + rec[8 + 4 * gr] + rec[9 + 4 * gr]) * 0.25;
      r += p * 0.25 * group_ret;
      turnover += std::abs(p - pos[gr]) * 0.25;
      pos[gr] = p;
    }
    r -= 0.0005 * turnover;
    std::copy(hn, hn + 16, h);
    fb[0] = std::tanh(out[4]);
    fb[1] = std::tanh(out[5]);
    sum_r += r;
    sum_r2 += r * r;
    equity += r;
    peak = std::max(peak, equity);
    mdd = std::max(mdd, peak - equity);
  }
  double n = steps, mean = sum_r / n, var = std::max(sum_r2 / n - mean * mean, 0.0);
  return {mean / std::sqrt(var + 1e-12) * std::sqrt(8760.0) - 5.0 * mdd, INFINITY};
}

}  // namespace

int mlp_argmax(std::span<const float> g, int in, int hidden, int out, const double* obs, double* margin) {
  const size_t b1 = size_t(hidden) * in, w2 = b1 + hidden, b2 = w2 + size_t(out) * hidden;
  if (out < 1 || out > kMaxMlpOutputs || g.size() < b2 + out)
    throw Error("mlp_argmax: " + std::to_string(out) + " outputs (1 to " + std::to_string(kMaxMlpOutputs) +
                ") need a genome of " + std::to_string(b2 + out) + " floats, got " +
                std::to_string(g.size()));
  double logits[kMaxMlpOutputs];
  for (int o = 0; o < out; ++o) logits[o] = g[b2 + o];
  for (int j = 0; j < hidden; ++j) {
    double a = g[b1 + j];
    for (int k = 0; k < in; ++k) a += double(g[size_t(j) * in + k]) * obs[k];
    double h = std::tanh(a);
    for (int o = 0; o < out; ++o) logits[o] += double(g[w2 + size_t(o) * hidden + j]) * h;
  }
  int best = 0;
  for (int o = 1; o < out; ++o)
    if (logits[o] > logits[best]) best = o;
  for (int o = 0; o < out; ++o)
    if (margin && o != best) *margin = std::min(*margin, logits[best] - logits[o]);  // distance to a flip
  return best;
}

AcrobotState acrobot_step(const AcrobotState& s, double torque) {
  const double dt = 0.2, dt2 = dt / 2.0;
  const double y0[4] = {s.th1, s.th2, s.dth1, s.dth2};
  double k1[4], k2[4], k3[4], k4[4], y[4];
  acrobot_dsdt(y0, torque, k1);
  for (int i = 0; i < 4; ++i) y[i] = y0[i] + dt2 * k1[i];
  acrobot_dsdt(y, torque, k2);
  for (int i = 0; i < 4; ++i) y[i] = y0[i] + dt2 * k2[i];
  acrobot_dsdt(y, torque, k3);
  for (int i = 0; i < 4; ++i) y[i] = y0[i] + dt * k3[i];
  acrobot_dsdt(y, torque, k4);
  double ns[4];
  for (int i = 0; i < 4; ++i) ns[i] = y0[i] + dt / 6.0 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
  return {wrap(ns[0], -kPi, kPi), wrap(ns[1], -kPi, kPi), std::clamp(ns[2], -4 * kPi, 4 * kPi),
          std::clamp(ns[3], -9 * kPi, 9 * kPi)};
}

bool acrobot_terminal(const AcrobotState& s) {
  return -std::cos(s.th1) - std::cos(s.th2 + s.th1) > 1.0;
}

CartPoleState cartpole_step(const CartPoleState& s, int action) {
  const double gravity = 9.8, masscart = 1.0, masspole = 0.1, total_mass = masspole + masscart;
  const double length = 0.5, polemass_length = masspole * length, force_mag = 10.0, tau = 0.02;
  const double force = action == 1 ? force_mag : -force_mag;
  const double costheta = std::cos(s.theta), sintheta = std::sin(s.theta);
  const double temp = (force + polemass_length * s.theta_dot * s.theta_dot * sintheta) / total_mass;
  const double thetaacc = (gravity * sintheta - costheta * temp) /
                          (length * (4.0 / 3.0 - masspole * costheta * costheta / total_mass));
  const double xacc = temp - polemass_length * thetaacc * costheta / total_mass;
  return {s.x + tau * s.x_dot, s.x_dot + tau * xacc, s.theta + tau * s.theta_dot,
          s.theta_dot + tau * thetaacc};
}

bool cartpole_terminal(const CartPoleState& s) {
  const double theta_limit = 12 * 2 * kPi / 360;
  return s.x < -2.4 || s.x > 2.4 || s.theta < -theta_limit || s.theta > theta_limit;
}

MountainCarState mountaincar_step(const MountainCarState& s, int action) {
  const double min_position = -1.2, max_position = 0.6, max_speed = 0.07, force = 0.001, gravity = 0.0025;
  double velocity = s.vel + ((action - 1) * force + std::cos(3 * s.pos) * (-gravity));
  velocity = std::clamp(velocity, -max_speed, max_speed);
  double position = std::clamp(s.pos + velocity, min_position, max_position);
  if (position == min_position && velocity < 0) velocity = 0;
  return {position, velocity};
}

bool mountaincar_terminal(const MountainCarState& s) {
  return s.pos >= 0.5 && s.vel >= 0.0;
}

std::vector<float> initial_genomes(const Workload& w, uint32_t pop, uint32_t steps, uint32_t seed) {
  const uint32_t len = w.genome_length(steps);
  std::vector<float> g(size_t(pop) * len);
  for (uint32_t i = 0; i < pop; ++i)
    for (uint32_t k = 0; k < len; ++k) g[size_t(i) * len + k] = initial_gene(seed, i, k, w.init_scale);
  return g;
}

ReferenceEpisode builtin_reference(std::string_view name, const std::string& where) {
  static const std::map<std::string_view, ReferenceEpisode> all = {
      {"rastrigin", [](const Episode& e) { return rastrigin(e.genome); }},
      {"acrobot", acrobot},
      {"cartpole", cartpole},
      {"mountaincar", mountaincar},
      {"market", [](const Episode& e) { return market(e.genome, e.steps, e.data); }},
  };
  if (auto it = all.find(name); it != all.end()) return it->second;
  std::string known;
  for (auto& [n, f] : all) known += (known.empty() ? "" : ", ") + std::string(n);
  throw Error(where + ": no built-in CPU reference '" + std::string(name) + "' (known: " + known + ")");
}

ReferenceRun reference_run(const Workload& w, std::span<const float> genome, uint32_t steps,
                           const Starts& starts, std::span<const float> data, uint32_t individual) {
  if (genome.size() != w.genome_length(steps))
    throw Error("reference of '" + w.name + "': genome of " + std::to_string(genome.size()) +
                " genes, expected " + std::to_string(w.genome_length(steps)));
  if (!w.reference) throw Error("no reference for workload '" + w.name + "'");
  if (starts.episodes == 0) throw Error("reference of '" + w.name + "': episodes must be positive");
  ReferenceRun mean{0, INFINITY};
  for (uint32_t e = 0; e < starts.episodes; ++e) {
    auto r = w.reference({.genome = genome,
                          .steps = steps,
                          .seed = starts.seed,
                          .generation = starts.generation,
                          .episode = e,
                          .individual = individual,
                          .data = data});
    mean.fitness += r.fitness;
    mean.min_margin = std::min(mean.min_margin, r.min_margin);
  }
  mean.fitness /= starts.episodes;
  return mean;
}

double reference_fitness(const Workload& w, std::span<const float> genome, uint32_t steps,
                         const Starts& starts, std::span<const float> data, uint32_t individual) {
  return reference_run(w, genome, steps, starts, data, individual).fitness;
}

}  // namespace wgfuse::sim
