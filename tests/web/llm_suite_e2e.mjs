// The benchmark page's llm suite end to end in headless chromium (WebGPU on SwiftShader) against
// `wgfuse serve --model DIR|FILE.gguf`: the server's published check generation
// (GET /model/check.json) is `wgfuse generate`'s greedy run; the page offers the llm suite, runs it
// (quick), its check passes and its prefill and decode rates are there; the main thread's long tasks
// while it generates are reported (PerformanceObserver 'longtask', shown to see a task that does
// block); the results are submitted and
// stored; a submission claiming a check its tokens do not pass is refused, and an honestly failed
// one is kept flagged; /results shows the llm rows; a GGUF file's /chat loads.
// With --limits BYTES the model is served for that limit per buffer and binding: the plan stays
// within it, the weights are split over several buffers, and a limit below a buffer the model
// needs whole is refused, naming it.
//
//   node tests/web/llm_suite_e2e.mjs --wgfuse build/wgfuse --model DIR --out DIR [--chromium PATH]
//        [--chromium-arg ARG]... [--full] [--limits BYTES] [--serve-arg ARG]...
// On a GPU machine (a real model; --full: the full sizes and repetitions):
//   --chromium-arg=--enable-features=Vulkan --chromium-arg=--use-vulkan --full
import assert from 'node:assert/strict';
import {execFileSync, spawnSync} from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import {parseArgs} from 'node:util';
import {chromium} from 'playwright-core';

import {newPage, startServer, stopServer, waitForState} from './support.mjs';

const {values: opts} = parseArgs({
  options: {
    wgfuse: {type: 'string'},
    model: {type: 'string'},
    out: {type: 'string'},
    chromium: {type: 'string', default: '/usr/bin/chromium'},
    'chromium-arg': {type: 'string', multiple: true, default: []},
    full: {type: 'boolean', default: false},
    limits: {type: 'string'},
    'serve-arg': {type: 'string', multiple: true, default: []},
  },
});
if (!opts.wgfuse || !opts.model || !opts.out) {
  console.error('usage: node llm_suite_e2e.mjs --wgfuse BIN --model DIR --out DIR [--chromium PATH] [--full]');
  process.exit(2);
}
fs.mkdirSync(opts.out, {recursive: true});
const step = (what) => console.log(`llm suite e2e: ${what}`);
const RUN_TIMEOUT_MS = 300_000;

// A request on a connection of its own (the server closes idle ones while the slow steps run).
function getJson(url, {method = 'GET', body} = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, {method, agent: false, headers: body ? {'Content-Type': 'application/json'} : {}}, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({status: res.statusCode, body: JSON.parse(text)}));
    });
    req.on('error', reject);
    req.end(body);
  });
}

// The server's check is `wgfuse generate`'s greedy run (which ends early at a stop id).
function checkIsNative(check, stopIds) {
  const json = path.join(opts.out, 'native_check.json');
  execFileSync(opts.wgfuse, [
    'generate', '-m', opts.model, '--prompt-ids', check.prompt_ids.join(','), '-n', String(check.expected_ids.length),
    '--temp', '0', '--json', json,
  ], {stdio: ['ignore', 'inherit', 'inherit']});
  const native = JSON.parse(fs.readFileSync(json, 'utf8')).generated_ids;
  assert.deepEqual(native, check.expected_ids.slice(0, native.length), 'the check tokens are wgfuse generate\'s');
  if (native.length < check.expected_ids.length)
    assert.ok(stopIds.includes(native.at(-1)), `wgfuse generate stopped early at ${native.at(-1)}, not a stop id`);
  step(`check: prompt ${JSON.stringify(check.prompt_text)} ${check.prompt_ids.join(' ')} -> ${check.expected_ids.join(' ')} ` +
       `(wgfuse generate: ${native.length} of them, the same)`);
}

