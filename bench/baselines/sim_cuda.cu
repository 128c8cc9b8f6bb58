// Hand-written CUDA for `wgfuse sim`, written to be as fast as we can make it: the native ceiling
// that wgfuse is measured against (issue 13). Same dynamics, policies, genomes, start states,
// fitness and GA as wgfuse (kernels/sim_*.wgsl, src/sim/reference.cpp, kernels/sim_evolve.wgsl),
// with the same counter-based hash (kernels/sim_rng.wgsl).
//
// Evaluation strategies (--variant):
//   thread  one thread per individual. MLP workloads (acrobot, cartpole, mountaincar): the whole
//           genome in registers, loaded once per launch (coalesced: genomes are gene-major, gene k
//           of individual i at k * pop + i). Market: the 502 weights in shared memory (a
//           per-thread column, conflict-free), loaded once. Rastrigin: the genome streamed once.
//   team    --lanes L threads per individual (default 4), each holding the weights of hidden units
//           lane, lane + L, ...; the partial logits are combined by butterfly shuffles, which
//           leave the same bits in every lane, so the lanes of a team stay in lock-step without a
//           barrier. Market (4 lanes only): W_in, W_h and b in registers, W_out in shared memory,
//           the next step's record prefetched into registers, lane g trades asset group g, at most
//           168 registers so that 40,000 threads fit in one wave on an H100. Rastrigin (bound by
//           reading the genomes): --lanes S threads per 4 consecutive individuals (default 64),
//           each reading their gene t as one float4 (a warp's load is whole 128-byte lines) for
//           t = s, s + S, ..., in batches of 8 loads in flight; the slices' sums added in
//           shared memory.
//   The workload files of examples/sim/ (pendulum, option_pricer): thread only, as their headers'
//           "team": {"max": 1}; the pendulum's 41 weights in registers, one option path per thread.
// Arithmetic (--math): fast = the intrinsics __sinf, __cosf, __expf, __fdividef (what WGSL's
// builtins are allowed to be); accurate = libm sinf/cosf/expf and IEEE division. Both print in
// the JSON ("math") and run_sim.sh reports each figure with its arithmetic.
//
// Start states (common random numbers): variable k of episode e in generation g is
// scale * unit_sym(hash5(seed, STREAM_STATE, g, e, k)), the same for every individual; fitness is
// the f32 sum of the --episodes N returns in episode order, divided by N. Market and Rastrigin have
// no random start: every episode is the same, so they run it once and sum that return N times.
//
// Registers and spills (nvcc 13.0, -O3 -arch=sm_90 -Xptxas -v; run_sim.sh keeps the full list in
// cuda_build.txt), fast math: acrobot team4 102, thread 255 + 288 B spilled (163 weights and the
// RK4 state do not fit; the spill stays in L1); cartpole team4 70, thread 244; mountaincar team4
// 63, thread 218; rastrigin team (float4, any S) 32, thread 28; market team4 163 (cap 168), thread 254
// (weights in shared memory). No other spills. Accurate math: the libm slow paths add a 32-80 B stack.
//
// Correctness: --check WGFUSE_JSON evaluates generation 0 at wgfuse's population and the
// reference horizon, and compares the sample with wgfuse's CPU double-precision reference under
// wgfuse's tolerances (src/sim/workloads.cpp) before anything is timed; exit 3 on mismatch.
// --host-check WGFUSE_JSON runs the same comparison on the CPU (the thread variant's code,
// compiled for the host with accurate math), so the dynamics can be checked without a GPU.
//
// Build: nvcc -O3 -arch=sm_90 -o sim_cuda sim_cuda.cu
// Run:   ./sim_cuda WORKLOAD [--variant thread|team] [--lanes 2|4|8 (rastrigin 8..64)] [--math fast|accurate]
//          [--block B] [--sizes PxL,...] [--generations G] [--seed S] [--episodes N] [--prefetch auto|on|off]
//          [--data FILE] [--check WGFUSE_JSON] [--host-check WGFUSE_JSON] [--json FILE]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e = (x);                                                                      \
    if (e != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

[[noreturn]] static void fail(int code, const std::string& msg) {
  std::fprintf(stderr, "sim_cuda: %s\n", msg.c_str());
  std::exit(code);
}

// ---- the shared hash (kernels/sim_rng.wgsl) ----
__host__ __device__ inline uint32_t pcg_hash(uint32_t v) {
  uint32_t state = v * 747796405u + 2891336453u;
  uint32_t word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
  return (word >> 22u) ^ word;
}
__host__ __device__ inline uint32_t hash4(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  return pcg_hash(pcg_hash(pcg_hash(pcg_hash(a) + b) + c) + d);
}
__host__ __device__ inline uint32_t hash5(uint32_t a, uint32_t b, uint32_t c, uint32_t d, uint32_t e) {
  return pcg_hash(hash4(a, b, c, d) + e);
}
__host__ __device__ inline float unit_sym(uint32_t h) {
  return float(h >> 8u) * (1.0f / 8388608.0f) - 1.0f;
}
__host__ __device__ inline float unit_open(uint32_t h) {
  return (float(h >> 8u) + 1.0f) * (1.0f / 16777216.0f);
}
constexpr uint32_t STREAM_GENOME = 1, STREAM_STATE = 2, STREAM_SELECT = 3, STREAM_CROSS = 4,
                   STREAM_MUTATE = 5;

// One f32 rounding, never fused into a following add (mountaincar adds -0.5 to it).
__host__ __device__ inline float mul_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
__host__ __device__ inline float start_state(uint32_t seed, uint32_t gen, uint32_t ep, uint32_t k,
                                             float scale) {
  return mul_rn(scale, unit_sym(hash5(seed, STREAM_STATE, gen, ep, k)));
}

__host__ __device__ inline float load_gene(const float* p) {
#ifdef __CUDA_ARCH__
  return __ldg(p);
#else
  return *p;
#endif
}

// ---- arithmetic: the fast intrinsic when Fast, else libm (always libm on the host: --host-check) ----
#ifdef __CUDA_ARCH__
#define FAST_OR_LIBM(intrinsic, libm)   \
  if constexpr (Fast) return intrinsic; \
  return libm
#else
#define FAST_OR_LIBM(intrinsic, libm) return libm
#endif
template <bool Fast>
__host__ __device__ inline float m_sin(float x) {
  FAST_OR_LIBM(__sinf(x), sinf(x));
}
template <bool Fast>
__host__ __device__ inline float m_cos(float x) {
  FAST_OR_LIBM(__cosf(x), cosf(x));
}
template <bool Fast>
__host__ __device__ inline float m_exp(float x) {
  FAST_OR_LIBM(__expf(x), expf(x));
}
template <bool Fast>
__host__ __device__ inline float m_div(float a, float b) {
  FAST_OR_LIBM(__fdividef(a, b), a / b);
}
template <bool Fast>
__host__ __device__ inline float m_log(float x) {
  FAST_OR_LIBM(__logf(x), logf(x));
}
// tanh without overflow for large |x|, as kernels/sim_common.wgsl.
template <bool Fast>
__host__ __device__ inline float tanh_safe(float x) {
  float e = m_exp<Fast>(-2.0f * fabsf(x));
  return copysignf(m_div<Fast>(1.0f - e, 1.0f + e), x);
}

// Sum of v over the lanes of a team (butterfly): every lane ends with the same bits, because
// each pairwise add sees the same two operands, in either order.
template <int Lanes>
__device__ inline float team_sum(float v, unsigned mask) {
#pragma unroll
  for (int off = 1; off < Lanes; off *= 2) v += __shfl_xor_sync(mask, v, off);
  return v;
}
// The lanes of this thread's team, as a shuffle mask (Lanes divides 32 and the block size).
template <int Lanes>
__device__ inline unsigned team_mask() {
  return Lanes >= 32 ? 0xffffffffu : ((1u << Lanes) - 1u) << ((threadIdx.x & 31u) & ~unsigned(Lanes - 1));
}

constexpr float PI_F = 3.14159265358979323846f;

// ---- the MLP policy (kernels/sim_mlp.wgsl): 16 tanh units, argmax of the logits ----
// Genome: W1[16][In] row-major, b1[16], W2[Out][16], b2[Out]. Lane `lane` of a team of Lanes
// holds hidden units lane + Lanes * u in registers; Lanes = 1 is the one-thread policy, which sums
// in the reference's order (bias first, then the units in order).
template <int In, int Out, int Lanes, bool Fast>
struct MlpPolicy {
  static constexpr int kHidden = 16, kUnits = kHidden / Lanes;
  static constexpr int kB1 = kHidden * In, kW2 = kB1 + kHidden, kB2 = kW2 + Out * kHidden, kGenes = kB2 + Out;
  float w1[kUnits][In], b1[kUnits], w2[Out][kUnits], b2[Out];

  __host__ __device__ void load(const float* genomes, uint32_t ind, uint32_t pop, uint32_t lane) {
    auto gene = [&](int k) { return load_gene(genomes + size_t(k) * pop + ind); };
#pragma unroll
    for (int u = 0; u < kUnits; ++u) {
      const int j = int(lane) + Lanes * u;
#pragma unroll
      for (int k = 0; k < In; ++k) w1[u][k] = gene(j * In + k);
      b1[u] = gene(kB1 + j);
#pragma unroll
      for (int o = 0; o < Out; ++o) w2[o][u] = gene(kW2 + o * kHidden + j);
    }
#pragma unroll
    for (int o = 0; o < Out; ++o) b2[o] = gene(kB2 + o);
  }

  __host__ __device__ int act(const float obs[In], unsigned mask) const {
    float l[Out];
#pragma unroll
    for (int o = 0; o < Out; ++o) l[o] = Lanes == 1 ? b2[o] : 0.0f;
#pragma unroll
    for (int u = 0; u < kUnits; ++u) {
      float a = b1[u];
#pragma unroll
      for (int k = 0; k < In; ++k) a += w1[u][k] * obs[k];
      const float h = tanh_safe<Fast>(a);
#pragma unroll
      for (int o = 0; o < Out; ++o) l[o] += w2[o][u] * h;
    }
#ifdef __CUDA_ARCH__
    if constexpr (Lanes > 1) {
#pragma unroll
      for (int o = 0; o < Out; ++o) l[o] = b2[o] + team_sum<Lanes>(l[o], mask);
    }
#endif
    int best = 0;
#pragma unroll
    for (int o = 1; o < Out; ++o)
      if (l[o] > l[best]) best = o;
    return best;
  }
};

// ---- the environments: start(u) from the start-state uniforms, observe, and step, which adds the
// step's reward to ret and returns false at the terminal step (the episode then stops) ----

// Acrobot-v1 (kernels/sim_acrobot.wgsl): book dynamics, one RK4 step of dt 0.2.
// Acrobot and CartPole: four state variables, started from the four uniforms.
struct FourVars {
  static constexpr int kVars = 4;
  float v[4];
  __host__ __device__ void start(const float u[4]) {
#pragma unroll
    for (int k = 0; k < 4; ++k) v[k] = u[k];
  }
};

template <bool Fast>
struct Acrobot : FourVars {  // v = th1, th2, dth1, dth2
  static constexpr int kIn = 6, kOut = 3;
  static constexpr float kScale = 0.1f;

  __host__ __device__ void observe(float o[kIn]) const {
    o[0] = m_cos<Fast>(v[0]);
    o[1] = m_sin<Fast>(v[0]);
    o[2] = m_cos<Fast>(v[1]);
    o[3] = m_sin<Fast>(v[1]);
    o[4] = v[2];
    o[5] = v[3];
  }
  __host__ __device__ static void dsdt(const float s[4], float a, float out[4]) {
    const float m1 = 1, m2 = 1, l1 = 1, lc1 = 0.5f, lc2 = 0.5f, I1 = 1, I2 = 1, g = 9.8f;
    const float c2 = m_cos<Fast>(s[1]), s2 = m_sin<Fast>(s[1]);
    const float d1 = m1 * lc1 * lc1 + m2 * (l1 * l1 + lc2 * lc2 + 2.0f * l1 * lc2 * c2) + I1 + I2;
    const float d2 = m2 * (lc2 * lc2 + l1 * lc2 * c2) + I2;
    // As the WGSL: cos(x - pi/2) = sin(x), and one reciprocal of d1 for its three divisions.
    const float inv_d1 = m_div<Fast>(1.0f, d1);
    const float phi2 = m2 * lc2 * g * m_sin<Fast>(s[0] + s[1]);
    const float phi1 = -m2 * l1 * lc2 * s[3] * s[3] * s2 - 2.0f * m2 * l1 * lc2 * s[3] * s[2] * s2 +
                       (m1 * lc1 + m2 * l1) * g * m_sin<Fast>(s[0]) + phi2;
    const float d2_d1 = d2 * inv_d1;
    const float dd2 = m_div<Fast>(a + d2_d1 * phi1 - m2 * l1 * lc2 * s[2] * s[2] * s2 - phi2,
                                  m2 * lc2 * lc2 + I2 - d2 * d2 * inv_d1);
    out[0] = s[2];
    out[1] = s[3];
    out[2] = -(d2 * dd2 + phi1) * inv_d1;
    out[3] = dd2;
  }
  __host__ __device__ static float wrap(float x) {  // bounded, as kernels/sim_acrobot.wgsl
    for (int n = 0; n < 16 && x > PI_F; ++n) x -= 2.0f * PI_F;
    for (int n = 0; n < 16 && x < -PI_F; ++n) x += 2.0f * PI_F;
    return x;
  }
  __host__ __device__ bool step(int action, float& ret) {
    const float a = float(action) - 1.0f, dt = 0.2f, y0[4] = {v[0], v[1], v[2], v[3]};
    // sum = k1 + 2 k2 + 2 k3 + k4, accumulated left to right as each k is made (the same
    // roundings as the whole expression, with fewer registers live).
    float k[4], y[4], sum[4];
    dsdt(y0, a, k);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      sum[q] = k[q];
      y[q] = y0[q] + dt / 2.0f * k[q];
    }
    dsdt(y, a, k);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      sum[q] = sum[q] + 2.0f * k[q];
      y[q] = y0[q] + dt / 2.0f * k[q];
    }
    dsdt(y, a, k);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      sum[q] = sum[q] + 2.0f * k[q];
      y[q] = y0[q] + dt * k[q];
    }
    dsdt(y, a, k);
