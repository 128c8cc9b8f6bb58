// The WebGPU C API as a table of function pointers loaded with dlopen, so that the library path
// is chosen at run time (WGFUSE_WEBGPU_LIB, default: the npm-installed Dawn beside the binary or
// in node_modules) and a missing or incompatible library is a clear error, not a crash.
#pragma once

#include <string>

#include "webgpu/webgpu_abi.h"

namespace wgfuse::webgpu {

// X(name, return type, parameter list): every wgpu* function wgfuse calls. Signatures are this
// Dawn's (shared/reference/dawn-abi.json).
#define WGFUSE_WEBGPU_FUNCTIONS(X)                                                                        \
  X(CreateInstance, WGPUInstance, (const WGPUInstanceDescriptor*))                                        \
  X(InstanceRequestAdapter, WGPUFuture,                                                                   \
    (WGPUInstance, const WGPURequestAdapterOptions*, WGPURequestAdapterCallbackInfo))                     \
  X(InstanceWaitAny, WGPUWaitStatus, (WGPUInstance, size_t, WGPUFutureWaitInfo*, uint64_t))               \
  X(InstanceProcessEvents, void, (WGPUInstance))                                                          \
  X(InstanceRelease, void, (WGPUInstance))                                                                \
  X(AdapterGetInfo, WGPUStatus, (WGPUAdapter, WGPUAdapterInfo*))                                          \
  X(AdapterGetLimits, WGPUStatus, (WGPUAdapter, WGPULimits*))                                             \
  X(AdapterHasFeature, WGPUBool, (WGPUAdapter, WGPUFeatureName))                                          \
  X(AdapterGetFeatures, void, (WGPUAdapter, WGPUSupportedFeatures*))                                      \
  X(AdapterInfoFreeMembers, void, (WGPUAdapterInfo))                                                      \
  X(SupportedFeaturesFreeMembers, void, (WGPUSupportedFeatures))                                          \
  X(AdapterRequestDevice, WGPUFuture,                                                                     \
    (WGPUAdapter, const WGPUDeviceDescriptor*, WGPURequestDeviceCallbackInfo))                            \
  X(AdapterRelease, void, (WGPUAdapter))                                                                  \
  X(DeviceCreateBuffer, WGPUBuffer, (WGPUDevice, const WGPUBufferDescriptor*))                            \
  X(DeviceCreateShaderModule, WGPUShaderModule, (WGPUDevice, const WGPUShaderModuleDescriptor*))          \
  X(DeviceCreateComputePipeline, WGPUComputePipeline, (WGPUDevice, const WGPUComputePipelineDescriptor*)) \
  X(DeviceCreateBindGroupLayout, WGPUBindGroupLayout, (WGPUDevice, const WGPUBindGroupLayoutDescriptor*)) \
  X(DeviceCreatePipelineLayout, WGPUPipelineLayout, (WGPUDevice, const WGPUPipelineLayoutDescriptor*))    \
  X(DeviceCreateBindGroup, WGPUBindGroup, (WGPUDevice, const WGPUBindGroupDescriptor*))                   \
  X(DeviceCreateCommandEncoder, WGPUCommandEncoder, (WGPUDevice, const WGPUCommandEncoderDescriptor*))    \
  X(DeviceCreateQuerySet, WGPUQuerySet, (WGPUDevice, const WGPUQuerySetDescriptor*))                      \
  X(DeviceGetQueue, WGPUQueue, (WGPUDevice))                                                              \
  X(DevicePushErrorScope, void, (WGPUDevice, WGPUErrorFilter))                                            \
  X(DevicePopErrorScope, WGPUFuture, (WGPUDevice, WGPUPopErrorScopeCallbackInfo))                         \
  X(DeviceGetLimits, WGPUStatus, (WGPUDevice, WGPULimits*))                                               \
  X(DeviceHasFeature, WGPUBool, (WGPUDevice, WGPUFeatureName))                                            \
  X(DeviceGetAdapterInfo, WGPUStatus, (WGPUDevice, WGPUAdapterInfo*))                                     \
  X(DeviceSetLoggingCallback, void, (WGPUDevice, WGPULoggingCallbackInfo))                                \
  X(DeviceDestroy, void, (WGPUDevice))                                                                    \
  X(DeviceRelease, void, (WGPUDevice))                                                                    \
  X(ShaderModuleGetCompilationInfo, WGPUFuture, (WGPUShaderModule, WGPUCompilationInfoCallbackInfo))      \
  X(ShaderModuleRelease, void, (WGPUShaderModule))                                                        \
  X(ComputePipelineGetBindGroupLayout, WGPUBindGroupLayout, (WGPUComputePipeline, uint32_t))              \
  X(ComputePipelineRelease, void, (WGPUComputePipeline))                                                  \
  X(BindGroupLayoutRelease, void, (WGPUBindGroupLayout))                                                  \
  X(PipelineLayoutRelease, void, (WGPUPipelineLayout))                                                    \
  X(BindGroupRelease, void, (WGPUBindGroup))                                                              \
  X(CommandEncoderBeginComputePass, WGPUComputePassEncoder,                                               \
    (WGPUCommandEncoder, const WGPUComputePassDescriptor*))                                               \
  X(CommandEncoderCopyBufferToBuffer, void,                                                               \
    (WGPUCommandEncoder, WGPUBuffer, uint64_t, WGPUBuffer, uint64_t, uint64_t))                           \
  X(CommandEncoderResolveQuerySet, void,                                                                  \
    (WGPUCommandEncoder, WGPUQuerySet, uint32_t, uint32_t, WGPUBuffer, uint64_t))                         \
  X(CommandEncoderFinish, WGPUCommandBuffer, (WGPUCommandEncoder, const WGPUCommandBufferDescriptor*))    \
  X(CommandEncoderRelease, void, (WGPUCommandEncoder))                                                    \
  X(ComputePassEncoderSetPipeline, void, (WGPUComputePassEncoder, WGPUComputePipeline))                   \
  X(ComputePassEncoderSetBindGroup, void,                                                                 \
    (WGPUComputePassEncoder, uint32_t, WGPUBindGroup, size_t, const uint32_t*))                           \
  X(ComputePassEncoderDispatchWorkgroups, void, (WGPUComputePassEncoder, uint32_t, uint32_t, uint32_t))   \
  X(ComputePassEncoderEnd, void, (WGPUComputePassEncoder))                                                \
  X(ComputePassEncoderRelease, void, (WGPUComputePassEncoder))                                            \
  X(CommandBufferRelease, void, (WGPUCommandBuffer))                                                      \
  X(QueueSubmit, void, (WGPUQueue, size_t, const WGPUCommandBuffer*))                                     \
  X(QueueWriteBuffer, void, (WGPUQueue, WGPUBuffer, uint64_t, const void*, size_t))                       \
  X(QueueOnSubmittedWorkDone, WGPUFuture, (WGPUQueue, WGPUQueueWorkDoneCallbackInfo))                     \
  X(QueueRelease, void, (WGPUQueue))                                                                      \
  X(BufferMapAsync, WGPUFuture, (WGPUBuffer, WGPUMapMode, size_t, size_t, WGPUBufferMapCallbackInfo))     \
  X(BufferGetConstMappedRange, const void*, (WGPUBuffer, size_t, size_t))                                 \
  X(BufferGetMappedRange, void*, (WGPUBuffer, size_t, size_t))                                            \
  X(BufferUnmap, void, (WGPUBuffer))                                                                      \
  X(BufferDestroy, void, (WGPUBuffer))                                                                    \
  X(BufferRelease, void, (WGPUBuffer))                                                                    \
  X(QuerySetDestroy, void, (WGPUQuerySet))                                                                \
  X(QuerySetRelease, void, (WGPUQuerySet))

struct Api {
#define WGFUSE_DECLARE(name, ret, params) ret(*name) params = nullptr;
  WGFUSE_WEBGPU_FUNCTIONS(WGFUSE_DECLARE)
#undef WGFUSE_DECLARE
  std::string path;  // the library these pointers came from
};

// The process-wide table, loaded on first use. Throws wgfuse::Error naming the path tried and
// every missing symbol when the library cannot be used.
const Api& api();

// Where the library is looked for, in order (for messages and `wgfuse info`).
std::string library_path();

}  // namespace wgfuse::webgpu
