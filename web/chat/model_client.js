// The model `wgfuse serve --model` publishes under /model/ (docs/WEB_API.md, "Model"): its index,
// a plan per prompt length and sampling settings, the packed weight arena in shards checked by
// SHA-256 and kept in Cache Storage for the next visit, and the tokenizer files.
import {fetchOk, sha256Hex} from '../app/kernels.js';

const CACHE = 'wgfuse-model-shards';

export async function loadIndex() {
  const index = await (await fetchOk('/model/index.json', 'model index')).json();
  if (!index.model || !Array.isArray(index.shards))
    throw new Error('model index: /model/index.json lacks "model" or "shards"');
  return index;
}

export async function loadFile(name) {
  return (await fetchOk(`/model/files/${name}`, `model file ${name}`)).json();
}

// The plan for a prompt of `promptLength` tokens (the prefill chunks it uses) and `sampling`
// ({temperature, top_k, top_p, repeat_penalty, seed}; temperature 0: greedy).
export async function loadPlan(promptLength, sampling = {}) {
  const q = new URLSearchParams({prompt_length: String(promptLength)});
  for (const [k, v] of Object.entries(sampling)) q.set(k, String(v));
  const r = await fetch(`/model/plan.json?${q}`);
  if (!r.ok) throw new Error(`plan: ${(await r.json().catch(() => ({}))).error ?? `HTTP ${r.status}`}`);
  return r.json();
}

// Awaits upload(shard, bytes) for every shard, from the cache where it holds the shard's hash, else
// from the server (checked against the index's hash, then cached); `inFlight` shards at a time,
// so that reading, hashing and uploading overlap. progress(doneBytes, totalBytes, fromCache).
// A cached shard is not hashed again: its key is its hash, and it was stored only once checked.
export async function loadShards(index, upload, progress = () => {}, inFlight = 8) {
  const cache = globalThis.caches ? await caches.open(CACHE).catch(() => null) : null;
  const total = index.shards.reduce((a, s) => a + s.bytes, 0);
  let done = 0, cached = 0, next = 0;
  const load = async (s) => {
    const key = `/model/shards/${s.buffer}/${s.index}?sha256=${s.sha256}`;
    const hit = await cache?.match(key);
    let bytes = hit ? new Uint8Array(await hit.arrayBuffer()) : null;
    if (bytes?.byteLength === s.bytes) {
      await upload(s, bytes);
      cached += s.bytes;
    } else {
      const r = await fetchOk(`/model/shards/${s.buffer}/${s.index}`, `shard ${s.buffer}/${s.index}`);
      bytes = new Uint8Array(await r.arrayBuffer());
      const got = await sha256Hex(bytes);
      if (got !== s.sha256) throw new Error(`shard ${s.buffer}/${s.index}: sha256 ${got} differs from the index's ${s.sha256}`);
      await upload(s, bytes);
      await cache?.put(key, new Response(bytes)).catch(() => {});
    }
    done += s.bytes;
    progress(done, total, cached);
  };
  const worker = async () => {
    while (next < index.shards.length) await load(index.shards[next++]);
  };
  await Promise.all(Array.from({length: Math.min(inFlight, index.shards.length)}, worker));
  return {bytes: total, cached};
}

export async function clearCache() {
  return globalThis.caches ? caches.delete(CACHE) : false;
}
