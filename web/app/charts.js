// Bar charts with uPlot (npm uplot, vendored by the build to /vendor/uplot/ and loaded by a
// <script> tag as the global uPlot).
import {fmt} from './format.js';

// Draws a bar chart of values (one bar per label) into container and returns the uPlot; with
// ratio set, the scale is logarithmic around 1 so that bars grow up for a speedup and down for
// a slowdown; with ceiling set, a dashed line at that value (a roofline's bound). Without uPlot (the vendored
// file missing) it says so in the container.
export function barChart(container, {title, labels, values, unit = '', ratio = false, ceiling = null}) {
  container.replaceChildren();
  if (typeof uPlot === 'undefined') {
    container.textContent = 'Charts unavailable: /vendor/uplot/uPlot.iife.min.js did not load.';
    return null;
  }
  const xs = labels.map((_, i) => i);
  const positive = values.filter((v) => v > 0);
  const lo = Math.min(...positive, ratio ? 1 : Infinity);
  const hi = Math.max(...positive, ratio ? 1 : 0, ceiling ?? 0);
  const yScale = ratio ? {distr: 3, log: 10, range: () => [Math.min(lo / 2, 0.5), Math.max(hi * 2, 2)]} :
                         {range: () => [0, hi > 0 ? hi * 1.15 : 1]};
  const formatted = (v) => (v == null ? '' : `${fmt(v)}${ratio ? '×' : unit ? ` ${unit}` : ''}`);
  const opts = {
    title,
    width: Math.max(320, container.clientWidth || 640),
    height: 280,
    legend: {show: false},
    cursor: {drag: {x: false, y: false}, points: {show: false}},
    scales: {x: {time: false, range: () => [-0.6, labels.length - 0.4]}, y: yScale},
    axes: [
      {
        splits: () => xs,
        values: (u, splits) => splits.map((i) => labels[i] ?? ''),
        size: labels.length > 6 ? 110 : 70,
        rotate: labels.length > 6 ? -40 : -12,
        font: '11px system-ui, sans-serif',
        gap: 4
      },
      {values: (u, splits) => splits.map(formatted), size: 70, font: '11px system-ui, sans-serif'},
    ],
    series: [
      {},
      {
        label: ratio ? 'speedup' : unit,
        fill: 'rgba(46, 125, 160, 0.7)',
        stroke: 'rgb(30, 90, 120)',
        width: 1,
        fillTo: ratio ? 1 : 0,
        paths: uPlot.paths.bars({size: [0.6, 80]}),
        points: {show: false},
        value: (u, v) => formatted(v)
      },
      ...(ceiling != null ? [{
        label: `bound ${formatted(ceiling)}`,
        stroke: 'rgb(190, 60, 40)',
        width: 2,
        dash: [6, 4],
        points: {show: false},
        value: (u, v) => formatted(v)
      }] :
                            []),
    ],
    hooks: {
      // The value above each bar: a chart meant to be read, not hovered.
      draw: [(u) => {
        const {ctx} = u;
        ctx.save();
        ctx.font = `${Math.round(11 * devicePixelRatio)}px system-ui, sans-serif`;
        ctx.fillStyle = '#222';
        ctx.textAlign = 'center';
        values.forEach((v, i) => {
          if (!(v > 0)) return;
          const x = u.valToPos(i, 'x', true);
          const y = u.valToPos(v, 'y', true);
          ctx.fillText(formatted(v), x, Math.max(y - 4 * devicePixelRatio, 12 * devicePixelRatio));
        });
        ctx.restore();
      }],
    },
  };
  const data = [xs, values, ...(ceiling != null ? [xs.map(() => ceiling)] : [])];
  return new uPlot(opts, data, container);
}

// The FLOPs of a run where its suite says how many it does: the chain does one multiply per
// element per op (kernels/elementwise.wgsl chain_ops); null elsewhere.
export function flopsOf(r) {
  if (r.suite === 'chain' && r.sizes?.elements > 0 && r.sizes?.ops > 0) return r.sizes.elements * r.sizes.ops;
  return null;
}

// The roofline of a run: each kernel's achieved bandwidth (bars, GB/s; GFLOP/s in the label where
// the FLOPs are known) against the adapter's measured copy bandwidth (the line). Only results
// with bandwidth_gbs take part; without any it says so and returns null.
export function rooflineChart(container, results) {
  const rows = results.filter((r) => r.bandwidth_gbs != null);
  if (!rows.length) {
    container.replaceChildren();
    container.textContent = 'No result of this run reports a bandwidth (the chain suite does).';
    return null;
  }
  const gflops = rows.map((r) => {
    const f = flopsOf(r);
    // the median is a time in µs per chain for the chain suite
    return f != null && r.unit === 'us' ? f / (r.median * 1e3) : null;
  });
  const labels = rows.map((r, i) => `${r.name}${gflops[i] != null ? ` · ${fmt(gflops[i])} GFLOP/s` : ''}`);
  const bound = rows.find((r) => r.bound_gbs != null)?.bound_gbs ?? null;
  const u = barChart(container, {
    title: `Roofline: achieved GB/s per kernel vs the measured copy bound${
        bound != null ? ` (${fmt(bound)} GB/s)` : ''}`,
    unit: 'GB/s',
    labels,
    values: rows.map((r) => r.bandwidth_gbs),
    ceiling: bound
  });
  if (u) container.dataset.kernels = String(rows.length);
  return u;
}
