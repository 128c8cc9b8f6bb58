// The tiny transformer one op per dispatch (strategies eager and batched) and one dispatch per
// layer (strategy layer): the ops of tiny_common.wgsl over activations in a storage buffer. `op`
// spreads its items over every thread of the grid (x: ceil(items * lanes / WG) workgroups, y: the
// sequence); the *_fused entries, op_emit and generate (strategy single where one sequence's
// activations do not fit workgroup memory) run one workgroup per sequence.
// #include "tiny_common.wgsl"

@group(0) @binding(6) var<storage, read_write> act: array<f32>;  // [seq][ACT_SIZE]

var<workgroup> fed: u32;

// `act` is a storage buffer of floats here (sequences at act_base, any multiple of 1), so act_ld4
// loads 4 floats, and the activations' barrier orders storage too (tiny_common.wgsl sync).
fn act_ld(i: u32) -> f32 {
  return act[i];
}

fn act_ld4(i: u32) -> vec4<f32> {
  return vec4<f32>(act[i], act[i + 1u], act[i + 2u], act[i + 3u]);
}

fn act_st(i: u32, v: f32) {
  act[i] = v;
}

fn act_barrier() {
  storageBarrier();
  workgroupBarrier();
}  // the position state[seq] holds, as a value uniform across the workgroup

struct Ids {
  @builtin(global_invocation_id) gid: vec3<u32>,
  @builtin(local_invocation_index) lid: u32,
  @builtin(workgroup_id) wid: vec3<u32>,
}

// Selects the sequence of this workgroup; returns the position being fed.
fn begin(ids: Ids) -> u32 {
  use_bindings();
  _ = &act;
  seq = ids.wid.y;
  act_base = seq * ACT_SIZE;
  if (ids.lid == 0u) {
    fed = state[seq];
  }
  return workgroupUniformLoad(&fed);
}

// Which op an `op` pipeline runs: the values of tiny::Op (src/tiny/runner.cpp).
override OP: u32 = 0u;

// One op of the decode step, its items spread over every thread of the grid.
// The grid's size is a parameter of its own: the uniformity analysis takes a structure of
// built-ins as non-uniform when one member is, and the lane reductions need n uniform.
@compute @workgroup_size(WG)
fn op(ids: Ids, @builtin(num_workgroups) groups: vec3<u32>) {
  let pos = begin(ids);
  let tid = ids.gid.x;
  let n = groups.x * WG;
  let layer = params.layer;
  switch OP {
    case 0u: { embed(tokens[seq * CAP + pos], tid, n); }
    case 1u: { rmsnorm(A_X, A_XN, tid, n); }
    case 2u: { qkv(layer, tid, n); }
    case 3u: { rope_kv(layer, pos, tid, n); }
    case 4u: { scores(layer, pos, tid, n); }
    case 5u: { attend(layer, pos, tid, n); }
    case 6u: { o_proj(layer, tid, n); }
    case 7u: { residual(tid, n); }
    case 8u: { rmsnorm(A_X, A_XN, tid, n); }
    case 9u: { gate_up(layer, tid, n); }
    case 10u: { silu_mul(tid, n); }
    case 11u: { down(layer, tid, n); }
    case 12u: { rmsnorm(A_X, A_XN, tid, n); }
    default: { head(plain(A_XN), tid, n); }
  }
}

// One workgroup per sequence: the logits and next token, then the position advances (after every
// thread of the group has read it).
@compute @workgroup_size(WG)
fn op_emit(ids: Ids) {
  let pos = begin(ids);
  _ = emit(pos, ids.lid, WG);
  storageBarrier();
  if (ids.lid == 0u) {
    state[seq] = pos + 1u;
  }
}

// Strategy layer: one workgroup per sequence runs layer params.layer for the current position.
@compute @workgroup_size(WG)
fn layer_fused(ids: Ids) {
  layer_step(params.layer, begin(ids), ids.lid, WG);
}

// Strategy layer: final norm, LM head, next token, and the position advances.
@compute @workgroup_size(WG)
fn head_fused(ids: Ids) {
  let pos = begin(ids);
  _ = head_step(pos, ids.lid, WG);
  if (ids.lid == 0u) {
    state[seq] = pos + 1u;
  }
}

// Strategy single, the activations in storage: the whole generation, one workgroup per sequence.
@compute @workgroup_size(WG)
fn generate(ids: Ids) {
  begin(ids);
  generation(ids.lid, WG);
}

// Before each run: every logit NaN, so that a value no strategy wrote fails the check. The grid is
// 2-D (x * y workgroups) because a large run holds more than 65,535 workgroups of logits.
var<private> nan_bits: u32 = 0x7fc00000u;  // read at run time: WGSL refuses a NaN constant

@compute @workgroup_size(WG)
fn poison_logits(ids: Ids, @builtin(num_workgroups) groups: vec3<u32>) {
  use_bindings();
  _ = &act;
  let i = (ids.wid.y * groups.x + ids.wid.x) * WG + ids.lid;
  if (i < arrayLength(&logits)) {
    logits[i] = bitcast<f32>(nan_bits);
  }
}
