// The runtime on a real adapter: buffers, kernels, errors, recorder, profiler.
#include <cstring>
#include <thread>

#include "gpu/profiler.h"
#include "gpu/recorder.h"
#include "support.h"
#include "util/error.h"
#include "util/half.h"

namespace wgfuse {
namespace {

using gpu::BufferUsage;
using test::context;

// Test that bytes survive an upload and a read-back, at an odd size and an offset.
TEST(Buffer, RoundTripRandomData) {
  auto& ctx = context();
  auto data = test::random_floats(1237, 7);
  auto buf = ctx.upload<float>(data, BufferUsage::StorageIO, "roundtrip");
  auto back = ctx.read<float>(buf, 0, data.size());
  ASSERT_EQ(back.size(), data.size());
  EXPECT_EQ(0, std::memcmp(back.data(), data.data(), data.size() * 4));
  auto tail = ctx.read<float>(buf, 1000, 237);
  EXPECT_EQ(0, std::memcmp(tail.data(), data.data() + 1000, 237 * 4));
}

// Test that a write into part of a buffer leaves the rest untouched.
TEST(Buffer, PartialWrite) {
  auto& ctx = context();
  auto data = test::random_words(64, 3);
  auto buf = ctx.upload<uint32_t>(data, BufferUsage::StorageIO, "partial");
  uint32_t patch[3] = {11, 22, 33};
  ctx.write(buf, 40, std::as_bytes(std::span(patch)));
  auto back = ctx.read_all<uint32_t>(buf);
  for (size_t i = 0; i < 64; ++i) {
    uint32_t want = (i >= 10 && i < 13) ? patch[i - 10] : data[i];
    ASSERT_EQ(back[i], want) << "at " << i;
  }
}

// Test that misaligned and overrunning reads are refused with a message saying why.
TEST(Buffer, BadAccessIsAClearError) {
  auto& ctx = context();
  auto buf = ctx.buffer(64, BufferUsage::StorageIO, "small");
  try {
    ctx.read_bytes(buf, 2, 8);
    FAIL() << "misaligned read accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("multiples of 4"), std::string::npos) << e.what();
  }
  try {
    ctx.read_bytes(buf, 32, 64);
    FAIL() << "overrun accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("overruns"), std::string::npos) << e.what();
  }
}

// Test that a buffer larger than the device allows names the limit.
TEST(Buffer, OverLimitNamesTheLimit) {
  auto& ctx = context();
  try {
    ctx.buffer(ctx.limits().max_buffer_size + 4, BufferUsage::StorageIO, "huge");
    FAIL() << "over-limit buffer accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("maxBufferSize"), std::string::npos) << e.what();
  }
}

// Test that a WGSL error reports the kernel name and the line and column of the mistake.
TEST(Kernel, CompileErrorReportsLineAndColumn) {
  auto& ctx = context();
  const std::string src =
      "@group(0) @binding(0) var<storage, read_write> x: array<f32>;\n"
      "@compute @workgroup_size(1)\n"
      "fn main() {\n"
      "  x[0] = undefined_name + 1.0;\n"
      "}\n";
  try {
    ctx.kernel({"broken", src});
    FAIL() << "broken WGSL compiled";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("kernel 'broken'"), std::string::npos) << m;
    EXPECT_NE(m.find("line 4"), std::string::npos) << m;
    EXPECT_NE(m.find("column 10"), std::string::npos) << m;
    EXPECT_NE(m.find("undefined_name"), std::string::npos) << m;
  }
}

// Test that kernels are compiled once per key and overrides make a different key.
TEST(Kernel, CachedByKey) {
  auto& ctx = context();
  auto& a = ctx.kernel(gpu::embedded_kernel("elementwise", "chain", {{"WORKGROUP_SIZE", 64}}));
  auto& b = ctx.kernel(gpu::embedded_kernel("elementwise", "chain", {{"WORKGROUP_SIZE", 64}}));
  auto& c = ctx.kernel(gpu::embedded_kernel("elementwise", "chain", {{"WORKGROUP_SIZE", 128}}));
  EXPECT_EQ(&a, &b);
  EXPECT_NE(&a, &c);
  EXPECT_EQ(a.key().label(), "elementwise:chain{WORKGROUP_SIZE=64}");
}

// Test that an unknown kernel family lists the known ones.
TEST(Kernel, UnknownFamilyListsKnown) {
  try {
    gpu::kernel_source("nope");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("elementwise"), std::string::npos) << e.what();
  }
}

