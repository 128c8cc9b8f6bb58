// Our own declarations of the subset of the WebGPU C API (webgpu.h) that wgfuse uses, written
// for the ABI of the pinned Dawn: libwebgpu_wrapper.so from npm bun-webgpu-linux-x64 0.1.7
// (Dawn of spring 2025, x86-64 Linux, LP64). Enum values and struct layouts are that library's,
// not today's standard header's: ShaderF16 is 0x0A and WGPULimits is 168 bytes here.
// Every struct below is static_asserted against the measured facts (shared/reference/dawn-abi.json).
//
// Reached through webgpu/api.h and webgpu/handle.h: src/gpu's public headers hold
// webgpu::Handle<WGPU...> members (and raw_*() accessors), so code above src/gpu sees these type
// names, but only src/webgpu and src/gpu's .cpp files call the C API, plus the two documented
// exceptions that measure against it: the raw arm of the benchmark (src/bench/dispatch_bench.cpp)
// and the ABI tests (tests/test_abi.cpp). See docs/ARCHITECTURE.md, "Where the C API is called".
#pragma once

#include <cstddef>
#include <cstdint>

// ---- Handles --------------------------------------------------------------------------------
#define WGFUSE_HANDLE(name) typedef struct name##Impl* name
WGFUSE_HANDLE(WGPUInstance);
WGFUSE_HANDLE(WGPUAdapter);
WGFUSE_HANDLE(WGPUDevice);
WGFUSE_HANDLE(WGPUQueue);
WGFUSE_HANDLE(WGPUBuffer);
WGFUSE_HANDLE(WGPUShaderModule);
WGFUSE_HANDLE(WGPUComputePipeline);
WGFUSE_HANDLE(WGPUBindGroupLayout);
WGFUSE_HANDLE(WGPUPipelineLayout);
WGFUSE_HANDLE(WGPUBindGroup);
WGFUSE_HANDLE(WGPUCommandEncoder);
WGFUSE_HANDLE(WGPUComputePassEncoder);
WGFUSE_HANDLE(WGPUCommandBuffer);
WGFUSE_HANDLE(WGPUQuerySet);
WGFUSE_HANDLE(WGPUSurface);
WGFUSE_HANDLE(WGPUSampler);
WGFUSE_HANDLE(WGPUTextureView);
#undef WGFUSE_HANDLE

typedef uint32_t WGPUBool;
typedef uint64_t WGPUFlags;

// ---- Enums (values of this Dawn) -----------------------------------------------------------
enum WGPUSType : uint32_t {
  WGPUSType_ShaderSourceWGSL = 0x00000002,
  WGPUSType_DawnTogglesDescriptor = 0x0005000A,
};
enum WGPUFeatureName : uint32_t {
  WGPUFeatureName_TimestampQuery = 0x03,
  WGPUFeatureName_ShaderF16 = 0x0A,
  WGPUFeatureName_Subgroups = 0x11,
};
enum WGPUBackendType : uint32_t {
  WGPUBackendType_Undefined = 0,
  WGPUBackendType_Null = 1,
  WGPUBackendType_WebGPU = 2,
  WGPUBackendType_D3D11 = 3,
  WGPUBackendType_D3D12 = 4,
  WGPUBackendType_Metal = 5,
  WGPUBackendType_Vulkan = 6,
  WGPUBackendType_OpenGL = 7,
  WGPUBackendType_OpenGLES = 8,
};
enum WGPUAdapterType : uint32_t {
  WGPUAdapterType_DiscreteGPU = 1,
  WGPUAdapterType_IntegratedGPU = 2,
  WGPUAdapterType_CPU = 3,
  WGPUAdapterType_Unknown = 4,
};
enum WGPUFeatureLevel : uint32_t { WGPUFeatureLevel_Undefined = 0, WGPUFeatureLevel_Core = 2 };
enum WGPUPowerPreference : uint32_t {
  WGPUPowerPreference_Undefined = 0,
  WGPUPowerPreference_HighPerformance = 2,
};
enum WGPUCallbackMode : uint32_t {
  WGPUCallbackMode_WaitAnyOnly = 1,
  WGPUCallbackMode_AllowProcessEvents = 2,
  WGPUCallbackMode_AllowSpontaneous = 3,
};
enum WGPUWaitStatus : uint32_t {
  WGPUWaitStatus_Success = 1,
  WGPUWaitStatus_TimedOut = 2,
  WGPUWaitStatus_Error = 3,
};
enum WGPULoggingType : uint32_t {
  WGPULoggingType_Verbose = 1,
  WGPULoggingType_Info = 2,
  WGPULoggingType_Warning = 3,
  WGPULoggingType_Error = 4,
};
enum WGPUStatus : uint32_t { WGPUStatus_Success = 1, WGPUStatus_Error = 2 };
enum WGPURequestAdapterStatus : uint32_t { WGPURequestAdapterStatus_Success = 1 };
enum WGPURequestDeviceStatus : uint32_t { WGPURequestDeviceStatus_Success = 1 };
enum WGPUMapAsyncStatus : uint32_t { WGPUMapAsyncStatus_Success = 1 };
enum WGPUQueueWorkDoneStatus : uint32_t { WGPUQueueWorkDoneStatus_Success = 1 };
enum WGPUPopErrorScopeStatus : uint32_t { WGPUPopErrorScopeStatus_Success = 1 };
enum WGPUCompilationInfoRequestStatus : uint32_t { WGPUCompilationInfoRequestStatus_Success = 1 };
enum WGPUErrorType : uint32_t {
  WGPUErrorType_NoError = 1,
  WGPUErrorType_Validation = 2,
  WGPUErrorType_OutOfMemory = 3,
  WGPUErrorType_Internal = 4,
  WGPUErrorType_Unknown = 5,
};
enum WGPUErrorFilter : uint32_t {
  WGPUErrorFilter_Validation = 1,
  WGPUErrorFilter_OutOfMemory = 2,
  WGPUErrorFilter_Internal = 3,
};
enum WGPUDeviceLostReason : uint32_t {
  WGPUDeviceLostReason_Unknown = 1,
  WGPUDeviceLostReason_Destroyed = 2,
  WGPUDeviceLostReason_CallbackCancelled = 3,
  WGPUDeviceLostReason_FailedCreation = 4,
};
enum WGPUCompilationMessageType : uint32_t {
  WGPUCompilationMessageType_Error = 1,
  WGPUCompilationMessageType_Warning = 2,
  WGPUCompilationMessageType_Info = 3,
};
enum WGPUBufferBindingType : uint32_t {
  WGPUBufferBindingType_BindingNotUsed = 0,
  WGPUBufferBindingType_Uniform = 2,
  WGPUBufferBindingType_Storage = 3,
  WGPUBufferBindingType_ReadOnlyStorage = 4,
};
enum WGPUQueryType : uint32_t { WGPUQueryType_Timestamp = 2 };

