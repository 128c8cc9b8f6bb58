// dispatch_cuda.cu: the CUDA baseline for wgfuse's dispatch-overhead benchmark.
//
// Measures, with the sequential-dispatch method (N dispatches, one sync, wall
// clock; per-dispatch cost = OLS slope of median time against N):
//   * three kernels (empty, 4096-float scale, 16M-float scale), each launched
//     back to back (`launch`), with a sync after every launch (`launch_sync`),
//     and from one CUDA graph holding all N launches (`graph`);
//   * the bandwidth of the large kernel and of a device-to-device memcpy;
//   * a k-op elementwise chain (k = 1..16), k launches against one fused kernel.
//
// Build: nvcc -O3 -std=c++17 -arch=sm_90 -o dispatch_cuda dispatch_cuda.cu
// Run:   ./dispatch_cuda [--quick] [--reps R] [--json FILE]

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#define CUDA_CHECK(call) cuda_check((call), #call, __FILE__, __LINE__)

static void cuda_check(cudaError_t err, const char* expr, const char* file, int line) {
  if (err != cudaSuccess) {
    std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", file, line, expr,
                 cudaGetErrorName(err), cudaGetErrorString(err));
    std::exit(1);
  }
}

namespace {

constexpr int kEmptyThreads = 64;
constexpr int kThreadsPerBlock = 256;
constexpr int kSmallElements = 4096;
constexpr int kLargeElements = 1 << 24;  // 16,777,216 floats = 64 MiB
constexpr int kMaxChain = 16;
constexpr double kChainTolerance = 1e-6;

// The sweeps multiply the same buffer hundreds of thousands of times. 1 + 2^-20
// is exact in float and grows the data by at most e^(5.4e5 * 2^-20) ~ e^0.5, so
// values stay normal; it is not 1, so nobody can suspect a skipped multiply.
constexpr float kSweepFactor = 1.0f + 0x1p-20f;

// ---------------------------------------------------------------- kernels

__global__ void empty_kernel() {}

__global__ void scale_kernel(float* x, int n, float a) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}

// Passed by value so the factors arrive at run time and cannot be folded.
struct ChainFactors {
  float a[kMaxChain];
};

// The fused chain, written for the bandwidth bound as wgfuse's chain_fused is
// (kernels/elementwise.wgsl): the chain length K is a compile-time constant, so the
// multiplies unroll with no test per op; four floats per load and store; kChainVec4s
// float4s per thread, all loaded before the first store. The multiplies run in the
// same order as the unfused chain, so the results are bit-identical. Factors by
// value: they arrive at run time and cannot be folded.
constexpr int kChainVec4s = 2;

template <int K>
__global__ void scale_chain_kernel(float4* x4, int n4, ChainFactors factors) {
  const int first = blockIdx.x * blockDim.x * kChainVec4s + threadIdx.x;
  float4 v[kChainVec4s];
#pragma unroll
  for (int u = 0; u < kChainVec4s; ++u) {
    const int i = first + u * blockDim.x;
    if (i < n4) v[u] = x4[i];
  }
#pragma unroll
  for (int u = 0; u < kChainVec4s; ++u) {
#pragma unroll
    for (int j = 0; j < K; ++j) {
      v[u].x *= factors.a[j];
      v[u].y *= factors.a[j];
      v[u].z *= factors.a[j];
      v[u].w *= factors.a[j];
    }
  }
#pragma unroll
  for (int u = 0; u < kChainVec4s; ++u) {
    const int i = first + u * blockDim.x;
    if (i < n4) x4[i] = v[u];
  }
}

using ChainKernel = void (*)(float4*, int, ChainFactors);

template <int... K>
constexpr std::array<ChainKernel, sizeof...(K)> chain_kernels(std::integer_sequence<int, K...>) {
  return {scale_chain_kernel<K + 1>...};
}

// scale_chain_kernel<k> at index k - 1.
constexpr auto kChainKernels = chain_kernels(std::make_integer_sequence<int, kMaxChain>{});

int blocks_for(int n) { return (n + kThreadsPerBlock - 1) / kThreadsPerBlock; }

