// The persistent decode (issue 9, experimental): ONE dispatch computes one position of the
// sequence through the whole Qwen2 forward pass. Its workgroups (at most as many as the
// co-residency probe of llm_persistent.wgsl saw resident at once) share every stage's rows and
// meet at grid barriers between stages:
//   embed (no barrier: every workgroup stages the token's embedding row itself), then per layer
//   1 RMSNorm + Q/K/V + bias + RoPE -> q, K/V appended to the cache   | barrier
//   2 attention of q over the cache, a (head, block of positions)   | barrier
//     per workgroup (ATT_BLOCKS; or a head per workgroup)
//   3 o_proj (its staging combines the blocks) + residual           | barrier
//   4 RMSNorm + gate/up + SiLU * up                                   | barrier
//   5 down_proj + residual (or, DOWN_SPLIT, its column chunks'       | barrier
//     partials, added to the residual by the next stage's staging)
//   final RMSNorm + LM head, each workgroup's best logit              | barrier
//   workgroup 0: argmax of the partials -> tokens[pos + 1]; pos + 1.
// 5 * layers + 1 grid barriers per token. The math is that of llm_matvec.wgsl, llm_attention.wgsl
// and llm_step.wgsl (the same weight layout, RMSNorm folded into the products, RoPE on packed
// pairs, ties of the argmax to the lowest index), so the step decoder is its reference.
//
// Visibility across workgroups. WebGPU orders nothing between workgroups beyond relaxed atomics,
// and Tint (the pinned Dawn, Vulkan) gives storageBarrier() Workgroup scope only. So every
// buffer this dispatch writes (the activations `live`, the KV cache `kv`, the control words) is
// declared atomic and read and written ONLY through atomicLoad/atomicStore/atomicAdd: Tint emits
// those as OpAtomic* at Device scope, which a GPU performs at the device-coherent level (on
// NVIDIA, L2; never from a stale line of an SM's L1, which plain loads may hit). What relaxed
// atomics do not promise is that a workgroup's stores are performed before its arrival at the
// barrier is seen (a store to one L2 slice may still be in flight when the arrival at another is
// counted), and a release at device scope is what WGSL cannot express. So the readers check
// instead: every word of `live` carries in its lowest mantissa bit (f32: one part in 2^23) a tag,
// the parity of its write's number since the buffer was last zeroed (write 0, tag 0), and a
// reader checks that a word carries the tag of the write it follows (checked4). The word before
// that write has the other tag; the one before it, written at least five grid barriers earlier,
// would need a store left unperformed across all of them. A stale word is not waited for (a
// re-read loop at every check, though never run, slowed the decode: RESULTS, session 26): it marks
// the dispatch (ctl[6]), whose result the host then discards; the batch's later dispatches do
// nothing, and the host runs the batch again from its first position with `live` zeroed and
// ctl[7] at 0. The numbers are known in advance:
// a region's words are written the same number of times W in every dispatch (ctl[7] counts the
// dispatches: write n of dispatch s is number s * W + n + 1), but for the attention blocks'
// partials, whose count grows with the position: their tags at the dispatch's start are read
// before its first barrier (part_t0), when no write of this dispatch can have reached them. The
// current position's K and V go to the cache and, tagged, to CUR_W, where attention reads them.
// The host still compares tokens and logits with the step decoder before the dispatch is trusted
// (PersistentDecoder, `wgfuse generate --decode persistent --decode-check N`).
// Weights, norms, biases and RoPE angles are read-only here (plain loads).
//
// Forward progress: a barrier's waiter spins at most SPIN_LIMIT atomic loads; one that gives up
// records the barrier in ctl[1] and stops waiting at later ones, so the dispatch ends with an
// error the host reports, instead of hanging the device.
enable subgroups;
// #include "llm_weights.wgsl"

override WG: u32 = 256u;            // threads per workgroup (a power of two, >= HEAD_DIM, >= TEAM)
override TEAM: u32 = 32u;           // threads per row (a power of two >= the largest subgroup)
override SPIN_LIMIT: u32 = 1048576u;
// The variants (llm::PersistentVariant, chosen at run time). ATT_BLOCKS 0: attention takes a head per
// workgroup; n >= 1: a head's positions in up to n blocks over the grid, whose partials the o_proj
// stage combines as it stages its input (HEAD_DIM % 4 == 0, HEADS * ATT_BLOCKS <= WG).
// DOWN_SPLIT >= 2: down_proj over (row pair, column chunk) units, DOWN_SPLIT chunks a row; the
// chunks' partial dots go to PDOWN_W and the next stage adds them to the residual as it stages it
// (workgroup 0 storing the sum in the other of two residual words, X_W and X2_W, layer by layer).
override ATT_BLOCKS: u32 = 0u;
override DOWN_SPLIT: u32 = 0u;
// K_ROUNDS (1 to 4): attention_split's tiles of up to K_ROUNDS rounds of positions.
override K_ROUNDS: u32 = 1u;
// AHEAD (every format but f32, whose group is two vec4s): each product's first trip of weights is
// loaded before it is needed, while the workgroup waits at the grid barrier before the stage, and
// each later unit's during the previous unit's dots (fetch_ahead).
override AHEAD: bool = false;
override HIDDEN: u32 = 8u;
override INTER: u32 = 8u;
override LAYERS: u32 = 1u;
override HEADS: u32 = 1u;
override KV_HEADS: u32 = 1u;
override HEAD_DIM: u32 = 2u;
override VOCAB: u32 = 1u;
override CTX: u32 = 1u;
override EPS: f32 = 1e-6;
override SCALE: f32 = 1.0;          // 1 / sqrt(HEAD_DIM)
override XS_LEN: u32 = 8u;          // staged vector floats (the host sizes it: the largest staged input)
// Offsets, in vec4<u32> of `weights` (binding 0): layer l's matrices at l * LAYER_V4 + *_V4; the embedding and
// the LM head (equal when tied).
override LAYER_V4: u32 = 0u;
override QKV_V4: u32 = 0u;
override O_V4: u32 = 0u;
override GU_V4: u32 = 0u;
override DOWN_V4: u32 = 0u;
override EMBED_V4: u32 = 0u;
override HEAD_V4: u32 = 0u;
// Offsets, in floats of `vecs`: layer l's at l * LAYER_F + *_F; the final norm; the RoPE table.
override LAYER_F: u32 = 0u;
override IN_NORM_F: u32 = 0u;
override POST_NORM_F: u32 = 0u;
override BIAS_F: u32 = 0u;
override FINAL_NORM_F: u32 = 0u;
override ROPE_F: u32 = 0u;
// Offsets, in words of `live`.
override X_W: u32 = 0u;       // residual stream [HIDDEN]
override Q_W: u32 = 0u;       // RoPE'd queries [HEADS * HEAD_DIM]
override ATT_W: u32 = 0u;     // attention output [HEADS * HEAD_DIM]
override ACT_W: u32 = 0u;     // silu(gate) * up [INTER]
override LOGITS_W: u32 = 0u;  // [VOCAB]
override BEST_W: u32 = 0u;    // per workgroup: best logit (bits), its index
override X2_W: u32 = 0u;      // DOWN_SPLIT: the residual stream of odd layers [HIDDEN]
override PDOWN_W: u32 = 0u;   // DOWN_SPLIT: down_proj's partial dots [DOWN_SPLIT][HIDDEN padded to 8]
override PART_W: u32 = 0u;    // attention blocks' partials [HEADS][ATT_BLOCKS][HEAD_DIM + 2]: sums, max, sum of exp
override CUR_W: u32 = 0u;     // the current position's K and V [K, V][KV_HEADS][HEAD_DIM]
// Tests only (PersistentOptions::drop_stores): the stores into the live words [DROP_AT, DROP_END)
// are left out in one layer, DROP_LAYER of the dispatches since `live` was zeroed (layer_clock; the
// last layer's include BEST_W's), so that their readers find the previous values and the dispatch
// is discarded rather than used; DROP_ONCE: only while no stale read has been counted.
override DROP_AT: u32 = 0u;
override DROP_END: u32 = 0u;
override DROP_LAYER: u32 = 0u;
override DROP_ONCE: bool = false;
var<private> layer_clock: u32;  // dispatches before this one * LAYERS + the layer

