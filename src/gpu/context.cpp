#include "gpu/context.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <sstream>

#include "gpu/context_state.h"
#include "gpu/profiler.h"
#include "gpu/recorder.h"
#include "util/clock.h"
#include "util/error.h"
#include "webgpu/diagnostics.h"
#include "webgpu/strings.h"

namespace wgfuse::gpu {
namespace {

using webgpu::api;
using webgpu::Handle;

// Where Debian's chromium-common puts SwiftShader's Vulkan driver (our CPU adapter).
constexpr const char* kSwiftShaderIcd = "/usr/lib/chromium/vk_swiftshader_icd.json";

using webgpu::str;
using webgpu::sv;

std::string backend_name(WGPUBackendType t) {
  switch (t) {
    case WGPUBackendType_Null:
      return "Null";
    case WGPUBackendType_WebGPU:
      return "WebGPU";
    case WGPUBackendType_D3D11:
      return "D3D11";
    case WGPUBackendType_D3D12:
      return "D3D12";
    case WGPUBackendType_Metal:
      return "Metal";
    case WGPUBackendType_Vulkan:
      return "Vulkan";
    case WGPUBackendType_OpenGL:
      return "OpenGL";
    case WGPUBackendType_OpenGLES:
      return "OpenGLES";
    default:
      return "undefined";
  }
}

std::string adapter_type_name(WGPUAdapterType t) {
  switch (t) {
    case WGPUAdapterType_DiscreteGPU:
      return "discrete GPU";
    case WGPUAdapterType_IntegratedGPU:
      return "integrated GPU";
    case WGPUAdapterType_CPU:
      return "CPU";
    default:
      return "unknown";
  }
}

std::string feature_name(WGPUFeatureName f) {
  static const std::map<uint32_t, const char*> names = {
      {0x01, "depth-clip-control"},
      {0x02, "depth32float-stencil8"},
      {0x03, "timestamp-query"},
      {0x04, "texture-compression-bc"},
      {0x05, "texture-compression-bc-sliced-3d"},
      {0x06, "texture-compression-etc2"},
      {0x07, "texture-compression-astc"},
      {0x08, "texture-compression-astc-sliced-3d"},
      {0x09, "indirect-first-instance"},
      {0x0A, "shader-f16"},
      {0x0B, "rg11b10ufloat-renderable"},
      {0x0C, "bgra8unorm-storage"},
      {0x0D, "float32-filterable"},
      {0x0E, "float32-blendable"},
      {0x0F, "clip-distances"},
      {0x10, "dual-source-blending"},
      {0x11, "subgroups"},
      {0x12, "core-features-and-limits"},
      {0x50003, "chromium-experimental-timestamp-query-inside-passes"},
      {0x50005, "chromium-experimental-immediate-data"},
      {0x50008, "subgroups-f16"},
      {0x50038, "chromium-experimental-subgroup-matrix"}};
  if (auto it = names.find(f); it != names.end()) return it->second;
  std::ostringstream os;
  os << "0x" << std::hex << uint32_t(f);
  return os.str();
}

WGPUBackendType to_wgpu(Backend b) {
  switch (b) {
    case Backend::Vulkan:
      return WGPUBackendType_Vulkan;
    case Backend::OpenGL:
      return WGPUBackendType_OpenGL;
    case Backend::OpenGLES:
      return WGPUBackendType_OpenGLES;
    case Backend::Null:
      return WGPUBackendType_Null;
    default:
      return WGPUBackendType_Undefined;
  }
}

struct AdapterResult {
  Handle<WGPUAdapter> adapter;
  std::string message;
};

}  // namespace

AdapterChoice parse_adapter_choice(std::string_view s) {
  if (s == "auto") return AdapterChoice::Auto;
  if (s == "gpu") return AdapterChoice::Gpu;
  if (s == "cpu") return AdapterChoice::Cpu;
  throw Error("unknown adapter '" + std::string(s) + "': expected one of auto, gpu, cpu");
}

Backend parse_backend(std::string_view s) {
  if (s == "any" || s == "auto") return Backend::Any;
  if (s == "vulkan") return Backend::Vulkan;
  if (s == "opengl") return Backend::OpenGL;
  if (s == "opengles") return Backend::OpenGLES;
  if (s == "null") return Backend::Null;
  throw Error("unknown backend '" + std::string(s) +
              "': expected one of any, vulkan, opengl, opengles, null (this Dawn build for Linux "
              "has no d3d11, d3d12 or metal)");
}

std::string to_string(Backend b) {
  switch (b) {
    case Backend::Vulkan:
      return "vulkan";
    case Backend::OpenGL:
      return "opengl";
    case Backend::OpenGLES:
      return "opengles";
    case Backend::Null:
      return "null";
    default:
      return "any";
  }
}

namespace {

void on_uncaptured_error(const WGPUDevice*, WGPUErrorType type, WGPUStringView message, void* ud1, void*) {
  auto* s = static_cast<Context::State*>(ud1);
  std::lock_guard lock(s->error_mutex);
  const char* kind = type == WGPUErrorType_Validation    ? "validation error"
                     : type == WGPUErrorType_OutOfMemory ? "out of GPU memory"
                     : type == WGPUErrorType_Internal    ? "internal GPU error"
                                                         : "GPU error";
  s->uncaptured.push_back(std::string(kind) + ": " + str(message));
}

void on_device_lost(const WGPUDevice*, WGPUDeviceLostReason reason, WGPUStringView message, void* ud1,
                    void*) {
  auto* s = static_cast<Context::State*>(ud1);
  std::lock_guard lock(s->error_mutex);
  if (s->destroying || reason == WGPUDeviceLostReason_CallbackCancelled) return;
  s->lost = "GPU device lost (reason " + std::to_string(uint32_t(reason)) + "): " + str(message);
}

// forceFallbackAdapter stays off: it asks for Dawn's built-in SwiftShader, which this build lacks;
// Chromium's SwiftShader is reached through the Vulkan loader instead (VK_DRIVER_FILES).
AdapterResult request_adapter(WGPUInstance instance, WGPUBackendType backend,
                              std::chrono::milliseconds timeout) {
  WGPURequestAdapterOptions opts{};
  opts.featureLevel = WGPUFeatureLevel_Core;
  opts.powerPreference = WGPUPowerPreference_HighPerformance;
  opts.backendType = backend;
  AdapterResult result;
  WGPURequestAdapterCallbackInfo cb{};
  cb.mode = WGPUCallbackMode_WaitAnyOnly;
  cb.callback = [](WGPURequestAdapterStatus status, WGPUAdapter a, WGPUStringView msg, void* ud1, void*) {
    auto* r = static_cast<AdapterResult*>(ud1);
    if (status == WGPURequestAdapterStatus_Success && a)
      r->adapter = Handle<WGPUAdapter>(a);
    else
      r->message = str(msg).empty() ? "no adapter (status " + std::to_string(status) + ")" : str(msg);
  };
  cb.userdata1 = &result;
  WGPUFutureWaitInfo wait{api().InstanceRequestAdapter(instance, &opts, cb), 0};
  auto st = api().InstanceWaitAny(instance, 1, &wait, uint64_t(timeout.count()) * 1'000'000);
  if (st != WGPUWaitStatus_Success) result.message = "timed out waiting for an adapter";
  return result;
}

Handle<WGPUInstance> create_instance() {
  WGPUInstanceDescriptor desc{};
  desc.capabilities.timedWaitAnyEnable = 1;  // every wait below has a timeout
  desc.capabilities.timedWaitAnyMaxCount = 1;
  WGPUInstance inst = api().CreateInstance(&desc);
  if (!inst) throw Error("wgpuCreateInstance failed (library " + webgpu::library_path() + ")");
  return Handle<WGPUInstance>(inst);
}

WGPUAdapterType adapter_type(WGPUAdapter a) {
  WGPUAdapterInfo info{};
  api().AdapterGetInfo(a, &info);
  auto t = info.adapterType;
  api().AdapterInfoFreeMembers(info);
  return t;
}

std::string adapter_summary(WGPUAdapter a) {
  WGPUAdapterInfo info{};
  api().AdapterGetInfo(a, &info);
  auto s = str(info.device) + " on " + backend_name(info.backendType);
  api().AdapterInfoFreeMembers(info);
  return s;
}

}  // namespace

// ---- Context creation, in four steps: adapter choice, adapter info, device request, limits ----

namespace {

// Tries the adapters that `options.adapter` allows, in order; sets s.instance and s.adapter and
// returns why the CPU adapter was chosen under auto (else empty), or throws listing every attempt
// and the fixes.
class AdapterChooser {
 public:
  AdapterChooser(Context::State& s, const ContextOptions& options)
      : s_(s), options_(options), backend_(to_wgpu(options.backend)) {}

