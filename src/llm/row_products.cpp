#include "llm/row_products.h"

#include <algorithm>
#include <bit>
#include <string_view>

#include "gpu/kernel.h"
#include "gpu/weight_format.h"
#include "llm/decode_kernels.h"
#include "util/error.h"

namespace wgfuse::llm {

namespace {
constexpr uint32_t kMaxProductGroups = 2048;  // the products loop over row blocks beyond it
constexpr uint32_t kMaxSums = 32;             // MAX_SUMS: RPT x SPT
constexpr uint32_t kMaxRpt = 8;               // MAX_RPT
constexpr uint32_t kXregSlots = 8;            // XREG_SLOTS
constexpr uint32_t kXregSums = 32;            // XREG_SUMS
// xreg_totals' workgroups (each loads every slot's x once): two per SM of a 132-SM H100 (264 and 396
// alike there, 512 and 768 slower: docs/RESULTS.md "Session 13"); the LM head's 151,936 rows do
// better in twice as many (runs 5 and 10).
constexpr uint32_t kXregGroups = 264;
constexpr uint32_t kXregHeadGroups = 528;

}  // namespace

RowProducts::RowProducts(gpu::Context& ctx, uint32_t slots, double rms_norm_eps)
    : ctx_(ctx), slots_(slots), eps_(rms_norm_eps) {
  if (slots < 1 || slots > kMaxSlots)
    throw Error("row products: " + std::to_string(slots) + " rows at once asked, 1 to " +
                std::to_string(kMaxSlots) + " supported");
  // The narrowest team: whole subgroups, and at least two teams per workgroup (gate/up pairs).
  team_ = 32;
  while (team_ < ctx_.adapter().subgroup_max_size) team_ *= 2;
  if (team_ > kWorkgroup / 2)
    throw Error("row products: subgroups of " + std::to_string(ctx_.adapter().subgroup_max_size) +
                " threads are not supported");
}

gpu::Dispatch RowProducts::product(const char* entry, const gpu::TensorView& w, const gpu::Binding& x,
                                   uint32_t x_stride, const gpu::Binding& norm, const gpu::Binding& records,
                                   std::vector<gpu::Binding> outputs,
                                   std::map<std::string, double> constants) const {
  Shape s = shape(entry, w);
  constants.insert(s.constants.begin(), s.constants.end());
  constants.insert({{gpu::kWeightFormatConstant, double(w.format)},
                    {"SLOTS", slots_},
                    {"ROWS", w.rows},
                    {"COLS", w.cols},
                    {"COLS8", ceil_div(w.cols, 8)},
                    {"X_STRIDE", x_stride},
                    {"EPS", eps_}});
  auto& k = ctx_.kernel(gpu::embedded_kernel("llm_batch", entry, std::move(constants)));
  std::vector<gpu::Binding> b{w, x, norm, records};
  b.insert(b.end(), outputs.begin(), outputs.end());
  return {&k, std::move(b), {std::min(ceil_div(w.rows, s.rows_per_wg), s.max_groups), s.slot_groups}};
}

std::map<std::string, double> RowProducts::out_stride(uint64_t floats) {
  return {{"OUT_STRIDE", double(floats)}};
}

std::map<std::string, double> RowProducts::rope_epilogue(const ModelConfig& c, QkvLayout at) {
  return {{"HEAD_DIM", c.head_dim},          {"HEADS", c.num_heads},
          {"KV_HEADS", c.num_kv_heads},      {"CTX", at.ctx},
          {"Q_STRIDE", double(at.q_stride)}, {"SHARED_CACHE", at.shared_cache}};
}

const gpu::Kernel& RowProducts::rope_rows(const ModelConfig& c, QkvLayout at) const {
  auto constants = rope_epilogue(c, at);
  constants.insert({{"SLOTS", slots_},
                    {"RAW_STRIDE", double(c.num_heads + 2ull * c.num_kv_heads) * c.head_dim},
                    {"HWG", kHeadWorkgroup},
                    {"EPS", eps_}});
  return ctx_.kernel(gpu::embedded_kernel("llm_batch", "rope_rows", std::move(constants)));
}

// The shape of block_totals per matrix (H100 sweeps at 8 and 16 slots, docs/RESULTS.md "Session
// 12"): a team of a row block reads the block's weights with the x of its slots, so rows per team
// (RPT) save x loads, and slot groups (teams of one row block, each for its own slots) put more
// workgroups on the matrix and cut each thread's sums:
// - gate/up and the LM head (the most rows): narrow teams of 4 rows, the slots two per group;
//   up to 2,048 columns, xreg_totals instead, the slots in groups of up to 8 (session 13: the LM
//   head at 8 slots half the time, gate/up −13%; Q/K/V and o, one block per workgroup, slower in it);
// - the others (Q/K/V, o, down): teams of 64 threads and 2 rows, the slots in up to 4 groups.
// gate_up_rows and qkv_rope_rows pair rows 2j and 2j + 1 in a block: 2 or 4 rows a team, so even.
RowProducts::Shape RowProducts::shape(const char* entry, const gpu::TensorView& w) const {
  const uint32_t n = slots_;
  // Slot groups: a power of two (the row teams divide the workgroup too), at most the teams.
  auto groups = [](uint32_t team, uint32_t g) { return std::bit_floor(std::min(g, kWorkgroup / team)); };
  const bool lm_head = w.rows >= 64ull * w.cols;
  if (std::string_view(entry) == "gate_up_rows" || lm_head) {
    if (ceil_div(w.cols, 8) <= kWorkgroup) return xreg_shape(w, lm_head ? kXregHeadGroups : kXregGroups);
    return block_shape(w, team_, 4, groups(team_, std::max(1u, n / 2)));
  }
  const uint32_t team = std::max(team_, 64u);
  return block_shape(w, team, 2, groups(team, std::min(n, 4u)));
}

// block_totals' constants for teams of `team` threads keeping `rpt` rows each, the slots over
// `slot_groups` teams of a row block.
RowProducts::Shape RowProducts::block_shape(const gpu::TensorView& w, uint32_t team, uint32_t rpt,
                                            uint32_t slot_groups) const {
  const uint32_t n = slots_, cols8 = ceil_div(w.cols, 8);
  const uint32_t min_subgroup = std::max(1u, ctx_.adapter().subgroup_min_size);
  const uint32_t spt = ceil_div(n, slot_groups);
  if (spt * rpt > kMaxSums)
    throw Error("row products: " + std::to_string(n) + " rows need " + std::to_string(spt * rpt) +
                " sums per thread on " + w.name + ", above " + std::to_string(kMaxSums));
  const uint32_t rows_per_wg = kWorkgroup / team / slot_groups * rpt;
  // The reduction's workgroup memory at the smallest subgroup.
  const uint32_t red_len = kWorkgroup / min_subgroup * (rpt + 1) * spt;
  return {{{"TEAM", team},
           {"RPT", rpt},
           {"SLOT_GROUPS", slot_groups},
           {"SPT", spt},
           {"ITERS", ceil_div(cols8, team)},
           {"WG", kWorkgroup},
           {"ROWS_PER_WG", rows_per_wg},
           {"RED_LEN", red_len},
           {"TOT_LEN", rows_per_wg * n},
           {"BSLOTS", n}},
          rows_per_wg,
          kMaxProductGroups};
}

// xreg_totals' constants: a workgroup of whole subgroups over the column groups, the slots in
// groups of up to XREG_SLOTS (grid y), blocks of as many rows as XREG_SUMS holds sums of (even: the
// pairs of gate_up_rows and qkv_rope_rows), at most max_groups workgroups per slot group.
RowProducts::Shape RowProducts::xreg_shape(const gpu::TensorView& w, uint32_t max_groups) const {
  const uint32_t cols8 = ceil_div(w.cols, 8);
  const uint32_t min_subgroup = std::max(1u, ctx_.adapter().subgroup_min_size);
  const uint32_t wg = ceil_div(cols8, team_) * team_;
  const uint32_t bfly = std::bit_floor(std::min(kXregSums, min_subgroup));
  const uint32_t groups = ceil_div(slots_, kXregSlots), bslots = ceil_div(slots_, groups);
  const uint32_t rows_per_wg = std::min(kMaxRpt, kXregSums / bslots) & ~1u;
  return {{{"XREG", 1},
           {"BSLOTS", bslots},
           {"BFLY", bfly},
           {"WG", wg},
           {"ROWS_PER_WG", rows_per_wg},
           {"RED_LEN", std::max(wg / min_subgroup * bslots, wg / bfly * kXregSums)},
           {"TOT_LEN", 1}},
          rows_per_wg,
          max_groups,
          groups};
}

}  // namespace wgfuse::llm