const STALL = -3.4e38;          // below every logit and score, as the step kernels' initial maximum
const FAILED_BASE = 0x10000u;  // above any barrier count (5 * layers + 1)

@group(0) @binding(1) var<storage, read> vecs: array<f32>;
@group(0) @binding(2) var<storage, read_write> live: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> kv: array<atomic<u32>>;  // [layer][K, V][kv_heads][CTX][hd]
@group(0) @binding(4) var<storage, read_write> tokens: array<u32>;      // [CTX + 1]
// ctl: 0 barrier arrivals (zeroed before each dispatch), 1 FAILED_BASE - the first failed
// barrier (0: none), 2 pos (PROBE_POS: the grid probe), 3 tokens known (a position whose next token
// is known picks none), 4 the probe's spins, 5 reads that found a word's previous write, 6 1 once
// one did (the dispatches after it do nothing: the host runs them again), 7 decode dispatches run
// since `live` was zeroed, 8.. those of 5 by region (region_of).
@group(0) @binding(5) var<storage, read_write> ctl: array<atomic<u32>>;
// The grid probe: the dispatch only meets at one barrier, waiting at most ctl[4] spins, so the host
// learns whether THIS kernel's workgroups (its registers and workgroup memory, not a lighter probe
// kernel's) are co-resident at the grid's size.
const PROBE_POS = 0xffffffffu;

// The staged input vector of a product, by column group of 8: the group's first four elements at
// xs[c8], its last four at xs[XS_LEN / 8 + c8], so that a team's lanes, which take consecutive
// groups, read consecutive vec4s (scalar floats at a stride of 8 would meet in 4 of the 32 banks).
var<workgroup> xs: array<vec4<f32>, XS_LEN / 4u>;
var<workgroup> red: array<f32, 2u * WG>;   // subgroup partials (2 rows); tree reductions
var<workgroup> best_i: array<u32, WG>;
var<workgroup> probs: array<f32, WG>;      // attention: exp(s - m) of one tile of positions
var<workgroup> qh: array<f32, HEAD_DIM>;   // attention: one head's query
var<workgroup> shared_word: u32;
var<workgroup> part_t0: array<atomic<u32>, (ATT_BLOCKS + 31u) / 32u + 1u>;  // block b's tag at the start: bit b

// The thread's built-ins; the grid's (uniform) go apart in Grid: the uniformity analysis takes a
// struct parameter as a whole.
struct Ids {
  @builtin(local_invocation_index) lid: u32,
  @builtin(subgroup_invocation_id) sg_lane: u32,
  @builtin(subgroup_size) sg_size: u32,
}
struct Grid {
  wid: u32,     // this workgroup
  groups: u32,  // workgroups in the dispatch
}

// The tag of write n of a dispatch to a region whose writes before it have parity `base`.
fn tag_of(base: u32, n: u32) -> u32 {
  return (base + n + 1u) & 1u;
}
// The parities of the writes before this dispatch, s * W for each region's W: the regions written
// once a layer (Q_W, CUR_W, ATT_W, ACT_W, PDOWN_W), the residual (X_W, X2_W: with DOWN_SPLIT twice in
// the layers of each, an even count; else the embedding and twice a layer) and BEST_W (once).
struct Bases {
  layer: u32,
  x: u32,
  best: u32,
}
fn bases_of(s: u32) -> Bases {
  let sp = s & 1u;
  return Bases(sp & (LAYERS & 1u), select(sp, 0u, DOWN_SPLIT >= 2u), sp);
}

// The number of the residual's write that layer l's o_proj reads (the embedding, the previous
// down_proj's or, with DOWN_SPLIT, its stage 1's store, in X_W and X2_W by turns); o_proj writes the
// next, down_proj (without DOWN_SPLIT) the one after.
fn x_in(l: u32) -> u32 {
  return select(2u * l, 2u * (l / 2u), DOWN_SPLIT >= 2u);
}

fn store_t(at: u32, v: f32, tag: u32) {
  if (at >= DROP_AT && at < DROP_END && layer_clock == DROP_LAYER && !(DROP_ONCE && atomicLoad(&ctl[5]) != 0u)) {
    return;
  }
  atomicStore(&live[at], (bitcast<u32>(v) & ~1u) | tag);
}
fn live4(at: u32) -> vec4<u32> {
  return vec4<u32>(atomicLoad(&live[at]), atomicLoad(&live[at + 1u]), atomicLoad(&live[at + 2u]), atomicLoad(&live[at + 3u]));
}
// Which of the words w do not carry `tag`: the previous write's, not yet overwritten where read.
fn stale_words(w: vec4<u32>, tag: u32) -> vec4<bool> {
  return (w & vec4<u32>(1u)) != vec4<u32>(tag);
}
// Words at..at+3 of live as loaded (w) as floats; where one that `want` covers is stale, the dispatch
// is marked for the host to discard (ctl[6]) and counted. Load first, check after: the loads of a
// stage stay in flight together, and the check costs a compare.
fn checked4(w: vec4<u32>, at: u32, tag: u32, want: vec4<bool>) -> vec4<f32> {
  if (any(want & stale_words(w, tag))) {
    mark_stale(at);
  }
  return bitcast<vec4<f32>>(w);
}
fn mark_stale(at: u32) {
  atomicAdd(&ctl[5], 1u);
  atomicAdd(&ctl[8u + region_of(at)], 1u);
  atomicStore(&ctl[6], 1u);
}
// The region of live word `at`, in the host's order of them (10).
fn region_of(at: u32) -> u32 {
  return u32(at >= Q_W) + u32(at >= ATT_W) + u32(at >= ACT_W) + u32(at >= LOGITS_W) + u32(at >= BEST_W) +
         u32(at >= PART_W) + u32(at >= X2_W) + u32(at >= PDOWN_W) + u32(at >= CUR_W);
}
fn checked(at: u32, tag: u32) -> f32 {
  return checked_word(atomicLoad(&live[at]), at, tag);
}
// Word `at` of live as loaded (w), checked.
fn checked_word(w: u32, at: u32, tag: u32) -> f32 {
  return checked4(vec4<u32>(w, 0u, 0u, 0u), at, tag, vec4<bool>(true, false, false, false)).x;
}
// Words at and at + 1 (the second only with `second`), both loaded before either is checked.
fn checked2(at: u32, tag: u32, second: bool) -> vec2<f32> {
  return checked4(vec4<u32>(atomicLoad(&live[at]), atomicLoad(&live[at + 1u]), 0u, 0u), at, tag,
                vec4<bool>(true, second, false, false)).xy;
}

// Grid barrier number k of this dispatch. ctl[0] only grows within a dispatch: barrier k is
// passed when it reaches (k + 1) * groups.
// Split in two, arrive() and depart(), so that loads which do not depend on the barrier (the next
// stage's weights) can be issued between them and complete while thread 0 waits.
fn grid_barrier(ids: Ids, grid: Grid, k: u32) {
  arrive(ids);
  depart(ids, grid, k, SPIN_LIMIT);
}