// Test that a validation error only Dawn can see (a uniform binding smaller than the shader's
// struct) is thrown at the next sync point, not logged: bind groups are made without error scopes.
TEST(Errors, ValidationErrorIsThrownAtTheNextSyncPoint) {
  auto& ctx = context();
  auto& k = ctx.kernel(gpu::embedded_kernel("elementwise", "chain"));
  auto x = ctx.buffer(64, BufferUsage::StorageIO, "x");
  auto tiny = ctx.buffer(16, BufferUsage::Uniform | BufferUsage::CopyDst, "tiny-uniform");  // needs 80
  ctx.bind(k, {x, tiny});
  try {
    ctx.wait();
    FAIL() << "a uniform binding of 16 bytes for an 80-byte struct went unnoticed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("validation"), std::string::npos) << e.what();
  }
  ctx.wait();  // reported once
}

// A second context: a storage binding limit of 128 MiB (the WebGPU default) below maxBufferSize,
// as on discrete GPUs, and a bind-group cache of 8.
gpu::Context& limited_context() {
  static gpu::Context ctx = [] {
    gpu::ContextOptions o = test::context_options();
    o.bind_group_cache_capacity = 8;
    o.max_storage_buffer_binding_size = 128u << 20;
    return gpu::Context(o);
  }();
  return ctx;
}

