// Kernels for measuring the cost of a dispatch itself.

// Distinguishes otherwise identical pipelines for the pipeline-change variant of the benchmark:
// a different value makes a different pipeline object, and no value changes what a kernel does.
override PIPELINE_TAG: u32 = 0u;

// No memory, one workgroup: what is left is the API and launch cost.
@compute @workgroup_size(64)
fn empty() {
  _ = PIPELINE_TAG;
}

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
