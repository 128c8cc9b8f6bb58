// The chat page end to end in headless chromium (WebGPU on SwiftShader) against
// `wgfuse serve --model DIR`: the page replays the native plan (web/chat/plan_runner.js) with the
// served packed weights, and its greedy tokens equal `wgfuse generate`'s with every token's
// logits within 1e-5 (relative to the largest), and so do its sampled tokens (the plan's sampler,
// same seed); its tokenizer (the vendored library, over the model's tokenizer.json or the one the
// server makes of a GGUF file's metadata) gives the native tokenizer's ids on the tokenizer
// corpus; a chat turn streams a reply with its timing line; Stop ends a reply; a reload takes every
// shard from the cache (none fetched, none hashed during the load), a damaged cached shard is found
// after the load and fetched again, and Clear empties the cache.
//
//   node tests/web/chat_e2e.mjs --wgfuse build/wgfuse --model DIR|FILE.gguf --out DIR [--chromium PATH]
//        [--chromium-arg ARG]... [--tokens N] [--serve-arg ARG]... [--cases greedy,sampled,long,hot]
//        [--skip-ui] [--weight-formats q8_0,q4_0]
// --cases: the generations compared with wgfuse generate (default all four); --skip-ui: only
// they, the tokenizer and two chat turns (not Stop, the limit refusal, the cached reload and the
// page without WebGPU); --weight-formats: storage formats the served plan must use.
// On a GPU machine (a real model, its timing lines compared with the native run's):
//   --chromium-arg=--enable-features=Vulkan --chromium-arg=--use-vulkan --tokens 64
import assert from 'node:assert/strict';
import {execFileSync, spawn} from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {parseArgs} from 'node:util';
import {chromium} from 'playwright-core';

import {freePort} from './free_port.mjs';

const {values: opts} = parseArgs({
  options: {
    wgfuse: {type: 'string'},
    model: {type: 'string'},
    out: {type: 'string'},
    chromium: {type: 'string', default: '/usr/bin/chromium'},
    'chromium-arg': {type: 'string', multiple: true, default: []},
    'serve-arg': {type: 'string', multiple: true, default: []},
    tokens: {type: 'string', default: '6'},
    cases: {type: 'string', default: 'greedy,sampled,long,hot'},
    'skip-ui': {type: 'boolean', default: false},
    'weight-formats': {type: 'string'},
  },
});
if (!opts.wgfuse || !opts.model || !opts.out) {
  console.error('usage: node chat_e2e.mjs --wgfuse BIN --model DIR --out DIR [--chromium PATH]');
  process.exit(2);
}
fs.mkdirSync(opts.out, {recursive: true});
const step = (what) => console.log(`chat e2e: ${what}`);
const PROMPT = [5, 17, 301, 44, 9, 230, 7];
const N = Number(opts.tokens);
const LOGIT_RTOL = 1e-5;

// A float32 .npy's values (`wgfuse generate --dump-logits`).
function readNpy(file) {
  const b = fs.readFileSync(file);
  const headerLength = b.readUInt16LE(8);
  const header = b.subarray(10, 10 + headerLength).toString('latin1');
  assert.match(header, /'descr': '<f4'/, `${file}: not float32`);
  const data = b.subarray(10 + headerLength);
  return new Float32Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.length));
}

// Sampling settings as the page asks the server (query names) and as `wgfuse generate` takes them.
const SAMPLE = {temperature: 0.9, top_k: 50, top_p: 0.95, repeat_penalty: 1.2, seed: 3};
const SAMPLE_FLAGS = ['--temp', '0.9', '--top-k', '50', '--top-p', '0.95', '--repeat-penalty', '1.2', '--seed', '3'];

