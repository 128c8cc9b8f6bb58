// The tiny transformer's whole generation in one dispatch (strategies single and many sequences):
// one workgroup per sequence (workgroup_id.x), its WG threads cooperating through workgroup
// memory (the activations) and barriers, every position and every layer inside. Weights and the
// KV cache stay in storage (at these sizes the weights stay in L1/L2).
// #include "tiny_common.wgsl"

var<workgroup> act: array<f32, ACT_SIZE>;  // act_base stays 0: the group is one sequence

@compute @workgroup_size(WG)
fn generate(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  use_bindings();
  seq = wid.x;
  generation(lid, WG);
}
