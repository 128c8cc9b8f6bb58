#pragma once
// Wall-clock intervals for the reports (load, upload, prefill, decode times).

#include <chrono>
#include <ctime>
#include <string>

namespace wgfuse {

using SteadyClock = std::chrono::steady_clock;

// Milliseconds from t0 to now.
inline double ms_since(SteadyClock::time_point t0) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count();
}

// Now as "2026-11-26T18:30:00Z", for the reports' dates.
inline std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace wgfuse
