// Load on `wgfuse serve --model` (or any OpenAI-compatible server, e.g. llama.cpp's llama-server):
// for each concurrency C, C streamed chat completions at once through the official `openai`
// client; prints per C the requests answered, the aggregate and per-stream decode rates, and the
// time to first token (p50, p99). With --json FILE the same as JSON.
//
//   node bench/serve_load.mjs --url http://127.0.0.1:8080/v1 [--concurrency 1,8,32]
//        [--max-tokens 256] [--prompt TEXT] [--api-key KEY] [--json FILE]
import fs from 'node:fs';
import {parseArgs} from 'node:util';
import OpenAI from 'openai';

const {values: o} = parseArgs({
  options: {
    url: {type: 'string', default: 'http://127.0.0.1:8080/v1'},
    concurrency: {type: 'string', default: '1,8,32'},
    'max-tokens': {type: 'string', default: '256'},
    prompt: {type: 'string', default: 'Write a long, detailed story about a lighthouse keeper and a storm.'},
    'api-key': {type: 'string', default: process.env.WGFUSE_API_KEY || 'none'},
    model: {type: 'string'},
    json: {type: 'string'},
  },
});
const client = new OpenAI({baseURL: o.url, apiKey: o['api-key'], maxRetries: 0, timeout: 3600_000});
const model = o.model ?? (await client.models.list()).data[0].id;
const maxTokens = Number(o['max-tokens']);

function percentile(sorted, q) {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : NaN;
}

// One streamed request: time to first token, then tokens and the decode time after it.
async function one(t0) {
  const stream = await client.chat.completions.create({
    model, messages: [{role: 'user', content: o.prompt}], max_tokens: maxTokens, temperature: 0, stream: true,
    stream_options: {include_usage: true}});
  let first = null, last = null, tokens = 0;
  for await (const chunk of stream) {
    if (chunk.usage) tokens = chunk.usage.completion_tokens;
    if (chunk.choices.some((c) => c.delta?.content)) {
      last = performance.now();
      first ??= last;
    }
  }
  return {ttft_ms: first - t0, decode_ms: last - first, tokens, end: last};
}

const rows = [];
for (const c of o.concurrency.split(',').map(Number)) {
  const t0 = performance.now();
  const settled = await Promise.allSettled(Array.from({length: c}, () => one(t0)));
  const ok = settled.filter((s) => s.status === 'fulfilled').map((s) => s.value);
  const wall = (Math.max(...ok.map((r) => r.end)) - t0) / 1e3;
  const tokens = ok.reduce((a, r) => a + r.tokens, 0);
  const ttft = ok.map((r) => r.ttft_ms).sort((a, b) => a - b);
  const perStream = ok.map((r) => (r.tokens - 1) / (r.decode_ms / 1e3)).sort((a, b) => a - b);
  const row = {concurrency: c, answered: ok.length, failed: c - ok.length, tokens, wall_s: wall,
               aggregate_tok_s: tokens / wall, stream_tok_s_p50: percentile(perStream, 0.5),
               stream_tok_s_min: perStream[0], ttft_ms_p50: percentile(ttft, 0.5), ttft_ms_p99: percentile(ttft, 0.99)};
  rows.push(row);
  for (const s of settled) if (s.status === 'rejected') console.error(`request failed: ${s.reason}`);
  console.log(`C=${c}: ${ok.length}/${c} answered, ${tokens} tokens in ${wall.toFixed(2)} s = ` +
              `${row.aggregate_tok_s.toFixed(1)} tok/s aggregate; per stream p50 ${row.stream_tok_s_p50.toFixed(1)}, ` +
              `min ${row.stream_tok_s_min.toFixed(1)} tok/s; TTFT p50 ${row.ttft_ms_p50.toFixed(0)} ms, ` +
              `p99 ${row.ttft_ms_p99.toFixed(0)} ms`);
}
if (o.json) fs.writeFileSync(o.json, JSON.stringify({url: o.url, model, max_tokens: maxTokens, rows}, null, 2) + '\n');
