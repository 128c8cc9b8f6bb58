#include "util/stats.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace wgfuse {

Summary summarize(std::vector<double> s) {
  if (s.empty()) throw Error("summarize: no samples");
  std::sort(s.begin(), s.end());
  size_t n = s.size();
  double median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  return {median, s.front(), s.back()};
}

MedianInterval median_interval(std::vector<double> s, double want) {
  const size_t n = s.size();
  if (n < 2) return {};
  std::sort(s.begin(), s.end());
  // level(k) = 1 - 2·P(B <= k - 1), B ~ Binomial(n, 1/2); below_k accumulates P(B <= k - 1).
  double pmf = std::ldexp(1.0, -int(n));  // P(B = 0)
  double below_k = pmf, level = 1 - 2 * below_k;
  size_t k = 1;
  while (k + 1 <= n / 2) {
    pmf = pmf * double(n - k + 1) / double(k);  // P(B = k)
    const double next = 1 - 2 * (below_k + pmf);
    if (next < want) break;
    below_k += pmf;
    level = next;
    ++k;
  }
  return {s[k - 1], s[n - k], level};
}

LinearFit fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 2) throw Error("fit_line: need at least 2 points of (x, y)");
  const double n = double(x.size());
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    mx += x[i];
    my += y[i];
  }
  mx /= n;
  my /= n;
  double sxx = 0, sxy = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (sxx == 0) throw Error("fit_line: all x are equal");
  LinearFit f;
  f.slope = sxy / sxx;
  f.intercept = my - f.slope * mx;
  double ss_res = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double r = y[i] - (f.slope * x[i] + f.intercept);
    ss_res += r * r;
  }
  f.r2 = syy == 0 ? 1.0 : 1.0 - ss_res / syy;
  return f;
}

}  // namespace wgfuse