#pragma unroll
    for (int q = 0; q < 4; ++q) y[q] = y0[q] + dt / 6.0f * (sum[q] + k[q]);
    v[0] = wrap(y[0]);
    v[1] = wrap(y[1]);
    v[2] = fminf(fmaxf(y[2], -4.0f * PI_F), 4.0f * PI_F);
    v[3] = fminf(fmaxf(y[3], -9.0f * PI_F), 9.0f * PI_F);
    if (-m_cos<Fast>(v[0]) - m_cos<Fast>(v[1] + v[0]) > 1.0f) return false;  // terminal: reward 0
    ret -= 1.0f;
    return true;
  }
};

// CartPole-v1 (kernels/sim_cartpole.wgsl): Euler, tau 0.02, +1 per step taken.
template <bool Fast>
struct CartPole : FourVars {  // v = x, x_dot, theta, theta_dot, also the observation
  static constexpr int kIn = 4, kOut = 2;
  static constexpr float kScale = 0.05f;

  __host__ __device__ void observe(float o[kIn]) const {
#pragma unroll
    for (int k = 0; k < 4; ++k) o[k] = v[k];
  }
  __host__ __device__ bool step(int action, float& ret) {
    float &x = v[0], &x_dot = v[1], &theta = v[2], &theta_dot = v[3];
    const float gravity = 9.8f, masspole = 0.1f, total_mass = 1.1f, length = 0.5f, polemass_length = 0.05f,
                tau = 0.02f;
    const float force = action == 1 ? 10.0f : -10.0f;
    const float c = m_cos<Fast>(theta), s = m_sin<Fast>(theta);
    const float temp = m_div<Fast>(force + polemass_length * theta_dot * theta_dot * s, total_mass);
    const float thetaacc = m_div<Fast>(gravity * s - c * temp,
                                       length * (4.0f / 3.0f - m_div<Fast>(masspole * c * c, total_mass)));
    const float xacc = temp - m_div<Fast>(polemass_length * thetaacc * c, total_mass);
    x = x + tau * x_dot;
    x_dot = x_dot + tau * xacc;
    theta = theta + tau * theta_dot;
    theta_dot = theta_dot + tau * thetaacc;
    ret += 1.0f;
    const float theta_limit = 0.20943951023931953f;
    return !(x < -2.4f || x > 2.4f || theta < -theta_limit || theta > theta_limit);
  }
};

// MountainCar-v0 (kernels/sim_mountaincar.wgsl): position -0.5 + U(-0.1, 0.1), velocity 0.
template <bool Fast>
struct MountainCar {
  static constexpr int kIn = 2, kOut = 3, kVars = 1;
  static constexpr float kScale = 0.1f;
  float pos, vel;

  __host__ __device__ void start(const float u[kVars]) {
    pos = -0.5f + u[0];
    vel = 0.0f;
  }
  __host__ __device__ void observe(float o[kIn]) const {
    o[0] = pos;
    o[1] = m_div<Fast>(vel, 0.07f);
  }
  __host__ __device__ bool step(int action, float& ret) {
    float v = vel + ((float(action) - 1.0f) * 0.001f + m_cos<Fast>(3.0f * pos) * (-0.0025f));
    v = fminf(fmaxf(v, -0.07f), 0.07f);
    const float p = fminf(fmaxf(pos + v, -1.2f), 0.6f);
    if (p == -1.2f && v < 0.0f) v = 0.0f;
    pos = p;
    vel = v;
    ret -= 1.0f;
    return !(p >= 0.5f && v >= 0.0f);
  }
};

template <class Env, class Policy>
__host__ __device__ float mlp_episode(const Policy& policy, uint32_t seed, uint32_t gen, uint32_t ep,
                                      uint32_t steps, unsigned mask) {
  float u[Env::kVars];
#pragma unroll
  for (int k = 0; k < Env::kVars; ++k) u[k] = start_state(seed, gen, ep, uint32_t(k), Env::kScale);
  Env s;
  s.start(u);
  float ret = 0.0f;
  for (uint32_t t = 0; t < steps; ++t) {
    float obs[Env::kIn];
    s.observe(obs);
    if (!s.step(policy.act(obs, mask), ret)) break;
  }
  return ret;
}

// Fitness of one individual: the f32 sum of its episode returns in order, over the episodes.
template <class Env, int Lanes, bool Fast>
__host__ __device__ float mlp_fitness(const float* genomes, uint32_t ind, uint32_t lane, uint32_t pop,
                                      uint32_t steps, uint32_t seed, uint32_t gen, uint32_t episodes,
                                      unsigned mask) {
  MlpPolicy<Env::kIn, Env::kOut, Lanes, Fast> policy;
  policy.load(genomes, ind, pop, lane);
  float sum = 0.0f;
  for (uint32_t e = 0; e < episodes; ++e) sum += mlp_episode<Env>(policy, seed, gen, e, steps, mask);
  return sum / float(episodes);
}

constexpr int kMaxBlock = 256;

