// End to end in a real browser: starts `wgfuse serve` on a free loopback port with a temporary
// database, drives Debian's chromium headless (WebGPU on SwiftShader) through playwright-core:
// opens the page, runs every quick suite, checks every equivalence check passed and the numbers
// are present, sees a rejected submission's reason, submits, finds the rows through
// GET /api/results, the CSV download and the results page, and checks that a browser without
// WebGPU gets the explanation. Screenshots go to --out.
//
//   node tests/web/e2e.mjs --wgfuse build/wgfuse --out build/web-e2e [--serve-arg ARG]...
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {fileURLToPath} from 'node:url';
import {parseArgs} from 'node:util';
import {chromium} from 'playwright-core';

import {newPage, startServer, state, stopServer, waitForState} from './support.mjs';

const {values: opts} = parseArgs({
  options: {
    wgfuse: {type: 'string'},
    out: {type: 'string'},
    chromium: {type: 'string', default: '/usr/bin/chromium'},
    'serve-arg': {type: 'string', multiple: true, default: []},
  },
});
if (!opts.wgfuse || !opts.out) {
  console.error('usage: node e2e.mjs --wgfuse BIN --out DIR [--chromium PATH] [--serve-arg ARG]...');
  process.exit(2);
}
if (!fs.existsSync(opts.chromium)) {
  console.error(`e2e: no browser at ${opts.chromium} (apt-get install chromium, or scripts/setup)`);
  process.exit(1);
}
const suitesDir = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../web/suites');
// The suite modules the page must load: every one that exists (tiny joins when it lands); each
// offers at least the suite of its name (dispatch.js also offers chain).
const expectedModules =
    ['dispatch', 'sim', 'tiny'].filter((id) => fs.existsSync(path.join(suitesDir, `${id}.js`)));
// A quick run on SwiftShader takes well under this; the whole test must stay under ~3 minutes.
const RUN_TIMEOUT_MS = 150_000;

fs.mkdirSync(opts.out, {recursive: true});
const step = (what) => console.log(`e2e: ${what}`);

