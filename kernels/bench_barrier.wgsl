// The grid-barrier characterization (`wgfuse bench --suite barrier`, docs/METHODOLOGY.md): what one
// grid barrier costs inside a dispatch, by design, against what a dispatch boundary costs. One
// dispatch of `groups` workgroups (all co-resident: the host probes first) meets BARRIERS grid
// barriers; the host times it at BARRIERS = 0 and at BARRIERS = K, and divides the difference by K.
//
// Designs (entry points):
//   counter   every workgroup adds 1 to one arrival counter and spins until it reaches
//             (k + 1) * groups: the persistent decoder's barrier (llm_persistent_decode.wgsl).
//   flags     every workgroup stores epoch k + 1 into its own flag word; workgroup 0's lanes wait
//             for all flags, then store the epoch into one release word the others spin on: no
//             contended read-modify-write, one spinning reader per flag.
//   exchange_atomic / exchange_plain   the counter barrier with the work of a persistent stage
//             around it: each invocation stores a word, and after the barrier reads READS words
//             that other workgroups stored, through atomicLoad (what the persistent decoder does
//             for activations) or through plain loads. The host checks every sum: a stale read
//             fails the run rather than timing it.
//   step      one dependent dispatch of the same grid (each invocation reads and rewrites its
//             word): the boundary a grid barrier replaces, timed as a chain in one pass.
// Atomics are relaxed, storageBarrier() orders a workgroup's own accesses (Workgroup scope in
// Tint's SPIR-V): kernels/llm_persistent.wgsl says what WebGPU does and does not promise here.
// A waiter spins at most SPIN_LIMIT loads; one that gives up records its barrier in ctl[1].

override WG: u32 = 256u;
override BARRIERS: u32 = 0u;
override SPIN_LIMIT: u32 = 4194304u;
override READS: u32 = 4u;       // exchange: words read across each barrier per invocation
override FLAG_STRIDE: u32 = 8u; // flags: words between two workgroups' flags (one 32-byte sector each)

const ARRIVALS = 0u;
const FAILED = 1u;  // 1 + the first barrier whose wait gave up, 0: none
const RELEASE = 2u;
const FLAGS = 32u;

@group(0) @binding(0) var<storage, read_write> ctl: array<atomic<u32>>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;  // per invocation: the exchange's sum
// The exchange's words, [2][groups * WG]: one entry point reads them as atomics, the other plainly.
@group(0) @binding(2) var<storage, read_write> shared_atomic: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read_write> shared_plain: array<u32>;

// step's words (binding 0 of its own layout).
@group(0) @binding(0) var<storage, read_write> step_words: array<u32>;

fn spin_until(word: u32, goal: u32) -> bool {
  for (var i = 0u; i < SPIN_LIMIT; i++) {
    if (atomicLoad(&ctl[word]) >= goal) {
      return true;
    }
  }
  return false;
}

fn give_up(k: u32) {
  atomicMax(&ctl[FAILED], k + 1u);
}

fn counter_barrier(lid: u32, groups: u32, k: u32) {
  storageBarrier();
  workgroupBarrier();
  if (lid == 0u) {
    atomicAdd(&ctl[ARRIVALS], 1u);
    if (!spin_until(ARRIVALS, (k + 1u) * groups)) {
      give_up(k);
    }
  }
  storageBarrier();
  workgroupBarrier();
}

fn flag_barrier(lid: u32, wid: u32, groups: u32, k: u32) {
  storageBarrier();
  workgroupBarrier();
  let epoch = k + 1u;
  if (wid == 0u) {
    var met = true;
    for (var g = 1u + lid; g < groups; g += WG) {
      met = met && spin_until(FLAGS + g * FLAG_STRIDE, epoch);
    }
    if (!met) {
      give_up(k);
    }
    workgroupBarrier();
    if (lid == 0u) {
      atomicStore(&ctl[RELEASE], epoch);
    }
  } else if (lid == 0u) {
    atomicStore(&ctl[FLAGS + wid * FLAG_STRIDE], epoch);
    if (!spin_until(RELEASE, epoch)) {
      give_up(k);
    }
  }
  storageBarrier();
  workgroupBarrier();
}

@compute @workgroup_size(WG)
fn counter(@builtin(local_invocation_index) lid: u32, @builtin(num_workgroups) groups: vec3<u32>) {
  for (var k = 0u; k < BARRIERS; k++) {
    counter_barrier(lid, groups.x, k);
  }
}

@compute @workgroup_size(WG)
fn flags(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
         @builtin(num_workgroups) groups: vec3<u32>) {
  for (var k = 0u; k < BARRIERS; k++) {
    flag_barrier(lid, wid.x, groups.x, k);
  }
}

// The word invocation i stores before barrier k; bench/barrier_bench.cpp computes the same.
fn stored_word(i: u32, k: u32) -> u32 {
  return (i * 2654435761u) ^ (k * 40503u + 1u);
}

// The invocation whose word i reads in its r-th read after barrier k: in another workgroup
// whenever there are several.
fn source_of(i: u32, k: u32, r: u32, n: u32) -> u32 {
  return (i + WG * (r + 1u) + k * 13u) % n;
}

@compute @workgroup_size(WG)
fn exchange_atomic(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
                   @builtin(num_workgroups) groups: vec3<u32>) {
  let n = groups.x * WG;
  let i = wid.x * WG + lid;
  var sum = 0u;
  for (var k = 0u; k < BARRIERS; k++) {
    let half = (k & 1u) * n;
    atomicStore(&shared_atomic[half + i], stored_word(i, k));
    counter_barrier(lid, groups.x, k);
    for (var r = 0u; r < READS; r++) {
      sum += atomicLoad(&shared_atomic[half + source_of(i, k, r, n)]);
    }
  }
  out[i] = sum;
}

@compute @workgroup_size(WG)
fn exchange_plain(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
                  @builtin(num_workgroups) groups: vec3<u32>) {
  let n = groups.x * WG;
  let i = wid.x * WG + lid;
  var sum = 0u;
  for (var k = 0u; k < BARRIERS; k++) {
    let half = (k & 1u) * n;
    shared_plain[half + i] = stored_word(i, k);
    counter_barrier(lid, groups.x, k);
    for (var r = 0u; r < READS; r++) {
      sum += shared_plain[half + source_of(i, k, r, n)];
    }
  }
  out[i] = sum;
}

@compute @workgroup_size(WG)
fn step(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let i = wid.x * WG + lid;
  step_words[i] = step_words[i] * 1664525u + 1013904223u;
}
