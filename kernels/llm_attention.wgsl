// Decode: attention of one query (the position being decoded) over the KV cache, split along
// the cache (flash-decoding) so that long contexts fill the GPU: one head per workgroup left
// most SMs idle (14 busy of 132 on an H100 for Qwen2.5-0.5B).
//   attend_chunk   workgroup (head group, chunk): for HEADS_PER_WG query heads of one kv group
//                  and the cache positions [c * CHUNK, (c + 1) * CHUNK) up to pos, the chunk's max
//                  score m, sum of exp(s - m) l, and un-normalised output sum exp(s - m) v; the
//                  head group's last workgroup to finish combines the chunks that hold positions
//                  <= pos: out = sum_c exp(m_c - M) o_c / sum_c exp(m_c - M) l_c, M = max_c m_c.
//                  Chunks past pos exit at once: the step is recorded once for every position.
//   attend_short   workgroup per head, positions 0..pos < CHUNK in one pass: the output
//                  itself, no partials (the short-context step).
// Head h reads kv head h / GROUP (grouped-query attention); the query sits at pos (state word 0)
// and the cache holds positions 0..pos, so the attention is causal by construction.
// Heads of one workgroup read the same K/V rows: the second and later come from the SM's cache.
// Decode is latency-bound (a few dozen workgroups, kilobytes each): reductions go through
// subgroups and one workgroup step, not a tree of barriers.
enable subgroups;

override HEAD_DIM: u32 = 2u;
override GROUP: u32 = 1u;   // heads / kv_heads
override CTX: u32 = 1u;     // cache capacity
override WG: u32 = 128u;    // >= HEAD_DIM
override SCALE: f32 = 1.0;  // 1 / sqrt(HEAD_DIM)
override OUT_STRIDE: u32 = 1u;  // attend_prompt: floats per output row (heads * hd, padded to 8)
override CHUNK: u32 = 64u;        // decode: cache positions per workgroup
override CHUNKS: u32 = 1u;        // ceil(CTX / CHUNK)
override HEADS_PER_WG: u32 = 1u;  // decode: query heads per workgroup, a divisor of GROUP
override PARTIAL: u32 = HEAD_DIM + 2u;  // one chunk's result: output[HEAD_DIM], m, l

@group(0) @binding(0) var<storage, read> q: array<f32>;        // [heads * hd]
@group(0) @binding(1) var<storage, read> k_cache: array<f32>;  // [kv_heads][CTX][hd]
@group(0) @binding(2) var<storage, read> v_cache: array<f32>;
@group(0) @binding(3) var<storage, read> state: array<u32>;    // word 0: pos
// attend_chunk's partials, [heads][CHUNKS][PARTIAL] f32 bits: atomic, so that the workgroup that
// combines them reads them from the device-coherent level (below).
@group(0) @binding(4) var<storage, read_write> partials: array<atomic<u32>>;

var<workgroup> red: array<f32, WG>;

// The max (take_max) or sum of v over the workgroup, returned to every thread: each subgroup's
// result goes to red[at + subgroup], then one barrier. Two reductions in a row use different
// `at` (0 and WG / 2: a subgroup has at least 4 threads) so that the second needs no barrier
// before its writes. Call from workgroup-uniform control flow.
fn reduce(v: f32, take_max: bool, at: u32, lid: u32, sg_lane: u32, sg_size: u32) -> f32 {
  var r: f32;
  if (take_max) {
    r = subgroupMax(v);
  } else {
    r = subgroupAdd(v);
  }
  if (sg_lane == 0u) {
    red[at + lid / sg_size] = r;
  }
  workgroupBarrier();
  var t = red[at];
  for (var i = 1u; i < (WG + sg_size - 1u) / sg_size; i++) {
    t = select(t + red[at + i], max(t, red[at + i]), take_max);
  }
  return t;
}

// attend_chunk reads K, V and q as vec4s (HEAD_DIM % 4 == 0, checked by the host): a score is
// HEAD_DIM / 4 independent 16-byte loads, and the output sums go 4 dimensions per thread, so
// that each thread's chain of dependent loads is a quarter as long (the chunk kernel is latency-
// bound: a few dozen workgroups at short contexts).
override D4: u32 = HEAD_DIM / 4u;
override SLICES: u32 = WG / D4;  // threads (vec4 d4, slice) that share the positions of an output vec4
@group(0) @binding(0) var<storage, read> q4: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> k4_cache: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> v4_cache: array<vec4<f32>>;

var<workgroup> q_group: array<vec4<f32>, HEADS_PER_WG * D4>;
var<workgroup> chunk_p: array<f32, HEADS_PER_WG * CHUNK>;  // scores, then exp(s - m)
var<workgroup> red4: array<vec4<f32>, WG>;