async function runSuite(browser, base) {
  const errors = [];
  const page = await newPage(browser, errors);
  // Every task over 50 ms on the main thread, from the page's start.
  await page.addInitScript(() => {
    window.longTasks = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) window.longTasks.push({start: e.startTime, ms: e.duration});
    }).observe({type: 'longtask', buffered: true});
  });
  await page.goto(`${base}/?suite=llm${opts.full ? '' : '&quick=1'}`);
  assert.equal(await waitForState(page, ['ready', 'unavailable', 'failed'], 60_000), 'ready', await page.textContent('#gpu-body'));
  const offered = await page.$$eval('#suite-select option', (os) => os.map((o) => o.value).filter(Boolean));
  assert.ok(offered.includes('llm'), `the llm suite is offered: ${offered.join(', ')}; ${await page.textContent('#suite-failures')}`);
  assert.equal(await page.$eval('#suite-select', (s) => s.value), 'llm');
  await page.click('#run');
  const ran = await waitForState(page, ['done', 'failed'], RUN_TIMEOUT_MS);
  await page.screenshot({path: path.join(opts.out, 'llm-suite.png'), fullPage: true});
  assert.equal(ran, 'done', `the run failed: ${await page.textContent('#results-body')}`);
  const rows = await page.$$eval('#results-table tbody tr', (trs) => trs.map((tr) => ({
    name: tr.dataset.name,
    suite: tr.dataset.suite,
    problem: tr.title,
    median: tr.querySelector('.median').textContent,
    equivalence: tr.querySelector('[data-passed]').textContent,
    passed: tr.querySelector('[data-passed]').dataset.passed,
  })));
  for (const r of rows) step(`${r.name}: ${r.median}, ${r.equivalence}`);
  assert.deepEqual(rows.map((r) => r.suite), ['llm', 'llm']);
  for (const r of rows) {
    assert.equal(r.passed, 'true', `${r.name}: ${r.equivalence}`);
    assert.equal(r.problem, '', r.name);
    assert.match(r.median, /^\d[\d.e+]* tokens\/s$/, r.name);
  }
  // The long tasks that overlap the suite's generations (the check and the timed repetitions).
  const long = await page.evaluate(() => {
    const [start] = performance.getEntriesByName('wgfuse-llm-generation-start');
    const [end] = performance.getEntriesByName('wgfuse-llm-generation-end');
    return window.longTasks.filter((t) => t.start + t.ms >= start.startTime && t.start <= end.startTime);
  });
  const longest = Math.max(0, ...long.map((t) => t.ms));
  // Reported, not asserted: a long task is wall-clock time, and on a loaded CPU-only machine (CI's two
  // cores, SwiftShader beside the page) it includes the time the thread waited to be scheduled. The
  // 100 ms target is judged on a GPU (bench/baselines/chat_load.mjs, docs/RESULTS.md).
  step(`main thread while generating: ${long.length} tasks over 50 ms, the longest ${longest.toFixed(0)} ms` +
       (longest > 100 ? ' (over the 100 ms target: a loaded machine, or a stall to look at)' : ''));
  // The observer sees a task that does block (so that the figure above can fail).
  const t1 = await page.evaluate(() => {
    setTimeout(() => {
      const t = performance.now();
      while (performance.now() - t < 150);
    }, 0);
    return performance.now();
  });
  await page.waitForFunction((t) => window.longTasks.some((e) => e.start >= t && e.ms >= 150), t1);

  // A submission claiming a check its tokens fail is refused; then the page's own is stored.
  let tampered = false;
  await page.route('**/api/results', async (route) => {
    if (tampered || route.request().method() !== 'POST') return route.continue();
    tampered = true;
    const body = JSON.parse(route.request().postData());
    body.results[1].equivalence.tokens[0] ^= 1;
    await route.continue({postData: JSON.stringify(body)});
  });
  await page.click('#submit');
  await page.waitForFunction(() => /^Not accepted/.test(document.getElementById('submit-status').textContent));
  const reason = await page.textContent('#submit-status');
  assert.match(reason, /400.*results\[1\]\.equivalence\.passed: true, but the tokens differ from the server's native run/);
  step(`a lying submission was refused: ${reason}`);
  const posted = page.waitForRequest((r) => r.url().endsWith('/api/results') && r.method() === 'POST');
  await page.click('#submit');
  const submission = JSON.parse((await posted).postData());
  await page.waitForFunction(() => document.getElementById('submit-status').dataset.submissionId, null, {timeout: 10_000});
  const id = await page.$eval('#submit-status', (s) => s.dataset.submissionId);
  assert.deepEqual(errors, [], 'no page errors');
  await page.close();
  return {id, submission, longest};
}

// The plan made for --limits stays within them, with the weights in several buffers; a limit
// below what a buffer needs whole stops the server with the buffer and the limit named.
async function checkLimits(base, index) {
  const limit = Number(opts.limits);
  const {body: plan} = await getJson(`${base}/model/plan.json?prompt_length=8`);
  const need = plan.device.limits;
  assert.ok(need.maxBufferSize <= limit && need.maxStorageBufferBindingSize <= limit, JSON.stringify(need));
  const weights = new Set(index.shards.map((s) => s.buffer));
  assert.ok(weights.size >= 2, `the weights are split over buffers: ${[...weights].join(', ')}`);
  step(`--limits ${limit}: the plan needs ${JSON.stringify(need)}, the weights in ${weights.size} buffers`);
  const db = path.join(opts.out, 'refused.sqlite');
  const refused = spawnSync(opts.wgfuse, ['serve', '--port', '0', '--db', db, '--model', opts.model, '--limits', '8192'],
                            {encoding: 'utf8', timeout: 120_000});
  assert.equal(refused.status, 1, refused.stderr);
  assert.match(refused.stderr, /--limits 8192: .*(above the planned limit of 8192 bytes|exceeds the per-buffer cap of 8192)/);
  step(`--limits 8192 refused: ${refused.stderr.trim().split('\n').at(-1)}`);
}

