// A browser run of a simulation (web/suites/sim.js's outputs: pop, steps, seed, reference_tol and
// each strategy's fitness) against native `wgfuse sim W --check --json` of the same sizes and seed:
// every individual within 1e-5 relative of native fused (the tolerance of fused vs per-step
// natively), an individual over it within the workload's tolerance of the CPU double reference
// (sample_fitness.reference), as native --check judges one; and the native --check passes.

const FITNESS_RTOL = 1e-5;

// The arguments of the native run to compare browser output `b` of `workload` (a built-in's name
// or a workload file's path) with: the fused fitness of the whole population, checked.
export function nativeSimArgs(workload, b) {
  return [
    'sim', workload, '--pop', `${b.pop}`, '--steps', `${b.steps}`, '--seed', `${b.seed}`, '--mode', 'fused',
    '--generations', '1', '--samples', `${b.pop}`, '--check', '--quiet'
  ];
}

// [{ok, line}]: the native check, and each browser strategy against native `n` (its --json).
export function compareSimFitness(workload, b, n) {
  const out = [{
    ok: n.check?.pass === true,
    line: `native sim ${workload}: --check ${n.check?.pass ? 'passed' : 'did not pass'}`
  }];
  const s = n.sample_fitness;
  if (s.indices.length !== b.pop || s.indices.some((v, k) => v !== k)) {
    out.push(
        {ok: false, line: `native sim ${workload}: sample_fitness does not cover the population in order`});
    return out;
  }
  for (const [strategy, fitness] of Object.entries(b.fitness)) {
    const rtol = FITNESS_RTOL, {atol, rtol: refRtol} = b.reference_tol;
    let worst = 0, over = 0, nearReference = 0, first = -1;
    s.values.forEach((want, i) => {
      const got = fitness[i];
      const den = Math.max(Math.abs(want), Math.abs(got));
      const rel = got === want ? 0 : (den > 0 ? Math.abs(got - want) / den : Infinity);
      worst = Math.max(worst, Number.isNaN(rel) ? Infinity : rel);
      if (rel <= rtol) return;
      ++over;
      const ref = s.reference?.[i] ?? NaN;  // none where the file names no reference
      if (Math.abs(got - ref) <= Math.max(atol, refRtol * Math.abs(ref)))
        ++nearReference;
      else if (first < 0)
        first = i;
    });
    const line = `sim ${workload} browser ${strategy} vs native fused: max rel ${worst.toExponential(2)}, ` +
        `${over} of ${b.pop} over ${rtol}, ${nearReference} of them within max(${atol}, ${
                     refRtol}·|ref|) of the CPU double reference`;
    out.push(first < 0 ? {ok: true, line} : {
      ok: false,
      line: `${line} (first beyond: individual ${first}, browser ${fitness[first]}, native ${
          s.values[first]}, reference ${s.reference?.[first]})`
    });
  }
  return out;
}
