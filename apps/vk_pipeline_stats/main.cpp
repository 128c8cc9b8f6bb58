// What the Vulkan driver made of a compute shader: registers, local memory (spills), shared memory,
// binary size, as the driver reports them through VK_KHR_pipeline_executable_properties.
// WebGPU shows none of this, and Dawn compiles through Vulkan, so this tool builds a pipeline from
// the SPIR-V that Dawn generated (`wgfuse generate --dump-shaders --verbose`, split and assembled
// by bench/baselines/vk_pipeline_stats.py) and prints the driver's statistics for it. A
// measurement tool of the GPU machine (built, not packaged); NVIDIA's driver offers the
// statistics, SwiftShader does not.
//
//   vk_pipeline_stats [--device N] [--no-robust] [--ir] FILE.spv...   one JSON object per line and file
//
// --ir also asks for the driver's internal representations of each pipeline (what it offers, if
// anything: names and sizes in the JSON, the text in FILE.spv.ir<k>.txt).
//
// The pipeline layout is read from the module itself: every descriptor it declares (set, binding,
// storage or uniform buffer) and a push-constant range if it has one. robustBufferAccess is enabled
// as Dawn enables it (--no-robust: off, as with Dawn's disable_robustness toggle).
#include <vulkan/vulkan.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

constexpr const char* kUsage = "usage: vk_pipeline_stats [--device N] [--no-robust] [--ir] FILE.spv...";

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "vk_pipeline_stats: %s\n", what.c_str());
  std::exit(1);
}

void check(VkResult r, const char* what) {
  if (r != VK_SUCCESS) fail(std::string(what) + " failed: VkResult " + std::to_string(int(r)));
}

struct Module {
  std::vector<uint32_t> words;
  std::string entry;
  // (set, binding) -> descriptor type
  std::map<std::pair<uint32_t, uint32_t>, VkDescriptorType> bindings;
  bool push_constants = false;
};

// The entry point and the resource interface of a SPIR-V module (SPIR-V spec, section 2.3: a
// 5-word header, then instructions of word count << 16 | opcode).
Module parse(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path + ": cannot open");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 20 || bytes.size() % 4) fail(path + ": not a SPIR-V binary (size)");
  Module m;
  m.words.resize(bytes.size() / 4);
  std::memcpy(m.words.data(), bytes.data(), bytes.size());
  if (m.words[0] != 0x07230203u) fail(path + ": not a SPIR-V binary (magic)");
  constexpr uint32_t kOpEntryPoint = 15, kOpTypePointer = 32, kOpVariable = 59, kOpDecorate = 71;
  constexpr uint32_t kDecBufferBlock = 3, kDecBinding = 33, kDecSet = 34;
  constexpr uint32_t kUniform = 2, kPushConstant = 9, kStorageBuffer = 12;
  std::map<uint32_t, uint32_t> set_of, binding_of, pointer_class, pointee, var_type, var_class;
  std::set<uint32_t> buffer_block;
  for (size_t i = 5; i < m.words.size();) {
    const uint32_t n = m.words[i] >> 16, op = m.words[i] & 0xffffu;
    if (n == 0 || i + n > m.words.size()) fail(path + ": malformed instruction at word " + std::to_string(i));
    const uint32_t* w = &m.words[i];
    if (op == kOpEntryPoint && m.entry.empty() && n > 3) {  // the name: a NUL-ended string in words 3..
      const char* name = reinterpret_cast<const char*>(&w[3]);
      m.entry.assign(name, strnlen(name, 4 * (n - 3)));
    }
    if (op == kOpDecorate && n >= 3) {
      if (w[2] == kDecSet && n >= 4) set_of[w[1]] = w[3];
      if (w[2] == kDecBinding && n >= 4) binding_of[w[1]] = w[3];
      if (w[2] == kDecBufferBlock) buffer_block.insert(w[1]);
    }
    if (op == kOpTypePointer && n >= 4) {
      pointer_class[w[1]] = w[2];
      pointee[w[1]] = w[3];
    }
    if (op == kOpVariable && n >= 4) {
      var_type[w[2]] = w[1];
      var_class[w[2]] = w[3];
    }
    i += n;
  }
  if (m.entry.empty()) fail(path + ": no entry point");
  for (const auto& [var, cls] : var_class) {
    if (cls == kPushConstant) m.push_constants = true;
    if (cls != kUniform && cls != kStorageBuffer) continue;
    if (!set_of.count(var) || !binding_of.count(var)) continue;
    const bool storage = cls == kStorageBuffer || buffer_block.count(pointee[var_type[var]]);
    m.bindings[{set_of[var], binding_of[var]}] =
        storage ? VK_DESCRIPTOR_TYPE_STORAGE_BUFFER : VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER;
  }
  return m;
}

// Vulkan's two-call enumeration: the count, then the items, each with its sType.
template <typename T, typename Get>
std::vector<T> enumerate(Get get, VkStructureType type, const char* what) {
  uint32_t n = 0;
  check(get(&n, static_cast<T*>(nullptr)), what);
  std::vector<T> items(n, T{type});
  check(get(&n, items.data()), what);
  return items;
}

