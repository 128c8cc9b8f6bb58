// The struct layouts we declared must match the library's: the static_asserts in webgpu_abi.h
// check them against the measured facts; these tests check the library itself agrees, by letting
// it write into our structs with guard bytes behind them and reading back sane values.
#include <cstring>

#include "support.h"
#include "webgpu/api.h"
#include "webgpu/strings.h"

namespace wgfuse {
namespace {

using webgpu::api;

constexpr unsigned char kGuard = 0xA5;
constexpr size_t kGuardBytes = 64;

template <typename T>
struct Guarded {
  Guarded() {
    std::memset(this, 0, sizeof(T));
    std::memset(guard, kGuard, kGuardBytes);
  }
  T value;
  unsigned char guard[kGuardBytes];
  bool intact() const {
    for (auto b : guard)
      if (b != kGuard) return false;
    return true;
  }
};

// Test that wgpuAdapterGetLimits and wgpuDeviceGetLimits write exactly sizeof(WGPULimits) = 168
// bytes, and that what they write is sane (the WebGPU spec's minimum limits).
TEST(Abi, LimitsFitAndAreSane) {
  auto& ctx = test::context();
  for (int which = 0; which < 2; ++which) {
    Guarded<WGPULimits> g;
    auto st = which == 0 ? api().AdapterGetLimits(ctx.raw_adapter(), &g.value)
                         : api().DeviceGetLimits(ctx.raw_device(), &g.value);
    ASSERT_EQ(st, WGPUStatus_Success);
    EXPECT_TRUE(g.intact()) << "the library wrote past the end of WGPULimits";
    const auto& l = g.value;
    EXPECT_GE(l.maxBindGroups, 4u);
    EXPECT_GE(l.maxStorageBuffersPerShaderStage, 8u);
    EXPECT_GE(l.maxComputeWorkgroupSizeX, 256u);
    EXPECT_GE(l.maxComputeInvocationsPerWorkgroup, 256u);
    EXPECT_GE(l.maxComputeWorkgroupsPerDimension, 65535u);
    EXPECT_GE(l.maxStorageBufferBindingSize, 128ull << 20);
    EXPECT_GE(l.maxBufferSize, 256ull << 20);
    EXPECT_GE(l.maxUniformBufferBindingSize, 65536ull);
    EXPECT_GE(l.maxComputeWorkgroupStorageSize, 16384u);
    // Alignments are powers of two no larger than 256.
    for (uint32_t a : {l.minStorageBufferOffsetAlignment, l.minUniformBufferOffsetAlignment}) {
      EXPECT_TRUE(a > 0 && a <= 256 && (a & (a - 1)) == 0) << a;
    }
    EXPECT_GE(l.maxTextureDimension2D, 8192u);
  }
}

// Test that wgpuAdapterGetInfo writes exactly sizeof(WGPUAdapterInfo) = 96 bytes with readable
// strings and enum values in range.
TEST(Abi, AdapterInfoFitsAndIsSane) {
  auto& ctx = test::context();
  Guarded<WGPUAdapterInfo> g;
  ASSERT_EQ(api().AdapterGetInfo(ctx.raw_adapter(), &g.value), WGPUStatus_Success);
  EXPECT_TRUE(g.intact()) << "the library wrote past the end of WGPUAdapterInfo";
  const auto& i = g.value;
  EXPECT_FALSE(webgpu::str(i.device).empty());
  EXPECT_GE(uint32_t(i.backendType), 1u);
  EXPECT_LE(uint32_t(i.backendType), 8u);
  EXPECT_GE(uint32_t(i.adapterType), 1u);
  EXPECT_LE(uint32_t(i.adapterType), 4u);
  if (ctx.features().subgroups) {
    EXPECT_GE(i.subgroupMinSize, 1u);
    EXPECT_LE(i.subgroupMinSize, i.subgroupMaxSize);
    EXPECT_LE(i.subgroupMaxSize, 128u);
  }
  api().AdapterInfoFreeMembers(i);
}

// Test that the feature enum values are this Dawn's: requesting them by our values gives a device
// that has exactly those (a newer header's values would ask for other features).
TEST(Abi, FeatureValuesAreThisDawns) {
  auto& ctx = test::context();
  EXPECT_EQ(bool(api().DeviceHasFeature(ctx.raw_device(), WGPUFeatureName_Subgroups)),
            ctx.features().subgroups);
  EXPECT_EQ(bool(api().DeviceHasFeature(ctx.raw_device(), WGPUFeatureName_TimestampQuery)),
            ctx.features().timestamp_query);
  // SwiftShader and the H100 both offer these two through this Dawn (shared/reference/README.md).
  EXPECT_TRUE(ctx.features().subgroups);
  EXPECT_TRUE(ctx.features().timestamp_query);
}

// Test that a raw compute round trip through the C API alone works, with a validation error scope
// around it that reports nothing.
TEST(Abi, RawComputeRoundTrip) {
  auto& ctx = test::context();
  auto& k = ctx.kernel(gpu::embedded_kernel("dispatch", "step_u32"));
  auto init = test::random_words(129, 21);
  auto buf = ctx.upload<uint32_t>(init, gpu::BufferUsage::StorageIO, "raw");
  auto group = ctx.bind(k, {buf});
  ctx.scoped("raw round trip", [&] {
    WGPUCommandEncoder enc = api().DeviceCreateCommandEncoder(ctx.raw_device(), nullptr);
    WGPUComputePassEncoder pass = api().CommandEncoderBeginComputePass(enc, nullptr);
    api().ComputePassEncoderSetPipeline(pass, k.raw_pipeline());
    api().ComputePassEncoderSetBindGroup(pass, 0, group.raw(), 0, nullptr);
    api().ComputePassEncoderDispatchWorkgroups(pass, 3, 1, 1);
    api().ComputePassEncoderEnd(pass);
    WGPUCommandBuffer cb = api().CommandEncoderFinish(enc, nullptr);
    api().QueueSubmit(ctx.raw_queue(), 1, &cb);
    api().CommandBufferRelease(cb);
    api().ComputePassEncoderRelease(pass);
    api().CommandEncoderRelease(enc);
  });
  auto out = ctx.read_all<uint32_t>(buf);
  for (size_t i = 0; i < init.size(); ++i) ASSERT_EQ(out[i], init[i] * 3u + 1u) << "at " << i;
}

// Test that a library path that does not exist is a clear error naming it (in a child process,
// since the table is loaded once per process).
TEST(Abi, MissingLibraryIsAClearError) {
  auto r = test::run_wgfuse("info", "WGFUSE_WEBGPU_LIB=/nonexistent/libdawn.so");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("/nonexistent/libdawn.so"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("WGFUSE_WEBGPU_LIB"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace wgfuse