fn arrive(ids: Ids) {
  storageBarrier();
  workgroupBarrier();
  if (ids.lid == 0u) {
    atomicAdd(&ctl[0], 1u);
  }
}

fn depart(ids: Ids, grid: Grid, k: u32, spins: u32) {
  if (ids.lid == 0u) {
    let everyone = (k + 1u) * grid.groups;
    var met = false;
    if (atomicLoad(&ctl[1]) == 0u) {  // after a failure nobody waits
      for (var i = 0u; i < spins; i++) {
        if (atomicLoad(&ctl[0]) >= everyone) {
          met = true;
          break;
        }
      }
    }
    if (!met) {
      atomicMax(&ctl[1], FAILED_BASE - k);  // the first failed barrier wins
    }
  }
  storageBarrier();
  workgroupBarrier();
}

// A word every thread needs uniformly (pos), read once by thread 0.
fn uniform_ctl(ids: Ids, word: u32) -> u32 {
  if (ids.lid == 0u) {
    shared_word = atomicLoad(&ctl[word]);
  }
  return workgroupUniformLoad(&shared_word);
}

// The workgroup's sum (max when take_max) of v, returned to every thread: subgroup sums, then a
// barrier and each thread folding the subgroups' (two barriers, not a tree's eight).
fn reduce(ids: Ids, v: f32, take_max: bool) -> f32 {
  var s: f32;
  if (take_max) {
    s = subgroupMax(v);
  } else {
    s = subgroupAdd(v);
  }
  if (ids.sg_lane == 0u) {
    red[ids.lid / ids.sg_size] = s;
  }
  workgroupBarrier();
  var r = red[0];
  for (var j = 1u; j < WG / ids.sg_size; j++) {
    r = select(r + red[j], max(r, red[j]), take_max);
  }
  workgroupBarrier();
  return r;
}

// xs = v * norm (zero past cols), v = live[at..], or with `embed_token` < VOCAB that token's
// embedding row, which workgroup 0 also stores as the residual stream. Returns 1 / rms(v) with a
// norm, else 1 (norm_at = NO_NORM). Four elements per thread and step: four independent loads in
// flight (atomic loads go to L2, whose latency dominates this staging).
const NO_NORM = 0xffffffffu;
// With `down_parts` (DOWN_SPLIT), v is live[at..] plus down_proj's partial dots, and workgroup 0
// stores that sum, the new residual, at `store_at` (unless NOWHERE). tags: the tag v's words must
// carry, the partials', the stores'.
const NOWHERE = 0xffffffffu;
fn stage(ids: Ids, grid: Grid, at: u32, cols: u32, norm_at: u32, embed_token: u32, down_parts: bool, store_at: u32,
         tags: vec3<u32>) -> f32 {
  let c8n = (cols + 7u) / 8u;
  var ss = 0.0;
  for (var i4 = ids.lid; i4 < 2u * c8n; i4 += WG) {
    var v = vec4<f32>(0.0);
    let i = 4u * i4;
    let inside = vec4<u32>(i, i + 1u, i + 2u, i + 3u) < vec4<u32>(cols);
    // The norm's loads before the tags' check: in flight with the vector's.
    var norm = vec4<f32>(1.0);
    if (norm_at != NO_NORM) {
      norm = select(vec4<f32>(0.0), vec4<f32>(vecs[norm_at + i], vecs[norm_at + i + 1u], vecs[norm_at + i + 2u], vecs[norm_at + i + 3u]), inside);
    }
    if (embed_token < VOCAB) {
      let g = weight_group(EMBED_V4, embed_token, c8n, i4 / 2u);
      v = select(g[1], g[0], i4 % 2u == 0u);
      v = select(vec4<f32>(0.0), v, inside);
      if (grid.wid == 0u) {
        for (var j = 0u; j < 4u; j++) {
          if (inside[j]) {
            store_t(X_W + i + j, v[j], tags.z);
          }
        }
      }
    } else {
      // Clamped reads past cols (inside the live buffer: every region is padded to 8), zeroed. Every
      // word loaded first, checked after.
      let w = live4(at + i);
      v = select(vec4<f32>(0.0), bitcast<vec4<f32>>(w), inside);
      let parts = select(0u, DOWN_SPLIT, down_parts);
      let part_words = (HIDDEN + 7u) / 8u * 8u;
      var stale_part = vec4<bool>(false);
      for (var c = 0u; c < parts; c++) {
        let pw = live4(PDOWN_W + c * part_words + i);
        stale_part |= inside & stale_words(pw, tags.y);
        v += select(vec4<f32>(0.0), bitcast<vec4<f32>>(pw), inside);
      }
      if (any(inside & stale_words(w, tags.x))) {
        mark_stale(at + i);
      }
      if (any(stale_part)) {
        mark_stale(PDOWN_W + i);
      }
      if (down_parts && grid.wid == 0u && store_at != NOWHERE) {
        for (var j = 0u; j < 4u; j++) {
          if (inside[j]) {
            store_t(store_at + i + j, v[j], tags.z);
          }
        }
      }
    }
    ss += dot(v, v);
    put_xs(i4, v * norm);
  }
  let total = reduce(ids, ss, false);  // its barriers also publish xs
  return select(1.0, inverseSqrt(total / f32(cols) + EPS), norm_at != NO_NORM);
}

// Elements 4 i4 .. 4 i4 + 3 of the staged vector.
fn put_xs(i4: u32, v: vec4<f32>) {
  xs[i4 % 2u * (XS_LEN / 8u) + i4 / 2u] = v;
}

// Elements 0-3 and 4-7 of column group c8 of xs, zeros from group `lim` on (where c8 is clamped).
fn xs_group(c8: u32, lim: u32, c: u32) -> array<vec4<f32>, 2> {
  let z = vec4<f32>(0.0);
  return array<vec4<f32>, 2>(select(z, xs[c8], c < lim), select(z, xs[XS_LEN / 8u + c8], c < lim));
}

// Column group c of the unit's rows dotted with xs, zero from group g1 on.
fn group_dots(u: Unit, c: u32) -> vec2<f32> {
  let c8 = min(c, u.g1 - 1u);
  let x = xs_group(c8 - u.x0, u.g1, c);
  return vec2<f32>(group_dot(u.mat, u.r0, u.c8n, c8, x[0], x[1]), group_dot(u.mat, u.r1, u.c8n, c8, x[0], x[1]));
}

// A team's unit of a product: rows r0 and r1 (r0 + 1, clamped to the matrix) of the matrix at
// `mat`, whose rows are c8n column groups long, over column groups [g0, g1); xs holds the input
// from column group x0 on.
struct Unit {
  mat: u32,
  r0: u32,
  r1: u32,
  c8n: u32,
  g0: u32,
  g1: u32,
  x0: u32,
}

// The unit of rows r0, r0 + 1 of a `rows` x `cols` matrix, all its columns.
fn whole_rows(mat: u32, r0: u32, rows: u32, cols: u32) -> Unit {
  let c8n = (cols + 7u) / 8u;
  return Unit(mat, r0, min(r0 + 1u, rows - 1u), c8n, 0u, c8n, 0u);
}

// The first trip of team_dots over a unit (per lane four column groups of both rows), as stored
// (group_words), loaded ahead of their use (AHEAD; zeros otherwise).
alias Ahead = array<vec4<u32>, 8>;

fn fetch_ahead(ids: Ids, u: Unit) -> Ahead {
  var w = Ahead();
  if (AHEAD) {
    let lane = ids.lid % TEAM;
    for (var j = 0u; j < 4u; j++) {
      let c8 = min(u.g0 + j * TEAM + lane, u.g1 - 1u);  // as group_dots clamps
      w[2u * j] = group_words(u.mat, u.r0, u.c8n, c8);
      w[2u * j + 1u] = group_words(u.mat, u.r1, u.c8n, c8);
    }
  }
  return w;
}