// V vec4s a thread has in flight at once. The V sum loads its positions in batches of V_BATCH
// (a round trip to memory each), and the kernels request the first batch before the softmax,
// which it does not need, so that it arrives while the reductions run.
const V_BATCH = 16u;

// Thread (d4, slice)'s V vec4s of positions t = t0 + slice + j SLICES (j < V_BATCH) below n,
// zero elsewhere; v_row is the first position's vec4 d4.
fn v_batch(v_row: u32, t0: u32, n: u32, slice: u32) -> array<vec4<f32>, V_BATCH> {
  var v: array<vec4<f32>, V_BATCH>;
  for (var j = 0u; j < V_BATCH; j++) {
    let t = t0 + slice + j * SLICES;
    if (slice < SLICES && t < n) {  // slice >= SLICES: WG is not a multiple of D4, the last threads idle
      v[j] = v4_cache[v_row + t * D4];
    }
  }
  return v;
}

// Thread (d4, slice)'s part of sum_t p_t v_t over positions t = slice, slice + SLICES, ... < n:
// p_t = chunk_p[p_row + t], v_t from v_batch(); `first` is the batch of positions below
// V_BATCH SLICES, already requested.
fn pv_part(first: array<vec4<f32>, V_BATCH>, v_row: u32, p_row: u32, n: u32, slice: u32) -> vec4<f32> {
  var acc = vec4<f32>(0.0);
  var v = first;
  for (var t0 = 0u; t0 < n; t0 += V_BATCH * SLICES) {
    if (t0 > 0u) {
      v = v_batch(v_row, t0, n, slice);
    }
    for (var j = 0u; j < V_BATCH; j++) {
      let t = t0 + slice + j * SLICES;
      if (slice < SLICES && t < n) {
        acc += chunk_p[p_row + t] * v[j];
      }
    }
  }
  return acc;
}

// The sum of every slice's v (red4[slice * D4 + d4]) for thread d4 < D4, after a barrier.
fn sum_slices(v: vec4<f32>, lid: u32) -> vec4<f32> {
  red4[lid] = v;
  workgroupBarrier();
  var sum = vec4<f32>(0.0);
  if (lid < D4) {
    for (var s = 0u; s < SLICES; s++) {
      sum += red4[s * D4 + lid];
    }
  }
  return sum;
}

// The combination without a dispatch of its own (a dependent dispatch costs more than the
// combination: RESULTS, session 28). Each chunk workgroup exchanges its partials in (atomic
// exchanges, performed at the device-coherent level, L2, before they return) and counts itself in
// arrivals[head group] only once every exchange has returned (a branch on the old values); the
// workgroup that counts last reads every chunk's partials with atomic loads (from L2, never a
// stale line of its SM's cache), as written. Relaxed stores would promise no such order: in the
// persistent decoder a reader after a grid barrier found words whose stores had not arrived
// (RESULTS, session 24). The last one sets its counter back to zero for the next step.
@group(0) @binding(5) var<storage, read_write> arrivals: array<atomic<u32>>;  // [head groups + 1]: then a sink
@group(0) @binding(6) var<storage, read_write> chunk_out4: array<vec4<f32>>;  // [heads * HEAD_DIM / 4]
var<workgroup> last_word: u32;

