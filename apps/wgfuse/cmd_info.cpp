// wgfuse info: what adapter wgfuse runs on, with which features and limits.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.h"

namespace wgfuse::cli {

nlohmann::json adapter_json(const gpu::Context& ctx) {
  const auto& a = ctx.adapter();
  const auto& f = ctx.features();
  const auto& l = ctx.limits();
  return {
      {"vendor", a.vendor},
      {"architecture", a.architecture},
      {"device", a.device},
      {"description", a.description},
      {"backend", a.backend},
      {"adapter_type", a.adapter_type},
      {"vendor_id", a.vendor_id},
      {"device_id", a.device_id},
      {"subgroup_size", {{"min", a.subgroup_min_size}, {"max", a.subgroup_max_size}}},
      {"fallback_note", a.fallback_note},
      {"features",
       {{"subgroups", f.subgroups},
        {"timestamp_query", f.timestamp_query},
        {"shader_f16", f.shader_f16},
        {"adapter_features", f.all}}},
      {"limits",
       {{"max_buffer_size", l.max_buffer_size},
        {"max_storage_buffer_binding_size", l.max_storage_buffer_binding_size},
        {"max_uniform_buffer_binding_size", l.max_uniform_buffer_binding_size},
        {"max_storage_buffers_per_shader_stage", l.max_storage_buffers_per_shader_stage},
        {"max_compute_invocations_per_workgroup", l.max_compute_invocations_per_workgroup},
        {"max_compute_workgroup_size_x", l.max_compute_workgroup_size_x},
        {"max_compute_workgroup_storage_size", l.max_compute_workgroup_storage_size},
        {"max_compute_workgroups_per_dimension", l.max_compute_workgroups_per_dimension},
        {"min_storage_buffer_offset_alignment", l.min_storage_buffer_offset_alignment},
        {"min_uniform_buffer_offset_alignment", l.min_uniform_buffer_offset_alignment}}},
      {"device_creation_ms", ctx.device_creation_ms()},
      {"webgpu_library", ctx.library_path()},
  };
}

void add_info(CLI::App& app, GlobalOptions& g) {
  auto* cmd = app.add_subcommand("info", "Show the WebGPU adapter, its features and limits");
  static bool as_json = false;
  cmd->add_flag("--json", as_json, "print JSON instead of a table");
  cmd->callback([&g] {
    gpu::Context ctx(g.context_options());
    auto j = adapter_json(ctx);
    j["wgfuse_version"] = WGFUSE_VERSION;
    if (as_json) {
      std::printf("%s\n", j.dump(2).c_str());
      return;
    }
    auto yn = [](bool b) { return b ? "yes" : "no"; };
    const auto& a = ctx.adapter();
    const auto& f = ctx.features();
    const auto& l = ctx.limits();
    std::printf("wgfuse %s\n", WGFUSE_VERSION);
    std::printf("  device          %s\n", a.device.c_str());
    std::printf("  vendor          %s (0x%04x), device id 0x%04x\n", a.vendor.c_str(), a.vendor_id,
                a.device_id);
    std::printf("  architecture    %s\n", a.architecture.empty() ? "-" : a.architecture.c_str());
    std::printf("  backend         %s\n", a.backend.c_str());
    std::printf("  adapter type    %s\n", a.adapter_type.c_str());
    std::printf("  driver          %s\n", a.description.c_str());
    if (!a.fallback_note.empty()) std::printf("  note            %s\n", a.fallback_note.c_str());
    std::printf("  subgroups       %s (size %u..%u)\n", yn(f.subgroups), a.subgroup_min_size,
                a.subgroup_max_size);
    std::printf("  timestamp-query %s\n", yn(f.timestamp_query));
    std::printf("  shader-f16      %s\n", yn(f.shader_f16));
    std::string all;
    for (auto& name : f.all) all += (all.empty() ? "" : " ") + name;
    std::printf("  all features    %s\n", all.c_str());
    std::printf("  limits          maxBufferSize %.1f MiB, maxStorageBufferBindingSize %.1f MiB,\n",
                l.max_buffer_size / 1048576.0, l.max_storage_buffer_binding_size / 1048576.0);
    std::printf("                  maxComputeInvocationsPerWorkgroup %u, maxComputeWorkgroupSizeX %u,\n",
                l.max_compute_invocations_per_workgroup, l.max_compute_workgroup_size_x);
    std::printf(
        "                  maxComputeWorkgroupStorageSize %u B, maxComputeWorkgroupsPerDimension %u,\n",
        l.max_compute_workgroup_storage_size, l.max_compute_workgroups_per_dimension);
    std::printf("                  maxStorageBuffersPerShaderStage %u\n",
                l.max_storage_buffers_per_shader_stage);
    std::printf("  device created  %.1f ms\n", ctx.device_creation_ms());
    std::printf("  library         %s\n", ctx.library_path().c_str());
  });
}

}  // namespace wgfuse::cli
