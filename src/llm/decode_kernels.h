// DecodeKernels: the kernels of a Qwen2 decode step and of prompt prefill, each chosen (entry
// point, override constants, grid) as a gpu::Dispatch over given bindings and weight views for a
// gpu::Plan, and the row orders of the fused matrices they read (interleaved rows). The weights' storage is
// gpu/weight_format.h's (each view carries its format; the kernels decode it in kernels/llm_weights.wgsl).
// One definition for the Model and the kernel tests.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpu/arena.h"
#include "gpu/context.h"
#include "gpu/plan.h"
#include "llm/architecture.h"
#include "llm/config.h"

namespace wgfuse::llm {

inline uint32_t ceil_div(uint64_t a, uint64_t b) {
  return uint32_t((a + b - 1) / b);
}
// Weight rows and the vectors the matrix-vector kernels read are padded to 8 elements. In 64 bits:
// a buffer's words may pass 2^32 before the device limit refuses it.
inline uint64_t pad8(uint64_t n) {
  return (n + 7) / 8 * 8;
}
// A vector of floats padded with zeros to a multiple of 8 (the kernels read 8 at a time).
gpu::Buffer upload_padded(gpu::Context& ctx, std::string_view label, std::span<const float> values);

// How decode attention is split (kernels/llm_attention.wgsl attend_chunk): `chunk` cache
// positions per workgroup, and `heads_per_wg` query heads of one kv group per workgroup (a divisor
// of heads / kv_heads), which share their K/V reads.
struct AttentionSplit {
  uint32_t chunk = 64;
  uint32_t heads_per_wg = 1;
};
// The split of long caches (ModelOptions::attn_long_from): chunks twice as long.
inline AttentionSplit long_attention(AttentionSplit s) {
  return {.chunk = 2 * s.chunk, .heads_per_wg = s.heads_per_wg};
}

// A tile of the prefill products (kernels/llm_matmul.wgsl): tokens x rows of the output per
// workgroup of tokens * rows / (32 token_groups) threads, each thread 4 tokens (8 with 2 token
// groups) x 8 rows. Supported: 32 x 64, 64 x 64 and 64 x 128, and with 2 token groups 128 x 128
// and 64 x 128. k_split: workgroups along K of the residual products (o, down) and Q/K/V, 1 ..
// DecodeKernels::kPromptMaxKSplit, whose sums a second dispatch adds (a forced tile's 0 is 1);
// Q/K/V's slices carry their tokens' sums of squares, for the RMSNorm. Gate/up never splits (its
// sums would be 11x Q/K/V's).
struct PromptTile {
  uint32_t tokens = 0, rows = 0, k_split = 0;
  uint32_t token_groups = 1;
};
// Which prefill product a tile is for: each has its own rule (DecodeKernels::prompt_tile).
enum class PromptProduct { Qkv, GateUp, Residual };
// "auto" (tokens 0: the size rule) or "TOKENSxROWS[xSPLIT[xGROUPS]]", a supported tile (SPLIT 1 and
// GROUPS 2 for 128 tokens, else 1, when left out); `what` (an option's name) goes into the error.
PromptTile parse_prompt_tile(std::string_view s, std::string_view what);

// Which kernel attends a prompt's queries (kernels/llm_attention.wgsl): attend_prompt (blocks of
// 16 queries x 16 keys) or attend_prompt_tiled (tiles of up to 64 queries x 32 keys, 4 x 4 a thread,
// a tile's keys shared out among several workgroups at short prompts).
// Auto: Tiled for chunks of at least DecodeKernels::kPromptTiledMinTokens queries, else Blocks.
enum class PromptAttention { Auto, Blocks, Tiled };
// attend_prompt_tiled's workgroups: `queries` a tile (16, 32 or 64), `splits` workgroups sharing
// out a tile's keys (1: none; else attend_prompt_combine adds up their partials).
struct PromptAttentionTile {
  uint32_t queries = 64, splits = 1;
};
// "auto", "blocks" or "tiled"; `what` (an option's name) goes into the error.
PromptAttention parse_prompt_attention(std::string_view s, std::string_view what);

// How a decode matrix-vector kernel spreads a matrix over threads (kernels/llm_matvec.wgsl): a
// team of `team` threads per row (a power of two, at least the adapter's largest subgroup), each
// team computing `rows_per_team` rows at once (1..4), `workgroup` threads (a multiple of team).
// Kernels with RMSNorm folded in read x * norm_w directly per lane, or with `staged_x` from
// workgroup memory staged behind a barrier (the others ignore it).
struct MatvecTuning {
  uint32_t team = 32, rows_per_team = 1, workgroup = 128;
  bool staged_x = false;
  uint32_t rows_per_workgroup() const { return workgroup / team * rows_per_team; }
  std::string name() const;  // e.g. "team32 rows2 wg256", "team64 rows2 wg256 staged"
  bool operator==(const MatvecTuning&) const = default;
};

// The kernels of the decode step, each a gpu::Dispatch over given bindings (a buffer, or a range
// of one): one definition for the Model and the kernel tests. Weight matrices are WeightArena views (`w`,
// `w_o`, `embedding`: rows x cols as the call says, in any WeightFormat); vectors read by the matrix-vector
// kernels (x, norm weights) are padded to a multiple of 8 floats.
// Sequences of the batched decoder whose tokens one argmax picks at once (grid y): each's logits,
// tokens and state record lie the given words after the previous one's; a sequence's token is
// picked only where its state word pick_word is not 0.
struct ArgmaxSequences {
  uint32_t count = 1;
  uint64_t logits_words = 0, tokens_words = 0, state_words = 0;
  uint32_t pick_word = 0xffffffffu;  // none: always
};

class DecodeKernels {
 public:
  explicit DecodeKernels(gpu::Context& ctx);
  // q_out = RoPE(W_qkv rmsnorm(x) + b) for the q rows; k, v rows written at pos into the caches.
  gpu::Dispatch qkv_rope(const gpu::TensorView& w, const gpu::Binding& x, const gpu::Binding& norm,
                         const gpu::Binding& bias, const gpu::Binding& rope, const gpu::Binding& state,
                         const gpu::Binding& q_out, const gpu::Binding& k_cache, const gpu::Binding& v_cache,
                         const ModelConfig& cfg, uint32_t ctx_len);
  // Architectures with per-head q/k norms (Qwen3): qkv_rope and qkv_rope_prompt store q and k raw
  // (bias added, not rotated); this step then normalises each head of q and of the k cache row at
  // pos by `norm` (q_norm then k_norm, [2 * head_dim]) and applies RoPE, a workgroup per head.
  // T > 0: the T rows of a prompt chunk (q [T][heads * hd], positions state word 1 + t).
  gpu::Dispatch qk_norm_rope(const gpu::Binding& norm, const gpu::Binding& rope, const gpu::Binding& state,
                             const gpu::Binding& q, const gpu::Binding& k_cache, const ModelConfig& cfg,
                             uint32_t ctx_len, uint32_t T = 0);
  // act = silu(W_gate xn) * (W_up xn), xn = rmsnorm(x); w packed by gate_up_source_row.
  gpu::Dispatch gate_up_silu(const gpu::TensorView& w, const gpu::Binding& x, const gpu::Binding& norm,
                             const gpu::Binding& act, uint32_t inter, uint32_t hidden, double eps);
  gpu::Dispatch matvec_norm(const gpu::TensorView& w, const gpu::Binding& x, const gpu::Binding& norm,
                            const gpu::Binding& y, uint32_t rows, uint32_t cols,
                            double eps);  // y = W rmsnorm(x)
  gpu::Dispatch matvec_residual(const gpu::TensorView& w, const gpu::Binding& x, const gpu::Binding& resid,
                                uint32_t rows,
                                uint32_t cols);  // resid += W x
  gpu::Dispatch matvec_residual_to(const gpu::TensorView& w, const gpu::Binding& x, const gpu::Binding& base,
                                   const gpu::Binding& out, uint32_t rows,
                                   uint32_t cols);  // out = base + W x

