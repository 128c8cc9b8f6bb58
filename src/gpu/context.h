// Context: one WebGPU instance, adapter, device and queue, with the device's features and limits,
// error capture, and the caches of kernels and bind groups. Moves, never copies.
//
// Errors are loud: uncaptured errors and device loss are stored by callbacks and thrown as
// wgfuse::Error at the next sync point (wait, read, check); every wait has a timeout.
//
// WGPU types in this header: submit(WGPUCommandBuffer) and wait_future(WGPUFuture), for
// src/gpu's Recorder and Kernel; raw_device/raw_queue/raw_adapter, for the raw-API arm of the
// benchmark and the ABI tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/buffer.h"
#include "gpu/kernel.h"
#include "webgpu/handle.h"

namespace wgfuse::gpu {

enum class AdapterChoice { Auto, Gpu, Cpu };
enum class Backend { Any, Vulkan, OpenGL, OpenGLES, Null };

AdapterChoice parse_adapter_choice(std::string_view s);  // throws Error listing the valid names
Backend parse_backend(std::string_view s);               // throws Error listing the valid names
std::string to_string(Backend b);

struct ContextOptions {
  AdapterChoice adapter = AdapterChoice::Auto;
  Backend backend = Backend::Any;
  std::chrono::milliseconds timeout{120'000};  // for every wait on the GPU
  bool quiet = false;                          // no note on stderr when falling back to the CPU
  // Bind groups kept by Context::bind for reuse, least recently used evicted first. A Plan holds
  // its own, so this only needs to cover the groups in use between plans.
  size_t bind_group_cache_capacity = 1024;
  // Requests at most this maxStorageBufferBindingSize (0: the adapter's maximum, like every other
  // limit). Tests use it to get a binding limit below maxBufferSize, as discrete GPUs have.
  uint64_t max_storage_buffer_binding_size = 0;
  // Requests at most this maxComputeWorkgroupStorageSize (0: the adapter's maximum), so that
  // kernels chosen by the limit also fit a device that grants less (wgfuse serve: a browser's).
  uint32_t max_compute_workgroup_storage_size = 0;
  // Dawn device toggles to enable besides ours, e.g. "disable_robustness" (native only, never a
  // default: an explicit opt-in of a command) or "dump_shaders" (Dawn logs each shader it
  // compiles; the log reaches stderr under --verbose). Dawn ignores, with a warning, names it
  // does not know.
  std::vector<std::string> enabled_toggles;
};

struct AdapterInfo {
  std::string vendor, architecture, device, description;
  std::string backend;       // "Vulkan", "OpenGL", ...
  std::string adapter_type;  // "discrete GPU", "integrated GPU", "CPU", "unknown"
  uint32_t vendor_id = 0, device_id = 0;
  uint32_t subgroup_min_size = 0, subgroup_max_size = 0;
  bool is_cpu = false;
  std::string fallback_note;  // why the CPU adapter was chosen under --adapter auto, else empty
};

struct Features {
  bool subgroups = false;
  bool timestamp_query = false;
  bool shader_f16 = false;
  std::vector<std::string> all;  // every feature the adapter reports, by name or hex id
};

struct Limits {
  uint64_t max_buffer_size = 0;
  uint64_t max_storage_buffer_binding_size = 0;
  uint64_t max_uniform_buffer_binding_size = 0;
  uint32_t max_storage_buffers_per_shader_stage = 0;
  uint32_t max_compute_invocations_per_workgroup = 0;
  uint32_t max_compute_workgroup_size_x = 0;
  uint32_t max_compute_workgroup_storage_size = 0;
  uint32_t max_compute_workgroups_per_dimension = 0;
  uint32_t max_bind_groups = 0;
  uint32_t min_storage_buffer_offset_alignment = 0;
  uint32_t min_uniform_buffer_offset_alignment = 0;
};

class Context {
 public:
  explicit Context(const ContextOptions& options = {});
  ~Context();
  Context(Context&&) noexcept;
  Context& operator=(Context&&) noexcept;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const AdapterInfo& adapter() const;
  const Features& features() const;
  const Limits& limits() const;
  double device_creation_ms() const;
  std::string library_path() const;