// ---- Flags (64-bit here) -------------------------------------------------------------------
typedef WGPUFlags WGPUBufferUsage;
constexpr WGPUBufferUsage WGPUBufferUsage_MapRead = 0x1;
constexpr WGPUBufferUsage WGPUBufferUsage_MapWrite = 0x2;
constexpr WGPUBufferUsage WGPUBufferUsage_CopySrc = 0x4;
constexpr WGPUBufferUsage WGPUBufferUsage_CopyDst = 0x8;
constexpr WGPUBufferUsage WGPUBufferUsage_Uniform = 0x40;
constexpr WGPUBufferUsage WGPUBufferUsage_Storage = 0x80;
constexpr WGPUBufferUsage WGPUBufferUsage_QueryResolve = 0x200;
typedef WGPUFlags WGPUMapMode;
constexpr WGPUMapMode WGPUMapMode_Read = 0x1;
constexpr WGPUMapMode WGPUMapMode_Write = 0x2;
typedef WGPUFlags WGPUShaderStage;
constexpr WGPUShaderStage WGPUShaderStage_Compute = 0x4;

constexpr size_t WGPU_STRLEN = SIZE_MAX;
constexpr uint64_t WGPU_WHOLE_SIZE = UINT64_MAX;
constexpr uint32_t WGPU_QUERY_SET_INDEX_UNDEFINED = UINT32_MAX;

// ---- Structs -------------------------------------------------------------------------------
struct WGPUChainedStruct {
  WGPUChainedStruct* next;
  WGPUSType sType;
};
struct WGPUStringView {
  const char* data;
  size_t length;
};
struct WGPUFuture {
  uint64_t id;
};
struct WGPUFutureWaitInfo {
  WGPUFuture future;
  WGPUBool completed;
};
struct WGPUInstanceCapabilities {
  WGPUChainedStruct* nextInChain;
  WGPUBool timedWaitAnyEnable;
  size_t timedWaitAnyMaxCount;
};
struct WGPUInstanceDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUInstanceCapabilities capabilities;
};
struct WGPURequestAdapterOptions {
  WGPUChainedStruct* nextInChain;
  WGPUFeatureLevel featureLevel;
  WGPUPowerPreference powerPreference;
  WGPUBool forceFallbackAdapter;
  WGPUBackendType backendType;
  WGPUSurface compatibleSurface;
};
struct WGPUDawnTogglesDescriptor {
  WGPUChainedStruct chain;
  size_t enabledToggleCount;
  const char* const* enabledToggles;
  size_t disabledToggleCount;
  const char* const* disabledToggles;
};

// Callbacks: this Dawn's two-userdata form.
typedef void (*WGPURequestAdapterCallback)(WGPURequestAdapterStatus, WGPUAdapter, WGPUStringView, void*,
                                           void*);
typedef void (*WGPURequestDeviceCallback)(WGPURequestDeviceStatus, WGPUDevice, WGPUStringView, void*, void*);
typedef void (*WGPUDeviceLostCallback)(const WGPUDevice*, WGPUDeviceLostReason, WGPUStringView, void*, void*);
typedef void (*WGPUUncapturedErrorCallback)(const WGPUDevice*, WGPUErrorType, WGPUStringView, void*, void*);
typedef void (*WGPUBufferMapCallback)(WGPUMapAsyncStatus, WGPUStringView, void*, void*);
typedef void (*WGPUQueueWorkDoneCallback)(WGPUQueueWorkDoneStatus, void*, void*);  // no message here
typedef void (*WGPUPopErrorScopeCallback)(WGPUPopErrorScopeStatus, WGPUErrorType, WGPUStringView, void*,
                                          void*);
struct WGPUCompilationInfo;
typedef void (*WGPUCompilationInfoCallback)(WGPUCompilationInfoRequestStatus, const WGPUCompilationInfo*,
                                            void*, void*);

#define WGFUSE_CALLBACK_INFO(name, fn) \
  struct name {                        \
    WGPUChainedStruct* nextInChain;    \
    WGPUCallbackMode mode;             \
    fn callback;                       \
    void* userdata1;                   \
    void* userdata2;                   \
  }
