// Suite `llm`: the model `wgfuse serve --model` serves, run on this GPU by the chat page's plan
// interpreter (web/chat/plan_runner.js: the native engine's own plan, kernels and packed weights,
// the weights cached as the chat page caches them). Offered only where the server serves a model.
//   check    a greedy generation from the prompt of GET /model/check.json, whose tokens must equal
//            the ones the server's native engine generated at start (the server compares them
//            again when the results are submitted, and keeps a failed check, flagged)
//   prefill  tok/s over the benchmark prompt (its ids from the server): from the prefill's first
//            state write to its first token read back
//   decode   tok/s of the greedy tokens after it, STEPS_PER_SUBMIT decode steps per command buffer
// Each timed repetition prefills the prompt from position 0 and decodes after it; the median of
// REPS repetitions after one warm-up.
import {loadIndex, loadPlan, loadShards} from '../chat/model_client.js';
import {PlanRunner} from '../chat/plan_runner.js';
import {result} from './lib/stats.js';

const STEPS_PER_SUBMIT = 8;  // `wgfuse generate`'s default (llm::GenerateOptions), for like timings
const REPS = 5, QUICK_REPS = 3;
const QUICK_PROMPT = 32, QUICK_DECODE = 16;

// GET /model/check.json, or null where the server serves no model.
async function loadCheck() {
  const r = await fetch('/model/check.json', {cache: 'no-cache'}).catch(() => null);
  return r?.ok ? r.json() : null;
}

// One prefill of `ids` from position 0 and the greedy tokens after it (the first picked by the
// prefill): {tokens, prefillMs, decodeMs, prefillDispatches, decodeDispatches, prefillSubmits,
// decodeSubmits}.
async function generation(runner, ids, decodeTokens) {
  const t0 = performance.now(), s0 = runner.submits;
  const prefillDispatches = runner.prefill(ids, 0);
  let tFirst = 0, sFirst = 0, decodeDispatches = 0;
  const tokens = [];
  for await (const {id} of runner.generate(ids.length - 1, {
    maxTokens: decodeTokens + 1,
    stepsPerSubmit: STEPS_PER_SUBMIT,
    onBatch: (d) => (decodeDispatches += d),
  })) {
    if (!tokens.length) {
      tFirst = performance.now();
      sFirst = runner.submits;
    }
    tokens.push(id);
  }
  return {
    tokens,
    prefillMs: tFirst - t0,
    decodeMs: performance.now() - tFirst,
    prefillDispatches,
    decodeDispatches,
    prefillSubmits: sFirst - s0,
    decodeSubmits: runner.submits - sFirst,
  };
}

// The check's equivalence record: the browser's tokens against the native run's, position by
// position (max_abs_diff counts the positions that differ; tolerance 0).
function tokenCheck(got, expected) {
  let differ = Math.abs(got.length - expected.length);
  for (let i = 0; i < Math.min(got.length, expected.length); ++i) differ += got[i] !== expected[i];
  return {
    passed: differ === 0,
    compared: `${expected.length} greedy tokens vs the server's native run (GET /model/check.json)`,
    max_abs_diff: differ,
    tolerance: 0,
    tokens: got,
  };
}

export const suite = {
  id: 'llm',
  title: 'LLM (the served model)',
  async run({device, kernels, quick, progress}) {
    if (!device.features.has('subgroups'))
      throw new Error('the LLM kernels need the WebGPU feature "subgroups", which this adapter does not offer');
    const [index, check] = await Promise.all([loadIndex(), loadCheck()]);
    if (!check) throw new Error('GET /model/check.json failed: is wgfuse serve still serving the model?');
    const prompt = quick ? check.bench.prompt_ids.slice(0, QUICK_PROMPT) : check.bench.prompt_ids;
    const decodeTokens = quick ? Math.min(QUICK_DECODE, check.bench.decode_tokens) : check.bench.decode_tokens;
    const reps = quick ? QUICK_REPS : REPS;
    const runner = new PlanRunner(device, kernels.get);
    try {
      progress(0, 'plan and kernels');
      await runner.use(await loadPlan(check.prompt_ids.length));
      await loadShards(index, (s, b) => runner.uploadShard(s, b), (done, total) => {
        progress((0.3 * done) / total, `weights ${(done / 1e6).toFixed(1)} of ${(total / 1e6).toFixed(1)} MB`);
      });
      progress(0.3, 'the check generation');
      performance.mark('wgfuse-llm-generation-start');  // the main thread's long tasks are judged from here (tests)
      const checked = await generation(runner, check.prompt_ids, check.expected_ids.length - 1);
      const equivalence = tokenCheck(checked.tokens, check.expected_ids);

      await runner.use(await loadPlan(prompt.length));
      const prefill = [], decode = [];
      let last = null;
      for (let rep = -1; rep < reps; ++rep) {  // rep -1: the warm-up
        progress(0.4 + (0.6 * (rep + 1)) / (reps + 1), rep < 0 ? 'warm-up' : `repetition ${rep + 1} of ${reps}`);
        last = await generation(runner, prompt, decodeTokens);
        if (rep < 0) continue;
        prefill.push((1e3 * prompt.length) / last.prefillMs);
        decode.push((1e3 * decodeTokens) / last.decodeMs);
      }
      performance.mark('wgfuse-llm-generation-end');
      const m = index.model;
      const sizes = {prompt_tokens: prompt.length, layers: m.num_layers, hidden_size: m.hidden_size, vocab_size: m.vocab_size};
      const common = {suite: 'llm', kernelVersion: kernels.version, unit: 'tok/s'};
      progress(1, `decode ${last.decodeDispatches / decodeTokens} dispatches/token`);
      return [
        result({
          ...common,
          name: `${index.name} prefill`,
          sizes,
          samples: prefill,
          dispatches: last.prefillDispatches,
          submits: last.prefillSubmits,
          equivalence: {...equivalence},
        }),
        result({
          ...common,
          name: `${index.name} decode`,
          sizes: {...sizes, tokens: decodeTokens},
          samples: decode,
          dispatches: last.decodeDispatches,
          submits: last.decodeSubmits,
          equivalence: {...equivalence},
        }),
      ];
    } finally {
      runner.destroy();
    }
  },
};

// Offered only where the server serves a model.
export const suites = (await loadCheck()) ? [suite] : [];
