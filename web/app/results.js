// The results page (web/results.html): every submission, filtered through GET /api/results, the
// medians per vendor / GPU / backend / browser / source from GET /api/summary with a chart, and
// CSV and JSON downloads of the filtered rows. The filters live in the URL, so a view can be shared;
// ?submission=ID is a submission's permalink: its run beside the medians of its GPU, and its
// roofline.
import {barChart, rooflineChart} from './charts.js';
import {el, equivalenceText, fill, fmt, intervalText, sizesText, unitText} from './format.js';
import {PAGE_VERSION} from './submit.js';
import {bandwidthCell, MEASURE_HEAD, measureCells} from './table.js';

const $ = (id) => document.getElementById(id);
const PAGE_SIZE = 50;
// The most rows one request may ask for (the server's ResultsStore::max_limit).
const DOWNLOAD_LIMIT = 1000;
const FILTERS = ['suite', 'source', 'vendor', 'architecture', 'device', 'backend', 'browser', 'os', 'name'];
const view = {
  offset: 0,
  summaryGroups: []
};

function filterParams() {
  const form = new FormData($('filters'));
  const params = new URLSearchParams();
  for (const key of FILTERS) {
    const value = String(form.get(key) ?? '').trim();
    if (value) params.set(key, value);
  }
  return params;
}

async function getJson(url) {
  const response = await fetch(url, {cache: 'no-cache'});
  const body = await response.json().catch(() => null);
  if (!response.ok) throw new Error(`${url}: ${response.status} ${body?.error ?? response.statusText}`);
  return body;
}

// Suggestions for the free-text filters: the values of the rows on show.
function fillDatalists(rows) {
  fill($('datalists'), FILTERS.filter((k) => !['suite', 'source'].includes(k)).map((key) => {
    const values = [...new Set(rows.map((r) => r[key]).filter(Boolean))].sort();
    return el('datalist', {id: `list-${key}`}, values.map((v) => el('option', {value: v})));
  }));
}

function gpuText(r) {
  return [r.vendor, r.architecture, r.device].filter(Boolean).join(' / ') || r.description || '—';
}

// "2026-11-22T18:43:54Z" as "2026-11-22 18:43".
function receivedText(iso) { return String(iso ?? '').replace('T', ' ').slice(0, 16); }

function clientText(r) {
  const browser = r.browser ? `${r.browser} ${r.browser_version ?? ''}`.trim() : '';
  return [browser, r.os].filter(Boolean).join(' / ') || '—';
}

const ROW_HEAD = [
  'id', 'received (UTC)', 'source', 'GPU', 'backend', 'browser / OS', 'suite', 'variant', 'sizes',
  ...MEASURE_HEAD, 'equivalence (the test applied)', 'GB/s vs copy bound (GB/s, %)', 'kernels (version)'
];

function rowCells(r) {
  const eq = r.equivalence;
  return [
    el('td', {class: 'num'}, String(r.id)),
    el('td', {title: r.received_at ?? ''}, receivedText(r.received_at)),
    el('td', {}, r.source),
    el('td', {title: r.description ?? ''}, gpuText(r)),
    el('td', {}, r.backend || '—'),
    el('td', {}, clientText(r)),
    el('td', {}, r.suite),
    el('td', {}, r.name),
    el('td', {class: 'sizes'}, sizesText(r.sizes)),
    measureCells(r),
    el('td', {class: eq?.passed ? 'ok' : 'bad', title: eq?.compared ?? ''}, equivalenceText(eq)),
    bandwidthCell(r),
    el('td', {}, el('code', {}, r.kernel_version ?? '')),
  ];
}

function rowsTable(rows, highlight) {
  const row = (r) =>
      el('tr', {
        class: String(r.submission_id) === highlight ? 'highlight' : null,
        dataset: {id: r.id, submission: r.submission_id}
      },
         rowCells(r));
  return el(
      'table', {class: 'rows', id: 'rows-table'},
      el('thead', {}, el('tr', {}, ROW_HEAD.map((h) => el('th', {}, h)))), el('tbody', {}, rows.map(row)));
}

