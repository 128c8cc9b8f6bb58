// Number and DOM helpers shared by the benchmark page and the results page.

export function fmt(x, digits = 3) {
  if (x === null || x === undefined || Number.isNaN(x)) return '—';
  if (typeof x !== 'number') return String(x);
  if (x === 0) return '0';
  const abs = Math.abs(x);
  return abs >= 1e5 || abs < 1e-3 ? x.toExponential(digits - 1) : String(Number(x.toPrecision(digits)));
}

export function sizesText(sizes) {
  return Object.entries(sizes ?? {}).map(([k, v]) => `${k}=${v}`).join(' ');
}

// What a result's unit measures (docs/WEB_API.md): a time per what its suite times, or a rate.
const UNIT_TEXT = {
  'dispatch us': 'µs per dispatch',
  'chain us': 'µs per chain of k ops',
  'tiny ms': 'ms per whole generation',
  'gen/s': 'generations/s',
  'tok/s': 'tokens/s',
  'GB/s': 'GB/s',
};

export function unitText(suite, unit) {
  return UNIT_TEXT[`${suite} ${unit}`] ?? UNIT_TEXT[unit] ?? (unit === 'us' ? 'µs' : unit);
}

// The test an equivalence record applied, in words, with the figure that decided it: an absolute
// tolerance (|d| <= tol), a relative one (sim: every individual within rtol, or those over it
// within the reference tolerance max(atol, rtol_ref·|f|)), or a mixed one (native rows).
export function equivalenceText(eq) {
  if (!eq) return '✗ missing';
  const mark = eq.passed ? '✓' : '✗';
  if (Array.isArray(eq.tokens))  // the llm check: tokens against the native run's
    return `${mark} ${eq.tokens.length - eq.max_abs_diff} of ${eq.tokens.length} tokens equal the native run's`;
  if (eq.over_rtol != null) {
    if (eq.rtol === 0) return `${mark} bitwise${eq.bitwise ? '' : ` (max |d| ${fmt(eq.max_abs_diff)})`}`;
    const head = `${mark} max rel ${fmt(eq.max_rel_diff)} (rtol ${fmt(eq.rtol)})`;
    if (!eq.over_rtol) return head;
    const ref = `|d| ≤ max(${fmt(eq.tolerance)}, ${fmt(eq.relative_tolerance)}·|f|)`;
    return `${head}; ${eq.over_rtol} over rtol, ${eq.over_within_reference_tolerance} of them within ${ref}` +
        (eq.passed ? '' : ` (worst at ${fmt(eq.worst_over_reference_tolerance)}× it: FAILED)`);
  }
  if (eq.relative_tolerance != null)
    return `${mark} max |d| ${fmt(eq.max_abs_diff)} (|d| ≤ ${fmt(eq.tolerance)} + ${
        fmt(eq.relative_tolerance)}·|ref|)`;
  return `${mark} max |d| ${fmt(eq.max_abs_diff)} (≤ ${fmt(eq.tolerance)})`;
}

// A median with its order-statistic interval (web/app/stats.js medianInterval) where one exists.
export function intervalText(ci, unit = '') {
  if (!ci) return '—';
  return `${fmt(ci.low)} – ${fmt(ci.high)}${unit ? ` ${unit}` : ''} (${Math.round(ci.level * 100)}%)`;
}

const present = (children) => children.flat(Infinity).filter((c) => c !== null && c !== undefined);

// Replaces node's children; arrays are flattened, null and undefined skipped.
export function fill(node, ...children) {
  node.replaceChildren(...present(children));
  return node;
}

// el('td', {class: 'num', title: '…'}, 'text', child, [children], …)
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'dataset')
      Object.assign(node.dataset, v);
    else
      node.setAttribute(k, v === true ? '' : v);
  }
  node.append(...present(children));
  return node;
}
