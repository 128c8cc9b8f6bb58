// Suite `tiny`: the tiny transformer of `wgfuse tiny` (src/tiny/runner.cpp) in the browser, its
// whole greedy generation by each strategy:
//   eager    one dispatch per op, each its own pass, submit and wait
//   batched  the same dispatches, the whole generation in one pass and one submit
//   layer    one dispatch per layer per token (plus embedding, and head + next token)
//   single   one dispatch for the whole generation, one workgroup per sequence
// The random weights are drawn as llm::HostWeights::random draws them (std::mt19937 and
// libstdc++'s uniform_real_distribution, ported in lib/mt19937.js) and packed as
// tiny::pack_weights packs them, so that a seed gives the native model.
// Equivalence: every strategy's tokens equal eager's exactly and its logits within 1e-4 of the
// largest logit (the tolerance of `wgfuse tiny --check`).
import {bind, Pipelines, read, STORAGE, UNIFORM, upload} from './lib/gpu.js';
import {Mt19937} from './lib/mt19937.js';
import {compareArrays, result, summarize} from './lib/stats.js';

const VOCAB = 256;
const OPS_WORKGROUP = 64;
const POISON_TOKEN = 0xffffffff;
const ROPE_THETA = 10000;
const EPS = 1e-6;
const LOGITS_RTOL = 1e-4;
const ARGMAX_PARTS = 16;  // tiny::kArgmaxParts (ARG_PARTS in tiny_common.wgsl): the two-level argmax
// tiny::Op, the OP override of kernels/tiny_ops.wgsl.
const OP = {
  Embed: 0,
  NormIn: 1,
  Qkv: 2,
  RopeKv: 3,
  Scores: 4,
  Attend: 5,
  OProj: 6,
  Residual: 7,
  NormPost: 8,
  GateUp: 9,
  SiluMul: 10,
  Down: 11,
  NormFinal: 12,
  Head: 13,
};

// tiny::tiny_config: head_dim d / heads, SwiGLU width 4 d, q/k/v biases, an untied LM head.
export function tinyConfig({d, layers, heads}) {
  return {d, layers, heads, kvHeads: heads, headDim: d / heads, ff: 4 * d};
}

// llm::HostWeights::random (scale 0.15): every tensor drawn in this order from one generator.
export function randomWeights(c, seed, scale = 0.15) {
  const rng = new Mt19937(seed);
  const fill = (n, lo, hi) => {
    const v = new Float32Array(n);
    for (let i = 0; i < n; ++i) v[i] = rng.uniform(lo, hi);
    return v;
  };
  const linear = (rows, cols, bias) => ({rows, cols, w: fill(rows * cols, -scale, scale), b: null, bias});
  const qRows = c.heads * c.headDim, kvRows = c.kvHeads * c.headDim;
  const w = {embedding: fill(VOCAB * c.d, -1, 1), layers: []};
  for (let l = 0; l < c.layers; ++l) {
    const layer = {inputNorm: fill(c.d, 0.5, 1.5), postNorm: fill(c.d, 0.5, 1.5)};
    layer.q = linear(qRows, c.d);
    layer.k = linear(kvRows, c.d);
    layer.v = linear(kvRows, c.d);
    layer.q.b = fill(qRows, -scale, scale);
    layer.k.b = fill(kvRows, -scale, scale);
    layer.v.b = fill(kvRows, -scale, scale);
    layer.o = linear(c.d, qRows);
    layer.gate = linear(c.ff, c.d);
    layer.up = linear(c.ff, c.d);
    layer.down = linear(c.d, c.ff);
    w.layers.push(layer);
  }
  w.finalNorm = fill(c.d, 0.5, 1.5);
  w.lmHead = linear(VOCAB, c.d);
  return w;
}