async function loadRows() {
  const params = filterParams();
  params.set('limit', PAGE_SIZE);
  params.set('offset', view.offset);
  // A link from the page after a submission shows that submission's rows (the summary stays whole).
  const highlight = new URLSearchParams(location.search).get('submission');
  if (highlight) params.set('submission', highlight);
  const {total, rows} = await getJson(`/api/results?${params}`);
  $('rows-total').textContent = `(${total} rows)`;
  fill($('rows-body'), rows.length ? rowsTable(rows, highlight) : el('p', {}, 'No rows match.'));
  $('page-label').textContent = total ? `${view.offset + 1}–${view.offset + rows.length} of ${total}` : '';
  $('prev').disabled = view.offset === 0;
  $('next').disabled = view.offset + rows.length >= total;
  fillDatalists(rows);
}

function summaryKey(g) { return `${g.suite} · ${g.name} (${unitText(g.suite, g.unit)})`; }

function showSummaryChart() {
  const chosen = $('summary-variant').value;
  const groups = view.summaryGroups.filter((g) => summaryKey(g) === chosen);
  if (!groups.length) {
    fill($('summary-chart'));
    return;
  }
  const box = el('div', {class: 'chart'});
  fill($('summary-chart'), box);
  barChart(box, {
    title: `${chosen}: median per ${$('summary-by').value}`,
    unit: unitText(groups[0].suite, groups[0].unit),
    labels: groups.map((g) => `${g.key || '(none)'} (n=${g.count})`),
    values: groups.map((g) => g.median)
  });
}

async function loadSummary() {
  const params = filterParams();  // the summary honours every filter
  params.set('by', $('summary-by').value);
  const {groups} = await getJson(`/api/summary?${params}`);
  view.summaryGroups = groups;
  const variants = [...new Set(groups.map(summaryKey))];
  const previous = $('summary-variant').value;
  fill($('summary-variant'), variants.map((v) => el('option', {value: v, selected: v === previous}, v)));
  fill(
      $('summary-body'),
      groups.length ? el('table', {class: 'summary', id: 'summary-table'},
                         el('thead', {},
                            el('tr', {},
                               [
                                 $('summary-by').value, 'suite', 'variant', 'sizes', 'count (submissions)',
                                 'unit', 'median of medians', 'its 90% CI (order statistics; level if lower)'
                               ].map((h) => el('th', {}, h)))),
                         el('tbody', {}, groups.map((g) => {
                           const unit = unitText(g.suite, g.unit);
                           return el(
                               'tr', {}, el('td', {}, g.key || '(none)'), el('td', {}, g.suite),
                               el('td', {}, g.name), el('td', {class: 'sizes'}, sizesText(g.sizes)),
                               el('td', {class: 'num'}, String(g.count)), el('td', {class: 'unit'}, unit),
                               el('td', {class: 'num'}, `${fmt(g.median)} ${unit}`),
                               el('td', {class: 'num ci'}, intervalText(g.ci, unit)));
                         }))) :
                      el('p', {}, 'No submissions yet.'));
  showSummaryChart();
}

// Sizes as the server keys them (nlohmann's sorted keys), so a row finds its summary group.
const sizesKey = (sizes) => JSON.stringify(Object.fromEntries(Object.entries(sizes ?? {}).sort()));
const groupKey = (r) => `${r.suite}\u0000${r.name}\u0000${r.unit}\u0000${sizesKey(r.sizes)}`;