function native(tag, prompt, flags) {
  const json = path.join(opts.out, `native_${tag}.json`), npy = path.join(opts.out, `native_${tag}_logits.npy`);
  execFileSync(opts.wgfuse, [
    'generate', '-m', opts.model, '--prompt-ids', prompt.join(','), '-n', String(N), ...flags,
    '--json', json, '--dump-logits', npy,
  ], {stdio: ['ignore', 'inherit', 'inherit']});
  return {tokens: JSON.parse(fs.readFileSync(json, 'utf8')).generated_ids, logits: readNpy(npy)};
}

async function startServer() {
  const port = await freePort();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wgfuse-chat-e2e-'));
  const args = ['serve', '--host', '127.0.0.1', '--port', String(port), '--db', path.join(tmp, 'r.sqlite'), '--model', opts.model, ...opts['serve-arg']];
  step(`starting ${opts.wgfuse} ${args.join(' ')}`);
  const child = spawn(opts.wgfuse, args, {stdio: ['ignore', 'inherit', 'inherit']});
  let exited = null;
  child.on('exit', (code, signal) => (exited = {code, signal}));
  const base = `http://127.0.0.1:${port}`;
  for (const deadline = Date.now() + 120_000; Date.now() < deadline;) {
    if (exited) throw new Error(`wgfuse serve exited before answering (code ${exited.code}, signal ${exited.signal})`);
    if (await fetch(`${base}/model/index.json`).then((r) => r.ok, () => false)) return {base, child, tmp};
    await new Promise((r) => setTimeout(r, 300));
  }
  child.kill('SIGKILL');
  throw new Error(`wgfuse serve --model did not answer ${base}/model/index.json within 120 s`);
}

// A prompt longer than a prefill chunk (512): two chunks, the decode past attn_short_max (512)
// in the split variant.
const LONG_PROMPT = Array.from({length: 520}, (_, i) => (i * 37 + 11) % 997);
const ALL_CASES = {
  greedy: {tag: 'greedy', prompt: PROMPT, flags: ['--temp', '0']},
  sampled: {tag: 'sampled', prompt: PROMPT, flags: SAMPLE_FLAGS, sample: SAMPLE},
  long: {tag: 'long prompt', prompt: LONG_PROMPT, flags: ['--temp', '0']},
  // The random model's greedy and mildly sampled tokens repeat the prompt's last one; hot sampling
  // gives tokens that differ from step to step, so that a token read from the wrong position fails.
  hot: {tag: 'hot sampled', prompt: PROMPT, flags: ['--temp', '50', '--top-k', '0', '--top-p', '1', '--seed', '7'],
        sample: {temperature: 50, top_k: 0, top_p: 1, repeat_penalty: 1, seed: 7}},
};
const CASES = opts.cases.split(',').map((name) => {
  if (!ALL_CASES[name]) throw new Error(`--cases: "${name}" is not one of ${Object.keys(ALL_CASES).join(', ')}`);
  return ALL_CASES[name];
});
for (const c of CASES) {
  c.want = native(c.tag.replace(' ', '_'), c.prompt, c.flags);
  step(`native ${c.tag} tokens ${c.want.tokens.join(' ')}`);
}
const server = await startServer();
const browser = await chromium.launch(
    {executablePath: opts.chromium, headless: true, args: ['--enable-unsafe-webgpu', ...opts['chromium-arg']]});