WGFUSE_CALLBACK_INFO(WGPURequestAdapterCallbackInfo, WGPURequestAdapterCallback);
WGFUSE_CALLBACK_INFO(WGPURequestDeviceCallbackInfo, WGPURequestDeviceCallback);
WGFUSE_CALLBACK_INFO(WGPUDeviceLostCallbackInfo, WGPUDeviceLostCallback);
WGFUSE_CALLBACK_INFO(WGPUBufferMapCallbackInfo, WGPUBufferMapCallback);
WGFUSE_CALLBACK_INFO(WGPUQueueWorkDoneCallbackInfo, WGPUQueueWorkDoneCallback);
WGFUSE_CALLBACK_INFO(WGPUPopErrorScopeCallbackInfo, WGPUPopErrorScopeCallback);
WGFUSE_CALLBACK_INFO(WGPUCompilationInfoCallbackInfo, WGPUCompilationInfoCallback);
#undef WGFUSE_CALLBACK_INFO
struct WGPUUncapturedErrorCallbackInfo {  // no mode field: it may fire at any time
  WGPUChainedStruct* nextInChain;
  WGPUUncapturedErrorCallback callback;
  void* userdata1;
  void* userdata2;
};
typedef void (*WGPULoggingCallback)(WGPULoggingType, WGPUStringView, void*, void*);
struct WGPULoggingCallbackInfo {  // no mode field either
  WGPUChainedStruct* nextInChain;
  WGPULoggingCallback callback;
  void* userdata1;
  void* userdata2;
};

struct WGPUAdapterInfo {
  WGPUChainedStruct* nextInChain;
  WGPUStringView vendor;
  WGPUStringView architecture;
  WGPUStringView device;
  WGPUStringView description;
  WGPUBackendType backendType;
  WGPUAdapterType adapterType;
  uint32_t vendorID;
  uint32_t deviceID;
  uint32_t subgroupMinSize;
  uint32_t subgroupMaxSize;
};
struct WGPULimits {
  WGPUChainedStruct* nextInChain;
  uint32_t maxTextureDimension1D;
  uint32_t maxTextureDimension2D;
  uint32_t maxTextureDimension3D;
  uint32_t maxTextureArrayLayers;
  uint32_t maxBindGroups;
  uint32_t maxBindGroupsPlusVertexBuffers;
  uint32_t maxBindingsPerBindGroup;
  uint32_t maxDynamicUniformBuffersPerPipelineLayout;
  uint32_t maxDynamicStorageBuffersPerPipelineLayout;
  uint32_t maxSampledTexturesPerShaderStage;
  uint32_t maxSamplersPerShaderStage;
  uint32_t maxStorageBuffersPerShaderStage;
  uint32_t maxStorageTexturesPerShaderStage;
  uint32_t maxUniformBuffersPerShaderStage;
  uint64_t maxUniformBufferBindingSize;
  uint64_t maxStorageBufferBindingSize;
  uint32_t minUniformBufferOffsetAlignment;
  uint32_t minStorageBufferOffsetAlignment;
  uint32_t maxVertexBuffers;
  uint64_t maxBufferSize;
  uint32_t maxVertexAttributes;
  uint32_t maxVertexBufferArrayStride;
  uint32_t maxInterStageShaderVariables;
  uint32_t maxColorAttachments;
  uint32_t maxColorAttachmentBytesPerSample;
  uint32_t maxComputeWorkgroupStorageSize;
  uint32_t maxComputeInvocationsPerWorkgroup;
  uint32_t maxComputeWorkgroupSizeX;
  uint32_t maxComputeWorkgroupSizeY;
  uint32_t maxComputeWorkgroupSizeZ;
  uint32_t maxComputeWorkgroupsPerDimension;
  // Dawn-only additions of this period.
  uint32_t maxStorageBuffersInVertexStage;
  uint32_t maxStorageTexturesInVertexStage;
  uint32_t maxStorageBuffersInFragmentStage;
  uint32_t maxStorageTexturesInFragmentStage;
};
struct WGPUSupportedFeatures {
  size_t featureCount;
  const WGPUFeatureName* features;
};
struct WGPUQueueDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
};
struct WGPUDeviceDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  size_t requiredFeatureCount;
  const WGPUFeatureName* requiredFeatures;
  const WGPULimits* requiredLimits;
  WGPUQueueDescriptor defaultQueue;
  WGPUDeviceLostCallbackInfo deviceLostCallbackInfo;
  WGPUUncapturedErrorCallbackInfo uncapturedErrorCallbackInfo;
};
struct WGPUBufferDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  WGPUBufferUsage usage;
  uint64_t size;
  WGPUBool mappedAtCreation;
};
struct WGPUShaderModuleDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
};
struct WGPUShaderSourceWGSL {
  WGPUChainedStruct chain;
  WGPUStringView code;
};
struct WGPUCompilationMessage {
  WGPUChainedStruct* nextInChain;
  WGPUStringView message;
  WGPUCompilationMessageType type;
  uint64_t lineNum;
  uint64_t linePos;
  uint64_t offset;
  uint64_t length;
};
struct WGPUCompilationInfo {
  WGPUChainedStruct* nextInChain;
  size_t messageCount;
  const WGPUCompilationMessage* messages;
};
struct WGPUConstantEntry {
  WGPUChainedStruct* nextInChain;
  WGPUStringView key;
  double value;
};
struct WGPUComputeState {
  WGPUChainedStruct* nextInChain;
  WGPUShaderModule module;
  WGPUStringView entryPoint;
  size_t constantCount;
  const WGPUConstantEntry* constants;
};
struct WGPUComputePipelineDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  WGPUPipelineLayout layout;
  WGPUComputeState compute;
};
struct WGPUBufferBindingLayout {
  WGPUChainedStruct* nextInChain;
  WGPUBufferBindingType type;
  WGPUBool hasDynamicOffset;
  uint64_t minBindingSize;
};
// The three non-buffer binding layouts stay zero ("not used") in wgfuse: opaque bytes of the
// right size and alignment keep WGPUBindGroupLayoutEntry's layout exact.
struct WGPUSamplerBindingLayout {
  WGPUChainedStruct* nextInChain;
  uint32_t type;
};
struct WGPUTextureBindingLayout {
  WGPUChainedStruct* nextInChain;
  uint32_t sampleType;
  uint32_t viewDimension;
  WGPUBool multisampled;
};
struct WGPUStorageTextureBindingLayout {
  WGPUChainedStruct* nextInChain;
  uint32_t access;
  uint32_t format;
  uint32_t viewDimension;
};
struct WGPUBindGroupLayoutEntry {
  WGPUChainedStruct* nextInChain;
  uint32_t binding;
  WGPUShaderStage visibility;
  WGPUBufferBindingLayout buffer;
  WGPUSamplerBindingLayout sampler;
  WGPUTextureBindingLayout texture;
  WGPUStorageTextureBindingLayout storageTexture;
};
struct WGPUBindGroupLayoutDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  size_t entryCount;
  const WGPUBindGroupLayoutEntry* entries;
};
struct WGPUPipelineLayoutDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  size_t bindGroupLayoutCount;
  const WGPUBindGroupLayout* bindGroupLayouts;
  uint32_t immediateDataRangeByteSize;
};
struct WGPUBindGroupEntry {
  WGPUChainedStruct* nextInChain;
  uint32_t binding;
  WGPUBuffer buffer;
  uint64_t offset;
  uint64_t size;
  WGPUSampler sampler;
  WGPUTextureView textureView;
};
struct WGPUBindGroupDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  WGPUBindGroupLayout layout;
  size_t entryCount;
  const WGPUBindGroupEntry* entries;
};
struct WGPUCommandEncoderDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
};
struct WGPUPassTimestampWrites {
  WGPUChainedStruct* nextInChain;
  WGPUQuerySet querySet;
  uint32_t beginningOfPassWriteIndex;
  uint32_t endOfPassWriteIndex;
};
struct WGPUComputePassDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  const WGPUPassTimestampWrites* timestampWrites;
};
struct WGPUCommandBufferDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
};
struct WGPUQuerySetDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  WGPUQueryType type;
  uint32_t count;
};

