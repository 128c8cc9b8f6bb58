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

struct LinearFit {
  double slope = 0, intercept = 0, r2 = 0;
};
// Ordinary least squares y = slope·x + intercept; r2 is the coefficient of determination
// (1 when every point is on the line; defined as 1 when y has no variance). Needs ≥ 2 distinct x.
LinearFit fit_line(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace wgfuse
