// The simulation playground (web/sim-playground.html) end to end in headless chromium (WebGPU on
// SwiftShader) against `wgfuse serve`: each example workload file (picked) and a file with per-step
// data in its header (tests/data/sim/tracker.wgsl, pasted) runs every strategy with its
// equivalence check passing, and its fitness equals native `wgfuse sim FILE --check` of the same
// sizes and seed (tests/web_equivalence/sim_fitness.mjs); a file that does not compile is refused
// with the line of the file shown, a header error with the field; a shared link brings the file
// back; a submission lands in suite sim-file, apart from the built-ins' figures.
//
//   node tests/web/playground.mjs --wgfuse build/wgfuse --examples examples/sim --out build/web-playground
import assert from 'node:assert/strict';
import {execFileSync} from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {fileURLToPath} from 'node:url';
import {parseArgs} from 'node:util';
import {chromium} from 'playwright-core';

import {compareSimFitness, nativeSimArgs} from '../web_equivalence/sim_fitness.mjs';

import {newPage, startServer, stopServer, waitForState} from './support.mjs';

const {values: opts} = parseArgs({
  options: {
    wgfuse: {type: 'string'},
    examples: {type: 'string'},
    out: {type: 'string'},
    chromium: {type: 'string', default: '/usr/bin/chromium'},
  },
});
if (!opts.wgfuse || !opts.examples || !opts.out) {
  console.error('usage: node playground.mjs --wgfuse BIN --examples DIR --out DIR [--chromium PATH]');
  process.exit(2);
}
fs.mkdirSync(opts.out, {recursive: true});
const step = (what) => console.log(`playground: ${what}`);
const RUN_TIMEOUT_MS = 120_000;
// Odd sizes, small enough for SwiftShader.
// The examples, picked as starting points, and a file with per-step data in its header, pasted.
const FILES = [
  {name: 'pendulum', pop: 67, steps: 23}, {name: 'option_pricer', pop: 129, steps: 17}, {
    name: 'tracker',
    pop: 37,
    steps: 7,
    pasted: fileURLToPath(new URL('../data/sim/tracker.wgsl', import.meta.url))
  }
];

async function openPlayground(browser, url, errors) {
  const page = await newPage(browser, errors);
  await page.goto(url);
  assert.equal(
      await waitForState(page, ['ready', 'unavailable', 'failed'], 30_000), 'ready',
      `the playground did not get ready: ${await page.textContent('body')}`);
  return page;
}

async function runFile(page, wanted) {
  await page.click('#run');
  const got = await waitForState(page, ['done', 'failed', 'rejected'], RUN_TIMEOUT_MS);
  assert.equal(got, wanted, `the run ended "${got}": ${await page.textContent('#workload-error')}`);
}

// Runs `file` in the page, picked (an example) or pasted, and compares it with native; returns the
// page, ready to submit.
async function runAndCompare(browser, base, {name, pop, steps, file, pasted}, errors) {
  const start = pasted ? '' : `start=example:${name}&`;
  const page = await openPlayground(
      browser, `${base}/sim-playground?${start}pop=${pop}&steps=${steps}&reps=1`, errors);
  if (pasted) {
    await page.fill('#source', fs.readFileSync(file, 'utf8'));
    await page.fill('#file-name', path.basename(file));
  }
  assert.equal(
      await page.inputValue('#source'), fs.readFileSync(file, 'utf8'), `${name}: the file is loaded`);
  await runFile(page, 'done');
  const rows = await page.$$eval(
      '#results-table tbody tr', (trs) => trs.map((tr) => ({
                                                    suite: tr.dataset.suite,
                                                    name: tr.dataset.name,
                                                    passed: tr.querySelector('[data-passed]').dataset.passed,
                                                  })));
  const strategies = rows.map((r) => r.name.split(' ')[1]);
  for (const s of ['perstep', 'batched', 'fused'])
    assert.ok(strategies.includes(s), `${name}: strategy ${s} ran (${strategies.join(', ')})`);
  for (const r of rows) {
    assert.equal(r.suite, 'sim-file', `${r.name}: a workload file's result is in suite sim-file`);
    assert.equal(r.passed, 'true', `${r.name}: its equivalence check passed`);
  }
  const outputs = await page.evaluate(() => window.playground.outputs);
  const b = outputs[name];
  assert.ok(b, `${name}: the page kept the fitness of its run (${Object.keys(outputs)})`);
  const json = path.join(opts.out, `native_${name}.json`);
  execFileSync(
      opts.wgfuse, [...nativeSimArgs(file, b), '--json', json], {stdio: ['ignore', 'ignore', 'inherit']});
  const compared = compareSimFitness(name, b, JSON.parse(fs.readFileSync(json, 'utf8')));
  for (const {ok, line} of compared) {
    step(`${ok ? 'ok  ' : 'FAIL'} ${line}`);
    assert.ok(ok, line);
  }
  await page.screenshot({path: path.join(opts.out, `${name}.png`), fullPage: true});
  return page;
}

