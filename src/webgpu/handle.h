// RAII ownership of one WebGPU object: released through the loaded function table when the
// owner goes away. Move-only; `get()` hands the raw handle to code in src/webgpu and src/gpu.
#pragma once

#include <utility>

#include "webgpu/api.h"

namespace wgfuse::webgpu {

template <typename T>
struct Releaser;
#define WGFUSE_RELEASER(Type, fn)                \
  template <>                                    \
  struct Releaser<Type> {                        \
    static void release(Type h) { api().fn(h); } \
  };
WGFUSE_RELEASER(WGPUInstance, InstanceRelease)
WGFUSE_RELEASER(WGPUAdapter, AdapterRelease)
WGFUSE_RELEASER(WGPUDevice, DeviceRelease)
WGFUSE_RELEASER(WGPUQueue, QueueRelease)
WGFUSE_RELEASER(WGPUBuffer, BufferRelease)
WGFUSE_RELEASER(WGPUShaderModule, ShaderModuleRelease)
WGFUSE_RELEASER(WGPUComputePipeline, ComputePipelineRelease)
WGFUSE_RELEASER(WGPUBindGroupLayout, BindGroupLayoutRelease)
WGFUSE_RELEASER(WGPUPipelineLayout, PipelineLayoutRelease)
WGFUSE_RELEASER(WGPUBindGroup, BindGroupRelease)
WGFUSE_RELEASER(WGPUCommandEncoder, CommandEncoderRelease)
WGFUSE_RELEASER(WGPUComputePassEncoder, ComputePassEncoderRelease)
WGFUSE_RELEASER(WGPUCommandBuffer, CommandBufferRelease)
WGFUSE_RELEASER(WGPUQuerySet, QuerySetRelease)
#undef WGFUSE_RELEASER

template <typename T>
class Handle {
 public:
  Handle() = default;
  explicit Handle(T h) : h_(h) {}
  Handle(Handle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }

  T get() const { return h_; }
  explicit operator bool() const { return h_ != nullptr; }
  void reset() {
    if (h_) Releaser<T>::release(std::exchange(h_, nullptr));
  }

 private:
  T h_ = nullptr;
};

}  // namespace wgfuse::webgpu
