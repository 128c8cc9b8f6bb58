// The tiny transformer's whole generation in one dispatch (strategies single and many sequences):
// one workgroup per sequence (workgroup_id.x), its WG threads cooperating through workgroup
// memory (the activations) and barriers, every position and every layer inside. Weights and the
// KV cache stay in storage (at these sizes the weights stay in L1/L2).
// #include "tiny_common.wgsl"

// The activations as vec4s, so that the products' reads of 4 floats are one 16-byte load (their
// offsets are multiples of 4: act_base stays 0, the group is one sequence); a workgroup barrier
// orders them (tiny_common.wgsl sync).
var<workgroup> act: array<vec4<f32>, (ACT_SIZE + 3u) / 4u>;

fn act_ld(i: u32) -> f32 {
  return act[i / 4u][i % 4u];
}

fn act_ld4(i: u32) -> vec4<f32> {
  return act[i / 4u];
}

fn act_st(i: u32, v: f32) {
  act[i / 4u][i % 4u] = v;
}

fn act_barrier() {
  workgroupBarrier();
}

@compute @workgroup_size(WG)
fn generate(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  use_bindings();
  seq = wid.x;
  generation(lid, WG);
}
