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

// Calls upload(shard, bytes) for every shard, from the cache where it holds the same hash, else
// from the server (then cached); progress(doneBytes, totalBytes, fromCache).
export async function loadShards(index, upload, progress = () => {}) {
  const cache = globalThis.caches ? await caches.open(CACHE).catch(() => null) : null;
  const total = index.shards.reduce((a, s) => a + s.bytes, 0);
  let done = 0, cached = 0;
  for (const s of index.shards) {
    const key = `/model/shards/${s.buffer}/${s.index}?sha256=${s.sha256}`;
    let bytes = null;
    const hit = await cache?.match(key);
    if (hit) {
      bytes = new Uint8Array(await hit.arrayBuffer());
      if ((await sha256Hex(bytes)) !== s.sha256) bytes = null;
      else cached += s.bytes;
    }
    if (!bytes) {
      const r = await fetchOk(`/model/shards/${s.buffer}/${s.index}`, `shard ${s.buffer}/${s.index}`);
      bytes = new Uint8Array(await r.arrayBuffer());
      const got = await sha256Hex(bytes);
      if (got !== s.sha256) throw new Error(`shard ${s.buffer}/${s.index}: sha256 ${got} differs from the index's ${s.sha256}`);
      await cache?.put(key, new Response(bytes)).catch(() => {});
    }
    upload(s, bytes);
    done += s.bytes;
    progress(done, total, cached);
  }
  return {bytes: total, cached};
}

export async function clearCache() {
  return globalThis.caches ? caches.delete(CACHE) : false;
}