@compute @workgroup_size(WG)
fn attend_chunk(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
                @builtin(subgroup_invocation_id) sg_lane: u32, @builtin(subgroup_size) sg_size: u32,
                @builtin(num_workgroups) groups: vec3<u32>) {
  let len = state[0] + 1u;
  let c = wid.y;
  let start = c * CHUNK;
  if (start >= len) {
    return;  // uniform: the whole workgroup leaves
  }
  let n = min(CHUNK, len - start);
  let h0 = wid.x * HEADS_PER_WG;
  let kv = ((h0 / GROUP) * CTX + start) * D4;  // in vec4s
  for (var i = lid; i < HEADS_PER_WG * D4; i += WG) {
    q_group[i] = q4[h0 * D4 + i];
  }
  workgroupBarrier();

  // Scores, (head, position) pairs over the threads.
  for (var i = lid; i < HEADS_PER_WG * CHUNK; i += WG) {
    let g = i / CHUNK;
    let t = i % CHUNK;
    if (t < n) {
      var s = vec4<f32>(0.0);
      for (var d = 0u; d < D4; d++) {
        s += q_group[g * D4 + d] * k4_cache[kv + t * D4 + d];
      }
      chunk_p[i] = (s.x + s.y + s.z + s.w) * SCALE;
    }
  }
  // Every head of the workgroup reads the same V rows: one first batch for all.
  let v_first = v_batch(kv + lid % D4, 0u, n, lid / D4);
  workgroupBarrier();

  var old = 0u;  // the exchanged-out words, ORed: waited for before the arrival
  for (var g = 0u; g < HEADS_PER_WG; g++) {
    let row = g * CHUNK;
    var m = -3.4e38;
    for (var t = lid; t < n; t += WG) {
      m = max(m, chunk_p[row + t]);
    }
    m = reduce(m, true, 0u, lid, sg_lane, sg_size);
    var l = 0.0;
    for (var t = lid; t < n; t += WG) {
      let e = exp(chunk_p[row + t] - m);
      chunk_p[row + t] = e;
      l += e;
    }
    l = reduce(l, false, WG / 2u, lid, sg_lane, sg_size);  // its barrier also publishes chunk_p

    let sum = sum_slices(pv_part(v_first, kv + lid % D4, row, n, lid / D4), lid);
    let base = ((h0 + g) * CHUNKS + c) * PARTIAL;
    if (lid < D4) {
      old |= atomicExchange(&partials[base + 4u * lid], bitcast<u32>(sum.x));
      old |= atomicExchange(&partials[base + 4u * lid + 1u], bitcast<u32>(sum.y));
      old |= atomicExchange(&partials[base + 4u * lid + 2u], bitcast<u32>(sum.z));
      old |= atomicExchange(&partials[base + 4u * lid + 3u], bitcast<u32>(sum.w));
    }
    if (lid == 0u) {
      old |= atomicExchange(&partials[base + HEAD_DIM], bitcast<u32>(m));
      old |= atomicExchange(&partials[base + HEAD_DIM + 1u], bitcast<u32>(l));
    }
    workgroupBarrier();  // red4 and red are rewritten by the next head
  }

  // The branch needs every exchange's result, so no thread reaches the barrier before its
  // exchanges were performed (whatever the values: the sink's store is harmless).
  if (old == 0xffffffffu) {
    atomicStore(&arrivals[groups.x], old);
  }
  storageBarrier();
  let chunks = (len - 1u) / CHUNK + 1u;  // those holding positions 0..pos
  if (lid == 0u) {
    last_word = select(0u, 1u, atomicAdd(&arrivals[wid.x], 1u) + 1u == chunks);
  }
  if (workgroupUniformLoad(&last_word) == 0u) {
    return;
  }
  if (lid == 0u) {
    atomicStore(&arrivals[wid.x], 0u);
  }
  for (var g = 0u; g < HEADS_PER_WG; g++) {
    combine_head(h0 + g, chunks, lid, sg_lane, sg_size);
  }
}

fn partial_at(at: u32) -> f32 {
  return bitcast<f32>(atomicLoad(&partials[at]));
}

const COMBINE_BATCH = 8u;  // chunks a thread loads together: their loads in flight at once

// chunk_out4's head h from the partials of its chunks 0..chunks - 1, in one pass over them:
// thread (d4, slice) folds chunks slice, slice + SLICES, ... (COMBINE_BATCH at a time) into its
// running maximum m, sum of exp(m_c - m) l_c and sum of exp(m_c - m) o_c[d4]; then M = max m over
// the threads, and each thread's sums scaled by exp(m - M) are added up over the slices.
fn combine_head(h: u32, chunks: u32, lid: u32, sg_lane: u32, sg_size: u32) {
  let head = h * CHUNKS * PARTIAL;
  let d = 4u * (lid % D4);
  let slice = lid / D4;
  var m = -3.4e38;
  var l = 0.0;
  var acc = vec4<f32>(0.0);
  if (slice < SLICES) {
    for (var c0 = slice; c0 < chunks; c0 += COMBINE_BATCH * SLICES) {
      var o: array<vec4<f32>, COMBINE_BATCH>;
      var ml: array<vec2<f32>, COMBINE_BATCH>;
      for (var j = 0u; j < COMBINE_BATCH; j++) {
        let c = c0 + j * SLICES;
        o[j] = vec4<f32>(0.0);
        ml[j] = vec2<f32>(-3.4e38, 0.0);  // past the last chunk: weight exp(-3.4e38 - m) = 0
        if (c < chunks) {
          let at = head + c * PARTIAL;
          o[j] = vec4<f32>(partial_at(at + d), partial_at(at + d + 1u), partial_at(at + d + 2u), partial_at(at + d + 3u));
          ml[j] = vec2<f32>(partial_at(at + HEAD_DIM), partial_at(at + HEAD_DIM + 1u));
        }
      }
      for (var j = 0u; j < COMBINE_BATCH; j++) {
        let mn = max(m, ml[j].x);
        let keep = exp(m - mn);
        let add = exp(ml[j].x - mn);
        l = l * keep + ml[j].y * add;
        acc = acc * keep + o[j] * add;
        m = mn;
      }
    }
  }
  let big_m = reduce(m, true, 0u, lid, sg_lane, sg_size);
  let scale = exp(m - big_m);  // 0 for a thread without chunks
  // L: each slice's sum once (its thread d4 = 0).
  let big_l = reduce(select(0.0, l * scale, lid % D4 == 0u && slice < SLICES), false, WG / 2u, lid, sg_lane, sg_size);
  let sum = sum_slices(acc * scale, lid);
  if (lid < D4) {
    chunk_out4[h * D4 + lid] = sum / big_l;
  }
  workgroupBarrier();  // red and red4 are rewritten by the next head
}

