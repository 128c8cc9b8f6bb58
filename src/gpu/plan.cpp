#include "gpu/plan.h"

#include <algorithm>
#include <cstring>

#include "gpu/context.h"
#include "gpu/recorder.h"
#include "util/error.h"

namespace wgfuse::gpu {

Plan::Plan(Context& ctx, std::string label) : ctx_(&ctx), label_(std::move(label)) {}
Plan::Plan(Plan&&) noexcept = default;
Plan& Plan::operator=(Plan&&) noexcept = default;
Plan::~Plan() = default;

void Plan::require_building(const char* what) const {
  if (built_) throw Error("plan '" + label_ + "': " + what + " after build()");
}

ParamsSlot Plan::params(std::span<const std::byte> record) {
  require_building("a params record added");
  if (record.empty() || record.size() % 4)
    throw Error("plan '" + label_ + "': a params record of " + std::to_string(record.size()) +
                " bytes (must be a positive multiple of 4)");
  const auto& lim = ctx_->limits();
  if (record.size() > lim.max_uniform_buffer_binding_size)
    throw Error("plan '" + label_ + "': a params record of " + std::to_string(record.size()) +
                " bytes exceeds the device limit maxUniformBufferBindingSize = " +
                std::to_string(lim.max_uniform_buffer_binding_size));
  const uint64_t align = lim.min_uniform_buffer_offset_alignment;
  const uint64_t offset = (params_host_.size() + align - 1) / align * align;
  params_host_.resize(offset + record.size());
  std::memcpy(params_host_.data() + offset, record.data(), record.size());
  records_.push_back({offset, record.size()});
  return {uint32_t(records_.size() - 1)};
}

void Plan::dispatch(const Kernel& kernel, std::initializer_list<Binding> bindings, Grid grid, StepInfo info) {
  dispatch(kernel, std::span<const Binding>(bindings.begin(), bindings.size()), grid, std::move(info));
}

void Plan::dispatch(const Dispatch& d, StepInfo info) {
  if (!d.kernel) throw Error("plan '" + label_ + "': a dispatch without a kernel");
  dispatch(*d.kernel, d.bindings, d.grid, std::move(info));
}

void Plan::dispatch(const Kernel& kernel, std::span<const Binding> bindings, Grid grid, StepInfo info) {
  require_building("a dispatch added");
  for (auto& b : bindings)
    if (b.is_params() && b.params().index >= records_.size())
      throw Error("plan '" + label_ + "': params slot " + std::to_string(b.params().index) +
                  " is not one of this plan's " + std::to_string(records_.size()) + " records");
  steps_.push_back({.kind = StepKind::Dispatch, .kernel = &kernel, .grid = grid});
  bindings_.emplace_back(bindings.begin(), bindings.end());
  info_.push_back(std::move(info));
}

void Plan::dispatch(const Kernel& kernel, const BindGroup& group, Grid grid) {
  require_building("a dispatch added");
  steps_.push_back({.kind = StepKind::Dispatch, .kernel = &kernel, .group = group, .grid = grid});
  bindings_.emplace_back();
  info_.emplace_back();
}

void Plan::copy(const Buffer& src, uint64_t src_offset, const Buffer& dst, uint64_t dst_offset,
                uint64_t bytes) {
  require_building("a copy added");
  if (src_offset % 4 || dst_offset % 4 || bytes % 4 || src_offset + bytes > src.size() ||
      dst_offset + bytes > dst.size())
    throw Error("plan '" + label_ + "': a copy of " + std::to_string(bytes) + " bytes from offset " +
                std::to_string(src_offset) + " of a buffer of " + std::to_string(src.size()) + " to offset " +
                std::to_string(dst_offset) + " of a buffer of " + std::to_string(dst.size()) +
                " (offsets and size must be multiples of 4, ranges inside the buffers)");
  steps_.push_back({.kind = StepKind::Copy,
                    .src = src,
                    .dst = dst,
                    .src_offset = src_offset,
                    .dst_offset = dst_offset,
                    .bytes = bytes});
  bindings_.emplace_back();
  info_.emplace_back();
}

void Plan::end_pass() {
  require_building("end_pass()");
  steps_.push_back({.kind = StepKind::EndPass});
  bindings_.emplace_back();
  info_.emplace_back();
}

void Plan::append(const Plan& other) {
  require_building("a plan appended");
  if (!other.records_.empty())
    throw Error("plan '" + label_ + "': cannot append plan '" + other.label_ + "', which has params records");
  steps_.insert(steps_.end(), other.steps_.begin(), other.steps_.end());
  bindings_.insert(bindings_.end(), other.bindings_.begin(), other.bindings_.end());
  info_.insert(info_.end(), other.info_.begin(), other.info_.end());
}

Plan::StepView Plan::step(size_t i) const {
  if (i >= steps_.size())
    throw Error("plan '" + label_ + "': step " + std::to_string(i) + " of " + std::to_string(steps_.size()));
  const Step& s = steps_[i];
  return {s.kind, s.kernel, bindings_[i], s.grid,       info_[i],
          &s.src, &s.dst,   s.src_offset, s.dst_offset, s.bytes};
}

std::string_view Plan::step_name(size_t i) const {
  const StepView s = step(i);
  if (!s.info.name.empty()) return s.info.name;
  if (s.kind == StepKind::Dispatch) return s.kernel->key().entry;
  return s.kind == StepKind::Copy ? "copy" : "end_pass";
}

void Plan::build() {
  if (built_) return;
  if (!params_host_.empty()) {
    params_buffer_ =
        ctx_->buffer(params_host_.size(), BufferUsage::Uniform | BufferUsage::CopyDst, label_ + ".params");
    params_host_.resize(params_buffer_.size());  // whole words
    ctx_->write(params_buffer_, 0, params_host_);
  }
  std::vector<BufferBinding> resolved;
  for (size_t i = 0; i < steps_.size(); ++i) {
    Step& s = steps_[i];
    if (s.kind != StepKind::Dispatch || s.group) continue;  // a group made elsewhere, or appended built
    resolved.clear();
    for (auto& b : bindings_[i]) {
      if (b.is_params()) {
        const Record& r = records_[b.params().index];
        resolved.emplace_back(params_buffer_, r.offset, r.size);
      } else if (b.is_unused()) {
        resolved.push_back(BufferBinding::unused());
      } else {
        resolved.emplace_back(b.buffer(), b.offset(), b.size());
      }
    }
    try {
      s.group = ctx_->bind(*s.kernel, resolved);
    } catch (const Error& e) {
      throw Error("plan '" + label_ + "', step " + std::to_string(i) + " (" + std::string(step_name(i)) +
                  "): " + e.what());
    }
  }
  params_host_.clear();
  params_host_.shrink_to_fit();
  bool open = false;
  for (auto& s : steps_) {
    if (s.kind == StepKind::Dispatch) {
      dispatches_ += 1;
      passes_ += open ? 0 : 1;
      open = true;
    } else {
      copies_ += s.kind == StepKind::Copy;
      open = false;
    }
  }
  built_ = true;
}

void Plan::encode(Recorder& rec) {
  encode(rec, 0, steps_.size());
}

void Plan::encode(Recorder& rec, size_t first, size_t count) {
  if (!built_) build();
  if (first > steps_.size() || count > steps_.size() - first)
    throw Error("plan '" + label_ + "': steps [" + std::to_string(first) + ", " +
                std::to_string(first + count) + ") are outside its " + std::to_string(steps_.size()) +
                " steps");
  for (size_t i = first; i < first + count; ++i) {
    const Step& s = steps_[i];
    switch (s.kind) {
      case StepKind::Dispatch:
        rec.dispatch(*s.kernel, s.group, s.grid.x, s.grid.y, s.grid.z);
        break;
      case StepKind::Copy:
        rec.copy(s.src, s.src_offset, s.dst, s.dst_offset, s.bytes);
        break;
      case StepKind::EndPass:
        rec.end_pass();
        break;
    }
  }
}

void Plan::set_params(ParamsSlot slot, std::span<const std::byte> record) {
  if (slot.index >= records_.size())
    throw Error("plan '" + label_ + "': params slot " + std::to_string(slot.index) +
                " is not one of this plan's " + std::to_string(records_.size()) + " records");
  const Record& r = records_[slot.index];
  if (record.size() != r.size)
    throw Error("plan '" + label_ + "': params slot " + std::to_string(slot.index) + " holds " +
                std::to_string(r.size) + " bytes, not " + std::to_string(record.size()));
  if (!built_) {
    std::memcpy(params_host_.data() + r.offset, record.data(), record.size());
    return;
  }
  ctx_->write(params_buffer_, r.offset, record);
}

}  // namespace wgfuse::gpu
