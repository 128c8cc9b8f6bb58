// Kernels for measuring the cost of a dispatch itself.

// No memory, one workgroup: what is left is the API and launch cost. EMPTY_WG only makes a
// second, distinct pipeline for the pipeline-change variant.
override EMPTY_WG: u32 = 64;

@compute @workgroup_size(EMPTY_WG)
fn empty() {}

// A dependent step on u32 words: each dispatch reads what the previous one wrote, so the
// implementation must order them. Wrapping integer arithmetic keeps the result exact:
// after s steps, x = 3^s * x0 + (3^s - 1) / 2  (mod 2^32).
@group(0) @binding(0) var<storage, read_write> words: array<u32>;

@compute @workgroup_size(64)
fn step_u32(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i < arrayLength(&words)) {
    words[i] = words[i] * 3u + 1u;
  }
}
