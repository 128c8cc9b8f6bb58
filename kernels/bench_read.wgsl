// Read-only streaming over a buffer of vec4s: the same-size bound of an evaluation that reads its
// genomes once (src/bench: same_size_bound). Invocation i of N reads vec4s i, i + N, i + 2 N, ...
// (each load of a workgroup one coalesced run), READ_UNROLL loads issued before their sum.
// With RASTRIGIN_TERM each value goes through Rastrigin's term first (kernels/sim_rastrigin.wgsl),
// so that the kernel is a Rastrigin evaluation over 4 consecutive individuals per load, as the
// CUDA baseline's team kernel (without its per-individual sums).

override WORKGROUP_SIZE: u32 = 256u;
override RASTRIGIN_TERM: bool = false;
const READ_UNROLL: u32 = 8u;

@group(0) @binding(0) var<storage, read> read_src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> read_sink: array<f32>;

fn read_term(x: vec4<f32>) -> vec4<f32> {
  if (RASTRIGIN_TERM) {
    return x * x - 10.0 * cos(6.2831853071795864 * x) + 10.0;
  }
  return x;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn read_vec4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let n = arrayLength(&read_src);
  let stride = groups.x * WORKGROUP_SIZE;
  var acc = vec4<f32>(0.0);
  for (var base = gid.x; base < n; base += READ_UNROLL * stride) {
    // Unconditional (clamped) loads so that all are in flight together; the extra ones add 0.
    var x: array<vec4<f32>, READ_UNROLL>;
    for (var u = 0u; u < READ_UNROLL; u++) {
      x[u] = read_src[min(base + u * stride, n - 1u)];
    }
    for (var u = 0u; u < READ_UNROLL; u++) {
      acc = acc + select(vec4<f32>(0.0), read_term(x[u]), base + u * stride < n);
    }
  }
  // Never true for the data the bound reads (finite, |x| < 1e6): keeps the loads, writes nothing.
  let total = acc.x + acc.y + acc.z + acc.w;
  if (total > 3.0e38) {
    read_sink[gid.x % arrayLength(&read_sink)] = total;
  }
}

// The same over single floats (each load of a subgroup 128 contiguous bytes, as a step-splitting
// team's gene loads): what vec4 loads gain. Its own binding variable (entry points each use one).
@group(0) @binding(0) var<storage, read> read_src_f32: array<f32>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn read_f32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let n = arrayLength(&read_src_f32);
  let stride = groups.x * WORKGROUP_SIZE;
  var acc = 0.0;
  for (var base = gid.x; base < n; base += READ_UNROLL * stride) {
    var x: array<f32, READ_UNROLL>;
    for (var u = 0u; u < READ_UNROLL; u++) {
      x[u] = read_src_f32[min(base + u * stride, n - 1u)];
    }
    for (var u = 0u; u < READ_UNROLL; u++) {
      acc = acc + select(0.0, x[u], base + u * stride < n);
    }
  }
  if (acc > 3.0e38) {
    read_sink[gid.x % arrayLength(&read_sink)] = acc;
  }
}