  // The fused short-context layer (kernels/llm_matvec.wgsl attend_o): attention of q (at pos)
  // over the cache, one workgroup per (block of o_proj rows, kv head), each multiplying its
  // GQA group's attention output by that group's columns of W_o into o_parts[kv head]
  // (attend_o_parts_words floats: kv_heads rows of hidden padded to 8). No residual is added.
  gpu::Dispatch attend_o(const gpu::TensorView& w_o, const gpu::Binding& q, const gpu::Binding& k_cache,
                         const gpu::Binding& v_cache, const gpu::Binding& state, const gpu::Binding& o_parts,
                         const ModelConfig& cfg, uint32_t ctx_len);
  static uint64_t attend_o_parts_words(const ModelConfig& cfg);
  // x_next = x + the sum of attend_o's partials; act = silu(W_gate xn) * (W_up xn), xn =
  // rmsnorm(x_next). x_next must not be x: the workgroups read x while one writes x_next.
  gpu::Dispatch gate_up_silu_sum(const gpu::TensorView& w, const gpu::Binding& x, const gpu::Binding& o_parts,
                                 const gpu::Binding& norm, const gpu::Binding& act,
                                 const gpu::Binding& x_next, const ModelConfig& cfg);
  // Decode attention of q (at pos) over the cache, split along the cache, in one dispatch:
  // workgroups of (head group, chunk) write their chunk's partials (`partials`,
  // attend_partials_words floats) and the head group's last one to finish combines them into out;
  // `arrivals` (attend_arrivals_words words, zeros) counts them and is zeros again afterwards.
  gpu::Dispatch attend(const gpu::Binding& q, const gpu::Binding& k_cache, const gpu::Binding& v_cache,
                       const gpu::Binding& state, const gpu::Binding& partials, const gpu::Binding& arrivals,
                       const gpu::Binding& out, const ModelConfig& cfg, uint32_t ctx_len,
                       AttentionSplit split = {});
  static uint64_t attend_partials_words(const ModelConfig& cfg, uint32_t ctx_len, AttentionSplit split);
  static uint64_t attend_arrivals_words(const ModelConfig& cfg, AttentionSplit split);
  // The same in one dispatch, a workgroup per head over positions 0..pos, for pos < max_positions
  // (its scores stay in workgroup memory; the caller switches to attend() from there on: the
  // kernel reads at most max_positions positions).
  gpu::Dispatch attend_short(const gpu::Binding& q, const gpu::Binding& k_cache, const gpu::Binding& v_cache,
                             const gpu::Binding& state, const gpu::Binding& out, const ModelConfig& cfg,
                             uint32_t ctx_len, uint32_t max_positions);
  // Chunks of the cache capacity; throws Error when the split does not fit the model.
  static uint32_t attend_chunks(const ModelConfig& cfg, uint32_t ctx_len, AttentionSplit split);
  // x = embedding[tokens[pos]]; with prompt_rows = T > 0, rows t < T of x (rows padded to 8)
  // = embedding[tokens[state word 1 + t]].
  gpu::Dispatch embed(const gpu::TensorView& embedding, const gpu::Binding& tokens, const gpu::Binding& state,
                      const gpu::Binding& x, uint32_t hidden, uint32_t prompt_rows = 0);
  // Two steps: partial maxima over chunks of `chunk` logits, then the final one that writes
  // tokens[pos + 1] and advances pos. part_v, part_i hold ceil(vocab / chunk) entries.
  // With `seqs` (ArgmaxSequences, the batched decoder): part_v, part_i hold count x
  // ceil(vocab / chunk) entries.
  std::vector<gpu::Dispatch> argmax(const gpu::Binding& logits, const gpu::Binding& part_v,
                                    const gpu::Binding& part_i, const gpu::Binding& tokens,
                                    const gpu::Binding& state, uint32_t vocab, uint32_t chunk,
                                    const ArgmaxSequences& seqs = {});
  gpu::Dispatch advance(const gpu::Binding& state);

