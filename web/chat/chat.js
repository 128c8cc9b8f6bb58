// The chat page: the served model (web/chat/model_client.js) run by the plan interpreter
// (web/chat/plan_runner.js), tokenized and templated by the vendored library
// (web/chat/tokenizer.js). The conversation's tokens stay in the KV cache between turns: a turn
// feeds only what differs from what the cache holds; the oldest turns are dropped when the
// context would overflow. body[data-state]: loading, ready, generating, unavailable, failed.
import {openDevice, WebGPUUnavailable} from '../app/adapter.js';
import {loadKernels} from '../app/kernels.js';

import {clearCache, loadIndex, loadPlan, loadShards, verifyCachedShards} from './model_client.js';
import {LimitError, PlanRunner} from './plan_runner.js';
import {tokenizerWorker} from './tokenizer.js';

const $ = (id) => document.getElementById(id);
const setState = (s) => {
  document.body.dataset.state = s;
  const idle = s === 'ready';
  $('send').disabled = !idle;
  $('new-chat').disabled = !idle;
  $('stop').disabled = s !== 'generating';
};
const showError = (message) => {
  const li = document.createElement('li');
  li.className = 'bad';
  li.textContent = message;
  $('errors').append(li);
};

const STEPS_PER_SUBMIT = 8;  // decode steps per command buffer, as `wgfuse generate` (llm::GenerateOptions)

let index, runner, tokenizer;
let fed = [];      // the ids whose keys and values the cache holds, by position
let history = [];  // [{role, content}] of this conversation
let aborter = null;
let shardStats = null;  // loadShards' stats, and write_buffer_ms: the main thread's time in writeBuffer
let verified = null;  // the cached shards hashed again after the load (verifyCachedShards)
let readyMs = 0;   // when the page became ready, in ms since it started loading

function explain(e) {
  const body = $('model-body');
  body.replaceChildren();
  const p = document.createElement('p');
  p.className = 'bad';
  p.textContent = e.message;
  body.append(p);
  for (const a of e.advice ?? []) {
    const q = document.createElement('p');
    q.textContent = a;
    body.append(q);
  }
}

// What the load spends its time on: {name: [start, end]} in ms since the page started loading
// (phases overlap: they run concurrently where they can); first_token_* from the first turn.
const phases = {};
const longTasks = [];  // the main thread's tasks over 50 ms, [start, duration] (issue 25: none over 100)
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) longTasks.push([Math.round(e.startTime), Math.round(e.duration)]);
}).observe({type: 'longtask', buffered: true});
async function timed(name, work) {
  const t0 = performance.now();
  try {
    return await work;
  } finally {
    phases[name] = [Math.round(t0), Math.round(performance.now())];
  }
}

