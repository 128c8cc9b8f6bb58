// Hand-written CUDA for `wgfuse sim` acrobot and market: the native ceiling. One thread per
// individual runs the whole episode in registers (the same fusion as wgfuse's fused strategy),
// then the same GA as kernels/sim_evolve.wgsl (reduce, tournament select, breed, with the same
// counter-based hash), then one read-back of best and mean. Accurate libm (no --use_fast_math).
//
// Build: nvcc -O3 -arch=sm_90 -o sim_cuda sim_cuda.cu
// Run:   ./sim_cuda acrobot [--sizes 4096x500,...] [--generations G] [--seed S] [--json FILE]
//        ./sim_cuda market --data market.f32 [...]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e = (x);                                                                        \
    if (e != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)

__host__ __device__ inline uint32_t pcg_hash(uint32_t v) {
  uint32_t state = v * 747796405u + 2891336453u;
  uint32_t word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
  return (word >> 22u) ^ word;
}
__host__ __device__ inline uint32_t hash4(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  return pcg_hash(pcg_hash(pcg_hash(pcg_hash(a) + b) + c) + d);
}
__device__ inline uint32_t hash5(uint32_t a, uint32_t b, uint32_t c, uint32_t d, uint32_t e) {
  return pcg_hash(pcg_hash(pcg_hash(pcg_hash(pcg_hash(a) + b) + c) + d) + e);
}
__host__ __device__ inline float unit_sym(uint32_t h) { return float(h >> 8u) * (1.0f / 8388608.0f) - 1.0f; }
__device__ inline float init_uniform(uint32_t seed, uint32_t ind, uint32_t k, float scale) {
  return __fmul_rn(scale, unit_sym(hash4(seed, 2u, ind, k)));
}
__device__ inline float tanh_safe(float x) {
  float e = expf(-2.0f * fabsf(x));
  return copysignf((1.0f - e) / (1.0f + e), x);
}

constexpr float PI_F = 3.14159265358979323846f;

struct Genome {
  const float* __restrict__ base;
  uint32_t pop;
  __device__ float operator[](uint32_t k) const { return __ldg(base + size_t(k) * pop); }
};

// ---- Acrobot-v1 (Gymnasium): book dynamics, RK4 dt 0.2, MLP 6-16-3 ----
__device__ inline void acrobot_dsdt(const float s[4], float a, float out[4]) {
  const float m1 = 1, m2 = 1, l1 = 1, lc1 = 0.5f, lc2 = 0.5f, I1 = 1, I2 = 1, g = 9.8f;
  float th1 = s[0], th2 = s[1], d1_ = s[2], d2_ = s[3];
  float c2 = cosf(th2), s2 = sinf(th2);
  float d1 = m1 * lc1 * lc1 + m2 * (l1 * l1 + lc2 * lc2 + 2.0f * l1 * lc2 * c2) + I1 + I2;
  float d2 = m2 * (lc2 * lc2 + l1 * lc2 * c2) + I2;
  float phi2 = m2 * lc2 * g * cosf(th1 + th2 - PI_F / 2.0f);
  float phi1 = -m2 * l1 * lc2 * d2_ * d2_ * s2 - 2.0f * m2 * l1 * lc2 * d2_ * d1_ * s2 +
               (m1 * lc1 + m2 * l1) * g * cosf(th1 - PI_F / 2.0f) + phi2;
  float dd2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * d1_ * d1_ * s2 - phi2) / (m2 * lc2 * lc2 + I2 - d2 * d2 / d1);
  float dd1 = -(d2 * dd2 + phi1) / d1;
  out[0] = d1_;
  out[1] = d2_;
  out[2] = dd1;
  out[3] = dd2;
}

__device__ inline float wrap_pi(float x) {  // bounded, as kernels/sim_acrobot.wgsl
  for (int n = 0; n < 16 && x > PI_F; ++n) x -= 2.0f * PI_F;
  for (int n = 0; n < 16 && x < -PI_F; ++n) x += 2.0f * PI_F;
  return x;
}

