// Kernel: WGSL source + entry point + override constants -> a compute pipeline, compiled once
// and cached in the Context under its KernelKey.
//
// WGPU types in this header: Kernel's constructor and raw_pipeline()/raw_layout(), for src/gpu
// and the raw-API arm of the benchmark.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "webgpu/handle.h"

namespace wgfuse::gpu {

struct KernelDesc {
  std::string name;    // for messages and labels, e.g. "elementwise.scale"
  std::string source;  // WGSL
  std::string entry = "main";
  std::map<std::string, double> overrides;  // WGSL `override` constants
  // Prepends `enable f16;` for f16 arithmetic in WGSL. Only where the adapter offers shader-f16
  // (the pinned Dawn offers it neither on SwiftShader nor on the H100, and browsers may not):
  // off by default, and the kernels of wgfuse keep f16 data packed in u32 instead.
  bool enable_f16 = false;
};

// The cache key: what makes two pipelines differ.
struct KernelKey {
  std::string name, entry;
  std::map<std::string, double> overrides;
  size_t source_hash;
  bool enable_f16 = false;
  auto operator<=>(const KernelKey&) const = default;
  std::string label() const;  // "name:entry{k=v,...}"
};

class Kernel {
 public:
  Kernel(KernelKey key, webgpu::Handle<WGPUComputePipeline> pipeline,
         webgpu::Handle<WGPUBindGroupLayout> layout)
      : key_(std::move(key)), pipeline_(std::move(pipeline)), layout_(std::move(layout)) {}
  const KernelKey& key() const { return key_; }
  WGPUComputePipeline raw_pipeline() const { return pipeline_.get(); }
  WGPUBindGroupLayout raw_layout() const { return layout_.get(); }

 private:
  KernelKey key_;
  webgpu::Handle<WGPUComputePipeline> pipeline_;
  webgpu::Handle<WGPUBindGroupLayout> layout_;
};

// The WGSL of a kernel family embedded from kernels/NAME.wgsl at build time. Throws Error
// listing the known families when `family` is unknown.
std::string_view kernel_source(std::string_view family);
// Every embedded family (includes expanded), in name order: what `wgfuse serve` hands the
// browser, so that native and browser runs compile the same text.
struct KernelFamily {
  std::string_view name, source;
};
std::vector<KernelFamily> embedded_kernel_families();
// The description of entry point `entry` of embedded family `family`.
KernelDesc embedded_kernel(std::string_view family, std::string entry,
                           std::map<std::string, double> overrides = {});

}  // namespace wgfuse::gpu
