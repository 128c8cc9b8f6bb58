// Buffer: a typed-usage GPU buffer owned by RAII. BindGroup: a cached set of buffer bindings.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "webgpu/handle.h"

namespace wgfuse::gpu {

enum class BufferUsage : uint64_t {
  None = 0,
  MapRead = WGPUBufferUsage_MapRead,
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
constexpr bool has(BufferUsage set, BufferUsage bit) { return (uint64_t(set) & uint64_t(bit)) != 0; }

class Buffer {
 public:
  Buffer() = default;
  Buffer(webgpu::Handle<WGPUBuffer> h, uint64_t size, BufferUsage usage, uint64_t id)
      : h_(std::make_shared<webgpu::Handle<WGPUBuffer>>(std::move(h))),
        size_(size),
        usage_(usage),
        id_(id) {}

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

// One binding: a buffer, or a byte range of it.
struct BufferBinding {
  BufferBinding(const Buffer& b) : buffer(&b), offset(0), size(b.size()) {}  // NOLINT: implicit
  BufferBinding(const Buffer& b, uint64_t off, uint64_t sz) : buffer(&b), offset(off), size(sz) {}
  const Buffer* buffer;
  uint64_t offset;
  uint64_t size;
};

class BindGroup {
 public:
  BindGroup() = default;
  explicit BindGroup(std::shared_ptr<webgpu::Handle<WGPUBindGroup>> h) : h_(std::move(h)) {}
  WGPUBindGroup raw() const { return h_ ? h_->get() : nullptr; }

 private:
  std::shared_ptr<webgpu::Handle<WGPUBindGroup>> h_;
};

}  // namespace wgfuse::gpu