std::string json_escape(const char* s) {
  std::string out;
  for (; *s; ++s) {
    if (*s == '"' || *s == '\\') out += '\\';
    if (*s == '\n') {
      out += "\\n";
      continue;
    }
    if (static_cast<unsigned char>(*s) >= 0x20) out += *s;
  }
  return out;
}

std::string stat_value(const VkPipelineExecutableStatisticKHR& s) {
  switch (s.format) {
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
      return s.value.b32 ? "true" : "false";
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
      return std::to_string(s.value.i64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
      return std::to_string(s.value.u64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR:
      return std::to_string(s.value.f64);
    default:
      return "null";
  }
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t device_index = 0;
  bool robust = true, ir = false;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) {
      device_index = uint32_t(std::strtoul(argv[++i], nullptr, 10));
    } else if (a == "--no-robust") {
      robust = false;
    } else if (a == "--ir") {
      ir = true;
    } else if (a.rfind("--", 0) == 0) {
      fail("unknown option " + a + " (" + kUsage + ")");
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) fail(kUsage);
  std::vector<Module> modules;
  for (const std::string& path : files) modules.push_back(parse(path));  // bad input fails before the device

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "vk_pipeline_stats";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ici.pApplicationInfo = &app;
  VkInstance instance;
  check(vkCreateInstance(&ici, nullptr, &instance), "vkCreateInstance");
  uint32_t count = 0;
  vkEnumeratePhysicalDevices(instance, &count, nullptr);
  std::vector<VkPhysicalDevice> physical(count);
  vkEnumeratePhysicalDevices(instance, &count, physical.data());
  if (device_index >= count)
    fail("no Vulkan device " + std::to_string(device_index) + " (" + std::to_string(count) + " found)");
  VkPhysicalDevice pd = physical[device_index];
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(pd, &props);

  uint32_t ext_count = 0;
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &ext_count, nullptr);
  std::vector<VkExtensionProperties> exts(ext_count);
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &ext_count, exts.data());
  bool has_stats = false;
  for (const auto& e : exts)
    has_stats |= std::strcmp(e.extensionName, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME) == 0;
  if (!has_stats)
    fail(std::string(props.deviceName) +
         " does not offer " VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);

  uint32_t qf_count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &qf_count, nullptr);
  std::vector<VkQueueFamilyProperties> qfs(qf_count);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &qf_count, qfs.data());
  uint32_t qf = qf_count;
  for (uint32_t i = 0; i < qf_count && qf == qf_count; ++i)
    if (qfs[i].queueFlags & VK_QUEUE_COMPUTE_BIT) qf = i;
  if (qf == qf_count) fail("no compute queue");

  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR fexec{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.pNext = &f11;
  f11.pNext = &f12;
  f12.pNext = &fexec;
  vkGetPhysicalDeviceFeatures2(pd, &f2);  // every feature the device has, as Dawn asks for what it needs
  if (!fexec.pipelineExecutableInfo) fail("pipelineExecutableInfo is not supported");
  f2.features.robustBufferAccess = robust ? f2.features.robustBufferAccess : VK_FALSE;
  float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = qf;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  const char* dev_exts[] = {VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME};
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.pNext = &f2;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = 1;
  dci.ppEnabledExtensionNames = dev_exts;
  VkDevice device;
  check(vkCreateDevice(pd, &dci, nullptr, &device), "vkCreateDevice");
  auto get_props = reinterpret_cast<PFN_vkGetPipelineExecutablePropertiesKHR>(
      vkGetDeviceProcAddr(device, "vkGetPipelineExecutablePropertiesKHR"));
  auto get_stats = reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
      vkGetDeviceProcAddr(device, "vkGetPipelineExecutableStatisticsKHR"));
  auto get_irs = reinterpret_cast<PFN_vkGetPipelineExecutableInternalRepresentationsKHR>(
      vkGetDeviceProcAddr(device, "vkGetPipelineExecutableInternalRepresentationsKHR"));
  if (!get_props || !get_stats || !get_irs) fail("the pipeline executable entry points are missing");

  for (size_t f = 0; f < files.size(); ++f) {
    const std::string& path = files[f];
    const Module& m = modules[f];
    VkShaderModuleCreateInfo smci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    smci.codeSize = m.words.size() * 4;
    smci.pCode = m.words.data();
    VkShaderModule sm;
    check(vkCreateShaderModule(device, &smci, nullptr, &sm), (path + ": vkCreateShaderModule").c_str());
    std::map<uint32_t, std::vector<VkDescriptorSetLayoutBinding>> per_set;
    uint32_t max_set = 0;
    for (const auto& [at, type] : m.bindings) {
      VkDescriptorSetLayoutBinding b{};
      b.binding = at.second;
      b.descriptorType = type;
      b.descriptorCount = 1;
      b.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
      per_set[at.first].push_back(b);
      max_set = std::max(max_set, at.first);
    }
    std::vector<VkDescriptorSetLayout> layouts;
    for (uint32_t s = 0; s <= (m.bindings.empty() ? 0u : max_set); ++s) {
      VkDescriptorSetLayoutCreateInfo lci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
      lci.bindingCount = uint32_t(per_set[s].size());
      lci.pBindings = per_set[s].data();
      VkDescriptorSetLayout l;
      check(vkCreateDescriptorSetLayout(device, &lci, nullptr, &l), "vkCreateDescriptorSetLayout");
      layouts.push_back(l);
    }
    VkPushConstantRange pcr{VK_SHADER_STAGE_COMPUTE_BIT, 0, props.limits.maxPushConstantsSize};
    VkPipelineLayoutCreateInfo plci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    plci.setLayoutCount = uint32_t(layouts.size());
    plci.pSetLayouts = layouts.data();
    plci.pushConstantRangeCount = m.push_constants ? 1 : 0;
    plci.pPushConstantRanges = &pcr;
    VkPipelineLayout pl;
    check(vkCreatePipelineLayout(device, &plci, nullptr, &pl), "vkCreatePipelineLayout");
    VkComputePipelineCreateInfo cpci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    cpci.flags = VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR |
                 (ir ? VK_PIPELINE_CREATE_CAPTURE_INTERNAL_REPRESENTATIONS_BIT_KHR : 0);
    cpci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    cpci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    cpci.stage.module = sm;
    cpci.stage.pName = m.entry.c_str();
    cpci.layout = pl;
    VkPipeline pipeline;
    check(vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &cpci, nullptr, &pipeline),
          (path + ": vkCreateComputePipelines").c_str());
    VkPipelineInfoKHR pi{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
    pi.pipeline = pipeline;
    const auto execs = enumerate<VkPipelineExecutablePropertiesKHR>(
        [&](uint32_t* n, VkPipelineExecutablePropertiesKHR* p) { return get_props(device, &pi, n, p); },
        VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR, "vkGetPipelineExecutablePropertiesKHR");
    for (uint32_t e = 0; e < execs.size(); ++e) {
      VkPipelineExecutableInfoKHR ei{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
      ei.pipeline = pipeline;
      ei.executableIndex = e;
      const auto stats = enumerate<VkPipelineExecutableStatisticKHR>(
          [&](uint32_t* n, VkPipelineExecutableStatisticKHR* p) { return get_stats(device, &ei, n, p); },
          VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR, "vkGetPipelineExecutableStatisticsKHR");
      std::printf(
          "{\"file\": \"%s\", \"entry\": \"%s\", \"device\": \"%s\", \"robust\": %s, \"executable\": \"%s\", "
          "\"subgroup_size\": %u, \"stats\": {",
          json_escape(path.c_str()).c_str(), json_escape(m.entry.c_str()).c_str(),
          json_escape(props.deviceName).c_str(), robust ? "true" : "false",
          json_escape(execs[e].name).c_str(), execs[e].subgroupSize);
      for (size_t s = 0; s < stats.size(); ++s)
        std::printf("%s\"%s\": %s", s ? ", " : "", json_escape(stats[s].name).c_str(),
                    stat_value(stats[s]).c_str());
      std::printf("}");
      if (ir) {
        auto get = [&](uint32_t* n, VkPipelineExecutableInternalRepresentationKHR* p) {
          return get_irs(device, &ei, n, p);
        };
        auto irs = enumerate<VkPipelineExecutableInternalRepresentationKHR>(
            get, VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INTERNAL_REPRESENTATION_KHR,
            "vkGetPipelineExecutableInternalRepresentationsKHR");
        uint32_t n_ir = uint32_t(irs.size());  // a third call fills the data, sized by the second
        std::vector<std::vector<char>> data(n_ir);
        for (uint32_t k = 0; k < n_ir; ++k) {
          data[k].resize(irs[k].dataSize);
          irs[k].pData = data[k].data();
        }
        check(get(&n_ir, irs.data()), "vkGetPipelineExecutableInternalRepresentationsKHR");
        std::printf(", \"internal\": [");
        for (uint32_t k = 0; k < n_ir; ++k) {
          const std::string out = path + ".ir" + std::to_string(k) + (irs[k].isText ? ".txt" : ".bin");
          std::ofstream(out, std::ios::binary).write(data[k].data(), std::streamsize(data[k].size()));
          std::printf("%s{\"name\": \"%s\", \"text\": %s, \"bytes\": %zu, \"file\": \"%s\"}", k ? ", " : "",
                      json_escape(irs[k].name).c_str(), irs[k].isText ? "true" : "false", irs[k].dataSize,
                      json_escape(out.c_str()).c_str());
        }
        std::printf("]");
      }
      std::printf("}\n");
    }
    vkDestroyPipeline(device, pipeline, nullptr);
    vkDestroyPipelineLayout(device, pl, nullptr);
    for (auto l : layouts) vkDestroyDescriptorSetLayout(device, l, nullptr);
    vkDestroyShaderModule(device, sm, nullptr);
  }
  vkDestroyDevice(device, nullptr);
  vkDestroyInstance(instance, nullptr);
  return 0;
}
