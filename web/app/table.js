// The table of a run's results on the benchmark page.
import {el, equivalenceText, fmt, intervalText, sizesText, unitText} from './format.js';
import {medianInterval} from './stats.js';

function equivalenceCell(eq, problems) {
  return el(
      'td', {
        class: eq?.passed && !problems.length ? 'ok' : 'bad',
        title: eq?.compared ?? '',
        dataset: {passed: String(eq?.passed === true)}
      },
      equivalenceText(eq));
}

export function bandwidthCell(r) {
  if (r.bandwidth_gbs == null) return el('td', {class: 'num'}, '—');
  const bound = r.bound_gbs != null ?
      ` of ${fmt(r.bound_gbs)} (${fmt((100 * r.bandwidth_gbs) / r.bound_gbs, 2)}%)` :
      '';
  return el('td', {class: 'bandwidth'}, `${fmt(r.bandwidth_gbs)}${bound}`);
}

// The columns both tables share, headers with their units (a time or a rate per row: the unit
// column says which).
export const MEASURE_HEAD = [
  'unit', 'median', 'median 90% CI (order statistics; level if lower)', 'min – max', 'speedup (× vs baseline)'
];

export function measureCells(r) {
  const unit = unitText(r.suite, r.unit);
  return [
    el('td', {class: 'unit'}, unit),
    el('td', {class: 'num median'}, `${fmt(r.median)} ${unit}`),
    el('td', {class: 'num ci'}, intervalText(r.samples?.length ? medianInterval(r.samples) : null, unit)),
    el('td', {class: 'num'}, `${fmt(r.min)} – ${fmt(r.max)}`),
    el('td', {class: 'num'}, r.speedup != null ? `${fmt(r.speedup)}× vs ${r.baseline}` : '—'),
  ];
}

// rows: [{result, problems}] as the runner returns them.
export function resultsTable(rows) {
  const head = [
    'suite', 'variant', 'sizes (elements, steps, …)', ...MEASURE_HEAD,
    'dispatches / submits (per repetition)', 'equivalence (the test applied)', 'GB/s vs copy bound (GB/s, %)'
  ];
  return el(
      'table', {class: 'results', id: 'results-table'},
      el('thead', {}, el('tr', {}, head.map((h) => el('th', {}, h)))),
      el('tbody', {},
         rows.map(
             ({result: r, problems}) => el(
                 'tr', {
                   class: problems.length ? 'problem' : null,
                   title: problems.join('\n') || null,
                   dataset: {suite: r.suite, name: r.name}
                 },
                 el('td', {}, r.suite), el('td', {}, r.name), el('td', {class: 'sizes'}, sizesText(r.sizes)),
                 measureCells(r), el('td', {class: 'num'}, `${r.dispatches} / ${r.submits}`),
                 equivalenceCell(r.equivalence, problems), bandwidthCell(r)))));
}