// Dots of the unit's two rows with xs, by this thread's team: two rows at once, twice the loads in
// flight; with AHEAD the first trip from `ahead` (fetch_ahead of the same unit). Each subgroup's
// partials in red[sg * 2 + r], after a barrier. Uniform trip count (subgroupAdd follows): lanes
// past the row re-read its last group and multiply it by zero.
fn team_dots(ids: Ids, u: Unit, ahead: Ahead) {
  let lane = ids.lid % TEAM;
  // Four column groups per lane and trip, in four sums: their eight weight loads are independent,
  // so they are in flight together (the trip count is not a constant the compiler could unroll).
  var acc = array<vec2<f32>, 4>();
  var c0 = u.g0;
  if (AHEAD) {
    for (var j = 0u; j < 4u; j++) {
      let c = c0 + j * TEAM + lane;
      let c8 = min(c, u.g1 - 1u);
      let x = xs_group(c8 - u.x0, u.g1, c);
      acc[j] += vec2<f32>(words_dot(ahead[2u * j], c8, x[0], x[1]), words_dot(ahead[2u * j + 1u], c8, x[0], x[1]));
    }
    c0 += 4u * TEAM;
  }
  for (; c0 < u.g1; c0 += 4u * TEAM) {
    acc[0] += group_dots(u, c0 + lane);
    acc[1] += group_dots(u, c0 + TEAM + lane);
    acc[2] += group_dots(u, c0 + 2u * TEAM + lane);
    acc[3] += group_dots(u, c0 + 3u * TEAM + lane);
  }
  let t = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  let s = vec2<f32>(subgroupAdd(t.x), subgroupAdd(t.y));
  if (ids.sg_lane == 0u) {
    let sg = ids.lid / ids.sg_size;
    red[2u * sg] = s.x;
    red[2u * sg + 1u] = s.y;
  }
  workgroupBarrier();
}

// The next unit's ahead words (iteration it + 1 of a product of `units` units, whose unit is
// `next`), or zeros where this workgroup has none: issued before the current unit's dots.
fn fetch_next(ids: Ids, grid: Grid, it: u32, units: u32, next: Unit) -> Ahead {
  if (!AHEAD || workgroup_idle(grid, it + 1u, units)) {
    return Ahead();
  }
  return fetch_ahead(ids, next);
}

// Row r (0 or 1) of this thread's team: the sum of its subgroups' partials.
fn team_total(ids: Ids, r: u32) -> f32 {
  let per_team = TEAM / ids.sg_size;
  let first = ids.lid / TEAM * per_team;
  var t = 0.0;
  for (var j = 0u; j < per_team; j++) {
    t += red[2u * (first + j) + r];
  }
  return t;
}

// Work units (a pair of rows) of a product over the whole grid: iteration `it` gives
// this thread's team unit (it * groups + wid) * teams + team. The count is uniform.
fn unit_iters(grid: Grid, units: u32) -> u32 {
  let per_iter = grid.groups * (WG / TEAM);
  return (units + per_iter - 1u) / per_iter;
}
// True when no team of this workgroup has a unit in iteration `it` (uniform over the workgroup): it
// leaves the loop instead of recomputing the last unit for nothing.
fn workgroup_idle(grid: Grid, it: u32, units: u32) -> bool {
  return (it * grid.groups + grid.wid) * (WG / TEAM) >= units;
}
fn unit_of(ids: Ids, grid: Grid, it: u32) -> u32 {
  return (it * grid.groups + grid.wid) * (WG / TEAM) + ids.lid / TEAM;
}

fn kv_at(layer: u32, which: u32, kv_head: u32, p: u32) -> u32 {
  return (((layer * 2u + which) * KV_HEADS + kv_head) * CTX + p) * HEAD_DIM;
}

// Packed Q/K/V rows ra, ra + 1 (dots already scaled): bias, RoPE, the store into q, or into the cache
// and CUR_W; `tag`: the stores' into live. As store_qkv of llm_common.wgsl.
fn store_qkv(layer: u32, ra: u32, a_dot: f32, b_dot: f32, pos: u32, tag: u32) {
  let q_rows = HEADS * HEAD_DIM;
  let kv_rows = KV_HEADS * HEAD_DIM;
  let bias = layer * LAYER_F + BIAS_F;
  let a = a_dot + vecs[bias + ra];
  let b = b_dot + vecs[bias + ra + 1u];
  let half_dim = HEAD_DIM / 2u;
  if (ra < q_rows + kv_rows) {
    let r = select(ra - q_rows, ra, ra < q_rows);
    let head = r / HEAD_DIM;
    let i = (r % HEAD_DIM) / 2u;
    let cs = vec2<f32>(vecs[ROPE_F + 2u * (pos * half_dim + i)], vecs[ROPE_F + 2u * (pos * half_dim + i) + 1u]);
    let ya = a * cs.x - b * cs.y;
    let yb = b * cs.x + a * cs.y;
    if (ra < q_rows) {
      store_t(Q_W + head * HEAD_DIM + i, ya, tag);
      store_t(Q_W + head * HEAD_DIM + i + half_dim, yb, tag);
    } else {
      let at = kv_at(layer, 0u, head, pos) + i;
      atomicStore(&kv[at], bitcast<u32>(ya));
      atomicStore(&kv[at + half_dim], bitcast<u32>(yb));
      store_t(cur_at(0u, head) + i, ya, tag);
      store_t(cur_at(0u, head) + i + half_dim, yb, tag);
    }
  } else {
    let r = ra - q_rows - kv_rows;
    let at = kv_at(layer, 1u, r / HEAD_DIM, pos) + r % HEAD_DIM;
    atomicStore(&kv[at], bitcast<u32>(a));
    atomicStore(&kv[at + 1u], bitcast<u32>(b));
    store_t(cur_at(1u, r / HEAD_DIM) + r % HEAD_DIM, a, tag);
    store_t(cur_at(1u, r / HEAD_DIM) + r % HEAD_DIM + 1u, b, tag);
  }
}

// The current position's K (which 0) or V (1) of a kv head in CUR_W.
fn cur_at(which: u32, kv_head: u32) -> u32 {
  return CUR_W + (which * KV_HEADS + kv_head) * HEAD_DIM;
}

// A word of the KV cache as f32.
fn kvf(at: u32) -> f32 {
  return bitcast<f32>(atomicLoad(&kv[at]));
}

// The current position in a tile's V sum: its index in the tile (n or more: not in it), and its V
// word of this thread's output dimension in CUR_W (not the cache, whose store may not be seen yet):
// as loaded when the head's work began (in flight with its other loads), its place, its tag.
struct Cur {
  j: u32,
  w: u32,
  at: u32,
  tag: u32,
}
fn cur_v(cur: Cur) -> f32 {
  return checked_word(cur.w, cur.at, cur.tag);
}

// One output dimension's share of a tile's V sum: positions part, part + parts, ... below n of the
// tile whose dimension's first word is at `v`, weighted by probs; four loads in flight per trip.
fn v_sum(v: u32, part: u32, parts: u32, n: u32, cur: Cur) -> f32 {
  var a4 = vec4<f32>(0.0);
  var j = part;
  for (; j + 3u * parts < n; j += 4u * parts) {
    let js = vec4<u32>(j, j + parts, j + 2u * parts, j + 3u * parts);
    var x = vec4<f32>(kvf(v + j * HEAD_DIM), kvf(v + (j + parts) * HEAD_DIM), kvf(v + (j + 2u * parts) * HEAD_DIM),
                      kvf(v + (j + 3u * parts) * HEAD_DIM));
    if (any(js == vec4<u32>(cur.j))) {
      x = select(x, vec4<f32>(cur_v(cur)), js == vec4<u32>(cur.j));
    }
    a4 += vec4<f32>(probs[js.x], probs[js.y], probs[js.z], probs[js.w]) * x;
  }
  for (; j < n; j += parts) {
    var x = kvf(v + j * HEAD_DIM);
    if (j == cur.j) {
      x = cur_v(cur);
    }
    a4.x += probs[j] * x;
  }
  return a4.x + a4.y + a4.z + a4.w;
}