template <class Env, int Lanes, bool Fast>
__global__ void __launch_bounds__(kMaxBlock)
    mlp_kernel(const float* __restrict__ genomes, float* __restrict__ fitness, uint32_t pop, uint32_t steps,
               uint32_t seed, uint32_t gen, uint32_t episodes) {
  const uint32_t tid = blockIdx.x * blockDim.x + threadIdx.x, ind = tid / Lanes, lane = tid % Lanes;
  if (ind >= pop) return;  // whole teams: the block size is a multiple of Lanes
  const float f = mlp_fitness<Env, Lanes, Fast>(genomes, ind, lane, pop, steps, seed, gen, episodes,
                                                Lanes == 1 ? 0u : team_mask<Lanes>());
  if (lane == 0) fitness[ind] = f;
}

// ---- Rastrigin (kernels/sim_rastrigin.wgsl): fitness -sum_t (x_t^2 - 10 cos(2 pi x_t) + 10) ----
template <bool Fast>
__host__ __device__ inline float rastrigin_term(float x) {
  return x * x - 10.0f * m_cos<Fast>(6.2831853071795864f * x) + 10.0f;
}

// One thread per individual (the thread variant, and the host check).
template <bool Fast>
__host__ __device__ float rastrigin_sum(const float* genomes, uint32_t ind, uint32_t pop, uint32_t dims) {
  float sum = 0.0f;
#pragma unroll 8
  for (uint32_t t = 0; t < dims; ++t) sum += rastrigin_term<Fast>(load_gene(genomes + size_t(t) * pop + ind));
  return sum;
}
__host__ __device__ inline float repeated_mean(float ret, uint32_t episodes) {
  float sum = 0.0f;
  for (uint32_t e = 0; e < episodes; ++e) sum += ret;
  return sum / float(episodes);
}
template <bool Fast>
__global__ void __launch_bounds__(kMaxBlock)
    rastrigin_kernel(const float* __restrict__ genomes, float* __restrict__ fitness, uint32_t pop,
                     uint32_t dims, uint32_t episodes) {
  const uint32_t ind = blockIdx.x * blockDim.x + threadIdx.x;
  if (ind < pop) fitness[ind] = repeated_mean(-rastrigin_sum<Fast>(genomes, ind, pop, dims), episodes);
}

// The team variant, written for bandwidth: a thread reads 4 consecutive individuals' gene t as
// one float4 (genomes are gene-major, so a warp's load is whole 128-byte lines), and Slices
// threads split the genes of those 4 (thread s: genes s, s + Slices, ...), 8 loads in flight
// each; the block adds the slices' partial sums in shared memory. Needs pop % 4 == 0 (the row
// of each gene 16-byte aligned). Block = quads x Slices threads, quad fastest.
template <int Slices, bool Fast>
__global__ void __launch_bounds__(kMaxBlock)
    rastrigin_quad_kernel(const float4* __restrict__ genomes, float* __restrict__ fitness, uint32_t pop,
                          uint32_t dims, uint32_t episodes) {
  __shared__ float4 partial[kMaxBlock];
  const uint32_t quads_per_block = blockDim.x / Slices, q_local = threadIdx.x % quads_per_block,
                 slice = threadIdx.x / quads_per_block, quads = pop / 4,
                 quad = blockIdx.x * quads_per_block + q_local;
  float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  auto add = [&](float4 x) {
    sum.x += rastrigin_term<Fast>(x.x);
    sum.y += rastrigin_term<Fast>(x.y);
    sum.z += rastrigin_term<Fast>(x.z);
    sum.w += rastrigin_term<Fast>(x.w);
  };
  if (quad < quads) {
    const float4* p = genomes + quad;
    uint32_t t = slice;
    // Batches of 8 loads issued before their arithmetic (in flight together), then the rest.
    for (; t + 7 * Slices < dims; t += 8 * Slices) {
      float4 x[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) x[u] = __ldg(p + size_t(t + u * Slices) * quads);
#pragma unroll
      for (int u = 0; u < 8; ++u) add(x[u]);
    }
    for (; t < dims; t += Slices) add(__ldg(p + size_t(t) * quads));
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  if (slice != 0 || quad >= quads) return;
  for (uint32_t s = 1; s < Slices; ++s) {
    const float4 p = partial[s * quads_per_block + q_local];
    sum.x += p.x;
    sum.y += p.y;
    sum.z += p.z;
    sum.w += p.w;
  }
  float* f = fitness + 4 * quad;
  f[0] = repeated_mean(-sum.x, episodes);
  f[1] = repeated_mean(-sum.y, episodes);
  f[2] = repeated_mean(-sum.z, episodes);
  f[3] = repeated_mean(-sum.w, episodes);
}

// ---- Market (kernels/sim_market.wgsl): RNN 8-16-6 on records of 22 f32 per step ----
// Genome: W_in[16][8], W_h[16][16], b[16], W_out[6][16], b_out[6].
constexpr int kMarketRecord = 22, kMarketGenes = 502, kWh = 128, kB = 384, kWout = 400, kBout = 496;
// Where a record's values are: the file's records (--data, read by the host check), and the
// records as the GPU reads them, as wgfuse uploads them (src/sim/market_data.h device_records):
// 6 features and 2 zeros, then asset group g's 4 returns at 8 + 4 g, so that the team kernel loads
// a record's features as 2 float4 and its group's returns as 1.
struct MarketLayout {
  int stride, returns;
};
constexpr MarketLayout kFileRecords{kMarketRecord, 6}, kDeviceRecords{24, 8};

static std::vector<float> market_device_records(const std::vector<float>& rec) {
  const size_t steps = rec.size() / kMarketRecord;
  std::vector<float> dev(steps * kDeviceRecords.stride, 0.0f);
  for (size_t t = 0; t < steps; ++t) {
    const float* in = &rec[t * kMarketRecord];
    std::copy(in, in + 6, &dev[t * kDeviceRecords.stride]);
    std::copy(in + 6, in + kMarketRecord, &dev[t * kDeviceRecords.stride + kDeviceRecords.returns]);
  }
  return dev;
}

struct MarketStats {
  float sum_r = 0, sum_r2 = 0, equity = 0, peak = 0, mdd = 0;
  __host__ __device__ void add(float r) {
    sum_r += r;
    sum_r2 += r * r;
    equity += r;
    peak = fmaxf(peak, equity);
    mdd = fmaxf(mdd, peak - equity);
  }
  // The annualised Sharpe ratio of the hourly returns minus 5 x the maximum drawdown.
  __host__ __device__ float fitness(uint32_t steps) const {
    const float n = float(steps), mean = sum_r / n, var = fmaxf(sum_r2 / n - mean * mean, 0.0f);
    return mean / sqrtf(var + 1e-12f) * 93.59487165438072f - 5.0f * mdd;
  }
};

// Weight k of one individual, at base[k * stride]: a column of shared memory on the GPU, read
// every step (the asm load keeps the compiler from hoisting all 502 into registers, where they
// spill), or the gene-major genome on the host.
struct WeightColumn {
  const float* base;
  uint32_t stride;
  __host__ __device__ float operator[](int k) const {
#ifdef __CUDA_ARCH__
    float v;
    asm volatile("ld.shared.f32 %0, [%1];"
                 : "=f"(v)
                 : "r"(uint32_t(__cvta_generic_to_shared(base + size_t(k) * stride)))
                 : "memory");  // after the weights' stores, whatever the compiler knows
    return v;
#else
    return base[size_t(k) * stride];
#endif
  }
};

// One thread per individual.
template <bool Fast>
__host__ __device__ float market_episode(WeightColumn w, const float* __restrict__ data, uint32_t steps,
                                         MarketLayout layout) {
  float h[16] = {}, pos[4] = {}, fb0 = 0.0f, fb1 = 0.0f;
  MarketStats st;
  for (uint32_t t = 0; t < steps; ++t) {
    const float* rec = data + size_t(t) * layout.stride;
    const float x[8] = {rec[0], rec[1], rec[2], rec[3], rec[4], rec[5], fb0, fb1};
    float hn[16];
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      float a = w[kB + j];
#pragma unroll
      for (int k = 0; k < 8; ++k) a += w[j * 8 + k] * x[k];
      float r = 0.0f;
#pragma unroll
      for (int m = 0; m < 16; ++m) r += w[kWh + j * 16 + m] * h[m];
      hn[j] = tanh_safe<Fast>(a + 0.25f * r);
    }
    float out[6];
#pragma unroll
    for (int o = 0; o < 6; ++o) {
      float a = w[kBout + o];
#pragma unroll
      for (int j = 0; j < 16; ++j) a += w[kWout + o * 16 + j] * hn[j];
      out[o] = a;
    }
    float r = 0.0f, turnover = 0.0f;
#pragma unroll
    for (int g = 0; g < 4; ++g) {
      const float p = tanh_safe<Fast>(out[g]);
      const float* ret = rec + layout.returns + 4 * g;
      const float gr = (ret[0] + ret[1] + ret[2] + ret[3]) * 0.25f;
      r += p * 0.25f * gr;
      turnover += fabsf(p - pos[g]) * 0.25f;
      pos[g] = p;
    }
    r -= 0.0005f * turnover;
#pragma unroll
    for (int j = 0; j < 16; ++j) h[j] = hn[j];
    fb0 = tanh_safe<Fast>(out[4]);
    fb1 = tanh_safe<Fast>(out[5]);
    st.add(r);
  }
  return st.fitness(steps);
}