  std::string choose() {
    bool ok = false;
    std::string note;
    {
      // Probing for a GPU where there is none makes Dawn and the Vulkan loader print warnings:
      // shown only with -v (webgpu/diagnostics.h).
      webgpu::CapturedStderr capture;
      switch (options_.adapter) {
        case AdapterChoice::Gpu:
          ok = try_hardware();
          break;
        case AdapterChoice::Cpu:
          ok = try_swiftshader();
          break;
        case AdapterChoice::Auto:
          ok = try_hardware() && adapter_type(s_.adapter.get()) != WGPUAdapterType_CPU;
          if (!ok) {
            ok = try_swiftshader();
            if (ok) note = "no GPU found; using SwiftShader (CPU) — figures are not representative of a GPU";
          }
          break;
      }
    }
    if (!note.empty() && !options_.quiet)
      std::fprintf(stderr, "wgfuse: note: %s%s\n", note.c_str(),
                   webgpu::verbose() ? "" : " (-v shows the drivers' messages)");
    if (ok) return note;
    std::string msg = "no usable WebGPU adapter. Tried:";
    for (auto& t : tried_) msg += "\n  - " + t;
    msg +=
        "\nFixes: install a Vulkan driver for your GPU (and libvulkan1), or run scripts/setup "
        "for the SwiftShader CPU adapter and use --adapter cpu; set VK_DRIVER_FILES to choose "
        "a Vulkan driver explicitly; -v shows Dawn's and the Vulkan loader's messages.";
    throw Error(msg);
  }

