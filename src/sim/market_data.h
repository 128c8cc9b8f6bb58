// The Market workload's synthetic prices: seeded, deterministic, documented in
// docs/SIMULATIONS.md. 16 assets, one price per hour, driven by one market factor whose drift and
// volatility switch between a calm and a turbulent regime (a two-state Markov chain), plus
// idiosyncratic noise: geometric Brownian motion with regime switches. Generated in double on the
// CPU from the counter-based RNG (src/sim/rng.h), stored as f32.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace wgfuse::sim {

inline constexpr uint32_t kAssets = 16;
inline constexpr uint32_t kFeatures = 6;
inline constexpr uint32_t kMarketRecord = kFeatures + kAssets;  // f32 per step
inline constexpr uint32_t kWarmupHours = 24;                    // history the features need
// f32 per step as the kernels read it (device_records): 6 vec4.
inline constexpr uint32_t kMarketDeviceRecord = 24;

struct MarketData {
  uint32_t steps = 0;
  // steps x kMarketRecord: features known at hour t (4 group returns of the last hour in %,
  // 24-hour momentum x 10, realised hourly volatility of the last 24 hours in %), then the 16
  // simple returns from hour t to hour t + 1.
  std::vector<float> records;
  // (kWarmupHours + steps + 1) x kAssets prices, and the regime (0 calm, 1 turbulent) per hour.
  std::vector<double> prices;
  std::vector<uint8_t> regime;
};

MarketData generate_market(uint32_t steps, uint32_t seed);

// The records as kernels/sim_market.wgsl reads them, kMarketDeviceRecord f32 per step: the 6
// features and 2 zeros, then the 16 returns (asset group g's 4 at 8 + 4 g), so that a lane loads
// the features as 2 vec4 and a group's returns as 1 (each load clamped once under robustness).
std::vector<float> device_records(std::span<const float> records);

// Writes a workload's data records as raw little-endian f32 (Market: steps x 22), for the Python
// and CUDA baselines.
void write_records(std::span<const float> records, const std::string& path);

}  // namespace wgfuse::sim