// ---- attend_short: one pass per head while the cache is short ----
// Workgroup h over positions 0..pos < CHUNK (the host sets CHUNK to the bound): scores of
// positions t = lid, lid + WG, ... (q and the K row read straight from memory: every load of a
// thread is independent), the softmax through two subgroup reductions, then pv_part and the
// slices added in workgroup memory. Dependent steps: K loads (V's first batch with them), 2
// barriers, V's further batches (past V_BATCH SLICES positions), 1 barrier, the store.
@group(0) @binding(4) var<storage, read_write> short_out: array<vec4<f32>>;  // [heads * HEAD_DIM / 4]

@compute @workgroup_size(WG)
fn attend_short(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
                @builtin(subgroup_invocation_id) sg_lane: u32, @builtin(subgroup_size) sg_size: u32) {
  let h = wid.x;
  let len = min(state[0] + 1u, CHUNK);
  let kv = (h / GROUP) * CTX * D4;
  let v_first = v_batch(kv + lid % D4, 0u, len, lid / D4);  // before the scores: it needs none
  var m = -3.4e38;
  for (var t = lid; t < len; t += WG) {
    var s = vec4<f32>(0.0);
    for (var d = 0u; d < D4; d++) {
      s += q4[h * D4 + d] * k4_cache[kv + t * D4 + d];
    }
    let score = (s.x + s.y + s.z + s.w) * SCALE;
    chunk_p[t] = score;
    m = max(m, score);
  }
  m = reduce(m, true, 0u, lid, sg_lane, sg_size);
  var l = 0.0;
  for (var t = lid; t < len; t += WG) {  // the thread's own scores: no barrier needed
    let e = exp(chunk_p[t] - m);
    chunk_p[t] = e;
    l += e;
  }
  l = reduce(l, false, WG / 2u, lid, sg_lane, sg_size);  // its barrier also publishes chunk_p
  let sum = sum_slices(pv_part(v_first, kv + lid % D4, 0u, len, lid / D4), lid);
  if (lid < D4) {
    short_out[h * D4 + lid] = sum / l;
  }
}

// ==== Prefill: every query of a prompt chunk ====
// One workgroup per (head, block of PQ queries), a team of TEAM threads per query. Keys go
// through workgroup memory in blocks of PK with an online softmax (running max and sum, the
// accumulator rescaled when the max grows), so no scratch is needed. In a block each thread
// scores PK / TEAM keys (whole dot products, its query's row and the keys' rows read as vec4s),
// then accumulates p v for its vec4s of the output (slot, slot + TEAM, ...; up to 4: HEAD_DIM
// <= 128). Per key and head dimension that is 2 FMAs for about 3/4 of a vec4 load.
// The chunk's first position is state word 1 and its length T word 2; query t sits at position
// state[1] + t and attends to positions 0 ..= state[1] + t (causal). Cache slots past the
// block's last query are never read: they may hold anything.
const PQ: u32 = 16u;
const PK: u32 = 16u;
const TEAM: u32 = 8u;
const PROMPT_WG: u32 = PQ * TEAM;
override HD4: u32 = HEAD_DIM / 4u;  // the host requires HEAD_DIM % 4 == 0
override QK_STRIDE: u32 = HD4 + 1u;  // vec4s per staged q or k row: one more against bank conflicts

@group(0) @binding(4) var<storage, read_write> out_rows: array<vec4<f32>>;  // [T][OUT_STRIDE / 4]

var<workgroup> q_tile: array<vec4<f32>, PQ * QK_STRIDE>;  // scaled by SCALE
var<workgroup> k_tile: array<vec4<f32>, PK * QK_STRIDE>;
var<workgroup> v_tile: array<vec4<f32>, PK * HD4>;
var<workgroup> score_tile: array<array<f32, PK>, PQ>;
var<workgroup> prob_tile: array<array<f32, PK>, PQ>;

