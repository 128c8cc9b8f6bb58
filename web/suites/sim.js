// Suite `sim`: the simulations of `wgfuse sim` (src/fuse/sim_program.h) in the browser. Each
// workload's modules are the native SimProgram's (fuse::generated_source), composed by the server's
// native loader from the workload's file (lib/sim_workload.js: POST /api/sim/workload).
// The initial population comes from the same counter-based RNG (src/sim/rng.h), gene-major; the
// start states are drawn in the kernels. For each workload the evaluation of generation 0 (one
// episode) is timed per strategy:
//   perstep  init, one dispatch per step, fitness, with a submit and a wait after each
//   batched  the same dispatches in one compute pass
//   fused    one dispatch, the step loop in the shader
//   team     one dispatch, a team of invocations per individual (where the device has subgroups)
// Per-step is timed one evaluation at a time (its waits are the strategy). The others are timed as
// `wgfuse sim` times generations (src/sim/runner.cpp): PER_SUBMIT evaluations per command buffer,
// IN_FLIGHT command buffers queued before the oldest one's read-back is awaited; a sample is the
// evaluations read back after the first command buffer's over the time since its read-back.
// gen/s here is evaluations/s: native generations also run the GA (browser_report.py compares
// with both).
// Equivalence: each strategy's fitness of every individual against per-step's: batched bitwise,
// fused and team within 1e-5 relative (src/fuse/strategy.cpp's check_rtol), the individuals over
// it judged by the workload's reference tolerance (its header's "reference") as native --check
// judges them (judgeFitness).
import {bind, Pipelines, read, STORAGE, UNIFORM, upload, wallMs} from './lib/gpu.js';
import {generateMarket, MARKET_RECORD} from './lib/market.js';
import {initialGene} from './lib/rng.js';
import {loadWorkload} from './lib/sim_workload.js';
import {judgeFitness, result, summarize} from './lib/stats.js';

// src/sim/market_data.cpp device_records: the records as kernels/sim_market.wgsl reads them,
// vec4-aligned (the 6 features and 2 zeros, then the 16 returns).
const MARKET_DEVICE_RECORD = 24;
function marketDeviceRecords(records) {
  const steps = records.length / MARKET_RECORD;
  const device = new Float32Array(steps * MARKET_DEVICE_RECORD);
  for (let t = 0; t < steps; ++t) {
    const rec = records.subarray(t * MARKET_RECORD, (t + 1) * MARKET_RECORD);
    device.set(rec.subarray(0, 6), t * MARKET_DEVICE_RECORD);
    device.set(rec.subarray(6), t * MARKET_DEVICE_RECORD + 8);
  }
  return device;
}

const SEED = 1;
// As `wgfuse sim`'s defaults (src/sim/runner.h kDefaultPerSubmit, kDefaultInFlight); a size's
// `per_submit` and `batches` (command buffers per repetition, timed from the first one's
// read-back) may make a quick run shorter. At least 3 batches: the second command buffer may be
// done by the first read-back (both then read in one task), the third is submitted after it.
const PER_SUBMIT = 8, IN_FLIGHT = 2, BATCHES = 5;
const QUICK_TIMING = {per_submit: 2, batches: 3};

// The built-in workloads this suite runs, by their files (kernels/sim_NAME.wgsl, whose headers
// hold the rest: lib/sim_workload.js), and the sizes of this suite.
export const WORKLOADS = [
  {family: 'sim_acrobot', quick: {pop: 256, steps: 100, ...QUICK_TIMING}, full: {pop: 1024, steps: 500}},
  {family: 'sim_cartpole', quick: {pop: 256, steps: 100, ...QUICK_TIMING}, full: {pop: 1024, steps: 500}},
  {family: 'sim_mountaincar', quick: {pop: 256, steps: 100, ...QUICK_TIMING}, full: {pop: 1024, steps: 200}},
  {family: 'sim_rastrigin', quick: {pop: 256, steps: 64, ...QUICK_TIMING}, full: {pop: 1024, steps: 1000}},
  {family: 'sim_market', quick: {pop: 128, steps: 100, ...QUICK_TIMING}, full: {pop: 1024, steps: 500}},
];

// The per-step data generators a header may name ("data"; src/sim/workloads.cpp): the device
// records of `steps` steps and their stride in f32.
const DATA = {
  market: (steps, seed) => ({records: marketDeviceRecords(generateMarket(steps, seed)), stride: MARKET_DEVICE_RECORD}),
};

// The device records of `steps` steps of workload `w` and their stride in f32: a named generator's,
// or the header's own records (their first `steps`, as src/sim/workloads.cpp first_steps), or a
// placeholder where it has none.
function stepData(w, steps) {
  if (!w.data) return {records: new Float32Array(4), stride: 0};
  if (typeof w.data === 'object') {
    const {stride, records} = w.data;
    if (records.length < steps * stride)
      throw new Error(`${w.origin}: header field "data.records" holds ${records.length / stride} records, ` +
                      `fewer than the ${steps} steps of an episode`);
    return {records: Float32Array.from(records.slice(0, steps * stride)), stride};
  }
  if (!DATA[w.data]) throw new Error(`${w.name}: no data generator "${w.data}"`);
  return DATA[w.data](steps, SEED);
}

