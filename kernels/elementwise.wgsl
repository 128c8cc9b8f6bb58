// An elementwise chain on one f32 tensor, in place: ops first .. first+count-1, op j being
// x = x * factors[j]. The same kernel runs unfused (count = 1, one dispatch per op) and fused
// (count = k, one dispatch for the chain), so both sides do the same arithmetic in the same order.
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