// A file that does not compile is refused with its own line; a header error names the field.
async function refusals(page) {
  const text = await page.inputValue('#source');
  const lines = text.split('\n');
  const at = lines.findIndex((l) => l.startsWith('fn sim_init(')) + 1;
  assert.ok(at > 0, 'the example has a sim_init');
  lines.splice(at, 0, '  let broken: f32 = no_such_name;');
  await page.fill('#source', lines.join('\n'));
  await runFile(page, 'rejected');
  const compileError = await page.textContent('#workload-error');
  const name = await page.inputValue('#file-name');
  assert.ok(
      compileError.includes(`${name}:${at + 1}:`) && compileError.includes('no_such_name'),
      `the compile error is told at line ${at + 1} of ${name}: ${compileError}`);
  step(`a file that does not compile: "${compileError.split('\n')[0].slice(0, 160)}"`);

  await page.fill('#source', text.replace(/"name": "[a-z_]+",/, ''));
  await runFile(page, 'rejected');
  const headerError = await page.textContent('#workload-error');
  assert.match(headerError, new RegExp(`^${name.replace('.', '\\.')}: header field "name" must be a string`));
  step(`a header without its name: "${headerError}"`);
  await page.fill('#source', text);
}

async function shareLink(browser, page, errors) {
  const text = await page.inputValue('#source');
  await page.click('#share');
  const url = await page.getAttribute('#share-link', 'href');
  assert.ok(
      url.includes('#') && !url.split('#')[0].includes('w='), `the file travels in the fragment: ${url}`);
  const other = await openPlayground(browser, url, errors);
  assert.equal(await other.inputValue('#source'), text, 'the shared link brings the file back');
  assert.equal(await other.inputValue('#file-name'), await page.inputValue('#file-name'));
  await other.close();
  step(`a shared link of ${url.length} characters brings the file back`);
}

async function submit(base, page) {
  await page.click('#submit');
  await page.waitForSelector('#submit-status[data-submission-id]', {timeout: 30_000}).catch(async () => {
    throw new Error(`not submitted: ${await page.textContent('#submit-status')}`);
  });
  const id = await page.getAttribute('#submit-status', 'data-submission-id');
  const {rows} = await (await fetch(`${base}/api/results?submission=${id}`)).json();
  assert.ok(rows.length >= 3, `submission ${id} stored its results`);
  for (const r of rows) assert.equal(r.suite, 'sim-file', `${r.name}: stored in suite sim-file`);
  const builtins = await (await fetch(`${base}/api/results?suite=sim`)).json();
  assert.equal(builtins.total, 0, 'nothing of a workload file is among the built-ins\' figures');
  step(`submitted as ${id}: ${rows.map((r) => r.name).join(', ')} in suite sim-file`);
}

const server = await startServer(opts.wgfuse, [], step);
let browser;
try {
  browser = await chromium.launch(
      {executablePath: opts.chromium, headless: true, args: ['--enable-unsafe-webgpu']});
  const errors = [];
  let first;
  for (const f of FILES) {
    const file = f.pasted ?? path.join(opts.examples, `${f.name}.wgsl`);
    const page = await runAndCompare(browser, server.base, {...f, file}, errors);
    if (first)
      await page.close();
    else
      first = page;
  }
  await submit(server.base, first);
  await shareLink(browser, first, errors);
  await refusals(first);
  assert.deepEqual(errors, [], 'no page errors');
  step('passed');
} catch (e) {
  console.error(`playground: FAILED: ${e.stack ?? e}`);
  process.exitCode = 1;
} finally {
  await browser?.close();
  await stopServer(server);
}