async function benchmarkPage(browser, base, index) {
  const errors = [];
  const page = await newPage(browser, errors);
  await page.goto(`${base}/?quick=1`);
  assert.equal(
      await waitForState(page, ['ready', 'unavailable', 'failed'], 30_000), 'ready',
      `the page did not get ready: ${await page.textContent('#gpu-body')}`);
  assert.equal(await page.textContent('#kernel-version'), index.version, 'the page shows the kernel version');
  assert.equal(await page.textContent('#gpu-vendor'), 'google', 'SwiftShader reports vendor google');
  assert.equal(await page.textContent('#gpu-architecture'), 'swiftshader');
  const offered = await page.$$eval('#suite-select option', (os) => os.map((o) => o.value).filter(Boolean));
  assert.ok(expectedModules.length > 0, `no suite modules under ${suitesDir}`);
  const failures = await page.textContent('#suite-failures');
  for (const id of expectedModules) {
    assert.ok(offered.includes(id), `suite ${id} is offered (${failures})`);
    assert.ok(!failures.includes(`suite ${id} unavailable`), failures);
  }
  assert.ok(await page.isChecked('#quick'), '?quick=1 ticks quick');

  step(`running the quick suites: ${offered.join(', ')}`);
  const started = Date.now();
  await page.click('#run');
  const ran = await waitForState(page, ['done', 'failed'], RUN_TIMEOUT_MS);
  await page.screenshot({path: path.join(opts.out, 'benchmark.png'), fullPage: true});
  assert.equal(ran, 'done', `the run failed: ${await page.textContent('#results-body')}`);
  step(`the suites ran in ${((Date.now() - started) / 1000).toFixed(1)} s`);

  const rows = await page.$$eval(
      '#results-table tbody tr',
      (trs) => trs.map((tr) => ({
                         suite: tr.dataset.suite,
                         name: tr.dataset.name,
                         problem: tr.classList.contains('problem'),
                         title: tr.title,
                         median: tr.querySelector('.median').textContent,
                         unit: tr.querySelector('.unit').textContent,
                         ci: tr.querySelector('.ci').textContent,
                         equivalence: tr.querySelector('[data-passed]')?.textContent,
                         passed: tr.querySelector('[data-passed]')?.dataset.passed,
                       })));
  assert.ok(rows.length > 0, 'the run shows results');
  for (const id of offered) assert.ok(rows.some((r) => r.suite === id), `suite ${id} shows results`);
  for (const r of rows) {
    assert.equal(r.passed, 'true', `${r.suite}/${r.name}: equivalence passed`);
    assert.ok(!r.problem, `${r.suite}/${r.name}: ${r.title}`);
    assert.ok(r.median.endsWith(` ${r.unit}`), `${r.suite}/${r.name}: a median with its unit (${r.median})`);
    assert.match(
        r.ci, /^\d[\d.e+-]* – \d[\d.e+-]* \S.* \(\d+%\)$/, `${r.suite}/${r.name}: an interval (${r.ci})`);
  }
  // What each unit measures, in words.
  const unitOf = (suite) => rows.find((r) => r.suite === suite)?.unit;
  if (offered.includes('dispatch')) assert.equal(unitOf('dispatch'), 'µs per dispatch');
  if (offered.includes('sim')) {
    assert.equal(unitOf('sim'), 'generations/s');
    // The sim check names the test it applied: the relative tolerance and the figure against it.
    for (const r of rows.filter((r) => r.suite === 'sim'))
      assert.match(r.equivalence, /^✓ (bitwise|max rel \S+ \(rtol \S+\))/, `${r.name}: ${r.equivalence}`);
  }
  const heads = await page.$$eval('#results-table thead th', (ths) => ths.map((th) => th.textContent));
  for (const h of ['unit', 'speedup (× vs baseline)', 'GB/s vs copy bound (GB/s, %)'])
    assert.ok(heads.includes(h), `the results table has a column "${h}": ${heads.join(' | ')}`);
  if (offered.includes('chain')) {
    const kernels = await page.$eval('#roofline', (d) => Number(d.dataset.kernels ?? 0));
    assert.ok(
        kernels > 0 && (await page.$('#roofline canvas')), 'the roofline chart renders the chain kernels');
  }
  const speedups = rows.length && (await page.$$('#charts .chart canvas')).length;
  step(`${rows.length} results, equivalence passed for all; ${speedups} speedup chart(s)`);

  // A submission the server rejects shows the server's reason and can be sent again: the first
  // POST goes out with a failed equivalence check in it.
  let tampered = false;
  await page.route('**/api/results', async (route) => {
    if (tampered || route.request().method() !== 'POST') return route.continue();
    tampered = true;
    const body = JSON.parse(route.request().postData());
    body.results[0].equivalence.passed = false;
    await route.continue({postData: JSON.stringify(body)});
  });
  assert.ok(!(await page.isDisabled('#submit')), 'Submit is enabled after a clean run');
  await page.click('#submit');
  await page.waitForFunction(
      () => /^Not accepted/.test(document.getElementById('submit-status').textContent));
  const reason = await page.textContent('#submit-status');
  assert.match(reason, /400.*results\[0\]\.equivalence/, 'the rejection names the field');
  step(`a tampered submission was refused: ${reason}`);

  const posted = page.waitForRequest((r) => r.url().endsWith('/api/results') && r.method() === 'POST');
  await page.click('#submit');
  const submission = JSON.parse((await posted).postData());
  await page.waitForFunction(
      () => document.getElementById('submit-status').dataset.submissionId, null, {timeout: 10_000});
  const id = await page.$eval('#submit-status', (s) => s.dataset.submissionId);
  step(`submitted: ${await page.textContent('#submit-status')}`);
  await page.screenshot({path: path.join(opts.out, 'benchmark-submitted.png'), fullPage: true});
  assert.deepEqual(errors, [], 'no page errors');
  await page.close();
  return {id, submission};
}

async function checkApi(base, index, {id, submission}) {
  assert.equal(submission.source, 'browser');
  assert.equal(submission.results.length > 0, true);
  for (const r of submission.results) {
    assert.equal(r.kernel_version, index.version, `${r.suite}/${r.name}: kernel_version`);
    assert.equal(r.equivalence.passed, true);
    for (const f of ['median', 'min', 'max', 'std'])
      assert.ok(Number.isFinite(r[f]), `${r.suite}/${r.name}.${f}`);
  }
  const {total, rows} = await (await fetch(`${base}/api/results?limit=256`)).json();
  const ours = rows.filter((r) => String(r.submission_id) === id);
  assert.equal(total, submission.results.length, 'only our rows are in the fresh database');
  assert.equal(ours.length, submission.results.length, `every result of submission ${id} is stored`);
  for (const sent of submission.results) {
    const row = ours.find((r) => r.suite === sent.suite && r.name === sent.name);
    assert.ok(row, `row ${sent.suite}/${sent.name}`);
    for (const f of ['median', 'min', 'max', 'unit', 'kernel_version', 'dispatches', 'submits']) {
      assert.deepEqual(row[f], sent[f], `row ${sent.suite}/${sent.name}: ${f}`);
    }
    assert.deepEqual(row.samples, sent.samples, `row ${sent.suite}/${sent.name}: samples`);
    assert.equal(row.source, 'browser');
    assert.equal(row.vendor, 'google');
    assert.equal(row.equivalence.passed, true);
  }
  const csv = await (await fetch(`${base}/api/results?format=csv&limit=256`)).text();
  const lines = csv.trim().split(/\r?\n/);
  assert.match(lines[0], /(^|,)median(,|$)/, 'the CSV has a header row');
  assert.ok(lines.length >= submission.results.length + 1, 'the CSV has a line per row (at least)');
  step(`GET /api/results holds the ${ours.length} rows of submission ${id}; the CSV has ${
      lines.length} lines`);
}