__global__ void acrobot_episode(const float* __restrict__ genomes, float* __restrict__ fitness, uint32_t pop,
                                uint32_t steps, uint32_t seed) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= pop) return;
  // Gene-major genomes (gene k of individual i at k * pop + i): a warp's loads are coalesced.
  Genome g{genomes + i, pop};
  float y[4] = {init_uniform(seed, i, 0, 0.1f), init_uniform(seed, i, 1, 0.1f), init_uniform(seed, i, 2, 0.1f),
                init_uniform(seed, i, 3, 0.1f)};
  float ret = 0;
  for (uint32_t t = 0; t < steps; ++t) {
    float obs[6] = {cosf(y[0]), sinf(y[0]), cosf(y[1]), sinf(y[1]), y[2], y[3]};
    float l[3] = {g[160], g[161], g[162]};
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      float a = g[96 + j];
#pragma unroll
      for (int k = 0; k < 6; ++k) a += g[j * 6 + k] * obs[k];
      float h = tanh_safe(a);
#pragma unroll
      for (int o = 0; o < 3; ++o) l[o] += g[112 + o * 16 + j] * h;
    }
    int act = 0;
    if (l[1] > l[act]) act = 1;
    if (l[2] > l[act]) act = 2;
    float torque = float(act) - 1.0f, dt = 0.2f;
    float k1[4], k2[4], k3[4], k4[4], tmp[4];
    acrobot_dsdt(y, torque, k1);
    for (int q = 0; q < 4; ++q) tmp[q] = y[q] + dt / 2.0f * k1[q];
    acrobot_dsdt(tmp, torque, k2);
    for (int q = 0; q < 4; ++q) tmp[q] = y[q] + dt / 2.0f * k2[q];
    acrobot_dsdt(tmp, torque, k3);
    for (int q = 0; q < 4; ++q) tmp[q] = y[q] + dt * k3[q];
    acrobot_dsdt(tmp, torque, k4);
    for (int q = 0; q < 4; ++q) tmp[q] = y[q] + dt / 6.0f * (k1[q] + 2.0f * k2[q] + 2.0f * k3[q] + k4[q]);
    y[0] = wrap_pi(tmp[0]);
    y[1] = wrap_pi(tmp[1]);
    y[2] = fminf(fmaxf(tmp[2], -4.0f * PI_F), 4.0f * PI_F);
    y[3] = fminf(fmaxf(tmp[3], -9.0f * PI_F), 9.0f * PI_F);
    if (-cosf(y[0]) - cosf(y[1] + y[0]) > 1.0f) break;  // terminal: frozen, reward 0 from here on
    ret -= 1.0f;
  }
  fitness[i] = ret;
}

// ---- Market: RNN 8-16-6, 2 outputs fed back; records of 22 f32 per step ----
// MARKET_UNROLL picks how far the loops over hidden units unroll: fully (16), the compiler hoists
// all 502 weights out of the time loop into registers and spills; 1 keeps the weight loads in
// the loop (L1/L2 hits). run_sim.sh builds both and reports each.
#ifndef MARKET_UNROLL
#define MARKET_UNROLL 1
#endif
constexpr int kMarketUnroll = MARKET_UNROLL;
__global__ void market_episode(const float* __restrict__ genomes, const float* __restrict__ data,
                               float* __restrict__ fitness, uint32_t pop, uint32_t steps) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= pop) return;
  Genome g{genomes + i, pop};
  float h[16] = {}, pos[4] = {}, fb0 = 0, fb1 = 0, sr = 0, sr2 = 0, eq = 0, peak = 0, mdd = 0;
  for (uint32_t t = 0; t < steps; ++t) {
    const float* rec = data + size_t(t) * 22;
    float x[8] = {rec[0], rec[1], rec[2], rec[3], rec[4], rec[5], fb0, fb1};
    float hn[16];
#pragma unroll kMarketUnroll
    for (int j = 0; j < 16; ++j) {
      float a = g[384 + j];
#pragma unroll
      for (int k = 0; k < 8; ++k) a += g[j * 8 + k] * x[k];
      float r = 0;
#pragma unroll
      for (int m = 0; m < 16; ++m) r += g[128 + j * 16 + m] * h[m];
      hn[j] = tanh_safe(a + 0.25f * r);
    }
    float out[6];
#pragma unroll
    for (int o = 0; o < 6; ++o) {
      float a = g[496 + o];
#pragma unroll kMarketUnroll
      for (int j = 0; j < 16; ++j) a += g[400 + o * 16 + j] * hn[j];
      out[o] = a;
    }
    float r = 0, turnover = 0;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      float p = tanh_safe(out[q]);
      float gr = (rec[6 + 4 * q] + rec[7 + 4 * q] + rec[8 + 4 * q] + rec[9 + 4 * q]) * 0.25f;
      r += p * 0.25f * gr;
      turnover += fabsf(p - pos[q]) * 0.25f;
      pos[q] = p;
    }
    r -= 0.0005f * turnover;