// One tile of the online softmax: the scores s (of positions where `valid`) update the running max
// st.x, sum of exp st.y and this thread's output share st.z, whose V rows are n positions from `v`
// (the current one's `cur`).
// Ends with a barrier: probs and red are rewritten by the next tile.
fn softmax_tile(ids: Ids, s: f32, valid: bool, st: ptr<function, vec3<f32>>, v: u32, part: u32, parts: u32, n: u32,
                cur: Cur) {
  let m_new = max((*st).x, reduce(ids, s, true));
  let ex = select(0.0, exp(s - m_new), valid);
  probs[ids.lid] = ex;
  let corr = exp((*st).x - m_new);
  (*st).y = (*st).y * corr + reduce(ids, ex, false);
  (*st).z *= corr;
  if (part < parts) {
    (*st).z += v_sum(v, part, parts, n, cur);
  }
  (*st).x = m_new;
  workgroupBarrier();
}

// Attention of the query heads at pos over cache positions 0..pos: a head per workgroup and
// iteration (workgroups past the heads wait at the next barrier), positions in tiles of WG threads
// with a running maximum (one pass over K and V). Atomic loads are one L2 round trip each and a
// chain of them waits for each in turn, so the loops keep several independent ones in flight: the
// K dot in four partial sums, the V sum split over WG / HEAD_DIM parts of the tile's positions with
// four partial sums each, the parts added at the end. Not split along the cache: long contexts make
// this stage long.
fn attention(ids: Ids, grid: Grid, layer: u32, pos: u32, tag: u32) {
  let lid = ids.lid;
  let len = pos + 1u;
  let parts = WG / HEAD_DIM;
  let d = lid % HEAD_DIM;
  let part = lid / HEAD_DIM;
  for (var h = grid.wid; h < HEADS; h += grid.groups) {  // uniform: the workgroup's own heads
    let kvh = h / (HEADS / KV_HEADS);
    let v_at = cur_at(1u, kvh) + d;
    let v_word = atomicLoad(&live[v_at]);
    for (var e = lid; e < HEAD_DIM; e += WG) {
      qh[e] = checked(Q_W + h * HEAD_DIM + e, tag);
    }
    workgroupBarrier();
    var st = vec3<f32>(STALL, 0.0, 0.0);  // running max, sum of exp, this thread's output share
    for (var t0 = 0u; t0 < len; t0 += WG) {
      let p = t0 + lid;
      var s = STALL;
      if (p == pos) {  // its K from CUR_W
        var dsum = 0.0;
        for (var e = 0u; e < HEAD_DIM; e++) {
          dsum += qh[e] * checked(cur_at(0u, kvh) + e, tag);
        }
        s = dsum * SCALE;
      } else if (p < len) {
        let k = kv_at(layer, 0u, kvh, p);
        var s4 = vec4<f32>(0.0);
        for (var e = 0u; e + 3u < HEAD_DIM; e += 4u) {
          s4 += vec4<f32>(qh[e], qh[e + 1u], qh[e + 2u], qh[e + 3u]) *
                vec4<f32>(kvf(k + e), kvf(k + e + 1u), kvf(k + e + 2u), kvf(k + e + 3u));
        }
        var dsum = s4.x + s4.y + s4.z + s4.w;
        for (var e = HEAD_DIM / 4u * 4u; e < HEAD_DIM; e++) {
          dsum += qh[e] * kvf(k + e);
        }
        s = dsum * SCALE;
      }
      softmax_tile(ids, s, p < len, &st, kv_at(layer, 1u, kvh, t0) + d, part, parts, min(WG, len - t0),
                   Cur(pos - t0, v_word, v_at, tag));
    }
    // The parts' sums of output dimension d, through red.
    red[lid] = st.z;
    workgroupBarrier();
    if (lid < HEAD_DIM) {
      var o = 0.0;
      for (var q = 0u; q < parts; q++) {
        o += red[q * HEAD_DIM + lid];
      }
      store_t(ATT_W + h * HEAD_DIM + lid, o / st.y, tag);
    }
    workgroupBarrier();
  }
}

// ATT_BLOCKS >= 1: the blocks of a head at `len` positions, and the positions per block (whole
// tiles of the K dot, at most ATT_BLOCKS blocks).
fn att_split(len: u32) -> vec2<u32> {
  let tile = WG / (HEAD_DIM / 4u);
  let tiles = (len + tile - 1u) / tile;
  let most = max(ATT_BLOCKS, 1u);  // (never called with 0; keeps the constant division defined)
  let per = (tiles + most - 1u) / most * tile;
  return vec2<u32>((len + per - 1u) / per, per);
}

fn part_at(h: u32, b: u32) -> u32 {
  return PART_W + (h * ATT_BLOCKS + b) * (HEAD_DIM + 2u);
}

// Block b's partials (every head's, every word) are written together, once a layer while the
// position has the block: one tag each, that of its word m at the dispatch's start (read before the
// first barrier, load_part_t0), the parity of its writes before.
fn load_part_t0(ids: Ids, pos: u32) {
  if (ATT_BLOCKS != 0u && ids.lid < att_split(pos + 1u).x) {
    let w = atomicLoad(&live[part_at(0u, ids.lid) + HEAD_DIM]);
    atomicOr(&part_t0[ids.lid / 32u], (w & 1u) << (ids.lid % 32u));
  }
}
fn part_base(b: u32) -> u32 {
  return (atomicLoad(&part_t0[b / 32u]) >> (b % 32u)) & 1u;
}