// ---------------------------------------------------------------- statistics

struct Options {
  bool quick = false;
  int reps = 20;
  int warmup_reps = 2;
  std::string json_path;
};

struct Stats {
  double median_us = 0, min_us = 0, max_us = 0;
};

struct Point {
  int n = 0;
  Stats stats;
};

struct Fit {
  double slope_us = 0, intercept_us = 0, r2 = 0;
};

struct Series {
  std::vector<Point> points;
  Fit fit;
};

Stats summarize(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  const size_t m = samples.size();
  Stats s;
  s.median_us = m % 2 ? samples[m / 2] : 0.5 * (samples[m / 2 - 1] + samples[m / 2]);
  s.min_us = samples.front();
  s.max_us = samples.back();
  return s;
}

// Ordinary least squares of median time against dispatch count.
Fit fit_line(const std::vector<Point>& points) {
  const double m = static_cast<double>(points.size());
  double sx = 0, sy = 0;
  for (const Point& p : points) {
    sx += p.n;
    sy += p.stats.median_us;
  }
  const double mx = sx / m, my = sy / m;
  double sxx = 0, sxy = 0, syy = 0;
  for (const Point& p : points) {
    const double dx = p.n - mx, dy = p.stats.median_us - my;
    sxx += dx * dx;
    sxy += dx * dy;
    syy += dy * dy;
  }
  Fit f;
  f.slope_us = sxy / sxx;
  f.intercept_us = my - f.slope_us * mx;
  double ss_res = 0;
  for (const Point& p : points) {
    const double r = p.stats.median_us - (f.intercept_us + f.slope_us * p.n);
    ss_res += r * r;
  }
  f.r2 = syy > 0 ? 1.0 - ss_res / syy : 1.0;
  return f;
}

using Clock = std::chrono::steady_clock;

template <class Body>
double time_us(Body&& body) {
  const auto t0 = Clock::now();
  body();
  const auto t1 = Clock::now();
  return std::chrono::duration<double, std::micro>(t1 - t0).count();
}

std::vector<int> dispatch_counts(int max_n) {
  std::vector<int> ns;
  for (int n = 1; n <= max_n; n *= 2) ns.push_back(n);
  return ns;
}

// Times body(n) (which must end with a sync) for every n. The rep loop is
// outside the n loop so that clock or thermal drift spreads over all points
// instead of biasing the slope; the first warmup_reps passes are discarded.
Series sweep(const std::vector<int>& ns, const Options& opt,
             const std::function<void(int)>& body) {
  std::vector<std::vector<double>> samples(ns.size());
  for (int rep = 0; rep < opt.warmup_reps + opt.reps; ++rep) {
    for (size_t p = 0; p < ns.size(); ++p) {
      const double us = time_us([&] { body(ns[p]); });
      if (rep >= opt.warmup_reps) samples[p].push_back(us);
    }
  }
  Series s;
  for (size_t p = 0; p < ns.size(); ++p) s.points.push_back({ns[p], summarize(samples[p])});
  s.fit = fit_line(s.points);
  return s;
}

// ---------------------------------------------------------------- dispatch sweeps

struct KernelCase {
  const char* name;
  int n_elements;  // 0: the empty kernel
  int max_dispatches;
  float* data;

  int blocks() const { return n_elements == 0 ? 1 : blocks_for(n_elements); }
  int threads() const { return n_elements == 0 ? kEmptyThreads : kThreadsPerBlock; }
  // One read and one write of every element: 8 bytes per float.
  long long bytes_per_dispatch() const { return 8LL * n_elements; }

  void launch(cudaStream_t stream) const {
    if (n_elements == 0) {
      empty_kernel<<<blocks(), threads(), 0, stream>>>();
    } else {
      scale_kernel<<<blocks(), threads(), 0, stream>>>(data, n_elements, kSweepFactor);
    }
  }
};

struct KernelResult {
  Series launch, launch_sync, graph;
};