template <bool Fast>
__global__ void __launch_bounds__(kMaxBlock)
    market_thread_kernel(const float* __restrict__ genomes, const float* __restrict__ data,
                         float* __restrict__ fitness, uint32_t pop, uint32_t steps, uint32_t episodes) {
  extern __shared__ float weights[];  // [kMarketGenes][blockDim.x]: a column per thread
  const uint32_t ind = blockIdx.x * blockDim.x + threadIdx.x;
  if (ind >= pop) return;  // no barrier below: each thread reads only its own column
  for (int k = 0; k < kMarketGenes; ++k)
    weights[k * blockDim.x + threadIdx.x] = __ldg(genomes + size_t(k) * pop + ind);
  fitness[ind] = repeated_mean(
      market_episode<Fast>({weights + threadIdx.x, blockDim.x}, data, steps, kDeviceRecords), episodes);
}

// Four lanes per individual. Lane l: hidden units l, l+4, l+8, l+12 (W_in, W_h, b in registers),
// their columns of W_out and b_out in shared memory, and asset group l of the trade. Every lane keeps the
// whole h (gathered by shuffles) and the fed-back outputs.
constexpr int kMarketLanes = 4, kMarketTeamMaxBlock = 128;
// Per team: W_out (96) then b_out (6); 132 = 4 mod 32, so the 8 teams of a warp use distinct banks.
constexpr int kWoutStride = 132;

// Prefetch: each step loads the next step's record before its arithmetic. Measured on the H100
// (2026-11-23, L = 1,500): 10,000 individuals (one wave) 1.088 ms with it, 1.020 without; 65,536
// (five waves) 5.84 with it, 6.29 without. market_evaluator picks by the waves (--prefetch).
template <bool Fast, bool Prefetch>
__global__ void __launch_bounds__(kMarketTeamMaxBlock, 3)  // 65,536 / (3 x 128) registers: at most 168
    market_team_kernel(const float* __restrict__ genomes, const float* __restrict__ data,
                       float* __restrict__ fitness, uint32_t pop, uint32_t steps, uint32_t episodes) {
  __shared__ float wout_all[kMarketTeamMaxBlock / kMarketLanes][kWoutStride];
  const uint32_t tid = blockIdx.x * blockDim.x + threadIdx.x, ind = tid / kMarketLanes,
                 lane = tid % kMarketLanes;
  const uint32_t team = threadIdx.x / kMarketLanes;
  if (ind >= pop) return;  // whole teams, and no block-wide barrier: the W_out columns are the team's own
  const unsigned mask = team_mask<kMarketLanes>();
  auto gene = [&](int k) { return __ldg(genomes + size_t(k) * pop + ind); };
  float w_in[4][8], w_h[4][16], b[4];
  float* wout = wout_all[team];
  const WeightColumn wout_col{wout, 1};  // read per step, not hoisted into registers
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    const int j = int(lane) + 4 * u;
#pragma unroll
    for (int k = 0; k < 8; ++k) w_in[u][k] = gene(j * 8 + k);
#pragma unroll
    for (int m = 0; m < 16; ++m) w_h[u][m] = gene(kWh + j * 16 + m);
    b[u] = gene(kB + j);
#pragma unroll
    for (int o = 0; o < 6; ++o) wout[o * 16 + j] = gene(kWout + o * 16 + j);
  }
  if (lane < 2)
    for (int o = int(lane) * 3; o < int(lane) * 3 + 3; ++o) wout[96 + o] = gene(kBout + o);
  __syncwarp(mask);  // the team's W_out columns, written by its four lanes

  float h[16] = {}, pos = 0.0f, fb0 = 0.0f, fb1 = 0.0f;
  MarketStats st;
  // Record t's features and this lane's group returns (loaded one step ahead with Prefetch).
  float4 feat0, feat1, ret4;  // 3 loads: features 0..3, 4..5 (and 2 zeros), group `lane`'s returns
  auto fetch = [&](uint32_t t) {
    const float4* rec = reinterpret_cast<const float4*>(data) + size_t(t) * (kDeviceRecords.stride / 4);
    feat0 = __ldg(rec);
    feat1 = __ldg(rec + 1);
    ret4 = __ldg(rec + kDeviceRecords.returns / 4 + lane);
  };
  if (Prefetch) fetch(0);
  for (uint32_t t = 0; t < steps; ++t) {
    if (!Prefetch) fetch(t);
    const float x[8] = {feat0.x, feat0.y, feat0.z, feat0.w, feat1.x, feat1.y, fb0, fb1};
    const float group_ret = (ret4.x + ret4.y + ret4.z + ret4.w) * 0.25f;
    if (Prefetch && t + 1 < steps) fetch(t + 1);
    float hn[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      float a = b[u];
#pragma unroll
      for (int k = 0; k < 8; ++k) a += w_in[u][k] * x[k];
      float r = 0.0f;
#pragma unroll
      for (int m = 0; m < 16; ++m) r += w_h[u][m] * h[m];
      hn[u] = tanh_safe<Fast>(a + 0.25f * r);
    }
    float out[6];
#pragma unroll
    for (int o = 0; o < 6; ++o) {
      float a = 0.0f;
#pragma unroll
      for (int u = 0; u < 4; ++u) a += wout_col[o * 16 + int(lane) + 4 * u] * hn[u];
      out[o] = wout_col[96 + o] + team_sum<kMarketLanes>(a, mask);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u)
#pragma unroll
      for (int l = 0; l < 4; ++l) h[l + 4 * u] = __shfl_sync(mask, hn[u], (threadIdx.x & 31u & ~3u) + l);
    // Asset group `lane`: the lane's output without indexing a register array by a variable.
    float mine = out[0];
#pragma unroll
    for (int g = 1; g < 4; ++g)
      if (int(lane) == g) mine = out[g];
    const float p = tanh_safe<Fast>(mine);
    const float r = team_sum<kMarketLanes>(p * 0.25f * group_ret, mask);
    const float turnover = team_sum<kMarketLanes>(fabsf(p - pos) * 0.25f, mask);
    pos = p;
    fb0 = tanh_safe<Fast>(out[4]);
    fb1 = tanh_safe<Fast>(out[5]);
    st.add(r - 0.0005f * turnover);
  }
  if (lane == 0) fitness[ind] = repeated_mean(st.fitness(steps), episodes);
}

// ---- the workload files of examples/sim/: one thread per individual, as their "team": {"max": 1} ----

// examples/sim/pendulum.wgsl: Pendulum-v1 (dt 0.05), the file's own MLP 3-8-1, torque
// 2 tanh(out). Genome: W1[8][3] row-major, b1[8], w2[8], b2; all 41 in registers.
template <bool Fast>
__host__ __device__ float pendulum_fitness(const float* genomes, uint32_t ind, uint32_t pop, uint32_t steps,
                                           uint32_t seed, uint32_t gen, uint32_t episodes) {
  float w1[8][3], b1[8], w2[8];
  auto gene = [&](int k) { return load_gene(genomes + size_t(k) * pop + ind); };
#pragma unroll
  for (int j = 0; j < 8; ++j) {
#pragma unroll
    for (int k = 0; k < 3; ++k) w1[j][k] = gene(j * 3 + k);
    b1[j] = gene(24 + j);
    w2[j] = gene(32 + j);
  }
  const float b2 = gene(40);
  float sum = 0.0f;
  for (uint32_t e = 0; e < episodes; ++e) {
    float th = start_state(seed, gen, e, 0, PI_F), thdot = start_state(seed, gen, e, 1, 1.0f), ret = 0.0f;
    for (uint32_t t = 0; t < steps; ++t) {
      const float c = m_cos<Fast>(th), s = m_sin<Fast>(th), obs[3] = {c, s, thdot};
      float out = b2;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        float a = b1[j];
#pragma unroll
        for (int k = 0; k < 3; ++k) a += w1[j][k] * obs[k];
        out += w2[j] * tanh_safe<Fast>(a);
      }
      const float u = fminf(fmaxf(2.0f * tanh_safe<Fast>(out), -2.0f), 2.0f);
      const float y = th + PI_F, an = y - 2.0f * PI_F * floorf(m_div<Fast>(y, 2.0f * PI_F)) - PI_F;
      const float cost = an * an + 0.1f * thdot * thdot + 0.001f * u * u;
      const float newthdot = fminf(fmaxf(thdot + (3.0f * 10.0f / 2.0f * s + 3.0f * u) * 0.05f, -8.0f), 8.0f);
      th = th + newthdot * 0.05f;
      thdot = newthdot;
      ret -= cost;
    }
    sum += ret;
  }
  return sum / float(episodes);
}

// examples/sim/option_pricer.wgsl: a European call under GBM, individual i's path stepped in log
// space with normals by Box-Muller from pcg_hash(hash4(seed, 16 + episode, gen, i) + step).
constexpr uint32_t kOptionStream = 16;
__host__ __device__ inline float option_uniform(uint32_t h) {  // in (0, 1), exact in f32
  return (float(h >> 8u) + 0.5f) * (1.0f / 16777216.0f);
}
template <bool Fast>
__host__ __device__ float option_fitness(uint32_t ind, uint32_t steps, uint32_t seed, uint32_t gen,
                                         uint32_t episodes) {
  const float rate = 0.05f, vol = 0.2f, dt = m_div<Fast>(1.0f, float(steps));
  float sum = 0.0f;
  for (uint32_t e = 0; e < episodes; ++e) {
    const uint32_t key = hash4(seed, kOptionStream + e, gen, ind);
    float log_s = logf(100.0f);
    for (uint32_t t = 0; t < steps; ++t) {
      const uint32_t h = pcg_hash(key + t);
      const float u1 = option_uniform(h), u2 = option_uniform(pcg_hash(h ^ 0x9e3779b9u));
      const float z = sqrtf(-2.0f * m_log<Fast>(u1)) * m_cos<Fast>(2.0f * PI_F * u2);
      log_s = log_s + (rate - 0.5f * vol * vol) * dt + vol * sqrtf(dt) * z;
    }
    sum += m_exp<Fast>(-rate) * fmaxf(m_exp<Fast>(log_s) - 105.0f, 0.0f);
  }
  return sum / float(episodes);
}

