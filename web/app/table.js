// The table of a run's results on the benchmark page.
import {el, fmt, sizesText} from './format.js';

function equivalenceCell(eq, problems) {
  if (!eq) return el('td', {class: 'bad'}, '✗ missing');
  const mark = eq.passed ? '✓' : '✗';
  const text =
      `${mark} max diff ${fmt(eq.max_abs_diff)}${eq.tolerance != null ? ` (tol ${fmt(eq.tolerance)})` : ''}`;
  return el(
      'td', {
        class: eq.passed && !problems.length ? 'ok' : 'bad',
        title: eq.compared ?? '',
        dataset: {passed: String(eq.passed === true)}
      },
      text);
}

function bandwidthCell(r) {
  if (r.bandwidth_gbs == null) return el('td', {class: 'num'}, '—');
  const bound = r.bound_gbs != null ?
      ` of ${fmt(r.bound_gbs)} (${fmt((100 * r.bandwidth_gbs) / r.bound_gbs, 2)}%)` :
      '';
  return el('td', {class: 'bandwidth'}, `${fmt(r.bandwidth_gbs)}${bound}`);
}

// rows: [{result, problems}] as the runner returns them.
export function resultsTable(rows) {
  const head = [
    'suite', 'variant', 'sizes', 'median', 'min – max', 'speedup', 'dispatches / submits', 'equivalence',
    'GB/s vs bound'
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
                 el('td', {class: 'num median'}, `${fmt(r.median)} ${r.unit}`),
                 el('td', {class: 'num'}, `${fmt(r.min)} – ${fmt(r.max)}`),
                 el('td', {class: 'num'}, r.speedup != null ? `${fmt(r.speedup)}× vs ${r.baseline}` : '—'),
                 el('td', {class: 'num'}, `${r.dispatches} / ${r.submits}`),
                 equivalenceCell(r.equivalence, problems), bandwidthCell(r)))));
}
