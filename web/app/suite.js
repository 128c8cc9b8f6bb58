// The interface between the page and a benchmark suite (web/suites/<id>.js), and the loading of
// the suites.
//
// A suite module (web/suites/<module>.js, <module> one of SUITE_MODULES) exports `suite`:
//
//   export const suite = {
//     id: 'dispatch',            // one of RESULT_SUITES; the `suite` field of its results
//     title: 'Dispatch overhead',
//     async run({ device, kernels, quick, progress }) { ...; return results; },
//   };
//
// and, when it holds more than one (dispatch.js: dispatch and chain), `suites`, an array of them
// that the page offers instead.
//
// run() receives
//   device    the GPUDevice the page created (features subgroups, timestamp-query and shader-f16
//             where the adapter offers them; limits raised to the adapter's);
//   kernels   { version, names, get(name) }: get(name) resolves to the WGSL text of
//             /kernels/<name>.wgsl (fetched once, checked against its sha256 in
//             /kernels/index.json), version is that index's hex16 version;
//   quick     true asks for browser-friendly small sizes (the end-to-end test runs quick);
//   progress  progress(fraction in [0, 1], label) reports how far the suite is;
// and resolves to an array of Result: one entry each of the `results` array of the submission
// JSON (docs/WEB_API.md). The page fills in `kernel_version` where a result
// lacks it. run() throws an Error with a readable message when the suite cannot run.

/**
 * @typedef {Object} Equivalence
 * @property {boolean} passed
 * @property {string} compared      what was compared, e.g. "fused vs unfused"
 * @property {number} max_abs_diff
 * @property {number} tolerance
 */

/**
 * @typedef {Object} Result
 * @property {string} suite
 * @property {string} name                 the variant within the suite
 * @property {string} [kernel_version]     filled in by the page when absent
 * @property {Object<string, number>} sizes
 * @property {string} unit                 "us" | "ms" | "tok/s" | "gen/s" | "GB/s"
 * @property {number[]} samples
 * @property {number} median
 * @property {number} min
 * @property {number} max
 * @property {number} std
 * @property {number} dispatches           per timed repetition
 * @property {number} submits              per timed repetition
 * @property {?number} speedup             vs `baseline`, null when not applicable
 * @property {?string} baseline
 * @property {?number} bandwidth_gbs
 * @property {?number} bound_gbs
 * @property {Equivalence} equivalence
 */

/**
 * @typedef {Object} Suite
 * @property {string} id
 * @property {string} title
 * @property {function({device: GPUDevice, kernels: Object, quick: boolean,
 *                      progress: function(number, string): void}): Promise<Result[]>} run
 */

export const SUITE_MODULES = ['dispatch', 'sim', 'tiny', 'llm'];
// The suites, the `suite` field of their results (docs/WEB_API.md).
export const RESULT_SUITES = ['dispatch', 'chain', 'sim', 'sim-file', 'tiny', 'llm'];
// Suites whose check the server redoes (llm: the tokens against its own native run): a failed check
// is submitted too, and the server keeps it, flagged, as evidence.
export const SERVER_CHECKED_SUITES = ['llm'];
export const UNITS = ['us', 'ms', 'tok/s', 'gen/s', 'GB/s'];

function suiteProblem(s) {
  if (!s || typeof s !== 'object') return 'is not an object';
  if (!RESULT_SUITES.includes(s.id)) return `has id "${s.id}", not one of ${RESULT_SUITES.join(', ')}`;
  if (typeof s.title !== 'string' || typeof s.run !== 'function') return `${s.id} lacks a title or a run()`;
  return null;
}

// Imports web/suites/<module>.js for every module. A module that fails to load, or a suite in it
// that lacks the interface, is reported with its reason instead of being dropped silently:
// {loaded: Suite[], failed: [{id, reason}]}.
export async function loadSuites(base = new URL('../suites/', import.meta.url)) {
  const settled = await Promise.allSettled(SUITE_MODULES.map((m) => import(new URL(`${m}.js`, base).href)));
  const loaded = [];
  const failed = [];
  settled.forEach((outcome, i) => {
    const module = SUITE_MODULES[i];
    if (outcome.status === 'rejected') {
      failed.push({id: module, reason: outcome.reason?.message ?? String(outcome.reason)});
      return;
    }
    const {suite, suites = [suite]} = outcome.value;
    for (const s of Array.isArray(suites) ? suites : [suites]) {
      const problem = suiteProblem(s);
      if (problem)
        failed.push({id: module, reason: `a suite of web/suites/${module}.js ${problem}`});
      else
        loaded.push(s);
    }
  });
  return {loaded, failed};
}

const isNumber = (x) => typeof x === 'number' && Number.isFinite(x);
const isCount = (x) => Number.isInteger(x) && x >= 0;

// The problems of one result, each naming its field (empty when it is sound): the shape and
// plausibility rules the server applies (docs/WEB_API.md), so that the page flags a suite's bad
// result where it is shown instead of only at submission.
export function resultProblems(r) {
  const problems = [];
  const need = (ok, field, why) => ok || problems.push(`${field}: ${why}`);
  need(RESULT_SUITES.includes(r.suite), 'suite', `"${r.suite}" is not a known suite`);
  need(typeof r.name === 'string' && r.name.length > 0, 'name', 'must be a non-empty string');
  need(UNITS.includes(r.unit), 'unit', `"${r.unit}" is not one of ${UNITS.join(', ')}`);
  const samples = Array.isArray(r.samples) ? r.samples : [];
  need(
      samples.length > 0 && samples.every(isNumber), 'samples',
      'must be a non-empty array of finite numbers');
  for (const f of ['median', 'min', 'max', 'std']) need(isNumber(r[f]), f, 'must be a finite number');
  if (problems.length) return problems;
  need(r.min <= r.median && r.median <= r.max, 'median', 'must be within [min, max]');
  need(r.std >= 0, 'std', 'must be >= 0');
  need(samples.every((x) => x >= r.min && x <= r.max), 'samples', 'every sample must be within [min, max]');
  need(isCount(r.dispatches), 'dispatches', 'must be an integer >= 0');
  need(isCount(r.submits), 'submits', 'must be an integer >= 0');
  need(
      r.speedup === null || (isNumber(r.speedup) && r.speedup >= 0.01 && r.speedup <= 10000), 'speedup',
      'must be null or within 0.01..10000');
  const eq = r.equivalence;
  need(eq && typeof eq === 'object', 'equivalence', 'is missing');
  if (eq) {
    need(
        eq.passed === true || (eq.passed === false && SERVER_CHECKED_SUITES.includes(r.suite)), 'equivalence.passed',
        `the check failed (${eq.compared ?? 'no comparison named'})`);
    need(isNumber(eq.max_abs_diff), 'equivalence.max_abs_diff', 'must be a finite number');
  }
  return problems;
}