async function start() {
  const {adapter, device} = await timed('device', openDevice());
  if (!device.features.has('subgroups'))
    throw new WebGPUUnavailable('The LLM kernels need the WebGPU feature "subgroups", which this adapter does not offer.',
                                ['Chrome and Edge offer it from version 134; update the browser.']);
  device.addEventListener('uncapturederror', (e) => showError(`WebGPU: ${e.error.message}`));
  device.lost.then((info) => info.reason !== 'destroyed' && showError(`the GPU device was lost: ${info.message}`));
  let kernels;
  [kernels, index] = await Promise.all([timed('kernel_index', loadKernels()), timed('model_index', loadIndex())]);
  $('model-name').textContent = index.name;
  if (!index.files.includes('tokenizer.json'))
    throw new WebGPUUnavailable(`The served model ${index.name} comes without a tokenizer this page can use: ` +
                                (index.tokenizer_unavailable ?? 'the server lists no tokenizer.json'),
                                ['Start wgfuse serve --model with the model\'s Hugging Face folder to chat here; ' +
                                 'the benchmark page\'s llm suite and the OpenAI API at /v1/ run the model as it is.']);
  // The tokenizer (in its worker), the kernels' pipelines and the weights load side by side.
  tokenizer = tokenizerWorker();
  const tokenizerLoaded = timed('tokenizer', tokenizer.loaded);
  runner = new PlanRunner(device, kernels.get);
  // The cached shards are read while the plan comes; each is uploaded once the plan's buffers exist.
  const t0 = performance.now();
  const plan = timed('plan', loadPlan(1));
  const prepared = plan.then((p) => runner.prepare(p));  // the buffers (or the limit the plan exceeds)
  const planned = prepared.then(async () => timed('pipelines', runner.use(await plan)));
  let writeMs = 0;
  const upload = async (s, b) => {
    await prepared;
    const t = performance.now();
    runner.uploadShard(s, b);
    writeMs += performance.now() - t;
  };
  const weightsLoaded = timed('weights', loadShards(index, upload, (done, total, fromCache) => {
    $('progress').value = done / total;
    $('progress-label').textContent = `weights ${(done / 1e6).toFixed(1)} of ${(total / 1e6).toFixed(1)} MB` +
        (fromCache ? ` (${(fromCache / 1e6).toFixed(1)} MB from the cache)` : '');
  }));
  // Awaited below; a failure of any is the error told, whichever comes first.
  [planned, weightsLoaded, tokenizerLoaded].forEach((p) => p.catch(() => {}));
  const m = index.model;
  $('model-body').innerHTML = '';
  const facts = document.createElement('p');
  facts.textContent = `${m.architecture}, ${m.num_layers} layers, hidden ${m.hidden_size}, vocabulary ${m.vocab_size}, ` +
      `context ${index.ctx}; GPU ${adapter.info?.vendor ?? ''} ${adapter.info?.architecture ?? ''}, ` +
      `maxStorageBufferBindingSize ${device.limits.maxStorageBufferBindingSize}`;
  $('model-body').append(facts);
  const {bytes, cached, fromCache, stats} = await weightsLoaded;
  shardStats = {...stats, write_buffer_ms: writeMs};
  const loadedMs = performance.now() - t0;
  await Promise.all([planned, tokenizerLoaded, timed('upload_done', device.queue.onSubmittedWorkDone())]);
  readyMs = performance.now();  // since the page started loading
  $('progress-label').textContent = `weights ${(bytes / 1e6).toFixed(1)} MB loaded in ${(loadedMs / 1e3).toFixed(2)} s` +
      (cached ? `, ${(cached / 1e6).toFixed(1)} MB of them from the cache` : '') +
      `; ready ${(readyMs / 1e3).toFixed(2)} s after the page started loading`;
  // The shards taken from the cache unhashed are hashed now, off the main thread; a damaged one
  // is fetched and uploaded again (a generation begun before then may have read it).
  verified = timed('verify', verifyCachedShards(fromCache, upload)).then((refetched) => {
    if (refetched.length)
      showError(`${refetched.length} cached weight shard(s) were damaged (${refetched.join(', ')}): fetched again and uploaded`);
    return {refetched};
  }, (e) => {
    showError(e.message);
    return {error: e.message};
  });
}

function sampling() {
  const temperature = Number($('temperature').value);
  if (temperature === 0) return {temperature: 0};
  return {
    temperature,
    top_k: Number($('top-k').value),
    top_p: Number($('top-p').value),
    repeat_penalty: Number($('repeat-penalty').value),
    seed: Number($('seed').value),
  };
}

// Feeds `ids` (the whole conversation so far) reusing the cache's common prefix, then generates;
// onToken(ids so far). Returns {generated, timing}.
async function generate(ids, {maxTokens, sample, onToken, logits, signal, stepsPerSubmit = STEPS_PER_SUBMIT}) {
  for (const id of ids)
    if (id >= index.model.vocab_size)
      throw new Error(`token id ${id} is past the model's vocabulary (${index.model.vocab_size}): the tokenizer does not belong to this model`);
  const tCall = performance.now();
  let start = 0;
  while (start < fed.length && start < ids.length - 1 && fed[start] === ids[start]) ++start;
  const fresh = ids.slice(start);
  const time = phases.first_token_plan ? (name, work) => work : timed;  // the page's first generation is timed
  const plan = await time('first_token_plan', loadPlan(fresh.length, sample));
  await time('first_token_pipelines', runner.use(plan));
  const t0 = performance.now();
  runner.prefill(fresh, start);
  fed = ids.slice();
  const generated = [];
  let tFirst = 0, decodeDispatches = 0, decodeSteps = 0, encodeMs = 0, maxInFlight = 0;
  const stop = new Set(index.stop_ids);
  for await (const {id} of runner.generate(ids.length - 1, {
    maxTokens,
    stop: (id) => stop.has(id),
    signal,
    logits,
    stepsPerSubmit,
    onBatch: (d, n, ms, inFlight) => {
      decodeDispatches += d;
      decodeSteps += n;
      encodeMs += ms;
      maxInFlight = Math.max(maxInFlight, inFlight);
    },
  })) {
    if (!tFirst) tFirst = performance.now();
    generated.push(id);
    onToken?.(generated);
  }
  const tEnd = performance.now();
  // Every generated token but the last was fed by a decode step.
  fed = fed.concat(generated.slice(0, -1));
  const decodeMs = tEnd - tFirst, steps = generated.length - 1;
  return {
    generated,
    timing: {
      prompt_tokens: fresh.length,
      cached_tokens: start,
      prefill_ms: tFirst - t0,
      first_token_ms: tFirst - tCall,  // the plan fetched and its new kernels compiled too
      prefill_tok_s: perSecond(fresh.length, tFirst - t0),
      generated: generated.length,
      decode_tok_s: steps > 0 ? perSecond(steps, decodeMs) : 0,
      dispatches_per_token: decodeSteps ? decodeDispatches / decodeSteps : 0,
      encode_ms_per_token: decodeSteps ? encodeMs / decodeSteps : 0,  // JS recording and submitting
      max_in_flight: maxInFlight,  // command buffers queued at once (the first token's read-back one)
    },
  };
}

