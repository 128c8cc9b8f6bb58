// RowProducts: the matrix products of kernels/llm_batch.wgsl over a few rows of activations at
// once — a batch's sequences (BatchDecoder) or a short prompt chunk's tokens (Model's short
// prefill passes). Each weight row is read once for all rows: a team of threads per weight row
// keeps a dot product per activation row ("slot"), and a slot record (position, active) says which
// rows are live. The shape of the teams per matrix is one rule (shape()), measured on the H100.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gpu/arena.h"
#include "gpu/context.h"
#include "gpu/plan.h"
#include "llm/config.h"

namespace wgfuse::llm {

class RowProducts {
 public:
  static constexpr uint32_t kMaxSlots = 16;       // MAX_SPT of kernels/llm_batch.wgsl
  static constexpr uint32_t kSlotWords = 64;      // SLOT_WORDS: a record is 256 bytes
  static constexpr uint32_t kSlotActive = 8;      // SLOT_ACTIVE
  static constexpr uint32_t kWorkgroup = 256;     // WG of the products
  static constexpr uint32_t kHeadWorkgroup = 64;  // HWG: threads of rope_rows
  // Throws Error for slots outside 1..kMaxSlots or subgroups wider than the products support.
  RowProducts(gpu::Context& ctx, uint32_t slots, double rms_norm_eps);
  uint32_t slots() const { return slots_; }

  // A product kernel of llm_batch.wgsl (qkv_rows, qkv_rope_rows, residual_rows, gate_up_rows,
  // logits_rows): bindings w, x (rows of x_stride floats), norm, the slot records, then `outputs`;
  // `constants` adds the entry's own (OUT_STRIDE, the RoPE epilogue's).
  gpu::Dispatch product(const char* entry, const gpu::TensorView& w, const gpu::Binding& x, uint32_t x_stride,
                        const gpu::Binding& norm, const gpu::Binding& records,
                        std::vector<gpu::Binding> outputs, std::map<std::string, double> constants) const;
  // A product's OUT_STRIDE: floats per slot row of its output.
  static std::map<std::string, double> out_stride(uint64_t floats);

  // Where the Q/K/V epilogues write: q into rows of q_stride floats per slot; k and v into slot
  // b's cache of ctx positions, or every slot's into cache 0 (shared_cache: a prompt's tokens as
  // slots, one sequence).
  struct QkvLayout {
    uint32_t ctx;
    uint64_t q_stride;
    bool shared_cache;
  };
  // qkv_rope_rows' own constants (RoPE in the product's epilogue: models without q/k norms).
  static std::map<std::string, double> rope_epilogue(const ModelConfig& c, QkvLayout at);
  // rope_rows (models with q/k norms): a workgroup per (head, slot) over the qkv_rows output, rows
  // of q_rows + 2 kv_rows floats.
  const gpu::Kernel& rope_rows(const ModelConfig& c, QkvLayout at) const;

 private:
  // A product kernel's shape constants, rows per workgroup, most workgroups per slot group and the
  // slot groups (grid y).
  struct Shape {
    std::map<std::string, double> constants;
    uint32_t rows_per_wg, max_groups, slot_groups = 1;
  };
  Shape shape(const char* entry, const gpu::TensorView& w) const;
  Shape block_shape(const gpu::TensorView& w, uint32_t team, uint32_t rpt, uint32_t slot_groups) const;
  Shape xreg_shape(const gpu::TensorView& w, uint32_t max_groups) const;

  gpu::Context& ctx_;
  uint32_t slots_, team_;
  double eps_;
};

}  // namespace wgfuse::llm