fn cache_vec4(at: u32, values: bool) -> vec4<f32> {
  if (values) {
    return vec4<f32>(v_cache[at], v_cache[at + 1u], v_cache[at + 2u], v_cache[at + 3u]);
  }
  return vec4<f32>(k_cache[at], k_cache[at + 1u], k_cache[at + 2u], k_cache[at + 3u]);
}

@compute @workgroup_size(PROMPT_WG)
fn attend_prompt(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
                 @builtin(num_workgroups) groups: vec3<u32>) {
  let h = wid.x;
  let heads = groups.x;
  let q_first = wid.y * PQ;  // the block's first query (token of the chunk)
  let T = state[2];
  let keys = state[1] + min(q_first + PQ, T);  // positions the block's queries attend to, at most
  let kv = (h / GROUP) * CTX * HEAD_DIM;
  for (var e = lid; e < PQ * HD4; e += PROMPT_WG) {
    let i = e / HD4;
    let at = ((q_first + i) * heads + h) * HEAD_DIM + 4u * (e % HD4);
    var v = vec4<f32>(0.0);
    if (q_first + i < T) {
      v = vec4<f32>(q[at], q[at + 1u], q[at + 2u], q[at + 3u]) * SCALE;
    }
    q_tile[i * QK_STRIDE + e % HD4] = v;
  }
  let qi = lid / TEAM;
  let slot = lid % TEAM;
  let pos = state[1] + q_first + qi;  // this team's query
  var m = -3.4e38;
  var l = 0.0;
  var acc: array<vec4<f32>, 4>;  // output vec4s slot + n TEAM
  for (var k0 = 0u; k0 < keys; k0 += PK) {
    workgroupBarrier();  // the previous block's tiles are read (and q_tile is written)
    for (var e = lid; e < PK * HD4; e += PROMPT_WG) {
      let j = e / HD4;
      let at = kv + (k0 + j) * HEAD_DIM + 4u * (e % HD4);
      var kr = vec4<f32>(0.0);
      var vr = vec4<f32>(0.0);
      if (k0 + j < keys) {
        kr = cache_vec4(at, false);
        vr = cache_vec4(at, true);
      }
      k_tile[j * QK_STRIDE + e % HD4] = kr;
      v_tile[j * HD4 + e % HD4] = vr;
    }
    workgroupBarrier();
    for (var j = slot; j < PK; j += TEAM) {
      var s = 0.0;
      for (var d = 0u; d < HD4; d++) {
        s += dot(q_tile[qi * QK_STRIDE + d], k_tile[j * QK_STRIDE + d]);
      }
      score_tile[qi][j] = select(-3.4e38, s, k0 + j <= pos);
    }
    workgroupBarrier();
    var m_new = m;
    for (var j = 0u; j < PK; j++) {
      m_new = max(m_new, score_tile[qi][j]);
    }
    for (var j = slot; j < PK; j += TEAM) {
      prob_tile[qi][j] = select(0.0, exp(score_tile[qi][j] - m_new), k0 + j <= pos);
    }
    let correction = exp(m - m_new);
    m = m_new;
    l *= correction;
    for (var n = 0u; n < 4u; n++) {
      acc[n] *= correction;
    }
    workgroupBarrier();
    for (var j = 0u; j < PK; j++) {
      let p = prob_tile[qi][j];
      l += p;
      for (var n = 0u; n < 4u; n++) {
        let d = slot + n * TEAM;
        if (d < HD4) {
          acc[n] += p * v_tile[j * HD4 + d];
        }
      }
    }
  }
  if (q_first + qi < T) {
    for (var n = 0u; n < 4u; n++) {
      let d = slot + n * TEAM;
      if (d < HD4) {
        out_rows[(q_first + qi) * (OUT_STRIDE / 4u) + h * HD4 + d] = acc[n] / l;
      }
    }
  }
}

