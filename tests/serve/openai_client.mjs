// The official `openai` npm client against `wgfuse serve --model` on a small random model (written by
// tests/test_serve_openai.cpp): chat and completions, streamed and whole, equal at temperature 0
// to what `wgfuse generate` gives for the same prompt; stop strings, seeds, the usage chunk and
// `data: [DONE]`; OpenAI's error shapes and codes; /v1/models and /health; concurrent requests
// decoded together (--parallel 2) each equal to its sequential reply; the queue (a waiting stream
// says its position), /health answered while long streams decode, a client that leaves freeing its
// slot; the benchmark page and results API still served beside the model.
//
//   node tests/serve/openai_client.mjs WGFUSE MODEL_DIR
import assert from 'node:assert/strict';
import {execFile, spawn} from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {promisify} from 'node:util';
import OpenAI from 'openai';

const [wgfuse, modelDir] = process.argv.slice(2);
if (!wgfuse || !modelDir) {
  console.error('usage: node openai_client.mjs WGFUSE MODEL_DIR');
  process.exit(2);
}
const adapter = process.env.WGFUSE_TEST_ADAPTER || 'auto';
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wgfuse-openai-'));
const key = 'sk-test-' + Math.random().toString(36).slice(2);
const modelId = path.basename(modelDir);

// `wgfuse generate` at temperature 0: the reference every reply is compared with. (Asynchronous:
// a blocked event loop would let the client reuse a keep-alive connection the server has closed.)
let generated = 0;
async function generate(args) {
  const json = path.join(tmp, `generate-${++generated}.json`);
  await promisify(execFile)(wgfuse, ['--adapter', adapter, 'generate', '-m', modelDir, '--dtype', 'f32', '--temp',
                                     '0', '--json', json, ...args]);
  return JSON.parse(fs.readFileSync(json, 'utf8'));
}

let serverProc = null;  // killed at exit whatever happens
process.on('exit', () => serverProc?.kill('SIGKILL'));
function startServer() {
  const proc = serverProc = spawn(wgfuse, ['serve', '--model', modelDir, '--dtype', 'f32', '--adapter', adapter, '--port', '0',
                              '--db', path.join(tmp, 'results.sqlite'), '--api-key', key, '--max-queue', '4',
                              '--parallel', '2'],
                     {stdio: ['ignore', 'pipe', 'inherit']});
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('serve did not start within 300 s:\n' + out)), 300000);
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/http:\/\/127\.0\.0\.1:(\d+)\//);
      if (m) {
        clearTimeout(timer);
        resolve({proc, port: Number(m[1])});
      }
    });
    proc.on('exit', (code) => reject(new Error(`serve exited (${code}) before listening:\n${out}`)));
  });
}

// The error an awaited request throws (the test fails if it does not throw).
async function failure(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  assert.fail('the request succeeded');
}