cudaGraphExec_t capture_graph(const KernelCase& kc, int n, cudaStream_t stream) {
  cudaGraph_t graph;
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < n; ++i) kc.launch(stream);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec;
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CUDA_CHECK(cudaGraphDestroy(graph));
  CUDA_CHECK(cudaGraphUpload(exec, stream));
  return exec;
}

KernelResult measure_kernel(const KernelCase& kc, const Options& opt, cudaStream_t stream) {
  const std::vector<int> ns = dispatch_counts(kc.max_dispatches);
  KernelResult r;

  r.launch = sweep(ns, opt, [&](int n) {
    for (int i = 0; i < n; ++i) kc.launch(stream);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
  });

  r.launch_sync = sweep(ns, opt, [&](int n) {
    for (int i = 0; i < n; ++i) {
      kc.launch(stream);
      CUDA_CHECK(cudaDeviceSynchronize());
    }
    CUDA_CHECK(cudaGetLastError());
  });

  // One graph per point, built before timing: the sweep times replay only.
  std::map<int, cudaGraphExec_t> graphs;
  for (int n : ns) graphs[n] = capture_graph(kc, n, stream);
  r.graph = sweep(ns, opt, [&](int n) {
    CUDA_CHECK(cudaGraphLaunch(graphs.at(n), stream));
    CUDA_CHECK(cudaDeviceSynchronize());
  });
  for (const auto& entry : graphs) CUDA_CHECK(cudaGraphExecDestroy(entry.second));
  return r;
}

// Device-to-device copy of the large buffer, swept like a kernel.
Series measure_memcpy(float* dst, const float* src, int max_copies, const Options& opt,
                      cudaStream_t stream) {
  const size_t bytes = sizeof(float) * static_cast<size_t>(kLargeElements);
  return sweep(dispatch_counts(max_copies), opt, [&](int n) {
    for (int i = 0; i < n; ++i) {
      CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
    }
    CUDA_CHECK(cudaDeviceSynchronize());
  });
}

// bytes / (slope in µs) -> GB/s (1e9 bytes per second).
double gbs(double bytes, double slope_us) { return bytes / slope_us * 1e-3; }

// ---------------------------------------------------------------- chain

struct ChainRow {
  int k = 0;
  Stats unfused, fused;
  double max_rel_diff = 0;
  double unfused_bound_us = 0, fused_bound_us = 0;
};

struct ChainResult {
  const char* name;
  int n_elements = 0;
  int runs_per_sample = 0;
  std::vector<ChainRow> rows;
  double max_rel_diff = 0;
};

ChainFactors chain_factors() {
  ChainFactors f;
  for (int j = 0; j < kMaxChain; ++j) f.a[j] = static_cast<float>(1.0 + 1e-4 * (j + 1));
  return f;
}

void run_unfused(float* x, int n, int k, const ChainFactors& f, cudaStream_t stream) {
  for (int j = 0; j < k; ++j) {
    scale_kernel<<<blocks_for(n), kThreadsPerBlock, 0, stream>>>(x, n, f.a[j]);
  }
}

// n is a multiple of 4 (both sizes are): the fused kernel moves whole float4s.
void run_fused(float* x, int n, int k, const ChainFactors& f, cudaStream_t stream) {
  const int n4 = n / 4, per_block = kThreadsPerBlock * kChainVec4s;
  kChainKernels[k - 1]<<<(n4 + per_block - 1) / per_block, kThreadsPerBlock, 0, stream>>>(
      reinterpret_cast<float4*>(x), n4, f);
}

void restore(float* dst, const float* pristine, int n, cudaStream_t stream) {
  CUDA_CHECK(cudaMemcpyAsync(dst, pristine, sizeof(float) * static_cast<size_t>(n),
                             cudaMemcpyDeviceToDevice, stream));
  CUDA_CHECK(cudaDeviceSynchronize());
}