// ==== Prefill, tiled (attend_prompt_tiled) ====
// One workgroup per (head, tile of TQ queries); keys in tiles of TK = 32 with an online softmax.
// q, K and V are read as vec4s (q4, k4_cache, v4_cache: HEAD_DIM % 4 == 0, checked by the host).
// Threads: TQ / 4 row groups x 8 column groups (TQ * 2 threads). A thread owns 4 queries (rows
// 4 rg .. 4 rg + 3) and, per key tile,
//   scores  keys cg + 8 j (j < 4): 16 dot products from the staged q and k rows, 64 FMAs for 8
//           workgroup vec4 loads, kept in registers;
//   output  vec4s cg + 8 n (n < TV = ceil(HD4 / 8), at most 4: HEAD_DIM <= 128) of its 4 rows,
//           accumulated from the tile's probabilities (one vec4 load gives a key's 4 rows) and V rows.
// A row's max over the tile comes from its 8 column groups, adjacent lanes: subgroup shuffles over
// BFLY of them (the host's min(8, smallest subgroup)), through row_max when subgroups are narrower.
// The running max m and sum l of the 4 rows stay in registers (l accumulates in the p v loop from
// the probabilities that loop reads anyway). K and V share one staging tile. When a thread's part
// of a tile is at most 4 vec4s (KV_PARTS 1: head_dim <= 64 at TQ 64), the next tile's K and V are
// requested into registers as soon as this tile's are staged, so that their latency hides behind
// this tile's products; else each is loaded and staged in turn. Four barriers a key tile: K
// staged, probabilities written (K read), V staged, p v done.
// Causal: tiles past the workgroup's last query are never loaded; in the others a key k counts
// for query t only if k <= state[1] + t (the diagonal tile and the chunk's own positions), keys
// past the last are staged as zeros (cache slots there may hold anything). Earlier chunks'
// positions (k < state[1]) are read from the cache like the chunk's own.
// Budgets. Workgroup memory 4 (TQ + TK)(HEAD_DIM + 4) + 16 TK (TQ / 4 + 1) + 4 TQ 8 / BFLY bytes
// (DecodeKernels::prompt_attention_fits): head_dim 64: 35,072 (TQ 64, BFLY 8); head_dim 128:
// 59,648 (TQ 64), 38,528 (32). The host takes the largest TQ that fits
// maxComputeWorkgroupStorageSize (the device's maximum is requested: 49,152 on an H100, so head_dim
// 128 runs at most 32) and still gives a large GPU enough workgroups, else smaller ones
// (DecodeKernels::prompt_attention_queries). Registers a thread: 16 TV output floats (at most 64),
// 16 scores, 4 q vec4s, 4 V vec4s, 8 of m and l, and with KV_PARTS 1 the next tile's 8 vec4s.
// Query heads of a kv group read the same K/V tiles from separate workgroups (L2 serves the
// repeats): staging a group's heads in one workgroup would multiply the q tile by GROUP (7 for
// Qwen2.5-0.5B) and not fit. Tiles are dispatched last first: the causal tiles near the end of
// the prompt have the most keys.
// Split along the keys (SPLITS > 1, grid z): a short prompt's few query tiles would each run all
// of their key tiles one after another (the last tile's chain bounds the dispatch while most SMs
// idle), so workgroup z takes key tiles z n / SPLITS .. (z + 1) n / SPLITS - 1 of the n its query
// tile needs and writes its rows' unnormalised sums, running max m and sum l into tile_parts (an
// empty share writes m at its floor, l and the sums 0); attend_prompt_combine adds them up.
override TQ: u32 = 64u;
override SPLITS: u32 = 1u;
override HEADS: u32 = 1u;
// [SPLITS][HEADS][rows][HD4 + 1], rows = the chunk's queries in whole tiles (from state word 2, so
// that prompts of any length share the pipelines): a row's output vec4s, then (m, l, 0, 0).
@group(0) @binding(5) var<storage, read_write> tile_parts: array<vec4<f32>>;
fn tile_part(split: u32, h: u32, t: u32) -> u32 {
  let rows = (state[2] + TQ - 1u) / TQ * TQ;
  return ((split * HEADS + h) * rows + t) * (HD4 + 1u);
}
const TK: u32 = 32u;
override TV: u32 = (HD4 + 7u) / 8u;  // output vec4s a thread, per row
override BFLY: u32 = 8u;             // lanes of a row's max through shuffles: 1, 2, 4 or 8
override ROW_PARTS: u32 = 8u / BFLY;  // a row's partial maxima through row_max
override KV_PARTS: u32 = (TK * HD4 + TQ * 8u - 1u) / (TQ * 8u);  // 4 vec4s a thread each
override TP_STRIDE: u32 = TQ / 4u + 1u;  // vec4s per key of tp_tile: one more against bank conflicts

var<workgroup> tq_tile: array<vec4<f32>, TQ * QK_STRIDE>;  // scaled by SCALE
var<workgroup> tkv_tile: array<vec4<f32>, TK * QK_STRIDE>;  // K, then V, of the key tile
var<workgroup> tp_tile: array<vec4<f32>, TK * TP_STRIDE>;   // [key][row group]: exp(s - m) of 4 rows
var<workgroup> row_max: array<f32, TQ * ROW_PARTS>;        // BFLY < 8 only

