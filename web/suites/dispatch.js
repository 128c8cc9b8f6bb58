// Suites `dispatch` and `chain`: the dispatch-overhead measurements of `wgfuse bench`
// (src/bench/dispatch_bench.cpp) in the browser, on the same embedded kernels.
//   dispatch: n dispatches of the elementwise `chain` kernel (x = x * f0, in place) issued
//             naive (encode one, submit, wait; repeated), one submit per dispatch (one wait at the
//             end), and all in one compute pass; wall clock, µs per dispatch (timestamps cannot see
//             the CPU and API cost this measures).
//   chain:    k elementwise ops as k dispatches (`chain`) vs one (`chain_fused`), with the device
//             copy kernel (`copy_vec4`) as the bandwidth bound, all timed the same way (pass
//             timestamps where the device has them, else wall clock).
// Equivalence: every variant's output is read back and compared with the f32 result computed on
// the CPU (each op one f32 rounding, emulated exactly with Math.fround), fused with unfused.
import {bind, grid, PassTimer, Pipelines, read, STORAGE, UNIFORM, upload, wallMs} from './lib/gpu.js';
import {hash4} from './lib/rng.js';
import {compareArrays, equivalence, result, summarize} from './lib/stats.js';

const median = (samples) => summarize(samples).median;

const WORKGROUP = 256;
const CHAIN_GROUP_VEC4S = 256 * 2;  // vec4s per workgroup of chain_fused (kernels/elementwise.wgsl)
const MAX_CHAIN = 16;

// Op j's factor, as wgfuse::bench::chain_factor: 1 + 1e-4 (j + 1) in f32.
export function chainFactor(j) { return Math.fround(1 + Math.fround(Math.fround(1e-4) * (j + 1))); }

// ChainParams (kernels/elementwise.wgsl): n, first, count, pad, then 16 f32 factors.
function chainParams(n, first, count) {
  const buf = new ArrayBuffer(80);
  new Uint32Array(buf, 0, 4).set([n, first, count, 0]);
  const f = new Float32Array(buf, 16, MAX_CHAIN);
  for (let j = 0; j < MAX_CHAIN; ++j) f[j] = chainFactor(j);
  return new Uint8Array(buf);
}

// Values in [0.5, 2) from the simulations' hash: far from zero, so relative errors stay meaningful.
function randomData(n, seed) {
  const v = new Float32Array(n);
  for (let i = 0; i < n; ++i) v[i] = 0.5 + 1.5 * (hash4(seed, 7, i, 0) / 4294967296);
  return v;
}

// x after ops first .. first+count-1 applied `times` times, each product rounded to f32.
function chainReference(init, first, count, times) {
  const out = new Float32Array(init);
  for (let r = 0; r < times; ++r)
    for (let j = first; j < first + count; ++j) {
      const f = chainFactor(j);
      for (let i = 0; i < out.length; ++i) out[i] = Math.fround(out[i] * f);
    }
  return out;
}

async function elementwise(kernels) { return kernels.get('elementwise'); }