// Attention split over positions (ATT_BLOCKS >= 1, flash-decoding): unit (head, block) per
// workgroup and iteration; its tiles of positions take HEAD_DIM / 4 threads a position for the K
// dot (four loads in flight each, summed through red), then the running max and sum as attention()
// does. A tile is up to K_ROUNDS rounds of WG / (HEAD_DIM / 4) positions, each thread's rounds'
// loads in flight together: a tile costs the same few round trips to L2 and workgroup barriers
// however many positions it holds, and long blocks take fewer tiles. The block's unnormalised
// sums, max and sum of exp go to part_at(head, block); stage_attention combines them. The K-dot
// quarters (K_ROUNDS * WG floats at most) go through xs, unused between the Q/K/V stage's products
// and o_proj's staging: a larger `red` would cost the 0.5B kernel its second workgroup an SM.
fn attention_split(ids: Ids, grid: Grid, layer: u32, pos: u32, tag: u32) {
  let lid = ids.lid;
  let len = pos + 1u;
  let split = att_split(len);
  let quads = HEAD_DIM / 4u;
  let slots = WG / quads;                     // positions of one round
  let rounds = min(K_ROUNDS, quads);          // tile <= WG: a thread a position below
  let tile = rounds * slots;
  let slot = lid / quads;
  let c = lid % quads;
  let parts = WG / HEAD_DIM;
  let d = lid % HEAD_DIM;
  let part = lid / HEAD_DIM;
  for (var u = grid.wid; u < HEADS * split.x; u += grid.groups) {  // uniform
    let h = u / split.x;
    let kvh = h / (HEADS / KV_HEADS);
    let p0 = (u % split.x) * split.y;
    let p1 = min(len, p0 + split.y);
    // q, and the current position's V word of dimension d, loaded now and checked where used: in
    // flight with the first tile's K loads.
    let q_at = Q_W + h * HEAD_DIM + 4u * c;
    var q_words = vec4<u32>(0u);
    if (slot < slots) {
      q_words = live4(q_at);
    }
    let v_at = cur_at(1u, kvh) + d;
    let v_word = atomicLoad(&live[v_at]);
    var st = vec3<f32>(STALL, 0.0, 0.0);  // running max, sum of exp, this thread's output share
    for (var t0 = p0; t0 < p1; t0 += tile) {
      var kq = array<vec4<f32>, 4>();  // every round's loads first, then the dots
      var k_cur = vec4<u32>(0u);       // the current position's K (from CUR_W), if this thread's
      let rc = pos - t0;
      let cur_here = slot < slots && rc < tile && rc % slots == slot && pos < p1;
      for (var r = 0u; r < rounds; r++) {
        let p = t0 + r * slots + slot;
        if (slot < slots && p < p1) {
          if (p == pos) {
            k_cur = live4(cur_at(0u, kvh) + 4u * c);
          } else {
            let k = kv_at(layer, 0u, kvh, p) + 4u * c;
            kq[r] = vec4<f32>(kvf(k), kvf(k + 1u), kvf(k + 2u), kvf(k + 3u));
          }
        }
      }
      let q = checked4(q_words, q_at, tag, vec4<bool>(slot < slots && t0 == p0));  // (in the first tile)
      if (cur_here) {
        kq[rc / slots] = checked4(k_cur, cur_at(0u, kvh) + 4u * c, tag, vec4<bool>(true));
      }
      // Quarter c of position i's dot at float c * tile + i of xs: the summing lanes (a position
      // each) then read consecutive words (at a stride of quads they would meet in a few banks).
      if (slot < slots) {
        for (var r = 0u; r < rounds; r++) {
          let i = c * tile + r * slots + slot;
          xs[i / 4u][i % 4u] = dot(q, kq[r]);
        }
      }
      workgroupBarrier();
      let mine = lid < tile && t0 + lid < p1;
      var s = STALL;
      if (mine) {
        var dsum = 0.0;
        for (var j = 0u; j < quads; j++) {
          let i = j * tile + lid;
          dsum += xs[i / 4u][i % 4u];
        }
        s = dsum * SCALE;
      }
      workgroupBarrier();  // reduce() rewrites red
      softmax_tile(ids, s, mine, &st, kv_at(layer, 1u, kvh, t0) + d, part, parts, min(tile, p1 - t0),
                   Cur(pos - t0, v_word, v_at, tag));
    }
    red[lid] = st.z;
    workgroupBarrier();
    let at = part_at(h, u % split.x);
    let part_tag = tag_of(part_base(u % split.x), layer);
    if (lid < HEAD_DIM) {
      var o = 0.0;
      for (var r = 0u; r < parts; r++) {
        o += red[r * HEAD_DIM + lid];
      }
      store_t(at + lid, o, part_tag);
    }
    if (lid == 0u) {
      store_t(at + HEAD_DIM, st.x, part_tag);
      store_t(at + HEAD_DIM + 1u, st.y, part_tag);
    }
    workgroupBarrier();
  }
}

// xs = the attention output from attention_split's partials (zero past HEADS * HEAD_DIM): per head
// the blocks' maxima and sums give each block's weight exp(m_b - m) / l, in probs; each output
// element is the weighted sum of its blocks' (independent loads).
fn stage_attention(ids: Ids, pos: u32, layer: u32) {
  let lid = ids.lid;
  let nb = att_split(pos + 1u).x;
  for (var i = lid; i < HEADS * nb; i += WG) {
    let at = part_at(i / nb, i % nb) + HEAD_DIM;
    let ml = checked2(at, tag_of(part_base(i % nb), layer), true);
    probs[i] = ml.x;
    red[i] = ml.y;
  }
  workgroupBarrier();
  for (var h = lid; h < HEADS; h += WG) {
    var m = STALL;
    for (var b = 0u; b < nb; b++) {
      m = max(m, probs[h * nb + b]);
    }
    var l = 0.0;
    for (var b = 0u; b < nb; b++) {
      l += red[h * nb + b] * exp(probs[h * nb + b] - m);
    }
    for (var b = 0u; b < nb; b++) {
      probs[h * nb + b] = exp(probs[h * nb + b] - m) / l;
    }
  }
  workgroupBarrier();
  let cols = HEADS * HEAD_DIM;
  for (var i4 = lid; i4 < 2u * ((cols + 7u) / 8u); i4 += WG) {
    let i = 4u * i4;
    var o = vec4<f32>(0.0);
    if (i < cols) {  // HEAD_DIM % 4 == 0: the four elements are one head's
      let h = i / HEAD_DIM;
      var stale = false;  // every block's words loaded first, checked after
      for (var b = 0u; b < nb; b++) {
        let w = live4(part_at(h, b) + i % HEAD_DIM);
        stale = stale || any(stale_words(w, tag_of(part_base(b), layer)));
        o += probs[h * nb + b] * bitcast<vec4<f32>>(w);
      }
      if (stale) {
        mark_stale(part_at(h, 0u));
      }
    }
    put_xs(i4, o);
  }
  workgroupBarrier();
}

// The unit of iteration `it` of add_product over the matrix at `mat`.
fn add_unit(ids: Ids, grid: Grid, mat: u32, cols: u32, it: u32) -> Unit {
  let units = (HIDDEN + 1u) / 2u;
  return whole_rows(mat, 2u * min(unit_of(ids, grid, it), units - 1u), HIDDEN, cols);
}

// x += W v (o_proj, down_proj; v = live[at..], staged; or with `attention_parts` the combined
// attention blocks), rows in pairs over the grid's teams; a row's residual word is only touched by
// its team. Workgroups without a unit skip it, the staging too: every staging workgroup reads all
// of v from L2. The residual is at x_at; tags: the one v's words carry (not with attention_parts:
// their blocks' of `layer`), the residual's before and after; `fetched`: fetch_ahead of the first unit.
fn add_product(ids: Ids, grid: Grid, mat: u32, at: u32, cols: u32, attention_parts: bool, pos: u32, layer: u32,
               x_at: u32, tags: vec3<u32>, fetched: Ahead) {
  let units = (HIDDEN + 1u) / 2u;
  var ahead = fetched;
  if (workgroup_idle(grid, 0u, units)) {
    return;
  }
  if (attention_parts) {
    stage_attention(ids, pos, layer);
  } else {
    stage(ids, grid, at, cols, NO_NORM, VOCAB, false, 0u, vec3<u32>(tags.x, 0u, 0u));
  }
  for (var it = 0u; it < unit_iters(grid, units); it++) {
    if (workgroup_idle(grid, it, units)) {
      break;
    }
    let u = unit_of(ids, grid, it);
    let unit = add_unit(ids, grid, mat, cols, it);
    let r0 = unit.r0;
    let next = fetch_next(ids, grid, it, units, add_unit(ids, grid, mat, cols, it + 1u));
    team_dots(ids, unit, ahead);
    ahead = next;
    if (ids.lid % TEAM == 0u && u < units) {
      let two = r0 + 1u < HIDDEN;
      let x = checked2(x_at + r0, tags.y, two);
      store_t(x_at + r0, x.x + team_total(ids, 0u), tags.z);
      if (two) {
        store_t(x_at + r0 + 1u, x.y + team_total(ids, 1u), tags.z);
      }
    }
    workgroupBarrier();
  }
}