// Part `part` (4 vec4s a thread) of the K (values false) or V rows k0 .. k0 + TK - 1 of the kv
// head whose vec4s start at kv4; zeros from `keys` on.
fn load_kv(kv4: u32, k0: u32, keys: u32, lid: u32, part: u32, values: bool) -> array<vec4<f32>, 4> {
  var r: array<vec4<f32>, 4>;
  for (var i = 0u; i < 4u; i++) {
    let e = lid + (4u * part + i) * TQ * 2u;
    let at = kv4 + (k0 + e / HD4) * HD4 + e % HD4;
    r[i] = vec4<f32>(0.0);
    if (e < TK * HD4 && k0 + e / HD4 < keys) {
      if (values) {
        r[i] = v4_cache[at];
      } else {
        r[i] = k4_cache[at];
      }
    }
  }
  return r;
}

fn store_kv(r: array<vec4<f32>, 4>, lid: u32, part: u32) {
  for (var i = 0u; i < 4u; i++) {
    let e = lid + (4u * part + i) * TQ * 2u;
    if (e < TK * HD4) {
      tkv_tile[(e / HD4) * QK_STRIDE + e % HD4] = r[i];
    }
  }
}

// Stages this tile's K or V: from the registers `next` (KV_PARTS 1), which then receive the next
// tile's rows (k0 + TK: those past `keys` are zeros, never read), else part by part from memory.
fn stage_kv(next: ptr<function, array<vec4<f32>, 4>>, kv4: u32, k0: u32, keys: u32, lid: u32, values: bool) {
  if (KV_PARTS == 1u) {
    store_kv(*next, lid, 0u);
    *next = load_kv(kv4, k0 + TK, keys, lid, 0u, values);
  } else {
    for (var part = 0u; part < KV_PARTS; part++) {
      store_kv(load_kv(kv4, k0, keys, lid, part, values), lid, part);
    }
  }
}

