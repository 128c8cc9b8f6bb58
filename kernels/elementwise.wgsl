// An elementwise chain on one f32 tensor, in place: ops first .. first+count-1, op j being
// x = x * factors[j]. `chain` runs unfused (count = 1, one dispatch per op; also the benchmark's
// elementwise kernel) and `chain_fused` below the whole chain in one dispatch, with the same
// arithmetic in the same order.
// Traffic per dispatch: 4 bytes read + 4 bytes written per element.

override WORKGROUP_SIZE: u32 = 256;
// Distinguishes otherwise identical pipelines (the benchmark's pipeline-change variant); no value
// changes what the kernel does.
override PIPELINE_TAG: u32 = 0u;

// Mirrored by wgfuse::bench::ChainParams (static_asserted): 80 bytes.
struct ChainParams {
  n: u32,
  first: u32,
  count: u32,
  _pad: u32,
  factors: array<vec4<f32>, 4>,  // up to 16 ops
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<uniform> p: ChainParams;

// v * factor j when j is one of this dispatch's ops, else v unchanged (x * 1.0 is exact, so the
// result is bitwise that of applying only the ops in range).
fn apply(v: f32, factor: f32, j: u32) -> f32 {
  return v * select(1.0, factor, j >= p.first && j < p.first + p.count);
}

// 2D grid: 16M elements need more workgroups than one dimension allows (65,535).
@compute @workgroup_size(WORKGROUP_SIZE)
fn chain(@builtin(global_invocation_id) gid: vec3<u32>,
         @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.y * groups.x * WORKGROUP_SIZE + gid.x;
  if (i >= p.n || PIPELINE_TAG == 0xFFFFFFFFu) {
    return;
  }
  // Four factors at a time with constant component indices: a dynamic index into a vec4
  // (factors[j / 4][j % 4]) made NVIDIA's compiler keep the vector in local memory, and a scalar
  // storage array cost a bounds-checked load per op.
  var v = x[i];
  for (var g = p.first / 4u; g * 4u < p.first + p.count; g++) {
    let f = p.factors[g];
    let j = g * 4u;
    v = apply(v, f.x, j);
    v = apply(v, f.y, j + 1u);
    v = apply(v, f.z, j + 2u);
    v = apply(v, f.w, j + 3u);
  }
  x[i] = v;
}

// The fused chain at the bandwidth bound: ops 0 .. CHAIN_OPS-1 of `chain` in one pass, v = v *
// factors[j] in the same order, so the result is bitwise that of CHAIN_OPS dispatches of `chain`.
// What makes it as fast as a copy (the loop of `chain` has a runtime bound and a select per op,
// which made the 16-op chain compute-bound on an H100):
//   - the chain length is an override constant: the loop has a constant trip count, the driver
//     unrolls it and the range tests fold away;
//   - four floats per load and store (vec4), as copy_vec4 below;
//   - CHAIN_VEC4S vec4s per invocation, all loaded before the first is stored (a store to x4 may
//     alias a later load, so interleaving them would serialise the loads).
// x4 is x padded to a whole number of vec4s (the host rounds the buffer up); the padding is
// multiplied too and never read back.
override CHAIN_OPS: u32 = 1u;
const CHAIN_VEC4S: u32 = 2u;

@group(0) @binding(0) var<storage, read_write> x4: array<vec4<f32>>;

fn chain_ops(v: vec4<f32>) -> vec4<f32> {
  var y = v;
  for (var g = 0u; g * 4u < CHAIN_OPS; g++) {
    let f = p.factors[g];
    y = y * f.x;
    if (g * 4u + 1u < CHAIN_OPS) {
      y = y * f.y;
    }
    if (g * 4u + 2u < CHAIN_OPS) {
      y = y * f.z;
    }
    if (g * 4u + 3u < CHAIN_OPS) {
      y = y * f.w;
    }
  }
  return y;
}

// 2D grid of workgroups, each covering WORKGROUP_SIZE * CHAIN_VEC4S consecutive vec4s; invocation
// li takes vec4s li, li + WORKGROUP_SIZE, ... of its workgroup's span (coalesced).
@compute @workgroup_size(WORKGROUP_SIZE)
fn chain_fused(@builtin(workgroup_id) wg: vec3<u32>,
               @builtin(local_invocation_index) li: u32,
               @builtin(num_workgroups) groups: vec3<u32>) {
  let n4 = (p.n + 3u) / 4u;
  let base = (wg.y * groups.x + wg.x) * WORKGROUP_SIZE * CHAIN_VEC4S + li;
  var v: array<vec4<f32>, CHAIN_VEC4S>;
  for (var r = 0u; r < CHAIN_VEC4S; r++) {
    let i = base + r * WORKGROUP_SIZE;
    if (i < n4) {
      v[r] = x4[i];
    }
  }
  for (var r = 0u; r < CHAIN_VEC4S; r++) {
    let i = base + r * WORKGROUP_SIZE;
    if (i < n4) {
      x4[i] = chain_ops(v[r]);
    }
  }
}

// Device copy of vec4s, the bandwidth reference for the kernels above.
@group(0) @binding(0) var<storage, read> copy_src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> copy_dst: array<vec4<f32>>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn copy_vec4(@builtin(global_invocation_id) gid: vec3<u32>,
             @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.y * groups.x * WORKGROUP_SIZE + gid.x;
  if (i < arrayLength(&copy_dst)) {
    copy_dst[i] = copy_src[i];
  }
}
