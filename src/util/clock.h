#pragma once
// Wall-clock intervals for the reports (load, upload, prefill, decode times).

#include <chrono>

namespace wgfuse {

using SteadyClock = std::chrono::steady_clock;

// Milliseconds from t0 to now.
inline double ms_since(SteadyClock::time_point t0) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count();
}

}  // namespace wgfuse
