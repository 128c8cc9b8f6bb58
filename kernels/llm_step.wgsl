// The ends of a decode step, around the device-side decode state (state word 0 = pos, the position
// being processed; tokens[0..pos] the sequence so far):
//   embed           x = embedding[tokens[pos]]  (the token id never visits the host); with a
//                   grid y of T, the rows of a prompt chunk
//   argmax_partial  per workgroup: the largest logit of its chunk and its index
//   argmax_final    one workgroup: tokens[pos + 1] = argmax, pos = pos + 1
//   (both take grid y = a sequence of the batched decoder: its logits, partials, tokens and state
//   record lie SEQ_* words after the previous one's; a record whose word PICK is 0 is left alone)
//   advance         pos = pos + 1 (a prompt position: its next token is already known)
// argmax_final follows the contract of the sampler (kernels/llm_sample.wgsl), so either can end a
// step. Ties go to the lowest index, as torch.argmax.
// #include "llm_weights.wgsl"

override HIDDEN: u32 = 1u;
override COLS8: u32 = 1u;     // padded embedding row length in groups of 8 (see llm_matvec.wgsl)
override WG: u32 = 256u;
override VOCAB: u32 = 1u;
override CHUNK: u32 = 256u;   // logits per argmax_partial workgroup
override PARTIALS: u32 = 1u;  // argmax_partial workgroups
override POS_WORD: u32 = 0u;
override SEQ_LOGITS: u32 = 0u;  // words between sequences (grid y) of the argmax's buffers
override SEQ_TOKENS: u32 = 0u;
override SEQ_STATE: u32 = 0u;
override PICK: u32 = 0xffffffffu;  // the state word that says "pick this sequence's token" (none: always)

// binding 0: the embedding (`weights`), packed rows as the LM head's
@group(0) @binding(1) var<storage, read> tokens_in: array<u32>;
@group(0) @binding(2) var<storage, read> state_in: array<u32>;
@group(0) @binding(3) var<storage, read_write> x: array<f32>;    // [hidden]

// Row y of x (grid y: the tokens of a prompt chunk, 1 when decoding) = embedding[tokens[p + y]],
// p = state word POS_WORD (0: the decode position, 1: the prompt chunk's first position). A thread
// per group of 8 elements.
@compute @workgroup_size(WG)
fn embed(@builtin(global_invocation_id) gid: vec3<u32>) {
  let c8 = gid.x;
  if (c8 >= COLS8) {
    return;
  }
  let token = tokens_in[state_in[POS_WORD] + gid.y];
  let v = weight_group(0u, token, COLS8, c8);
  let at = gid.y * COLS8 * 8u + 8u * c8;  // rows of x padded like the weights
  for (var j = 0u; j < 8u; j++) {
    if (8u * c8 + j < HIDDEN) {
      x[at + j] = v[j / 4u][j % 4u];
    }
  }
}

var<workgroup> best_v: array<f32, WG>;
var<workgroup> best_i: array<u32, WG>;

fn better(v: f32, i: u32, w: f32, j: u32) -> bool {
  return v > w || (v == w && i < j);
}

// Reduces (best_v, best_i) over the workgroup into slot 0.
fn reduce_best(lid: u32) {
  workgroupBarrier();
  for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
    if (lid < stride && better(best_v[lid + stride], best_i[lid + stride], best_v[lid], best_i[lid])) {
      best_v[lid] = best_v[lid + stride];
      best_i[lid] = best_i[lid + stride];
    }
    workgroupBarrier();
  }
}

@group(0) @binding(0) var<storage, read> logits: array<f32>;  // [vocab]
@group(0) @binding(1) var<storage, read_write> part_v: array<f32>;
@group(0) @binding(2) var<storage, read_write> part_i: array<u32>;

@compute @workgroup_size(WG)
fn argmax_partial(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  var v = -3.4e38;
  var idx = 0xffffffffu;
  let end = min((wid.x + 1u) * CHUNK, VOCAB);
  let at = wid.y * SEQ_LOGITS;
  for (var i0 = wid.x * CHUNK; i0 < end; i0 += WG) {  // uniform trip count: barriers follow
    let i = i0 + lid;
    if (i < end && better(logits[at + i], i, v, idx)) {
      v = logits[at + i];
      idx = i;
    }
  }
  best_v[lid] = v;
  best_i[lid] = idx;
  reduce_best(lid);
  if (lid == 0u) {
    part_v[wid.y * PARTIALS + wid.x] = best_v[0];
    part_i[wid.y * PARTIALS + wid.x] = best_i[0];
  }
}

@group(0) @binding(0) var<storage, read> fin_v: array<f32>;
@group(0) @binding(1) var<storage, read> fin_i: array<u32>;
@group(0) @binding(2) var<storage, read_write> tokens: array<u32>;
@group(0) @binding(3) var<storage, read_write> state: array<u32>;

@compute @workgroup_size(WG)
fn argmax_final(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  var v = -3.4e38;
  var idx = 0xffffffffu;
  let first = wid.y * PARTIALS;
  for (var i0 = 0u; i0 < PARTIALS; i0 += WG) {
    let i = i0 + lid;
    if (i < PARTIALS && better(fin_v[first + i], fin_i[first + i], v, idx)) {
      v = fin_v[first + i];
      idx = fin_i[first + i];
    }
  }
  best_v[lid] = v;
  best_i[lid] = idx;
  reduce_best(lid);
  let rec = wid.y * SEQ_STATE;
  if (lid == 0u && (PICK == 0xffffffffu || state[rec + PICK] != 0u)) {
    let pos = state[rec];
    tokens[wid.y * SEQ_TOKENS + pos + 1u] = best_i[0];
    state[rec] = pos + 1u;
  }
}

@group(0) @binding(0) var<storage, read_write> state_adv: array<u32>;

@compute @workgroup_size(1)
fn advance() {
  state_adv[0] += 1u;
}
