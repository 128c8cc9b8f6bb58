// Context's private state, shared by the files that implement Context (context.cpp, kernel.cpp).
#pragma once

#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpu/context.h"

namespace wgfuse::gpu {

// Bind groups by (pipeline, then buffer id, offset, size per binding), least recently used
// evicted past `capacity`: a BindGroup handed out stays valid after eviction (it owns its
// handle and buffers), so eviction only bounds what the cache itself keeps alive.
class BindGroupCache {
 public:
  using Key = std::vector<uint64_t>;
  explicit BindGroupCache(size_t capacity) : capacity_(capacity) {}
  std::shared_ptr<const BindGroupState> find(const Key& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);  // now the most recent
    return it->second->second;
  }
  void insert(Key key, std::shared_ptr<const BindGroupState> group) {
    if (capacity_ == 0) return;
    if (order_.size() >= capacity_) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
    order_.emplace_front(std::move(key), std::move(group));
    index_.emplace(order_.front().first, order_.begin());
  }
  size_t size() const { return order_.size(); }
  void clear() {
    index_.clear();
    order_.clear();
  }

 private:
  struct Hash {
    size_t operator()(const Key& k) const {
      size_t h = k.size();
      for (uint64_t v : k) h ^= std::hash<uint64_t>{}(v) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
      return h;
    }
  };
  size_t capacity_;
  std::list<std::pair<Key, std::shared_ptr<const BindGroupState>>> order_;  // most recent first
  std::unordered_map<Key, decltype(order_)::iterator, Hash> index_;
};

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
  // Dawn's dump_shaders toggle is on: each kernel's label goes to stderr before Dawn logs its shader,
  // so that a dump says which kernel and constants each module is.
  bool dump_shaders = false;
  uint64_t next_buffer_id = 1;
  bool writes_pending = false;  // queue writes not yet followed by a submit
  Buffer staging;               // MapRead buffer reused by read_bytes, grown on demand

  std::mutex error_mutex;
  std::vector<std::string> uncaptured;  // guarded by error_mutex
  std::string lost;                     // guarded by error_mutex
  bool destroying = false;

  std::map<KernelKey, std::unique_ptr<Kernel>> kernels;
  BindGroupCache bind_groups{0};  // capacity set from ContextOptions

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
