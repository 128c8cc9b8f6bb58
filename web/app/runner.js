// Runs suites one after the other on one device, with overall progress, and collects their
// results; a suite that throws or raises a device error is reported and the next one still runs.
import {resultProblems} from './suite.js';

async function popErrors(device, count) {
  const errors = [];
  for (let i = 0; i < count; ++i) {
    const e = await device.popErrorScope();
    if (e) errors.push(e.message);
  }
  return errors;
}

// Resolves to {rows: [{result, problems}], errors: [{suite, message}]}. onProgress(fraction,
// label) sees the fraction of all the suites done.
export async function runSuites(suites, {device, kernels, quick, onProgress = () => {}}) {
  const rows = [];
  const errors = [];
  let lost = null;
  device.lost.then((info) => {
    lost = info;
  });
  for (const [i, suite] of suites.entries()) {
    if (lost) {
      errors.push(
          {suite: suite.id, message: `not run: the device was lost (${lost.reason}: ${lost.message})`});
      continue;
    }
    const progress = (fraction, label) => onProgress(
        (i + Math.min(Math.max(Number(fraction) || 0, 0), 1)) / suites.length, `${suite.title}: ${label}`);
    progress(0, 'starting');
    const scopes = ['validation', 'out-of-memory', 'internal'];
    scopes.forEach((filter) => device.pushErrorScope(filter));
    try {
      const results = await suite.run({device, kernels, quick, progress});
      if (!Array.isArray(results)) throw new Error('run() did not resolve to an array of results');
      for (const result of results) {
        result.kernel_version ??= kernels.version;
        rows.push({result, problems: resultProblems(result)});
      }
    } catch (e) {
      errors.push({suite: suite.id, message: e?.message ?? String(e)});
    } finally {
      for (const message of await popErrors(device, scopes.length)) {
        errors.push({suite: suite.id, message: `device error: ${message}`});
      }
    }
  }
  onProgress(1, 'done');
  return {rows, errors};
}