 private:
  bool try_hardware() {
    s_.instance = create_instance();
    auto r = request_adapter(s_.instance.get(), backend_, options_.timeout);
    const std::string what = "hardware adapter on backend " + to_string(options_.backend) + ": ";
    if (!r.adapter) {
      tried_.push_back(what + r.message);
      return false;
    }
    if (adapter_type(r.adapter.get()) == WGPUAdapterType_CPU) {
      tried_.push_back(what + "only a CPU adapter was offered (" + adapter_summary(r.adapter.get()) + ")");
      if (options_.adapter == AdapterChoice::Gpu) return false;
    }
    s_.adapter = std::move(r.adapter);
    return true;
  }

  bool try_swiftshader() {
    // The Vulkan loader reads VK_DRIVER_FILES when an instance is created: point it at
    // SwiftShader unless the user chose drivers already.
    const char* user_icd = std::getenv("VK_DRIVER_FILES");
    if (!user_icd || !*user_icd) {
      if (!std::filesystem::exists(kSwiftShaderIcd)) {
        tried_.push_back(std::string("SwiftShader (CPU): ") + kSwiftShaderIcd +
                         " not found (install Debian's chromium-common package: scripts/setup does)");
        return false;
      }
      setenv("VK_DRIVER_FILES", kSwiftShaderIcd, 1);
    }
    s_.adapter.reset();
    s_.instance = create_instance();
    auto r = request_adapter(s_.instance.get(), backend_, options_.timeout);
    if (!r.adapter) {
      tried_.push_back("SwiftShader (CPU) with VK_DRIVER_FILES=" +
                       std::string(std::getenv("VK_DRIVER_FILES")) + ": " + r.message);
      return false;
    }
    s_.adapter = std::move(r.adapter);
    return true;
  }