// Relative tolerance of each strategy's fitness against per-step's (fuse/strategy.cpp).
const RTOL = {
  perstep: 0,
  batched: 0,
  fused: 1e-5,
  team: 1e-5
};

// Gene-major initial population: gene k of individual i at k * pop + i (rng.h initial_gene).
export function initialGenomes(w, pop, steps, seed) {
  const len = w.genomeLen || steps;
  const g = new Float32Array(pop * len);
  for (let i = 0; i < pop; ++i)
    for (let k = 0; k < len; ++k) g[k * pop + i] = initialGene(seed, i, k, w.scale);
  return g;
}

// The team size: the largest power of two within the workload's, the team's workgroup and, for a
// team that shares the state through subgroup shuffles, the adapter's smallest subgroup (at least
// 4 by the WebGPU spec) (fuse::max_team).
function teamSize(device, w) {
  const subgroup = device.adapterInfo?.subgroupMinSize ?? 4;
  const m = Math.min(w.maxTeam, w.teamSplitsSteps ? Infinity : subgroup, teamWorkgroup(device, w));
  let p = 1;
  while (p * 2 <= m) p *= 2;
  return p;
}

// The team's workgroup size halved down to the device's limit, but not below the workgroup size
// (fuse::fit_team_workgroup).
function teamWorkgroup(device, w) {
  const top = Math.min(device.limits.maxComputeInvocationsPerWorkgroup, device.limits.maxComputeWorkgroupSizeX);
  let size = w.teamWorkgroup;
  while (size > top && size > w.workgroup) size /= 2;
  return size;
}