// The permalink view: the submission's rows beside the medians of every submission from the same
// GPU (same vendor, architecture and device), with the interval of those medians, and its roofline.
async function loadRun(id) {
  const {rows} =
      await getJson(`/api/results?${new URLSearchParams({submission: id, limit: DOWNLOAD_LIMIT})}`);
  $('run-section').hidden = false;
  $('run-link').href = `/results?submission=${encodeURIComponent(id)}`;
  if (!rows.length) {
    fill($('run-body'), el('p', {class: 'bad'}, `Submission ${id} holds no rows.`));
    return;
  }
  const gpu = rows[0];
  const params = new URLSearchParams({by: 'device'});
  for (const key of ['vendor', 'architecture', 'device'])
    if (gpu[key]) params.set(key, gpu[key]);
  const {groups} = await getJson(`/api/summary?${params}`);
  const ofGpu = new Map(groups.filter((g) => g.key === (gpu.device ?? '')).map((g) => [groupKey(g), g]));
  $('run-gpu').textContent = gpuText(gpu);
  const head = [
    'suite', 'variant', 'sizes', 'unit', 'this run: median', 'this run: 90% CI',
    'this GPU: median of medians', 'this GPU: 90% CI', 'submissions from this GPU',
    'this run / GPU median (×)'
  ];
  fill(
      $('run-body'),
      el('table', {class: 'rows', id: 'run-table'},
         el('thead', {}, el('tr', {}, head.map((h) => el('th', {}, h)))), el('tbody', {}, rows.map((r) => {
           const g = ofGpu.get(groupKey(r));
           const cells = measureCells(r);
           const unit = unitText(r.suite, r.unit);
           return el(
               'tr', {dataset: {suite: r.suite, name: r.name}}, el('td', {}, r.suite), el('td', {}, r.name),
               el('td', {class: 'sizes'}, sizesText(r.sizes)), el('td', {class: 'unit'}, unit), cells[1],
               cells[2], el('td', {class: 'num gpu-median'}, g ? `${fmt(g.median)} ${unit}` : '—'),
               el('td', {class: 'num ci'}, intervalText(g?.ci, unit)),
               el('td', {class: 'num'}, g ? String(g.count) : '0'),
               el('td', {class: 'num'}, g ? `${fmt(r.median / g.median)}×` : '—'));
         }))));
  rooflineChart($('run-roofline'), rows);
}

function updateDownloads() {
  for (const format of ['csv', 'json']) {
    const params = filterParams();
    params.set('limit', DOWNLOAD_LIMIT);
    params.set('format', format);
    $(`download-${format}`).href = `/api/results?${params}`;
  }
}

// withRun: the first load of a permalink also loads its run (filter changes leave it be).
async function refresh(withRun = false) {
  document.body.dataset.state = 'loading';
  const shown = filterParams();
  const submission = new URLSearchParams(location.search).get('submission');
  if (submission) shown.set('submission', submission);
  history.replaceState(null, '', `${location.pathname}${shown.size ? `?${shown}` : ''}`);
  updateDownloads();
  try {
    await Promise.all([loadRows(), loadSummary(), withRun && submission ? loadRun(submission) : null]);
    document.body.dataset.state = 'ready';
  } catch (e) {
    fill($('rows-body'), el('p', {class: 'bad'}, `Could not load the results: ${e.message}`));
    document.body.dataset.state = 'failed';
  }
}

function main() {
  $('page-version').textContent = PAGE_VERSION;
  const params = new URLSearchParams(location.search);
  for (const key of FILTERS) {
    const field = $('filters').elements[key];
    if (params.has(key)) field.value = params.get(key);
  }
  $('filters').addEventListener('change', () => {
    view.offset = 0;
    refresh();
  });
  $('filters').addEventListener('submit', (e) => e.preventDefault());
  $('summary-by')
      .addEventListener('change', () => loadSummary().catch((e) => fill($('summary-body'), e.message)));
  $('summary-variant').addEventListener('change', showSummaryChart);
  $('prev').addEventListener('click', () => {
    view.offset = Math.max(0, view.offset - PAGE_SIZE);
    loadRows();
  });
  $('next').addEventListener('click', () => {
    view.offset += PAGE_SIZE;
    loadRows();
  });
  refresh(true);
}

main();
