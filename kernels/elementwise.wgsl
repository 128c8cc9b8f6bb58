// An elementwise chain on one f32 tensor, in place: ops first .. first+count-1, op j being
// x = x * factors[j]. The same kernel runs unfused (count = 1, one dispatch per op) and fused
// (count = k, one dispatch for the chain), so both sides do the same arithmetic in the same order.
// Traffic per dispatch: 4 bytes read + 4 bytes written per element.

override WORKGROUP_SIZE: u32 = 256;

// Mirrored by wgfuse::bench::ChainParams (static_asserted): 16 bytes.
struct ChainParams {
  n: u32,
  first: u32,
  count: u32,
  _pad: u32,
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<uniform> p: ChainParams;
// A scalar array: a dynamic index into a vec4 of a uniform array made NVIDIA's compiler keep the
// vector in local memory, which cost more than the multiply.
@group(0) @binding(2) var<storage, read> factors: array<f32>;

// 2D grid: 16M elements need more workgroups than one dimension allows (65,535).
@compute @workgroup_size(WORKGROUP_SIZE)
fn chain(@builtin(global_invocation_id) gid: vec3<u32>,
         @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.y * groups.x * WORKGROUP_SIZE + gid.x;
  if (i >= p.n) {
    return;
  }
  var v = x[i];
  for (var j = p.first; j < p.first + p.count; j++) {
    v = v * factors[j];
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
