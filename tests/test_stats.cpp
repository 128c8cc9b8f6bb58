// The statistics behind every benchmark figure.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "util/error.h"
#include "util/stats.h"

namespace wgfuse {
namespace {

// Test that the fit recovers a known slope and intercept exactly from points on a line.
TEST(Stats, FitRecoversExactLine) {
  std::vector<double> x, y;
  for (double n : {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096}) {
    x.push_back(n);
    y.push_back(4.75 * n + 53.0);
  }
  auto f = fit_line(x, y);
  EXPECT_NEAR(f.slope, 4.75, 1e-12);
  EXPECT_NEAR(f.intercept, 53.0, 1e-9);
  EXPECT_NEAR(f.r2, 1.0, 1e-12);
}

// Test that on noisy data the fit is the least-squares line, by properties independent of how
// fit_line computes it: the residuals sum to zero and are orthogonal to x (the normal equations),
// and R² equals the squared Pearson correlation, computed here from raw sums in long double.
TEST(Stats, FitOnNoisyDataIsTheLeastSquaresLine) {
  std::mt19937 rng(42);
  std::normal_distribution<double> noise(0.0, 2.0);
  std::vector<double> x, y;
  for (int rep = 0; rep < 5; ++rep)
    for (double n = 1; n <= 4096; n *= 2) {
      x.push_back(n);
      y.push_back(5.0 * n + 200.0 + noise(rng));
    }
  auto f = fit_line(x, y);
  EXPECT_NEAR(f.slope, 5.0, 0.01);
  EXPECT_NEAR(f.intercept, 200.0, 2.0);
  long double sum_r = 0, sum_rx = 0, sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const long double r = y[i] - (f.slope * x[i] + f.intercept);
    sum_r += r;
    sum_rx += r * x[i];
    sx += x[i];
    sy += y[i];
    sxx += (long double)x[i] * x[i];
    syy += (long double)y[i] * y[i];
    sxy += (long double)x[i] * y[i];
  }
  const long double n = x.size();
  EXPECT_NEAR(double(sum_r), 0.0, 1e-6 * double(sy));
  EXPECT_NEAR(double(sum_rx), 0.0, 1e-6 * double(sxy));
  const long double pearson = (n * sxy - sx * sy) / std::sqrt((n * sxx - sx * sx) * (n * syy - sy * sy));
  EXPECT_NEAR(f.r2, double(pearson * pearson), 1e-9);
  EXPECT_LT(f.r2, 1.0);
}

// Test R² of uncorrelated data is near zero.
TEST(Stats, RSquaredOfFlatNoiseIsLow) {
  std::vector<double> x{1, 2, 3, 4, 5, 6}, y{3, 1, 4, 1, 5, 2};
  auto f = fit_line(x, y);
  EXPECT_LT(f.r2, 0.2);
}

// Test that degenerate input is refused.
TEST(Stats, DegenerateInputThrows) {
  EXPECT_THROW(fit_line({1}, {2}), Error);
  EXPECT_THROW(fit_line({3, 3, 3}, {1, 2, 3}), Error);
  EXPECT_THROW(summarize({}), Error);
}

// Test medians of odd and even samples and min–max.
TEST(Stats, SummaryMedianMinMax) {
  auto a = summarize({5, 1, 9, 3, 7});
  EXPECT_EQ(a.median, 5);
  EXPECT_EQ(a.min, 1);
  EXPECT_EQ(a.max, 9);
  auto b = summarize({4, 1, 3, 2});
  EXPECT_EQ(b.median, 2.5);
}

// Test the order-statistic interval of the median: the order statistics and levels of the binomial
// formula, and that the stated level is the coverage of a skewed distribution's median.
TEST(Stats, MedianIntervalLevelsAndCoverage) {
  EXPECT_EQ(median_interval({7}).level, 0);
  auto three = median_interval({3, 9, 1});
  EXPECT_EQ(three.low, 1);
  EXPECT_EQ(three.high, 9);
  EXPECT_DOUBLE_EQ(three.level, 0.75);  // 1 - 2/8: short of 90%, the widest there is
  EXPECT_DOUBLE_EQ(median_interval({5, 1, 4, 2, 3}).level, 1 - 2.0 / 32);
  std::vector<double> ten{10, 1, 9, 2, 8, 3, 7, 4, 6, 5};
  auto t = median_interval(ten);  // k = 2: 1 - 2·11/1024; k = 3 would be 1 - 2·56/1024 < 0.9
  EXPECT_EQ(t.low, 2);
  EXPECT_EQ(t.high, 9);
  EXPECT_DOUBLE_EQ(t.level, 1 - 22.0 / 1024);
  std::mt19937 rng(5);
  std::exponential_distribution<double> exp1(1.0);  // median ln 2
  for (size_t n : {4u, 7u, 15u}) {
    int covered = 0, trials = 20000;
    double level = 0;
    for (int i = 0; i < trials; ++i) {
      std::vector<double> s(n);
      for (auto& x : s) x = exp1(rng);
      auto ci = median_interval(s);
      level = ci.level;
      covered += ci.low <= std::log(2.0) && std::log(2.0) <= ci.high;
    }
    EXPECT_NEAR(double(covered) / trials, level, 0.012) << n;
  }
}

}  // namespace
}  // namespace wgfuse