// tiny::pack_weights: the kernels' layout (W_*, L_* in kernels/tiny_common.wgsl), each RMSNorm's
// weights folded into the matrix it feeds, with the RoPE table for `capacity` positions computed
// in double.
export function packWeights(c, w, capacity) {
  const out = [];
  const append = (v) => {
    for (const x of v) out.push(x);
  };
  const pad4 = () => {
    while (out.length % 4) out.push(0);
  };
  // Matrices stacked by rows in blocks of 4 columns: [cols/4][sum of rows][4]; column j scaled by
  // norm[j] (the norm feeding them) in double, then rounded once to f32 by the Float32Array.
  const blocked = (norm, ...parts) => {
    const cols = parts[0].cols;
    for (let j = 0; j < cols; j += 4)
      for (const p of parts)
        for (let r = 0; r < p.rows; ++r)
          for (let q = 0; q < 4; ++q) out.push(p.w[r * cols + j + q] * (norm ? norm[j + q] : 1));
  };
  append(w.embedding);
  blocked(w.finalNorm, w.lmHead);
  const half = c.headDim / 2;
  for (let pos = 0; pos < capacity; ++pos)
    for (let i = 0; i < half; ++i) {
      const angle = pos * Math.pow(ROPE_THETA, (-2.0 * i) / c.headDim);
      out.push(Math.cos(angle), Math.sin(angle));
    }
  pad4();
  for (const l of w.layers) {
    blocked(l.inputNorm, l.q, l.k, l.v);
    append(l.q.b);
    append(l.k.b);
    append(l.v.b);
    pad4();
    blocked(null, l.o);
    blocked(l.postNorm, l.gate, l.up);
    blocked(null, l.down);
  }
  return new Float32Array(out);
}

// Sequence i's prompt: each byte b mapped to (b + i) % 256 (tiny::sequence_prompt).
export function sequencePrompt(prompt, i) {
  return Array.from(new TextEncoder().encode(prompt), (b) => (b + i) % VOCAB);
}

// Floats of one sequence's activations (tiny::activation_floats) and KV cache (kv_floats).
function activationFloats(c, cap) {
  const qd = c.heads * c.headDim, kvd = c.kvHeads * c.headDim;
  return 2 * c.d + (qd + 2 * kvd) + qd + c.heads * cap + 2 * c.ff + c.d + VOCAB + 2 * ARGMAX_PARTS;
}

function kvFloats(c, cap) { return c.layers * 2 * c.kvHeads * c.headDim * cap; }

