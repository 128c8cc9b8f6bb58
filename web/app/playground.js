// The simulation playground (web/sim-playground.html): a workload file pasted or picked (the
// examples and the built-ins as starting points), expanded by the server's native loader
// (lib/sim_workload.js), run per step, batched, fused and as a team on the visitor's GPU by the
// sim suite's own runner (suites/sim.js runWorkload), checked, shared by a link that holds the file
// in its fragment (never sent to the server), and submitted as suite "sim-file".
import {expandWorkload, MAX_WORKLOAD_BYTES, WorkloadError} from '../suites/lib/sim_workload.js';
import {runWorkload, WORKLOADS} from '../suites/sim.js';

import {describeAdapter, openDevice} from './adapter.js';
import {el, fill} from './format.js';
import {loadKernels} from './kernels.js';
import {PAGE_VERSION, submitPassedRows} from './submit.js';
import {resultProblems} from './suite.js';
import {resultsTable} from './table.js';

const $ = (id) => document.getElementById(id);
const page = {
  device: null,
  adapter: null,
  kernels: null,
  rows: [],
  outputs: {}
};
// What the end-to-end test reads: the fitness of every strategy of the last run.
window.playground = page;

const EXAMPLES = ['pendulum', 'option_pricer'];
// A shared link's fragment: at most this many characters are decoded.
const MAX_FRAGMENT_CHARS = 128 * 1024;

function setState(state) { document.body.dataset.state = state; }

function utf8Bytes(text) { return new TextEncoder().encode(text).length; }

// base64url of the raw-deflated UTF-8 text, and back (bounded by MAX_WORKLOAD_BYTES).
async function pack(text) {
  const stream = new Blob([text]).stream().pipeThrough(new CompressionStream('deflate-raw'));
  const bytes = new Uint8Array(await new Response(stream).arrayBuffer());
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
}

async function unpack(packed) {
  if (packed.length > MAX_FRAGMENT_CHARS)
    throw new Error(`the link's file is over ${MAX_FRAGMENT_CHARS} characters`);
  const binary = atob(packed.replaceAll('-', '+').replaceAll('_', '/'));
  const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
  const reader = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate-raw')).getReader();
  const chunks = [];
  let total = 0;
  for (;;) {
    const {done, value} = await reader.read();
    if (done) break;
    total += value.length;
    if (total > MAX_WORKLOAD_BYTES) {
      await reader.cancel();
      throw new Error(`the link's file is over ${MAX_WORKLOAD_BYTES} bytes`);
    }
    chunks.push(value);
  }
  return new TextDecoder('utf-8', {fatal: true}).decode(await new Blob(chunks).arrayBuffer());
}

// The starting points: the examples (examples/sim, served at /examples/sim/) and the built-ins.
function startingPoints() {
  return [
    ...EXAMPLES.map((name) => ({
                      id: `example:${name}`,
                      label: `example: ${name}`,
                      file: `${name}.wgsl`,
                      fetch: () => fetch(`/examples/sim/${name}.wgsl`).then((r) => {
                        if (!r.ok) throw new Error(`/examples/sim/${name}.wgsl: HTTP ${r.status}`);
                        return r.text();
                      })
                    })),
    ...WORKLOADS.map(({family}) => ({
                       id: `builtin:${family}`,
                       label: `built-in: ${family.slice(4)}`,
                       file: `${family.slice(4)}.wgsl`,
                       fetch: () => page.kernels.get(family)
                     })),
  ];
}

async function pick(point) {
  $('workload-error').textContent = '';
  $('source').value = await point.fetch();
  $('file-name').value = point.file;
}

function showError(message) { $('workload-error').textContent = message; }

function onProgress(fraction, label) {
  $('progress').value = fraction;
  $('progress-label').textContent = label;
}

// The size inputs as integers within their bounds, or an Error naming the field.
function sizes() {
  const read = (id) => {
    const input = $(id), v = Number(input.value);
    if (!Number.isInteger(v) || v < Number(input.min) || v > Number(input.max))
      throw new Error(`${id}: an integer from ${input.min} to ${input.max}, not "${input.value}"`);
    return v;
  };
  return {pop: read('pop'), steps: read('steps'), reps: read('reps')};
}