template <bool Fast>
__global__ void __launch_bounds__(kMaxBlock)
    pendulum_kernel(const float* __restrict__ genomes, float* __restrict__ fitness, uint32_t pop,
                    uint32_t steps, uint32_t seed, uint32_t gen, uint32_t episodes) {
  const uint32_t ind = blockIdx.x * blockDim.x + threadIdx.x;
  if (ind < pop) fitness[ind] = pendulum_fitness<Fast>(genomes, ind, pop, steps, seed, gen, episodes);
}
template <bool Fast>
__global__ void __launch_bounds__(kMaxBlock)
    option_kernel(float* __restrict__ fitness, uint32_t pop, uint32_t steps, uint32_t seed, uint32_t gen,
                  uint32_t episodes) {
  const uint32_t ind = blockIdx.x * blockDim.x + threadIdx.x;
  if (ind < pop) fitness[ind] = option_fitness<Fast>(ind, steps, seed, gen, episodes);
}

// ---- GA: as kernels/sim_evolve.wgsl ----
__device__ inline bool beats(float a, uint32_t ia, float b, uint32_t ib) {
  if (!isfinite(a)) return false;
  if (!isfinite(b)) return true;
  return a > b || (a == b && ia < ib);
}

constexpr uint32_t NONE = 0xffffffffu, MAX_ELITES = 8;
__device__ inline bool better(float a, uint32_t ia, float b, uint32_t ib) {
  if (ia == NONE) return false;
  if (ib == NONE) return true;
  return beats(a, ia, b, ib);
}

// The first three rounds of hash5(seed, stream, gen, child, gene), the same for a whole generation
// (computed on the host): hash5(...) == pcg_hash(pcg_hash(stream_key + child) + gene).
__host__ __device__ inline uint32_t ga_stream_key(uint32_t seed, uint32_t stream, uint32_t gen) {
  return pcg_hash(pcg_hash(pcg_hash(seed) + stream) + gen);
}
constexpr uint32_t kReduceThreads = 256, kGenesPerThread = 8, kBreedBlock = 64;

// stats: best, mean (f32 bits), best index, non-finite count, then the E elite indices.
__global__ void ga_reduce(const float* fit, uint32_t pop, uint32_t elites, uint32_t* stats) {
  __shared__ float sb[kReduceThreads], ss[kReduceThreads];
  __shared__ uint32_t si[kReduceThreads], sbad[kReduceThreads], elite[MAX_ELITES];
  uint32_t lid = threadIdx.x;
  for (uint32_t e = 0; e < elites; ++e) {
    float best = 0, sum = 0;
    uint32_t bi = NONE, bad = 0;
    for (uint32_t i = lid; i < pop; i += kReduceThreads) {
      float f = fit[i];
      if (e == 0) {
        if (isfinite(f))
          sum += f;
        else
          ++bad;
      }
      bool taken = false;
      for (uint32_t k = 0; k < e; ++k) taken = taken || elite[k] == i;
      if (!taken && better(f, i, best, bi)) {
        best = f;
        bi = i;
      }
    }
    sb[lid] = best;
    si[lid] = bi;
    ss[lid] = sum;
    sbad[lid] = bad;
    __syncthreads();
    for (uint32_t w = kReduceThreads / 2; w > 0; w /= 2) {
      if (lid < w) {
        if (better(sb[lid + w], si[lid + w], sb[lid], si[lid])) {
          sb[lid] = sb[lid + w];
          si[lid] = si[lid + w];
        }
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

__global__ void ga_select(const float* fit, const uint32_t* stats, uint32_t* parents, uint32_t pop,
                          uint32_t select_key, uint32_t tour, uint32_t elites) {
  uint32_t c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= pop) return;
  if (c < elites) {
    parents[2 * c] = parents[2 * c + 1] = stats[4 + c];
    return;
  }
  const uint32_t child = pcg_hash(select_key + c);
  for (uint32_t which = 0; which < 2; ++which) {
    uint32_t w = pcg_hash(child + which * 64u) % pop;
    for (uint32_t k = 1; k < tour; ++k) {
      uint32_t cand = pcg_hash(child + which * 64u + k) % pop;
      if (beats(fit[cand], cand, fit[w], w)) w = cand;
    }
    parents[2 * c + which] = w;
  }
}

// Grid: x over children (kBreedBlock a block), y over runs of kGenesPerThread genes of a child.
__global__ void ga_breed(const float* __restrict__ src, float* __restrict__ dst, const uint32_t* parents,
                         uint32_t pop, uint32_t len, uint32_t cross_key, uint32_t mutate_key, float rate,
                         float sigma, float lo, float hi, uint32_t elites) {
  const uint32_t c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= pop) return;
  const uint32_t k0 = blockIdx.y * kGenesPerThread, k1 = min(k0 + kGenesPerThread, len);
  const uint32_t pa = parents[2 * c], pb = parents[2 * c + 1];
  // gene-major: gene k of individual c at k * pop + c
  if (c < elites) {
    for (uint32_t k = k0; k < k1; ++k) dst[size_t(k) * pop + c] = src[size_t(k) * pop + pa];
    return;
  }
  const uint32_t child_cross = pcg_hash(cross_key + c), child_mutate = pcg_hash(mutate_key + c);
  float genes[kGenesPerThread];
#pragma unroll
  for (uint32_t j = 0; j < kGenesPerThread; ++j) {
    const uint32_t k = min(k0 + j, len - 1);  // past the end: loaded, never stored
    const uint32_t p = (pcg_hash(child_cross + k) & 1u) == 0 ? pa : pb;
    genes[j] = src[size_t(k) * pop + p];
  }
#pragma unroll
  for (uint32_t j = 0; j < kGenesPerThread; ++j) {
    const uint32_t k = k0 + j;
    if (k >= k1) break;
    float g = genes[j];
    const uint32_t hm = pcg_hash(child_mutate + k);
    if (unit_open(hm) <= rate) {
      float u1 = unit_open(pcg_hash(hm + 1u)), u2 = unit_open(pcg_hash(hm + 2u));
      float z = sqrtf(-2.0f * logf(u1)) * cosf(6.283185307179586f * u2);
      g = fminf(fmaxf(g + sigma * z, lo), hi);
    }
    dst[size_t(k) * pop + c] = g;
  }
}

// ---- driver ----
struct WorkloadInfo {
  std::string name;
  uint32_t pop, steps, genes;  // defaults; genes 0 = one per step (rastrigin)
  float init_scale;
  uint32_t tour;
  float rate, sigma, lo, hi;
  uint32_t horizon;
  double rtol, atol;  // wgfuse's reference tolerances (src/sim/workloads.cpp)
  uint32_t genome_len(uint32_t steps) const { return genes ? genes : steps; }
};
static const WorkloadInfo kWorkloads[] = {
    {"rastrigin", 4096, 2000, 0, 5.12f, 3, 0.05f, 0.3f, -5.12f, 5.12f, 1u << 30, 1e-4, 1e-2},
    {"acrobot", 4096, 500, 163, 1.0f, 3, 0.1f, 0.1f, -10.0f, 10.0f, 60, 0, 0.5},
    {"cartpole", 4096, 500, 114, 1.0f, 3, 0.1f, 0.1f, -10.0f, 10.0f, 500, 0, 0.5},
    {"mountaincar", 4096, 200, 99, 1.0f, 3, 0.1f, 0.1f, -10.0f, 10.0f, 200, 0, 0.5},
    {"market", 10000, 1500, 502, 1.0f, 3, 0.1f, 0.05f, -10.0f, 10.0f, 1u << 30, 2e-3, 2e-3},
    // examples/sim/: their headers' sizes and reference tolerances
    {"pendulum", 4096, 200, 41, 1.0f, 3, 0.1f, 0.1f, -10.0f, 10.0f, 40, 1e-3, 1e-2},
    {"option_pricer", 65536, 64, 1, 1.0f, 3, 0.1f, 0.1f, -10.0f, 10.0f, 1u << 30, 2e-3, 0.25},
};
constexpr uint32_t kElites = 2;

struct Options {
  std::string workload, variant = "team", math = "fast", sizes, data_path, json_path, check_path,
                        host_check_path,
                        prefetch = "auto";  // market team: the next record one step ahead (auto|on|off)
  // lanes and block 0: the variant's default.
  uint32_t lanes = 0, block = 0, gens = 10, seed = 1, episodes = 1;
  uint32_t in_flight = 2;   // batches launched before the oldest one's statistics are read
  uint32_t per_submit = 8;  // generations per batch (one event wait each), as wgfuse's --per-submit
};

// Evaluates generation `gen` of a gene-major population into fitness (device pointers).
using Evaluate =
    std::function<void(const float* genomes, float* fitness, uint32_t pop, uint32_t steps, uint32_t gen)>;

template <class Env, int Lanes, bool Fast>
Evaluate mlp_evaluator(const Options& o) {
  return [o](const float* g, float* f, uint32_t pop, uint32_t steps, uint32_t gen) {
    const uint64_t threads = uint64_t(pop) * Lanes;
    mlp_kernel<Env, Lanes, Fast>
        <<<uint32_t((threads + o.block - 1) / o.block), o.block>>>(g, f, pop, steps, o.seed, gen, o.episodes);
  };
}

template <template <bool> class Env, bool Fast>
Evaluate mlp_lanes(const Options& o) {
  if (o.variant == "thread") return mlp_evaluator<Env<Fast>, 1, Fast>(o);
  switch (o.lanes) {
    case 2:
      return mlp_evaluator<Env<Fast>, 2, Fast>(o);
    case 4:
      return mlp_evaluator<Env<Fast>, 4, Fast>(o);
    case 8:
      return mlp_evaluator<Env<Fast>, 8, Fast>(o);
  }
  fail(2, "--lanes " + std::to_string(o.lanes) + ": 2, 4 or 8");
}

template <bool Fast>
Evaluate rastrigin_evaluator(const Options& o) {
  if (o.variant == "thread")
    return [o](const float* g, float* f, uint32_t pop, uint32_t steps, uint32_t) {
      rastrigin_kernel<Fast><<<(pop + o.block - 1) / o.block, o.block>>>(g, f, pop, steps, o.episodes);
    };
  const uint32_t slices = o.lanes;
  if (o.block % slices) fail(2, "rastrigin --variant team: --block must be a multiple of --lanes");
  auto launch = [o, slices](auto kernel) -> Evaluate {
    return [o, slices, kernel](const float* g, float* f, uint32_t pop, uint32_t steps, uint32_t) {
      if (pop % 4) fail(2, "rastrigin --variant team: the population must be a multiple of 4 (float4 rows)");
      const uint32_t quads = pop / 4, per_block = o.block / slices;
      kernel<<<(quads + per_block - 1) / per_block, o.block>>>(reinterpret_cast<const float4*>(g), f, pop,
                                                               steps, o.episodes);
    };
  };
  switch (slices) {
    case 8:
      return launch(rastrigin_quad_kernel<8, Fast>);
    case 16:
      return launch(rastrigin_quad_kernel<16, Fast>);
    case 32:
      return launch(rastrigin_quad_kernel<32, Fast>);
    case 64:
      return launch(rastrigin_quad_kernel<64, Fast>);
  }
  fail(2, "rastrigin --variant team: --lanes (threads per 4 individuals) 8, 16, 32 or 64");
}

template <bool Fast>
Evaluate market_evaluator(const Options& o, const float* data) {
  if (o.variant == "thread") {
    const size_t smem = size_t(kMarketGenes) * o.block * 4;
    CK(cudaFuncSetAttribute(market_thread_kernel<Fast>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            int(smem)));
    return [o, data, smem](const float* g, float* f, uint32_t pop, uint32_t steps, uint32_t) {
      market_thread_kernel<Fast>
          <<<(pop + o.block - 1) / o.block, o.block, smem>>>(g, data, f, pop, steps, o.episodes);
    };
  }
  if (o.lanes != kMarketLanes) fail(2, "market --variant team: --lanes 4 only (lane g trades asset group g)");
  if (o.block > uint32_t(kMarketTeamMaxBlock))
    fail(2, "market --variant team: --block " + std::to_string(o.block) + " over " +
                std::to_string(kMarketTeamMaxBlock));
  // --prefetch auto: without it while the teams fit in one wave of resident blocks, with fast math
  // (the accurate build spills 112 bytes without it; measured with it only).
  int blocks_per_sm = 0, sms = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, market_team_kernel<Fast, false>,
                                                   int(o.block), 0));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const uint64_t wave = uint64_t(blocks_per_sm) * sms * o.block;
  return [o, data, wave](const float* g, float* f, uint32_t pop, uint32_t steps, uint32_t) {
    const uint64_t threads = uint64_t(pop) * kMarketLanes;
    const uint32_t blocks = uint32_t((threads + o.block - 1) / o.block);
    const bool prefetch = o.prefetch == "on" || (o.prefetch == "auto" && (!Fast || threads > wave));
    if (prefetch)
      market_team_kernel<Fast, true><<<blocks, o.block>>>(g, data, f, pop, steps, o.episodes);
    else
      market_team_kernel<Fast, false><<<blocks, o.block>>>(g, data, f, pop, steps, o.episodes);
  };
}

