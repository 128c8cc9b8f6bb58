// Summary statistics of timing samples, the same definitions as the native reports
// (src/util/stats.cpp): the median of an even count is the mean of the middle two; std is the
// sample standard deviation (n - 1), 0 for a single sample.

function checked(samples) {
  if (!samples.length) throw new Error('stats: no samples');
  for (const x of samples)
    if (!Number.isFinite(x)) throw new Error(`stats: sample ${x} is not a finite number`);
  return samples;
}

export function median(samples) {
  const s = [...checked(samples)].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

export function min(samples) { return Math.min(...checked(samples)); }

export function max(samples) { return Math.max(...checked(samples)); }

export function mean(samples) { return checked(samples).reduce((sum, x) => sum + x, 0) / samples.length; }

export function std(samples) {
  const m = mean(samples);
  const n = samples.length;
  return n > 1 ? Math.sqrt(samples.reduce((sum, x) => sum + (x - m) ** 2, 0) / (n - 1)) : 0;
}

// A distribution-free interval for the median, the same as src/util/stats.cpp median_interval:
// [x(k), x(n+1-k)] of the sorted samples, holding the median with probability
// 1 - 2·P(Binomial(n, 1/2) < k), k the largest with that level >= want; [min, max] with its own
// lower level where even that falls short (n < 5 at 90%); null for fewer than 2 samples.
export function medianInterval(samples, want = 0.9) {
  const s = [...checked(samples)].sort((a, b) => a - b);
  const n = s.length;
  if (n < 2) return null;
  let pmf = 2 ** -n, below = pmf, level = 1 - 2 * below, k = 1;
  while (k + 1 <= n >> 1) {
    pmf = (pmf * (n - k + 1)) / k;
    const next = 1 - 2 * (below + pmf);
    if (next < want) break;
    below += pmf;
    level = next;
    ++k;
  }
  return {low: s[k - 1], high: s[n - k], level};
}

// {median, min, max, std} of the samples, the fields of a result (docs/WEB_API.md).
export function summarize(samples) {
  return {median: median(samples), min: min(samples), max: max(samples), std: std(samples)};
}