// ---- Layout checks against the measured ABI (shared/reference/dawn-abi.json) ---------------
// WGPUChainedStruct
static_assert(sizeof(WGPUChainedStruct) == 16 && alignof(WGPUChainedStruct) == 8);
static_assert(offsetof(WGPUChainedStruct, next) == 0);
static_assert(offsetof(WGPUChainedStruct, sType) == 8);
// WGPUStringView
static_assert(sizeof(WGPUStringView) == 16 && alignof(WGPUStringView) == 8);
static_assert(offsetof(WGPUStringView, data) == 0);
static_assert(offsetof(WGPUStringView, length) == 8);
// WGPUInstanceCapabilities
static_assert(sizeof(WGPUInstanceCapabilities) == 24 && alignof(WGPUInstanceCapabilities) == 8);
static_assert(offsetof(WGPUInstanceCapabilities, nextInChain) == 0);
static_assert(offsetof(WGPUInstanceCapabilities, timedWaitAnyEnable) == 8);
static_assert(offsetof(WGPUInstanceCapabilities, timedWaitAnyMaxCount) == 16);
// WGPUInstanceDescriptor
static_assert(sizeof(WGPUInstanceDescriptor) == 32 && alignof(WGPUInstanceDescriptor) == 8);
static_assert(offsetof(WGPUInstanceDescriptor, nextInChain) == 0);
static_assert(offsetof(WGPUInstanceDescriptor, capabilities) == 8);
// WGPURequestAdapterOptions
static_assert(sizeof(WGPURequestAdapterOptions) == 32 && alignof(WGPURequestAdapterOptions) == 8);
static_assert(offsetof(WGPURequestAdapterOptions, nextInChain) == 0);
static_assert(offsetof(WGPURequestAdapterOptions, featureLevel) == 8);
static_assert(offsetof(WGPURequestAdapterOptions, powerPreference) == 12);
static_assert(offsetof(WGPURequestAdapterOptions, forceFallbackAdapter) == 16);
static_assert(offsetof(WGPURequestAdapterOptions, backendType) == 20);
static_assert(offsetof(WGPURequestAdapterOptions, compatibleSurface) == 24);
// WGPURequestAdapterCallbackInfo
static_assert(sizeof(WGPURequestAdapterCallbackInfo) == 40 && alignof(WGPURequestAdapterCallbackInfo) == 8);
static_assert(offsetof(WGPURequestAdapterCallbackInfo, nextInChain) == 0);
static_assert(offsetof(WGPURequestAdapterCallbackInfo, mode) == 8);
static_assert(offsetof(WGPURequestAdapterCallbackInfo, callback) == 16);
static_assert(offsetof(WGPURequestAdapterCallbackInfo, userdata1) == 24);
static_assert(offsetof(WGPURequestAdapterCallbackInfo, userdata2) == 32);
// WGPURequestDeviceCallbackInfo
static_assert(sizeof(WGPURequestDeviceCallbackInfo) == 40 && alignof(WGPURequestDeviceCallbackInfo) == 8);
static_assert(offsetof(WGPURequestDeviceCallbackInfo, nextInChain) == 0);
static_assert(offsetof(WGPURequestDeviceCallbackInfo, mode) == 8);
static_assert(offsetof(WGPURequestDeviceCallbackInfo, callback) == 16);
static_assert(offsetof(WGPURequestDeviceCallbackInfo, userdata1) == 24);
static_assert(offsetof(WGPURequestDeviceCallbackInfo, userdata2) == 32);
// WGPUFuture
static_assert(sizeof(WGPUFuture) == 8 && alignof(WGPUFuture) == 8);
static_assert(offsetof(WGPUFuture, id) == 0);
// WGPUFutureWaitInfo
static_assert(sizeof(WGPUFutureWaitInfo) == 16 && alignof(WGPUFutureWaitInfo) == 8);
static_assert(offsetof(WGPUFutureWaitInfo, future) == 0);
static_assert(offsetof(WGPUFutureWaitInfo, completed) == 8);
// WGPUAdapterInfo
static_assert(sizeof(WGPUAdapterInfo) == 96 && alignof(WGPUAdapterInfo) == 8);
static_assert(offsetof(WGPUAdapterInfo, nextInChain) == 0);
static_assert(offsetof(WGPUAdapterInfo, vendor) == 8);
static_assert(offsetof(WGPUAdapterInfo, architecture) == 24);
static_assert(offsetof(WGPUAdapterInfo, device) == 40);
static_assert(offsetof(WGPUAdapterInfo, description) == 56);
static_assert(offsetof(WGPUAdapterInfo, backendType) == 72);
static_assert(offsetof(WGPUAdapterInfo, adapterType) == 76);
static_assert(offsetof(WGPUAdapterInfo, vendorID) == 80);
static_assert(offsetof(WGPUAdapterInfo, deviceID) == 84);
static_assert(offsetof(WGPUAdapterInfo, subgroupMinSize) == 88);
static_assert(offsetof(WGPUAdapterInfo, subgroupMaxSize) == 92);
// WGPULimits
static_assert(sizeof(WGPULimits) == 168 && alignof(WGPULimits) == 8);
static_assert(offsetof(WGPULimits, nextInChain) == 0);
static_assert(offsetof(WGPULimits, maxTextureDimension1D) == 8);
static_assert(offsetof(WGPULimits, maxTextureDimension2D) == 12);
static_assert(offsetof(WGPULimits, maxTextureDimension3D) == 16);
static_assert(offsetof(WGPULimits, maxTextureArrayLayers) == 20);
static_assert(offsetof(WGPULimits, maxBindGroups) == 24);
static_assert(offsetof(WGPULimits, maxBindGroupsPlusVertexBuffers) == 28);
static_assert(offsetof(WGPULimits, maxBindingsPerBindGroup) == 32);
static_assert(offsetof(WGPULimits, maxDynamicUniformBuffersPerPipelineLayout) == 36);
static_assert(offsetof(WGPULimits, maxDynamicStorageBuffersPerPipelineLayout) == 40);
static_assert(offsetof(WGPULimits, maxSampledTexturesPerShaderStage) == 44);
static_assert(offsetof(WGPULimits, maxSamplersPerShaderStage) == 48);
static_assert(offsetof(WGPULimits, maxStorageBuffersPerShaderStage) == 52);
static_assert(offsetof(WGPULimits, maxStorageTexturesPerShaderStage) == 56);
static_assert(offsetof(WGPULimits, maxUniformBuffersPerShaderStage) == 60);
static_assert(offsetof(WGPULimits, maxUniformBufferBindingSize) == 64);
static_assert(offsetof(WGPULimits, maxStorageBufferBindingSize) == 72);
static_assert(offsetof(WGPULimits, minUniformBufferOffsetAlignment) == 80);
static_assert(offsetof(WGPULimits, minStorageBufferOffsetAlignment) == 84);
static_assert(offsetof(WGPULimits, maxVertexBuffers) == 88);
static_assert(offsetof(WGPULimits, maxBufferSize) == 96);
static_assert(offsetof(WGPULimits, maxVertexAttributes) == 104);
static_assert(offsetof(WGPULimits, maxVertexBufferArrayStride) == 108);
static_assert(offsetof(WGPULimits, maxInterStageShaderVariables) == 112);
static_assert(offsetof(WGPULimits, maxColorAttachments) == 116);
static_assert(offsetof(WGPULimits, maxColorAttachmentBytesPerSample) == 120);
static_assert(offsetof(WGPULimits, maxComputeWorkgroupStorageSize) == 124);
static_assert(offsetof(WGPULimits, maxComputeInvocationsPerWorkgroup) == 128);
static_assert(offsetof(WGPULimits, maxComputeWorkgroupSizeX) == 132);
static_assert(offsetof(WGPULimits, maxComputeWorkgroupSizeY) == 136);
static_assert(offsetof(WGPULimits, maxComputeWorkgroupSizeZ) == 140);
static_assert(offsetof(WGPULimits, maxComputeWorkgroupsPerDimension) == 144);
static_assert(offsetof(WGPULimits, maxStorageBuffersInVertexStage) == 148);
static_assert(offsetof(WGPULimits, maxStorageTexturesInVertexStage) == 152);
static_assert(offsetof(WGPULimits, maxStorageBuffersInFragmentStage) == 156);
static_assert(offsetof(WGPULimits, maxStorageTexturesInFragmentStage) == 160);
// WGPUSupportedFeatures
static_assert(sizeof(WGPUSupportedFeatures) == 16 && alignof(WGPUSupportedFeatures) == 8);
static_assert(offsetof(WGPUSupportedFeatures, featureCount) == 0);
static_assert(offsetof(WGPUSupportedFeatures, features) == 8);
// WGPUQueueDescriptor
static_assert(sizeof(WGPUQueueDescriptor) == 24 && alignof(WGPUQueueDescriptor) == 8);
static_assert(offsetof(WGPUQueueDescriptor, nextInChain) == 0);
static_assert(offsetof(WGPUQueueDescriptor, label) == 8);
// WGPUDeviceLostCallbackInfo
static_assert(sizeof(WGPUDeviceLostCallbackInfo) == 40 && alignof(WGPUDeviceLostCallbackInfo) == 8);
static_assert(offsetof(WGPUDeviceLostCallbackInfo, nextInChain) == 0);
static_assert(offsetof(WGPUDeviceLostCallbackInfo, mode) == 8);
static_assert(offsetof(WGPUDeviceLostCallbackInfo, callback) == 16);
static_assert(offsetof(WGPUDeviceLostCallbackInfo, userdata1) == 24);
static_assert(offsetof(WGPUDeviceLostCallbackInfo, userdata2) == 32);
// WGPUUncapturedErrorCallbackInfo
static_assert(sizeof(WGPUUncapturedErrorCallbackInfo) == 32 && alignof(WGPUUncapturedErrorCallbackInfo) == 8);
static_assert(offsetof(WGPUUncapturedErrorCallbackInfo, nextInChain) == 0);
static_assert(offsetof(WGPUUncapturedErrorCallbackInfo, callback) == 8);
static_assert(offsetof(WGPUUncapturedErrorCallbackInfo, userdata1) == 16);
static_assert(offsetof(WGPUUncapturedErrorCallbackInfo, userdata2) == 24);
// WGPULoggingCallbackInfo
static_assert(sizeof(WGPULoggingCallbackInfo) == 32 && alignof(WGPULoggingCallbackInfo) == 8);
static_assert(offsetof(WGPULoggingCallbackInfo, nextInChain) == 0);
static_assert(offsetof(WGPULoggingCallbackInfo, callback) == 8);
static_assert(offsetof(WGPULoggingCallbackInfo, userdata1) == 16);
static_assert(offsetof(WGPULoggingCallbackInfo, userdata2) == 24);
// WGPUDeviceDescriptor
static_assert(sizeof(WGPUDeviceDescriptor) == 144 && alignof(WGPUDeviceDescriptor) == 8);
static_assert(offsetof(WGPUDeviceDescriptor, nextInChain) == 0);
static_assert(offsetof(WGPUDeviceDescriptor, label) == 8);
static_assert(offsetof(WGPUDeviceDescriptor, requiredFeatureCount) == 24);
static_assert(offsetof(WGPUDeviceDescriptor, requiredFeatures) == 32);
static_assert(offsetof(WGPUDeviceDescriptor, requiredLimits) == 40);
static_assert(offsetof(WGPUDeviceDescriptor, defaultQueue) == 48);
static_assert(offsetof(WGPUDeviceDescriptor, deviceLostCallbackInfo) == 72);
static_assert(offsetof(WGPUDeviceDescriptor, uncapturedErrorCallbackInfo) == 112);
// WGPUBufferDescriptor
static_assert(sizeof(WGPUBufferDescriptor) == 48 && alignof(WGPUBufferDescriptor) == 8);
static_assert(offsetof(WGPUBufferDescriptor, nextInChain) == 0);
static_assert(offsetof(WGPUBufferDescriptor, label) == 8);
static_assert(offsetof(WGPUBufferDescriptor, usage) == 24);
static_assert(offsetof(WGPUBufferDescriptor, size) == 32);
static_assert(offsetof(WGPUBufferDescriptor, mappedAtCreation) == 40);
// WGPUShaderModuleDescriptor
static_assert(sizeof(WGPUShaderModuleDescriptor) == 24 && alignof(WGPUShaderModuleDescriptor) == 8);
static_assert(offsetof(WGPUShaderModuleDescriptor, nextInChain) == 0);
static_assert(offsetof(WGPUShaderModuleDescriptor, label) == 8);
// WGPUShaderSourceWGSL
static_assert(sizeof(WGPUShaderSourceWGSL) == 32 && alignof(WGPUShaderSourceWGSL) == 8);
static_assert(offsetof(WGPUShaderSourceWGSL, chain) == 0);
static_assert(offsetof(WGPUShaderSourceWGSL, code) == 16);
// WGPUCompilationMessage
static_assert(sizeof(WGPUCompilationMessage) == 64 && alignof(WGPUCompilationMessage) == 8);
static_assert(offsetof(WGPUCompilationMessage, nextInChain) == 0);
static_assert(offsetof(WGPUCompilationMessage, message) == 8);
static_assert(offsetof(WGPUCompilationMessage, type) == 24);
static_assert(offsetof(WGPUCompilationMessage, lineNum) == 32);
static_assert(offsetof(WGPUCompilationMessage, linePos) == 40);
static_assert(offsetof(WGPUCompilationMessage, offset) == 48);
static_assert(offsetof(WGPUCompilationMessage, length) == 56);
// WGPUCompilationInfo
static_assert(sizeof(WGPUCompilationInfo) == 24 && alignof(WGPUCompilationInfo) == 8);
static_assert(offsetof(WGPUCompilationInfo, nextInChain) == 0);
static_assert(offsetof(WGPUCompilationInfo, messageCount) == 8);
static_assert(offsetof(WGPUCompilationInfo, messages) == 16);
// WGPUConstantEntry
static_assert(sizeof(WGPUConstantEntry) == 32 && alignof(WGPUConstantEntry) == 8);
static_assert(offsetof(WGPUConstantEntry, nextInChain) == 0);
static_assert(offsetof(WGPUConstantEntry, key) == 8);
static_assert(offsetof(WGPUConstantEntry, value) == 24);
// WGPUComputeState
static_assert(sizeof(WGPUComputeState) == 48 && alignof(WGPUComputeState) == 8);
static_assert(offsetof(WGPUComputeState, nextInChain) == 0);
static_assert(offsetof(WGPUComputeState, module) == 8);
static_assert(offsetof(WGPUComputeState, entryPoint) == 16);
static_assert(offsetof(WGPUComputeState, constantCount) == 32);
static_assert(offsetof(WGPUComputeState, constants) == 40);
// WGPUComputePipelineDescriptor
static_assert(sizeof(WGPUComputePipelineDescriptor) == 80 && alignof(WGPUComputePipelineDescriptor) == 8);
static_assert(offsetof(WGPUComputePipelineDescriptor, nextInChain) == 0);
static_assert(offsetof(WGPUComputePipelineDescriptor, label) == 8);
static_assert(offsetof(WGPUComputePipelineDescriptor, layout) == 24);
static_assert(offsetof(WGPUComputePipelineDescriptor, compute) == 32);
// WGPUBufferBindingLayout
static_assert(sizeof(WGPUBufferBindingLayout) == 24 && alignof(WGPUBufferBindingLayout) == 8);
static_assert(offsetof(WGPUBufferBindingLayout, nextInChain) == 0);
static_assert(offsetof(WGPUBufferBindingLayout, type) == 8);
static_assert(offsetof(WGPUBufferBindingLayout, hasDynamicOffset) == 12);
static_assert(offsetof(WGPUBufferBindingLayout, minBindingSize) == 16);
// WGPUSamplerBindingLayout
static_assert(sizeof(WGPUSamplerBindingLayout) == 16 && alignof(WGPUSamplerBindingLayout) == 8);
static_assert(offsetof(WGPUSamplerBindingLayout, nextInChain) == 0);
static_assert(offsetof(WGPUSamplerBindingLayout, type) == 8);
// WGPUTextureBindingLayout
static_assert(sizeof(WGPUTextureBindingLayout) == 24 && alignof(WGPUTextureBindingLayout) == 8);
static_assert(offsetof(WGPUTextureBindingLayout, nextInChain) == 0);
static_assert(offsetof(WGPUTextureBindingLayout, sampleType) == 8);
static_assert(offsetof(WGPUTextureBindingLayout, viewDimension) == 12);
static_assert(offsetof(WGPUTextureBindingLayout, multisampled) == 16);
// WGPUStorageTextureBindingLayout
static_assert(sizeof(WGPUStorageTextureBindingLayout) == 24 && alignof(WGPUStorageTextureBindingLayout) == 8);
static_assert(offsetof(WGPUStorageTextureBindingLayout, nextInChain) == 0);
static_assert(offsetof(WGPUStorageTextureBindingLayout, access) == 8);
static_assert(offsetof(WGPUStorageTextureBindingLayout, format) == 12);
static_assert(offsetof(WGPUStorageTextureBindingLayout, viewDimension) == 16);
// WGPUBindGroupLayoutEntry
static_assert(sizeof(WGPUBindGroupLayoutEntry) == 112 && alignof(WGPUBindGroupLayoutEntry) == 8);
static_assert(offsetof(WGPUBindGroupLayoutEntry, nextInChain) == 0);
static_assert(offsetof(WGPUBindGroupLayoutEntry, binding) == 8);
static_assert(offsetof(WGPUBindGroupLayoutEntry, visibility) == 16);
static_assert(offsetof(WGPUBindGroupLayoutEntry, buffer) == 24);
static_assert(offsetof(WGPUBindGroupLayoutEntry, sampler) == 48);
static_assert(offsetof(WGPUBindGroupLayoutEntry, texture) == 64);
static_assert(offsetof(WGPUBindGroupLayoutEntry, storageTexture) == 88);
// WGPUBindGroupLayoutDescriptor
static_assert(sizeof(WGPUBindGroupLayoutDescriptor) == 40 && alignof(WGPUBindGroupLayoutDescriptor) == 8);
static_assert(offsetof(WGPUBindGroupLayoutDescriptor, nextInChain) == 0);
static_assert(offsetof(WGPUBindGroupLayoutDescriptor, label) == 8);
static_assert(offsetof(WGPUBindGroupLayoutDescriptor, entryCount) == 24);
static_assert(offsetof(WGPUBindGroupLayoutDescriptor, entries) == 32);
// WGPUPipelineLayoutDescriptor
static_assert(sizeof(WGPUPipelineLayoutDescriptor) == 48 && alignof(WGPUPipelineLayoutDescriptor) == 8);
static_assert(offsetof(WGPUPipelineLayoutDescriptor, nextInChain) == 0);
static_assert(offsetof(WGPUPipelineLayoutDescriptor, label) == 8);
static_assert(offsetof(WGPUPipelineLayoutDescriptor, bindGroupLayoutCount) == 24);
static_assert(offsetof(WGPUPipelineLayoutDescriptor, bindGroupLayouts) == 32);
static_assert(offsetof(WGPUPipelineLayoutDescriptor, immediateDataRangeByteSize) == 40);
// WGPUBindGroupEntry
static_assert(sizeof(WGPUBindGroupEntry) == 56 && alignof(WGPUBindGroupEntry) == 8);
static_assert(offsetof(WGPUBindGroupEntry, nextInChain) == 0);
static_assert(offsetof(WGPUBindGroupEntry, binding) == 8);
static_assert(offsetof(WGPUBindGroupEntry, buffer) == 16);
static_assert(offsetof(WGPUBindGroupEntry, offset) == 24);
static_assert(offsetof(WGPUBindGroupEntry, size) == 32);
static_assert(offsetof(WGPUBindGroupEntry, sampler) == 40);
static_assert(offsetof(WGPUBindGroupEntry, textureView) == 48);
// WGPUBindGroupDescriptor
static_assert(sizeof(WGPUBindGroupDescriptor) == 48 && alignof(WGPUBindGroupDescriptor) == 8);
static_assert(offsetof(WGPUBindGroupDescriptor, nextInChain) == 0);
static_assert(offsetof(WGPUBindGroupDescriptor, label) == 8);
static_assert(offsetof(WGPUBindGroupDescriptor, layout) == 24);
static_assert(offsetof(WGPUBindGroupDescriptor, entryCount) == 32);
static_assert(offsetof(WGPUBindGroupDescriptor, entries) == 40);
// WGPUCommandEncoderDescriptor
static_assert(sizeof(WGPUCommandEncoderDescriptor) == 24 && alignof(WGPUCommandEncoderDescriptor) == 8);
static_assert(offsetof(WGPUCommandEncoderDescriptor, nextInChain) == 0);
static_assert(offsetof(WGPUCommandEncoderDescriptor, label) == 8);
// WGPUPassTimestampWrites
static_assert(sizeof(WGPUPassTimestampWrites) == 24 && alignof(WGPUPassTimestampWrites) == 8);
static_assert(offsetof(WGPUPassTimestampWrites, nextInChain) == 0);
static_assert(offsetof(WGPUPassTimestampWrites, querySet) == 8);
static_assert(offsetof(WGPUPassTimestampWrites, beginningOfPassWriteIndex) == 16);
static_assert(offsetof(WGPUPassTimestampWrites, endOfPassWriteIndex) == 20);
// WGPUComputePassDescriptor
static_assert(sizeof(WGPUComputePassDescriptor) == 32 && alignof(WGPUComputePassDescriptor) == 8);
static_assert(offsetof(WGPUComputePassDescriptor, nextInChain) == 0);
static_assert(offsetof(WGPUComputePassDescriptor, label) == 8);
static_assert(offsetof(WGPUComputePassDescriptor, timestampWrites) == 24);
// WGPUCommandBufferDescriptor
static_assert(sizeof(WGPUCommandBufferDescriptor) == 24 && alignof(WGPUCommandBufferDescriptor) == 8);
static_assert(offsetof(WGPUCommandBufferDescriptor, nextInChain) == 0);
static_assert(offsetof(WGPUCommandBufferDescriptor, label) == 8);
// WGPUQuerySetDescriptor
static_assert(sizeof(WGPUQuerySetDescriptor) == 32 && alignof(WGPUQuerySetDescriptor) == 8);
static_assert(offsetof(WGPUQuerySetDescriptor, nextInChain) == 0);
static_assert(offsetof(WGPUQuerySetDescriptor, label) == 8);
static_assert(offsetof(WGPUQuerySetDescriptor, type) == 24);
static_assert(offsetof(WGPUQuerySetDescriptor, count) == 28);
// WGPUQueueWorkDoneCallbackInfo
static_assert(sizeof(WGPUQueueWorkDoneCallbackInfo) == 40 && alignof(WGPUQueueWorkDoneCallbackInfo) == 8);
static_assert(offsetof(WGPUQueueWorkDoneCallbackInfo, nextInChain) == 0);
static_assert(offsetof(WGPUQueueWorkDoneCallbackInfo, mode) == 8);
static_assert(offsetof(WGPUQueueWorkDoneCallbackInfo, callback) == 16);
static_assert(offsetof(WGPUQueueWorkDoneCallbackInfo, userdata1) == 24);
static_assert(offsetof(WGPUQueueWorkDoneCallbackInfo, userdata2) == 32);
// WGPUBufferMapCallbackInfo
static_assert(sizeof(WGPUBufferMapCallbackInfo) == 40 && alignof(WGPUBufferMapCallbackInfo) == 8);
static_assert(offsetof(WGPUBufferMapCallbackInfo, nextInChain) == 0);
static_assert(offsetof(WGPUBufferMapCallbackInfo, mode) == 8);
static_assert(offsetof(WGPUBufferMapCallbackInfo, callback) == 16);
static_assert(offsetof(WGPUBufferMapCallbackInfo, userdata1) == 24);
static_assert(offsetof(WGPUBufferMapCallbackInfo, userdata2) == 32);
// WGPUPopErrorScopeCallbackInfo
static_assert(sizeof(WGPUPopErrorScopeCallbackInfo) == 40 && alignof(WGPUPopErrorScopeCallbackInfo) == 8);
static_assert(offsetof(WGPUPopErrorScopeCallbackInfo, nextInChain) == 0);
static_assert(offsetof(WGPUPopErrorScopeCallbackInfo, mode) == 8);
static_assert(offsetof(WGPUPopErrorScopeCallbackInfo, callback) == 16);
static_assert(offsetof(WGPUPopErrorScopeCallbackInfo, userdata1) == 24);
static_assert(offsetof(WGPUPopErrorScopeCallbackInfo, userdata2) == 32);
// WGPUCompilationInfoCallbackInfo
static_assert(sizeof(WGPUCompilationInfoCallbackInfo) == 40 && alignof(WGPUCompilationInfoCallbackInfo) == 8);
static_assert(offsetof(WGPUCompilationInfoCallbackInfo, nextInChain) == 0);
static_assert(offsetof(WGPUCompilationInfoCallbackInfo, mode) == 8);
static_assert(offsetof(WGPUCompilationInfoCallbackInfo, callback) == 16);
static_assert(offsetof(WGPUCompilationInfoCallbackInfo, userdata1) == 24);
static_assert(offsetof(WGPUCompilationInfoCallbackInfo, userdata2) == 32);
// WGPUDawnTogglesDescriptor
static_assert(sizeof(WGPUDawnTogglesDescriptor) == 48 && alignof(WGPUDawnTogglesDescriptor) == 8);
static_assert(offsetof(WGPUDawnTogglesDescriptor, chain) == 0);
static_assert(offsetof(WGPUDawnTogglesDescriptor, enabledToggleCount) == 16);
static_assert(offsetof(WGPUDawnTogglesDescriptor, enabledToggles) == 24);
static_assert(offsetof(WGPUDawnTogglesDescriptor, disabledToggleCount) == 32);
static_assert(offsetof(WGPUDawnTogglesDescriptor, disabledToggles) == 40);