// The `dispatch` suite.
async function runDispatch({device, kernels, quick, progress, repeats}) {
  const n = quick ? 32 : 256;  // dispatches per timed repetition
  const reps = repeats ?? (quick ? 5 : 15);
  const elements = 4096 + 3;  // the "small" kernel of wgfuse bench, an odd size
  const pipes = new Pipelines(device);
  const code = await elementwise(kernels);
  const chain = await pipes.get('elementwise', code, 'chain');
  const init = randomData(elements, 1234);
  const x = upload(device, init, STORAGE, 'dispatch.x');
  const pristine = upload(device, init, STORAGE, 'dispatch.init');
  const params = upload(device, chainParams(elements, 0, 1), UNIFORM, 'dispatch.params');
  const group = bind(device, chain, [x, params]);
  const [gx, gy] = grid(Math.ceil(elements / WORKGROUP));

  const encodeDispatches = (enc, count) => {
    const pass = enc.beginComputePass();
    pass.setPipeline(chain);
    pass.setBindGroup(0, group);
    for (let i = 0; i < count; ++i) pass.dispatchWorkgroups(gx, gy);
    pass.end();
  };
  const variants = [
    {
      name: 'naive',
      submits: n,
      description: 'encode one dispatch, submit, wait; repeated',
      issue: async () => {
        for (let i = 0; i < n; ++i) {
          const enc = device.createCommandEncoder();
          encodeDispatches(enc, 1);
          device.queue.submit([enc.finish()]);
          await device.queue.onSubmittedWorkDone();
        }
      }
    },
    {
      name: 'submit per dispatch',
      submits: n,
      description: 'one command buffer and submit per dispatch, one wait',
      issue: () => {
        for (let i = 0; i < n; ++i) {
          const enc = device.createCommandEncoder();
          encodeDispatches(enc, 1);
          device.queue.submit([enc.finish()]);
        }
      }
    },
    {
      name: 'one pass',
      submits: 1,
      description: 'all dispatches in one compute pass, one submit',
      issue: () => {
        const enc = device.createCommandEncoder();
        encodeDispatches(enc, n);
        device.queue.submit([enc.finish()]);
      }
    },
  ];
  const want = chainReference(init, 0, 1, n);
  const restore = async () => {
    const enc = device.createCommandEncoder();
    enc.copyBufferToBuffer(pristine, 0, x, 0, x.size);
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
  };
  const samples = variants.map(() => []);
  const checks = [];
  for (const v of variants) {
    progress?.(0, `dispatch: ${v.name}, equivalence`);
    await restore();
    await v.issue();
    checks.push(compareArrays(want, await read(device, x, Float32Array, 0, elements)));
    await wallMs(device, v.issue);  // warm-up
  }
  // Interleaved repetitions, so that drift hits every variant alike (as wgfuse bench).
  for (let r = 0; r < reps; ++r)
    for (const [i, v] of variants.entries()) {
      progress?.(
          (r * variants.length + i) / (reps * variants.length),
          `dispatch: ${v.name}, repetition ${r + 1} of ${reps}`);
      samples[i].push((await wallMs(device, v.issue)) * 1000 / n);
    }
  const version = kernels.version;
  const naive = samples[0];
  return variants.map((v, i) => result({
                        suite: 'dispatch',
                        name: v.name,
                        kernelVersion: version,
                        sizes: {dispatches: n, elements},
                        unit: 'us',
                        samples: samples[i],
                        dispatches: n,
                        submits: v.submits,
                        baseline: i === 0 ? null : 'naive',
                        baselineMedian: i === 0 ? null : median(naive),
                        equivalence: equivalence(
                            `${v.name} vs CPU f32 (${n} dependent dispatches)`, checks[i].maxAbs, 0,
                            {bitwise: checks[i].bitwise, description: v.description}),
                      }));
}