  // ---- Buffers ----
  // `mapped`: created mapped (mappedAtCreation), its memory written through the WebGPU API until
  // unmapped (gpu::Staging).
  Buffer buffer(uint64_t bytes, BufferUsage usage, std::string_view label = {}, bool mapped = false);
  template <typename T>
  Buffer upload(std::span<const T> data, BufferUsage usage, std::string_view label = {}) {
    Buffer b = buffer(data.size_bytes(), usage | BufferUsage::CopyDst, label);
    write(b, 0, std::as_bytes(data));
    return b;
  }
  void write(const Buffer& dst, uint64_t offset, std::span<const std::byte> bytes);
  template <typename T>
  void write_value(const Buffer& dst, uint64_t offset, const T& value) {
    write(dst, offset, std::as_bytes(std::span<const T, 1>(&value, 1)));
  }
  // Copies `bytes` from `src` (needs CopySrc) into host memory: waits for all work submitted so
  // far, maps a staging buffer with the context's timeout.
  std::vector<std::byte> read_bytes(const Buffer& src, uint64_t offset, uint64_t bytes);
  // The first `bytes` of a MapRead buffer, once the work submitted that last used it is done (not
  // the work submitted after it: a copy into `staging` recorded at the end of one command buffer
  // can be read while later command buffers still run).
  std::vector<std::byte> map_read(const Buffer& staging, uint64_t bytes);
  // `count` elements of type T from element `offset_elems` on.
  template <typename T>
  std::vector<T> read(const Buffer& src, uint64_t offset_elems, uint64_t count) {
    auto raw = read_bytes(src, offset_elems * sizeof(T), count * sizeof(T));
    std::vector<T> out(count);
    std::memcpy(out.data(), raw.data(), raw.size());
    return out;
  }
  // The whole buffer as elements of type T (its size rounded down to whole elements).
  template <typename T>
  std::vector<T> read_all(const Buffer& src) {
    return read<T>(src, 0, src.size() / sizeof(T));
  }

  // ---- Kernels ----
  // Compiled once per key (name, entry point, overrides) and cached. A WGSL error throws with the
  // kernel's name, line, column and message.
  Kernel& kernel(const KernelDesc& desc);
  // Kernels compiled so far (each a pipeline: a new key costs the driver a compile).
  size_t kernels_compiled() const;
  // A bind group for group 0 of `kernel`, binding i = buffers[i], cached (LRU). Each binding is
  // checked here, naming the kernel, the binding, the sizes and the limit: its range lies in the
  // buffer; its size is at most maxStorageBufferBindingSize (maxUniformBufferBindingSize for a
  // buffer with Uniform but not Storage usage: bound as a uniform) and a multiple of 4; its
  // offset is a multiple of minStorageBufferOffsetAlignment (or the uniform one). Creation opens
  // no error scope (a wait each): what Dawn alone can see (a binding smaller than the shader's
  // struct, a storage/uniform mismatch) surfaces at the next check(), wait() or read.
  BindGroup bind(const Kernel& kernel, std::initializer_list<BufferBinding> buffers);
  BindGroup bind(const Kernel& kernel, std::span<const BufferBinding> buffers);
  size_t bind_group_cache_size() const;

  // ---- Work ----
  // Submits a finished command buffer (Recorder::submit calls this).
  void submit(WGPUCommandBuffer commands);
  // Blocks until all submitted work has finished (with the timeout), then check()s. Queued
  // buffer writes count as submitted: Dawn sends them with the next submit, so wait() submits
  // an empty command buffer first when writes are pending.
  void wait();
  // Throws the first stored uncaptured error or device loss, if any.
  void check();

  // Runs `fn` inside validation + out-of-memory + internal error scopes and throws the first
  // error they catch, prefixed with `what`.
  void scoped(std::string_view what, const std::function<void()>& fn);

  // For src/gpu and the raw-API arm of the benchmark.
  WGPUDevice raw_device() const;
  WGPUQueue raw_queue() const;
  WGPUAdapter raw_adapter() const;
  // Waits on a future with the context's timeout; throws naming `what` on time-out.
  void wait_future(WGPUFuture f, std::string_view what);

  struct State;  // implementation detail (context.cpp)

 private:
  void request_device(const ContextOptions& options);
  std::unique_ptr<State> s_;
};

}  // namespace wgfuse::gpu