// Max |unfused - fused| / |unfused| over all elements for one k.
double check_chain(float* x, float* y, const float* pristine, int n, int k,
                   const ChainFactors& f, cudaStream_t stream) {
  restore(x, pristine, n, stream);
  run_unfused(x, n, k, f, stream);
  restore(y, pristine, n, stream);
  run_fused(y, n, k, f, stream);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> hx(n), hy(n);
  CUDA_CHECK(cudaMemcpy(hx.data(), x, sizeof(float) * hx.size(), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(hy.data(), y, sizeof(float) * hy.size(), cudaMemcpyDeviceToHost));
  double worst = 0;
  for (int i = 0; i < n; ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(hx[i]) - hy[i]) / std::fabs(hx[i]));
  }
  return worst;
}

// One chain run is k launches (unfused) or one launch (fused). A sample times
// runs_per_sample chain runs back to back plus one sync and divides by
// runs_per_sample; the buffer is restored (untimed) before every sample so
// repeated multiplies cannot overflow it.
ChainResult measure_chain(const char* name, int n, int runs_per_sample,
                          const std::vector<int>& ks, const float* pristine, float* x, float* y,
                          double memcpy_gbs, const Options& opt, cudaStream_t stream) {
  const ChainFactors f = chain_factors();
  const double bytes = sizeof(float) * static_cast<double>(n);
  ChainResult result{name, n, runs_per_sample, {}, 0};
  for (int k : ks) {
    ChainRow row;
    row.k = k;
    row.max_rel_diff = check_chain(x, y, pristine, n, k, f, stream);
    result.max_rel_diff = std::max(result.max_rel_diff, row.max_rel_diff);

    std::vector<double> unfused, fused;
    for (int rep = 0; rep < opt.warmup_reps + opt.reps; ++rep) {
      restore(x, pristine, n, stream);
      const double u = time_us([&] {
        for (int r = 0; r < runs_per_sample; ++r) run_unfused(x, n, k, f, stream);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
      });
      restore(x, pristine, n, stream);
      const double v = time_us([&] {
        for (int r = 0; r < runs_per_sample; ++r) run_fused(x, n, k, f, stream);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
      });
      if (rep >= opt.warmup_reps) {
        unfused.push_back(u / runs_per_sample);
        fused.push_back(v / runs_per_sample);
      }
    }
    row.unfused = summarize(unfused);
    row.fused = summarize(fused);
    // Unfused reads and writes the buffer k times, fused once: 2k vs 2 buffer
    // passes. bytes / (GB/s * 1e3) is µs.
    row.unfused_bound_us = 2.0 * k * bytes / (memcpy_gbs * 1e3);
    row.fused_bound_us = 2.0 * bytes / (memcpy_gbs * 1e3);
    result.rows.push_back(row);
  }
  return result;
}

// ---------------------------------------------------------------- output

std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string json_stats(const Stats& s) {
  return "\"median_us\":" + num(s.median_us) + ",\"min_us\":" + num(s.min_us) +
         ",\"max_us\":" + num(s.max_us);
}

std::string json_series(const Series& s) {
  std::string out = "{\"slope_us\":" + num(s.fit.slope_us) +
                    ",\"intercept_us\":" + num(s.fit.intercept_us) +
                    ",\"r2\":" + num(s.fit.r2) + ",\"points\":[";
  for (size_t i = 0; i < s.points.size(); ++i) {
    if (i) out += ",";
    out += "{\"n\":" + std::to_string(s.points[i].n) + "," + json_stats(s.points[i].stats) + "}";
  }
  return out + "]}";
}