async function run() {
  showError('');
  $('submit').disabled = true;
  $('submit-status').textContent = '';
  fill($('results-body'));
  const text = $('source').value;
  let sz;
  try {
    sz = sizes();
    if (utf8Bytes(text) > MAX_WORKLOAD_BYTES)
      throw new Error(`the file is ${utf8Bytes(text)} bytes, over the limit of ${MAX_WORKLOAD_BYTES}`);
  } catch (e) {
    showError(e.message);
    return;
  }
  setState('running');
  $('run').disabled = true;
  const scopes = ['validation', 'out-of-memory', 'internal'];
  scopes.forEach((filter) => page.device.pushErrorScope(filter));
  page.outputs = {};
  let rows = [], failure = null;
  try {
    onProgress(0, 'expanding the file on the server');
    const w = await expandWorkload(text, $('file-name').value.trim() || 'workload.wgsl');
    const results = await runWorkload(
        page.device, page.kernels.version, w, {pop: sz.pop, steps: sz.steps}, sz.reps,
        (label) => onProgress(0.5, label), page.outputs, 'sim-file');
    rows = results.map((result) => ({result, problems: resultProblems(result)}));
  } catch (e) {
    failure = e instanceof WorkloadError ? e.message : `${e.message}`;
  }
  for (const filter of scopes) {
    const e = await page.device.popErrorScope();
    if (e) failure = (failure ? `${failure}\n` : '') + `device error: ${e.message}`;
  }
  onProgress(1, failure ? 'failed' : 'done');
  page.rows = rows;
  if (failure) showError(failure);
  if (rows.length) fill($('results-body'), resultsTable(rows));
  const passed = rows.filter((r) => !r.problems.length).length;
  $('submit').disabled = !passed || !!failure;
  $('run').disabled = false;
  setState(failure ? 'rejected' : rows.every((r) => r.result.equivalence.passed) ? 'done' : 'failed');
}

async function share() {
  const text = $('source').value;
  if (utf8Bytes(text) > MAX_WORKLOAD_BYTES) {
    $('share-status').textContent = `not shared: the file is over ${MAX_WORKLOAD_BYTES} bytes`;
    return;
  }
  const params = new URLSearchParams(
      {name: $('file-name').value.trim(), pop: $('pop').value, steps: $('steps').value, w: await pack(text)});
  const url = `${location.origin}${location.pathname}#${params}`;
  history.replaceState(null, '', url);
  $('share-status').textContent = '';
  $('share-status')
      .append(
          'Link (the file travels in the fragment, never to the server): ',
          el('a', {href: url, id: 'share-link'}, `${url.length} characters`));
  await navigator.clipboard?.writeText(url).catch(() => {});
}

async function submit() {
  await submitPassedRows(
      {adapter: page.adapter, rows: page.rows, status: $('submit-status'), button: $('submit')});
}

// A shared link's file, pop and steps (#name=…&pop=…&steps=…&w=…); false where the URL has none.
async function fromFragment() {
  const params = new URLSearchParams(location.hash.slice(1));
  if (!params.has('w')) return false;
  $('source').value = await unpack(params.get('w'));
  if (params.has('name')) $('file-name').value = params.get('name');
  for (const k of ['pop', 'steps'])
    if (params.has(k)) $(k).value = params.get(k);
  return true;
}

async function main() {
  setState('loading');
  $('page-version').textContent = PAGE_VERSION;
  $('run').addEventListener('click', run);
  $('share').addEventListener('click', share);
  $('submit').addEventListener('click', submit);
  const query = new URLSearchParams(location.search);
  for (const k of ['pop', 'steps', 'reps'])
    if (query.has(k)) $(k).value = query.get(k);
  const [gpu, kernels] = await Promise.allSettled([openDevice(), loadKernels()]);
  if (kernels.status === 'rejected') throw kernels.reason;
  page.kernels = kernels.value;
  const points = startingPoints();
  fill(
      $('start'), el('option', {value: ''}, '(choose)'),
      points.map((p) => el('option', {value: p.id}, p.label)));
  $('start').addEventListener('change', () => {
    const point = points.find((p) => p.id === $('start').value);
    if (point) pick(point).catch((e) => showError(e.message));
  });
  try {
    if (!await fromFragment()) {
      const wanted = points.find((p) => p.id === query.get('start')) ?? points[0];
      $('start').value = wanted.id;
      await pick(wanted);
    }
  } catch (e) {
    showError(`the shared link's file could not be read: ${e.message}`);
  }
  $('share').disabled = false;
  if (gpu.status === 'rejected') {
    fill(
        $('gpu-body'),
        el('span', {class: 'bad', id: 'gpu-unavailable'}, `WebGPU is unavailable: ${gpu.reason.message}`));
    setState('unavailable');
    return;
  }
  ({adapter: page.adapter, device: page.device} = gpu.value);
  const info = describeAdapter(page.adapter);
  $('gpu-body').textContent = [info.vendor, info.architecture, info.description].filter(Boolean).join(' · ') +
      ` (${info.features.join(', ') || 'no optional features'})`;
  page.device.lost.then((lost) => {
    $('device-errors')
        .append(el('li', {class: 'bad'}, `device lost (${lost.reason}): ${lost.message}; reload the page`));
    $('run').disabled = true;
  });
  $('run').disabled = false;
  setState('ready');
}

main().catch((e) => {
  $('device-errors').append(el('li', {class: 'bad'}, `page error: ${e.message}`));
  setState('failed');
});
