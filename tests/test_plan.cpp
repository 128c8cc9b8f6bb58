// The weight arena and the Plan on a real adapter: placement, chunked upload, binding of views;
// a plan of many dispatches equals the same dispatches recorded directly, encoded many times.
#include <atomic>
#include <cstring>
#include <numeric>

#include "bench/dispatch_bench.h"
#include "gpu/arena.h"
#include "gpu/plan.h"
#include "gpu/recorder.h"
#include "support.h"
#include "util/error.h"
#include "util/half.h"

namespace wgfuse {
namespace {

using gpu::BufferUsage;
using test::context;

std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// ---- Arena ----

std::string tensor_name(size_t i) {
  return "tensor" + std::to_string(i);
}

struct Shape {
  uint64_t rows, cols;
  gpu::WeightFormat format;
};

// Tensors of odd shapes in every format.
std::vector<Shape> odd_shapes() {
  using F = gpu::WeightFormat;
  return {{1, 1, F::F32},   {3, 5, F::F16},   {7, 13, F::BF16}, {11, 50, F::F32},
          {2, 8, F::F16},   {9, 33, F::BF16}, {5, 100, F::F16}, {1, 300, F::F32},
          {13, 7, F::BF16}, {4, 64, F::F32},  {3, 3, F::F16},   {17, 16, F::BF16}};
}

// Test that tensors of odd shapes in every format are placed aligned and padded in several capped
// buffers, and come back bitwise after a chunked upload of whole rows, with zeros in the padding.
TEST(Arena, PlacesAndUploadsInChunksAcrossBuffers) {
  auto& ctx = context();
  const std::vector<Shape> shapes = odd_shapes();
  gpu::WeightArena arena(ctx, {.label = "test.arena", .max_buffer_bytes = 4096});
  std::vector<std::vector<std::byte>> data;
  for (size_t t = 0; t < shapes.size(); ++t) {
    const auto [rows, cols, format] = shapes[t];
    EXPECT_EQ(arena.add(tensor_name(t), rows, cols, format), t);
    const uint64_t bytes = rows * gpu::stored_row_bytes(format, cols);
    auto words = test::random_words(bytes / 4, 21 + uint32_t(t));
    data.emplace_back(bytes);
    std::memcpy(data.back().data(), words.data(), bytes);
  }
  EXPECT_GE(arena.buffers(), 3u);  // 10 KB of tensors under a 4 KB cap
  arena.allocate();
  const uint64_t align = arena.alignment();
  EXPECT_EQ(align % 16, 0u);
  EXPECT_EQ(align % ctx.limits().min_storage_buffer_offset_alignment, 0u);
  for (size_t t = 0; t < shapes.size(); ++t) {
    const auto& v = arena.view(gpu::WeightArena::TensorId(t));
    EXPECT_EQ(v.format, shapes[t].format);
    EXPECT_EQ(v.row_bytes, gpu::stored_row_bytes(v.format, shapes[t].cols));
    EXPECT_EQ(v.row_bytes % 16, 0u) << v.name;  // whole groups of 8 elements
    EXPECT_EQ(v.bytes, v.rows * v.row_bytes);
    EXPECT_EQ(v.offset % align, 0u) << v.name;
    EXPECT_EQ(v.padded_bytes % 16, 0u) << v.name;
    EXPECT_GE(v.padded_bytes, v.bytes);
    EXPECT_LE(v.offset + v.padded_bytes, std::min<uint64_t>(v.buffer.size(), 4096)) << v.name;
    for (size_t u = 0; u < t; ++u) {  // no two tensors overlap
      const auto& w = arena.view(gpu::WeightArena::TensorId(u));
      if (w.buffer.id() != v.buffer.id()) continue;
      EXPECT_TRUE(w.offset + w.padded_bytes <= v.offset || v.offset + v.padded_bytes <= w.offset)
          << v.name << w.name;
    }
  }
  std::vector<uint64_t> seen;
  std::atomic<uint64_t> fills = 0;
  arena.upload(
      [&](gpu::WeightArena::TensorId id, uint64_t first, uint64_t count, std::span<std::byte> out) {
        const uint64_t rb = arena.view(id).row_bytes;
        EXPECT_LE(first + count, arena.view(id).rows);
        EXPECT_EQ(out.size(), count * rb);
        EXPECT_TRUE(count == 1 ||
                    count * rb <= 1200);  // whole rows, at most a chunk: 64 raised to the longest row
        ++fills;
        std::memcpy(out.data(), data[id].data() + first * rb, count * rb);
      },
      [&](uint64_t done, uint64_t total) {
        EXPECT_TRUE(seen.empty() || done > seen.back());
        EXPECT_LE(done, total);
        seen.push_back(done);
      },
      {.chunk_bytes = 64});
  EXPECT_GT(fills, shapes.size());  // chunks of 64 bytes split the larger tensors
  uint64_t padded_total = 0;
  for (size_t t = 0; t < shapes.size(); ++t)
    padded_total += arena.view(gpu::WeightArena::TensorId(t)).padded_bytes;
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back(), padded_total);
  for (size_t t = 0; t < shapes.size(); ++t) {
    const auto& v = arena.view(tensor_name(t));
    auto back = ctx.read_bytes(v.buffer, v.offset, v.padded_bytes);
    ASSERT_EQ(0, std::memcmp(back.data(), data[t].data(), v.bytes)) << v.name;
    for (uint64_t i = v.bytes; i < v.padded_bytes; ++i)
      ASSERT_EQ(back[i], std::byte{0}) << v.name << " at " << i;
  }
}

// Test that the threaded upload (several threads, several staging slots reused, chunks that split
// tensors and hold several, a chunk size that is no multiple of a row) leaves the very bytes of a
// single thread with one slot in every buffer, gaps between tensors included, and that a fill
// that throws on one thread surfaces as that error.
TEST(Arena, ThreadedUploadGivesTheSingleThreadedBytes) {
  auto& ctx = context();
  const std::vector<Shape> shapes = odd_shapes();
  std::vector<std::vector<std::byte>> data;
  for (size_t t = 0; t < shapes.size(); ++t) {
    const uint64_t bytes = shapes[t].rows * gpu::stored_row_bytes(shapes[t].format, shapes[t].cols);
    auto words = test::random_words(bytes / 4, 90 + uint32_t(t));
    data.emplace_back(bytes);
    std::memcpy(data.back().data(), words.data(), bytes);
  }
  auto upload = [&](const gpu::UploadOptions& o) {
    gpu::WeightArena arena(ctx, {.label = "test.threads", .max_buffer_bytes = 4096});
    for (size_t t = 0; t < shapes.size(); ++t)
      arena.add(tensor_name(t), shapes[t].rows, shapes[t].cols, shapes[t].format);
    arena.allocate();
    arena.upload(
        [&](gpu::WeightArena::TensorId id, uint64_t first, uint64_t count, std::span<std::byte> out) {
          const uint64_t rb = arena.view(id).row_bytes;
          std::memcpy(out.data(), data[id].data() + first * rb, count * rb);
        },
        {}, o);
    std::vector<std::vector<std::byte>> back;
    for (size_t b = 0; b < arena.buffers(); ++b)
      back.push_back(ctx.read_bytes(arena.buffer(b), 0, arena.buffer(b).size()));
    for (size_t t = 0; t < shapes.size(); ++t) {
      const auto& v = arena.view(gpu::WeightArena::TensorId(t));
      auto got = ctx.read_bytes(v.buffer, v.offset, v.padded_bytes);
      EXPECT_EQ(0, std::memcmp(got.data(), data[t].data(), v.bytes)) << v.name;
      for (uint64_t i = v.bytes; i < v.padded_bytes; ++i)
        EXPECT_EQ(got[i], std::byte{0}) << v.name << " at " << i;
    }
    return back;
  };
  const auto single = upload({.chunk_bytes = 1, .slots = 1, .threads = 1});
  ASSERT_GT(single.size(), 1u);
  for (gpu::UploadOptions o : {gpu::UploadOptions{.chunk_bytes = 100, .slots = 3, .threads = 5},
                               gpu::UploadOptions{.chunk_bytes = 1000, .slots = 2, .threads = 3},
                               gpu::UploadOptions{.threads = 4}}) {
    SCOPED_TRACE("chunk " + std::to_string(o.chunk_bytes) + ", " + std::to_string(o.threads) + " threads");
    EXPECT_EQ(upload(o), single);
  }
  gpu::WeightArena arena(ctx, {.label = "test.threads"});
  arena.add("w", 64, 8, gpu::WeightFormat::F32);
  arena.allocate();
  const auto m = message_of([&] {
    arena.upload(
        [](auto, uint64_t first, auto, std::span<std::byte>) {
          if (first == 40) throw Error("row 40 failed");
        },
        {}, {.chunk_bytes = 256, .threads = 4});
  });
  EXPECT_EQ(m, "row 40 failed");
}

// The value of stored element i of a row in format f (host decode, for the check below).
double stored_value(gpu::WeightFormat f, std::span<const std::byte> row, uint64_t i) {
  if (f == gpu::WeightFormat::F32) {
    float v;
    std::memcpy(&v, row.data() + 4 * i, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, row.data() + 2 * i, 2);
  return f == gpu::WeightFormat::F16 ? half::to_float(h) : half::bf16_to_float(h);
}

// Test every packer (each source dtype into each format) at odd column counts through the arena:
// the GPU holds exactly the packed bytes; each element is the source value rounded to the format
// (exact where the format holds the source type: bf16 -> bf16 and f16 -> f16 are byte copies,
// and f16, bf16 -> f32 widen exactly); zeros past the last column.
TEST(Arena, PackersRoundTripEveryFormat) {
  auto& ctx = context();
  using F = gpu::WeightFormat;
  using D = gpu::DType;
  for (F f : {F::F32, F::F16, F::BF16})
    for (D d : {D::F32, D::F16, D::BF16})
      for (uint64_t cols : {1u, 7u, 13u, 50u}) {
        SCOPED_TRACE(std::string(gpu::to_string(d)) + " -> " + gpu::to_string(f) + ", " +
                     std::to_string(cols) + " columns");
        const uint64_t rows = 3, sb = cols * gpu::dtype_bytes(d);
        // Source values in [-4, 4) encoded in d (f32 values made exact in d first).
        std::vector<float> values =
            test::random_floats(rows * cols, uint32_t(7 * cols + uint32_t(f) * 3 + uint32_t(d)), -4, 4);
        std::vector<std::byte> src(rows * sb);
        for (uint64_t i = 0; i < values.size(); ++i) {
          if (d == D::F32) {
            std::memcpy(src.data() + 4 * i, &values[i], 4);
            continue;
          }
          const uint16_t h = d == D::F16 ? half::from_float(values[i]) : half::bf16_from_float(values[i]);
          values[i] = d == D::F16 ? half::to_float(h) : half::bf16_to_float(h);
          std::memcpy(src.data() + 2 * i, &h, 2);
        }
        gpu::WeightArena arena(ctx, {.label = "test.pack"});
        const auto id = arena.add("w", rows, cols, f);
        arena.allocate();
        const auto& v = arena.view(id);
        std::vector<std::byte> packed(v.bytes);
        for (uint64_t r = 0; r < rows; ++r)
          gpu::pack_row(f, d, std::span(src).subspan(r * sb, sb), cols,
                        std::span(packed).subspan(r * v.row_bytes, v.row_bytes));
        arena.upload([&](auto, uint64_t first, uint64_t count, std::span<std::byte> out) {
          std::memcpy(out.data(), packed.data() + first * v.row_bytes, count * v.row_bytes);
        });
        const auto back = ctx.read_bytes(v.buffer, v.offset, v.bytes);
        ASSERT_EQ(0, std::memcmp(back.data(), packed.data(), v.bytes));
        const bool same = gpu::stored_as_is(f, d, 8);
        for (uint64_t r = 0; r < rows; ++r) {
          const auto row = std::span<const std::byte>(back).subspan(r * v.row_bytes, v.row_bytes);
          if (same) {
            ASSERT_EQ(0, std::memcmp(row.data(), src.data() + r * sb, sb)) << "row " << r;
          }
          for (uint64_t c = 0; c < (cols + 7) / 8 * 8; ++c) {
            const float x = c < cols ? values[r * cols + c] : 0.0f;
            const float want = f == F::F32   ? x
                               : f == F::F16 ? half::to_float(half::from_float(x))
                                             : half::bf16_to_float(half::bf16_from_float(x));
            ASSERT_EQ(stored_value(f, row, c), want) << "row " << r << " column " << c;
          }
        }
      }
}

// Test that a view binds as its own range of a shared buffer and that a kernel on it leaves its
// neighbours as they were.
TEST(Arena, KernelOnAViewLeavesItsNeighbours) {
  auto& ctx = context();
  gpu::WeightArena arena(ctx, {.label = "test.view"});
  const std::vector<uint32_t> counts = {37, 129, 5};
  std::vector<std::vector<uint32_t>> src;
  for (size_t t = 0; t < counts.size(); ++t) {
    src.push_back(test::random_words(counts[t], 40 + uint32_t(t)));
    arena.add(tensor_name(t), 1, counts[t], gpu::WeightFormat::F32);  // a row of 32-bit words
  }
  arena.allocate();
  ASSERT_EQ(arena.buffers(), 1u);
  arena.upload([&](gpu::WeightArena::TensorId id, uint64_t, uint64_t, std::span<std::byte> out) {
    std::fill(out.begin(), out.end(), std::byte{0});
    std::memcpy(out.data(), src[id].data(), 4 * src[id].size());
  });
  auto& k = ctx.kernel(gpu::embedded_kernel("dispatch", "step_u32"));
  const auto& mid = arena.view(tensor_name(1));
  gpu::Recorder rec(ctx);
  rec.dispatch(k, ctx.bind(k, {mid}), (uint32_t(mid.padded_bytes / 4) + 63) / 64);
  rec.submit();
  for (size_t t = 0; t < counts.size(); ++t) {
    const auto& v = arena.view(gpu::WeightArena::TensorId(t));
    auto got = ctx.read<uint32_t>(v.buffer, v.offset / 4, counts[t]);
    for (uint32_t i = 0; i < counts[t]; ++i) {
      const uint32_t want = t == 1 ? src[t][i] * 3u + 1u : src[t][i];
      ASSERT_EQ(got[i], want) << v.name << " at " << i;
    }
  }
}

// Test that a tensor over the cap, a duplicate name, a missing name, use before allocate() and a
// fill that throws are clear errors.
TEST(Arena, ClearErrors) {
  auto& ctx = context();
  using F = gpu::WeightFormat;
  gpu::WeightArena arena(ctx, {.label = "test.errors", .max_buffer_bytes = 1024});
  auto m = message_of([&] { arena.add("big", 5, 100, F::F32); });
  EXPECT_NE(m.find("'big'"), std::string::npos) << m;
  EXPECT_NE(m.find("cap of 1024"), std::string::npos) << m;
  EXPECT_NE(m.find("maxStorageBufferBindingSize"), std::string::npos) << m;
  arena.add("a", 1, 4, F::F32);
  m = message_of([&] { arena.add("a", 1, 4, F::F32); });
  EXPECT_NE(m.find("added twice"), std::string::npos) << m;
  auto nothing = [](auto, auto, auto, std::span<std::byte>) {};
  m = message_of([&] { arena.upload(nothing); });
  EXPECT_NE(m.find("before allocate"), std::string::npos) << m;
  arena.allocate();
  m = message_of([&] { arena.view("nope"); });
  EXPECT_NE(m.find("no tensor named 'nope'"), std::string::npos) << m;
  m = message_of([&] { arena.add("late", 1, 4, F::F32); });
  EXPECT_NE(m.find("after allocate"), std::string::npos) << m;
  m = message_of(
      [&] { arena.upload([](auto, auto, auto, std::span<std::byte>) { throw Error("fill failed"); }); });
  EXPECT_EQ(m, "fill failed");
}

// ---- Plan ----

// The work of both sides: a chain op on floats (its params one record each), a dependent step on
// words, a copy, and pass boundaries; `steps` rounds of it.
struct PlanFixture {
  gpu::Context& ctx = context();
  gpu::Kernel& chain = ctx.kernel(gpu::embedded_kernel("elementwise", "chain"));
  gpu::Kernel& step = ctx.kernel(gpu::embedded_kernel("dispatch", "step_u32"));
  static constexpr uint32_t kFloats = 1000, kWords = 67;
  std::vector<float> x0 = test::random_floats(kFloats, 3);
  std::vector<uint32_t> w0 = test::random_words(kWords, 4);
  gpu::Buffer x = ctx.upload<float>(x0, BufferUsage::StorageIO, "plan.x");
  gpu::Buffer w = ctx.upload<uint32_t>(w0, BufferUsage::StorageIO, "plan.w");
  gpu::Buffer w_copy = ctx.buffer(kWords * 4, BufferUsage::StorageIO, "plan.wcopy");
  void reset() {
    ctx.write(x, 0, std::as_bytes(std::span(x0)));
    ctx.write(w, 0, std::as_bytes(std::span(w0)));
  }
};

bench::ChainParams chain_op(uint32_t n, uint32_t j) {
  bench::ChainParams p{n, j % bench::kMaxChain, 1, 0, {}};
  for (uint32_t f = 0; f < bench::kMaxChain; ++f) p.factors[f] = bench::chain_factor(f);
  return p;
}

// Test that a plan of 300 dispatches (two kernels, params records, copies, pass breaks) gives
// bitwise the result of the same dispatches recorded directly, encoded three times, and that
// both equal the CPU reference (exact for the words, 1e-5 relative in double for the floats).
TEST(Plan, EqualsDirectRecordingEncodedManyTimes) {
  PlanFixture f;
  constexpr uint32_t kRounds = 100, kEncodes = 3;
  const uint32_t align = f.ctx.limits().min_uniform_buffer_offset_alignment;
  const uint32_t slot = (uint32_t(sizeof(bench::ChainParams)) + align - 1) / align * align;
  gpu::Buffer direct_params =
      f.ctx.buffer(uint64_t(kRounds) * slot, BufferUsage::Uniform | BufferUsage::CopyDst, "direct.params");
  gpu::Plan plan(f.ctx, "test.plan");
  std::vector<gpu::BindGroup> direct_groups;
  for (uint32_t r = 0; r < kRounds; ++r) {
    const auto p = chain_op(PlanFixture::kFloats, r);
    f.ctx.write_value(direct_params, uint64_t(r) * slot, p);
    direct_groups.push_back(
        f.ctx.bind(f.chain, {f.x, gpu::BufferBinding(direct_params, uint64_t(r) * slot, sizeof p)}));
    plan.dispatch(f.chain, {f.x, plan.params(p)}, {(PlanFixture::kFloats + 255) / 256});
    plan.dispatch(f.step, {f.w}, {2});
    plan.dispatch(f.step, {f.w}, {2});
    if (r % 10 == 9) plan.copy(f.w, 0, f.w_copy, 0, PlanFixture::kWords * 4);
    if (r % 25 == 24) plan.end_pass();
  }
  plan.build();
  EXPECT_EQ(plan.dispatches(), 3u * kRounds);
  EXPECT_EQ(plan.copies(), kRounds / 10);
  // A pass opens at the start and after every copy or pass break, except where a break follows
  // a copy (r = 49 and 99) or ends the plan.
  EXPECT_EQ(plan.passes(), 1u + kRounds / 10 + kRounds / 25 - 2 - 1);

  auto run = [&](bool use_plan) {
    f.reset();
    gpu::Recorder rec(f.ctx);
    auto step_group = f.ctx.bind(f.step, {f.w});
    for (uint32_t e = 0; e < kEncodes; ++e) {
      if (use_plan) {
        plan.encode(rec);
        continue;
      }
      for (uint32_t r = 0; r < kRounds; ++r) {
        rec.dispatch(f.chain, direct_groups[r], (PlanFixture::kFloats + 255) / 256);
        rec.dispatch(f.step, step_group, 2);
        rec.dispatch(f.step, step_group, 2);
        if (r % 10 == 9) rec.copy(f.w, 0, f.w_copy, 0, PlanFixture::kWords * 4);
        if (r % 25 == 24) rec.end_pass();
      }
    }
    rec.submit();
    return std::pair{f.ctx.read_all<float>(f.x), f.ctx.read_all<uint32_t>(f.w_copy)};
  };
  auto [px, pw] = run(true);
  auto [dx, dw] = run(false);
  ASSERT_EQ(0, std::memcmp(px.data(), dx.data(), px.size() * 4)) << "plan and direct floats differ";
  ASSERT_EQ(pw, dw) << "plan and direct words differ";
  for (uint32_t i = 0; i < PlanFixture::kWords; ++i) {
    uint32_t want = f.w0[i];
    for (uint32_t s = 0; s < 2 * kRounds * kEncodes; ++s) want = want * 3u + 1u;
    ASSERT_EQ(pw[i], want) << "word " << i;
  }
  std::vector<double> want(PlanFixture::kFloats);
  for (uint32_t i = 0; i < PlanFixture::kFloats; ++i) {
    double v = f.x0[i];
    for (uint32_t r = 0; r < kRounds * kEncodes; ++r)
      v *= double(bench::chain_factor(r % kRounds % bench::kMaxChain));
    want[i] = v;
  }
  EXPECT_TRUE(test::all_close(px, want, 300 * 6e-8));  // 300 f32 roundings of at most 2^-24
}

// Test that set_params rewrites one record with one queue write and the next encode uses it.
TEST(Plan, SetParamsBetweenEncodes) {
  PlanFixture f;
  gpu::Plan plan(f.ctx, "test.params");
  auto p = chain_op(PlanFixture::kFloats, 0);
  const auto slot = plan.params(p);
  plan.dispatch(f.chain, {f.x, slot}, {(PlanFixture::kFloats + 255) / 256});
  f.reset();
  for (uint32_t j : {0u, 5u, 11u}) {
    plan.set_params(slot, chain_op(PlanFixture::kFloats, j));
    gpu::Recorder rec(f.ctx);
    plan.encode(rec);
    rec.submit();
  }
  auto got = f.ctx.read_all<float>(f.x);
  std::vector<double> want(PlanFixture::kFloats);
  for (uint32_t i = 0; i < PlanFixture::kFloats; ++i)
    want[i] = double(f.x0[i]) * bench::chain_factor(0) * bench::chain_factor(5) * bench::chain_factor(11);
  EXPECT_TRUE(test::all_close(got, want, 1e-6));
  EXPECT_EQ(plan.passes(), 1u);
  EXPECT_EQ(plan.params_buffer().usage(), BufferUsage::Uniform | BufferUsage::CopyDst);
}

// Test that a plan keeps each step's bindings and metadata for describing it, that appending a
// built plan and an unbuilt one gives their steps in order, and that the appended plan computes
// what encoding both plans does.
TEST(Plan, AppendsPlansAndDescribesItsSteps) {
  PlanFixture f;
  gpu::Plan first(f.ctx, "test.first");
  first.dispatch(gpu::Dispatch{&f.step, {f.w}, {2}}, {"step", 12, 3});
  first.copy(f.w, 0, f.w_copy, 0, PlanFixture::kWords * 4);
  first.build();
  gpu::Plan second(f.ctx, "test.second");
  second.dispatch(f.step, {gpu::BufferBinding(f.w_copy, 0, 64)}, {1});  // no StepInfo: the entry's name
  second.end_pass();
  gpu::Plan both(f.ctx, "test.both");
  both.append(first);
  both.append(second);
  both.build();
  ASSERT_EQ(both.steps(), 4u);
  EXPECT_EQ(both.dispatches(), 2u);
  EXPECT_EQ(both.copies(), 1u);
  const auto s0 = both.step(0);
  EXPECT_EQ(s0.kind, gpu::Plan::StepKind::Dispatch);
  EXPECT_EQ(s0.kernel, &f.step);
  EXPECT_EQ(s0.grid.x, 2u);
  EXPECT_EQ(s0.info.bytes, 12u);
  EXPECT_EQ(s0.info.bytes_per_position, 3u);
  ASSERT_EQ(s0.bindings.size(), 1u);
  EXPECT_EQ(s0.bindings[0].buffer().id(), f.w.id());
  EXPECT_EQ(both.step_name(0), "step");
  EXPECT_EQ(both.step(1).kind, gpu::Plan::StepKind::Copy);
  EXPECT_EQ(both.step(1).dst->id(), f.w_copy.id());
  EXPECT_EQ(both.step_name(1), "copy");
  EXPECT_EQ(both.step_name(2), "step_u32");
  EXPECT_EQ(both.step(2).bindings[0].size(), 64u);
  EXPECT_EQ(both.step(3).kind, gpu::Plan::StepKind::EndPass);

  auto run = [&](bool appended) {
    f.reset();
    gpu::Recorder rec(f.ctx);
    if (appended) {
      both.encode(rec);
    } else {
      first.encode(rec);
      second.encode(rec);
    }
    rec.submit();
    return std::pair{f.ctx.read_all<uint32_t>(f.w), f.ctx.read_all<uint32_t>(f.w_copy)};
  };
  const auto separate = run(false);
  EXPECT_NE(separate.first, f.w0);
  EXPECT_EQ(run(true), separate);
  gpu::Plan with_params(f.ctx, "test.params");
  with_params.params(uint32_t(1));
  const auto m = message_of([&] { both.append(with_params); });
  EXPECT_NE(m.find("after build()"), std::string::npos) << m;
  gpu::Plan fresh(f.ctx, "test.fresh");
  const auto m2 = message_of([&] { fresh.append(with_params); });
  EXPECT_NE(m2.find("has params records"), std::string::npos) << m2;
}

// Test that an unused binding number (a kernel need not declare every number below its highest)
// is left out of the bind group and changes nothing: the same words as without it, and a
// BufferBinding::unused() converts to an unused Binding.
TEST(Plan, UnusedBindingNumbersAreLeftOut) {
  PlanFixture f;
  auto run = [&](std::vector<gpu::Binding> bindings) {
    f.reset();
    gpu::Plan p(f.ctx, "test.unused");
    p.dispatch(gpu::Dispatch{&f.step, std::move(bindings), {2}});
    p.build();
    gpu::Recorder rec(f.ctx);
    p.encode(rec);
    rec.submit();
    return f.ctx.read_all<uint32_t>(f.w);
  };
  const auto plain = run({f.w});
  EXPECT_NE(plain, f.w0);
  EXPECT_EQ(run({f.w, gpu::Binding::unused()}), plain);
  EXPECT_EQ(run({f.w, gpu::BufferBinding::unused()}), plain);
  EXPECT_TRUE(gpu::Binding(gpu::BufferBinding::unused()).is_unused());
  EXPECT_FALSE(gpu::Binding(f.w).is_unused());
}

// Test that building errors name the plan and the step, and that a built plan takes no steps.
TEST(Plan, ClearErrors) {
  PlanFixture f;
  gpu::Plan plan(f.ctx, "test.errors");
  plan.dispatch(f.step, {f.w}, {1});
  plan.dispatch(f.step, {gpu::BufferBinding(f.w, 4, 16)}, {1});  // misaligned offset
  auto m = message_of([&] { plan.build(); });
  EXPECT_NE(m.find("plan 'test.errors', step 1"), std::string::npos) << m;
  EXPECT_NE(m.find("minStorageBufferOffsetAlignment"), std::string::npos) << m;
  gpu::Plan ok(f.ctx, "test.built");
  ok.dispatch(f.step, {f.w}, {1});
  ok.build();
  m = message_of([&] { ok.dispatch(f.step, {f.w}, {1}); });
  EXPECT_NE(m.find("after build()"), std::string::npos) << m;
  m = message_of([&] { ok.set_params(gpu::ParamsSlot{3}, uint32_t(1)); });
  EXPECT_NE(m.find("params slot 3"), std::string::npos) << m;
  gpu::Recorder rec(f.ctx);
  m = message_of([&] { ok.encode(rec, 1, 1); });
  EXPECT_NE(m.find("outside its 1 steps"), std::string::npos) << m;
}

}  // namespace
}  // namespace wgfuse
