// Context's private state, shared by the files that implement Context (context.cpp, kernel.cpp).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpu/context.h"

namespace wgfuse::gpu {

struct Context::State {
  // Declaration order is destruction order, reversed: caches go before the device, the device
  // before the instance.
  webgpu::Handle<WGPUInstance> instance;
  webgpu::Handle<WGPUAdapter> adapter;
  webgpu::Handle<WGPUDevice> device;
  webgpu::Handle<WGPUQueue> queue;
  AdapterInfo info;
  Features features;
  Limits limits;
  double creation_ms = 0;
  std::chrono::milliseconds timeout{};
  uint64_t next_buffer_id = 1;
  bool writes_pending = false;  // queue writes not yet followed by a submit
  Buffer staging;               // MapRead buffer reused by read_bytes, grown on demand

  std::mutex error_mutex;
  std::vector<std::string> uncaptured;  // guarded by error_mutex
  std::string lost;                     // guarded by error_mutex
  bool destroying = false;

  std::map<KernelKey, std::unique_ptr<Kernel>> kernels;
  std::map<std::vector<uint64_t>, std::shared_ptr<webgpu::Handle<WGPUBindGroup>>> bind_groups;
  std::map<std::vector<uint64_t>, std::vector<Buffer>> bind_group_buffers;  // kept alive

  ~State() {
    staging = Buffer{};
    bind_groups.clear();
    kernels.clear();
    queue.reset();
    if (device) {
      destroying = true;
      webgpu::api().DeviceDestroy(device.get());
    }
  }
};

}  // namespace wgfuse::gpu