// The `chain` suite.
async function runChain({device, kernels, quick, progress, repeats}) {
  const elements = (quick ? 1 << 16 : 1 << 22) + 5;  // odd: the fused kernel's padding is exercised
  const lengths = quick ? [8] : [2, 8, 16];
  const reps = repeats ?? (quick ? 5 : 10);
  const pipes = new Pipelines(device);
  const code = await elementwise(kernels);
  const timer = new PassTimer(device);
  const vec4s = Math.ceil(elements / 4);
  const init = randomData(vec4s * 4, 99);
  const pristine = upload(device, init, STORAGE, 'chain.init');
  const x = upload(device, init, STORAGE, 'chain.x');
  const copyDst = device.createBuffer({size: x.size, usage: STORAGE, label: 'chain.copy'});
  const single = await pipes.get('elementwise', code, 'chain');
  const copy = await pipes.get('elementwise', code, 'copy_vec4');
  const copyGroup = bind(device, copy, [pristine, copyDst]);
  const [gx, gy] = grid(Math.ceil(elements / WORKGROUP));
  const [cx, cy] = grid(Math.ceil(x.size / 16 / WORKGROUP));
  const [fx, fy] = grid(Math.ceil(vec4s / CHAIN_GROUP_VEC4S));

  // Params of op j alone in slot j, of the fused chain in slot MAX_CHAIN (256-byte slots).
  const paramBuf = device.createBuffer({size: (MAX_CHAIN + 1) * 256, usage: UNIFORM, label: 'chain.params'});
  const singleGroups = [];
  for (let j = 0; j < MAX_CHAIN; ++j) {
    device.queue.writeBuffer(paramBuf, j * 256, chainParams(elements, j, 1));
    singleGroups.push(bind(device, single, [x, {buffer: paramBuf, offset: j * 256, size: 80}]));
  }

  const restore = async () => {
    const enc = device.createCommandEncoder();
    enc.copyBufferToBuffer(pristine, 0, x, 0, x.size);
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
  };
  // One sample: `runs` repetitions of `record(pass)` in one pass; ms per run by timestamps, else wall clock.
  const sample = async (record, runs) => {
    await restore();
    const t0 = performance.now();
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass(timer.passDescriptor());
    for (let r = 0; r < runs; ++r) record(pass);
    pass.end();
    timer.resolve(enc);
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
    const wall = performance.now() - t0;
    const gpu = await timer.ms();
    return (gpu ?? wall) / runs;
  };
  const recordCopy = (pass) => {
    pass.setPipeline(copy);
    pass.setBindGroup(0, copyGroup);
    pass.dispatchWorkgroups(cx, cy);
  };
  const runsFor = async (record) => {
    await sample(record, 1);  // warm-up
    const pilot = await sample(record, 1);
    return Math.min(256, Math.max(1, Math.round(20 / Math.max(pilot, 1e-3))));  // ~20 ms a sample
  };

  progress?.(0, 'chain: copy bandwidth bound');
  const copyRuns = await runsFor(recordCopy);
  const copySamples = [];
  for (let r = 0; r < reps; ++r)
    copySamples.push((2 * x.size) / ((await sample(recordCopy, copyRuns)) * 1e6));
  const boundGbs = median(copySamples);
  const version = kernels.version;
  const results = [];
  for (const [li, k] of lengths.entries()) {
    progress?.(li / lengths.length, `chain: ${k} ops on ${elements} floats`);
    const fused = await pipes.get('elementwise', code, 'chain_fused', {CHAIN_OPS: k});
    device.queue.writeBuffer(paramBuf, MAX_CHAIN * 256, chainParams(elements, 0, k));
    const fusedGroup = bind(device, fused, [x, {buffer: paramBuf, offset: MAX_CHAIN * 256, size: 80}]);
    const recordUnfused = (pass) => {
      pass.setPipeline(single);
      for (let j = 0; j < k; ++j) {
        pass.setBindGroup(0, singleGroups[j]);
        pass.dispatchWorkgroups(gx, gy);
      }
    };
    const recordFused = (pass) => {
      pass.setPipeline(fused);
      pass.setBindGroup(0, fusedGroup);
      pass.dispatchWorkgroups(fx, fy);
    };
    const outputs = [];
    for (const record of [recordUnfused, recordFused]) {
      await restore();
      const enc = device.createCommandEncoder();
      const pass = enc.beginComputePass();
      record(pass);
      pass.end();
      device.queue.submit([enc.finish()]);
      outputs.push(await read(device, x, Float32Array, 0, elements));
    }
    const want = chainReference(init.subarray(0, elements), 0, k, 1);
    const fusedVsUnfused = compareArrays(outputs[0], outputs[1]);
    const fusedVsCpu = compareArrays(want, outputs[1]);
    // k f32 roundings of at most 2^-24 relative each, on values below 2 (1 + 1e-4 k)^k.
    const tolerance = fusedVsUnfused.maxRef * (k * 6e-8 + 1e-7);

    const runs = await runsFor(recordUnfused);
    const unfusedMs = [], fusedMs = [];
    for (let r = 0; r < reps; ++r) {
      unfusedMs.push(await sample(recordUnfused, runs));
      fusedMs.push(await sample(recordFused, runs));
    }
    const bytes = (ops) => 2 * 4 * elements * ops;  // 4 B read + 4 B written per element per pass
    const sizes = {elements, ops: k};
    const eq = equivalence(
        'fused vs unfused', fusedVsUnfused.maxAbs, tolerance,
        {bitwise: fusedVsUnfused.bitwise, max_abs_diff_cpu_f32: fusedVsCpu.maxAbs});
    eq.passed = eq.passed && fusedVsCpu.maxAbs <= tolerance;
    const toUs = (ms) => ms.map((v) => v * 1000);
    const unfusedUs = toUs(unfusedMs), fusedUs = toUs(fusedMs);
    results.push(result({
      suite: 'chain',
      name: `unfused k=${k}`,
      kernelVersion: version,
      sizes,
      unit: 'us',
      samples: unfusedUs,
      dispatches: k,
      submits: 1,
      bandwidthGbs: bytes(k) / (median(unfusedUs) * 1e3),
      boundGbs,
      equivalence: eq,
    }));
    results.push(result({
      suite: 'chain',
      name: `fused k=${k}`,
      kernelVersion: version,
      sizes,
      unit: 'us',
      samples: fusedUs,
      dispatches: 1,
      submits: 1,
      baseline: `unfused k=${k}`,
      baselineMedian: median(unfusedUs),
      bandwidthGbs: bytes(1) / (median(fusedUs) * 1e3),
      boundGbs,
      equivalence: eq,
    }));
  }
  return results;
}

export const suite = {
  id: 'dispatch',
  title: 'Dispatch overhead: naive vs one submit each vs one pass',
  run: runDispatch
};
export const chainSuite = {
  id: 'chain',
  title: 'Fused vs unfused elementwise chain, against the copy bandwidth bound',
  run: runChain,
};
export const suites = [suite, chainSuite];