  // Prefill of a prompt chunk of T tokens at positions state word 1 + t (state word 2 = T): the
  // same operations over row-major activations [T][width padded to 8], as tiled matrix-matrix
  // products. The products compute whole tiles of tokens: activation buffers (x, q_out, act,
  // the attention output) hold ceil(T / kPromptTokenTile) * kPromptTokenTile rows; rows past T
  // are computed from stale rows and read by nobody; the caches are written for t < T only.
  // q_out: [T][heads * hd], unpadded. One dispatch, or with a K split (the rule, or a forced tile's)
  // the slices' sums into `parts` (parts_words floats) and a second dispatch that adds them in order
  // and finishes.
  std::vector<gpu::Dispatch> qkv_rope_prompt(const gpu::TensorView& w, const gpu::Binding& x,
                                             const gpu::Binding& norm, const gpu::Binding& bias,
                                             const gpu::Binding& rope, const gpu::Binding& state,
                                             const gpu::Binding& q_out, const gpu::Binding& k_cache,
                                             const gpu::Binding& v_cache, const gpu::Binding& parts,
                                             uint64_t parts_words, const ModelConfig& cfg, uint32_t ctx_len,
                                             uint32_t T);
  gpu::Dispatch gate_up_silu_prompt(const gpu::TensorView& w, const gpu::Binding& x, const gpu::Binding& norm,
                                    const gpu::Binding& act, uint32_t inter, uint32_t hidden, double eps,
                                    uint32_t T);
  // resid += W x over T tokens: one dispatch, or with a K split the slices' sums into `parts`
  // (part_tokens rows of pad8(rows) floats: as many slices as whole tiles of tokens fit there) and
  // a second dispatch that adds them to resid in order.
  std::vector<gpu::Dispatch> residual_prompt(const gpu::TensorView& w, const gpu::Binding& x,
                                             const gpu::Binding& resid, const gpu::Binding& parts,
                                             uint32_t part_tokens, uint32_t rows, uint32_t cols, uint32_t T);
  // Causal attention of a chunk's T queries (q rows) over the cache into out: one dispatch, or
  // with the tiled kernel's keys split (`splits`; 0: the rule below, fewer where the partials do
  // not fit parts_words floats of `parts`) a second that adds the partials up.
  std::vector<gpu::Dispatch> attend_prompt(const gpu::Binding& q, const gpu::Binding& k_cache,
                                           const gpu::Binding& v_cache, const gpu::Binding& state,
                                           const gpu::Binding& out, const gpu::Binding& parts,
                                           uint64_t parts_words, const ModelConfig& cfg, uint32_t ctx_len,
                                           uint32_t T, PromptAttention kind = PromptAttention::Auto,
                                           uint32_t tiled_queries = 0,  // Tiled: 16, 32 or 64; 0 = the rule
                                           uint32_t splits = 0);
  // attend_prompt_tiled's queries per workgroup: the largest of 64, 32, 16 whose tiles fit the
  // device's workgroup memory; 0 if none fits.
  uint32_t prompt_attention_queries(uint32_t head_dim) const;
  bool prompt_attention_fits(uint32_t queries, uint32_t head_dim) const;
  // The rule's split of a tile's keys for `heads` heads over T queries in tiles of `queries`: 2
  // where the tiles alone make fewer than kPromptAttentionSplitBelow workgroups, else none
  // (measured on the H200, docs/RESULTS.md session 31: 2 ways faster than 4 and 8 at 512 and
  // 1,024 tokens of Qwen2.5-0.5B, and than none up to 2,048; at 4,000 level).
  static uint32_t prompt_attention_splits(uint32_t heads, uint32_t T, uint32_t queries);
  // The floats of the partials of T queries split `splits` ways.
  static uint64_t prompt_attention_parts_words(const ModelConfig& cfg, uint32_t T, uint32_t queries,
                                               uint32_t splits);
  static constexpr uint32_t kPromptAttentionSplitBelow = 512;
  static constexpr uint32_t kPromptAttentionMaxSplits = 8;
  // attend_prompt_tiled's lanes that take a row's max through subgroup shuffles: min(8, the
  // adapter's smallest subgroup), a power of two.
  uint32_t prompt_row_lanes() const;

