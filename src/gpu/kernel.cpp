#include <cstdio>
#include <functional>
#include <sstream>

#include "gpu/context.h"
#include "gpu/context_state.h"
#include "util/error.h"
#include "webgpu/strings.h"

namespace wgfuse::gpu {
namespace {

using webgpu::api;
using webgpu::Handle;

using webgpu::str;
using webgpu::sv;

// The WGSL compiler's errors for `module`, as "name:line:column: message" lines; empty if none.
std::string compilation_errors(Context& ctx, WGPUShaderModule module, const std::string& name) {
  std::string errors;
  struct Out {
    std::string* errors;
    const std::string* name;
  } out{&errors, &name};
  WGPUCompilationInfoCallbackInfo cb{};
  cb.mode = WGPUCallbackMode_WaitAnyOnly;
  cb.callback = [](WGPUCompilationInfoRequestStatus, const WGPUCompilationInfo* info, void* ud1, void*) {
    auto* o = static_cast<Out*>(ud1);
    if (!info) return;
    for (size_t k = 0; k < info->messageCount; ++k) {
      const auto& m = info->messages[k];
      if (m.type != WGPUCompilationMessageType_Error) continue;
      *o->errors += "kernel '" + *o->name + "': WGSL error at line " + std::to_string(m.lineNum) +
                    ", column " + std::to_string(m.linePos) + ": " + str(m.message) + "\n";
    }
  };
  cb.userdata1 = &out;
  ctx.wait_future(api().ShaderModuleGetCompilationInfo(module, cb), "WGSL compilation info");
  return errors;
}

}  // namespace

std::string KernelKey::label() const {
  std::ostringstream os;
  os << name << ':' << entry;
  if (!overrides.empty()) {
    os << '{';
    bool first = true;
    for (auto& [k, v] : overrides) {
      os << (first ? "" : ",") << k << '=' << v;
      first = false;
    }
    os << '}';
  }
  if (enable_f16) os << "[f16]";
  return os.str();
}

KernelDesc embedded_kernel(std::string_view family, std::string entry,
                           std::map<std::string, double> overrides) {
  return {std::string(family), std::string(kernel_source(family)), std::move(entry), std::move(overrides)};
}

size_t Context::kernels_compiled() const {
  return s_->kernels.size();
}

Kernel& Context::kernel(const KernelDesc& desc) {
  KernelKey key{desc.name, desc.entry, desc.overrides, std::hash<std::string>{}(desc.source),
                desc.enable_f16};
  auto& cache = s_->kernels;
  if (auto it = cache.find(key); it != cache.end()) return *it->second;
  if (desc.enable_f16 && !features().shader_f16)
    throw Error("kernel '" + key.label() + "' asks for f16 arithmetic (enable f16;), but the adapter '" +
                adapter().device + "' does not offer the shader-f16 feature; keep f16 data packed in u32 " +
                "(unpack2x16float) instead");
  // With the directive the compiler's line numbers count one line more than the file's.
  const std::string source = desc.enable_f16 ? "enable f16;\n" + desc.source : desc.source;

  const std::string label = key.label();
  if (s_->dump_shaders) std::fprintf(stderr, "wgfuse: compiling kernel '%s'\n", label.c_str());
  WGPUDevice device = raw_device();
  Handle<WGPUShaderModule> module;
  Handle<WGPUComputePipeline> pipeline;
  Handle<WGPUBindGroupLayout> layout;
  std::string wgsl_errors;
  try {
    scoped("compiling kernel '" + label + "'", [&] {
      WGPUShaderSourceWGSL src{};
      src.chain.sType = WGPUSType_ShaderSourceWGSL;
      src.code = sv(source);
      WGPUShaderModuleDescriptor md{};
      md.nextInChain = &src.chain;
      md.label = sv(label);
      module = Handle<WGPUShaderModule>(api().DeviceCreateShaderModule(device, &md));
      wgsl_errors = compilation_errors(*this, module.get(), desc.name);
      if (!wgsl_errors.empty()) return;
      std::vector<WGPUConstantEntry> constants;
      for (auto& [k, v] : desc.overrides) {
        WGPUConstantEntry e{};
        e.key = sv(k);
        e.value = v;
        constants.push_back(e);
      }
      WGPUComputePipelineDescriptor pd{};
      pd.label = sv(label);
      pd.layout = nullptr;  // "auto": derived from the shader
      pd.compute.module = module.get();
      pd.compute.entryPoint = sv(desc.entry);
      pd.compute.constantCount = constants.size();
      pd.compute.constants = constants.data();
      pipeline = Handle<WGPUComputePipeline>(api().DeviceCreateComputePipeline(device, &pd));
      layout = Handle<WGPUBindGroupLayout>(api().ComputePipelineGetBindGroupLayout(pipeline.get(), 0));
    });
  } catch (const Error& e) {
    // The compiler's own line and column say more than the scope's summary.
    if (!wgsl_errors.empty()) throw Error(wgsl_errors.substr(0, wgsl_errors.size() - 1));
    throw;
  }
  if (!wgsl_errors.empty()) throw Error(wgsl_errors.substr(0, wgsl_errors.size() - 1));
  auto k = std::make_unique<Kernel>(key, std::move(pipeline), std::move(layout));
  return *cache.emplace(std::move(key), std::move(k)).first->second;
}

}  // namespace wgfuse::gpu
