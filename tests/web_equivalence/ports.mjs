// The browser suites' ports of native generators, against the native binary's own output:
//   the tiny transformer's random weights (web/suites/tiny.js randomWeights, lib/mt19937.js) vs
//   `wgfuse tiny --write-model` (model.safetensors, F32), every tensor bitwise;
//   the Market prices (lib/market.js) vs `wgfuse sim market --write-data` (raw f32 records),
//   within one f32 rounding (JS's Math.log/exp/cos may differ from the C library's in the last bit);
//   the initial populations (lib/rng.js) vs the genomes the native sim evaluates is covered by
//   equivalence.mjs (the fitness of every individual).
// Usage: node ports.mjs WGFUSE_BINARY OUT_DIR
import {execFileSync} from 'node:child_process';
import {mkdirSync, readFileSync, rmSync} from 'node:fs';
import {join} from 'node:path';

import {generateMarket} from '../../web/suites/lib/market.js';
import {randomWeights, tinyConfig} from '../../web/suites/tiny.js';

const [wgfuse, outDir] = process.argv.slice(2);
if (!outDir) {
  console.error('usage: ports.mjs WGFUSE_BINARY OUT_DIR');
  process.exit(2);
}
let failures = 0;
const report = (ok, line) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${line}`);
  if (!ok) ++failures;
};
const run = (args) => execFileSync(wgfuse, args, {stdio: ['ignore', 'ignore', 'inherit']});

// Tiny weights: an odd shape (d = 48, 3 heads, 3 layers) and a seed other than the default.
const shape = {
  d: 48,
  layers: 3,
  heads: 3
},
      seed = 7;
const modelDir = join(outDir, 'tiny-model');
rmSync(modelDir, {recursive: true, force: true});
mkdirSync(outDir, {recursive: true});
run([
  'tiny', '--d', `${shape.d}`, '--layers', `${shape.layers}`, '--heads', `${shape.heads}`, '--seed',
  `${seed}`, '--write-model', modelDir, '--tokens', '1', '--repeats', '1', '--mode', 'single'
]);
const file = readFileSync(join(modelDir, 'model.safetensors'));
const headerLen = Number(file.readBigUInt64LE(0));
const header = JSON.parse(file.subarray(8, 8 + headerLen).toString());
const tensor = (name) => {
  const [begin, end] = header[name].data_offsets;
  const bytes = file.subarray(8 + headerLen + begin, 8 + headerLen + end);
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
};
const w = randomWeights(tinyConfig(shape), seed);
// The port's tensors in the order it draws them, which is the order the native writer stores them
// (the architecture table's, src/llm/architecture.h): compared by position, not by name.
const mine = [w.embedding];
for (const l of w.layers) {
  mine.push(l.inputNorm, l.postNorm, l.q.w, l.k.w, l.v.w, l.q.b, l.k.b, l.v.b, l.o.w, l.gate.w, l.up.w,
            l.down.w);
}
mine.push(w.finalNorm, w.lmHead.w);
const names = Object.keys(header).filter((k) => k !== '__metadata__');
report(names.length === mine.length, `tiny weights: ${names.length} native tensors, ${mine.length} in the port`);
names.forEach((name, at) => {
  const a = tensor(name), b = mine[at];
  const same = b && a.length === b.length && a.every((v, i) => Object.is(v, b[i]));
  if (!same) report(false, `tiny weights: ${name} (tensor ${at}) differs from native`);
});
if (!failures) console.log(`ok   tiny weights: every tensor bitwise equal (d=${shape.d}, seed ${seed})`);

// Market records at an odd length and seed.
const steps = 333, marketSeed = 5;
const dataPath = join(outDir, 'market.f32');
run([
  'sim', 'market', '--pop', '16', '--steps', `${steps}`, '--seed', `${marketSeed}`, '--generations', '1',
  '--mode', 'fused', '--quiet', '--write-data', dataPath
]);
const raw = readFileSync(dataPath);
const native = new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length));
const port = generateMarket(steps, marketSeed);
let worst = 0, differing = 0;
native.forEach((v, i) => {
  if (Object.is(v, port[i])) return;
  ++differing;
  worst = Math.max(worst, Math.abs(v - port[i]) / Math.max(Math.abs(v), 1e-30));
});
report(
    native.length === port.length && worst <= 2 ** -23,
    `market records: ${native.length} native, ${port.length} port, ${differing} differ, max rel ${worst}`);
process.exit(failures ? 1 : 0);
