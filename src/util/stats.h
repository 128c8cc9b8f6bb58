// Statistics of every report (bench and sim): medians with min–max, and the least-squares line
// through (dispatch count, time) whose slope is the per-dispatch cost.
#pragma once

#include <vector>

namespace wgfuse {

struct Summary {
  double median = 0, min = 0, max = 0;
};
// Throws Error on an empty sample.
Summary summarize(std::vector<double> samples);

// A distribution-free confidence interval for the median of n samples from its order statistics:
// [x(k), x(n+1-k)] holds the population median with probability 1 - 2·P(Binomial(n, 1/2) < k).
// k is the largest with that level at least `want`; where even the widest, [min, max], falls
// short (n < 5 for 90%), it is [min, max] with its own, lower level. No interval for n < 2.
struct MedianInterval {
  double low = 0, high = 0, level = 0;  // level 0: no interval
};
MedianInterval median_interval(std::vector<double> samples, double want = 0.9);

struct LinearFit {
  double slope = 0, intercept = 0, r2 = 0;
};
// Ordinary least squares y = slope·x + intercept; r2 is the coefficient of determination
// (1 when every point is on the line; defined as 1 when y has no variance). Needs ≥ 2 distinct x.
LinearFit fit_line(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace wgfuse