#pragma unroll
    for (int j = 0; j < 16; ++j) h[j] = hn[j];
    fb0 = tanh_safe(out[4]);
    fb1 = tanh_safe(out[5]);
    sr += r;
    sr2 += r * r;
    eq += r;
    peak = fmaxf(peak, eq);
    mdd = fmaxf(mdd, peak - eq);
  }
  float n = float(steps), mean = sr / n, var = fmaxf(sr2 / n - mean * mean, 0.0f);
  fitness[i] = mean / sqrtf(var + 1e-12f) * 93.59487165438072f - 5.0f * mdd;
}

// ---- GA: as kernels/sim_evolve.wgsl ----
__device__ inline bool finite_f(float x) { return isfinite(x); }
__device__ inline bool beats(float a, uint32_t ia, float b, uint32_t ib) {
  if (!finite_f(a)) return false;
  if (!finite_f(b)) return true;
  return a > b || (a == b && ia < ib);
}

constexpr uint32_t NONE = 0xffffffffu, MAX_ELITES = 8;
__device__ inline bool better(float a, uint32_t ia, float b, uint32_t ib) {
  if (ia == NONE) return false;
  if (ib == NONE) return true;
  return beats(a, ia, b, ib);
}

// stats: best, mean (f32 bits), best index, non-finite count, then the E elite indices.
__global__ void ga_reduce(const float* fit, uint32_t pop, uint32_t elites, uint32_t* stats) {
  __shared__ float sb[256], ss[256];
  __shared__ uint32_t si[256], sbad[256], elite[MAX_ELITES];
  uint32_t lid = threadIdx.x;
  for (uint32_t e = 0; e < elites; ++e) {
    float best = 0, sum = 0;
    uint32_t bi = NONE, bad = 0;
    for (uint32_t i = lid; i < pop; i += 256) {
      float f = fit[i];
      if (e == 0) {
        if (finite_f(f)) sum += f; else ++bad;
      }
      bool taken = false;
      for (uint32_t k = 0; k < e; ++k) taken = taken || elite[k] == i;
      if (!taken && better(f, i, best, bi)) { best = f; bi = i; }
    }
    sb[lid] = best; si[lid] = bi; ss[lid] = sum; sbad[lid] = bad;
    __syncthreads();
    for (uint32_t w = 128; w > 0; w /= 2) {
      if (lid < w) {
        if (better(sb[lid + w], si[lid + w], sb[lid], si[lid])) { sb[lid] = sb[lid + w]; si[lid] = si[lid + w]; }
        ss[lid] += ss[lid + w];
        sbad[lid] += sbad[lid + w];
      }
      __syncthreads();
    }
    if (lid == 0) {
      elite[e] = si[0];
      stats[4 + e] = si[0];
      if (e == 0) {
        uint32_t good = pop - sbad[0];
        float mean = good ? ss[0] / float(good) : 0.0f;
        std::memcpy(&stats[0], &sb[0], 4);
        std::memcpy(&stats[1], &mean, 4);
        stats[2] = si[0];
        stats[3] = sbad[0];
      }
    }
    __syncthreads();
  }
}

__global__ void ga_select(const float* fit, const uint32_t* stats, uint32_t* parents, uint32_t pop, uint32_t gen,
                          uint32_t seed, uint32_t tour, uint32_t elites) {
  uint32_t c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= pop) return;
  if (c < elites) { parents[2 * c] = parents[2 * c + 1] = stats[4 + c]; return; }
  for (uint32_t which = 0; which < 2; ++which) {
    uint32_t w = hash5(seed, 3u, gen, c, which * 64u) % pop;
    for (uint32_t k = 1; k < tour; ++k) {
      uint32_t cand = hash5(seed, 3u, gen, c, which * 64u + k) % pop;
      if (beats(fit[cand], cand, fit[w], w)) w = cand;
    }
    parents[2 * c + which] = w;
  }
}

__device__ inline float unit_open(uint32_t h) { return (float(h >> 8u) + 1.0f) * (1.0f / 16777216.0f); }