  Context::State& s_;
  const ContextOptions& options_;
  const WGPUBackendType backend_;
  std::vector<std::string> tried_;
};

AdapterInfo read_adapter_info(WGPUAdapter adapter) {
  WGPUAdapterInfo ai{};
  api().AdapterGetInfo(adapter, &ai);
  AdapterInfo i;
  i.vendor = str(ai.vendor);
  i.architecture = str(ai.architecture);
  i.device = str(ai.device);
  i.description = str(ai.description);
  i.backend = backend_name(ai.backendType);
  i.adapter_type = adapter_type_name(ai.adapterType);
  i.vendor_id = ai.vendorID;
  i.device_id = ai.deviceID;
  i.subgroup_min_size = ai.subgroupMinSize;
  i.subgroup_max_size = ai.subgroupMaxSize;
  i.is_cpu = ai.adapterType == WGPUAdapterType_CPU;
  api().AdapterInfoFreeMembers(ai);
  return i;
}

std::vector<std::string> adapter_feature_names(WGPUAdapter adapter) {
  WGPUSupportedFeatures sf{};
  api().AdapterGetFeatures(adapter, &sf);
  std::vector<std::string> names;
  for (size_t k = 0; k < sf.featureCount; ++k) names.push_back(feature_name(sf.features[k]));
  api().SupportedFeaturesFreeMembers(sf);
  std::sort(names.begin(), names.end());
  return names;
}

Limits read_limits(WGPUDevice device) {
  WGPULimits dl{};
  api().DeviceGetLimits(device, &dl);
  Limits l;
  l.max_buffer_size = dl.maxBufferSize;
  l.max_storage_buffer_binding_size = dl.maxStorageBufferBindingSize;
  l.max_uniform_buffer_binding_size = dl.maxUniformBufferBindingSize;
  l.max_storage_buffers_per_shader_stage = dl.maxStorageBuffersPerShaderStage;
  l.max_compute_invocations_per_workgroup = dl.maxComputeInvocationsPerWorkgroup;
  l.max_compute_workgroup_size_x = dl.maxComputeWorkgroupSizeX;
  l.max_compute_workgroup_storage_size = dl.maxComputeWorkgroupStorageSize;
  l.max_compute_workgroups_per_dimension = dl.maxComputeWorkgroupsPerDimension;
  l.max_bind_groups = dl.maxBindGroups;
  l.min_storage_buffer_offset_alignment = dl.minStorageBufferOffsetAlignment;
  l.min_uniform_buffer_offset_alignment = dl.minUniformBufferOffsetAlignment;
  return l;
}

}  // namespace

// Asks the chosen adapter for a device with every feature we use that it offers and every limit
// raised to its maximum (or as `options` says); sets the device, the queue and the features' flags.
void Context::request_device(const ContextOptions& options) {
  WGPUAdapter adapter = s_->adapter.get();
  std::vector<WGPUFeatureName> wanted;
  for (auto f : {WGPUFeatureName_Subgroups, WGPUFeatureName_TimestampQuery, WGPUFeatureName_ShaderF16})
    if (api().AdapterHasFeature(adapter, f)) wanted.push_back(f);

  WGPULimits adapter_limits{};
  if (api().AdapterGetLimits(adapter, &adapter_limits) != WGPUStatus_Success)
    throw Error("wgpuAdapterGetLimits failed");
  if (options.max_storage_buffer_binding_size)
    adapter_limits.maxStorageBufferBindingSize = std::min<uint64_t>(
        adapter_limits.maxStorageBufferBindingSize, options.max_storage_buffer_binding_size);
  if (options.max_compute_workgroup_storage_size)
    adapter_limits.maxComputeWorkgroupStorageSize =
        std::min(adapter_limits.maxComputeWorkgroupStorageSize, options.max_compute_workgroup_storage_size);

  // Dawn rounds timestamps down to 2^16 ns by default (a browser's defence against timing
  // attacks); a benchmark needs them exact.
  const char* disabled_toggles[] = {"timestamp_quantization"};
  WGPUDawnTogglesDescriptor toggles{};
  toggles.chain.sType = WGPUSType_DawnTogglesDescriptor;
  toggles.disabledToggleCount = 1;
  toggles.disabledToggles = disabled_toggles;
  std::vector<const char*> enabled;
  for (auto& t : options.enabled_toggles) enabled.push_back(t.c_str());
  toggles.enabledToggleCount = enabled.size();
  toggles.enabledToggles = enabled.data();
  WGPUDeviceDescriptor dd{};
  dd.nextInChain = &toggles.chain;
  dd.label = sv("wgfuse");
  dd.requiredFeatureCount = wanted.size();
  dd.requiredFeatures = wanted.data();
  dd.requiredLimits = &adapter_limits;  // raise every limit to the adapter's maximum
  dd.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowSpontaneous;
  dd.deviceLostCallbackInfo.callback = on_device_lost;
  dd.deviceLostCallbackInfo.userdata1 = s_.get();
  dd.uncapturedErrorCallbackInfo.callback = on_uncaptured_error;
  dd.uncapturedErrorCallbackInfo.userdata1 = s_.get();

  struct DeviceResult {
    WGPUDevice device = nullptr;
    std::string message;
  } dr;
  WGPURequestDeviceCallbackInfo cb{};
  cb.mode = WGPUCallbackMode_WaitAnyOnly;
  cb.callback = [](WGPURequestDeviceStatus st, WGPUDevice d, WGPUStringView msg, void* ud1, void*) {
    auto* r = static_cast<DeviceResult*>(ud1);
    if (st == WGPURequestDeviceStatus_Success)
      r->device = d;
    else
      r->message = str(msg);
  };
  cb.userdata1 = &dr;
  wait_future(api().AdapterRequestDevice(adapter, &dd, cb), "a device");
  if (!dr.device) throw Error("requesting a device from " + s_->info.device + " failed: " + dr.message);
  s_->device = Handle<WGPUDevice>(dr.device);
  s_->queue = Handle<WGPUQueue>(api().DeviceGetQueue(dr.device));
  webgpu::route_device_logging(dr.device);

  for (auto f : wanted) {
    if (f == WGPUFeatureName_Subgroups) s_->features.subgroups = true;
    if (f == WGPUFeatureName_TimestampQuery) s_->features.timestamp_query = true;
    if (f == WGPUFeatureName_ShaderF16) s_->features.shader_f16 = true;
  }
}

Context::Context(const ContextOptions& options) : s_(std::make_unique<State>()) {
  auto t0 = SteadyClock::now();
  s_->timeout = options.timeout;
  for (auto& t : options.enabled_toggles) s_->dump_shaders |= t == "dump_shaders";
  s_->bind_groups = BindGroupCache(options.bind_group_cache_capacity);
  const std::string fallback_note = AdapterChooser(*s_, options).choose();
  s_->info = read_adapter_info(s_->adapter.get());
  s_->info.fallback_note = fallback_note;
  s_->features.all = adapter_feature_names(s_->adapter.get());
  request_device(options);
  s_->limits = read_limits(s_->device.get());
  s_->creation_ms = ms_since(t0);
}

Context::~Context() = default;
Context::Context(Context&&) noexcept = default;
Context& Context::operator=(Context&&) noexcept = default;

const AdapterInfo& Context::adapter() const {
  return s_->info;
}
const Features& Context::features() const {
  return s_->features;
}
const Limits& Context::limits() const {
  return s_->limits;
}
double Context::device_creation_ms() const {
  return s_->creation_ms;
}
std::string Context::library_path() const {
  return webgpu::library_path();
}
WGPUDevice Context::raw_device() const {
  return s_->device.get();
}
WGPUQueue Context::raw_queue() const {
  return s_->queue.get();
}
WGPUAdapter Context::raw_adapter() const {
  return s_->adapter.get();
}

void Context::check() {
  std::lock_guard lock(s_->error_mutex);
  if (!s_->lost.empty()) throw Error(s_->lost);
  if (!s_->uncaptured.empty()) {
    std::string msg = s_->uncaptured.front();
    if (s_->uncaptured.size() > 1)
      msg += " (and " + std::to_string(s_->uncaptured.size() - 1) + " more errors)";
    s_->uncaptured.clear();
    throw Error(msg);
  }
}

void Context::wait_future(WGPUFuture f, std::string_view what) {
  WGPUFutureWaitInfo info{f, 0};
  auto st = api().InstanceWaitAny(s_->instance.get(), 1, &info, uint64_t(s_->timeout.count()) * 1'000'000);
  if (st == WGPUWaitStatus_TimedOut) {
    check();  // a lost device explains a time-out better than the time-out does
    throw Error("timed out after " + std::to_string(s_->timeout.count() / 1000.0) + " s waiting for " +
                std::string(what) + " on " + s_->info.device +
                " (a slow adapter, such as the CPU one, may need more: raise --timeout)");
  }
  if (st != WGPUWaitStatus_Success) throw Error("waiting for " + std::string(what) + " failed");
}

void Context::submit(WGPUCommandBuffer commands) {
  api().QueueSubmit(s_->queue.get(), 1, &commands);
  s_->writes_pending = false;
}

void Context::wait() {
  if (s_->writes_pending) {
    Handle<WGPUCommandEncoder> enc(api().DeviceCreateCommandEncoder(s_->device.get(), nullptr));
    Handle<WGPUCommandBuffer> cb(api().CommandEncoderFinish(enc.get(), nullptr));
    submit(cb.get());
  }
  WGPUQueueWorkDoneCallbackInfo cb{};
  cb.mode = WGPUCallbackMode_WaitAnyOnly;
  cb.callback = [](WGPUQueueWorkDoneStatus, void*, void*) {};
  wait_future(api().QueueOnSubmittedWorkDone(s_->queue.get(), cb), "submitted GPU work");
  check();
}

void Context::scoped(std::string_view what, const std::function<void()>& fn) {
  WGPUDevice d = s_->device.get();
  const WGPUErrorFilter filters[] = {WGPUErrorFilter_Validation, WGPUErrorFilter_OutOfMemory,
                                     WGPUErrorFilter_Internal};
  for (auto f : filters) api().DevicePushErrorScope(d, f);
  std::exception_ptr thrown;
  try {
    fn();
  } catch (...) {
    thrown = std::current_exception();
  }
  std::string first;
  for (int k = 0; k < 3; ++k) {
    std::string msg;
    WGPUPopErrorScopeCallbackInfo cb{};
    cb.mode = WGPUCallbackMode_WaitAnyOnly;
    cb.callback = [](WGPUPopErrorScopeStatus, WGPUErrorType type, WGPUStringView m, void* ud1, void*) {
      if (type != WGPUErrorType_NoError) *static_cast<std::string*>(ud1) = str(m);
    };
    cb.userdata1 = &msg;
    wait_future(api().DevicePopErrorScope(d, cb), "an error scope");
    if (first.empty()) first = msg;
  }
  if (thrown) std::rethrow_exception(thrown);
  if (!first.empty()) throw Error(std::string(what) + ": " + first);
}

Buffer Context::buffer(uint64_t bytes, BufferUsage usage, std::string_view label, bool mapped) {
  if (bytes > s_->limits.max_buffer_size)
    throw Error(
        "buffer '" + std::string(label) + "' of " + std::to_string(bytes) +
        " bytes exceeds the device limit maxBufferSize = " + std::to_string(s_->limits.max_buffer_size));
  WGPUBufferDescriptor d{};
  d.label = sv(label);
  d.usage = uint64_t(usage);
  d.size = (std::max<uint64_t>(bytes, 4) + 3) / 4 * 4;  // copies and writes move whole words
  d.mappedAtCreation = mapped;
  Handle<WGPUBuffer> h;
  scoped("creating buffer '" + std::string(label) + "'",
         [&] { h = Handle<WGPUBuffer>(api().DeviceCreateBuffer(s_->device.get(), &d)); });
  return Buffer(std::move(h), d.size, usage, s_->next_buffer_id++);
}

namespace {
// WebGPU copies and writes move whole 4-byte words inside the buffer.
void check_range(const char* what, const Buffer& b, uint64_t offset, uint64_t bytes) {
  const std::string access = std::string("buffer ") + what + " of " + std::to_string(bytes) +
                             " bytes at offset " + std::to_string(offset);
  if (offset % 4 || bytes % 4) throw Error(access + ": offset and size must be multiples of 4");
  if (offset + bytes > b.size()) throw Error(access + " overruns a buffer of " + std::to_string(b.size()));
}
}  // namespace

void Context::write(const Buffer& dst, uint64_t offset, std::span<const std::byte> bytes) {
  check_range("write", dst, offset, bytes.size());
  api().QueueWriteBuffer(s_->queue.get(), dst.raw(), offset, bytes.data(), bytes.size());
  s_->writes_pending = true;
}

std::vector<std::byte> Context::read_bytes(const Buffer& src, uint64_t offset, uint64_t bytes) {
  check_range("read", src, offset, bytes);
  if (!has(src.usage(), BufferUsage::CopySrc))
    throw Error("buffer read: the source buffer was not created with CopySrc usage");
  if (bytes == 0) return {};
  // One staging buffer, reused: creating one per read cost a buffer creation and its error
  // scopes on every read-back (a generation's 16-byte statistics among them).
  if (!s_->staging || s_->staging.size() < bytes)
    s_->staging =
        buffer(std::max<uint64_t>(bytes, 4096), BufferUsage::MapRead | BufferUsage::CopyDst, "readback");
  Recorder rec(*this);
  rec.copy(src, offset, s_->staging, 0, bytes);
  rec.submit();
  try {
    return map_read(s_->staging, bytes);
  } catch (...) {
    s_->staging = Buffer{};  // a map that timed out may still complete into it later
    throw;
  }
}

std::vector<std::byte> Context::map_read(const Buffer& staging, uint64_t bytes) {
  check_range("map", staging, 0, bytes);
  if (!has(staging.usage(), BufferUsage::MapRead))
    throw Error("buffer map: the buffer was not created with MapRead usage");
  std::vector<std::byte> out(bytes);
  if (bytes == 0) return out;
  struct MapResult {
    bool ok = false;
    std::string message;
  };
  // On the heap: if the wait times out, the callback may still run later, so the result is left
  // to it (a leak on a path that ends in an error).
  auto* mr = new MapResult;
  WGPUBufferMapCallbackInfo cb{};
  cb.mode = WGPUCallbackMode_WaitAnyOnly;
  cb.callback = [](WGPUMapAsyncStatus st, WGPUStringView m, void* ud1, void*) {
    auto* r = static_cast<MapResult*>(ud1);
    r->ok = st == WGPUMapAsyncStatus_Success;
    r->message = str(m);
  };
  cb.userdata1 = mr;
  wait_future(api().BufferMapAsync(staging.raw(), WGPUMapMode_Read, 0, bytes, cb), "a buffer read-back");
  std::unique_ptr<MapResult> result(mr);
  const void* p = nullptr;
  if (result->ok) {
    p = api().BufferGetConstMappedRange(staging.raw(), 0, bytes);
    if (p) std::memcpy(out.data(), p, bytes);
    api().BufferUnmap(staging.raw());
  }
  check();  // an error of the work that produced the data says more than a failed map
  if (!result->ok) throw Error("mapping a read-back buffer failed: " + result->message);
  if (!p) throw Error("mapping a read-back buffer returned no memory");
  return out;
}

}  // namespace wgfuse::gpu
