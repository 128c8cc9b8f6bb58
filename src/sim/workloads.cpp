#include "sim/workloads.h"

#include "sim/market_data.h"
#include "sim/reference.h"
#include "util/error.h"

namespace wgfuse::sim {

const std::vector<Workload>& workloads() {
  static const std::vector<Workload> all = [] {
    std::vector<Workload> w;
    {
      Workload r;
      r.name = "rastrigin";
      r.summary = "Rastrigin function, dimension = steps (the embarrassingly parallel control)";
      r.spec = {"rastrigin", "sim_rastrigin", 4};
      r.default_pop = 4096;
      r.default_steps = 2000;
      r.genome_len = 0;
      r.init_scale = 5.12f;
      r.ga = {3, 2, 0.05f, 0.3f, -5.12f, 5.12f, 0};
      r.reference_horizon = 1u << 30;
      r.reference_rtol = 1e-4;  // f32 sum of 2,000 terms with GPU cos: ~1e-6 measured
      r.reference_atol = 1e-2;
      r.reference = rastrigin_reference;
      w.push_back(r);
    }
    {
      Workload a;
      a.name = "acrobot";
      a.summary = "Acrobot-v1 (Gymnasium), RK4 dt 0.2, MLP 6-16-3";
      a.spec = {"acrobot", "sim_acrobot", 24};
      a.default_pop = 4096;
      a.default_steps = 500;
      a.genome_len = 163;
      a.ga = {3, 2, 0.1f, 0.1f, -10.0f, 10.0f, 0};
      a.reference_horizon = 60;
      a.reference_rtol = 0;
      a.reference_atol = 0.5;  // fitness counts steps: equal step counts
      a.boundary_margin = 1e-2;
      a.reference = acrobot_reference;
      w.push_back(a);
    }
    {
      Workload c;
      c.name = "cartpole";
      c.summary = "CartPole-v1 (Gymnasium), Euler tau 0.02, MLP 4-16-2";
      c.spec = {"cartpole", "sim_cartpole", 24};
      c.default_pop = 4096;
      c.default_steps = 500;
      c.genome_len = 114;
      c.ga = {3, 2, 0.1f, 0.1f, -10.0f, 10.0f, 0};
      c.reference_horizon = 500;
      c.reference_atol = 0.5;
      c.boundary_margin = 2e-2;  // 46 of 4,096 differ on SwiftShader, all within 4.4e-3
      c.reference = cartpole_reference;
      w.push_back(c);
    }
    {
      Workload m;
      m.name = "mountaincar";
      m.summary = "MountainCar-v0 (Gymnasium), 200 steps, MLP 2-16-3";
      m.spec = {"mountaincar", "sim_mountaincar", 16};
      m.default_pop = 4096;
      m.default_steps = 200;
      m.genome_len = 99;
      m.ga = {3, 2, 0.1f, 0.1f, -10.0f, 10.0f, 0};
      m.reference_horizon = 200;
      m.reference_atol = 0.5;
      m.boundary_margin = 5e-3;  // 1 of 4,096 differs on SwiftShader, within 1.7e-4
      m.reference = mountaincar_reference;
      w.push_back(m);
    }
    {
      Workload k;
      k.name = "market";
      k.summary = "16 synthetic assets, hourly, RNN 8-16-6 with 2 outputs fed back, Sharpe - 5 x drawdown";
      k.spec = {"market", "sim_market", 27 * 4};
      k.spec.coop_family = "sim_market_coop";
      k.spec.coop_per_workgroup = 8;  // COOP_TEAMS: 32 invocations, 4 lanes per individual
      k.default_pop = 10000;
      k.default_steps = 1500;
      k.genome_len = 502;
      k.ga = {3, 2, 0.1f, 0.05f, -10.0f, 10.0f, 0};
      k.data = [](uint32_t steps, uint32_t seed) {
        return WorkloadData{.records = generate_market(steps, seed).records, .stride = kMarketRecord};
      };
      k.reference = market_reference;
      k.reference_horizon = 1u << 30;
      k.reference_rtol = 2e-3;  // f32 sums of 1,500 returns and a difference of moments
      k.reference_atol = 2e-3;
      w.push_back(k);
    }
    return w;
  }();
  return all;
}

const Workload& find_workload(std::string_view name) {
  std::string known;
  for (auto& w : workloads()) {
    if (w.name == name) return w;
    known += (known.empty() ? "" : ", ") + w.name;
  }
  throw Error("unknown workload '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace wgfuse::sim