template <bool Fast>
Evaluate example_evaluator(const Options& o) {
  if (o.variant != "thread")
    fail(2, o.workload +
                ": --variant thread only (one thread per individual, as the file's \"team\": {\"max\": 1})");
  if (o.workload == "pendulum")
    return [o](const float* g, float* f, uint32_t pop, uint32_t steps, uint32_t gen) {
      pendulum_kernel<Fast>
          <<<(pop + o.block - 1) / o.block, o.block>>>(g, f, pop, steps, o.seed, gen, o.episodes);
    };
  return [o](const float*, float* f, uint32_t pop, uint32_t steps, uint32_t gen) {
    option_kernel<Fast><<<(pop + o.block - 1) / o.block, o.block>>>(f, pop, steps, o.seed, gen, o.episodes);
  };
}

template <bool Fast>
Evaluate make_evaluator(const Options& o, const float* data) {
  const std::string& w = o.workload;
  if (w == "pendulum" || w == "option_pricer") return example_evaluator<Fast>(o);
  if (w == "acrobot") return mlp_lanes<Acrobot, Fast>(o);
  if (w == "cartpole") return mlp_lanes<CartPole, Fast>(o);
  if (w == "mountaincar") return mlp_lanes<MountainCar, Fast>(o);
  if (w == "market") return market_evaluator<Fast>(o, data);
  return rastrigin_evaluator<Fast>(o);
}

// The thread variant's code on the host (accurate math): one individual's fitness.
static float host_fitness(const Options& o, const std::vector<float>& genomes, uint32_t ind, uint32_t pop,
                          uint32_t steps, const std::vector<float>& data) {
  const float* g = genomes.data();
  const std::string& w = o.workload;
  if (w == "acrobot")
    return mlp_fitness<Acrobot<false>, 1, false>(g, ind, 0, pop, steps, o.seed, 0, o.episodes, 0);
  if (w == "cartpole")
    return mlp_fitness<CartPole<false>, 1, false>(g, ind, 0, pop, steps, o.seed, 0, o.episodes, 0);
  if (w == "mountaincar")
    return mlp_fitness<MountainCar<false>, 1, false>(g, ind, 0, pop, steps, o.seed, 0, o.episodes, 0);
  if (w == "market")
    return repeated_mean(market_episode<false>({g + ind, pop}, data.data(), steps, kFileRecords), o.episodes);
  if (w == "pendulum") return pendulum_fitness<false>(g, ind, pop, steps, o.seed, 0, o.episodes);
  if (w == "option_pricer") return option_fitness<false>(ind, steps, o.seed, 0, o.episodes);
  return repeated_mean(-rastrigin_sum<false>(g, ind, pop, steps), o.episodes);
}

static std::vector<float> initial_genomes(const WorkloadInfo& w, uint32_t pop, uint32_t len, uint32_t seed) {
  std::vector<float> g(size_t(pop) * len);  // gene-major
  for (uint32_t i = 0; i < pop; ++i)
    for (uint32_t k = 0; k < len; ++k)
      g[size_t(k) * pop + i] = w.init_scale * unit_sym(hash4(seed, STREAM_GENOME, i, k));
  return g;
}

// ---- wgfuse's JSON: just the few numbers the check needs (top-level keys are indented by 2) ----
static std::string read_text(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) fail(2, "cannot read " + path);
  std::string s;
  char buf[65536];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
  std::fclose(f);
  return s;
}
// A key's value position; top: only a top-level key.
static size_t json_key(const std::string& text, const std::string& key, size_t from, const std::string& path,
                       bool top = false) {
  size_t p = text.find((top ? "\n  \"" : "\"") + key + "\":", from);
  if (p == std::string::npos) fail(2, path + ": no \"" + key + "\"");
  return p + key.size() + (top ? 6 : 3);
}
static std::vector<double> json_numbers(const std::string& text, const std::string& key, size_t from,
                                        const std::string& path, bool top = false) {
  size_t p = json_key(text, key, from, path, top);
  std::vector<double> v;
  const char* s = text.c_str() + p;
  while (*s == ' ' || *s == '\n') ++s;
  const bool array = *s == '[';
  if (array) ++s;
  for (;;) {
    char* end;
    double x = std::strtod(s, &end);
    if (end == s) break;
    v.push_back(x);
    s = end;
    while (*s == ' ' || *s == '\n' || *s == ',') ++s;
    if (!array) break;
  }
  if (v.empty()) fail(2, path + ": \"" + key + "\" holds no number");
  return v;
}

struct Sample {
  uint32_t pop, steps, horizon;
  std::vector<double> indices, reference;
};
static Sample read_sample(const std::string& path, const Options& o) {
  const std::string text = read_text(path);
  if (text.find("\"workload\": \"" + o.workload + "\"") == std::string::npos)
    fail(2, path + ": not a wgfuse sim JSON of " + o.workload);
  if (text.find("\n  \"episodes\":") != std::string::npos) {
    const double ep = json_numbers(text, "episodes", 0, path, true)[0];
    if (ep != o.episodes)
      fail(2,
           path + ": episodes " + std::to_string(ep) + ", this run --episodes " + std::to_string(o.episodes));
  }
  Sample s;
  s.pop = uint32_t(json_numbers(text, "pop", 0, path, true)[0]);
  const size_t sf = json_key(text, "sample_fitness", 0, path);
  s.horizon = uint32_t(json_numbers(text, "horizon", sf, path)[0]);
  s.indices = json_numbers(text, "indices", sf, path);
  s.reference = json_numbers(text, "reference_at_horizon", sf, path);
  if (s.indices.size() != s.reference.size())
    fail(2, path + ": sample indices and reference differ in length");
  for (double i : s.indices)
    if (i < 0 || i >= s.pop)
      fail(2, path + ": sample index " + std::to_string(i) + " outside pop " + std::to_string(s.pop));
  return s;
}

