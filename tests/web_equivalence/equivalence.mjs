// The cross-platform equivalence test (issue 11): for a fixed seed, the browser suites' outputs
// equal the native binary's on the same adapter (SwiftShader):
//   sim:  every individual's fitness under each browser strategy vs `wgfuse sim W --check --json`
//         (sample_fitness: the fused fitness of the whole population, --samples = pop), within
//         1e-5 relative (the tolerance of fused vs per-step natively), an individual over it
//         within the workload's tolerance of the CPU double reference (sample_fitness.reference),
//         as native --check judges one; the native --check passes;
//   tiny: the generated tokens of every browser strategy == `wgfuse tiny --check --json`'s
//         generated_ids;
//   and every equivalence check the browser suites report themselves (dispatch and chain
//   included) passed, with no WebGPU error.
// Usage: node --experimental-websocket equivalence.mjs WGFUSE_BINARY KERNEL_DIR WEB_ROOT OUT_DIR
import {execFileSync} from 'node:child_process';
import {mkdirSync, readFileSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';

import {runInBrowser} from './browser.mjs';
import {compareSimFitness, nativeSimArgs} from './sim_fitness.mjs';

const [wgfuse, kernelDir, webRoot, outDir] = process.argv.slice(2);
if (!outDir) {
  console.error('usage: equivalence.mjs WGFUSE_BINARY KERNEL_DIR WEB_ROOT OUT_DIR');
  process.exit(2);
}
mkdirSync(outDir, {recursive: true});
const failures = [];
const fail = (msg) => {
  failures.push(msg);
  console.log(`FAIL ${msg}`);
};

const browser = await runInBrowser({
  wgfuse,
  webRoot,
  kernelDir,
  modules: ['/suites/dispatch.js', '/suites/sim.js', '/suites/tiny.js'],
  repeats: 1,
  chromium: process.env.WGFUSE_CHROMIUM ?? '/usr/bin/chromium',
});
writeFileSync(join(outDir, 'browser.json'), JSON.stringify(browser, null, 1));
console.log(`browser adapter: ${JSON.stringify(browser.adapter)}, features ${browser.features.join(' ')}`);
for (const e of browser.errors) fail(`WebGPU error in the browser: ${e}`);
for (const r of browser.results)
  if (!r.equivalence?.passed) fail(`browser ${r.suite} ${r.name}: ${JSON.stringify(r.equivalence)}`);

function native(args, name) {
  const json = join(outDir, `${name}.json`);
  execFileSync(wgfuse, [...args, '--json', json], {stdio: ['ignore', 'ignore', 'inherit']});
  return JSON.parse(readFileSync(json, 'utf8'));
}

for (const [workload, b] of Object.entries(browser.outputs.sim)) {
  const n = native(nativeSimArgs(workload, b), `native_sim_${workload}`);
  for (const {ok, line} of compareSimFitness(workload, b, n)) ok ? console.log(`ok   ${line}`) : fail(line);
}

for (const t of Object.values(browser.outputs.tiny)) {
  const n = native(
      [
        'tiny', '--d', `${t.d}`, '--layers', `${t.layers}`, '--heads', `${t.heads}`, '--seed', `${t.seed}`,
        '--prompt', t.prompt, '--tokens', `${t.tokens}`, '--sequences', `${t.sequences}`, '--repeats', '1',
        '--check'
      ],
      `native_tiny_d${t.d}`);
  if (!n.check?.pass) fail('native tiny: --check did not pass');
  for (const [strategy, ids] of Object.entries(t.generated_ids)) {
    const line =
        `tiny d=${t.d} ${t.layers} layers, ${t.tokens} tokens: browser ${strategy} vs native generated_ids`;
    if (JSON.stringify(ids) === JSON.stringify(n.generated_ids))
      console.log(`ok   ${line}`);
    else
      fail(`${line}: ${JSON.stringify(ids)} != ${JSON.stringify(n.generated_ids)}`);
  }
}

if (!Object.keys(browser.outputs.sim).length || !Object.keys(browser.outputs.tiny).length)
  fail('the browser produced no sim or tiny outputs to compare');
console.log(failures.length ? `${failures.length} failure(s)` : 'browser == native');
process.exit(failures.length ? 1 : 0);