async function generation(
    device, kernels, {shape, prompt, tokens, sequences, seed}, reps, progress, outputs) {
  const c = tinyConfig(shape);
  const P = new TextEncoder().encode(prompt).length;
  const cap = P + tokens;
  const lim = device.limits;
  const actFloats = activationFloats(c, cap);
  if (actFloats * 4 > lim.maxComputeWorkgroupStorageSize)
    throw new Error(
        `tiny: one sequence's activations take ${actFloats * 4} bytes of workgroup memory; ` +
        `this device's maxComputeWorkgroupStorageSize is ${lim.maxComputeWorkgroupStorageSize}`);
  const fusedWg = Math.min(256, lim.maxComputeInvocationsPerWorkgroup, lim.maxComputeWorkgroupSizeX);
  const initialTokens = new Uint32Array(cap * sequences);
  for (let i = 0; i < sequences; ++i) {
    initialTokens.set(sequencePrompt(prompt, i), i * cap);
    initialTokens.fill(POISON_TOKEN, i * cap + P, (i + 1) * cap);
  }
  const packed = packWeights(c, randomWeights(c, seed), cap);
  const storage = (label, floats) =>
      device.createBuffer({size: floats * 4, usage: STORAGE, label: `tiny.${label}`});
  const buf = {
    weights: upload(device, packed, STORAGE, 'tiny.weights'),
    kv: storage('kv', kvFloats(c, cap) * sequences),
    tokens: storage('tokens', cap * sequences),
    logits: storage('logits', tokens * VOCAB * sequences),
    state: storage('positions', Math.max(4, sequences)),
    act: storage('act', actFloats * sequences),
  };
  // One 256-byte uniform slot per layer (tiny_common.wgsl Params: the layer).
  const params = device.createBuffer({size: 256 * c.layers, usage: UNIFORM, label: 'tiny.params'});
  for (let l = 0; l < c.layers; ++l) device.queue.writeBuffer(params, 256 * l, new Uint32Array([l, 0, 0, 0]));

  const pipes = new Pipelines(device);
  const constants = (wg, op) => ({
    D: c.d,
    H: c.heads,
    KVH: c.kvHeads,
    HD: c.headDim,
    FF: c.ff,
    L: c.layers,
    P,
    T: tokens,
    CAP: cap,
    EPS,
    WG: wg,
    // Lanes per row or score: teams of one thread (the tiny_solo family), which every adapter
    // runs; native picks subgroup teams where it can (`wgfuse tiny --lanes 1` is this setting).
    LN_QKV: 1,
    LN_O: 1,
    LN_GU: 1,
    LN_DOWN: 1,
    LN_HEAD: 1,
    LN_SC: 1,
    LN_AT: 1,
    ...(op === undefined ? {} : {OP: op}),
  });
  // As native's TinyRunner composes them: the lane reductions' family in front of the ops.
  const lanes = await kernels.get('tiny_solo');
  const opsCode = lanes + (await kernels.get('tiny_ops'));
  const singleCode = lanes + (await kernels.get('tiny_single'));
  const groups = new Map();  // bind groups by pipeline and layer (auto layouts are per pipeline)
  const groupFor = (pipe, layer, withAct) => {
    const key = pipe;
    if (!groups.has(key)) groups.set(key, []);
    const g = groups.get(key);
    if (!g[layer]) {
      const res = [
        {buffer: params, offset: 256 * layer, size: 16}, buf.weights, buf.kv, buf.tokens, buf.logits,
        buf.state
      ];
      if (withAct) res.push(buf.act);
      g[layer] = bind(device, pipe, res);
    }
    return g[layer];
  };
  // A step: one dispatch of (pipeline, layer, grid).
  const opStep = async (op, items, layer = 0) => ({
    pipe: await pipes.get('tiny_ops', opsCode, 'op', constants(OPS_WORKGROUP, op)),
    layer,
    act: true,
    grid: [Math.ceil(items / OPS_WORKGROUP), sequences],
  });
  const fusedStep = async (entry, layer = 0) => ({
    pipe: await pipes.get('tiny_ops', opsCode, entry, constants(fusedWg)),
    layer,
    act: true,
    grid: [1, sequences],
  });
  const qd = c.heads * c.headDim;
  const qkvRows = (c.heads + 2 * c.kvHeads) * c.headDim;
  const position = [await opStep(OP.Embed, c.d)];
  for (let l = 0; l < c.layers; ++l) {
    for (const [op, items] of [
             [OP.NormIn, c.d], [OP.Qkv, qkvRows],
             [OP.RopeKv, qkvRows / 2],
             [OP.Scores, c.heads * cap], [OP.Attend, qd], [OP.OProj, c.d], [OP.Residual, c.d],
             [OP.NormPost, c.d], [OP.GateUp, 2 * c.ff], [OP.SiluMul, c.ff], [OP.Down, c.d],
             [OP.Residual, c.d]])
      position.push(await opStep(op, items, l));
  }
  position.push(await opStep(OP.NormFinal, c.d), await opStep(OP.Head, VOCAB), await fusedStep('op_emit'));
  const layered = [await opStep(OP.Embed, c.d)];
  for (let l = 0; l < c.layers; ++l) layered.push(await fusedStep('layer_fused', l));
  layered.push(await fusedStep('head_fused'));
  const single = [{
    pipe: await pipes.get('tiny_single', singleCode, 'generate', constants(fusedWg)),
    layer: 0,
    act: false,
    grid: [sequences, 1],
  }];
  const poisonGroups = Math.ceil((tokens * VOCAB * sequences) / OPS_WORKGROUP);
  const px = Math.min(poisonGroups, lim.maxComputeWorkgroupsPerDimension);
  const poison = {
    pipe: await pipes.get('tiny_ops', opsCode, 'poison_logits', constants(OPS_WORKGROUP)),
    layer: 0,
    act: true,
    grid: [px, Math.ceil(poisonGroups / px)],
  };

  const record = (pass, s) => {
    pass.setPipeline(s.pipe);
    pass.setBindGroup(0, groupFor(s.pipe, s.layer, s.act));
    pass.dispatchWorkgroups(...s.grid);
  };
  const submit = (steps) => {
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass();
    steps.forEach((s) => record(pass, s));
    pass.end();
    device.queue.submit([enc.finish()]);
  };
  // Poisoned logits and generated tokens, positions at 0: a value a strategy fails to write fails.
  const reset = async () => {
    submit([poison]);
    device.queue.writeBuffer(buf.tokens, 0, initialTokens);
    device.queue.writeBuffer(buf.state, 0, new Uint32Array(Math.max(4, sequences)));
    await device.queue.onSubmittedWorkDone();
  };
  const positions = P + tokens - 1;
  const repeat = (steps, n) => Array.from({length: n}, () => steps).flat();
  const strategies = [
    {
      name: 'eager',
      dispatches: positions * position.length,
      submits: positions * position.length,
      issue: async () => {
        for (let p = 0; p < positions; ++p)
          for (const s of position) {
            submit([s]);
            await device.queue.onSubmittedWorkDone();
          }
      }
    },
    {
      name: 'batched',
      dispatches: positions * position.length,
      submits: 1,
      issue: () => submit(repeat(position, positions))
    },
    {
      name: 'layer',
      dispatches: positions * layered.length,
      submits: 1,
      issue: () => submit(repeat(layered, positions))
    },
    {name: 'single', dispatches: 1, submits: 1, issue: () => submit(single)},
  ];
  // The wall clock of the generation alone (as TinyRunner::run: the reset is not timed).
  const timed = async (s) => {
    await reset();
    const t0 = performance.now();
    await s.issue();
    await device.queue.onSubmittedWorkDone();
    return performance.now() - t0;
  };
  const out = {};
  for (const s of strategies) {
    progress?.(0, `tiny: ${s.name}, equivalence`);
    await timed(s);
    out[s.name] = {
      tokens: Array.from({length: sequences}, () => null),
      logits: await read(device, buf.logits, Float32Array),
      all: await read(device, buf.tokens, Uint32Array),
    };
    for (let i = 0; i < sequences; ++i)
      out[s.name].tokens[i] = Array.from(out[s.name].all.subarray(i * cap + P, (i + 1) * cap));
  }
  const samples = strategies.map(() => []);
  for (let r = 0; r < reps; ++r)
    for (const [i, s] of strategies.entries()) {
      progress?.(
          (r * strategies.length + i) / (reps * strategies.length),
          `tiny: ${s.name}, repetition ${r + 1} of ${reps}`);
      samples[i].push(await timed(s));
    }
  if (outputs)
    outputs[`d${c.d}_l${c.layers}_t${tokens}`] = {
      d: c.d,
      layers: c.layers,
      heads: c.heads,
      prompt,
      tokens,
      sequences,
      seed,
      generated_ids: Object.fromEntries(strategies.map((s) => [s.name, out[s.name].tokens])),
    };

  const eager = out.eager;
  const eagerMedian = summarize(samples[0]).median;
  return strategies.map((s, i) => {
    const other = s.name === 'eager' ? out.single : out[s.name];
    const sameTokens = JSON.stringify(eager.tokens) === JSON.stringify(other.tokens);
    const l = compareArrays(eager.logits, other.logits);
    const tolerance = LOGITS_RTOL * l.maxRef;
    return result({
      suite: 'tiny',
      name: s.name,
      kernelVersion: kernels.version,
      sizes: {d: c.d, layers: c.layers, heads: c.heads, prompt_tokens: P, tokens, sequences},
      unit: 'ms',
      samples: samples[i],
      dispatches: s.dispatches,
      submits: s.submits,
      baseline: i === 0 ? null : 'eager',
      baselineMedian: i === 0 ? null : eagerMedian,
      equivalence: {
        passed: sameTokens && l.maxAbs <= tolerance,
        compared: `${s.name === 'eager' ? 'single' : s.name} vs eager: tokens exactly, logits`,
        max_abs_diff: l.maxAbs,
        tolerance,
        tokens_equal: sameTokens,
      },
    });
  });
}

// Quick: d = 64, 2 layers, 16 tokens (the sizes of the brief); full: 4 layers, 64 tokens, 8 sequences.
export const TINY_QUICK = {
  shape: {d: 64, layers: 2, heads: 2},
  prompt: 'Hello',
  tokens: 16,
  sequences: 1,
  seed: 1
};
const TINY_FULL = {
  shape: {d: 64, layers: 4, heads: 2},
  prompt: 'Hello',
  tokens: 64,
  sequences: 8,
  seed: 1
};

async function run({device, kernels, quick, progress, repeats, outputs}) {
  return generation(
      device, kernels, quick ? TINY_QUICK : TINY_FULL, repeats ?? (quick ? 3 : 5), progress, outputs?.tiny);
}

export const suite = {
  id: 'tiny',
  title: 'Tiny transformer: eager vs batched vs per layer vs one dispatch',
  run
};
export const suites = [suite];
