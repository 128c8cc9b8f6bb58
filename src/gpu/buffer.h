// Buffer: a typed-usage GPU buffer owned by RAII. BufferBinding: a byte range of one, as bound to
// a kernel. BindGroup: a set of bindings for one kernel; it keeps its buffers alive.
//
// WGPU types in this header: the BufferUsage values (WGPUBufferUsage_* bits) and the raw()
// accessors, for src/gpu's implementation and the raw-API arm of the benchmark.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "webgpu/handle.h"

namespace wgfuse::gpu {

enum class BufferUsage : uint64_t {
  None = 0,
  MapRead = WGPUBufferUsage_MapRead,
  MapWrite = WGPUBufferUsage_MapWrite,
  CopySrc = WGPUBufferUsage_CopySrc,
  CopyDst = WGPUBufferUsage_CopyDst,
  Uniform = WGPUBufferUsage_Uniform,
  Storage = WGPUBufferUsage_Storage,
  QueryResolve = WGPUBufferUsage_QueryResolve,
  // The usual storage buffer: read and written by kernels, uploaded to, read back.
  StorageIO = WGPUBufferUsage_Storage | WGPUBufferUsage_CopyDst | WGPUBufferUsage_CopySrc,
};
constexpr BufferUsage operator|(BufferUsage a, BufferUsage b) {
  return BufferUsage(uint64_t(a) | uint64_t(b));
}
constexpr bool has(BufferUsage set, BufferUsage bit) {
  return (uint64_t(set) & uint64_t(bit)) != 0;
}

class Buffer {
 public:
  Buffer() = default;
  Buffer(webgpu::Handle<WGPUBuffer> h, uint64_t size, BufferUsage usage, uint64_t id)
      : h_(std::make_shared<webgpu::Handle<WGPUBuffer>>(std::move(h))), size_(size), usage_(usage), id_(id) {}

  uint64_t size() const { return size_; }
  BufferUsage usage() const { return usage_; }
  uint64_t id() const { return id_; }  // unique per context, keys the bind-group cache
  WGPUBuffer raw() const { return h_ ? h_->get() : nullptr; }
  explicit operator bool() const { return raw() != nullptr; }

 private:
  // Shared so that Buffers can be held in several places (bind groups keep theirs alive).
  std::shared_ptr<webgpu::Handle<WGPUBuffer>> h_;
  uint64_t size_ = 0;
  BufferUsage usage_ = BufferUsage::None;
  uint64_t id_ = 0;
};

// One binding: a buffer, or a byte range of it; or an unused slot (buffer null): bindings are
// numbered by position, and a kernel need not declare every number below its highest.
struct BufferBinding {
  BufferBinding(const Buffer& b) : buffer(&b), offset(0), size(b.size()) {}  // NOLINT: implicit
  BufferBinding(const Buffer& b, uint64_t off, uint64_t sz) : buffer(&b), offset(off), size(sz) {}
  static BufferBinding unused() { return BufferBinding(); }
  const Buffer* buffer;
  uint64_t offset;
  uint64_t size;

 private:
  BufferBinding() : buffer(nullptr), offset(0), size(0) {}
};

// A bind group and the buffers it binds: Dawn destroys a buffer when its last external reference
// goes, even while a bind group still uses it, so the group holds them.
struct BindGroupState {
  webgpu::Handle<WGPUBindGroup> handle;
  std::vector<Buffer> buffers;
};

class BindGroup {
 public:
  BindGroup() = default;
  explicit BindGroup(std::shared_ptr<const BindGroupState> s) : s_(std::move(s)) {}
  WGPUBindGroup raw() const { return s_ ? s_->handle.get() : nullptr; }
  explicit operator bool() const { return raw() != nullptr; }

 private:
  std::shared_ptr<const BindGroupState> s_;
};

}  // namespace wgfuse::gpu