async function collect(stream) {
  let text = '', finish = null, usage = null, chunks = 0;
  for await (const chunk of stream) {
    ++chunks;
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.delta?.content ?? c.text ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return {text, finish, usage, chunks};
}

const started = performance.now();
const phase = (name) => console.log(`${((performance.now() - started) / 1e3).toFixed(1)} s: ${name}`);
// The references run beside the server's start (each process compiles its pipelines).
const question = 'Hello there, who are you?';
const ids = [7, 123, 42, 255, 0, 64, 5];
const [{proc, port}, want, wantIds] = await Promise.all([
  startServer(), generate(['--chat', '-p', question, '-n', '12']), generate(['--prompt-ids', ids.join(','), '-n', '10'])]);
phase('listening, references generated');
const base = `http://127.0.0.1:${port}`;
const client = new OpenAI({baseURL: `${base}/v1`, apiKey: key, maxRetries: 0, timeout: 120000});
const auth = {Authorization: `Bearer ${key}`};
const health = async () => (await fetch(`${base}/health`)).json();
try {
  // Chat at temperature 0: whole and streamed, equal to `wgfuse generate --chat`.
  const finishWanted = want.stopped_at_eos ? 'stop' : 'length';
  const messages = [{role: 'user', content: question}];
  const whole = await client.chat.completions.create({model: modelId, messages, temperature: 0, max_tokens: 12});
  assert.equal(whole.object, 'chat.completion');
  assert.equal(whole.model, modelId);
  assert.equal(whole.choices.length, 1);
  assert.equal(whole.choices[0].message.role, 'assistant');
  assert.equal(whole.choices[0].message.content, want.text);
  assert.equal(whole.choices[0].finish_reason, finishWanted);
  assert.deepEqual(whole.usage, {prompt_tokens: want.prompt_ids.length, completion_tokens: want.generated_ids.length,
                                 total_tokens: want.prompt_ids.length + want.generated_ids.length});
  const streamed = await collect(await client.chat.completions.create(
      {model: modelId, messages, temperature: 0, max_completion_tokens: 12, stream: true,
       stream_options: {include_usage: true}}));
  assert.equal(streamed.text, want.text);
  assert.equal(streamed.finish, finishWanted);
  assert.deepEqual(streamed.usage, whole.usage);
  // Content given as text parts is the same message.
  const parts = await client.chat.completions.create(
      {messages: [{role: 'user', content: [{type: 'text', text: question}]}], temperature: 0, max_tokens: 12});
  assert.equal(parts.choices[0].message.content, want.text);

  phase('chat');
  // Completions from token ids, equal to `wgfuse generate --prompt-ids`; from text, streamed and whole.
  const fromIds = await client.completions.create({model: modelId, prompt: ids, temperature: 0, max_tokens: 10});
  assert.equal(fromIds.object, 'text_completion');
  assert.equal(fromIds.choices[0].text, wantIds.text);
  assert.equal(fromIds.usage.completion_tokens, wantIds.generated_ids.length);
  const textWhole = await client.completions.create({prompt: 'Once upon a time', temperature: 0, max_tokens: 9});
  const fromText = await collect(await client.completions.create(
      {model: modelId, prompt: 'Once upon a time', temperature: 0, max_tokens: 9, stream: true}));
  assert.equal(fromText.text, textWhole.choices[0].text);
  assert.equal(fromText.usage.completion_tokens, textWhole.usage.completion_tokens);  // in the finish chunk

  phase('completions');
  // A stop string: the text before it, finish_reason stop.
  if (want.text.length >= 4) {
    const stop = want.text.slice(2, 4);
    const cut = await client.chat.completions.create({messages, temperature: 0, max_tokens: 12, stop: [stop]});
    assert.equal(cut.choices[0].message.content, want.text.slice(0, want.text.indexOf(stop)));
    assert.equal(cut.choices[0].finish_reason, 'stop');
  } else {
    console.log(`(the reference reply "${want.text}" is too short for the stop string check)`);
  }
  // Sampling with a seed repeats itself.
  const sampled = () => client.chat.completions.create({messages, temperature: 0.9, top_p: 0.95, top_k: 40, seed: 5,
                                                        max_tokens: 8});
  assert.equal((await sampled()).choices[0].message.content, (await sampled()).choices[0].message.content);

  phase('stop strings and seeds');
  // The raw stream: `data: ` events, the last `data: [DONE]`.
  const raw = await (await fetch(`${base}/v1/chat/completions`, {
    method: 'POST', headers: {...auth, 'Content-Type': 'application/json'},
    body: JSON.stringify({messages, temperature: 0, max_tokens: 4, stream: true})})).text();
  assert.match(raw, /^data: \{/);
  assert.ok(raw.endsWith('data: [DONE]\n\n'), raw);

  // Models and health.
  const models = [];
  for await (const m of client.models.list()) models.push(m);
  assert.deepEqual(models.map((m) => [m.id, m.object]), [[modelId, 'model']]);
  assert.equal((await client.models.retrieve(modelId)).id, modelId);
  const h = await health();
  assert.equal(h.status, 'ok');
  assert.equal(h.parallel, 2);
  assert.equal(h.scheduling, 'batched');

  phase('models and health');
  // Three requests at once on two slots (one waits): each reply equal to the same request alone,
  // whatever ran beside it (temperature 0).
  const concurrent = [{prompt: ids, max_tokens: 10}, {prompt: 'Once upon a time', max_tokens: 9},
                      {prompt: [201, 9, 11, 250, 3], max_tokens: 7}];
  const alone = [];
  for (const body of concurrent) alone.push((await client.completions.create({...body, temperature: 0})).choices[0]);
  const together = await Promise.all(concurrent.map(async (body) => collect(await client.completions.create(
      {...body, temperature: 0, stream: true}))));
  assert.equal(alone[0].text, wantIds.text);
  for (let i = 0; i < concurrent.length; ++i) {
    assert.equal(together[i].text, alone[i].text, `concurrent request ${i}`);
    assert.equal(together[i].finish, alone[i].finish_reason, `concurrent request ${i}`);
  }

  phase('concurrent requests');
  // Errors: OpenAI's classes, status codes, types, params and codes.
  const e401 = await failure(new OpenAI({baseURL: `${base}/v1`, apiKey: 'wrong', maxRetries: 0}).models.list());
  assert.ok(e401 instanceof OpenAI.AuthenticationError, String(e401));
  assert.equal(e401.code, 'invalid_api_key');
  const e400n = await failure(client.chat.completions.create({messages, n: 2}));
  assert.ok(e400n instanceof OpenAI.BadRequestError);
  assert.equal(e400n.param, 'n');
  assert.equal(e400n.type, 'invalid_request_error');
  const eCtx = await failure(client.chat.completions.create({messages, max_tokens: 100000}));
  assert.equal(eCtx.status, 400);
  assert.equal(eCtx.code, 'context_length_exceeded');
  assert.match(eCtx.message, /maximum context length is 128 tokens/);
  const e404 = await failure(client.chat.completions.create({model: 'gpt-4o', messages}));
  assert.ok(e404 instanceof OpenAI.NotFoundError);
  assert.equal(e404.code, 'model_not_found');
  for (const [body, param] of [[{messages: [{role: 'tool', content: 'x'}]}, 'messages[0].role'],
                               [{messages, logprobs: true}, 'logprobs'],
                               [{messages, temperature: 3}, 'temperature'],
                               [{messages, stop: ['a', 'b', 'c', 'd', 'e']}, 'stop'],
                               [{messages, frobnicate: 1}, 'frobnicate'],
                               [{messages: []}, 'messages']]) {
    const e = await failure(client.chat.completions.create(body));
    assert.equal(e.status, 400, JSON.stringify(body));
    assert.equal(e.param, param, JSON.stringify(body));
  }
  for (const [method, url, body, status] of [['POST', '/v1/chat/completions', '{"messages": [', 400],
                                             ['POST', '/v1/models', '{}', 405],
                                             ['GET', '/v1/nothing', undefined, 404]]) {
    const r = await fetch(base + url, {method, headers: {...auth, 'Content-Type': 'application/json'}, body});
    assert.equal(r.status, status, url);
    const e = (await r.json()).error;
    assert.deepEqual(Object.keys(e).sort(), ['code', 'message', 'param', 'type'], url);
    assert.equal(typeof e.message, 'string');
  }

  phase('errors');
  // A long stream (greedy from ids that do not end early) keeps decoding while /health answers at
  // once and a second stream waits in the queue, saying where it stands.
  let longIds = null;
  for (const first of [11, 29, 47, 83, 101, 139]) {
    const candidate = [first, 3, 200, 17, 9];
    const r = await client.completions.create({prompt: candidate, temperature: 0, max_tokens: 100});
    if (r.choices[0].finish_reason === 'length') {
      longIds = candidate;
      break;
    }
  }
  if (longIds) {
    // Two long streams fill both slots.
    const aborts = [new AbortController(), new AbortController()];
    for (const abort of aborts) {
      const long = await client.completions.create({prompt: longIds, temperature: 0, max_tokens: 100, stream: true},
                                                   {signal: abort.signal});
      await long[Symbol.asyncIterator]().next();  // the first token is out: the request is decoding
    }
    const t0 = performance.now();
    const during = await health();
    const healthMs = performance.now() - t0;
    assert.equal(during.running, 2);
    assert.ok(healthMs < 1000, `/health took ${healthMs} ms during a generation`);
    const waiting = await fetch(`${base}/v1/completions`, {
      method: 'POST', headers: {...auth, 'Content-Type': 'application/json'},
      body: JSON.stringify({prompt: [5, 6, 7], temperature: 0, max_tokens: 3, stream: true})});
    const waitingText = waiting.text();
    // The clients leave mid-stream: the worker drops their requests at their next token.
    for (const abort of aborts) abort.abort();
    const served = await waitingText;
    assert.match(served, /^: queued, 2 ahead\n\n/);
    assert.ok(served.endsWith('data: [DONE]\n\n'));
    const after = await health();
    assert.equal(after.running, 0);
    assert.equal(after.queued, 0);
    assert.ok(after.cancelled >= 2, JSON.stringify(after));
  } else {
    console.log('(every candidate prompt ends early on this model: the long-stream checks were skipped)');
  }

  phase('queue and disconnect');
  // The benchmark's page and API beside the model's.
  assert.equal((await fetch(`${base}/api/summary`)).status, 200);
  assert.equal((await fetch(`${base}/kernels/index.json`)).status, 200);
  console.log('openai client: all checks passed');
} finally {
  proc.kill('SIGTERM');
  await new Promise((resolve) => proc.on('exit', resolve));
  fs.rmSync(tmp, {recursive: true, force: true});
}
