// barrier_cuda.cu: the CUDA baseline for `wgfuse bench --suite barrier` (kernels/bench_barrier.wgsl).
//
// The same designs, grids, workgroup size and K on the same GPU, timed the same way: one launch
// with K grid barriers against one with none, by CUDA events, (T(K) - median T(0)) / K per barrier.
//   counter          one arrival counter: atomicAdd, then a volatile spin (the WGSL counter design)
//   flags            per-block flags and one release word (the WGSL flags design)
//   exchange_volatile  the counter barrier with the exchange's stores and READS volatile loads of
//                    other blocks' words per thread, every sum checked (the WGSL exchange)
//   grid_sync        cooperative_groups::this_grid().sync() (cooperative launch)
//   dispatch         K + 1 dependent launches of the step kernel, captured in one CUDA graph,
//                    against one launch: per launch
// Every waiter spins at most kSpinLimit loads; a run where one gave up fails the check.
//
// Build: nvcc -O3 -std=c++17 -arch=sm_90 -o barrier_cuda barrier_cuda.cu
// Run:   ./barrier_cuda [--workgroups 1,32,66,132,264,528] [--wg 256] [--barriers 256] [--reps 9] [--json FILE]

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#define CUDA_CHECK(call) cuda_check((call), #call, __FILE__, __LINE__)

static void cuda_check(cudaError_t err, const char* expr, const char* file, int line) {
  if (err != cudaSuccess) {
    std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", file, line, expr, cudaGetErrorName(err),
                 cudaGetErrorString(err));
    std::exit(1);
  }
}

namespace {

namespace cg = cooperative_groups;

constexpr unsigned kSpinLimit = 1u << 22;
constexpr unsigned kFailed = 1, kRelease = 2, kFlags = 32, kFlagStride = 8;

__host__ __device__ unsigned stored_word(unsigned i, unsigned k) {
  return (i * 2654435761u) ^ (k * 40503u + 1u);
}
__host__ __device__ unsigned source_of(unsigned i, unsigned k, unsigned r, unsigned n, unsigned wg) {
  return unsigned((unsigned long long)i + (unsigned long long)wg * (r + 1) + (unsigned long long)k * 13) % n;
}

__device__ bool spin_until(volatile unsigned* word, unsigned goal) {
  for (unsigned i = 0; i < kSpinLimit; ++i)
    if (*word >= goal) return true;
  return false;
}

__device__ void counter_barrier(unsigned* ctl, unsigned k) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(&ctl[0], 1u);
    if (!spin_until(&ctl[0], (k + 1) * gridDim.x)) atomicMax(&ctl[kFailed], k + 1);
    __threadfence();
  }
  __syncthreads();
}

__device__ void flag_barrier(unsigned* ctl, unsigned k) {
  __syncthreads();
  const unsigned epoch = k + 1;
  if (blockIdx.x == 0) {
    bool met = true;
    for (unsigned g = 1 + threadIdx.x; g < gridDim.x; g += blockDim.x)
      met = spin_until(&ctl[kFlags + g * kFlagStride], epoch) && met;
    if (!met) atomicMax(&ctl[kFailed], k + 1);
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) atomicExch(&ctl[kRelease], epoch);
  } else if (threadIdx.x == 0) {
    __threadfence();
    atomicExch(&ctl[kFlags + blockIdx.x * kFlagStride], epoch);
    if (!spin_until(&ctl[kRelease], epoch)) atomicMax(&ctl[kFailed], k + 1);
    __threadfence();
  }
  __syncthreads();
}

__global__ void counter_kernel(unsigned* ctl, unsigned barriers) {
  for (unsigned k = 0; k < barriers; ++k) counter_barrier(ctl, k);
}

__global__ void flags_kernel(unsigned* ctl, unsigned barriers) {
  for (unsigned k = 0; k < barriers; ++k) flag_barrier(ctl, k);
}