async function resultsPage(browser, base, {id, submission}) {
  const errors = [];
  const page = await newPage(browser, errors);
  await page.goto(`${base}/results?submission=${id}&source=browser`);
  assert.equal(
      await waitForState(page, ['ready', 'failed'], 20_000), 'ready', await page.textContent('#rows-body'));
  const shown = await page.$$eval(
      '#rows-table tbody tr', (trs) => trs.map((tr) => ({
                                                 submission: tr.dataset.submission,
                                                 highlighted: tr.classList.contains('highlight'),
                                               })));
  const expected = Math.min(submission.results.length, 50);
  assert.equal(shown.length, expected, 'the results page shows the rows (first page)');
  assert.ok(shown.every((r) => r.submission === id && r.highlighted), 'our submission is highlighted');
  const groups =
      await page.$$eval('#summary-table tbody tr', (trs) => trs.map((tr) => tr.cells[0].textContent));
  assert.ok(groups.includes('google'), 'the summary by vendor has google');
  const csvHref = await page.getAttribute('#download-csv', 'href');
  assert.match(csvHref, /format=csv/);
  assert.match(csvHref, /source=browser/, 'the download follows the filters');
  // The permalink: this run beside the medians of its GPU (the only submission: its own medians,
  // count 1, where the server did not flag the row), and its roofline.
  assert.ok(await page.isVisible('#run-section'), 'the permalink shows the run section');
  assert.match(await page.getAttribute('#run-link', 'href'), new RegExp(`submission=${id}$`));
  const stored = (await (await fetch(`${base}/api/results?submission=${id}&limit=256`)).json()).rows;
  const run = await page.$$eval('#run-table tbody tr', (trs) => trs.map((tr) => ({
                                                                          suite: tr.dataset.suite,
                                                                          name: tr.dataset.name,
                                                                          mine: tr.cells[4].textContent,
                                                                          gpu: tr.cells[6].textContent,
                                                                          count: tr.cells[8].textContent,
                                                                        })));
  assert.equal(run.length, submission.results.length, 'the permalink shows every row of the run');
  for (const r of run) {
    const row = stored.find((s) => s.suite === r.suite && s.name === r.name);
    if (row.flags.length) continue;
    assert.equal(r.gpu, r.mine, `${r.suite}/${r.name}: the GPU's median of one submission is its own`);
    assert.equal(r.count, '1');
  }
  if (submission.results.some((r) => r.bandwidth_gbs != null))
    assert.ok(await page.$('#run-roofline canvas'), 'the permalink draws the roofline');
  const summaryHeads = await page.$$eval('#summary-table thead th', (ths) => ths.map((th) => th.textContent));
  assert.ok(
      summaryHeads.includes('unit') && summaryHeads.some((h) => h.includes('CI')), summaryHeads.join(' | '));
  await page.screenshot({path: path.join(opts.out, 'results.png'), fullPage: true});
  assert.deepEqual(errors, [], 'no page errors');
  step(`the results page shows ${shown.length} rows and ${groups.length} summary groups`);
  await page.close();
}

// Without --enable-unsafe-webgpu this headless chromium gives no adapter: the page explains.
async function unavailablePage(base) {
  const browser = await chromium.launch({executablePath: opts.chromium, headless: true});
  try {
    const page = await browser.newPage();
    await page.goto(base);
    assert.equal(await waitForState(page, ['ready', 'unavailable'], 30_000), 'unavailable');
    assert.match(await page.textContent('#gpu-unavailable'), /no adapter/);
    assert.match(await page.textContent('#gpu-body'), /enable-unsafe-webgpu/);
    assert.ok(await page.isDisabled('#run'));
    await page.screenshot({path: path.join(opts.out, 'unavailable.png'), fullPage: true});
    step('without WebGPU the page explains why and what to do');
  } finally {
    await browser.close();
  }
}

const server = await startServer(opts.wgfuse, opts['serve-arg'], step);
let browser;
try {
  const index = await (await fetch(`${server.base}/kernels/index.json`)).json();
  browser = await chromium.launch(
      {executablePath: opts.chromium, headless: true, args: ['--enable-unsafe-webgpu']});
  step(`chromium ${browser.version()}, kernels ${index.version}`);
  const submitted = await benchmarkPage(browser, server.base, index);
  await checkApi(server.base, index, submitted);
  await resultsPage(browser, server.base, submitted);
  await unavailablePage(server.base);
  step(`passed; screenshots in ${opts.out}`);
} catch (e) {
  console.error(`e2e: FAILED: ${e.stack ?? e}`);
  process.exitCode = 1;
} finally {
  await browser?.close();
  await stopServer(server);
}
