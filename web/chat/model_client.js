// The model `wgfuse serve --model` publishes under /model/ (docs/WEB_API.md, "Model"): its index,
// a plan per prompt length and sampling settings, the packed weight arena in shards checked by
// SHA-256 and kept in the origin private file system for the next visit (shardStore), and the
// tokenizer files.
import {fetchOk, sha256Hex} from '../app/kernels.js';

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

// The weight cache, in a worker (web/chat/shard_store_worker.js), files named by their SHA-256:
// get(shard) -> its bytes or null, put(shard, bytes) (bytes are transferred: unusable after),
// verify(shards) -> those whose cached bytes no longer match their hash (deleted), clear().
// Where the origin private file system or the worker is missing, gets miss and puts are dropped
// (the page loads from the server every time); `problem` tells the first failure.
let store = null;
function shardStore() {
  if (store) return store;
  const pending = new Map();
  let worker = null, next = 0;
  const fail = (message) => {
    store.problem ??= `the weight cache: ${message}`;
    for (const p of pending.values()) p.reject(new Error(store.problem));
    pending.clear();
  };
  const call = (op, args = {}, transfer = []) => new Promise((resolve, reject) => {
    if (!worker) return reject(new Error(store.problem));
    pending.set(++next, {resolve, reject});
    worker.postMessage({id: next, op, ...args}, transfer);
  });
  const remember = (e) => {
    store.problem ??= e.message;
    return null;
  };
  store = {
    problem: null,
    get: (s) => call('get', {name: s.sha256, bytes: s.bytes}).catch(remember),
    put: (s, bytes) => call('put', {name: s.sha256, bytes}, [bytes.buffer]).catch(remember),
    verify: async (shards) => {
      const bad = await call('verify', {names: shards.map((s) => s.sha256)});
      return shards.filter((s) => bad.includes(s.sha256));
    },
    clear: () => call('clear'),
  };
  try {
    worker = new Worker(new URL('./shard_store_worker.js', import.meta.url), {type: 'module'});
    worker.onmessage = ({data: {id, result, error}}) => {
      const p = pending.get(id);
      pending.delete(id);
      if (error === undefined) p.resolve(result);
      else p.reject(new Error(`the weight cache: ${error}`));
    };
    worker.onerror = (e) => fail(e.message ?? 'its worker failed to start');
  } catch (e) {
    fail(e.message);
  }
  return store;
}

// Shard `s` from the server, checked against the index's hash.
async function fetchShard(s) {
  const r = await fetchOk(`/model/shards/${s.buffer}/${s.index}`, `shard ${s.buffer}/${s.index}`);
  const bytes = new Uint8Array(await r.arrayBuffer());
  const got = await sha256Hex(bytes);
  if (got !== s.sha256) throw new Error(`shard ${s.buffer}/${s.index}: sha256 ${got} differs from the index's ${s.sha256}`);
  return bytes;
}

// Awaits upload(shard, bytes) for every shard, from the cache (shardStore) where it holds the
// shard, else from the server (fetchShard, then cached); `inFlight` shards at a time, so that
// reading, hashing and uploading overlap. upload must be done with the bytes when it settles.
// progress(doneBytes, totalBytes, fromCache). A cached shard is not hashed here (its name is its
// hash, and it was stored only once checked): verifyCachedShards checks them after the load, off
// the main thread. Returns {bytes, cached, fromCache: the shards read from the cache, stats:
// {read_ms, upload_ms (summed over the shards in flight), hashed_bytes, cache_problem}}.
export async function loadShards(index, upload, progress = () => {}, inFlight = 8) {
  const cache = shardStore();
  const total = index.shards.reduce((a, s) => a + s.bytes, 0);
  const fromCache = [], stats = {read_ms: 0, upload_ms: 0, hashed_bytes: 0};
  let done = 0, cached = 0, next = 0;
  const load = async (s) => {
    let t = performance.now();
    let bytes = await cache.get(s);
    const hit = bytes !== null;
    if (hit) {
      cached += s.bytes;
      fromCache.push(s);
    } else {
      bytes = await fetchShard(s);
      stats.hashed_bytes += s.bytes;
    }
    stats.read_ms += performance.now() - t;
    t = performance.now();
    await upload(s, bytes);
    stats.upload_ms += performance.now() - t;
    if (!hit) await cache.put(s, bytes);
    done += s.bytes;
    progress(done, total, cached);
  };
  const worker = async () => {
    while (next < index.shards.length) await load(index.shards[next++]);
  };
  await Promise.all(Array.from({length: Math.min(inFlight, index.shards.length)}, worker));
  stats.cache_problem = cache.problem;
  return {bytes: total, cached, fromCache, stats};
}

// Hashes the cached `shards` again, in the cache's worker: one whose bytes no longer match its
// hash (a damaged file) is deleted, fetched again (fetchShard), uploaded again (await
// upload(shard, bytes)) and cached. Returns the shards fetched again, as "buffer/index".
export async function verifyCachedShards(shards, upload) {
  const refetched = [];
  for (const s of shards.length ? await shardStore().verify(shards) : []) {
    const bytes = await fetchShard(s);
    await upload(s, bytes);
    await shardStore().put(s, bytes);
    refetched.push(`${s.buffer}/${s.index}`);
  }
  return refetched;
}

export async function clearCache() {
  await shardStore().clear();
}