// down_split's column groups a chunk, and its units.
fn down_per() -> u32 {
  let chunks = max(DOWN_SPLIT, 2u);  // (never called below 2; keeps the constant division defined)
  return ((INTER + 7u) / 8u + chunks - 1u) / chunks;
}
fn down_units() -> u32 {
  return (HIDDEN + 1u) / 2u * max(DOWN_SPLIT, 2u);
}

// The unit of iteration `it` of down_proj (of the matrix at `mat`), split or not.
fn down_unit(ids: Ids, grid: Grid, mat: u32, it: u32) -> Unit {
  if (DOWN_SPLIT < 2u) {
    return add_unit(ids, grid, mat, INTER, it);
  }
  let pairs = (HIDDEN + 1u) / 2u;
  let c8n = (INTER + 7u) / 8u;
  let uc = min(unit_of(ids, grid, it), down_units() - 1u);
  let chunk = uc / pairs;
  let r0 = 2u * (uc % pairs);
  return Unit(mat, r0, min(r0 + 1u, HIDDEN - 1u), c8n, chunk * down_per(), min(c8n, (chunk + 1u) * down_per()),
              down_staged(grid, it).x);
}

// The column groups [x, y) of the input that down_split stages in iteration `it`, from xs's start:
// the chunks of the workgroup's units (consecutive: one chunk, or more where they cross a chunk's
// end; the host sizes xs for the most that any iteration stages).
fn down_staged(grid: Grid, it: u32) -> vec2<u32> {
  let pairs = (HIDDEN + 1u) / 2u;
  let first = (it * grid.groups + grid.wid) * (WG / TEAM);
  let last = min(first + WG / TEAM, down_units()) - 1u;
  return vec2<u32>(first / pairs * down_per(), min((INTER + 7u) / 8u, (last / pairs + 1u) * down_per()));
}

// down_proj split over columns (DOWN_SPLIT >= 2): unit u is row pair u % pairs of chunk u / pairs
// (a workgroup's teams mostly share a chunk, and it stages only its units' chunks of the input);
// each team stores its two partial dots at PDOWN_W, which the next stage adds to the residual;
// `tag`: that of the input's words and of the stores; `fetched`: fetch_ahead of the first unit.
fn down_split(ids: Ids, grid: Grid, mat: u32, tag: u32, fetched: Ahead) {
  let per = down_per();
  let units = down_units();
  var ahead = fetched;
  for (var it = 0u; it < unit_iters(grid, units); it++) {
    if (workgroup_idle(grid, it, units)) {
      break;
    }
    let g = down_staged(grid, it);
    for (var i4 = 2u * g.x + ids.lid; i4 < 2u * g.y; i4 += WG) {
      let i = 4u * i4;
      let inside = vec4<u32>(i, i + 1u, i + 2u, i + 3u) < vec4<u32>(INTER);
      let v = select(vec4<f32>(0.0), checked4(live4(ACT_W + i), ACT_W + i, tag, inside), inside);
      put_xs(i4 - 2u * g.x, v);
    }
    workgroupBarrier();
    let u = unit_of(ids, grid, it);
    let unit = down_unit(ids, grid, mat, it);
    let r0 = unit.r0;
    let next = fetch_next(ids, grid, it, units, down_unit(ids, grid, mat, it + 1u));
    team_dots(ids, unit, ahead);
    ahead = next;
    if (ids.lid % TEAM == 0u && u < units) {
      let at = PDOWN_W + unit.g0 / per * ((HIDDEN + 7u) / 8u * 8u) + r0;  // its chunk's partials
      store_t(at, team_total(ids, 0u), tag);
      if (r0 + 1u < HIDDEN) {
        store_t(at + 1u, team_total(ids, 1u), tag);
      }
    }
    workgroupBarrier();
  }
}

fn better(v: f32, i: u32, w: f32, j: u32) -> bool {
  return v > w || (v == w && i < j);
}

// The best (value, index) of the workgroup's threads' candidates, in red[0], best_i[0].
fn reduce_best(lid: u32, v: f32, i: u32) {
  red[lid] = v;
  best_i[lid] = i;
  workgroupBarrier();
  for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
    if (lid < stride && better(red[lid + stride], best_i[lid + stride], red[lid], best_i[lid])) {
      red[lid] = red[lid + stride];
      best_i[lid] = best_i[lid + stride];
    }
    workgroupBarrier();
  }
}

// The units of Q/K/V, gate/up and the LM head (pairs of rows, all columns) for iteration `it`.
fn qkv_unit(ids: Ids, grid: Grid, layer: u32, it: u32) -> Unit {
  let rows = (HEADS + 2u * KV_HEADS) * HEAD_DIM;
  return whole_rows(layer * LAYER_V4 + QKV_V4, 2u * min(unit_of(ids, grid, it), rows / 2u - 1u), rows, HIDDEN);
}
fn gate_up_unit(ids: Ids, grid: Grid, layer: u32, it: u32) -> Unit {
  return whole_rows(layer * LAYER_V4 + GU_V4, 2u * min(unit_of(ids, grid, it), INTER - 1u), 2u * INTER, HIDDEN);
}
fn head_unit(ids: Ids, grid: Grid, it: u32) -> Unit {
  let units = (VOCAB + 1u) / 2u;
  return whole_rows(HEAD_V4, 2u * min(unit_of(ids, grid, it), units - 1u), VOCAB, HIDDEN);
}

// Grid barrier k with, between arrival and departure, the first unit's ahead words of the product
// that follows it (`units` units, the first `first`); zeros where this workgroup has none.
fn barrier_fetching(ids: Ids, grid: Grid, k: u32, units: u32, first: Unit) -> Ahead {
  arrive(ids);
  var ahead = Ahead();
  if (AHEAD && !workgroup_idle(grid, 0u, units)) {
    ahead = fetch_ahead(ids, first);
  }
  depart(ids, grid, k, SPIN_LIMIT);
  return ahead;
}

