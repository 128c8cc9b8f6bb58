#include "serve/rate_limiter.h"

#include <algorithm>
#include <cstdlib>

#include "util/error.h"

namespace wgfuse::serve {

RateLimit RateLimit::parse(const std::string& text, const std::string& option) {
  if (text == "off") return {0, std::chrono::minutes(1)};
  const auto slash = text.find('/');
  const std::string usage =
      option + " '" + text + "': expected COUNT/UNIT (unit s, min or hour, e.g. 60/min) or off";
  if (slash == std::string::npos) throw Error(usage);
  char* end = nullptr;
  const std::string count = text.substr(0, slash), unit = text.substr(slash + 1);
  double n = std::strtod(count.c_str(), &end);
  if (count.empty() || *end || !(n > 0) || n > 1e9) throw Error(usage);
  if (unit == "s") return {n, std::chrono::seconds(1)};
  if (unit == "min") return {n, std::chrono::minutes(1)};
  if (unit == "hour") return {n, std::chrono::hours(1)};
  throw Error(usage);
}

bool RateLimiter::admit(const std::string& client, double& retry_after_s, Clock::time_point now) {
  if (limit_.per_window <= 0) return true;
  const double rate = limit_.per_window / limit_.window.count();  // tokens per second
  std::lock_guard lock(mutex_);
  if (now - last_sweep_ > limit_.window) {
    std::erase_if(buckets_, [&](auto& b) {
      return b.second.tokens + std::chrono::duration<double>(now - b.second.at).count() * rate >=
             limit_.per_window;
    });
    last_sweep_ = now;
  }
  auto [it, fresh] = buckets_.try_emplace(client, Bucket{limit_.per_window, now});
  Bucket& b = it->second;
  b.tokens = std::min(limit_.per_window, b.tokens + std::chrono::duration<double>(now - b.at).count() * rate);
  b.at = now;
  if (b.tokens >= 1) {
    b.tokens -= 1;
    return true;
  }
  retry_after_s = (1 - b.tokens) / rate;
  return false;
}

}  // namespace wgfuse::serve
