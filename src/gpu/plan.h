// Plan: GPU work resolved once, encoded many times. WebGPU command buffers are submitted once
// only, so replaying a step (an LLM decode step, a simulation's episode) means encoding it
// again; a Plan makes that encoding a walk over resolved steps {pipeline, bind group, grid}:
// no KernelDesc, no hashing, no cache lookup and no allocation per dispatch.
//
//   gpu::Plan plan(ctx, "decode");
//   auto pos = plan.params(DecodeParams{...});             // a record in the plan's uniform buffer
//   plan.dispatch(rmsnorm, {x, weights.view("norm"), pos}, {groups});
//   plan.copy(a, 0, b, 0, bytes);
//   plan.build();                                           // params buffer + bind groups
//   for (token ...) { plan.set_params(pos, DecodeParams{...}); plan.encode(rec); rec.submit(); }
//
// Params records are placed at the device's uniform offset alignment in one Uniform buffer the
// plan owns; each dispatch that binds one gets its own bind group over that range, so updating a
// record is one queue write and encoding stays a plain walk. Steps record in order; a dispatch
// after a copy or end_pass() opens a new compute pass (the Recorder's rule). Each step keeps its
// bindings and an optional StepInfo (name, bytes to move) beside the walked list: step(i)
// describes it, for profiles and for a plan written down (llm/plan_file.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/arena.h"
#include "gpu/buffer.h"
#include "gpu/kernel.h"

namespace wgfuse::gpu {

class Context;
class Recorder;

// Workgroup counts of one dispatch.
struct Grid {
  uint32_t x = 1, y = 1, z = 1;
};

// A params record of a Plan (its index there).
struct ParamsSlot {
  uint32_t index = 0;
};

// One binding of a planned dispatch: a buffer, a byte range of one (a weight arena's tensor), one
// of the plan's params records, or unused (a binding number the kernel does not declare).
class Binding {
 public:
  Binding(const Buffer& b) : buffer_(b), offset_(0), size_(b.size()) {}  // NOLINT: implicit
  Binding(const BufferBinding& b)  // NOLINT: implicit; BufferBinding::unused() stays unused
      : buffer_(b.buffer ? *b.buffer : Buffer()), offset_(b.offset), size_(b.size), unused_(!b.buffer) {}
  Binding(const TensorView& v) : Binding(v.binding()) {}  // NOLINT: implicit
  Binding(ParamsSlot p) : params_(int64_t(p.index)) {}    // NOLINT: implicit
  static Binding unused() { return Binding(); }

  bool is_params() const { return params_ >= 0; }
  bool is_unused() const { return unused_; }
  ParamsSlot params() const { return {uint32_t(params_)}; }
  const Buffer& buffer() const { return buffer_; }  // held: the plan may outlive the caller's handle
  uint64_t offset() const { return offset_; }
  uint64_t size() const { return size_; }

 private:
  Binding() : unused_(true) {}
  Buffer buffer_;
  uint64_t offset_ = 0, size_ = 0;
  int64_t params_ = -1;
  bool unused_ = false;
};

// A dispatch not yet in a plan: what code that chooses kernels and grids (llm::DecodeKernels)
// hands to Plan::dispatch.
struct Dispatch {
  const Kernel* kernel = nullptr;
  std::vector<Binding> bindings;
  Grid grid;
};

// Optional metadata of a step, for profiles and for writing a plan down: what it is, and the bytes
// it must move per call (weights and activations read and written), plus per cached position
// (attention over a KV cache).
struct StepInfo {
  std::string name;  // empty: the kernel's entry point
  uint64_t bytes = 0, bytes_per_position = 0;
};

class Plan {
 public:
  explicit Plan(Context& ctx, std::string label = "plan");
  Plan(Plan&&) noexcept;
  Plan& operator=(Plan&&) noexcept;
  ~Plan();