__global__ void exchange_kernel(unsigned* ctl, unsigned* out, unsigned* shared, unsigned barriers, unsigned reads) {
  const unsigned n = gridDim.x * blockDim.x, i = blockIdx.x * blockDim.x + threadIdx.x;
  volatile unsigned* words = shared;
  unsigned sum = 0;
  for (unsigned k = 0; k < barriers; ++k) {
    const unsigned half = (k & 1) * n;
    words[half + i] = stored_word(i, k);
    counter_barrier(ctl, k);
    for (unsigned r = 0; r < reads; ++r) sum += words[half + source_of(i, k, r, n, blockDim.x)];
  }
  out[i] = sum;
}

__global__ void grid_sync_kernel(unsigned barriers) {
  cg::grid_group grid = cg::this_grid();
  for (unsigned k = 0; k < barriers; ++k) grid.sync();
}

__global__ void step_kernel(unsigned* words) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  words[i] = words[i] * 1664525u + 1013904223u;
}

struct Summary {
  double median, min, max;
};
Summary summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return {n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), v.front(), v.back()};
}

struct Result {
  std::string design;
  unsigned workgroups;
  Summary base, per_barrier;
  bool passed;
};

std::vector<unsigned> parse_list(const char* s) {
  std::vector<unsigned> v;
  for (const char* p = s; *p;) {
    v.push_back(unsigned(std::strtoul(p, const_cast<char**>(&p), 10)));
    if (*p == ',') ++p;
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<unsigned> grids = {1, 32, 66, 132, 264, 528};
  unsigned wg = 256, K = 256, reps = 9, reads = 4;
  const char* json = nullptr;
  for (int a = 1; a < argc; ++a) {
    std::string arg = argv[a];
    auto next = [&] {
      if (a + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++a];
    };
    if (arg == "--workgroups") grids = parse_list(next());
    else if (arg == "--wg") wg = unsigned(std::atoi(next()));
    else if (arg == "--barriers") K = unsigned(std::atoi(next()));
    else if (arg == "--reps") reps = unsigned(std::atoi(next()));
    else if (arg == "--json") json = next();
    else {
      std::fprintf(stderr, "unknown argument %s\n", arg.c_str());
      return 2;
    }
  }
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  int per_sm = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, grid_sync_kernel, int(wg), 0));
  const unsigned max_coop = unsigned(per_sm) * unsigned(prop.multiProcessorCount);

  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  cudaEvent_t e0, e1;
  CUDA_CHECK(cudaEventCreate(&e0));
  CUDA_CHECK(cudaEventCreate(&e1));
  const unsigned max_n = *std::max_element(grids.begin(), grids.end()) * wg;
  unsigned *ctl, *out, *shared;
  const size_t ctl_words = kFlags + size_t(kFlagStride) * (max_n / wg + 1);
  CUDA_CHECK(cudaMalloc(&ctl, ctl_words * 4));
  CUDA_CHECK(cudaMalloc(&out, size_t(max_n) * 4));
  CUDA_CHECK(cudaMalloc(&shared, size_t(max_n) * 8));

  std::vector<Result> results;
  for (unsigned G : grids) {
    if (G > max_coop) {
      std::printf("%u blocks of %u: over the %u that fit at once, skipped\n", G, wg, max_coop);
      continue;
    }
    const unsigned n = G * wg;
    for (std::string design : {"counter", "flags", "exchange_volatile", "grid_sync", "dispatch"}) {
      // The dispatch design: a graph of K + 1 dependent launches, and one of 1.
      cudaGraphExec_t graphs[2] = {nullptr, nullptr};
      if (design == "dispatch") {
        for (int g = 0; g < 2; ++g) {
          cudaGraph_t graph;
          CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
          for (unsigned s = 0; s < (g ? K + 1 : 1); ++s) step_kernel<<<G, wg, 0, stream>>>(out);
          CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
          CUDA_CHECK(cudaGraphInstantiate(&graphs[g], graph, 0));
          CUDA_CHECK(cudaGraphDestroy(graph));
        }
      }
      std::vector<unsigned> init(n);
      std::mt19937 rng(11);
      for (auto& v : init) v = rng();
      std::vector<unsigned> want(n, 0);
      for (unsigned i = 0; i < n; ++i) {
        if (design == "dispatch") {
          want[i] = init[i];
          for (unsigned s = 0; s <= K; ++s) want[i] = want[i] * 1664525u + 1013904223u;
        } else if (design == "exchange_volatile") {
          for (unsigned k = 0; k < K; ++k)
            for (unsigned r = 0; r < reads; ++r) want[i] += stored_word(source_of(i, k, r, n, wg), k);
        }
      }
      auto run = [&](unsigned barriers) {
        CUDA_CHECK(cudaMemsetAsync(ctl, 0, ctl_words * 4, stream));
        CUDA_CHECK(cudaMemcpyAsync(out, init.data(), size_t(n) * 4, cudaMemcpyHostToDevice, stream));
        CUDA_CHECK(cudaEventRecord(e0, stream));
        if (design == "counter") counter_kernel<<<G, wg, 0, stream>>>(ctl, barriers);
        else if (design == "flags") flags_kernel<<<G, wg, 0, stream>>>(ctl, barriers);
        else if (design == "exchange_volatile") exchange_kernel<<<G, wg, 0, stream>>>(ctl, out, shared, barriers, reads);
        else if (design == "grid_sync") {
          void* args[] = {&barriers};
          CUDA_CHECK(cudaLaunchCooperativeKernel((void*)grid_sync_kernel, G, wg, args, 0, stream));
        } else CUDA_CHECK(cudaGraphLaunch(graphs[barriers ? 1 : 0], stream));
        CUDA_CHECK(cudaEventRecord(e1, stream));
        CUDA_CHECK(cudaEventSynchronize(e1));
        CUDA_CHECK(cudaGetLastError());
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        return ms * 1000.0;
      };
      std::vector<double> base, with;
      bool passed = true;
      for (unsigned rep = 0; rep <= reps; ++rep) {
        const double tb = run(0), tw = run(K);
        unsigned failed = 0;
        CUDA_CHECK(cudaMemcpy(&failed, ctl + kFailed, 4, cudaMemcpyDeviceToHost));
        std::vector<unsigned> got(n);
        CUDA_CHECK(cudaMemcpy(got.data(), out, size_t(n) * 4, cudaMemcpyDeviceToHost));
        if (failed) passed = false;
        if ((design == "dispatch" || design == "exchange_volatile") && got != want) passed = false;
        if (rep == 0) continue;
        base.push_back(tb);
        with.push_back(tw);
      }
      for (auto& g : graphs)
        if (g) CUDA_CHECK(cudaGraphExecDestroy(g));
      Result r{design, G, summarize(base), {}, passed};
      std::vector<double> per;
      for (double t : with) per.push_back((t - r.base.median) / K);
      r.per_barrier = summarize(per);
      results.push_back(r);
      std::printf("%-18s %5u blocks  %8.2f us per barrier [%.2f-%.2f]  base %.1f us  %s\n", design.c_str(), G,
                  r.per_barrier.median, r.per_barrier.min, r.per_barrier.max, r.base.median,
                  passed ? "ok" : "FAILED");
    }
  }
  if (json) {
    FILE* f = std::fopen(json, "w");
    if (!f) {
      std::fprintf(stderr, "cannot write %s\n", json);
      return 1;
    }
    std::fprintf(f, "{\"device\": \"%s\", \"workgroup_size\": %u, \"barriers\": %u, \"reads\": %u, \"reps\": %u, "
                 "\"results\": [", prop.name, wg, K, reads, reps);
    for (size_t i = 0; i < results.size(); ++i) {
      auto& r = results[i];
      std::fprintf(f,
                   "%s\n {\"design\": \"%s\", \"workgroups\": %u, \"base_us\": {\"median\": %.3f}, "
                   "\"per_barrier_us\": {\"median\": %.4f, \"min\": %.4f, \"max\": %.4f}, \"passed\": %s}",
                   i ? "," : "", r.design.c_str(), r.workgroups, r.base.median, r.per_barrier.median,
                   r.per_barrier.min, r.per_barrier.max, r.passed ? "true" : "false");
    }
    std::fprintf(f, "\n]}\n");
    std::fclose(f);
  }
  bool ok = true;
  for (auto& r : results) ok = ok && r.passed;
  return ok ? 0 : 1;
}