@compute @workgroup_size(WG)
fn decode_token(ids: Ids, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let grid = Grid(wid.x, groups.x);
  let lid = ids.lid;
  let lane = ids.lid % TEAM;
  let pos = uniform_ctl(ids, 2u);
  if (pos == PROBE_POS) {
    arrive(ids);
    depart(ids, grid, 0u, uniform_ctl(ids, 4u));
    return;
  }
  if (uniform_ctl(ids, 6u) != 0u) {
    return;  // an earlier dispatch of the batch read a stale word: the host discards the batch
  }
  let token = tokens[pos];
  let dispatches = uniform_ctl(ids, 7u);
  let bases = bases_of(dispatches);
  layer_clock = dispatches * LAYERS;
  load_part_t0(ids, pos);  // before the first barrier: see part_base
  let q_rows = HEADS * HEAD_DIM;
  let qkv_rows = q_rows + 2u * KV_HEADS * HEAD_DIM;
  let o_units = (HIDDEN + 1u) / 2u;
  let down_n = select(o_units, down_units(), DOWN_SPLIT >= 2u);
  var k = 0u;  // grid barriers passed
  // The ahead words of the next product's first unit: fetched while waiting at the barrier before it.
  var ahead = Ahead();
  if (AHEAD && !workgroup_idle(grid, 0u, qkv_rows / 2u)) {
    ahead = fetch_ahead(ids, qkv_unit(ids, grid, 0u, 0u));
  }
  for (var layer = 0u; layer < LAYERS; layer++) {
    let mats = layer * LAYER_V4;
    let vs = layer * LAYER_F;
    // The residual stream: X_W, or with DOWN_SPLIT X_W and X2_W by turns (the last layer's down_proj
    // partials are added to it where the next stage stages it).
    let x_at = select(X_W, X2_W, DOWN_SPLIT >= 2u && layer % 2u == 1u);
    let x_prev = select(X_W, X2_W, x_at == X_W);
    let parts_in = DOWN_SPLIT >= 2u && layer > 0u;
    layer_clock = dispatches * LAYERS + layer;
    let lt = tag_of(bases.layer, layer);  // this layer's writes of the regions written once a layer
    let x_read = select(x_in(layer), x_in(layer - 1u) + 1u, parts_in);  // (layer > 0: the residual staged)
    // 1: Q/K/V. Layer 0 stages the embedding row, and workgroup 0 stores it as the residual.
    // Workgroups without a Q/K/V unit skip the stage (workgroup 0 never does: it stores the embedding).
    if (!workgroup_idle(grid, 0u, qkv_rows / 2u)) {
      let inv = stage(ids, grid, select(x_at, x_prev, parts_in), HIDDEN, vs + IN_NORM_F, select(VOCAB, token, layer == 0u),
                      parts_in, x_at,
                      vec3<u32>(tag_of(bases.x, x_read), tag_of(bases.layer, layer - 1u), tag_of(bases.x, x_in(layer))));
      for (var it = 0u; it < unit_iters(grid, qkv_rows / 2u); it++) {
        if (workgroup_idle(grid, it, qkv_rows / 2u)) {
          break;
        }
        let u = unit_of(ids, grid, it);
        let next = fetch_next(ids, grid, it, qkv_rows / 2u, qkv_unit(ids, grid, layer, it + 1u));
        let unit = qkv_unit(ids, grid, layer, it);
        team_dots(ids, unit, ahead);
        ahead = next;
        if (lane == 0u && u < qkv_rows / 2u) {
          store_qkv(layer, unit.r0, team_total(ids, 0u) * inv, team_total(ids, 1u) * inv, pos, lt);
        }
        workgroupBarrier();
      }
    }
    grid_barrier(ids, grid, k);
    k++;
    // 2: attention.
    if (ATT_BLOCKS == 0u) {
      attention(ids, grid, layer, pos, lt);
    } else {
      attention_split(ids, grid, layer, pos, lt);
    }
    ahead = barrier_fetching(ids, grid, k, o_units, add_unit(ids, grid, mats + O_V4, q_rows, 0u));
    k++;
    // 3: o_proj + residual.
    add_product(ids, grid, mats + O_V4, ATT_W, q_rows, ATT_BLOCKS != 0u, pos, layer, x_at,
                vec3<u32>(lt, tag_of(bases.x, x_in(layer)), tag_of(bases.x, x_in(layer) + 1u)), ahead);
    ahead = barrier_fetching(ids, grid, k, INTER, gate_up_unit(ids, grid, layer, 0u));
    k++;
    // 4: gate/up + SiLU.
    let inv2 = stage(ids, grid, x_at, HIDDEN, vs + POST_NORM_F, VOCAB, false, 0u,
                     vec3<u32>(tag_of(bases.x, x_in(layer) + 1u), 0u, 0u));
    for (var it = 0u; it < unit_iters(grid, INTER); it++) {
      if (workgroup_idle(grid, it, INTER)) {
        break;
      }
      let u = unit_of(ids, grid, it);
      let next = fetch_next(ids, grid, it, INTER, gate_up_unit(ids, grid, layer, it + 1u));
      team_dots(ids, gate_up_unit(ids, grid, layer, it), ahead);
      ahead = next;
      if (lane == 0u && u < INTER) {
        let g = team_total(ids, 0u) * inv2;
        store_t(ACT_W + u, g / (1.0 + exp(-g)) * (team_total(ids, 1u) * inv2), lt);
      }
      workgroupBarrier();
    }
    ahead = barrier_fetching(ids, grid, k, down_n, down_unit(ids, grid, mats + DOWN_V4, 0u));
    k++;
    // 5: down_proj + residual.
    if (DOWN_SPLIT >= 2u) {
      down_split(ids, grid, mats + DOWN_V4, lt, ahead);
    } else {
      add_product(ids, grid, mats + DOWN_V4, ACT_W, INTER, false, pos, layer, x_at,
                  vec3<u32>(lt, tag_of(bases.x, x_in(layer) + 1u), tag_of(bases.x, x_in(layer) + 2u)), ahead);
    }
    if (layer + 1u < LAYERS) {
      ahead = barrier_fetching(ids, grid, k, qkv_rows / 2u, qkv_unit(ids, grid, layer + 1u, 0u));
    } else {
      ahead = barrier_fetching(ids, grid, k, (VOCAB + 1u) / 2u, head_unit(ids, grid, 0u));
    }
    k++;
  }
  // Final norm + LM head; each team's lane 0 keeps its best logit.
  // With DOWN_SPLIT the last layer's residual plus its down_proj partials (stored nowhere).
  let x_last = select(X_W, X2_W, DOWN_SPLIT >= 2u && (LAYERS - 1u) % 2u == 1u);
  let x_final = x_in(LAYERS - 1u) + select(2u, 1u, DOWN_SPLIT >= 2u);
  let inv = stage(ids, grid, x_last, HIDDEN, FINAL_NORM_F, VOCAB, DOWN_SPLIT >= 2u, NOWHERE,
                  vec3<u32>(tag_of(bases.x, x_final), tag_of(bases.layer, LAYERS - 1u), 0u));
  var bv = STALL;
  var bi = 0xffffffffu;
  let units = (VOCAB + 1u) / 2u;
  for (var it = 0u; it < unit_iters(grid, units); it++) {
    if (workgroup_idle(grid, it, units)) {
      break;
    }
    let u = unit_of(ids, grid, it);
    let unit = head_unit(ids, grid, it);
    let r0 = unit.r0;
    let next = fetch_next(ids, grid, it, units, head_unit(ids, grid, it + 1u));
    team_dots(ids, unit, ahead);
    ahead = next;
    if (lane == 0u && u < units) {
      for (var r = 0u; r < 2u; r++) {
        let logit = team_total(ids, r) * inv;
        if (r0 + r < VOCAB) {
          atomicStore(&live[LOGITS_W + r0 + r], bitcast<u32>(logit));  // read by the host only: no tag
          if (better(logit, r0 + r, bv, bi)) {
            bv = logit;
            bi = r0 + r;
          }
        }
      }
    }
    workgroupBarrier();
  }
  reduce_best(lid, bv, bi);
  if (lid == 0u) {
    let tag = tag_of(bases.best, 0u);
    store_t(BEST_W + 2u * grid.wid, red[0], tag);
    atomicStore(&live[BEST_W + 2u * grid.wid + 1u], (best_i[0] << 1u) | tag);  // an index below 2^31
  }
  grid_barrier(ids, grid, k);
  if (grid.wid != 0u) {
    return;
  }
  // Workgroup 0: the argmax of the partials, the next token, the next position.
  bv = STALL;
  bi = 0xffffffffu;
  for (var i = lid; i < grid.groups; i += WG) {
    let at = BEST_W + 2u * i;
    let w = checked2(at, tag_of(bases.best, 0u), true);
    let v = w.x;
    let j = bitcast<u32>(w.y) >> 1u;
    if (better(v, j, bv, bi)) {
      bv = v;
      bi = j;
    }
  }
  workgroupBarrier();
  reduce_best(lid, bv, bi);
  if (lid == 0u) {
    if (pos + 1u >= atomicLoad(&ctl[3])) {
      tokens[pos + 1u] = best_i[0];
      atomicStore(&ctl[3], pos + 2u);
    }
    atomicStore(&ctl[2], pos + 1u);
    atomicStore(&ctl[7], dispatches + 1u);  // every workgroup read it before the last barrier
  }
}