// Compares the fitness of the sample with the reference under wgfuse's tolerances. wgfuse's own
// check also excuses samples whose reference passes within a hair of a decision boundary; its
// JSON carries no margins, so up to n / 32 disagreements are allowed here, and each is printed.
static bool compare_sample(const char* what, const WorkloadInfo& w, const Sample& s,
                           const std::vector<float>& got) {
  uint32_t agree = 0;
  double max_err = 0;
  for (size_t k = 0; k < s.indices.size(); ++k) {
    const double want = s.reference[k], err = std::fabs(double(got[k]) - want);
    if (err <= std::max(w.atol, w.rtol * std::fabs(want))) {
      ++agree;
      max_err = std::max(max_err, err);
    } else {
      std::printf("  %s: individual %.0f: %.9g, reference %.9g\n", what, s.indices[k], got[k], want);
    }
  }
  const size_t n = s.indices.size(), allowed = n / 32;
  const bool pass = n - agree <= allowed;
  std::printf(
      "[cuda] %s vs CPU double reference: %s (%u/%zu agree at %u steps, max abs err %.3g; %zu may differ)\n",
      what, pass ? "ok" : "FAIL", agree, n, s.horizon, max_err, allowed);
  return pass;
}

static std::vector<float> market_data(const std::string& path, uint32_t steps) {
  if (path.empty()) fail(2, "market needs --data FILE (wgfuse sim market --write-data FILE)");
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) fail(2, "cannot read --data " + path);
  std::vector<float> rec(size_t(steps) * kMarketRecord);
  size_t n = std::fread(rec.data(), 4, rec.size(), f);
  std::fclose(f);
  if (n != rec.size())
    fail(2, path + ": " + std::to_string(n) + " floats, need " + std::to_string(rec.size()) + " for " +
                std::to_string(steps) + " steps of 22");
  return rec;
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
static std::string stats_json(const std::vector<double>& v) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "{\"median\": %.6g, \"min\": %.6g, \"max\": %.6g}", median(v),
                *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end()));
  return buf;
}
static std::string list_json(const std::vector<float>& v) {
  std::string s;
  for (size_t k = 0; k < v.size(); ++k) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s%.9g", k ? ", " : "", v[k]);
    s += buf;
  }
  return "[" + s + "]";
}