const serveArgs = ['--model', opts.model, ...(opts.limits ? ['--limits', opts.limits] : []), ...opts['serve-arg']];
const server = await startServer(opts.wgfuse, serveArgs, step, 180_000);
let browser;
try {
  const {body: check} = await getJson(`${server.base}/model/check.json`);
  const {body: index} = await getJson(`${server.base}/model/index.json`);
  assert.equal(check.model, index.name);
  checkIsNative(check, index.stop_ids);
  if (opts.limits) await checkLimits(server.base, index);

  browser = await chromium.launch(
      {executablePath: opts.chromium, headless: true, args: ['--enable-unsafe-webgpu', ...opts['chromium-arg']]});
  const {id, submission} = await runSuite(browser, server.base);

  const {body: stored} = await getJson(`${server.base}/api/results?submission=${id}`);
  assert.deepEqual(stored.rows.map((r) => r.name).sort(), [`${index.name} decode`, `${index.name} prefill`]);
  for (const r of stored.rows) {
    assert.equal(r.suite, 'llm');
    assert.equal(r.equivalence.passed, true);
    assert.deepEqual(r.equivalence.tokens, check.expected_ids);
    assert.deepEqual(r.flags, [], `${r.name}: ${r.flags}`);
  }
  step(`submission ${id} stored: ${stored.rows.map((r) => `${r.name} ${r.median.toFixed(1)} tok/s`).join(', ')}`);

  // An honest failure (other tokens, passed false, the count of differing ones) is kept, flagged.
  const failed = structuredClone(submission);
  for (const r of failed.results) {
    r.equivalence.tokens = r.equivalence.tokens.map((t, i) => (i === 2 ? t ^ 1 : t));
    Object.assign(r.equivalence, {passed: false, max_abs_diff: 1});
  }
  const posted = await getJson(`${server.base}/api/results`, {method: 'POST', body: JSON.stringify(failed)});
  assert.equal(posted.status, 201, JSON.stringify(posted.body));
  assert.equal(posted.body.flagged, 2);
  const {body: flagged} = await getJson(`${server.base}/api/results?suite=llm&flagged=yes`);
  assert.equal(flagged.total, 2);
  assert.match(flagged.rows[0].flags.join(' '), /equivalence\.passed: the check failed/);
  step(`an honestly failed check is stored flagged: ${flagged.rows[0].flags[0]}`);

  // A GGUF file's /chat loads with the tokenizer the server makes of its metadata (the weights
  // split over several buffers where --limits says).
  if (opts.model.endsWith('.gguf')) {
    const chatErrors = [];
    const chat = await newPage(browser, chatErrors);
    await chat.goto(`${server.base}/chat`);
    assert.equal(await waitForState(chat, ['ready', 'unavailable', 'failed'], 120_000), 'ready',
                 await chat.textContent('#model-body'));
    step(`/chat on a GGUF file: ${await chat.textContent('#progress-label')}`);
    assert.deepEqual(chatErrors, []);
    await chat.close();
  }

  // /results shows the llm rows, the failed ones marked.
  const errors = [];
  const page = await newPage(browser, errors);
  await page.goto(`${server.base}/results?suite=llm`);
  assert.equal(await waitForState(page, ['ready', 'failed'], 20_000), 'ready');
  const cells = await page.$$eval('#rows-table tbody tr', (trs) => trs.map((tr) => tr.textContent));
  assert.equal(cells.length, 4, cells.join('\n'));
  assert.ok(cells.some((c) => c.includes('✗')) && cells.some((c) => c.includes('✓')), cells.join('\n'));
  await page.screenshot({path: path.join(opts.out, 'llm-results.png'), fullPage: true});
  assert.deepEqual(errors, []);
  step('passed');
} catch (e) {
  console.error(`llm suite e2e: FAILED: ${e.stack ?? e}`);
  process.exitCode = 1;
} finally {
  await browser?.close();
  await stopServer(server);
}
