// A token bucket per client address: `per_window` requests per `window`, refilled continuously, a
// burst of at most `per_window`. Buckets that are full again are forgotten, so memory is bounded
// by the clients active within one window.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <unordered_map>

namespace wgfuse::serve {

struct RateLimit {
  double per_window = 60;  // 0: no limit
  std::chrono::duration<double> window = std::chrono::minutes(1);
  // "60/min", "10/s", "1000/hour", or "off" (no limit); throws Error naming `option` otherwise.
  static RateLimit parse(const std::string& text, const std::string& option = "--rate");
};

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  explicit RateLimiter(RateLimit limit) : limit_(limit) {}
  // Takes a token for `client`; when none is left, false and the seconds until one is.
  bool admit(const std::string& client, double& retry_after_s, Clock::time_point now = Clock::now());

 private:
  struct Bucket {
    double tokens;
    Clock::time_point at;
  };
  RateLimit limit_;
  std::mutex mutex_;
  std::unordered_map<std::string, Bucket> buckets_;
  Clock::time_point last_sweep_{};
};

}  // namespace wgfuse::serve