  // ---- Building (before build()) ----
  // A params record, `record.size()` bytes, copied into the plan's uniform buffer at build().
  ParamsSlot params(std::span<const std::byte> record);
  template <typename T>
  ParamsSlot params(const T& record) {
    return params(std::span<const std::byte>(std::as_bytes(std::span<const T, 1>(&record, 1))));
  }
  // A dispatch of `kernel`, binding i of group 0 = bindings[i].
  void dispatch(const Kernel& kernel, std::initializer_list<Binding> bindings, Grid grid, StepInfo info = {});
  void dispatch(const Kernel& kernel, std::span<const Binding> bindings, Grid grid, StepInfo info = {});
  void dispatch(const Dispatch& d, StepInfo info = {});
  // A dispatch with a bind group made elsewhere (Context::bind); step() lists no bindings for it.
  void dispatch(const Kernel& kernel, const BindGroup& group, Grid grid);
  void copy(const Buffer& src, uint64_t src_offset, const Buffer& dst, uint64_t dst_offset, uint64_t bytes);
  // The next dispatch opens a new compute pass.
  void end_pass();
  // Every step of `other` (built or not, without params records) appended in order.
  void append(const Plan& other);
  // Creates the params buffer and every bind group (each binding checked by Context::bind, the
  // error prefixed with the plan's label and the step). No steps can be added after it.
  void build();

  // ---- Running (after build()) ----
  // Records every step into `rec` (or steps [first, first + count)). Builds first if needed.
  void encode(Recorder& rec);
  void encode(Recorder& rec, size_t first, size_t count);
  // Rewrites a params record: one queue write, seen by the work submitted after it.
  void set_params(ParamsSlot slot, std::span<const std::byte> record);
  template <typename T>
  void set_params(ParamsSlot slot, const T& record) {
    set_params(slot, std::span<const std::byte>(std::as_bytes(std::span<const T, 1>(&record, 1))));
  }

  // ---- Describing (profiles, a plan written down) ----
  enum class StepKind : uint8_t { Dispatch, Copy, EndPass };
  struct StepView {
    StepKind kind;
    const Kernel* kernel;               // Dispatch
    std::span<const Binding> bindings;  // Dispatch (empty for a group made elsewhere)
    Grid grid;
    const StepInfo& info;
    const Buffer *src, *dst;  // Copy
    uint64_t src_offset, dst_offset, bytes;
  };
  StepView step(size_t i) const;
  // A step's name: its StepInfo's, else the kernel's entry point (a copy: "copy").
  std::string_view step_name(size_t i) const;

  bool built() const { return built_; }
  size_t steps() const { return steps_.size(); }
  size_t dispatches() const { return dispatches_; }
  size_t copies() const { return copies_; }
  // Compute passes one encode() opens (when the Recorder has no pass open before it).
  size_t passes() const { return passes_; }
  const std::string& label() const { return label_; }
  // The uniform buffer of params records (empty without any).
  const Buffer& params_buffer() const { return params_buffer_; }

 private:
  // What encode() walks; the bindings and the metadata stay beside it, in steps' order.
  struct Step {
    StepKind kind = StepKind::Dispatch;
    const Kernel* kernel = nullptr;
    BindGroup group;
    Grid grid;
    Buffer src, dst;  // Copy
    uint64_t src_offset = 0, dst_offset = 0, bytes = 0;
  };
  struct Record {
    uint64_t offset = 0, size = 0;
  };
  void require_building(const char* what) const;

  Context* ctx_;
  std::string label_;
  std::vector<Step> steps_;
  std::vector<std::vector<Binding>> bindings_;  // per step; build() makes their groups
  std::vector<StepInfo> info_;                  // per step
  std::vector<Record> records_;
  std::vector<std::byte> params_host_;  // the records' bytes until build()
  Buffer params_buffer_;
  bool built_ = false;
  size_t dispatches_ = 0, copies_ = 0, passes_ = 0;
};

}  // namespace wgfuse::gpu