const errors = [];
try {
  // A shard the server refuses and a plan for a bad length are clear errors.
  const bad = await fetch(`${server.base}/model/plan.json?prompt_length=0`);
  assert.equal(bad.status, 400);
  assert.match((await bad.json()).error, /prompt_length=0: must be a number in \[1/);
  assert.equal((await fetch(`${server.base}/model/shards/weights.0/999999`)).status, 404);
  assert.equal((await fetch(`${server.base}/model/files/config.json`)).status, 404, 'only the tokenizer files are served');
  if (opts['weight-formats']) {
    const plan = await (await fetch(`${server.base}/model/plan.json?prompt_length=3`)).json();
    for (const f of opts['weight-formats'].split(','))
      assert.ok(f in plan.weight_formats, `the plan stores weights as ${f}: ${Object.keys(plan.weight_formats)}`);
    step(`the plan's weight formats: ${Object.keys(plan.weight_formats).join(', ')}`);
  }
  const index = await (await fetch(`${server.base}/model/index.json`)).json();
  assert.ok(index.files.includes('tokenizer.json') && index.files.includes('tokenizer_config.json'),
            `the index lists the tokenizer files: ${JSON.stringify(index.files)} ${index.tokenizer_unavailable ?? ''}`);

  const page = await browser.newPage();
  page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
  page.on('console', (m) => m.type() === 'error' && errors.push(`console: ${m.text()}`));
  await page.goto(`${server.base}/chat`);
  await page.waitForFunction(() => ['ready', 'unavailable', 'failed'].includes(document.body.dataset.state), null, {timeout: 120_000});
  assert.equal(await page.evaluate(() => document.body.dataset.state), 'ready', await page.textContent('#model-body'));
  step(await page.textContent('#progress-label'));

  for (const {tag, prompt, want: expected, sample} of CASES) {
    const got = await page.evaluate(([ids, n, s]) => window.wgfuseChat.generateIds(ids, n, s), [prompt, N, sample]);
    step(`browser ${tag} tokens ${got.tokens.join(' ')}: ${JSON.stringify(got.timing)}`);
    assert.deepEqual(got.tokens, expected.tokens, `the browser's ${tag} tokens equal wgfuse generate's`);
    const rows = expected.tokens.length, vocab = expected.logits.length / rows;  // fewer than N after an EOS
    assert.equal(got.logits.length, rows);
    let worst = 0;
    for (let t = 0; t < rows; ++t) {
      const row = expected.logits.subarray(t * vocab, (t + 1) * vocab);
      const scale = Math.max(...row.map(Math.abs));
      for (let i = 0; i < vocab; ++i) worst = Math.max(worst, Math.abs(got.logits[t][i] - row[i]) / scale);
    }
    step(`${tag} logits: max relative difference ${worst.toExponential(2)} (tolerance ${LOGIT_RTOL})`);
    assert.ok(worst <= LOGIT_RTOL, `${tag} logits within ${LOGIT_RTOL}: ${worst}`);
    // Without logits, as the chat decodes: several steps per command buffer, the next command
    // buffer queued before the last one's tokens are read back, the same tokens.
    const piped = await page.evaluate(([ids, n, s]) => window.wgfuseChat.generateIds(ids, n, s, {withLogits: false, stepsPerSubmit: 2}),
                                      [prompt, N, sample]);
    step(`browser ${tag} tokens, 2 steps per command buffer, pipelined: ${piped.tokens.join(' ')}: ${JSON.stringify(piped.timing)}`);
    assert.deepEqual(piped.tokens, expected.tokens, `the browser's pipelined ${tag} tokens equal wgfuse generate's`);
    if (expected.tokens.length > 3)
      assert.equal(piped.timing.max_in_flight, 2, 'two command buffers in flight');
  }

  // The page's tokenizer gives the native tokenizer's ids on the tokenizer corpus.
  const corpus = JSON.parse(fs.readFileSync(new URL('../tokenizer/corpus.json', import.meta.url), 'utf8'));
  const texts = corpus.map((e) => (typeof e === 'string' ? e : e.repeat.repeat(e.times)));
  const pageIds = await page.evaluate((t) => window.wgfuseChat.encode(t), texts);
  texts.forEach((text, i) => {
    const out = execFileSync(opts.wgfuse, ['tokenize', '--model', opts.model, '--json'], {input: text});
    assert.deepEqual(pageIds[i], JSON.parse(out).ids, `ids of ${JSON.stringify(text.slice(0, 80))}`);
  });
  step(`the page's tokenizer gives the native ids on ${texts.length} corpus texts`);

  // A chat turn: streamed text, then the timing line; a second turn reuses the cache.
  await page.fill('#max-tokens', '3');
  await page.fill('#temperature', '0');
  for (const [turn, text] of [[1, 'hi'], [2, 'and more']]) {
    await page.fill('#input', text);
    await page.press('#input', 'Enter');
    await page.waitForFunction(() => document.body.dataset.state === 'ready' && document.getElementById('timing').textContent,
                               null, {timeout: 120_000});
    const timing = await page.textContent('#timing');
    step(`turn ${turn}: ${timing}`);
    // (a turn's 3 tokens may come back within the page clock's resolution: "too short to time")
    assert.match(timing, /^\[\d+ prompt tokens \((\d+) cached\), first token in \d+ ms, prefill [\d.]+ tok\/s, 3 generated, decode (?:[\d.]+ tok\/s|too short to time), [\d.]+ dispatches\/token\]$/);
    if (turn === 2) assert.ok(Number(/\((\d+) cached\)/.exec(timing)[1]) > 0, 'the second turn reuses the cache');
    await page.evaluate(() => (document.getElementById('timing').textContent = ''));
  }
  assert.equal(await page.locator('#messages .assistant').count(), 2);
  if (!opts['skip-ui']) {
    // Stop ends a long reply early.
    await page.fill('#max-tokens', '200');
    await page.fill('#input', 'a long one');
    await page.press('#input', 'Enter');
    await page.waitForFunction(() => document.body.dataset.state === 'generating');
    await page.click('#stop');
    await page.waitForFunction(() => document.body.dataset.state === 'ready', null, {timeout: 60_000});
    const stopped = await page.textContent('#timing');
    const count = Number(/, (\d+) generated/.exec(stopped)[1]);
    step(`stopped after ${count} tokens`);
    assert.ok(count < 200, stopped);
    await page.screenshot({path: path.join(opts.out, 'chat.png'), fullPage: true});

    // A device whose binding limit is below what the plan binds: the error names the limit.
    const refused = await page.evaluate(async () => {
      const {PlanRunner} = await import('/chat/plan_runner.js');
      const plan = await (await fetch('/model/plan.json?prompt_length=3')).json();
      const runner = new PlanRunner({limits: {maxBufferSize: 1 << 30, maxStorageBufferBindingSize: 1024}}, null);
      try {
        runner.checkLimits(plan);
        return 'accepted';
      } catch (e) {
        return `${e.constructor.name}: ${e.message}`;
      }
    });
    assert.match(refused, /^LimitError: .* binds \d+ bytes of .*maxStorageBufferBindingSize is 1024/);

    // The next visits take every shard from the cache. Page load to first token with the weights
    // cached (the target: 2 s for 0.5B on a GPU): ready, then the first token of a first
    // generation (its plan fetched, its new kernels compiled, the prefill); where the time goes.
    // Every shard comes from the cache: none fetched (the page's resource timing entries) and
    // none hashed during the load; the worker's check afterwards finds none damaged.
    const loads = [];
    const shardFetches = () => page.evaluate(() => performance.getEntriesByType('resource').filter((e) => e.name.includes('/model/shards/')).length);
    const totalMB = (index.shards.reduce((a, s) => a + s.bytes, 0) / 1e6).toFixed(1);
    for (let visit = 0; visit < 3; ++visit) {
      await page.reload();
      await page.waitForFunction(() => document.body.dataset.state === 'ready', null, {timeout: 120_000});
      const label = await page.textContent('#progress-label');
      assert.match(label, new RegExp(`weights ${totalMB} MB loaded in [\\d.]+ s, ${totalMB} MB of them from the cache; ready`));
      const ready = await page.evaluate(() => window.wgfuseChat.readyMs());
      const first = await page.evaluate((ids) => window.wgfuseChat.generateIds(ids, 1), PROMPT);
      const report = await page.evaluate(() => window.wgfuseChat.loadReport());
      assert.deepEqual(await page.evaluate(() => window.wgfuseChat.verified()), {refetched: []});
      assert.equal(report.shards.hashed_bytes, 0, 'no cached shard hashed during the load');
      assert.equal(report.shards.cache_problem, null);
      assert.equal(await shardFetches(), 0, 'no shard fetched on a cached visit');
      loads.push((ready + first.timing.first_token_ms) / 1e3);
      step(`cached visit ${visit + 1}: ${label}; ready ${ready.toFixed(0)} ms after the page started loading, first token ` +
           `${first.timing.first_token_ms.toFixed(0)} ms later: page load to first token ${loads.at(-1).toFixed(2)} s; ` +
           `load report: ${JSON.stringify(report)}`);
    }
    step(`page load to first token, cached, median of ${loads.length}: ${loads.sort((a, b) => a - b)[1].toFixed(2)} s ` +
         '(SwiftShader: for comparisons on this machine only)');

    // A damaged cached shard (a byte flipped in its file): the load takes it unhashed, the check
    // after it finds it, and the page fetches and uploads it again: the greedy tokens are right.
    const damaged = index.shards[Math.floor(index.shards.length / 2)];
    await page.evaluate(async (name) => {
      const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle('wgfuse-model-shards');
      const file = await (await dir.getFileHandle(name)).getFile();
      const bytes = new Uint8Array(await file.arrayBuffer());
      bytes[bytes.length >> 1] ^= 0x40;
      const w = await (await dir.getFileHandle(name)).createWritable();
      await w.write(bytes);
      await w.close();
    }, damaged.sha256);
    await page.reload();
    await page.waitForFunction(() => document.body.dataset.state === 'ready', null, {timeout: 120_000});
    assert.deepEqual(await page.evaluate(() => window.wgfuseChat.verified()), {refetched: [`${damaged.buffer}/${damaged.index}`]});
    assert.equal(await shardFetches(), 1, 'the damaged shard, and only it, fetched again');
    assert.match(await page.textContent('#errors'), /1 cached weight shard\(s\) were damaged/);
    const greedy = CASES.find((c) => c.tag === 'greedy') ?? {prompt: PROMPT, want: native('greedy', PROMPT, ['--temp', '0'])};
    const repaired = await page.evaluate(([ids, n]) => window.wgfuseChat.generateIds(ids, n), [greedy.prompt, N]);
    assert.deepEqual(repaired.tokens, greedy.want.tokens, 'after the repair, the tokens equal wgfuse generate\'s');
    step(`a damaged cached shard (${damaged.buffer}/${damaged.index}) found after the load, fetched again; tokens right`);

    // Clear empties the cache: the next visit fetches every shard.
    await page.click('#clear-cache');
    await page.waitForFunction(() => document.getElementById('cache-status').textContent === 'cleared');
    await page.reload();
    await page.waitForFunction(() => document.body.dataset.state === 'ready', null, {timeout: 120_000});
    assert.equal(await shardFetches(), index.shards.length, 'after Clear, every shard fetched');
    assert.doesNotMatch(await page.textContent('#progress-label'), /from the cache/);

    // Without WebGPU (no --enable-unsafe-webgpu on this headless chromium) the page explains.
    const plain = await chromium.launch({executablePath: opts.chromium, headless: true});
    const bare = await plain.newPage();
    await bare.goto(`${server.base}/chat`);
    await bare.waitForFunction(() => ['ready', 'unavailable', 'failed'].includes(document.body.dataset.state));
    const why = await bare.textContent('#model-body');
    const bareState = await bare.evaluate(() => document.body.dataset.state);
    await plain.close();
    step(`without WebGPU: ${why.slice(0, 100)}`);
    assert.equal(bareState, 'unavailable');
    assert.match(why, /WebGPU/);
  }
  assert.deepEqual(errors, []);
  step('passed');
} finally {
  await browser.close();
  server.child.kill('SIGTERM');
  fs.rmSync(server.tmp, {recursive: true, force: true});
}