std::string version_string(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

void print_kernel_table(const KernelCase& kc, const KernelResult& r) {
  std::printf("\n== %s: %d block(s) x %d threads, %d floats ==\n", kc.name, kc.blocks(),
              kc.threads(), kc.n_elements);
  std::printf("%-12s %12s %14s %8s\n", "variant", "slope_us", "intercept_us", "r2");
  const std::pair<const char*, const Series*> variants[] = {
      {"launch", &r.launch}, {"launch_sync", &r.launch_sync}, {"graph", &r.graph}};
  for (const auto& v : variants) {
    std::printf("%-12s %12.3f %14.3f %8.5f\n", v.first, v.second->fit.slope_us,
                v.second->fit.intercept_us, v.second->fit.r2);
  }
  std::printf("%8s %14s %14s %14s   (median us per N dispatches + sync)\n", "N", "launch",
              "launch_sync", "graph");
  for (size_t i = 0; i < r.launch.points.size(); ++i) {
    std::printf("%8d %14.1f %14.1f %14.1f\n", r.launch.points[i].n,
                r.launch.points[i].stats.median_us, r.launch_sync.points[i].stats.median_us,
                r.graph.points[i].stats.median_us);
  }
}

void print_chain_table(const ChainResult& c) {
  std::printf("\n== chain, %d floats (%d chain runs per sample; us per chain run) ==\n",
              c.n_elements, c.runs_per_sample);
  std::printf("%4s %12s %12s %9s %14s %14s %12s\n", "k", "unfused_us", "fused_us", "speedup",
              "unfused_lb_us", "fused_lb_us", "max_rel_diff");
  for (const ChainRow& row : c.rows) {
    std::printf("%4d %12.2f %12.2f %9.2f %14.3f %14.3f %12.3g\n", row.k, row.unfused.median_us,
                row.fused.median_us, row.unfused.median_us / row.fused.median_us,
                row.unfused_bound_us, row.fused_bound_us, row.max_rel_diff);
  }
  std::printf("check: max relative difference fused vs unfused %.3g (tolerance %.0e): %s\n",
              c.max_rel_diff, kChainTolerance, c.max_rel_diff <= kChainTolerance ? "PASS" : "FAIL");
}

std::string json_chain(const ChainResult& c) {
  std::string out = "{\"n_elements\":" + std::to_string(c.n_elements) +
                    ",\"bytes\":" + std::to_string(sizeof(float) * static_cast<size_t>(c.n_elements)) +
                    ",\"runs_per_sample\":" + std::to_string(c.runs_per_sample) +
                    ",\"check\":{\"max_rel_diff\":" + num(c.max_rel_diff) +
                    ",\"tolerance\":" + num(kChainTolerance) +
                    ",\"pass\":" + (c.max_rel_diff <= kChainTolerance ? "true" : "false") +
                    "},\"rows\":[";
  for (size_t i = 0; i < c.rows.size(); ++i) {
    const ChainRow& r = c.rows[i];
    if (i) out += ",";
    out += "{\"k\":" + std::to_string(r.k) + ",\"unfused\":{" + json_stats(r.unfused) +
           "},\"fused\":{" + json_stats(r.fused) + "},\"unfused_lower_bound_us\":" +
           num(r.unfused_bound_us) + ",\"fused_lower_bound_us\":" + num(r.fused_bound_us) +
           ",\"max_rel_diff\":" + num(r.max_rel_diff) + "}";
  }
  return out + "]}";
}

Options parse_args(int argc, char** argv) {
  Options opt;
  bool reps_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      opt.quick = true;
    } else if (arg == "--reps" && i + 1 < argc) {
      opt.reps = std::atoi(argv[++i]);
      reps_given = true;
      if (opt.reps < 1) {
        std::fprintf(stderr, "--reps must be at least 1\n");
        std::exit(2);
      }
    } else if (arg == "--json" && i + 1 < argc) {
      opt.json_path = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--quick] [--reps R] [--json FILE]\n", argv[0]);
      std::exit(arg == "--help" || arg == "-h" ? 0 : 2);
    }
  }
  if (opt.quick) {
    opt.warmup_reps = 1;
    if (!reps_given) opt.reps = 10;
  }
  return opt;
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse_args(argc, argv);
  const int max_dispatches = opt.quick ? 1024 : 4096;
  const int max_large_dispatches = opt.quick ? 64 : 256;
  std::vector<int> chain_ks;
  for (int k = 1; k <= kMaxChain; ++k) {
    if (!opt.quick || (k & (k - 1)) == 0) chain_ks.push_back(k);  // quick: powers of two
  }
  // Many chain runs per sample amortize the one final sync.
  const int small_chain_runs = opt.quick ? 20 : 100;
  const int large_chain_runs = opt.quick ? 2 : 5;

  CUDA_CHECK(cudaSetDevice(0));
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  int driver = 0, runtime = 0;
  CUDA_CHECK(cudaDriverGetVersion(&driver));
  CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  std::printf("device: %s (sm_%d%d, %d SMs), CUDA driver %s, runtime %s\n", prop.name, prop.major,
              prop.minor, prop.multiProcessorCount, version_string(driver).c_str(),
              version_string(runtime).c_str());
  std::printf("method: median of %d reps (+%d warm-up) per point; slope = OLS fit of median vs N\n",
              opt.reps, opt.warmup_reps);
  std::fflush(stdout);

  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  // Random data in [0.5, 1.5): never zero, so relative differences are defined.
  const size_t large_bytes = sizeof(float) * static_cast<size_t>(kLargeElements);
  std::vector<float> host(kLargeElements);
  std::mt19937 rng(20240611);
  std::uniform_real_distribution<float> dist(0.5f, 1.5f);
  for (float& v : host) v = dist(rng);

  float *pristine, *buf_a, *buf_b;
  CUDA_CHECK(cudaMalloc(&pristine, large_bytes));
  CUDA_CHECK(cudaMalloc(&buf_a, large_bytes));
  CUDA_CHECK(cudaMalloc(&buf_b, large_bytes));
  CUDA_CHECK(cudaMemcpy(pristine, host.data(), large_bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(buf_a, host.data(), large_bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(buf_b, host.data(), large_bytes, cudaMemcpyHostToDevice));

  // Warm-up: about half a second of large kernels lifts the clocks from idle
  // and loads the module before anything is timed.
  for (int i = 0; i < 10000; ++i) {
    scale_kernel<<<blocks_for(kLargeElements), kThreadsPerBlock, 0, stream>>>(
        buf_a, kLargeElements, kSweepFactor);
  }
  empty_kernel<<<1, kEmptyThreads, 0, stream>>>();
  run_fused(buf_b, 4, 1, chain_factors(), stream);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(buf_a, pristine, large_bytes, cudaMemcpyDeviceToDevice));

  const KernelCase cases[] = {
      {"empty", 0, max_dispatches, nullptr},
      {"small", kSmallElements, max_dispatches, buf_b},
      {"large", kLargeElements, max_large_dispatches, buf_a},
  };
  std::vector<KernelResult> results;
  for (const KernelCase& kc : cases) {
    std::printf("[cuda] sweeping %s kernel ...\n", kc.name);
    std::fflush(stdout);
    results.push_back(measure_kernel(kc, opt, stream));
    print_kernel_table(kc, results.back());
    std::fflush(stdout);
  }

  std::printf("\n[cuda] sweeping device-to-device memcpy ...\n");
  std::fflush(stdout);
  const Series memcpy_series = measure_memcpy(buf_b, buf_a, max_large_dispatches, opt, stream);
  // A copy reads and writes the 64 MiB buffer once each; so does the large kernel.
  const long long memcpy_bytes = 2LL * static_cast<long long>(large_bytes);
  const double memcpy_gbs = gbs(memcpy_bytes, memcpy_series.fit.slope_us);
  const double large_kernel_gbs = gbs(cases[2].bytes_per_dispatch(), results[2].launch.fit.slope_us);
  std::printf("== bandwidth (bytes read + written / OLS slope) ==\n");
  std::printf("large kernel: %.1f GB/s (slope %.2f us, r2 %.5f)\n", large_kernel_gbs,
              results[2].launch.fit.slope_us, results[2].launch.fit.r2);
  std::printf("memcpy D2D:   %.1f GB/s (slope %.2f us, r2 %.5f)\n", memcpy_gbs,
              memcpy_series.fit.slope_us, memcpy_series.fit.r2);
  std::fflush(stdout);

  std::vector<ChainResult> chains;
  std::printf("\n[cuda] chain, %d floats ...\n", kSmallElements);
  std::fflush(stdout);
  chains.push_back(measure_chain("small", kSmallElements, small_chain_runs, chain_ks, pristine,
                                 buf_a, buf_b, memcpy_gbs, opt, stream));
  print_chain_table(chains.back());
  std::printf("\n[cuda] chain, %d floats ...\n", kLargeElements);
  std::fflush(stdout);
  chains.push_back(measure_chain("large", kLargeElements, large_chain_runs, chain_ks, pristine,
                                 buf_a, buf_b, memcpy_gbs, opt, stream));
  print_chain_table(chains.back());
  std::fflush(stdout);

  if (!opt.json_path.empty()) {
    std::string j = "{\"schema\":\"wgfuse.baseline.cuda/1\"";
    j += ",\"device\":" + json_string(prop.name);
    j += ",\"compute_capability\":\"" + std::to_string(prop.major) + "." + std::to_string(prop.minor) + "\"";
    j += ",\"sm_count\":" + std::to_string(prop.multiProcessorCount);
    j += ",\"driver\":\"" + version_string(driver) + "\"";
    j += ",\"runtime\":\"" + version_string(runtime) + "\"";
    j += ",\"quick\":" + std::string(opt.quick ? "true" : "false");
    j += ",\"method\":{\"timer\":\"std::chrono::steady_clock\",\"reps\":" + std::to_string(opt.reps) +
         ",\"warmup_reps\":" + std::to_string(opt.warmup_reps) +
         ",\"sample\":\"wall time from before the first dispatch to after cudaDeviceSynchronize\""
         ",\"statistic\":\"median per point; slope/intercept/r2 = OLS fit of median_us vs n\"}";
    j += ",\"kernel_shapes\":{";
    for (size_t i = 0; i < results.size(); ++i) {
      const KernelCase& kc = cases[i];
      if (i) j += ",";
      j += "\"" + std::string(kc.name) + "\":{\"blocks\":" + std::to_string(kc.blocks()) +
           ",\"threads_per_block\":" + std::to_string(kc.threads()) +
           ",\"n_elements\":" + std::to_string(kc.n_elements) +
           ",\"bytes_per_dispatch\":" + std::to_string(kc.bytes_per_dispatch()) + "}";
    }
    j += "},\"kernels\":{";
    for (size_t i = 0; i < results.size(); ++i) {
      if (i) j += ",";
      j += "\"" + std::string(cases[i].name) + "\":{\"launch\":" + json_series(results[i].launch) +
           ",\"launch_sync\":" + json_series(results[i].launch_sync) +
           ",\"graph\":" + json_series(results[i].graph) + "}";
    }
    j += "},\"bandwidth\":{\"large_kernel_gbs\":" + num(large_kernel_gbs) +
         ",\"memcpy_gbs\":" + num(memcpy_gbs) +
         ",\"bytes_per_large_kernel\":" + std::to_string(cases[2].bytes_per_dispatch()) +
         ",\"bytes_per_memcpy\":" + std::to_string(memcpy_bytes) +
         ",\"method\":\"bytes read + written / OLS slope of the sequential sweep (large kernel: launch variant)\""
         ",\"memcpy\":" + json_series(memcpy_series) + "}";
    j += ",\"chain\":{\"factors\":\"a_j = 1 + 1e-4*(j+1), j = 0..k-1\""
         ",\"time_per_run\":\"wall time of runs_per_sample back-to-back chain runs plus one "
         "cudaDeviceSynchronize, divided by runs_per_sample; median over reps\""
         ",\"lower_bound\":\"unfused 2k*bytes, fused 2*bytes, over memcpy_gbs\"";
    for (const ChainResult& c : chains) j += ",\"" + std::string(c.name) + "\":" + json_chain(c);
    j += "}}\n";
    FILE* f = std::fopen(opt.json_path.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "cannot open %s for writing\n", opt.json_path.c_str());
      return 1;
    }
    std::fputs(j.c_str(), f);
    std::fclose(f);
    std::printf("\nwrote %s\n", opt.json_path.c_str());
  }

  CUDA_CHECK(cudaFree(pristine));
  CUDA_CHECK(cudaFree(buf_a));
  CUDA_CHECK(cudaFree(buf_b));
  CUDA_CHECK(cudaStreamDestroy(stream));

  bool all_pass = true;
  for (const ChainResult& c : chains) all_pass = all_pass && c.max_rel_diff <= kChainTolerance;
  return all_pass ? 0 : 3;
}
