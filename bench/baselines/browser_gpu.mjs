// The browser half of bench/baselines/browser_gpu.sh: against a running `wgfuse serve --model`,
// headless chromium (the flags of --chromium-arg: on an NVIDIA machine, WebGPU on Vulkan) reports
// its WebGPU adapter (refused unless it matches --adapter), runs the benchmark page's suites one
// at a time at their full sizes and submits each (the results as posted, samples included), then
// loads /chat twice (the second visit from the cache) and times page load to first token.
// Writes OUT/browser.json.
//
//   node bench/baselines/browser_gpu.mjs --base http://127.0.0.1:PORT --chromium PATH --out DIR
//        [--chromium-arg ARG]... [--suites llm,sim,dispatch] [--adapter REGEX] [--quick]
import fs from 'node:fs';
import path from 'node:path';
import {parseArgs} from 'node:util';
import {chromium} from 'playwright-core';

const {values: opts} = parseArgs({
  options: {
    base: {type: 'string'},
    chromium: {type: 'string'},
    out: {type: 'string'},
    'chromium-arg': {type: 'string', multiple: true, default: []},
    suites: {type: 'string', default: 'llm,sim,dispatch'},
    adapter: {type: 'string', default: 'nvidia'},
    quick: {type: 'boolean', default: false},
  },
});
if (!opts.base || !opts.chromium || !opts.out) {
  console.error('usage: node browser_gpu.mjs --base URL --chromium PATH --out DIR [--chromium-arg ARG]...');
  process.exit(2);
}
fs.mkdirSync(opts.out, {recursive: true});
const step = (what) => console.log(`browser_gpu: ${what}`);
const RUN_TIMEOUT_MS = 540_000;
const PROMPT = [5, 17, 301, 44, 9, 230, 7];

const report = {chromium_args: opts['chromium-arg'], adapter: null, suites: {}, chat: {}, errors: []};
const save = () => fs.writeFileSync(path.join(opts.out, 'browser.json'), JSON.stringify(report, null, 1));
const browser = await chromium.launch({executablePath: opts.chromium, headless: true, args: opts['chromium-arg']});
let failed = false;
try {
  const page = await browser.newPage({viewport: {width: 1280, height: 900}});
  page.on('pageerror', (e) => report.errors.push(`page error: ${e.message}`));
  page.on('console', (m) => m.type() === 'error' && report.errors.push(`console: ${m.text()}`));
  report.user_agent = await page.evaluate(() => navigator.userAgent);

  await page.goto(`${opts.base}/`);
  await page.waitForFunction(() => ['ready', 'unavailable', 'failed'].includes(document.body.dataset.state), null,
                             {timeout: 120_000});
  report.adapter = await page.evaluate(async () => {
    const a = await navigator.gpu?.requestAdapter({powerPreference: 'high-performance'});
    if (!a) return null;
    const {vendor, architecture, device, description} = a.info ?? {};
    return {vendor, architecture, device, description, fallback: a.info?.isFallbackAdapter ?? null,
            features: [...a.features].sort(), maxStorageBufferBindingSize: a.limits.maxStorageBufferBindingSize,
            maxBufferSize: a.limits.maxBufferSize};
  });
  step(`adapter: ${JSON.stringify(report.adapter)}`);
  save();
  const wanted = new RegExp(opts.adapter, 'i');
  if (!report.adapter || !wanted.test(`${report.adapter.vendor} ${report.adapter.description}`))
    throw new Error(`navigator.gpu.requestAdapter() gave ${JSON.stringify(report.adapter)}, not /${opts.adapter}/i ` +
                    `(page state ${await page.evaluate(() => document.body.dataset.state)})`);

  for (const suite of opts.suites.split(',')) {
    const offered = await page.$$eval('#suite-select option', (os) => os.map((o) => o.value).filter(Boolean));
    if (!offered.includes(suite)) {
      report.suites[suite] = {error: `not offered (offered: ${offered.join(', ')})`};
      failed = true;
      continue;
    }
    await page.selectOption('#suite-select', suite);
    await page.setChecked('#quick', opts.quick);
    step(`running ${suite}${opts.quick ? ' (quick)' : ''}`);
    const t0 = Date.now();
    await page.click('#run');
    await page.waitForFunction(() => ['done', 'failed'].includes(document.body.dataset.state), null,
                               {timeout: RUN_TIMEOUT_MS});
    const state = await page.evaluate(() => document.body.dataset.state);
    const entry = {state, seconds: (Date.now() - t0) / 1e3};
    entry.rows = await page.$$eval('#results-table tbody tr', (trs) => trs.map((tr) => ({
      name: tr.dataset.name,
      median: tr.querySelector('.median')?.textContent,
      unit: tr.querySelector('.unit')?.textContent,
      passed: tr.querySelector('[data-passed]')?.dataset.passed,
    })));
    if (state === 'done' && !(await page.isDisabled('#submit'))) {
      const posted = page.waitForRequest((r) => r.url().endsWith('/api/results') && r.method() === 'POST');
      await page.click('#submit');
      entry.submitted = JSON.parse((await posted).postData());
    } else {
      entry.problem = await page.textContent('#results-body');
      failed = true;
    }
    report.suites[suite] = entry;
    step(`${suite}: ${state} in ${entry.seconds.toFixed(1)} s: ` +
         entry.rows.map((r) => `${r.name} ${r.median}`).join('; '));
    save();
  }

  // /chat: the first visit downloads the shards, the second takes them from the cache.
  if (await page.evaluate(async () => (await fetch('/model/index.json')).ok)) {
    await page.evaluate(async () => (await import('/chat/model_client.js')).clearCache());  // the llm suite cached them
    for (const visit of ['first', 'cached']) {
      if (visit === 'first') await page.goto(`${opts.base}/chat`);
      else await page.reload();
      await page.waitForFunction(() => ['ready', 'unavailable', 'failed'].includes(document.body.dataset.state), null,
                                 {timeout: RUN_TIMEOUT_MS});
      const state = await page.evaluate(() => document.body.dataset.state);
      if (state !== 'ready') {
        report.chat[visit] = {state, text: await page.textContent('#model-body')};
        failed = true;
        break;
      }
      const ready = await page.evaluate(() => window.wgfuseChat.readyMs());
      const first = await page.evaluate((ids) => window.wgfuseChat.generateIds(ids, 1), PROMPT);
      report.chat[visit] = {
        ready_ms: ready,
        first_token_ms: first.timing.first_token_ms,  // its plan fetched, new kernels compiled, prefill
        load_to_first_token_s: (ready + first.timing.first_token_ms) / 1e3,
        progress: await page.textContent('#progress-label'),
        phases: await page.evaluate(() => window.wgfuseChat.phases?.()),
      };
      step(`chat, ${visit} visit: ${JSON.stringify(report.chat[visit])}`);
      save();
    }
  }
} catch (e) {
  report.errors.push(`driver: ${e.message}`);
  failed = true;
} finally {
  save();
  await browser.close();
}
if (report.errors.length) step(`errors: ${report.errors.join(' | ')}`);
process.exit(failed || report.errors.length ? 1 : 0);