// n per second over ms, or null where ms is 0: the clock (coarse in a page) saw no time pass, as when
// a few decode tokens come back in one read-back with the first.
function perSecond(n, ms) {
  return ms > 0 ? (1e3 * n) / ms : null;
}

function rateText(r) {
  return r === null ? 'too short to time' : `${r.toFixed(1)} tok/s`;
}

function timingLine(t) {
  return `[${t.prompt_tokens} prompt tokens (${t.cached_tokens} cached), first token in ${t.prefill_ms.toFixed(0)} ms, ` +
      `prefill ${rateText(t.prefill_tok_s)}, ` +
      `${t.generated} generated, decode ${rateText(t.decode_tok_s)}, ${t.dispatches_per_token.toFixed(1)} dispatches/token]`;
}

function addMessage(role, text) {
  const div = document.createElement('div');
  div.className = `message ${role}`;
  div.textContent = text;
  $('messages').append(div);
  return div;
}

// The conversation's ids, dropping the oldest turns while it and the reply would not fit.
async function conversationIds(maxTokens) {
  const system = $('system').value.trim();
  for (;;) {
    const messages = system ? [{role: 'system', content: system}, ...history] : history;
    const ids = await tokenizer.encode(await tokenizer.render(messages, true));
    if (ids.length + maxTokens <= index.ctx || history.length <= 1) {
      if (ids.length >= index.ctx)
        throw new Error(`the message is ${ids.length} tokens; the context holds ${index.ctx}: shorten it`);
      return ids;
    }
    history = history.slice(2);
    addMessage('note', 'the oldest turn was dropped to fit the context');
  }
}

async function send() {
  const text = $('input').value.trim();
  if (!text) return;
  $('input').value = '';
  setState('generating');
  addMessage('user', text);
  history.push({role: 'user', content: text});
  const out = addMessage('assistant', '…');
  aborter = new AbortController();
  try {
    const maxTokens = Math.max(1, Math.floor(Number($('max-tokens').value)));
    const ids = await conversationIds(maxTokens);
    const stop = new Set(index.stop_ids);
    const {generated, timing} = await generate(ids, {
      maxTokens: Math.min(maxTokens, index.ctx - ids.length),
      sample: sampling(),
      signal: aborter.signal,
      onToken: (g) => {
        // (Answered in the order asked: the last text shown is the latest.)
        tokenizer.decode(g.filter((id) => !stop.has(id))).then((text) => (out.textContent = text), () => {});
      },
    });
    const reply = await tokenizer.decode(generated.filter((id) => !stop.has(id)));
    out.textContent = reply;
    history.push({role: 'assistant', content: reply});
    $('timing').textContent = timingLine(timing);
  } catch (e) {
    showError(e.message);
    history.pop();
  } finally {
    aborter = null;
    setState('ready');
  }
}

// For the tests (tests/web/chat_e2e.mjs): a generation from ids (greedy unless `sample` says),
// from an empty cache, with the logits of every token unless `withLogits` is false (then
// `stepsPerSubmit` decode steps per command buffer).
window.wgfuseChat = {
  async generateIds(ids, n, sample = {temperature: 0}, {withLogits = true, stepsPerSubmit} = {}) {
    fed = [];
    const logits = withLogits ? [] : undefined;
    const {generated, timing} = await generate(ids, {maxTokens: n, sample, logits, stepsPerSubmit});
    fed = [];
    return {tokens: generated, logits: logits?.map((l) => Array.from(l)), timing};
  },
  encode: (texts) => Promise.all(texts.map((t) => tokenizer.encode(t))),
  readyMs: () => readyMs,
  phases: () => phases,
  // What the load did: phases, the main thread's long tasks [start, duration] (ms), shard stats.
  loadReport: () => ({phases, long_tasks: longTasks, shards: shardStats}),
  verified: () => verified,
};

$('send').addEventListener('click', send);
$('input').addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !$('send').disabled) {
    e.preventDefault();
    send();
  }
});
$('stop').addEventListener('click', () => aborter?.abort());
$('new-chat').addEventListener('click', () => {
  history = [];
  $('messages').replaceChildren();
  $('timing').textContent = '';
});
$('clear-cache').addEventListener('click', () => {
  clearCache().then(() => ($('cache-status').textContent = 'cleared'), (e) => ($('cache-status').textContent = e.message));
});

start().then(() => setState('ready'), (e) => {
  explain(e);
  setState(e instanceof WebGPUUnavailable || e instanceof LimitError ? 'unavailable' : 'failed');
});
