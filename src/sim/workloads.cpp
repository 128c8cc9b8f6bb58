#include "sim/workloads.h"

#include "sim/market_data.h"
#include "sim/reference.h"
#include "util/error.h"

namespace wgfuse::sim {

namespace {

// The GA settings shared by the policy workloads; only the mutation size differs.
GaConfig policy_ga(float sigma) {
  return {.tournament = 3, .elites = 2, .rate = 0.1f, .sigma = sigma, .lo = -10.0f, .hi = 10.0f, .seed = 0};
}

}  // namespace

const std::vector<Workload>& workloads() {
  static const std::vector<Workload> all = {
      {.name = "rastrigin",
       .summary = "Rastrigin function, dimension = steps (the embarrassingly parallel control)",
       // A team splits the dimensions. H100, 4,096 x 2,000 (session 5): evaluation 22.5-22.8 us in
       // teams of 64, workgroups of 1,024, 8 loads in flight per lane; teams of 32 22.8-22.9, of 128
       // 26.7; workgroups of 512 23.8, of 256 26.3; 6 to 16 loads 23.0-23.5.
       .spec = {.name = "rastrigin",
                .family = "sim_rastrigin",
                .state_bytes = 4,
                .team_workgroup_size = 1024,
                .max_team = 64,
                .team_splits_steps = true,
                .overrides = {{"TEAM_STEP_UNROLL", 8}}},
       .default_pop = 4096,
       .default_steps = 2000,
       .genome_len = 0,
       .init_scale = 5.12f,
       .ga =
           {.tournament = 3, .elites = 2, .rate = 0.05f, .sigma = 0.3f, .lo = -5.12f, .hi = 5.12f, .seed = 0},
       .reference = rastrigin_reference,
       .reference_horizon = 1u << 30,
       .reference_rtol = 1e-4,  // f32 sum of 2,000 terms with GPU cos: ~1e-6 measured
       .reference_atol = 1e-2},
      {.name = "acrobot",
       .summary = "Acrobot-v1 (Gymnasium), RK4 dt 0.2, MLP 6-16-3",
       .spec = {.name = "acrobot", .family = "sim_acrobot", .state_bytes = 24},
       .default_pop = 4096,
       .default_steps = 500,
       .genome_len = 163,
       .ga = policy_ga(0.1f),
       .reference = acrobot_reference,
       .reference_horizon = 60,
       .reference_rtol = 0,
       .reference_atol = 0.5,  // fitness counts steps: equal step counts
       .boundary_margin = 1e-2},
      {.name = "cartpole",
       .summary = "CartPole-v1 (Gymnasium), Euler tau 0.02, MLP 4-16-2",
       .spec = {.name = "cartpole", .family = "sim_cartpole", .state_bytes = 24},
       .default_pop = 4096,
       .default_steps = 500,
       .genome_len = 114,
       .ga = policy_ga(0.1f),
       .reference = cartpole_reference,
       .reference_horizon = 500,
       .reference_atol = 0.5,
       .boundary_margin = 2e-2},  // 46 of 4,096 differ on SwiftShader, all within 4.4e-3
      {.name = "mountaincar",
       .summary = "MountainCar-v0 (Gymnasium), 200 steps, MLP 2-16-3",
       .spec = {.name = "mountaincar", .family = "sim_mountaincar", .state_bytes = 16},
       .default_pop = 4096,
       .default_steps = 200,
       .genome_len = 99,
       .ga = policy_ga(0.1f),
       .reference = mountaincar_reference,
       .reference_horizon = 200,
       .reference_atol = 0.5,
       .boundary_margin = 5e-3},  // 1 of 4,096 differs on SwiftShader, within 1.7e-4
      {.name = "market",
       .summary = "16 synthetic assets, hourly, RNN 8-16-6 with 2 outputs fed back, Sharpe - 5 x drawdown",
       // The split team (kernels/sim_market.wgsl) on the H100 (2026-11-23), ms per evaluation at
       // L = 1,500: teams of 4 were the fastest at every population measured (512: 0.609, team 16
       // 0.722; 2,048: 0.608, team 16 0.812; 10,000: 1.015, team 2 1.297, team 8 1.858; 32,768:
       // 2.71, team 2 3.06; 65,536: 5.32, team 2 6.07). A lane of a team of 2 holds 8 units'
       // weights (~250 f32), at the edge of the register file: one build of it took 48.3 ms at
       // 65,536. So --mode auto takes teams of 4.
       .spec = {.name = "market",
                .family = "sim_market",
                .state_bytes = 27 * 4,
                .auto_invocations = 40000,
                .auto_min_team = 4,
                .auto_max_team = 4},
       .default_pop = 10000,
       .default_steps = 1500,
       .genome_len = 502,
       .ga = policy_ga(0.05f),
       .data =
           [](uint32_t steps, uint32_t seed) {
             auto records = generate_market(steps, seed).records;
             auto device = device_records(records);
             return WorkloadData{.records = std::move(records),
                                 .stride = kMarketRecord,
                                 .device = std::move(device),
                                 .device_stride = kMarketDeviceRecord};
           },
       .reference = market_reference,
       .reference_horizon = 1u << 30,
       .reference_rtol = 2e-3,  // f32 sums of 1,500 returns and a difference of moments
       .reference_atol = 2e-3},
  };
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
