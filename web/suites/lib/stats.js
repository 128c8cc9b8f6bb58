// The result record of the submission schema (docs/WEB_API.md): every suite builds its results
// through `result` so that they all carry the same fields. The statistics are the page's
// (web/app/stats.js), one definition for the page and the suites.
import {summarize} from '../../app/stats.js';

export {summarize};

// One entry of `results`. `speedup` is how many times better than the baseline's median: the
// baseline's over this one for times (lower is better), this one's over the baseline's for rates
// (units "…/s"); null where no baseline applies.
export function result({
  suite,
  name,
  kernelVersion,
  sizes,
  unit,
  samples,
  dispatches,
  submits,
  baseline = null,
  baselineMedian = null,
  bandwidthGbs = null,
  boundGbs = null,
  equivalence
}) {
  const s = summarize(samples);
  return {
    suite,
    name,
    kernel_version: kernelVersion,
    sizes,
    unit,
    samples,
    ...s,
    dispatches,
    submits,
    speedup: !baseline || !baselineMedian ? null :
        unit.endsWith('/s')               ? s.median / baselineMedian :
                                            baselineMedian / s.median,
    baseline: baseline && baselineMedian ? baseline : null,
    bandwidth_gbs: bandwidthGbs,
    bound_gbs: boundGbs,
    equivalence,
  };
}

// Element-wise agreement of two arrays: max |a - b| and max |a - b| / max(|a|, |b|); NaN on
// either side (an unwritten, poisoned value) counts as an infinite difference.
export function compareArrays(a, b) {
  if (a.length !== b.length) throw new Error(`compareArrays: lengths ${a.length} and ${b.length} differ`);
  let maxAbs = 0, maxRel = 0, maxRef = 0, bitwise = true;
  for (let i = 0; i < a.length; ++i) {
    const x = a[i], y = b[i];
    if (Object.is(x, y)) {
      maxRef = Math.max(maxRef, Math.abs(x));
      continue;
    }
    bitwise = false;
    const d = Math.abs(x - y);
    if (Number.isNaN(d)) return {maxAbs: Infinity, maxRel: Infinity, maxRef, bitwise};
    maxAbs = Math.max(maxAbs, d);
    maxRel = Math.max(maxRel, d / Math.max(Math.abs(x), Math.abs(y)));
    maxRef = Math.max(maxRef, Math.abs(x), Math.abs(y));
  }
  return {maxAbs, maxRel, maxRef, bitwise};
}

// The sim check, as native `wgfuse sim --check` makes it (src/sim/runner.cpp judge_over): every
// individual within `rtol` relative, and those over it judged by the workload's tolerance against
// the CPU double reference, |d| <= max(atol, refRtol·|f|). The browser has no double reference, so
// the individual's other strategy (per-step) stands in for it. The record says which test decided.
export function judgeFitness(compared, a, b, rtol, {atol, rtol: refRtol}) {
  const c = compareArrays(a, b);
  let over = 0, overWithin = 0, overWorst = 0;
  for (let i = 0; i < a.length; ++i) {
    if (Object.is(a[i], b[i])) continue;
    const d = Math.abs(a[i] - b[i]), scale = Math.max(Math.abs(a[i]), Math.abs(b[i]));
    if (d <= rtol * scale) continue;  // (false for NaN)
    ++over;
    const tol = Math.max(atol, refRtol * scale);
    if (d <= tol) ++overWithin;
    overWorst = Math.max(overWorst, Number.isNaN(d) ? Infinity : d / tol);
  }
  return {
    passed: rtol === 0 ? c.bitwise : overWithin === over,
    compared,
    max_abs_diff: c.maxAbs,
    // the mixed test the server knows (docs/WEB_API.md): |d| <= tolerance + relative_tolerance·|f|
    tolerance: rtol === 0 ? 0 : atol,
    relative_tolerance: rtol === 0 ? 0 : refRtol,
    max_rel_diff: c.maxRel,
    rtol,
    over_rtol: over,
    over_within_reference_tolerance: overWithin,
    worst_over_reference_tolerance: overWorst,
    bitwise: c.bitwise,
  };
}

// The equivalence record of a result: `passed` when max_abs_diff <= tolerance (an absolute
// tolerance; relative ones are scaled by the largest compared magnitude by the caller).
export function equivalence(compared, maxAbsDiff, tolerance, extra = {}) {
  return {passed: maxAbsDiff <= tolerance, compared, max_abs_diff: maxAbsDiff, tolerance, ...extra};
}
