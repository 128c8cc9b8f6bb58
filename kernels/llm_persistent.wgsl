// Grid-wide synchronisation for a persistent decode (one dispatch per token whose workgroups stay
// resident and meet between stages), and the two checks that must pass before it is used.
//
// What WebGPU does not promise, and what this relies on instead:
// - Forward progress between workgroups: none. A grid barrier deadlocks when some workgroups wait
//   for others that are not yet scheduled. `probe` detects it: every workgroup counts in on a
//   storage atomic and spins a bounded number of times (SPIN_LIMIT) for the others; one that
//   gives up reports it, so a failure ends the dispatch instead of hanging it.
// - Ordering across workgroups: none beyond relaxed atomics. Tint (the pinned Dawn, Vulkan)
//   emits storage atomics as OpAtomic* at Device scope with Relaxed semantics, and
//   storageBarrier() as OpControlBarrier(Workgroup, Workgroup, UniformMemory | AcquireRelease)
//   (plus MakeAvailable | MakeVisible under the Vulkan memory model): release/acquire at WORKGROUP
//   scope only. So no happens-before links a write in one workgroup to a read in another, and a
//   plain load may hit a stale line of another SM's L1. That the writes are seen in practice is
//   a property of the driver and GPU, not of the language; `exchange` measures it: stages of
//   values where each workgroup reads values other workgroups wrote just before the barrier,
//   over NaN-poisoned stage buffers, compared with a CPU reference by the host. The decode path
//   must also compare its tokens and logits with the normal path before it is trusted.

override WG: u32 = 64u;
override SPIN_LIMIT: u32 = 65536u;  // atomic loads a workgroup spends waiting at one barrier
override STAGES: u32 = 4u;          // exchange: rounds of write, barrier, read

@group(0) @binding(0) var<storage, read_write> arrivals: atomic<u32>;  // zero at dispatch
@group(0) @binding(1) var<storage, read_write> in_time: array<u32>;    // per workgroup: 1 = every barrier met
@group(0) @binding(2) var<storage, read_write> values: array<f32>;     // exchange: [STAGES + 1][groups * WG]

var<workgroup> all_arrived: u32;

// Grid barrier number k (0, 1, ... within the dispatch) over `groups` workgroups; false when the
// wait gave up. The storageBarrier()s order this workgroup's own accesses around the count.
fn grid_barrier(lid: u32, k: u32, groups: u32) -> bool {
  storageBarrier();
  if (lid == 0u) {
    atomicAdd(&arrivals, 1u);
    let everyone = (k + 1u) * groups;
    var arrived = 0u;
    for (var i = 0u; i < SPIN_LIMIT; i++) {
      if (atomicLoad(&arrivals) >= everyone) {
        arrived = 1u;
        break;
      }
    }
    all_arrived = arrived;
  }
  storageBarrier();
  return workgroupUniformLoad(&all_arrived) == 1u;
}

@compute @workgroup_size(WG)
fn probe(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
         @builtin(num_workgroups) groups: vec3<u32>) {
  let met = grid_barrier(lid, 0u, groups.x);
  if (lid == 0u) {
    in_time[wid.x] = select(0u, 1u, met);
  }
}

// Stage s + 1 from stage s: value i mixes its own, the one WG further (the next workgroup's) and
// a far one (i * 7 + s + 1, spread over all workgroups). A read before the writer's store is seen
// returns the NaN poison or an older stage's value; either differs from the reference.
@compute @workgroup_size(WG)
fn exchange(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
            @builtin(num_workgroups) groups: vec3<u32>) {
  let n = groups.x * WG;
  let i = wid.x * WG + lid;
  var met = true;
  for (var s = 0u; s < STAGES; s++) {
    let x = s * n;
    values[x + n + i] = 0.25 * values[x + i] + 0.25 * values[x + (i + WG) % n] +
                        0.5 * values[x + (i * 7u + s + 1u) % n];
    met = grid_barrier(lid, s, groups.x) && met;
  }
  if (lid == 0u) {
    in_time[wid.x] = select(0u, 1u, met);
  }
}