__global__ void ga_breed(const float* src, float* dst, const uint32_t* parents, uint32_t pop, uint32_t len,
                         uint32_t gen, uint32_t seed, float rate, float sigma, float lo, float hi, uint32_t elites) {
  uint64_t e = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= uint64_t(pop) * len) return;
  uint32_t k = uint32_t(e / pop), c = uint32_t(e % pop);  // gene-major: e = k * pop + c
  uint32_t pa = parents[2 * c], pb = parents[2 * c + 1];
  if (c < elites) { dst[e] = src[size_t(k) * pop + pa]; return; }
  uint32_t hc = hash5(seed, 4u, gen, c, k);
  uint32_t p = (hc & 1u) == 0 ? pa : pb;
  float g = src[size_t(k) * pop + p];
  uint32_t hm = hash5(seed, 5u, gen, c, k);
  if (unit_open(hm) <= rate) {
    float u1 = unit_open(pcg_hash(hm + 1u)), u2 = unit_open(pcg_hash(hm + 2u));
    float z = sqrtf(-2.0f * logf(u1)) * cosf(6.283185307179586f * u2);
    g = fminf(fmaxf(g + sigma * z, lo), hi);
  }
  dst[e] = g;
}

// ---- driver ----
struct Point {
  uint32_t pop, steps;
};

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: sim_cuda acrobot|market [--sizes PxL,...] [--generations G] [--seed S] "
                         "[--data FILE] [--json FILE]\n");
    return 2;
  }
  std::string workload = argv[1], sizes, data_path, json_path;
  uint32_t gens = 10, seed = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--sizes") sizes = v;
    else if (k == "--generations") gens = uint32_t(std::stoul(v));
    else if (k == "--seed") seed = uint32_t(std::stoul(v));
    else if (k == "--data") data_path = v;
    else if (k == "--json") json_path = v;
    else { std::fprintf(stderr, "unknown option %s\n", k.c_str()); return 2; }
  }
  const bool acrobot = workload == "acrobot";
  if (!acrobot && workload != "market") { std::fprintf(stderr, "workloads: acrobot, market\n"); return 2; }
  const uint32_t len = acrobot ? 163 : 502;
  const float rate = 0.1f, sigma = acrobot ? 0.1f : 0.05f, lo = -10.0f, hi = 10.0f;
  const uint32_t tour = 3, elites = 2;
  std::vector<Point> points;
  if (sizes.empty()) points.push_back(acrobot ? Point{4096, 500} : Point{10000, 1500});
  for (size_t p = 0; p < sizes.size();) {
    size_t q = sizes.find(',', p);
    std::string s = sizes.substr(p, q == std::string::npos ? std::string::npos : q - p);
    size_t x = s.find('x');
    points.push_back({uint32_t(std::stoul(s.substr(0, x))), uint32_t(std::stoul(s.substr(x + 1)))});
    if (q == std::string::npos) break;
    p = q + 1;
  }
  uint32_t max_steps = 0;
  for (auto& p : points) max_steps = std::max(max_steps, p.steps);
  float* d_data = nullptr;
  if (!acrobot) {
    FILE* f = std::fopen(data_path.c_str(), "rb");
    if (!f) { std::fprintf(stderr, "market needs --data FILE (wgfuse sim market --write-data)\n"); return 2; }
    std::vector<float> rec(size_t(max_steps) * 22);
    size_t n = std::fread(rec.data(), 4, rec.size(), f);
    std::fclose(f);
    if (n != rec.size()) { std::fprintf(stderr, "%s: too few records for %u steps\n", data_path.c_str(), max_steps); return 2; }
    CK(cudaMalloc(&d_data, rec.size() * 4));
    CK(cudaMemcpy(d_data, rec.data(), rec.size() * 4, cudaMemcpyHostToDevice));
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::string js = "{\n  \"framework\": \"cuda\", \"mode\": \"hand-written fused episode kernel\", \"market_unroll\": " +
                   std::to_string(MARKET_UNROLL) + ", \"workload\": \"" + workload + "\", \"device\": \"" + prop.name + "\",\n  \"points\": [";
  for (size_t pi = 0; pi < points.size(); ++pi) {
    const uint32_t pop = points[pi].pop, steps = points[pi].steps;
    std::vector<float> g0(size_t(pop) * len);
    for (uint32_t i = 0; i < pop; ++i)
      for (uint32_t k = 0; k < len; ++k) g0[size_t(k) * pop + i] = 1.0f * unit_sym(hash4(seed, 1u, i, k));
    float *d_g[2], *d_fit;
    uint32_t *d_stats, *d_par;
    CK(cudaMalloc(&d_g[0], g0.size() * 4));
    CK(cudaMalloc(&d_g[1], g0.size() * 4));
    CK(cudaMalloc(&d_fit, pop * 4));
    CK(cudaMalloc(&d_stats, 16 + 4 * MAX_ELITES));
    CK(cudaMalloc(&d_par, size_t(pop) * 8));
    const uint32_t B = 64, blocks = (pop + B - 1) / B;
    const uint64_t genes = uint64_t(pop) * len;
    const uint32_t bblocks = uint32_t((genes + 255) / 256);
    auto evaluate = [&](const float* gen, uint32_t L) {
      if (acrobot) acrobot_episode<<<blocks, B>>>(gen, d_fit, pop, L, seed);
      else market_episode<<<blocks, B>>>(gen, d_data, d_fit, pop, L);
    };
    auto generation = [&](uint32_t g, int cur, float& best, float& mean) {
      evaluate(d_g[cur], steps);
      ga_reduce<<<1, 256>>>(d_fit, pop, elites, d_stats);
      ga_select<<<blocks, B>>>(d_fit, d_stats, d_par, pop, g, seed, tour, elites);
      ga_breed<<<bblocks, 256>>>(d_g[cur], d_g[1 - cur], d_par, pop, len, g, seed, rate, sigma, lo, hi, elites);
      uint32_t st[4];
      CK(cudaMemcpy(st, d_stats, 16, cudaMemcpyDeviceToHost));  // the one read-back per generation
      std::memcpy(&best, &st[0], 4);
      std::memcpy(&mean, &st[1], 4);
    };
    CK(cudaMemcpy(d_g[0], g0.data(), g0.size() * 4, cudaMemcpyHostToDevice));
    float b, m;
    generation(0, 0, b, m);  // warm-up
    CK(cudaMemcpy(d_g[0], g0.data(), g0.size() * 4, cudaMemcpyHostToDevice));
    std::vector<double> secs, bests, means;
    int cur = 0;
    for (uint32_t g = 0; g < gens; ++g) {
      auto t0 = std::chrono::steady_clock::now();
      generation(g, cur, b, m);
      secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      bests.push_back(b);
      means.push_back(m);
      cur = 1 - cur;
    }
    CK(cudaGetLastError());
    // Generation-0 fitness of the sample (indices k * pop / 64), at L and at the reference horizon.
    CK(cudaMemcpy(d_g[0], g0.data(), g0.size() * 4, cudaMemcpyHostToDevice));
    auto sample = [&](uint32_t L) {
      evaluate(d_g[0], L);
      std::vector<float> f(pop);
      CK(cudaMemcpy(f.data(), d_fit, pop * 4, cudaMemcpyDeviceToHost));
      std::string s;
      uint32_t n = std::min<uint32_t>(64, pop);
      for (uint32_t k = 0; k < n; ++k) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%s%.9g", k ? ", " : "", f[uint64_t(k) * pop / n]);
        s += buf;
      }
      return s;
    };
    const uint32_t horizon = acrobot ? std::min<uint32_t>(steps, 60) : steps;
    std::string idx;
    for (uint32_t k = 0, n = std::min<uint32_t>(64, pop); k < n; ++k)
      idx += (k ? ", " : "") + std::to_string(uint64_t(k) * pop / n);
    std::vector<double> gps;
    for (double s : secs) gps.push_back(1.0 / s);
    char head[512];
    std::snprintf(head, sizeof head,
                  "%s\n    {\"pop\": %u, \"steps\": %u, \"generations\": %u, \"gen_per_s\": {\"median\": %.6g, "
                  "\"min\": %.6g, \"max\": %.6g},\n",
                  pi ? "," : "", pop, steps, gens, median(gps), *std::min_element(gps.begin(), gps.end()),
                  *std::max_element(gps.begin(), gps.end()));
    js += head;
    js += "     \"best_fitness\": [";
    for (size_t k = 0; k < bests.size(); ++k) js += (k ? ", " : "") + std::to_string(bests[k]);
    js += "],\n     \"sample_fitness\": {\"indices\": [" + idx + "], \"values\": [" + sample(steps) +
          "], \"horizon\": " + std::to_string(horizon) + ", \"values_at_horizon\": [" + sample(horizon) + "]}}";
    std::printf("[cuda] %s pop %u steps %u: %.4g gen/s\n", workload.c_str(), pop, steps, median(gps));
    for (int k = 0; k < 2; ++k) CK(cudaFree(d_g[k]));
    CK(cudaFree(d_fit));
    CK(cudaFree(d_stats));
    CK(cudaFree(d_par));
  }
  js += "\n  ]\n}\n";
  if (!json_path.empty()) {
    FILE* f = std::fopen(json_path.c_str(), "w");
    if (!f) { std::fprintf(stderr, "cannot write %s\n", json_path.c_str()); return 1; }
    std::fputs(js.c_str(), f);
    std::fclose(f);
  }
  if (d_data) CK(cudaFree(d_data));
  return 0;
}
