#include "sim/market_data.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sim/rng.h"
#include "util/error.h"

namespace wgfuse::sim {
namespace {

// Uniform in (0, 1) from 32 hash bits, in double.
double unit_open(uint32_t h) {
  return (double(h) + 0.5) / 4294967296.0;
}

// A standard normal from the key (seed, stream, a, b) by Box-Muller.
double normal(uint32_t seed, uint32_t a, uint32_t b) {
  uint32_t h = hash4(seed, kStreamMarket, a, b);
  double u1 = unit_open(h), u2 = unit_open(pcg_hash(h ^ 0x9e3779b9u));
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

double uniform01(uint32_t seed, uint32_t a, uint32_t b) {
  return unit_open(hash4(seed, kStreamMarket, a, b));
}

}  // namespace

MarketData generate_market(uint32_t steps, uint32_t seed) {
  const uint32_t hours = kWarmupHours + steps + 1;
  const double dt = 1.0 / 8760.0;  // one hour in years
  // Regimes: calm (drift +8%/yr, vol 12%/yr) and turbulent (-20%/yr, 40%/yr); mean stays of
  // about a month (calm) and a week (turbulent).
  const double mu_m[2] = {0.08, -0.20}, sig_m[2] = {0.12, 0.40};
  const double p_switch[2] = {1.0 / 720.0, 1.0 / 168.0};
  // Assets: beta in [0.6, 1.4), idiosyncratic vol in [10%, 30%), extra drift in [-5%, 5%).
  double beta[kAssets], sig_i[kAssets], alpha[kAssets];
  for (uint32_t a = 0; a < kAssets; ++a) {
    beta[a] = 0.6 + 0.8 * uniform01(seed, 0xffff0000u, a);
    sig_i[a] = 0.10 + 0.20 * uniform01(seed, 0xffff0001u, a);
    alpha[a] = -0.05 + 0.10 * uniform01(seed, 0xffff0002u, a);
  }
  MarketData m;
  m.steps = steps;
  m.prices.assign(size_t(hours) * kAssets, 100.0);
  m.regime.assign(hours, 0);
  std::vector<double> logp(size_t(hours) * kAssets, std::log(100.0));
  int regime = 0;
  for (uint32_t t = 1; t < hours; ++t) {
    if (uniform01(seed, 0xfffe0000u, t) < p_switch[regime]) regime = 1 - regime;
    m.regime[t] = uint8_t(regime);
    double zm = normal(seed, t, kAssets);  // the market factor's shock this hour
    for (uint32_t a = 0; a < kAssets; ++a) {
      double z = normal(seed, t, a);
      double drift = beta[a] * mu_m[regime] + alpha[a];
      double var = beta[a] * beta[a] * sig_m[regime] * sig_m[regime] + sig_i[a] * sig_i[a];
      double r = (drift - 0.5 * var) * dt + std::sqrt(dt) * (beta[a] * sig_m[regime] * zm + sig_i[a] * z);
      logp[size_t(t) * kAssets + a] = logp[size_t(t - 1) * kAssets + a] + r;
      m.prices[size_t(t) * kAssets + a] = std::exp(logp[size_t(t) * kAssets + a]);
    }
  }
  m.records.resize(size_t(steps) * kMarketRecord);
  for (uint32_t i = 0; i < steps; ++i) {
    const uint32_t t = kWarmupHours + i;
    float* rec = &m.records[size_t(i) * kMarketRecord];
    auto lp = [&](uint32_t hour, uint32_t a) { return logp[size_t(hour) * kAssets + a]; };
    for (uint32_t g = 0; g < 4; ++g) {
      double s = 0;
      for (uint32_t a = 4 * g; a < 4 * g + 4; ++a) s += lp(t, a) - lp(t - 1, a);
      rec[g] = float(100.0 * s / 4.0);
    }
    double mom = 0, sq = 0;
    for (uint32_t a = 0; a < kAssets; ++a) {
      mom += lp(t, a) - lp(t - kWarmupHours, a);
      for (uint32_t k = 0; k < kWarmupHours; ++k) {
        double r = lp(t - k, a) - lp(t - k - 1, a);
        sq += r * r;
      }
    }
    rec[4] = float(10.0 * mom / kAssets);
    rec[5] = float(100.0 * std::sqrt(sq / (kAssets * kWarmupHours)));
    for (uint32_t a = 0; a < kAssets; ++a)
      rec[kFeatures + a] =
          float(m.prices[size_t(t + 1) * kAssets + a] / m.prices[size_t(t) * kAssets + a] - 1.0);
  }
  return m;
}

std::vector<float> device_records(std::span<const float> records) {
  if (records.size() % kMarketRecord != 0)
    throw Error("market records: " + std::to_string(records.size()) + " f32 is not a whole number of " +
                std::to_string(kMarketRecord) + "-f32 records");
  const size_t steps = records.size() / kMarketRecord;
  std::vector<float> device(steps * kMarketDeviceRecord, 0.0f);
  for (size_t t = 0; t < steps; ++t) {
    const float* rec = &records[t * kMarketRecord];
    float* out = &device[t * kMarketDeviceRecord];
    std::copy(rec, rec + kFeatures, out);
    std::copy(rec + kFeatures, rec + kMarketRecord, out + 8);
  }
  return device;
}

void write_records(std::span<const float> records, const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw Error("cannot write the data to '" + path + "'");
  size_t n = std::fwrite(records.data(), sizeof(float), records.size(), f);
  bool ok = std::fclose(f) == 0 && n == records.size();
  if (!ok) throw Error("short write of the data to '" + path + "'");
}

}  // namespace wgfuse::sim
