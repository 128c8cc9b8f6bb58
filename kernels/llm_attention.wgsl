// Attention of one query (the position being decoded) over the KV cache, one workgroup per query
// head; head h reads kv head h / GROUP (grouped-query attention). Causal by construction: the
// cache holds positions 0..pos, the query is at pos (state word 0).
//   1. scores[t] = q . k[t] / sqrt(hd), and their max      (threads stride over t)
//   2. scores[t] = exp(scores[t] - max), and their sum
//   3. out[d] = sum_t scores[t] v[t][d] / sum               (WG / HEAD_DIM slices of t per d)
// Scores live in a storage scratch [heads][CTX]: workgroup memory would cap the context.

override HEAD_DIM: u32 = 2u;
override GROUP: u32 = 1u;   // heads / kv_heads
override CTX: u32 = 1u;     // cache capacity
override WG: u32 = 128u;    // >= HEAD_DIM
override SCALE: f32 = 1.0;  // 1 / sqrt(HEAD_DIM)
override OUT_STRIDE: u32 = 1u;  // attend_prompt: floats per output row (heads * hd, padded to 8)

@group(0) @binding(0) var<storage, read> q: array<f32>;        // [heads * hd]
@group(0) @binding(1) var<storage, read> k_cache: array<f32>;  // [kv_heads][CTX][hd]
@group(0) @binding(2) var<storage, read> v_cache: array<f32>;
@group(0) @binding(3) var<storage, read> state: array<u32>;    // word 0: pos
@group(0) @binding(4) var<storage, read_write> scores: array<f32>;  // [heads][CTX]
@group(0) @binding(5) var<storage, read_write> out: array<f32>;     // [heads * hd]

var<workgroup> qs: array<f32, HEAD_DIM>;
var<workgroup> red: array<f32, WG>;

// Tree reduction over the workgroup (max when take_max, else sum), returned to every thread.
fn reduce(v: f32, lid: u32, take_max: bool) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
    if (lid < stride) {
      red[lid] = select(red[lid] + red[lid + stride], max(red[lid], red[lid + stride]), take_max);
    }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}

@compute @workgroup_size(WG)
fn attend(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let h = wid.x;
  let len = state[0] + 1u;
  let kv = (h / GROUP) * CTX * HEAD_DIM;
  let row = h * CTX;
  if (lid < HEAD_DIM) {
    qs[lid] = q[h * HEAD_DIM + lid];
  }
  workgroupBarrier();

  var m = -3.4e38;
  for (var t0 = 0u; t0 < len; t0 += WG) {
    let t = t0 + lid;
    if (t < len) {
      var s = 0.0;
      for (var d = 0u; d < HEAD_DIM; d++) {
        s += qs[d] * k_cache[kv + t * HEAD_DIM + d];
      }
      s *= SCALE;
      scores[row + t] = s;
      m = max(m, s);
    }
  }
  m = reduce(m, lid, true);

  var l = 0.0;
  for (var t0 = 0u; t0 < len; t0 += WG) {
    let t = t0 + lid;
    if (t < len) {
      let e = exp(scores[row + t] - m);
      scores[row + t] = e;
      l += e;
    }
  }
  l = reduce(l, lid, false);
  storageBarrier();  // every thread's scores visible to the whole workgroup

  let slices = WG / HEAD_DIM;
  let d = lid % HEAD_DIM;
  let slice = lid / HEAD_DIM;
  var acc = 0.0;
  if (slice < slices) {
    for (var t = slice; t < len; t += slices) {
      acc += scores[row + t] * v_cache[kv + t * HEAD_DIM + d];
    }
  }
  red[lid] = acc;
  workgroupBarrier();
  if (lid < HEAD_DIM) {
    var sum = 0.0;
    for (var s = 0u; s < slices; s++) {
      sum += red[s * HEAD_DIM + lid];
    }
    out[h * HEAD_DIM + lid] = sum / l;
  }
}

// ==== Prefill: every query of a prompt chunk, one workgroup per (head, token) ====
// The chunk's first position is state word 1; query t sits at position state[1] + t and attends
// to positions 0 ..= state[1] + t (causal). Keys in blocks of WG with an online softmax (running
// max and sum, the accumulator rescaled when the max grows), so no scratch is needed.
@group(0) @binding(4) var<storage, read_write> out_rows: array<f32>;  // [T][OUT_STRIDE]

var<workgroup> probs: array<f32, WG>;

@compute @workgroup_size(WG)
fn attend_prompt(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
                 @builtin(num_workgroups) groups: vec3<u32>) {
  let h = wid.x;
  let t = wid.y;
  let heads = groups.x;
  let len = state[1] + t + 1u;
  let kv = (h / GROUP) * CTX * HEAD_DIM;
  let q_base = (t * heads + h) * HEAD_DIM;
  if (lid < HEAD_DIM) {
    qs[lid] = q[q_base + lid];
  }
  workgroupBarrier();
  var m = -3.4e38;
  var l = 0.0;
  var acc = 0.0;  // output dimension lid (lid < HEAD_DIM)
  for (var t0 = 0u; t0 < len; t0 += WG) {
    let key = t0 + lid;
    var s = -3.4e38;
    if (key < len) {
      s = 0.0;
      for (var d = 0u; d < HEAD_DIM; d++) {
        s += qs[d] * k_cache[kv + key * HEAD_DIM + d];
      }
      s *= SCALE;
    }
    let m_new = max(m, reduce(s, lid, true));
    let p = select(0.0, exp(s - m_new), key < len);
    probs[lid] = p;
    let correction = exp(m - m_new);
    l = l * correction + reduce(p, lid, false);  // reduce's barriers also publish probs
    if (lid < HEAD_DIM) {
      acc *= correction;
      for (var j = 0u; j < min(WG, len - t0); j++) {
        acc += probs[j] * v_cache[kv + (t0 + j) * HEAD_DIM + lid];
      }
    }
    m = m_new;
    workgroupBarrier();  // probs is rewritten by the next block
  }
  if (lid < HEAD_DIM) {
    out_rows[t * OUT_STRIDE + h * HEAD_DIM + lid] = acc / l;
  }
}