  static constexpr uint32_t kArgmaxChunk = 2048;
  static constexpr uint32_t kPromptTokenTile = 128;  // the most tokens of a PromptTile
  // The tile of a prompt product of `rows` outputs per token over T tokens, `cols` long rows, of
  // weights stored as `format` (the rule measured on the H100, in decode_kernels.cpp): a residual
  // product 64 x 64 split along K into kPromptMaxKSplit slices, or fewer so that each has at least
  // kPromptMinSliceSteps steps of 16 columns (residual_prompt: fewer still where its buffer of sums
  // is full); a normed one 128 x 128 with 2 token groups where that makes
  // kPromptLargeTileWorkgroups workgroups (q8_0: kPromptLargeTileWorkgroupsQ8_0), else the first
  // of 64 x 128 and 64 x 64 that still makes kPromptMinWorkgroups (work for every core of a large
  // GPU), else 32 x 64; Q/K/V instead 64 x 64 split along K into kPromptQkvKSplit slices where
  // kPromptMinSliceSteps allow two or more (qkv_rope_prompt: fewer where its buffer is full).
  static PromptTile prompt_tile(uint32_t rows, uint32_t cols, uint32_t T, PromptProduct product,
                                gpu::WeightFormat format = gpu::WeightFormat::F16);
  static constexpr uint32_t kPromptMinWorkgroups = 256;
  static constexpr uint32_t kPromptLargeTileWorkgroups = 512;
  static constexpr uint32_t kPromptLargeTileWorkgroupsQ8_0 = 1200;
  static constexpr uint32_t kPromptMaxKSplit = 8;
  static constexpr uint32_t kPromptMinSliceSteps = 8;
  static constexpr uint32_t kPromptQkvKSplit = 4;
  // PromptAttention::Auto takes the tiled kernel from this chunk length on. With its keys split
  // the H200 measured it faster than blocks at 200 to 2,048 tokens (0.5B; 1.5B at 512) and slower
  // at 100 (docs/RESULTS.md, session 31; unsplit, blocks had been level at 512, session 15).
  static constexpr uint32_t kPromptTiledMinTokens = 192;
  // Every later prompt product uses `tile` instead of prompt_tile() (tests: each tile shape), the
  // residual ones and Q/K/V split K at most tile.k_split ways (0: 1; fewer where the slices' sums
  // would not fit their buffer). Throws Error for an unsupported tile.
  void force_prompt_tile(PromptTile tile);

