// The benchmark page (web/index.html): detects WebGPU, shows the adapter and the kernel version,
// runs the suites, shows the results as a table and speedup charts, and submits them.
import {describeAdapter, openDevice, WebGPUUnavailable} from './adapter.js';
import {barChart, rooflineChart} from './charts.js';
import {el, fill} from './format.js';
import {loadKernels} from './kernels.js';
import {runSuites} from './runner.js';
import {failedNames, PAGE_VERSION, submitPassedRows} from './submit.js';
import {loadSuites} from './suite.js';
import {resultsTable} from './table.js';

const $ = (id) => document.getElementById(id);
const page = {
  device: null,
  adapter: null,
  kernels: null,
  suites: [],
  rows: []
};

function setState(state) { document.body.dataset.state = state; }

function showAdapter(adapter) {
  const info = describeAdapter(adapter);
  const dl =
      el('dl', {class: 'facts'},
         ['vendor', 'architecture', 'device', 'description'].map(
             (k) => [el('dt', {}, k), el('dd', {id: `gpu-${k}`}, info[k] || '—')]),
         el('dt', {}, 'kind'),
         el('dd', {}, adapter.info?.isFallbackAdapter ? 'fallback (software) adapter' : 'hardware adapter'));
  const limitRow = ([name, value]) =>
      el('tr', {}, el('th', {}, name), el('td', {class: 'num'}, value.toLocaleString('en')));
  const limits = el('table', {class: 'limits'}, el('tbody', {}, Object.entries(info.limits).map(limitRow)));
  const features = el('ul', {class: 'features'}, info.features.map((f) => el('li', {}, f)));
  fill($('gpu-body'), dl, el('h3', {}, 'Features'), features, el('h3', {}, 'Key limits'), limits);
}

function showUnavailable(error) {
  const advice = error instanceof WebGPUUnavailable ? error.advice : [];
  fill(
      $('gpu-body'),
      el('p', {class: 'bad', id: 'gpu-unavailable'}, `WebGPU is unavailable: ${error.message}`),
      advice.length ? el('ul', {class: 'advice'}, advice.map((a) => el('li', {}, a))) : null,
      el('p', {}, `Browser: ${navigator.userAgent}`));
}

function showKernels(kernels) {
  $('kernel-version').textContent = kernels.version;
  $('kernel-count').textContent = `${kernels.names.length} kernel families`;
}

function showSuites({loaded, failed}) {
  const select = $('suite-select');
  fill(
      select, el('option', {value: ''}, loaded.length ? 'all suites' : 'no suites available'),
      loaded.map((s) => el('option', {value: s.id}, s.title)));
  fill(
      $('suite-failures'),
      failed.map((f) => el('li', {class: 'bad'}, `suite ${f.id} unavailable: ${f.reason}`)));
}

function onProgress(fraction, label) {
  $('progress').value = fraction;
  $('progress-label').textContent = `${Math.round(fraction * 100)}% — ${label}`;
}

// One chart of speedups per suite. The boxes are all placed before any chart is drawn, so that
// each chart takes the width of its own grid cell; a suite with many bars gets a whole row.
function showCharts(rows) {
  const bySuite = new Map();
  for (const {result: r} of rows) {
    if (r.speedup == null) continue;
    if (!bySuite.has(r.suite)) bySuite.set(r.suite, []);
    bySuite.get(r.suite).push(r);
  }
  const boxes = [...bySuite].map(
      ([suite, results]) =>
          [el('div', {class: results.length > 6 ? 'chart wide' : 'chart', dataset: {suite}}), suite,
           results]);
  fill($('charts'), boxes.map(([box]) => box));
  for (const [box, suite, results] of boxes) {
    // Label the bars by variant alone when they share one baseline.
    const baselines = new Set(results.map((r) => r.baseline));
    const shared = baselines.size === 1 ? [...baselines][0] : null;
    barChart(box, {
      title: `${suite}: speedup vs ${shared ?? 'baseline'}`,
      ratio: true,
      labels: results.map((r) => (shared ? r.name : `${r.name} vs ${r.baseline}`)),
      values: results.map((r) => r.speedup)
    });
  }
}

function showRun(rows, errors) {
  fill(
      $('results-body'),
      errors.length ? el('ul', {class: 'errors'},
                         errors.map((e) => el('li', {class: 'bad'}, `${e.suite}: ${e.message}`))) :
                      null,
      rows.length ? resultsTable(rows) : el('p', {}, 'No results.'));
  showCharts(rows);
  rooflineChart($('roofline'), rows.map((r) => r.result));
  const failed = rows.filter((r) => r.problems.length);
  const passed = rows.length - failed.length;
  $('submit').disabled = !passed;
  $('submit-status').textContent = !rows.length ? '' :
      failed.length ? `${passed} of ${rows.length} results passed their checks and are ready to submit; ` +
          `not submitted, as they failed (hover the red rows): ${failedNames(failed)}.` :
                      `${rows.length} results ready to submit.`;
  const kept = rows.filter((r) => !r.problems.length && r.result.equivalence?.passed === false);
  if (kept.length)
    $('submit-status').textContent += ` Submitted with a failed check (the server keeps them, flagged): ${failedNames(kept)}.`;
}

async function run() {
  const only = $('suite-select').value;
  const suites = page.suites.filter((s) => !only || s.id === only);
  if (!suites.length) return;
  setState('running');
  $('run').disabled = true;
  $('submit').disabled = true;
  $('submit-status').textContent = '';
  const {rows, errors} = await runSuites(
      suites, {device: page.device, kernels: page.kernels, quick: $('quick').checked, onProgress});
  page.rows = rows;
  showRun(rows, errors);
  $('run').disabled = false;
  setState(errors.length ? 'failed' : 'done');
}

async function submit() {
  await submitPassedRows({adapter: page.adapter, rows: page.rows, status: $('submit-status'), button: $('submit')});
}

async function main() {
  setState('loading');
  $('page-version').textContent = PAGE_VERSION;
  const params = new URLSearchParams(location.search);
  $('quick').checked = params.get('quick') === '1';
  $('run').addEventListener('click', run);
  $('submit').addEventListener('click', submit);
  const [gpu, kernels, suites] = await Promise.allSettled([openDevice(), loadKernels(), loadSuites()]);
  if (kernels.status === 'fulfilled') {
    page.kernels = kernels.value;
    showKernels(page.kernels);
  } else {
    $('kernel-version').textContent = `unavailable: ${kernels.reason.message}`;
  }
  page.suites = suites.status === 'fulfilled' ? suites.value.loaded : [];
  showSuites(
      suites.status === 'fulfilled' ? suites.value :
                                      {loaded: [], failed: [{id: 'all', reason: suites.reason.message}]});
  if (params.get('suite')) $('suite-select').value = params.get('suite');
  if (gpu.status === 'rejected') {
    showUnavailable(gpu.reason);
    setState('unavailable');
    return;
  }
  ({adapter: page.adapter, device: page.device} = gpu.value);
  showAdapter(page.adapter);
  page.device.addEventListener('uncapturederror', (e) => {
    $('device-errors').append(el('li', {class: 'bad'}, `device error: ${e.error.message}`));
  });
  page.device.lost.then((info) => {
    $('device-errors')
        .append(el('li', {class: 'bad'}, `device lost (${info.reason}): ${info.message}; reload the page`));
    $('run').disabled = true;
  });
  $('run').disabled = !page.kernels || !page.suites.length;
  setState('ready');
}

main().catch((e) => {
  $('device-errors').append(el('li', {class: 'bad'}, `page error: ${e.message}`));
  setState('failed');
});
