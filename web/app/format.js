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