  // The tuning the matrix-vector kernels use for a matrix of rows x cols: the forced one if set,
  // else the rule (decode_kernels.cpp) for this adapter and the weights' format.
  MatvecTuning matvec_tuning(uint32_t rows, uint32_t cols, gpu::WeightFormat format) const;
  // Forces one tuning on every later matrix-vector step (the kernel benchmark and the tests try
  // them all); nullopt restores the rule. Checked when a step is made: Error if the adapter
  // cannot run it.
  void force_matvec_tuning(std::optional<MatvecTuning> t) { forced_ = t; }
  // attend_o's tuning (the forced one if set): a whole GQA group's attention is recomputed by
  // every row block, so its blocks are larger than the rule's (see decode_kernels.cpp).
  MatvecTuning attend_o_tuning(const ModelConfig& cfg) const;

 private:
  // A matrix-vector step; `pairs`: the epilogue reads rows 2i, 2i + 1 together (RoPE, gate/up).
  // `w` binds first (binding 0), then `b`.
  gpu::Dispatch matvec(const std::string& entry, const gpu::TensorView& w, uint32_t rows, uint32_t cols,
                       bool norm, double eps, bool pairs, std::map<std::string, double> extra,
                       std::initializer_list<gpu::Binding> b);
  // matvec under tuning t; `extra_wg_bytes`: the entry's own workgroup memory.
  gpu::Dispatch matvec_tuned(const MatvecTuning& t, const std::string& entry, const gpu::TensorView& w,
                             uint32_t rows, uint32_t cols, bool norm, double eps, bool pairs,
                             uint64_t extra_wg_bytes, std::map<std::string, double> extra,
                             std::initializer_list<gpu::Binding> b);
  void check_tuning(const std::string& entry, const MatvecTuning& t, bool pairs) const;
  // The tile of a prompt product: the forced one or the rule's, split at most as many ways as
  // part_tokens rows hold sums of (0: gate/up, never split).
  PromptTile prompt_tile_of(const gpu::TensorView& w, uint32_t rows, uint32_t cols, uint32_t T,
                            PromptProduct product, uint32_t part_tokens = 0) const;
  gpu::Dispatch matmul(const std::string& entry, const gpu::TensorView& w, PromptTile tile, uint32_t rows,
                       uint32_t cols, uint32_t T, bool norm, double eps, std::map<std::string, double> extra,
                       std::initializer_list<gpu::Binding> b);
  // The pipeline constants of the weights `w` (WEIGHT_FORMAT); throws Error when w is not a
  // matrix of `rows` (0: any) x `cols`.
  static void weight_constants(const std::string& entry, const gpu::TensorView& w, uint32_t rows,
                               uint32_t cols, std::map<std::string, double>& o);
  // short_max > 0: attend_short's kernel for that many positions (its CHUNK).
  const gpu::Kernel& attention(const std::string& entry, const ModelConfig& cfg, uint32_t ctx_len,
                               AttentionSplit split = {}, uint32_t short_max = 0,
                               PromptAttentionTile prompt = {});
  void check_workgroup_memory(const std::string& entry, uint32_t cols, uint64_t bytes) const;
  gpu::Context* ctx_;
  PromptTile forced_tile_{};  // tokens == 0: prompt_tile() decides
  uint32_t min_team_;         // the adapter's largest subgroup, rounded up to a power of two
  std::optional<MatvecTuning> forced_;
};

}  // namespace wgfuse::llm
