// Shared test helpers: one Context per test binary (device creation on SwiftShader costs
// ~100 ms), random data that is never zeros, and comparisons that print the first mismatch.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "gpu/context.h"
#include "util/error.h"

namespace wgfuse::test {

// Options for a context on the adapter under test: WGFUSE_TEST_ADAPTER (auto | gpu | cpu), default
// auto, which is SwiftShader on a machine without a GPU; no note on stderr when that is the CPU.
inline gpu::ContextOptions context_options() {
  gpu::ContextOptions o;
  const char* a = std::getenv("WGFUSE_TEST_ADAPTER");
  o.adapter = gpu::parse_adapter_choice(a && *a ? a : "auto");
  o.quiet = true;
  return o;
}

// The context on the adapter under test (context_options()), shared by the tests.
inline gpu::Context& context() {
  static gpu::Context ctx = [] {
    gpu::ContextOptions o = context_options();
    o.timeout = std::chrono::milliseconds(300'000);
    return gpu::Context(o);
  }();
  return ctx;
}

// A fresh folder under the system's temporary directory, removed with everything in it.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() /
           ("wgfuse_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

// Uniform in [lo, hi), nonzero by construction when lo > 0 or hi < 0.
inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = 0.5f, float hi = 2.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

inline std::vector<uint32_t> random_words(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> v(n);
  for (auto& x : v) x = rng() | 1u;  // never zero
  return v;
}

// The wgfuse binary run as a user would: `env` (assignments) before it, stderr folded into the
// output unless `stderr_to` names where it goes instead.
struct CliRun {
  int rc;           // exit status, -1 if the command did not exit normally
  std::string out;  // stdout (and stderr)
};
inline CliRun run_wgfuse(const std::string& args, const std::string& env = "",
                         const std::string& stderr_to = "&1") {
  const std::string cmd = env + " " + WGFUSE_BINARY + " " + args + " 2>" + stderr_to;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, "popen failed: " + cmd};
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// Relative comparison; on failure reports the first differing index and the max error.
inline ::testing::AssertionResult all_close(const std::vector<float>& got, const std::vector<double>& want,
                                            double rtol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " != " << want.size();
  double max_err = 0;
  long first = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    double err = std::abs(got[i] - want[i]) / std::max(1e-30, std::abs(want[i]));
    if (!(err <= rtol) && first < 0) first = long(i);
    if (!(err <= max_err)) max_err = err;
  }
  if (first < 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "first mismatch at " << first << ": got " << got[first] << ", want "
                                       << want[first] << "; max relative error " << max_err << " > " << rtol;
}

// Runs `f`, which must throw a wgfuse::Error whose message contains every one of `parts`.
inline ::testing::AssertionResult throws_error(const std::function<void()>& f,
                                               const std::vector<std::string>& parts) {
  try {
    f();
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const auto& p : parts)
      if (msg.find(p) == std::string::npos)
        return ::testing::AssertionFailure() << "message lacks \"" << p << "\": " << msg;
    return ::testing::AssertionSuccess() << msg;
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "not a wgfuse::Error: " << e.what();
  }
  return ::testing::AssertionFailure() << "no error";
}

// How many times `what` occurs in `text` (overlaps counted).
inline size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace wgfuse::test
