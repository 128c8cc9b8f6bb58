#include <string>

#include "gpu/context.h"
#include "gpu/context_state.h"
#include "util/error.h"

namespace wgfuse::gpu {
namespace {

using webgpu::api;
using webgpu::Handle;

// The checks WebGPU makes when a bind group is created, made here with messages that name the
// kernel and the limit, so that creation needs no error scope.
void check_binding(const Limits& lim, const std::string& kernel, size_t index, const BufferBinding& b) {
  const bool uniform =
      has(b.buffer->usage(), BufferUsage::Uniform) && !has(b.buffer->usage(), BufferUsage::Storage);
  const std::string what = "kernel '" + kernel + "', binding " + std::to_string(index) + " (" +
                           (uniform ? "uniform" : "storage") + ", " + std::to_string(b.size) +
                           " bytes at offset " + std::to_string(b.offset) + " of a buffer of " +
                           std::to_string(b.buffer->size()) + ")";
  if (!*b.buffer) throw Error(what + ": the buffer is empty (never created)");
  if (b.offset > b.buffer->size() || b.size > b.buffer->size() - b.offset)
    throw Error(what + ": the range overruns the buffer");
  if (b.size == 0) throw Error(what + ": an empty binding");
  const uint64_t max_size =
      uniform ? lim.max_uniform_buffer_binding_size : lim.max_storage_buffer_binding_size;
  if (b.size > max_size)
    throw Error(what + ": exceeds the device limit " +
                (uniform ? "maxUniformBufferBindingSize" : "maxStorageBufferBindingSize") + " = " +
                std::to_string(max_size));
  const uint64_t align =
      uniform ? lim.min_uniform_buffer_offset_alignment : lim.min_storage_buffer_offset_alignment;
  if (b.offset % align)
    throw Error(what + ": the offset is not a multiple of the device limit " +
                (uniform ? "minUniformBufferOffsetAlignment" : "minStorageBufferOffsetAlignment") + " = " +
                std::to_string(align));
  if (!uniform && b.size % 4) throw Error(what + ": a storage binding's size must be a multiple of 4");
}

}  // namespace

BindGroup Context::bind(const Kernel& kernel, std::initializer_list<BufferBinding> buffers) {
  return bind(kernel, std::span<const BufferBinding>(buffers.begin(), buffers.size()));
}

BindGroup Context::bind(const Kernel& kernel, std::span<const BufferBinding> buffers) {
  BindGroupCache::Key key{reinterpret_cast<uint64_t>(kernel.raw_pipeline())};
  for (auto& b : buffers) key.insert(key.end(), {b.buffer ? b.buffer->id() : 0, b.offset, b.size});
  if (auto hit = s_->bind_groups.find(key)) return BindGroup(std::move(hit));

  auto state = std::make_shared<BindGroupState>();
  std::vector<WGPUBindGroupEntry> entries;
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (!buffers[i].buffer) continue;  // a number the kernel does not declare
    check_binding(s_->limits, kernel.key().label(), i, buffers[i]);
    WGPUBindGroupEntry e{};
    e.binding = uint32_t(i);
    e.buffer = buffers[i].buffer->raw();
    e.offset = buffers[i].offset;
    e.size = buffers[i].size;
    entries.push_back(e);
    state->buffers.push_back(*buffers[i].buffer);
  }
  WGPUBindGroupDescriptor d{};
  d.layout = kernel.raw_layout();
  d.entryCount = entries.size();
  d.entries = entries.data();
  state->handle = Handle<WGPUBindGroup>(api().DeviceCreateBindGroup(raw_device(), &d));
  s_->bind_groups.insert(std::move(key), state);
  return BindGroup(std::move(state));
}

size_t Context::bind_group_cache_size() const {
  return s_->bind_groups.size();
}

}  // namespace wgfuse::gpu