std::string bind_error(gpu::Context& ctx, const gpu::Kernel& k, std::initializer_list<gpu::BufferBinding> b) {
  try {
    ctx.bind(k, b);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Test that a buffer larger than maxStorageBufferBindingSize is created, that a sub-range of it
// binds and computes correctly, and that binding all of it names the kernel, the binding, the
// sizes and the limit.
TEST(Binding, BigBufferSubRangeWorksAndWholeIsRefused) {
  auto& ctx = limited_context();
  const uint64_t limit = ctx.limits().max_storage_buffer_binding_size;
  if (ctx.limits().max_buffer_size <= limit)
    GTEST_SKIP() << "the adapter's maxBufferSize is not above 128 MiB";
  ASSERT_EQ(limit, 128u << 20);
  const uint64_t align = ctx.limits().min_storage_buffer_offset_alignment;
  const uint64_t extra = (4096 + align - 1) / align * align;  // room past the limit for a small range
  auto big = ctx.buffer(limit + extra, BufferUsage::StorageIO, "big");
  auto& k = ctx.kernel(gpu::embedded_kernel("dispatch", "step_u32"));
  auto m = bind_error(ctx, k, {big});
  EXPECT_NE(m.find("kernel 'dispatch:step_u32', binding 0"), std::string::npos) << m;
  EXPECT_NE(m.find(std::to_string(limit + extra) + " bytes"), std::string::npos) << m;
  EXPECT_NE(m.find("maxStorageBufferBindingSize = " + std::to_string(limit)), std::string::npos) << m;
  // The largest binding allowed, at the far end of the buffer, is accepted.
  ctx.bind(k, {gpu::BufferBinding(big, extra, limit)});
  // A small range near the end: the kernel sees only it.
  const uint64_t offset = limit;  // a multiple of the alignment, past what one binding can reach
  auto words = test::random_words(301, 17);
  ctx.write(big, offset - 16, std::as_bytes(std::span(words)));  // 4 words before the range too
  gpu::Recorder rec(ctx);
  rec.dispatch(k, ctx.bind(k, {gpu::BufferBinding(big, offset, (words.size() - 4) * 4)}), 5);
  rec.submit();
  auto got = ctx.read<uint32_t>(big, (offset - 16) / 4, words.size());
  for (size_t i = 0; i < words.size(); ++i)
    ASSERT_EQ(got[i], i < 4 ? words[i] : words[i] * 3u + 1u) << "at " << i;
  ctx.wait();
}

// Test that a misaligned offset, an overrunning range and an oversized uniform binding are
// refused at bind time, each naming what and which limit.
TEST(Binding, ChecksNameTheLimit) {
  auto& ctx = context();
  const auto& lim = ctx.limits();
  auto& step = ctx.kernel(gpu::embedded_kernel("dispatch", "step_u32"));
  auto buf = ctx.buffer(4 * lim.min_storage_buffer_offset_alignment, BufferUsage::StorageIO, "b");
  auto m = bind_error(ctx, step, {gpu::BufferBinding(buf, 4, 16)});  // in range, misaligned
  EXPECT_NE(m.find("binding 0 (storage, 16 bytes at offset 4"), std::string::npos) << m;
  EXPECT_NE(
      m.find("minStorageBufferOffsetAlignment = " + std::to_string(lim.min_storage_buffer_offset_alignment)),
      std::string::npos)
      << m;
  m = bind_error(ctx, step, {gpu::BufferBinding(buf, lim.min_storage_buffer_offset_alignment, buf.size())});
  EXPECT_NE(m.find("overruns"), std::string::npos) << m;
  m = bind_error(ctx, step, {gpu::BufferBinding(buf, 0, 6)});
  EXPECT_NE(m.find("multiple of 4"), std::string::npos) << m;
  auto& chain = ctx.kernel(gpu::embedded_kernel("elementwise", "chain"));
  const uint64_t too_big = lim.max_uniform_buffer_binding_size + 256;
  if (too_big <= lim.max_buffer_size) {
    auto u = ctx.buffer(too_big, BufferUsage::Uniform | BufferUsage::CopyDst, "u");
    m = bind_error(ctx, chain, {buf, u});
    EXPECT_NE(m.find("kernel 'elementwise:chain', binding 1 (uniform"), std::string::npos) << m;
    EXPECT_NE(m.find("maxUniformBufferBindingSize = " + std::to_string(lim.max_uniform_buffer_binding_size)),
              std::string::npos)
        << m;
    m = bind_error(ctx, chain, {buf, gpu::BufferBinding(u, 4, 80)});
    EXPECT_NE(m.find("minUniformBufferOffsetAlignment"), std::string::npos) << m;
  }
}

// Test that the bind-group cache keeps at most its capacity, reuses a hit, and that a group
// evicted from it still works (it owns its handle and buffers).
TEST(Binding, CacheIsBoundedAndEvictedGroupsStayValid) {
  auto& ctx = limited_context();
  auto& k = ctx.kernel(gpu::embedded_kernel("dispatch", "step_u32"));
  std::vector<gpu::BindGroup> groups;
  std::vector<std::vector<uint32_t>> init;
  std::vector<gpu::Buffer> bufs;
  for (uint32_t i = 0; i < 20; ++i) {
    init.push_back(test::random_words(70 + i, 100 + i));
    bufs.push_back(ctx.upload<uint32_t>(init.back(), BufferUsage::StorageIO, "cache" + std::to_string(i)));
    groups.push_back(ctx.bind(k, {bufs.back()}));
    EXPECT_LE(ctx.bind_group_cache_size(), 8u);
  }
  EXPECT_EQ(ctx.bind_group_cache_size(), 8u);
  EXPECT_EQ(ctx.bind(k, {bufs.back()}).raw(), groups.back().raw());    // a hit
  EXPECT_NE(ctx.bind(k, {bufs.front()}).raw(), groups.front().raw());  // evicted: made anew
  gpu::Recorder rec(ctx);
  for (auto& g : groups) rec.dispatch(k, g, 2);  // every group, the evicted ones included
  rec.submit();
  for (uint32_t i = 0; i < 20; ++i) {
    auto got = ctx.read_all<uint32_t>(bufs[i]);
    for (size_t j = 0; j < init[i].size(); ++j) ASSERT_EQ(got[j], init[i][j] * 3u + 1u) << i << " at " << j;
  }
}

// Test that an error raised while recording (dispatch without a bind group) surfaces at the next
// sync point as an exception.
TEST(Errors, UncapturedErrorSurfacesAtWait) {
  auto& ctx = context();
  auto& k = ctx.kernel(gpu::embedded_kernel("dispatch", "step_u32"));
  gpu::Recorder rec(ctx);
  rec.dispatch(k, gpu::BindGroup{}, 1);  // bind group 0 missing: invalid
  rec.submit();
  try {
    ctx.wait();
    FAIL() << "invalid dispatch went unnoticed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("validation"), std::string::npos) << e.what();
  }
  ctx.wait();  // the error was reported once; the device still works
}

uint32_t step_reference(uint32_t x, int steps) {
  for (int s = 0; s < steps; ++s) x = x * 3u + 1u;
  return x;
}

// Test that 10,000 dependent dispatches in one command buffer all run, in order.
TEST(Recorder, TenThousandDependentDispatchesInOneCommandBuffer) {
  auto& ctx = context();
  auto init = test::random_words(67, 11);  // odd size: a partial last workgroup
  auto buf = ctx.upload<uint32_t>(init, BufferUsage::StorageIO, "words");
  auto& k = ctx.kernel(gpu::embedded_kernel("dispatch", "step_u32"));
  auto group = ctx.bind(k, {buf});
  gpu::Recorder rec(ctx);
  constexpr int kSteps = 10'000;
  for (int s = 0; s < kSteps; ++s) rec.dispatch(k, group, 2);
  rec.submit();
  EXPECT_EQ(rec.dispatches(), uint64_t(kSteps));
  EXPECT_EQ(rec.submits(), 1u);
  auto out = ctx.read_all<uint32_t>(buf);
  for (size_t i = 0; i < init.size(); ++i) ASSERT_EQ(out[i], step_reference(init[i], kSteps)) << "at " << i;
}

// Test that submit-and-wait per dispatch gives the same result as one command buffer.
TEST(Recorder, SubmitPerDispatchMatches) {
  auto& ctx = context();
  auto init = test::random_words(33, 5);
  auto buf = ctx.upload<uint32_t>(init, BufferUsage::StorageIO, "words");
  auto& k = ctx.kernel(gpu::embedded_kernel("dispatch", "step_u32"));
  auto group = ctx.bind(k, {buf});
  gpu::Recorder rec(ctx);
  for (int s = 0; s < 25; ++s) {
    rec.dispatch(k, group, 1);
    rec.submit();
    ctx.wait();
  }
  EXPECT_EQ(rec.submits(), 25u);
  auto out = ctx.read_all<uint32_t>(buf);
  for (size_t i = 0; i < init.size(); ++i) ASSERT_EQ(out[i], step_reference(init[i], 25)) << "at " << i;
}

// Test that timed passes report positive GPU durations when the feature exists.
TEST(Profiler, TimestampsAroundPasses) {
  auto& ctx = context();
  gpu::Profiler prof(ctx, 4);
  if (!ctx.features().timestamp_query) {
    EXPECT_FALSE(prof.enabled());
    GTEST_SKIP() << "adapter has no timestamp-query";
  }
  auto buf = ctx.upload<uint32_t>(test::random_words(4096, 9), BufferUsage::StorageIO, "words");
  auto& k = ctx.kernel(gpu::embedded_kernel("dispatch", "step_u32"));
  auto group = ctx.bind(k, {buf});
  gpu::Recorder rec(ctx);
  for (int p = 0; p < 3; ++p) {
    rec.time_next_pass(prof);
    for (int s = 0; s < 20; ++s) rec.dispatch(k, group, 64);
  }
  prof.resolve(rec);
  rec.submit();
  auto ns = prof.read_ns();
  ASSERT_EQ(ns.size(), 3u);
  for (double t : ns) {
    EXPECT_GT(t, 0.0);
    EXPECT_LT(t, 10e9);  // a pass of 20 small dispatches takes far less than 10 s
  }
}

// Test the optional f16 path: where the adapter offers shader-f16, a kernel with enable_f16
// computes in f16 (x -> f32(f16(x) * 2), exact against the host's rounding to half); elsewhere
// asking for it is an error naming the kernel and the feature, before any compilation.
TEST(Kernel, EnableF16IsOptInAndChecked) {
  auto& ctx = context();
  gpu::KernelDesc d{"test.f16", R"(
@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) i: vec3u) {
  if (i.x < arrayLength(&x)) { x[i.x] = f32(f16(x[i.x]) * 2.0h); }
})"};
  d.enable_f16 = true;
  if (!ctx.features().shader_f16) {
    try {
      ctx.kernel(d);
      FAIL() << "enable_f16 compiled on an adapter without shader-f16";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("test.f16"), std::string::npos) << m;
      EXPECT_NE(m.find("shader-f16"), std::string::npos) << m;
    }
    return;
  }
  auto& k = ctx.kernel(d);
  const auto in = test::random_floats(1001, 5, -300.0f, 300.0f);
  auto buf = ctx.upload<float>(in, BufferUsage::StorageIO, "f16.x");
  gpu::Recorder rec(ctx);
  rec.dispatch(k, ctx.bind(k, {buf}), (1001 + 63) / 64);
  rec.submit();
  const auto got = ctx.read_all<float>(buf);
  for (size_t i = 0; i < in.size(); ++i)
    ASSERT_EQ(got[i], 2.0f * half::to_float(half::from_float(in[i]))) << "at " << i;
}

}  // namespace
}  // namespace wgfuse