static Options parse(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-')
    fail(2,
         "usage: sim_cuda rastrigin|acrobot|cartpole|mountaincar|market|pendulum|option_pricer "
         "[--variant thread|team] [--lanes N] "
         "[--math fast|accurate] [--block B] [--sizes PxL,...] [--generations G] [--seed S] [--episodes N] "
         "[--in-flight N] [--per-submit N] "
         "[--data FILE] [--check WGFUSE_JSON] [--host-check WGFUSE_JSON] [--json FILE] [--prefetch "
         "auto|on|off]");
  Options o;
  o.workload = argv[1];
  auto number = [](const std::string& k, const std::string& v) {
    char* end;
    unsigned long x = std::strtoul(v.c_str(), &end, 10);
    if (v.empty() || *end || x == 0 || x > 0xffffffffu) fail(2, k + " " + v + ": a positive integer");
    return uint32_t(x);
  };
  for (int i = 2; i < argc; i += 2) {
    std::string k = argv[i];
    if (i + 1 >= argc) fail(2, k + " needs a value");
    std::string v = argv[i + 1];
    if (k == "--variant")
      o.variant = v;
    else if (k == "--lanes")
      o.lanes = number(k, v);
    else if (k == "--math")
      o.math = v;
    else if (k == "--prefetch")
      o.prefetch = v;
    else if (k == "--block")
      o.block = number(k, v);
    else if (k == "--sizes")
      o.sizes = v;
    else if (k == "--generations")
      o.gens = number(k, v);
    else if (k == "--seed")
      o.seed = uint32_t(std::stoul(v));
    else if (k == "--episodes")
      o.episodes = number(k, v);
    else if (k == "--in-flight")
      o.in_flight = number(k, v);
    else if (k == "--per-submit")
      o.per_submit = number(k, v);
    else if (k == "--data")
      o.data_path = v;
    else if (k == "--check")
      o.check_path = v;
    else if (k == "--host-check")
      o.host_check_path = v;
    else if (k == "--json")
      o.json_path = v;
    else
      fail(2, "unknown option " + k);
  }
  if (o.variant != "thread" && o.variant != "team") fail(2, "--variant " + o.variant + ": thread or team");
  if (o.in_flight > 8) fail(2, "--in-flight " + std::to_string(o.in_flight) + ": 1 to 8");
  if (o.per_submit > 16) fail(2, "--per-submit " + std::to_string(o.per_submit) + ": 1 to 16");
  if (o.math != "fast" && o.math != "accurate") fail(2, "--math " + o.math + ": fast or accurate");
  if (o.prefetch != "auto" && o.prefetch != "on" && o.prefetch != "off")
    fail(2, "--prefetch " + o.prefetch + ": auto, on or off");
  // Teams: 4 lanes per individual; Rastrigin's: 64 threads per 4 individuals, 4 quads a block
  // (H100, 4,096 x 2,000: 0.0261 ms per evaluation; 32: 0.0304, 16: 0.0394, 8: 0.0605).
  if (o.lanes == 0) o.lanes = o.workload == "rastrigin" ? 64 : 4;
  if (o.variant == "thread") o.lanes = 1;
  // One thread per individual: 32-thread blocks spread 4,096 individuals over 128 SMs instead of
  // 64, and let three blocks of Market's (2 KB of shared weights per thread) share an SM, so
  // 10,000 individuals run in one wave on an H100. Teams: 64.
  if (o.block == 0) o.block = o.variant == "thread" ? 32 : o.workload == "rastrigin" ? 256 : 64;
  if (o.block > uint32_t(kMaxBlock) || o.block % 32)
    fail(2, "--block " + std::to_string(o.block) + ": a multiple of 32 up to " + std::to_string(kMaxBlock));
  return o;
}

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const WorkloadInfo* wp = nullptr;
  for (const auto& w : kWorkloads)
    if (w.name == o.workload) wp = &w;
  if (!wp)
    fail(2, "workload " + o.workload +
                ": rastrigin, acrobot, cartpole, mountaincar, market, pendulum or option_pricer");
  const WorkloadInfo& W = *wp;
  const bool market = o.workload == "market";

  struct Point {
    uint32_t pop, steps;
  };
  std::vector<Point> points;
  if (o.sizes.empty()) points.push_back({W.pop, W.steps});
  for (size_t p = 0; p < o.sizes.size();) {
    size_t q = o.sizes.find(',', p);
    std::string s = o.sizes.substr(p, q == std::string::npos ? std::string::npos : q - p);
    size_t x = s.find('x');
    if (x == std::string::npos) fail(2, "--sizes " + s + ": POPxSTEPS");
    points.push_back({uint32_t(std::stoul(s.substr(0, x))), uint32_t(std::stoul(s.substr(x + 1)))});
    if (q == std::string::npos) break;
    p = q + 1;
  }
  uint32_t max_steps = 0;
  for (auto& p : points) max_steps = std::max(max_steps, p.steps);

  const std::string math_note = o.math == "fast" ? "fast intrinsics (__sinf, __cosf, __expf, __fdividef)"
                                                 : "accurate (libm sinf, cosf, expf; IEEE division)";
  const std::string label = o.variant == "thread" ? "thread" : "team" + std::to_string(o.lanes);
  std::string check_json = "null";

  // The host check runs before any CUDA call, so it works without a GPU.
  if (!o.host_check_path.empty()) {
    const Sample s = read_sample(o.host_check_path, o);
    const uint32_t len = W.genome_len(s.horizon);
    std::vector<float> data = market ? market_data(o.data_path, s.horizon) : std::vector<float>{};
    std::vector<float> g = initial_genomes(W, s.pop, len, o.seed), got;
    for (double i : s.indices) got.push_back(host_fitness(o, g, uint32_t(i), s.pop, s.horizon, data));
    if (!compare_sample("host (thread, accurate)", W, s, got)) return 3;
    if (o.check_path.empty() && o.json_path.empty()) return 0;
  }

  float* d_data = nullptr;
  if (market) {
    uint32_t data_steps = max_steps;
    if (!o.check_path.empty()) data_steps = std::max(data_steps, read_sample(o.check_path, o).horizon);
    std::vector<float> rec = market_device_records(market_data(o.data_path, data_steps));
    CK(cudaMalloc(&d_data, rec.size() * 4));
    CK(cudaMemcpy(d_data, rec.data(), rec.size() * 4, cudaMemcpyHostToDevice));
  }
  const Evaluate evaluate =
      o.math == "fast" ? make_evaluator<true>(o, d_data) : make_evaluator<false>(o, d_data);
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));

  // Generation 0 of a population, evaluated at `steps`: the fitness of every individual.
  auto evaluate_initial = [&](uint32_t pop, uint32_t steps) {
    const std::vector<float> g = initial_genomes(W, pop, W.genome_len(steps), o.seed);
    float *d_g, *d_f;
    CK(cudaMalloc(&d_g, g.size() * 4));
    CK(cudaMalloc(&d_f, size_t(pop) * 4));
    CK(cudaMemcpy(d_g, g.data(), g.size() * 4, cudaMemcpyHostToDevice));
    evaluate(d_g, d_f, pop, steps, 0);
    CK(cudaGetLastError());
    std::vector<float> f(pop);
    CK(cudaMemcpy(f.data(), d_f, size_t(pop) * 4, cudaMemcpyDeviceToHost));
    CK(cudaFree(d_g));
    CK(cudaFree(d_f));
    return f;
  };

  if (!o.check_path.empty()) {  // before anything is timed
    const Sample s = read_sample(o.check_path, o);
    const std::vector<float> f = evaluate_initial(s.pop, s.horizon);
    std::vector<float> got;
    for (double i : s.indices) got.push_back(f[size_t(i)]);
    const std::string what = label + ", " + o.math;
    if (!compare_sample(what.c_str(), W, s, got)) return 3;
    check_json = "{\"pass\": true, \"pop\": " + std::to_string(s.pop) +
                 ", \"horizon\": " + std::to_string(s.horizon) +
                 ", \"samples\": " + std::to_string(s.indices.size()) + "}";
  }

  std::string js = "{\n  \"framework\": \"cuda\", \"workload\": \"" + o.workload + "\", \"variant\": \"" +
                   o.variant + "\", \"lanes\": " + std::to_string(o.lanes) + ", \"label\": \"" + label +
                   "\", \"math\": \"" + o.math + "\", \"math_note\": \"" + math_note +
                   "\", \"block\": " + std::to_string(o.block) +
                   ", \"episodes\": " + std::to_string(o.episodes) + ", \"device\": \"" + prop.name +
                   "\",\n  \"check\": " + check_json + ",\n  \"points\": [";
  const uint32_t tour = W.tour;
  for (size_t pi = 0; pi < points.size(); ++pi) {
    const uint32_t pop = points[pi].pop, steps = points[pi].steps, len = W.genome_len(steps);
    const std::vector<float> g0 = initial_genomes(W, pop, len, o.seed);
    float *d_g[2], *d_fit;
    uint32_t *d_stats, *d_par;
    CK(cudaMalloc(&d_g[0], g0.size() * 4));
    CK(cudaMalloc(&d_g[1], g0.size() * 4));
    CK(cudaMalloc(&d_fit, size_t(pop) * 4));
    CK(cudaMalloc(&d_stats, 16 + 4 * MAX_ELITES));
    CK(cudaMalloc(&d_par, size_t(pop) * 8));
    const uint32_t B = 64, blocks = (pop + B - 1) / B;
    const dim3 breed_grid((pop + kBreedBlock - 1) / kBreedBlock,
                          (len + kGenesPerThread - 1) / kGenesPerThread);
    // As wgfuse's run loop: batches of --per-submit generations, up to --in-flight batches launched
    // before the oldest one's statistics are read (each generation's copied asynchronously into
    // pinned memory; one event wait per batch). Event times are taken against `origin`, so that a
    // slot's times outlive its reuse.
    const uint32_t per = o.per_submit;
    struct Timing {
      cudaEvent_t begin, evaluated, bred;
    };
    struct Slot {
      std::vector<Timing> gens;  // per generation of the batch
      cudaEvent_t done;
      uint32_t* stats;  // pinned, per generation: best, mean, best index, non-finite count
    };
    std::vector<Slot> slots(o.in_flight);
    for (auto& s : slots) {
      s.gens.resize(per);
      for (auto& g : s.gens)
        for (cudaEvent_t* ev : {&g.begin, &g.evaluated, &g.bred}) CK(cudaEventCreate(ev));
      CK(cudaEventCreate(&s.done));
      CK(cudaMallocHost(&s.stats, 16 * per));
    }
    cudaEvent_t origin;
    CK(cudaEventCreate(&origin));
    // Launches generations first .. first + count - 1 into `s` (genomes d_g[cur] -> d_g[1 - cur], then back).
    auto submit = [&](uint32_t first, uint32_t count, int cur, Slot& s) {
      for (uint32_t i = 0; i < count; ++i, cur = 1 - cur) {
        const uint32_t g = first + i;
        CK(cudaEventRecord(s.gens[i].begin));
        evaluate(d_g[cur], d_fit, pop, steps, g);
        CK(cudaEventRecord(s.gens[i].evaluated));
        ga_reduce<<<1, kReduceThreads>>>(d_fit, pop, kElites, d_stats);
        ga_select<<<blocks, B>>>(d_fit, d_stats, d_par, pop, ga_stream_key(o.seed, STREAM_SELECT, g), tour,
                                 kElites);
        ga_breed<<<breed_grid, kBreedBlock>>>(
            d_g[cur], d_g[1 - cur], d_par, pop, len, ga_stream_key(o.seed, STREAM_CROSS, g),
            ga_stream_key(o.seed, STREAM_MUTATE, g), W.rate, W.sigma, W.lo, W.hi, kElites);
        CK(cudaEventRecord(s.gens[i].bred));
        CK(cudaMemcpyAsync(s.stats + 4 * i, d_stats, 16, cudaMemcpyDeviceToHost));
      }
      CK(cudaEventRecord(s.done));
    };
    // Waits for the batch in `s`; generation i's best into best[i], its event times (ms since
    // origin) into t[3 * i ..].
    auto collect = [&](Slot& s, uint32_t count, float* best, float* t) {
      CK(cudaEventSynchronize(s.done));
      for (uint32_t i = 0; i < count; ++i) {
        std::memcpy(&best[i], &s.stats[4 * i], 4);
        CK(cudaEventElapsedTime(&t[3 * i], origin, s.gens[i].begin));
        CK(cudaEventElapsedTime(&t[3 * i + 1], origin, s.gens[i].evaluated));
        CK(cudaEventElapsedTime(&t[3 * i + 2], origin, s.gens[i].bred));
      }
    };
    CK(cudaMemcpy(d_g[0], g0.data(), g0.size() * 4, cudaMemcpyHostToDevice));
    std::vector<float> best(per), t(3 * per);
    CK(cudaEventRecord(origin));
    submit(0, per, 0, slots[0]);  // warm-up
    collect(slots[0], per, best.data(), t.data());
    CK(cudaMemcpy(d_g[0], g0.data(), g0.size() * 4, cudaMemcpyHostToDevice));
    std::vector<double> gps, eval_ms, ga_ms, between_ms;
    std::vector<float> bests;
    int cur = 0;
    const uint32_t batches = (o.gens + per - 1) / per;
    auto count_of = [&](uint32_t b) { return std::min(per, o.gens - b * per); };
    uint32_t submitted = 0;
    float previous_bred = 0;
    auto last = std::chrono::steady_clock::now();
    for (uint32_t b = 0; b < batches; ++b) {
      for (; submitted < batches && submitted < b + o.in_flight; ++submitted) {
        submit(submitted * per, count_of(submitted), cur, slots[submitted % o.in_flight]);
        if (count_of(submitted) % 2) cur = 1 - cur;
      }
      collect(slots[b % o.in_flight], count_of(b), best.data(), t.data());
      const auto now = std::chrono::steady_clock::now();
      const double sec = std::chrono::duration<double>(now - last).count() / count_of(b);
      last = now;
      for (uint32_t i = 0; i < count_of(b); ++i) {
        gps.push_back(1.0 / sec);
        eval_ms.push_back(t[3 * i + 1] - t[3 * i]);
        ga_ms.push_back(t[3 * i + 2] - t[3 * i + 1]);
        if (b + i > 0) between_ms.push_back(t[3 * i] - previous_bred);
        previous_bred = t[3 * i + 2];
        bests.push_back(best[i]);
      }
    }
    CK(cudaGetLastError());
    for (auto& s : slots) {
      for (auto& g : s.gens)
        for (cudaEvent_t ev : {g.begin, g.evaluated, g.bred}) CK(cudaEventDestroy(ev));
      CK(cudaEventDestroy(s.done));
      CK(cudaFreeHost(s.stats));
    }
    CK(cudaEventDestroy(origin));
    for (int k = 0; k < 2; ++k) CK(cudaFree(d_g[k]));
    CK(cudaFree(d_fit));
    CK(cudaFree(d_stats));
    CK(cudaFree(d_par));

    // Generation-0 fitness of the sample (indices k * pop / 64), at L and at the reference horizon.
    const uint32_t horizon = std::min(steps, W.horizon), n = std::min<uint32_t>(64, pop);
    const std::vector<float> at_l = evaluate_initial(pop, steps),
                             at_h = horizon == steps ? at_l : evaluate_initial(pop, horizon);
    std::vector<float> sv, sh;
    std::string idx;
    for (uint32_t k = 0; k < n; ++k) {
      const size_t i = size_t(uint64_t(k) * pop / n);
      idx += (k ? ", " : "") + std::to_string(i);
      sv.push_back(at_l[i]);
      sh.push_back(at_h[i]);
    }
    js += std::string(pi ? "," : "") + "\n    {\"pop\": " + std::to_string(pop) +
          ", \"steps\": " + std::to_string(steps) + ", \"generations\": " + std::to_string(o.gens) +
          ", \"in_flight\": " + std::to_string(o.in_flight) +
          ", \"per_submit\": " + std::to_string(o.per_submit) + ", \"gen_per_s\": " + stats_json(gps) +
          ", \"eval_ms\": " + stats_json(eval_ms) + ", \"ga_ms\": " + stats_json(ga_ms) +
          ", \"between_generations_ms\": " + (between_ms.empty() ? "null" : stats_json(between_ms)) +
          ",\n     \"best_fitness\": " + list_json(bests) + ",\n     \"sample_fitness\": {\"indices\": [" +
          idx + "], \"values\": " + list_json(sv) + ", \"horizon\": " + std::to_string(horizon) +
          ", \"values_at_horizon\": " + list_json(sh) + "}}";
    std::printf(
        "[cuda] %s %s %s pop %u steps %u: %.4g gen/s, evaluation %.4g ms, GA %.4g ms, %u in flight (%s)\n",
        o.workload.c_str(), label.c_str(), o.math.c_str(), pop, steps, median(gps), median(eval_ms),
        median(ga_ms), o.in_flight, math_note.c_str());
  }
  js += "\n  ]\n}\n";
  if (!o.json_path.empty()) {
    FILE* f = std::fopen(o.json_path.c_str(), "w");
    if (!f) fail(1, "cannot write " + o.json_path);
    std::fputs(js.c_str(), f);
    std::fclose(f);
  }
  if (d_data) CK(cudaFree(d_data));
  return 0;
}