@compute @workgroup_size(TQ * 2u)
fn attend_prompt_tiled(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
                       @builtin(num_workgroups) groups: vec3<u32>) {
  let h = wid.x;
  let heads = groups.x;
  let q_first = (groups.y - 1u - wid.y) * TQ;  // the longest (last) tiles start first
  let T = state[2];
  let start = state[1];
  let keys = start + min(q_first + TQ, T);  // positions the tile's queries attend to, at most
  // This workgroup's keys: all, or its share of whole key tiles (so no key past its share is
  // staged where a query could count it).
  var k_begin = 0u;
  var k_end = keys;
  if (SPLITS > 1u) {
    let n = (keys + TK - 1u) / TK;
    k_begin = wid.z * n / SPLITS * TK;
    k_end = min(keys, (wid.z + 1u) * n / SPLITS * TK);
  }
  let kv4 = (h / GROUP) * CTX * HD4;
  var k_next: array<vec4<f32>, 4>;
  var v_next: array<vec4<f32>, 4>;
  if (KV_PARTS == 1u) {
    k_next = load_kv(kv4, k_begin, k_end, lid, 0u, false);
    v_next = load_kv(kv4, k_begin, k_end, lid, 0u, true);
  }
  for (var e = lid; e < TQ * HD4; e += TQ * 2u) {
    let i = e / HD4;
    var v = vec4<f32>(0.0);
    if (q_first + i < T) {
      v = q4[((q_first + i) * heads + h) * HD4 + e % HD4] * SCALE;
    }
    tq_tile[i * QK_STRIDE + e % HD4] = v;
  }
  let rg = lid / 8u;
  let cg = lid % 8u;
  let pos0 = start + q_first + 4u * rg;  // the position of the thread's first query
  var m = array<f32, 4>(-3.4e38, -3.4e38, -3.4e38, -3.4e38);
  var l = array<f32, 4>(0.0, 0.0, 0.0, 0.0);
  var acc: array<array<vec4<f32>, 4>, 4>;  // [row][output vec4 cg + 8 n]
  for (var k0 = k_begin; k0 < k_end; k0 += TK) {
    workgroupBarrier();  // the previous tile's V and probabilities are read (and tq_tile written)
    stage_kv(&k_next, kv4, k0, k_end, lid, false);
    workgroupBarrier();
    var s = array<array<f32, 4>, 4>();  // [row][key cg + 8 j]
    for (var d = 0u; d < HD4; d++) {
      var qv: array<vec4<f32>, 4>;
      for (var i = 0u; i < 4u; i++) {
        qv[i] = tq_tile[(4u * rg + i) * QK_STRIDE + d];
      }
      for (var j = 0u; j < 4u; j++) {
        let kr = tkv_tile[(cg + 8u * j) * QK_STRIDE + d];
        for (var i = 0u; i < 4u; i++) {
          s[i][j] += dot(qv[i], kr);
        }
      }
    }
    var mx: array<f32, 4>;
    for (var i = 0u; i < 4u; i++) {
      for (var j = 0u; j < 4u; j++) {
        s[i][j] = select(-3.4e38, s[i][j], k0 + cg + 8u * j <= pos0 + i);
      }
      mx[i] = max(max(s[i][0], s[i][1]), max(s[i][2], s[i][3]));
    }
    for (var o = 1u; o < BFLY; o *= 2u) {
      for (var i = 0u; i < 4u; i++) {
        mx[i] = max(mx[i], subgroupShuffleXor(mx[i], o));
      }
    }
    if (BFLY < 8u) {
      if (cg % BFLY == 0u) {
        for (var i = 0u; i < 4u; i++) {
          row_max[(4u * rg + i) * ROW_PARTS + cg / BFLY] = mx[i];
        }
      }
      workgroupBarrier();
      for (var i = 0u; i < 4u; i++) {
        for (var p = 0u; p < ROW_PARTS; p++) {
          mx[i] = max(mx[i], row_max[(4u * rg + i) * ROW_PARTS + p]);
        }
      }
    }
    var m_new: array<f32, 4>;
    for (var i = 0u; i < 4u; i++) {
      m_new[i] = max(m[i], mx[i]);
      let correction = exp(m[i] - m_new[i]);
      m[i] = m_new[i];
      l[i] *= correction;
      for (var n = 0u; n < TV; n++) {
        acc[i][n] *= correction;
      }
    }
    for (var j = 0u; j < 4u; j++) {
      var p: vec4<f32>;
      for (var i = 0u; i < 4u; i++) {
        p[i] = select(0.0, exp(s[i][j] - m_new[i]), k0 + cg + 8u * j <= pos0 + i);
      }
      tp_tile[(cg + 8u * j) * TP_STRIDE + rg] = p;
    }
    workgroupBarrier();  // probabilities written; K read by everyone
    stage_kv(&v_next, kv4, k0, k_end, lid, true);
    workgroupBarrier();
    for (var j = 0u; j < TK; j++) {
      var vr: array<vec4<f32>, 4>;
      for (var n = 0u; n < TV; n++) {
        vr[n] = tkv_tile[j * QK_STRIDE + min(cg + 8u * n, HD4 - 1u)];
      }
      let p = tp_tile[j * TP_STRIDE + rg];
      for (var i = 0u; i < 4u; i++) {
        l[i] += p[i];
        for (var n = 0u; n < TV; n++) {
          acc[i][n] += p[i] * vr[n];
        }
      }
    }
  }
  for (var i = 0u; i < 4u; i++) {
    let t = q_first + 4u * rg + i;
    if (t < T) {
      let part = tile_part(wid.z, h, t);
      for (var n = 0u; n < TV; n++) {
        let d = cg + 8u * n;
        if (d < HD4) {
          if (SPLITS > 1u) {
            tile_parts[part + d] = acc[i][n];
          } else {
            out_rows[t * (OUT_STRIDE / 4u) + h * HD4 + d] = acc[i][n] / l[i];
          }
        }
      }
      if (SPLITS > 1u && cg == 0u) {
        tile_parts[part + HD4] = vec4<f32>(m[i], l[i], 0.0, 0.0);
      }
    }
  }
}

// attend_prompt_tiled's split partials of query t, head h, output vec4 d added up: out = sum_z
// exp(m_z - M) o_z / sum_z exp(m_z - M) l_z, M = max_z m_z (every query has a key in some share,
// so M is a score). A thread per (t, h, d): grid ceil(HEADS HD4 / 64) x the chunk's tokens.
@compute @workgroup_size(64)
fn attend_prompt_combine(@builtin(global_invocation_id) gid: vec3<u32>) {
  let hd = gid.x;
  let t = gid.y;
  if (hd >= HEADS * HD4 || t >= state[2]) {
    return;
  }
  let h = hd / HD4;
  var big_m = -3.4e38;
  for (var z = 0u; z < SPLITS; z++) {
    big_m = max(big_m, tile_parts[tile_part(z, h, t) + HD4].x);
  }
  var o = vec4<f32>(0.0);
  var l = 0.0;
  for (var z = 0u; z < SPLITS; z++) {
    let part = tile_part(z, h, t);
    let ml = tile_parts[part + HD4];
    let w = exp(ml.x - big_m);
    l += w * ml.y;
    o += w * tile_parts[part + hd % HD4];
  }
  out_rows[t * (OUT_STRIDE / 4u) + hd] = o / l;
}