// Times every strategy of workload `w` (lib/sim_workload.js) at `sizes` ({pop, steps, per_submit?,
// batches?}) and checks each against per-step; its results are named "NAME STRATEGY" in suite
// `suiteId` ('sim' for the built-ins, 'sim-file' for a visitor's file).
export async function runWorkload(device, kernelVersion, w, sizes, reps, label, outputs, suiteId = 'sim') {
  const {pop, steps, per_submit: perSubmit = PER_SUBMIT, batches = BATCHES} = sizes;
  if (!(batches >= 3)) throw new Error(`sim: ${batches} command buffers per repetition; the timing needs 3 at least`);
  const len = w.genomeLen || steps;
  const pipes = new Pipelines(device);
  const hasTeam = device.features.has('subgroups');
  const team = hasTeam ? teamSize(device, w) : 1;
  const teamGroupSize = teamWorkgroup(device, w);
  const constants = {...w.overrides, WORKGROUP_SIZE: w.workgroup};
  const compile = async (label, team, entry, constants) => {
    try {
      return await pipes.get(label, w.module(team), entry, constants);
    } catch (e) {
      throw new Error(w.locate ? w.locate(team, e.message) : e.message);
    }
  };
  const [init, step, fitnessMain, fused] =
      await Promise.all(['sim_init_main', 'sim_step_main', 'sim_fitness_main', 'sim_fused_main'].map(
          (entry) => compile(`sim.${w.name}`, false, entry, constants)));
  const teamPipe = hasTeam ? await compile(`sim.${w.name}.team`, true, 'sim_team_main',
                                           {...w.overrides, WORKGROUP_SIZE: teamGroupSize, TEAM: team}) :
                             null;

  const {records: data, stride} = stepData(w, steps);
  const params = new Uint32Array([pop, steps, len, SEED, stride, 0, 1, 0]);
  const buffers = [
    upload(device, params, UNIFORM, `${w.name}.params`),
    upload(device, initialGenomes(w, pop, steps, SEED), STORAGE, `${w.name}.genomes`),
    upload(device, data, STORAGE, `${w.name}.data`),
    device.createBuffer({size: pop * 4, usage: STORAGE, label: `${w.name}.fitness`}),
    device.createBuffer(
        {size: pop * w.slotBytes, usage: STORAGE, label: `${w.name}.slots`}),
  ];
  const fitness = buffers[3];
  const groupOf = new Map();
  const groupFor = (p) => {
    if (!groupOf.has(p)) groupOf.set(p, bind(device, p, buffers));
    return groupOf.get(p);
  };
  const groups = Math.ceil(pop / w.workgroup);
  const teamGroups = Math.ceil((pop * team) / teamGroupSize);
  const record = (pass, p, n = groups) => {
    pass.setPipeline(p);
    pass.setBindGroup(0, groupFor(p));
    pass.dispatchWorkgroups(n);
  };
  const stepList = [init, ...Array(steps).fill(step), fitnessMain];
  // `evaluations` times `fill`, each in a pass of its own (as native ends the evaluation's pass).
  const encodePasses = (enc, fill, evaluations = 1) => {
    for (let i = 0; i < evaluations; ++i) {
      const pass = enc.beginComputePass();
      fill(pass);
      pass.end();
    }
    return enc;
  };
  const submitPass = (fill) => device.queue.submit([encodePasses(device.createCommandEncoder(), fill).finish()]);
  const strategies = [
    {name: 'perstep', dispatches: steps + 2, submits: steps + 2},
    {name: 'batched', dispatches: steps + 2, submits: 1, fill: (pass) => stepList.forEach((p) => record(pass, p))},
    {name: 'fused', dispatches: 1, submits: 1, fill: (pass) => record(pass, fused)},
  ];
  if (teamPipe)
    strategies.push({name: 'team', dispatches: 1, submits: 1, fill: (pass) => record(pass, teamPipe, teamGroups)});
  // One evaluation, to the queue's end.
  const evaluate = async (s) => {
    if (s.fill) return submitPass(s.fill);
    for (const p of stepList) {
      submitPass((pass) => record(pass, p));
      await device.queue.onSubmittedWorkDone();
    }
  };
  // The read-back buffers of the command buffers in flight (a word of the fitness each).
  const marks = Array.from({length: IN_FLIGHT}, () => device.createBuffer({size: 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST}));
  // Evaluations/s from the first read-back to the last (`wgfuse sim`'s pipelined timing; one
  // interval over several command buffers, as the page's clock may be coarse: 0.1 ms in Chrome).
  const pipelinedRate = async (s) => {
    const pending = [];
    let submitted = 0, first = 0;
    for (let b = 0; b < batches; ++b) {
      for (; submitted < batches && submitted < b + IN_FLIGHT; ++submitted) {
        const mark = marks[submitted % IN_FLIGHT], enc = encodePasses(device.createCommandEncoder(), s.fill, perSubmit);
        enc.copyBufferToBuffer(fitness, 0, mark, 0, 4);
        device.queue.submit([enc.finish()]);
        pending.push(mark.mapAsync(GPUMapMode.READ).then(() => mark.unmap()));
      }
      await pending.shift();
      if (b === 0) first = performance.now();
    }
    return (1e3 * perSubmit * (batches - 1)) / (performance.now() - first);
  };

  // Fitness of each strategy from NaN-poisoned output: an individual a strategy did not write fails.
  const poison = new Float32Array(pop).fill(NaN);
  const fitnessOf = {};
  for (const s of strategies) {
    label(`sim ${w.name}: ${s.name}, equivalence`);
    device.queue.writeBuffer(fitness, 0, poison);
    await evaluate(s);
    fitnessOf[s.name] = await read(device, fitness, Float32Array, 0, pop);
  }
  const rates = strategies.map(() => []);
  for (let r = 0; r <= reps; ++r)  // the first round is a warm-up
    for (const [i, s] of strategies.entries()) {
      label(`sim ${w.name}: ${s.name}, repetition ${r} of ${reps}`);
      const rate = s.fill ? await pipelinedRate(s) : 1e3 / await wallMs(device, () => evaluate(s));
      if (r > 0) rates[i].push(rate);
    }
  marks.forEach((m) => m.destroy());
  if (outputs)
    outputs[w.name] = {
      pop,
      steps,
      seed: SEED,
      team,
      rtol: RTOL,
      reference_tol: w.reference,
      fitness: Object.fromEntries(Object.entries(fitnessOf).map(([k, v]) => [k, Array.from(v)]))
    };

  // Generations (evaluations) per second, as native runs submit them (docs/WEB_API.md: one vocabulary).
  const perstepMedian = summarize(rates[0]).median;
  return strategies.map((s, i) => {
    // per-step is compared with fused (the check is symmetric), the others with per-step
    const other = s.name === 'perstep' ? 'fused' : 'perstep';
    const rtol = Math.max(RTOL[s.name], RTOL[other]);
    return result({
      suite: suiteId,
      name: `${w.name} ${s.name}`,
      kernelVersion,
      sizes: {pop, steps, genome_len: len, episodes: 1, ...(s.name === 'team' ? {team} : {}),
              ...(s.fill ? {per_submit: perSubmit, in_flight: IN_FLIGHT} : {})},
      unit: 'gen/s',
      samples: rates[i],
      dispatches: s.dispatches,
      submits: s.submits,
      baseline: i === 0 ? null : `${w.name} perstep`,
      baselineMedian: i === 0 ? null : perstepMedian,
      equivalence: judgeFitness(`${s.name} vs ${other} fitness (${pop} individuals)`, fitnessOf[other],
                                fitnessOf[s.name], rtol, w.reference),
    });
  });
}

async function run({device, kernels, quick, progress, repeats, outputs}) {
  const reps = repeats ?? (quick ? 3 : 7);
  const results = [];
  for (const [i, w] of WORKLOADS.entries()) {
    // runWorkload reports labels; the fraction is that of the workloads done
    const label = (text) => progress?.(i / WORKLOADS.length, text);
    label(`sim ${w.family}`);
    const workload = await loadWorkload(kernels, w.family);
    results.push(...await runWorkload(device, kernels.version, workload, quick ? w.quick : w.full, reps, label,
                                      outputs?.sim));
  }
  return results;
}

export const suite = {
  id: 'sim',
  title: 'Simulations: per-step vs batched vs fused vs team',
  run
};
export const suites = [suite];
