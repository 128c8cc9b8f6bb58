#include "llm/decode_kernels.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>

#include "util/error.h"
#include "util/half.h"

namespace wgfuse::llm {
namespace {

using gpu::BufferUsage;
// A grid of `groups` workgroups: past 65,535 (the per-dimension limit) they spill into y.
gpu::Dispatch grid(const gpu::Kernel& k, std::vector<gpu::Binding> b, uint32_t groups) {
  const uint32_t x = std::min<uint32_t>(groups, 65535);
  return {&k, std::move(b), {x, ceil_div(groups, x)}};
}

// Bindings: `w` (binding 0), then `rest`.
std::vector<gpu::Binding> with_weights(const gpu::TensorView& w, std::initializer_list<gpu::Binding> rest) {
  std::vector<gpu::Binding> all{w};
  all.insert(all.end(), rest);
  return all;
}

// Threads of the kernels that add a K split's slices (llm_matmul.wgsl SUM_WG).
constexpr uint32_t kSumWorkgroup = 128;

// The Q/K/V projection's epilogue constants, the same for decode and prefill.
std::map<std::string, double> qkv_overrides(const ModelConfig& c, uint32_t ctx_len) {
  return {{"Q_ROWS", c.num_heads * c.head_dim},
          {"KV_ROWS", c.num_kv_heads * c.head_dim},
          {"HEAD_DIM", c.head_dim},
          {"CTX", ctx_len},
          {"QK_NORM", architecture_of(c).qk_norm}};
}

}  // namespace

gpu::Buffer upload_padded(gpu::Context& ctx, std::string_view label, std::span<const float> values) {
  std::vector<float> padded(pad8(values.size()), 0.0f);
  std::copy(values.begin(), values.end(), padded.begin());
  return ctx.upload<float>(padded, BufferUsage::StorageIO, label);
}

// ---- DecodeKernels ----

DecodeKernels::DecodeKernels(gpu::Context& ctx) : ctx_(&ctx) {
  if (!ctx.features().subgroups)
    throw Error("the LLM kernels need the WebGPU 'subgroups' feature, which adapter '" +
                ctx.adapter().description + "' does not offer");
  // A row's team is at least one whole subgroup, so a subgroup sum never mixes rows.
  min_team_ = std::bit_ceil(std::max<uint32_t>(1, ctx.adapter().subgroup_max_size));
}

std::string MatvecTuning::name() const {
  return "team" + std::to_string(team) + " rows" + std::to_string(rows_per_team) + " wg" +
         std::to_string(workgroup) + (staged_x ? " staged" : "");
}

// The rule, in napkin maths for an H100 (132 SMs, subgroups of 32); the kernel benchmark
// (wgfuse_kernel_bench) measures the alternatives.
// - team: the smallest power of two >= max(32, the adapter's subgroup) whose lanes cover a row in
//   at most kLoadsPerRow loads each (the format's elements per load: a 16-byte load of f16 and
//   bf16 8, of f32 4; quantized formats a group of 8 in one or two words), at most 256: loads
//   in flight without idle lanes on short rows.
// - Starting from 256-thread workgroups whose teams do 4 rows each (x read once for 4 rows),
//   halve the rows per team, then the workgroup, while the grid has fewer than kMinWorkgroups
//   workgroups (a few per SM, so that small matrices still fill the device with a short tail),
//   keeping at least 2 rows per workgroup (RoPE and gate/up pairs stay in one workgroup).
// - Vocabulary-sized matrices (the LM head, >= kLmHeadRows rows: tens of thousands of workgroups
//   either way) with rows of at least 64 loads: teams of at least 64 threads doing 2 rows each,
//   measured best on the H100 for Qwen2.5-0.5B f16 (90.2 us; team 32 x 4 rows was bimodal,
//   93-220 us). Shorter rows would leave lanes of a 64-thread team idle. Quantized weights keep
//   the smallest team, 4 rows each (each lane more groups in flight, a quarter of the workgroups
//   staging x): the kernel benchmark on the H200 measured that the fastest for q8_0 and q5_0 at
//   both Qwen2.5 sizes, where the f16 shape left a quarter of the time on the table
//   (docs/RESULTS.md, session 31).
// - x is staged, except in matrices of at least kDirectBytes: x read by each lane, from
//   128-thread workgroups with 2 rows per team. Measured on the H100 in the decode step: Qwen2.5-
//   1.5B f16 (gate/up 55 MB) 507 tok/s [506-510] against 482 [460-505] staged (gate/up alone
//   28.9 against 31.7 us); 0.5B (gate/up 17 MB) lost with x direct, 874-890 against 908 tok/s.
MatvecTuning DecodeKernels::matvec_tuning(uint32_t rows, uint32_t cols, gpu::WeightFormat format) const {
  if (forced_) return *forced_;
  constexpr uint32_t kLoadsPerRow = 4, kMinWorkgroups = 512, kMaxThreads = 256, kLmHeadRows = 65536;
  constexpr uint64_t kDirectBytes = 48ull << 20;
  const uint64_t loads = ceil_div(cols, gpu::info(format).elements_per_load);
  MatvecTuning t;
  t.team = std::max<uint32_t>(32, min_team_);
  while (t.team < kMaxThreads && t.team * kLoadsPerRow < loads) t.team *= 2;
  if (rows >= kLmHeadRows && loads >= 64) {
    const bool quantized = gpu::is_quantized(format);
    if (!quantized) t.team = std::max(t.team, 64u);
    t.workgroup = std::max(t.team, kMaxThreads);
    t.rows_per_team = quantized ? 4 : 2;
    t.staged_x = true;
    return t;
  }
  t.staged_x = uint64_t(rows) * gpu::stored_row_bytes(format, cols) < kDirectBytes;
  t.workgroup = std::max(t.team, t.staged_x ? kMaxThreads : 128u);
  t.rows_per_team = t.staged_x ? 4 : 2;
  while (ceil_div(rows, t.rows_per_workgroup()) < kMinWorkgroups && t.rows_per_workgroup() > 2) {
    if (t.rows_per_team > 1)
      t.rows_per_team /= 2;
    else
      t.workgroup /= 2;
  }
  return t;
}

void DecodeKernels::check_tuning(const std::string& entry, const MatvecTuning& t, bool pairs) const {
  auto fail = [&](const std::string& why) {
    throw Error("kernel " + entry + ", matrix-vector tuning " + t.name() + ": " + why);
  };
  if (!std::has_single_bit(t.team) || t.team < min_team_)
    fail("team must be a power of two >= the adapter's largest subgroup (" + std::to_string(min_team_) + ")");
  if (t.rows_per_team < 1 || t.rows_per_team > 4) fail("rows per team must be 1..4");
  if (t.workgroup % t.team != 0) fail("the workgroup must be a multiple of the team");
  if (t.workgroup > ctx_->limits().max_compute_invocations_per_workgroup)
    fail("over maxComputeInvocationsPerWorkgroup = " +
         std::to_string(ctx_->limits().max_compute_invocations_per_workgroup));
  if (pairs && t.rows_per_workgroup() % 2 != 0)
    fail("this kernel needs an even number of rows per workgroup");
}

void DecodeKernels::check_workgroup_memory(const std::string& entry, uint32_t cols, uint64_t bytes) const {
  if (bytes > ctx_->limits().max_compute_workgroup_storage_size)
    throw Error("kernel " + entry + " with " + std::to_string(cols) + " inputs needs " +
                std::to_string(bytes) + " bytes of workgroup memory, over maxComputeWorkgroupStorageSize = " +
                std::to_string(ctx_->limits().max_compute_workgroup_storage_size));
}

void DecodeKernels::weight_constants(const std::string& entry, const gpu::TensorView& w, uint32_t rows,
                                     uint32_t cols, std::map<std::string, double>& o) {
  if (w.cols != cols || (rows && w.rows != rows))
    throw Error("kernel " + entry + ": weights '" + w.name + "' are " + std::to_string(w.rows) + " x " +
                std::to_string(w.cols) + ", the kernel reads " + (rows ? std::to_string(rows) : "any") +
                " x " + std::to_string(cols));
  o[gpu::kWeightFormatConstant] = double(w.format);
}

gpu::Dispatch DecodeKernels::matvec(const std::string& entry, const gpu::TensorView& w, uint32_t rows,
                                    uint32_t cols, bool norm, double eps, bool pairs,
                                    std::map<std::string, double> o, std::initializer_list<gpu::Binding> b) {
  return matvec_tuned(matvec_tuning(rows, cols, w.format), entry, w, rows, cols, norm, eps, pairs, 0,
                      std::move(o), b);
}

gpu::Dispatch DecodeKernels::matvec_tuned(const MatvecTuning& t, const std::string& entry,
                                          const gpu::TensorView& w, uint32_t rows, uint32_t cols, bool norm,
                                          double eps, bool pairs, uint64_t extra_wg_bytes,
                                          std::map<std::string, double> o,
                                          std::initializer_list<gpu::Binding> b) {
  check_tuning(entry, t, pairs);
  // attend_o reads a slice of W_o's columns per group: its matrix is rows x cols all the same.
  weight_constants(entry, w, rows, cols, o);
  // Keys already in `o` (attend_o's ITERS over its slice, gate_up_silu_sum's staging) win.
  const bool staged = norm && (o.contains("DIRECT_X") ? o.at("DIRECT_X") == 0 : t.staged_x);
  // Per subgroup: a partial per row of its team, and x's sum of squares when read directly.
  const uint32_t cols8 = ceil_div(cols, 8), red_stride = t.rows_per_team + (norm && !staged);
  const uint32_t red = t.workgroup * red_stride;
  check_workgroup_memory(entry, cols,
                         (staged ? 32ull * cols8 + 4ull * t.workgroup : 32) + 4ull * red + extra_wg_bytes);
  o.insert({{"ROWS", rows},
            {"COLS", cols},
            {"COLS8", cols8},
            {"TEAM", t.team},
            {"RPT", t.rows_per_team},
            {"WG", t.workgroup},
            {"ROWS_PER_WG", t.rows_per_workgroup()},
            {"RED_STRIDE", red_stride},
            {"RED_LEN", red},
            {"ITERS", ceil_div(cols8, t.team)},
            {"NORM_X", norm},
            {"DIRECT_X", norm && !staged},
            {"XS_V4", staged ? 2 * cols8 : 2},
            {"EPS", eps}});
  auto& k = ctx_->kernel(gpu::embedded_kernel("llm_matvec", entry, std::move(o)));
  return grid(k, with_weights(w, b), ceil_div(rows, t.rows_per_workgroup()));
}

gpu::Dispatch DecodeKernels::qkv_rope(const gpu::TensorView& w, const gpu::Binding& x,
                                      const gpu::Binding& norm, const gpu::Binding& bias,
                                      const gpu::Binding& rope, const gpu::Binding& state,
                                      const gpu::Binding& q_out, const gpu::Binding& k_cache,
                                      const gpu::Binding& v_cache, const ModelConfig& c, uint32_t ctx_len) {
  const uint32_t q_rows = c.num_heads * c.head_dim, kv_rows = c.num_kv_heads * c.head_dim;
  return matvec("qkv_rope", w, q_rows + 2 * kv_rows, c.hidden_size, true, c.rms_norm_eps, true,
                qkv_overrides(c, ctx_len), {x, norm, bias, rope, state, q_out, k_cache, v_cache});
}

gpu::Dispatch DecodeKernels::qk_norm_rope(const gpu::Binding& norm, const gpu::Binding& rope,
                                          const gpu::Binding& state, const gpu::Binding& q,
                                          const gpu::Binding& k_cache, const ModelConfig& c, uint32_t ctx_len,
                                          uint32_t T) {
  constexpr uint32_t wg = 64;  // a power of two (the reduction); lanes loop over longer heads
  check_workgroup_memory("qk_norm_rope", c.head_dim, 4ull * (c.head_dim + wg));
  auto& k = ctx_->kernel(gpu::embedded_kernel("llm_qk_norm", "qk_norm_rope",
                                              {{"HEAD_DIM", c.head_dim},
                                               {"HEADS", c.num_heads},
                                               {"CTX", ctx_len},
                                               {"EPS", c.rms_norm_eps},
                                               {"WG", wg},
                                               {"POS_WORD", T ? 1 : 0}}));
  return gpu::Dispatch{&k, {norm, rope, state, q, k_cache}, {c.num_heads + c.num_kv_heads, std::max(1u, T)}};
}

gpu::Dispatch DecodeKernels::gate_up_silu(const gpu::TensorView& w, const gpu::Binding& x,
                                          const gpu::Binding& norm, const gpu::Binding& act, uint32_t inter,
                                          uint32_t hidden, double eps) {
  return matvec("gate_up_silu", w, 2 * inter, hidden, true, eps, true, {}, {x, norm, act});
}

gpu::Dispatch DecodeKernels::matvec_norm(const gpu::TensorView& w, const gpu::Binding& x,
                                         const gpu::Binding& norm, const gpu::Binding& y, uint32_t rows,
                                         uint32_t cols, double eps) {
  return matvec("matvec_norm", w, rows, cols, true, eps, false, {}, {x, norm, y});
}

gpu::Dispatch DecodeKernels::matvec_residual(const gpu::TensorView& w, const gpu::Binding& x,
                                             const gpu::Binding& resid, uint32_t rows, uint32_t cols) {
  return matvec("matvec_residual", w, rows, cols, false, 0.0, false, {}, {x, resid});
}

gpu::Dispatch DecodeKernels::matvec_residual_to(const gpu::TensorView& w, const gpu::Binding& x,
                                                const gpu::Binding& base, const gpu::Binding& out,
                                                uint32_t rows, uint32_t cols) {
  return matvec("matvec_residual_to", w, rows, cols, false, 0.0, false, {}, {x, base, out});
}

// Blocks of 16 rows (8 teams of 32 threads, 2 rows each): every block recomputes its group's
// attention (Qwen2.5-0.5B: 7 heads), so the rule's blocks of 2 rows would redo it 448 times per
// group; 16 rows give 0.5B 112 workgroups (56 per kv head), 1.5B 192: about one per SM of an H100.
MatvecTuning DecodeKernels::attend_o_tuning(const ModelConfig& c) const {
  if (forced_) return *forced_;
  MatvecTuning t{.team = std::max<uint32_t>(32, min_team_), .rows_per_team = 2, .workgroup = 256};
  t.workgroup = std::max(t.workgroup, t.team);
  const uint32_t slots = c.num_heads / c.num_kv_heads * c.head_dim / 4;
  while (t.workgroup < slots) t.workgroup *= 2;  // a thread per output vec4 of the group
  return t;
}

uint64_t DecodeKernels::attend_o_parts_words(const ModelConfig& c) {
  return uint64_t(c.num_kv_heads) * pad8(c.hidden_size);
}

gpu::Dispatch DecodeKernels::attend_o(const gpu::TensorView& w_o, const gpu::Binding& q,
                                      const gpu::Binding& k_cache, const gpu::Binding& v_cache,
                                      const gpu::Binding& state, const gpu::Binding& o_parts,
                                      const ModelConfig& c, uint32_t ctx_len) {
  const MatvecTuning t = attend_o_tuning(c);
  const uint32_t group = c.num_heads / c.num_kv_heads, q_rows = c.num_heads * c.head_dim;
  const uint32_t slots = group * c.head_dim / 4, tile = 32, span = group * c.head_dim;
  if (c.head_dim % 4 != 0)
    throw Error("attend_o reads head_dim " + std::to_string(c.head_dim) +
                " as vec4s: it must be a multiple of 4");
  if (slots > t.workgroup)
    throw Error("attend_o: a kv group's output (" + std::to_string(group) + " heads x head_dim " +
                std::to_string(c.head_dim) + " / 4 = " + std::to_string(slots) +
                " vec4s) needs a thread each, more than the workgroup of tuning " + t.name());
  // Column groups of 8 a group's slice of W_o touches: one more where slices start mid-group.
  const uint32_t span8 = ceil_div(span, 8) + (span % 8 ? 1 : 0);
  const uint64_t own_bytes =
      4ull * span + 16ull * slots + 4ull * group * tile + 8ull * group + 20ull * t.workgroup;
  gpu::Dispatch s = matvec_tuned(t, "attend_o", w_o, c.hidden_size, q_rows, false, 0.0, false, own_bytes,
                                 {{"HEAD_DIM", c.head_dim},
                                  {"CTX", ctx_len},
                                  {"GROUP", group},
                                  {"HPW", group},
                                  {"TILE", tile},
                                  {"SCALE", 1.0 / std::sqrt(double(c.head_dim))},
                                  {"ATTEND_X", 1},
                                  {"OS_LEN", span},
                                  {"SPAN8", span8},
                                  {"ITERS", ceil_div(span8, t.team)},
                                  {"PART_STRIDE", pad8(c.hidden_size)}},
                                 {q, k_cache, v_cache, state, o_parts});
  if (s.grid.y != 1)
    throw Error("attend_o: hidden_size " + std::to_string(c.hidden_size) + " has too many row blocks");
  s.grid.y = c.num_kv_heads;
  return s;
}

gpu::Dispatch DecodeKernels::gate_up_silu_sum(const gpu::TensorView& w, const gpu::Binding& x,
                                              const gpu::Binding& o_parts, const gpu::Binding& norm,
                                              const gpu::Binding& act, const gpu::Binding& x_next,
                                              const ModelConfig& c) {
  return matvec("gate_up_silu_sum", w, 2 * c.intermediate_size, c.hidden_size, true, c.rms_norm_eps, true,
                {{"PARTS", c.num_kv_heads}, {"DIRECT_X", 0}}, {x, norm, act, o_parts, x_next});
}

const gpu::Kernel& DecodeKernels::attention(const std::string& entry, const ModelConfig& c, uint32_t ctx_len,
                                            AttentionSplit split, uint32_t short_max,
                                            PromptAttentionTile prompt) {
  // attend_chunk: a power of two >= head_dim, at least 128 (the V sum and the combination in more
  // slices: faster at 64-position chunks than 64 threads, docs/RESULTS.md session 29), and up to
  // 256 a thread per position of the chunk (longer chunks, fewer of them for the last workgroup to
  // combine, at the same work a thread).
  // attend_short: 256 threads, several per output vec4, that share the positions (or one per vec4
  // of a larger head).
  const bool wide = entry == "attend_short";
  const uint32_t wg =
      wide ? std::max<uint32_t>(256, std::bit_ceil(c.head_dim / 4))
           : std::max({128u, std::bit_ceil(c.head_dim), std::min(std::bit_ceil(split.chunk), 256u)});
  if (wg > ctx_->limits().max_compute_invocations_per_workgroup)
    throw Error("head_dim " + std::to_string(c.head_dim) + " needs attention workgroups of " +
                std::to_string(wg) + " invocations, over maxComputeInvocationsPerWorkgroup");
  const uint32_t group = c.num_heads / c.num_kv_heads, chunks = attend_chunks(c, ctx_len, split);
  if (chunks > ctx_->limits().max_compute_workgroups_per_dimension)
    throw Error("attention chunk " + std::to_string(split.chunk) + " splits --ctx " +
                std::to_string(ctx_len) + " into " + std::to_string(chunks) +
                " chunks, over maxComputeWorkgroupsPerDimension (" +
                std::to_string(ctx_->limits().max_compute_workgroups_per_dimension) + ")");
  if (c.head_dim % 4 != 0)
    throw Error("the attention kernels read head_dim " + std::to_string(c.head_dim) +
                " as vec4s: it must be a multiple of 4");
  // attend_short holds the scores of up to short_max positions where attend_chunk holds a chunk's.
  if (short_max) split = {.chunk = short_max, .heads_per_wg = 1};
  // attend_chunk's workgroup memory: its heads' queries, their chunk of scores, the reductions.
  check_workgroup_memory(entry, c.head_dim,
                         4ull * split.heads_per_wg * (c.head_dim + uint64_t(split.chunk)) + 20ull * wg);
  std::map<std::string, double> o{{"HEAD_DIM", c.head_dim},
                                  {"GROUP", group},
                                  {"CTX", ctx_len},
                                  {"WG", wg},
                                  {"SCALE", 1.0 / std::sqrt(double(c.head_dim))},
                                  {"OUT_STRIDE", pad8(c.num_heads * c.head_dim)},
                                  {"CHUNK", split.chunk},
                                  {"CHUNKS", chunks},
                                  {"HEADS_PER_WG", split.heads_per_wg},
                                  {"TQ", prompt.queries},
                                  {"SPLITS", prompt.splits},
                                  {"HEADS", c.num_heads}};
  // Only for the kernel that shuffles: a plan file's device needs subgroups of its largest BFLY.
  if (entry == "attend_prompt_tiled") o["BFLY"] = prompt_row_lanes();
  return ctx_->kernel(gpu::embedded_kernel("llm_attention", entry, std::move(o)));
}

namespace {
// The split attention's head groups (workgroups along x, and their arrival counters); throws
// Error when heads_per_wg does not divide the query heads of a kv head.
uint32_t head_groups(const ModelConfig& c, AttentionSplit split) {
  const uint32_t group = c.num_heads / c.num_kv_heads;
  if (split.heads_per_wg == 0 || group % split.heads_per_wg)
    throw Error("attention heads per workgroup (--attn-heads " + std::to_string(split.heads_per_wg) +
                ") must divide the query heads per kv head (" + std::to_string(group) + ")");
  return c.num_heads / split.heads_per_wg;
}
}  // namespace

uint32_t DecodeKernels::attend_chunks(const ModelConfig& c, uint32_t ctx_len, AttentionSplit split) {
  if (split.chunk == 0) throw Error("attention chunk (--attn-chunk) must be at least 1 cache position");
  head_groups(c, split);
  return ceil_div(ctx_len, split.chunk);
}

uint64_t DecodeKernels::attend_partials_words(const ModelConfig& c, uint32_t ctx_len, AttentionSplit split) {
  return uint64_t(c.num_heads) * attend_chunks(c, ctx_len, split) * (c.head_dim + 2);
}

uint64_t DecodeKernels::attend_arrivals_words(const ModelConfig& c, AttentionSplit split) {
  return head_groups(c, split) + 1;  // a counter per head group, then the kernel's sink
}

gpu::Dispatch DecodeKernels::attend(const gpu::Binding& q, const gpu::Binding& k_cache,
                                    const gpu::Binding& v_cache, const gpu::Binding& state,
                                    const gpu::Binding& partials, const gpu::Binding& arrivals,
                                    const gpu::Binding& out, const ModelConfig& c, uint32_t ctx_len,
                                    AttentionSplit split) {
  // Every chunk of the capacity is dispatched; those past pos exit at once.
  return {&attention("attend_chunk", c, ctx_len, split),
          {q, k_cache, v_cache, state, partials, arrivals, out},
          {head_groups(c, split), attend_chunks(c, ctx_len, split)}};
}

gpu::Dispatch DecodeKernels::attend_short(const gpu::Binding& q, const gpu::Binding& k_cache,
                                          const gpu::Binding& v_cache, const gpu::Binding& state,
                                          const gpu::Binding& out, const ModelConfig& c, uint32_t ctx_len,
                                          uint32_t max_positions) {
  if (max_positions == 0 || max_positions > ctx_len)
    throw Error("one-pass decode attention (--attn-short-max " + std::to_string(max_positions) +
                ") must cover 1 to --ctx (" + std::to_string(ctx_len) + ") positions");
  auto& k = attention("attend_short", c, ctx_len, {}, max_positions);
  return gpu::Dispatch{&k, {q, k_cache, v_cache, state, out}, {c.num_heads}};
}

std::vector<gpu::Dispatch> DecodeKernels::attend_prompt(const gpu::Binding& q, const gpu::Binding& k_cache,
                                                        const gpu::Binding& v_cache,
                                                        const gpu::Binding& state, const gpu::Binding& out,
                                                        const gpu::Binding& parts, uint64_t parts_words,
                                                        const ModelConfig& c, uint32_t ctx_len, uint32_t T,
                                                        PromptAttention kind, uint32_t tiled_queries,
                                                        uint32_t splits) {
  if (c.head_dim % 4 != 0 || c.head_dim > 128)
    throw Error("prefill attention needs head_dim a multiple of 4 and at most 128 (head_dim " +
                std::to_string(c.head_dim) +
                "); feed the prompt through decode steps instead (prefill chunk 0)");
  if (kind == PromptAttention::Auto)
    kind = T >= kPromptTiledMinTokens && prompt_attention_queries(c.head_dim) ? PromptAttention::Tiled
                                                                              : PromptAttention::Blocks;
  if (kind == PromptAttention::Tiled) {
    const uint32_t tq = tiled_queries ? tiled_queries : prompt_attention_queries(c.head_dim);
    if (tq != 16 && tq != 32 && tq != 64 && tq != 0)
      throw Error("tiled prefill attention takes 16, 32 or 64 queries a workgroup, not " +
                  std::to_string(tq));
    if (tq == 0 || !prompt_attention_fits(tq, c.head_dim))
      throw Error("tiled prefill attention at head_dim " + std::to_string(c.head_dim) +
                  " needs more than maxComputeWorkgroupStorageSize = " +
                  std::to_string(ctx_->limits().max_compute_workgroup_storage_size) +
                  " bytes of workgroup memory; use --prefill-attention blocks");
    if (splits > kPromptAttentionMaxSplits)
      throw Error("tiled prefill attention splits a tile's keys at most " +
                  std::to_string(kPromptAttentionMaxSplits) + " ways, not " + std::to_string(splits));
    const uint32_t tiles = ceil_div(T, tq);
    uint32_t s = splits ? splits : prompt_attention_splits(c.num_heads, T, tq);
    s = uint32_t(std::clamp<uint64_t>(parts_words / prompt_attention_parts_words(c, T, tq, 1), 1, s));
    const PromptAttentionTile tile{.queries = tq, .splits = s};
    auto& k = attention("attend_prompt_tiled", c, ctx_len, {}, 0, tile);
    std::vector<gpu::Dispatch> steps{
        gpu::Dispatch{&k, {q, k_cache, v_cache, state, out, parts}, {c.num_heads, tiles, s}}};
    if (s > 1) {
      auto& combine = attention("attend_prompt_combine", c, ctx_len, {}, 0, tile);
      steps.push_back(gpu::Dispatch{
          &combine,
          {gpu::Binding::unused(), gpu::Binding::unused(), gpu::Binding::unused(), state, out, parts},
          {ceil_div(c.num_heads * c.head_dim / 4, 64), T}});
    }
    return steps;
  }
  // Blocks of 16 queries x 16 keys (llm_attention.wgsl PQ, PK), q and k rows padded by a vec4.
  constexpr uint32_t block = 16;
  const uint64_t hd4 = c.head_dim / 4;
  check_workgroup_memory("attend_prompt", c.head_dim, 16 * block * (3 * hd4 + 2) + 2 * 4 * block * block);
  auto& k = attention("attend_prompt", c, ctx_len);
  return {gpu::Dispatch{&k, {q, k_cache, v_cache, state, out}, {c.num_heads, ceil_div(T, block)}}};
}

uint32_t DecodeKernels::prompt_attention_splits(uint32_t heads, uint32_t T, uint32_t queries) {
  return uint64_t(heads) * ceil_div(T, queries) < kPromptAttentionSplitBelow ? 2 : 1;
}

uint64_t DecodeKernels::prompt_attention_parts_words(const ModelConfig& c, uint32_t T, uint32_t queries,
                                                     uint32_t splits) {
  return uint64_t(splits) * c.num_heads * ceil_div(T, queries) * queries * (c.head_dim + 4);
}

uint32_t DecodeKernels::prompt_row_lanes() const {
  return std::bit_floor(std::clamp(ctx_->adapter().subgroup_min_size, 1u, 8u));
}

bool DecodeKernels::prompt_attention_fits(uint32_t queries, uint32_t head_dim) const {
  // llm_attention.wgsl attend_prompt_tiled: q and K/V tiles of (head_dim + 4) floats a row, the
  // probabilities of 32 keys x (queries + 4), and the rows' partial maxima of narrow subgroups.
  return 4ull * (queries + 32) * (head_dim + 4) + 16ull * 32 * (queries / 4 + 1) +
             4ull * queries * (8 / prompt_row_lanes()) <=
         ctx_->limits().max_compute_workgroup_storage_size;
}

uint32_t DecodeKernels::prompt_attention_queries(uint32_t head_dim) const {
  for (uint32_t tq : {64u, 32u, 16u})
    if (prompt_attention_fits(tq, head_dim)) return tq;
  return 0;
}

PromptAttention parse_prompt_attention(std::string_view s, std::string_view what) {
  if (s == "auto") return PromptAttention::Auto;
  if (s == "blocks") return PromptAttention::Blocks;
  if (s == "tiled") return PromptAttention::Tiled;
  throw Error(std::string(what) + " '" + std::string(s) + "': expected auto, blocks or tiled");
}

PromptTile DecodeKernels::prompt_tile(uint32_t rows, uint32_t cols, uint32_t T, PromptProduct product,
                                      gpu::WeightFormat format) {
  // Measured on the H100 (docs/RESULTS.md, sessions 14 and 17: tile sweeps of 0.5B and 1.5B at 512
  // to 4,000 tokens): the residual products run fastest in 64 x 64 tiles split along K as far as
  // their sums fit their buffer; the normed ones in 128 x 128 tiles (8 x 8 outputs a thread: the
  // most FMAs per workgroup load) where those alone give every SM a few workgroups, else in ever
  // smaller tiles of 4 x 8 (0.5B gate/up at 512 tokens: 64 x 128). q8_0 weights need more of the
  // large tiles to gain from them: in gate/up 64 x 128 was faster up to 1,120 workgroups (0.5B at
  // 512 and 1,024 tokens, 1.5B at 512 and 1,024), 128 x 128 from 1,216 (0.5B at 2,048 to 4,000
  // tokens, 1.5B at 2,048). Q/K/V where even 64 x 64 tiles leave SMs idle (0.5B at 512 tokens):
  // 64 x 64 in 4 slices, with their sum faster than unsplit 32 x 64, than 7 slices and than 32 x 64
  // in 4 (session 19); at 1,024 tokens a split of 64 x 64 did not gain.
  const uint32_t slices = std::clamp(ceil_div(cols, 16) / kPromptMinSliceSteps, 1u, kPromptMaxKSplit);
  if (product == PromptProduct::Residual) return {64, 64, slices};
  auto groups = [&](PromptTile t) { return uint64_t(ceil_div(rows, t.rows)) * ceil_div(T, t.tokens); };
  const uint32_t large =
      format == gpu::WeightFormat::Q8_0 ? kPromptLargeTileWorkgroupsQ8_0 : kPromptLargeTileWorkgroups;
  if (const PromptTile t{128, 128, 1, 2}; groups(t) >= large) return t;
  for (PromptTile t : {PromptTile{64, 128, 1}, PromptTile{64, 64, 1}})
    if (groups(t) >= kPromptMinWorkgroups) return t;
  if (product == PromptProduct::Qkv && slices > 1) return {64, 64, std::min(slices, kPromptQkvKSplit)};
  return {32, 64, 1};
}

namespace {
constexpr PromptTile kPromptTiles[] = {{32, 64}, {64, 64}, {64, 128}, {128, 128, 0, 2}, {64, 128, 0, 2}};
const char* const kPromptTileNames =
    "32 x 64, 64 x 64 and 64 x 128, 128 x 128 and 64 x 128 with 2 token groups (TOKENSxROWSxSPLITx2), "
    "each with a K split of 1 to 8 (the residual products only)";
bool supported(PromptTile t) {
  return t.k_split <= DecodeKernels::kPromptMaxKSplit && std::ranges::any_of(kPromptTiles, [&](PromptTile s) {
           return s.tokens == t.tokens && s.rows == t.rows && s.token_groups == t.token_groups;
         });
}
}  // namespace

PromptTile parse_prompt_tile(std::string_view s, std::string_view what) {
  if (s == "auto") return {};
  uint32_t v[4] = {0, 0, 1, 0};
  size_t n = 0;
  bool ok = true;
  for (size_t at = 0; ok && at <= s.size(); ++n) {
    const size_t x = std::min(s.find('x', at), s.size());
    const std::string_view d = s.substr(at, x - at);
    ok = n < 4 && !d.empty() &&
         std::from_chars(d.data(), d.data() + d.size(), v[n]).ptr == d.data() + d.size();
    at = x + 1;
  }
  // 128 tokens come only in 2 groups of 4 a thread.
  const PromptTile t{v[0], v[1], v[2], v[3] ? v[3] : (v[0] == 128 ? 2u : 1u)};
  if (!ok || n < 2 || !supported(t) || t.k_split == 0)
    throw Error(std::string(what) + " '" + std::string(s) +
                "': expected auto or TOKENSxROWS[xSPLIT[xGROUPS]]: " + kPromptTileNames);
  return t;
}

void DecodeKernels::force_prompt_tile(PromptTile tile) {
  if (!supported(tile))
    throw Error("prompt tile " + std::to_string(tile.tokens) + " tokens x " + std::to_string(tile.rows) +
                " rows, K split " + std::to_string(tile.k_split) + ", " + std::to_string(tile.token_groups) +
                " token groups: supported are " + kPromptTileNames);
  forced_tile_ = tile;
  forced_tile_.k_split = std::max(tile.k_split, 1u);
}

PromptTile DecodeKernels::prompt_tile_of(const gpu::TensorView& w, uint32_t rows, uint32_t cols, uint32_t T,
                                         PromptProduct product, uint32_t part_tokens) const {
  PromptTile t = forced_tile_.tokens ? forced_tile_ : prompt_tile(rows, cols, T, product, w.format);
  const uint32_t fit = part_tokens / (ceil_div(T, t.tokens) * t.tokens);
  t.k_split = part_tokens ? std::clamp(std::min(t.k_split, fit), 1u, kPromptMaxKSplit) : 1;
  return t;
}

gpu::Dispatch DecodeKernels::matmul(const std::string& entry, const gpu::TensorView& w, PromptTile tile,
                                    uint32_t rows, uint32_t cols, uint32_t T, bool norm, double eps,
                                    std::map<std::string, double> o, std::initializer_list<gpu::Binding> b) {
  const uint32_t cols8 = ceil_div(cols, 8);
  const uint32_t threads = tile.tokens * tile.rows / (32 * tile.token_groups);
  if (threads > ctx_->limits().max_compute_invocations_per_workgroup)
    throw Error("kernel " + entry + ": a tile of " + std::to_string(tile.tokens) + " x " +
                std::to_string(tile.rows) + " needs " + std::to_string(threads) +
                " invocations, over maxComputeInvocationsPerWorkgroup = " +
                std::to_string(ctx_->limits().max_compute_invocations_per_workgroup));
  // Tiles of A and W for 16 columns, the sums of squares of A's rows; the norm weight.
  check_workgroup_memory(
      entry, cols, 64ull * (tile.tokens + tile.rows) + 16ull * tile.tokens + (norm ? 32ull * cols8 : 32));
  weight_constants(entry, w, rows, cols, o);
  o.insert({{"ROWS", rows},
            {"COLS", cols},
            {"COLS8", cols8},
            {"XS_V4", norm ? 2 * cols8 : 2},
            {"EPS", eps},
            {"WG", threads},
            {"KSLICES", tile.k_split},
            {"THREADS_R", tile.rows / 8},
            {"TOKEN_GROUPS", tile.token_groups},
            // Measured on the H100 (docs/RESULTS.md, session 18): the residual products' 64 x 64 tiles
            // faster with their columns written out, every other tile slower.
            {"UNROLL_K", !norm && tile.tokens == 64 && tile.rows == 64}});
  auto& k = ctx_->kernel(gpu::embedded_kernel("llm_matmul", entry, std::move(o)));
  return gpu::Dispatch{
      &k, with_weights(w, b), {ceil_div(rows, tile.rows), ceil_div(T, tile.tokens), tile.k_split}};
}

std::vector<gpu::Dispatch> DecodeKernels::qkv_rope_prompt(
    const gpu::TensorView& w, const gpu::Binding& x, const gpu::Binding& norm, const gpu::Binding& bias,
    const gpu::Binding& rope, const gpu::Binding& state, const gpu::Binding& q_out,
    const gpu::Binding& k_cache, const gpu::Binding& v_cache, const gpu::Binding& parts, uint64_t parts_words,
    const ModelConfig& c, uint32_t ctx_len, uint32_t T) {
  const uint32_t q_rows = c.num_heads * c.head_dim, kv_rows = c.num_kv_heads * c.head_dim;
  const uint32_t rows = q_rows + 2 * kv_rows;
  // A slice's row of sums per token: the rows', then the token's sum of squares.
  const uint32_t stride = pad8(rows + 1);
  const auto part_tokens = uint32_t(std::min<uint64_t>(parts_words / stride, UINT32_MAX));
  const PromptTile tile = prompt_tile_of(w, rows, c.hidden_size, T, PromptProduct::Qkv, part_tokens);
  auto o = qkv_overrides(c, ctx_len);
  if (tile.k_split == 1)
    return {matmul("qkv_rope_prompt", w, tile, rows, c.hidden_size, T, true, c.rms_norm_eps, o,
                   {x, norm, bias, rope, state, q_out, k_cache, v_cache})};
  o.insert({{"OUT_STRIDE", stride}, {"PART_TOKENS", part_tokens / tile.k_split}});
  gpu::Dispatch products = matmul("normed_parts_prompt", w, tile, rows, c.hidden_size, T, true,
                                  c.rms_norm_eps, o, {x, norm, parts});
  o.insert({{"ROWS", rows}, {"COLS", c.hidden_size}, {"EPS", c.rms_norm_eps}, {"KSLICES", tile.k_split}});
  auto& sum = ctx_->kernel(gpu::embedded_kernel("llm_matmul", "qkv_sum_prompt", std::move(o)));
  return {std::move(products), gpu::Dispatch{&sum,
                                             {parts, gpu::Binding::unused(), gpu::Binding::unused(), bias,
                                              rope, state, q_out, k_cache, v_cache},
                                             {ceil_div(rows / 2, kSumWorkgroup), T}}};
}

gpu::Dispatch DecodeKernels::gate_up_silu_prompt(const gpu::TensorView& w, const gpu::Binding& x,
                                                 const gpu::Binding& norm, const gpu::Binding& act,
                                                 uint32_t inter, uint32_t hidden, double eps, uint32_t T) {
  return matmul("gate_up_silu_prompt", w, prompt_tile_of(w, 2 * inter, hidden, T, PromptProduct::GateUp),
                2 * inter, hidden, T, true, eps, {{"OUT_STRIDE", pad8(inter)}}, {x, norm, act});
}

std::vector<gpu::Dispatch> DecodeKernels::residual_prompt(const gpu::TensorView& w, const gpu::Binding& x,
                                                          const gpu::Binding& resid,
                                                          const gpu::Binding& parts, uint32_t part_tokens,
                                                          uint32_t rows, uint32_t cols, uint32_t T) {
  const PromptTile tile = prompt_tile_of(w, rows, cols, T, PromptProduct::Residual, part_tokens);
  if (tile.k_split == 1)
    return {matmul("residual_prompt", w, tile, rows, cols, T, false, 0.0, {{"OUT_STRIDE", pad8(rows)}},
                   {x, resid})};
  // A slice's rows of sums: the buffer's share, at least the chunk's whole tiles (the split is
  // chosen so), whatever T, so that a prompt of another length reuses these pipelines.
  const uint32_t slice_rows = part_tokens / tile.k_split;
  std::map<std::string, double> o{{"OUT_STRIDE", pad8(rows)}, {"PART_TOKENS", slice_rows}};
  gpu::Dispatch products = matmul("residual_parts_prompt", w, tile, rows, cols, T, false, 0.0, o, {x, parts});
  o.insert({{"ROWS", rows}, {"KSLICES", tile.k_split}});
  auto& sum = ctx_->kernel(gpu::embedded_kernel("llm_matmul", "residual_sum_prompt", std::move(o)));
  return {std::move(products), gpu::Dispatch{&sum, {parts, resid}, {ceil_div(rows, kSumWorkgroup), T}}};
}

gpu::Dispatch DecodeKernels::embed(const gpu::TensorView& embedding, const gpu::Binding& tokens,
                                   const gpu::Binding& state, const gpu::Binding& x, uint32_t hidden,
                                   uint32_t prompt_rows) {
  std::map<std::string, double> o{
      {"HIDDEN", hidden}, {"COLS8", ceil_div(hidden, 8)}, {"WG", 64}, {"POS_WORD", prompt_rows ? 1 : 0}};
  weight_constants("embed", embedding, 0, hidden, o);
  auto& k = ctx_->kernel(gpu::embedded_kernel("llm_step", "embed", std::move(o)));
  return gpu::Dispatch{
      &k, {embedding, tokens, state, x}, {ceil_div(ceil_div(hidden, 8), 64), std::max(1u, prompt_rows)}};
}

std::vector<gpu::Dispatch> DecodeKernels::argmax(const gpu::Binding& logits, const gpu::Binding& part_v,
                                                 const gpu::Binding& part_i, const gpu::Binding& tokens,
                                                 const gpu::Binding& state, uint32_t vocab, uint32_t chunk,
                                                 const ArgmaxSequences& seqs) {
  const uint32_t partials = ceil_div(vocab, chunk);
  auto& partial = ctx_->kernel(gpu::embedded_kernel("llm_step", "argmax_partial",
                                                    {{"WG", 256},
                                                     {"VOCAB", vocab},
                                                     {"CHUNK", chunk},
                                                     {"PARTIALS", partials},
                                                     {"SEQ_LOGITS", double(seqs.logits_words)}}));
  auto& final = ctx_->kernel(gpu::embedded_kernel("llm_step", "argmax_final",
                                                  {{"WG", 256},
                                                   {"PARTIALS", partials},
                                                   {"SEQ_TOKENS", double(seqs.tokens_words)},
                                                   {"SEQ_STATE", double(seqs.state_words)},
                                                   {"PICK", seqs.pick_word}}));
  return {gpu::Dispatch{&partial, {logits, part_v, part_i}, {partials, seqs.count}},
          gpu::Dispatch{&final, {part_v, part_i, tokens, state}, {1, seqs.count}}};
}

gpu::Dispatch DecodeKernels::advance(const gpu::Binding& state) {
  auto& k = ctx_->kernel(gpu::embedded_kernel("llm_step", "advance"));
  return gpu::Dispatch{&k, {state}, {1}};
}

}  // namespace wgfuse::llm
