// Every kernel of the decode step (kernels/llm_*.wgsl through llm::DecodeKernels) against the
// double-precision reference ops (src/llm/reference.h), on random data with odd shapes, in f32
// and f16 storage. The reference gets the weights exactly as stored (rounded to f16 for f16
// storage), so both dtypes are held to f32-arithmetic tolerances; what f16 rounding costs is the
// whole-model test's business. Outputs are poisoned with NaN before each run.
#include <array>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <utility>

#include "llm/model.h"
#include "llm_support.h"
#include "support.h"
#include "util/error.h"

namespace wgfuse {
namespace {

using gpu::BufferUsage;
using gpu::WeightFormat;
using test::context;
namespace ref = llm::ref;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// max |got - want| / max |want|: per-element relative error is meaningless where a sum cancels.
::testing::AssertionResult close_normalised(const std::vector<float>& got, const std::vector<double>& want,
                                            double tol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " != " << want.size();
  double scale = 0, err = 0;
  long worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    scale = std::max(scale, std::abs(want[i]));
    const double e = std::abs(double(got[i]) - want[i]);
    if (!(e <= err)) err = e, worst = long(i);  // NaN counts as the worst
  }
  if (err <= tol * scale) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "max error " << err << " at " << worst << " (got " << got[worst] << ", want " << want[worst]
         << ") > " << tol << " * max |want| " << scale;
}

std::vector<double> as_double(const std::vector<float>& v) {
  return {v.begin(), v.end()};
}

// A row-major matrix of random values, as stored (rounded or quantized) and uploaded in the
// kernels' layout: a view of an arena of its own, packed from f32 rows (row r of the view = row
// source_row(r)).
struct Matrix {
  std::vector<float> values;  // [rows, cols], as the storage format holds them
  gpu::TensorView view;
};
Matrix random_matrix(WeightFormat t, uint32_t rows, uint32_t cols, uint32_t seed,
                     const std::function<uint32_t(uint32_t)>& source_row = {}) {
  const std::vector<float> source = test::random_floats(size_t(rows) * cols, seed, -1.0f, 1.0f);
  Matrix m{source, {}};
  for (uint32_t r = 0; r < rows; ++r)
    gpu::stored_values(t, std::span(m.values).subspan(size_t(r) * cols, cols));
  gpu::WeightArena arena(context(), {.label = "test.matrix"});
  const auto id = arena.add("w", rows, cols, t);
  arena.allocate();
  arena.upload([&](gpu::WeightArena::TensorId, uint64_t first, uint64_t count, std::span<std::byte> out) {
    const uint64_t rb = arena.view(id).row_bytes;
    for (uint64_t r = first; r < first + count; ++r) {
      const uint32_t src = source_row ? source_row(uint32_t(r)) : uint32_t(r);
      gpu::pack_row(t, gpu::DType::F32, std::as_bytes(std::span(source).subspan(size_t(src) * cols, cols)),
                    cols, out.subspan((r - first) * rb, rb));
    }
  });
  m.view = arena.view(id);
  return m;
}

// A storage buffer of n floats, all NaN.
gpu::Buffer poisoned(size_t n) {
  std::vector<float> v((n + 7) / 8 * 8, kNaN);
  return context().upload<float>(v, BufferUsage::StorageIO, "test.poisoned");
}

void run(const std::vector<gpu::Dispatch>& steps) {
  gpu::Plan plan(context(), "test");
  for (const auto& d : steps) plan.dispatch(d);
  gpu::Recorder rec(context());
  plan.encode(rec);
  rec.submit();
  context().wait();
}

ref::Linear linear_of(const Matrix& m, uint32_t rows, uint32_t cols) {
  return {as_double(m.values), {}, rows, cols};
}

}  // namespace
}  // namespace wgfuse

namespace wgfuse::llm {
void PrintTo(gpu::WeightFormat t, std::ostream* os) {
  *os << gpu::to_string(t);
}
void PrintTo(const MatvecTuning& t, std::ostream* os) {
  *os << t.name();
}
}  // namespace wgfuse::llm

namespace wgfuse {
namespace {

// The decode matrix-vector kernels, each checked at one shape under one tuning (nullopt: the
// rule's), so that the rule's tests and every tuning's share one body.
using Tuning = std::optional<llm::MatvecTuning>;

llm::DecodeKernels kernels_with(const Tuning& tuning) {
  llm::DecodeKernels k(context());
  k.force_matvec_tuning(tuning);
  return k;
}

// x padded to a multiple of 8 with NaN: a kernel must not read past x's length into its sums.
gpu::Buffer nan_padded(const std::vector<float>& x) {
  std::vector<float> padded((x.size() + 7) / 8 * 8, kNaN);
  std::copy(x.begin(), x.end(), padded.begin());
  return context().upload<float>(padded, BufferUsage::StorageIO, "x");
}

// resid += W x.
void check_matvec_residual(WeightFormat t, uint32_t rows, uint32_t cols, const Tuning& tuning) {
  Matrix w = random_matrix(t, rows, cols, 1);
  auto x = test::random_floats(cols, 2, -1, 1), resid = test::random_floats(rows, 3, -1, 1);
  auto x_buf = nan_padded(x);
  auto r_buf = llm::upload_padded(context(), "resid", resid);
  auto k = kernels_with(tuning);
  run({k.matvec_residual(w.view, x_buf, r_buf, rows, cols)});
  auto want = ref::linear(linear_of(w, rows, cols), as_double(x));
  for (uint32_t r = 0; r < rows; ++r) want[r] += resid[r];
  EXPECT_TRUE(close_normalised(context().read<float>(r_buf, 0, rows), want, 1e-5));
}

// y = W rmsnorm(x) (the LM head).
void check_matvec_norm(WeightFormat t, uint32_t rows, uint32_t cols, const Tuning& tuning) {
  Matrix w = random_matrix(t, rows, cols, 4);
  auto x = test::random_floats(cols, 5, -2, 2), nw = test::random_floats(cols, 6, 0.5, 1.5);
  auto y = poisoned(rows);
  auto k = kernels_with(tuning);
  run({k.matvec_norm(w.view, nan_padded(x), llm::upload_padded(context(), "nw", nw), y, rows, cols, 1e-6)});
  auto want = ref::linear(linear_of(w, rows, cols), ref::rmsnorm(as_double(x), as_double(nw), 1e-6));
  EXPECT_TRUE(close_normalised(context().read<float>(y, 0, rows), want, 1e-5));
}

// act = silu(gate xn) * up xn.
void check_gate_up_silu(WeightFormat t, uint32_t inter, uint32_t hidden, const Tuning& tuning) {
  // One matrix [gate; up] of 2 * inter rows, uploaded in the interleaved order.
  Matrix w = random_matrix(t, 2 * inter, hidden, 7, [&](uint32_t p) {
    auto [which, row] = llm::gate_up_source_row(p);
    return which * inter + row;
  });
  auto x = test::random_floats(hidden, 8, -2, 2), nw = test::random_floats(hidden, 9, 0.5, 1.5);
  auto act = poisoned(inter);
  auto k = kernels_with(tuning);
  run({k.gate_up_silu(w.view, nan_padded(x), llm::upload_padded(context(), "nw", nw), act, inter, hidden,
                      1e-6)});
  const auto xn = ref::rmsnorm(as_double(x), as_double(nw), 1e-6);
  auto wv = as_double(w.values);
  ref::Linear gate{{wv.begin(), wv.begin() + inter * hidden}, {}, inter, hidden};
  ref::Linear up{{wv.begin() + inter * hidden, wv.end()}, {}, inter, hidden};
  EXPECT_TRUE(close_normalised(context().read<float>(act, 0, inter),
                               ref::swiglu(ref::linear(gate, xn), ref::linear(up, xn)), 1e-5));
}

class LlmKernel : public ::testing::TestWithParam<WeightFormat> {};

// Test that resid += W x matches the reference at 37 rows of 50 (neither a multiple of 8).
TEST_P(LlmKernel, MatvecResidual) {
  check_matvec_residual(GetParam(), 37, 50, std::nullopt);
}

// Test that y = W rmsnorm(x) (the LM head) matches the reference, 37 x 50.
TEST_P(LlmKernel, MatvecNorm) {
  check_matvec_norm(GetParam(), 37, 50, std::nullopt);
}

// Test that act = silu(gate xn) * up xn matches the reference with 37 intermediate rows of 50.
TEST_P(LlmKernel, GateUpSilu) {
  check_gate_up_silu(GetParam(), 37, 50, std::nullopt);
}

// Heads 4 on kv heads 2, head_dim 12, hidden 50.
llm::ModelConfig attention_config() {
  return {.hidden_size = 50,
          .num_heads = 4,
          .num_kv_heads = 2,
          .head_dim = 12,
          .rope_theta = 1e4,
          .rms_norm_eps = 1e-6};
}

// Rows of T tokens, each padded with zeros to a multiple of 8 (the prefill activation layout);
// rows from T up to whole tiles of tokens hold NaN (the products compute them; nobody reads them).
gpu::Buffer token_rows(const std::vector<float>& values, uint32_t T, uint32_t width) {
  constexpr uint32_t tile = llm::DecodeKernels::kPromptTokenTile;
  const uint32_t stride = (width + 7) / 8 * 8, tiles = (T + tile - 1) / tile * tile;
  std::vector<float> rows(size_t(tiles) * stride, 0.0f);
  for (uint32_t t = 0; t < tiles; ++t)
    for (uint32_t i = 0; i < width; ++i) rows[t * stride + i] = t < T ? values[t * width + i] : kNaN;
  return context().upload<float>(rows, BufferUsage::StorageIO, "test.rows");
}
std::vector<float> read_rows(const gpu::Buffer& b, uint32_t T, uint32_t width) {
  const uint32_t stride = (width + 7) / 8 * 8;
  auto all = context().read_all<float>(b);
  std::vector<float> out;
  for (uint32_t t = 0; t < T; ++t)
    out.insert(out.end(), all.begin() + t * stride, all.begin() + t * stride + width);
  return out;
}

// A random Q/K/V projection (weights, bias) packed as the kernels want it, the RoPE table, and
// the reference: q, k, v (after bias and RoPE) of one token.
struct Qkv {
  llm::ModelConfig c;
  uint32_t hd = c.head_dim, q_rows = c.num_heads * hd, kv_rows = c.num_kv_heads * hd,
           rows = q_rows + 2 * kv_rows;
  Matrix w;
  std::vector<float> bias;
  gpu::Buffer packed_bias, rope;

  Qkv(WeightFormat t, uint32_t ctx_len, const llm::ModelConfig& cfg = attention_config()) : c(cfg) {
    auto source = [&](uint32_t p) {
      auto [which, row] = llm::qkv_source_row(p, hd, q_rows, kv_rows);
      return (which == 0 ? 0 : which == 1 ? q_rows : q_rows + kv_rows) + row;
    };
    w = random_matrix(t, rows, c.hidden_size, 10, source);
    bias = test::random_floats(rows, 11, -0.5, 0.5);
    std::vector<float> packed(rows), table(ctx_len * hd);
    for (uint32_t p = 0; p < rows; ++p) packed[p] = bias[source(p)];
    for (uint32_t p = 0; p < ctx_len; ++p)
      for (uint32_t i = 0; i < hd / 2; ++i) {
        const double a = p * std::pow(c.rope_theta, -2.0 * i / hd);
        table[(p * hd / 2 + i) * 2] = float(std::cos(a));
        table[(p * hd / 2 + i) * 2 + 1] = float(std::sin(a));
      }
    packed_bias = llm::upload_padded(context(), "bias", packed);
    rope = llm::upload_padded(context(), "rope", table);
  }
  // {q, k, v} of a token with normalised input xn at position pos.
  std::array<std::vector<double>, 3> reference(const std::vector<double>& xn, uint32_t pos) const {
    auto wv = as_double(w.values), bv = as_double(bias);
    auto proj = [&](uint32_t first, uint32_t n) {
      ref::Linear l{
          {wv.begin() + size_t(first) * c.hidden_size, wv.begin() + size_t(first + n) * c.hidden_size},
          {bv.begin() + first, bv.begin() + first + n},
          n,
          c.hidden_size};
      return ref::linear(l, xn);
    };
    std::array<std::vector<double>, 3> out{proj(0, q_rows), proj(q_rows, kv_rows),
                                           proj(q_rows + kv_rows, kv_rows)};
    for (uint32_t h = 0; h < c.num_heads; ++h)
      llm::rope_rotate(std::span(out[0]).subspan(h * hd, hd), pos, llm::rope_frequencies(c));
    for (uint32_t h = 0; h < c.num_kv_heads; ++h)
      llm::rope_rotate(std::span(out[1]).subspan(h * hd, hd), pos, llm::rope_frequencies(c));
    return out;
  }
  // Expects the caches' rows at `pos` to hold k, v; NaN (unwritten) when k is empty.
  void expect_cache_at(const std::vector<float>& kg, const std::vector<float>& vg, uint32_t ctx_len,
                       uint32_t pos, const std::vector<double>& k, const std::vector<double>& v) const {
    for (uint32_t h = 0; h < c.num_kv_heads; ++h) {
      const auto at = kg.begin() + (h * ctx_len + pos) * hd;
      std::vector<float> kr(at, at + hd),
          vr(vg.begin() + (at - kg.begin()), vg.begin() + (at - kg.begin()) + hd);
      if (k.empty()) {
        for (uint32_t d = 0; d < hd; ++d)
          ASSERT_TRUE(std::isnan(kr[d]) && std::isnan(vr[d]))
              << "cache written at pos " << pos << ", head " << h;
      } else {
        EXPECT_TRUE(close_normalised(kr, {k.begin() + h * hd, k.begin() + (h + 1) * hd}, 1e-5))
            << "k, pos " << pos;
        EXPECT_TRUE(close_normalised(vr, {v.begin() + h * hd, v.begin() + (h + 1) * hd}, 1e-5))
            << "v, pos " << pos;
      }
    }
  }
};

// The fused Q/K/V kernel with config c: rmsnorm, projection + bias, RoPE at pos 5, K and V
// appended to the caches at pos 5 and nowhere else.
void check_qkv_rope(WeightFormat t, const llm::ModelConfig& cfg, const Tuning& tuning) {
  const uint32_t ctx_len = 7, pos = 5;
  const Qkv s(t, ctx_len, cfg);
  const auto& c = s.c;
  auto x = test::random_floats(c.hidden_size, 12, -2, 2),
       nw = test::random_floats(c.hidden_size, 13, 0.5, 1.5);
  const uint32_t state[4] = {pos, 0, 0, 0};
  auto q = poisoned(s.q_rows), kc = poisoned(s.kv_rows * ctx_len), vc = poisoned(s.kv_rows * ctx_len);
  auto k = kernels_with(tuning);
  run({k.qkv_rope(s.w.view, llm::upload_padded(context(), "x", x), llm::upload_padded(context(), "nw", nw),
                  s.packed_bias, s.rope, context().upload<uint32_t>(state, BufferUsage::StorageIO, "state"),
                  q, kc, vc, c, ctx_len)});
  const auto want = s.reference(ref::rmsnorm(as_double(x), as_double(nw), 1e-6), pos);
  EXPECT_TRUE(close_normalised(context().read<float>(q, 0, s.q_rows), want[0], 1e-5));
  auto kg = context().read_all<float>(kc), vg = context().read_all<float>(vc);
  for (uint32_t p = 0; p < ctx_len; ++p)
    s.expect_cache_at(kg, vg, ctx_len, p, p == pos ? want[1] : std::vector<double>{}, want[2]);
}

// Test the fused Q/K/V kernel (heads 4, kv heads 2, head_dim 12, hidden 50).
TEST_P(LlmKernel, QkvRope) {
  check_qkv_rope(GetParam(), attention_config(), std::nullopt);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, LlmKernel,
                         ::testing::Values(WeightFormat::F32, WeightFormat::F16, WeightFormat::BF16),
                         [](const auto& info) { return gpu::to_string(info.param); });
// The quantized formats (rows of 50 columns: one partial block; the K formats' a partial 256).
INSTANTIATE_TEST_SUITE_P(Quantized, LlmKernel, ::testing::ValuesIn(test::quantized_formats()),
                         [](const auto& info) { return gpu::to_string(info.param); });

// Every matrix-vector kernel under tunings that cover its cases: a row in several passes of its
// team (team 32, 64), in one pass with idle lanes (128, 256), 1 to 32 rows per workgroup, teams
// of several subgroups; the RMSNorm kernels with x read directly and staged; f32, f16 and q8_0
// weights. Shapes: 601 columns (not a multiple of 8, nor of any team's span), rows not a multiple of
// any workgroup's rows (37; gate/up 2 x 37; Q/K/V 84).
class LlmMatvecTuned : public ::testing::TestWithParam<std::tuple<WeightFormat, llm::MatvecTuning>> {
 protected:
  static constexpr uint32_t kCols = 601;
  // Skips tunings this adapter cannot run (a team smaller than its largest subgroup).
  void SetUp() override {
    const uint32_t team = std::get<1>(GetParam()).team;
    if (team < context().adapter().subgroup_max_size)
      GTEST_SKIP() << "team " << team << " < subgroup size " << context().adapter().subgroup_max_size;
  }
  WeightFormat dtype() const { return std::get<0>(GetParam()); }
  llm::MatvecTuning tuning() const { return std::get<1>(GetParam()); }
  // RoPE and gate/up pairs must not straddle workgroups: odd rows per workgroup are refused.
  bool pairs_allowed() const { return tuning().rows_per_workgroup() % 2 == 0; }
};

TEST_P(LlmMatvecTuned, Residual) {
  check_matvec_residual(dtype(), 37, kCols, tuning());
}

TEST_P(LlmMatvecTuned, Norm) {
  check_matvec_norm(dtype(), 37, kCols, tuning());
}

TEST_P(LlmMatvecTuned, GateUpSilu) {
  if (!pairs_allowed()) {
    EXPECT_THROW(check_gate_up_silu(dtype(), 37, kCols, tuning()), Error);
    return;
  }
  check_gate_up_silu(dtype(), 37, kCols, tuning());
}

TEST_P(LlmMatvecTuned, QkvRope) {
  // 5 heads on 1 kv head of 12: 60 + 2 * 12 = 84 rows.
  const llm::ModelConfig c{.hidden_size = kCols,
                           .num_heads = 5,
                           .num_kv_heads = 1,
                           .head_dim = 12,
                           .rope_theta = 1e4,
                           .rms_norm_eps = 1e-6};
  if (!pairs_allowed()) {
    EXPECT_THROW(check_qkv_rope(dtype(), c, tuning()), Error);
    return;
  }
  check_qkv_rope(dtype(), c, tuning());
}

INSTANTIATE_TEST_SUITE_P(
    Tunings, LlmMatvecTuned,
    ::testing::Combine(::testing::Values(WeightFormat::F32, WeightFormat::F16, WeightFormat::Q8_0),
                       ::testing::Values(llm::MatvecTuning{32, 1, 32}, llm::MatvecTuning{32, 2, 128},
                                         llm::MatvecTuning{32, 4, 256}, llm::MatvecTuning{64, 3, 64},
                                         llm::MatvecTuning{64, 4, 128}, llm::MatvecTuning{128, 2, 256},
                                         llm::MatvecTuning{256, 1, 256}, llm::MatvecTuning{256, 4, 256},
                                         llm::MatvecTuning{32, 2, 128, true},
                                         llm::MatvecTuning{32, 4, 256, true},  // a quantized LM head's
                                         llm::MatvecTuning{64, 3, 64, true},
                                         llm::MatvecTuning{128, 2, 256, true},
                                         llm::MatvecTuning{256, 4, 256, true})),
    [](const auto& info) {
      const auto& t = std::get<1>(info.param);
      return std::string(gpu::to_string(std::get<0>(info.param))) + "_team" + std::to_string(t.team) +
             "_rows" + std::to_string(t.rows_per_team) + "_wg" + std::to_string(t.workgroup) +
             (t.staged_x ? "_staged" : "");
    });

// Test that tunings the kernels cannot run are refused with an Error naming the tuning.
TEST(LlmMatvecTuning, BadTuningsAreRefused) {
  const uint32_t rows = 16, cols = 40;
  Matrix w = random_matrix(WeightFormat::F32, rows, cols, 50);
  auto x = llm::upload_padded(context(), "x", test::random_floats(cols, 51, -1, 1));
  auto resid = poisoned(rows);
  const uint32_t too_many = context().limits().max_compute_invocations_per_workgroup * 2;
  for (const llm::MatvecTuning t :
       {llm::MatvecTuning{48, 1, 96}, llm::MatvecTuning{32, 5, 128}, llm::MatvecTuning{64, 1, 96},
        llm::MatvecTuning{32, 0, 128}, llm::MatvecTuning{too_many, 1, too_many}}) {
    auto k = kernels_with(t);
    try {
      k.matvec_residual(w.view, x, resid, rows, cols);
      ADD_FAILURE() << "accepted " << t.name();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(t.name()), std::string::npos) << e.what();
    }
  }
}

// Test the rule at every Qwen2.5-0.5B/1.5B shape: a runnable tuning (even rows per workgroup,
// team a power of two >= the subgroup) that keeps the grid at >= 512 workgroups where rows allow,
// reading x directly (not staged) in the 1.5B gate/up only of the 16-bit shapes (where measured);
// bf16 is tuned as f16 (same bytes per load), f32 with loads of half as many columns.
TEST(LlmMatvecTuning, RuleAtQwenShapes) {
  for (WeightFormat t : {WeightFormat::F16, WeightFormat::BF16, WeightFormat::F32}) {
    llm::DecodeKernels k(context());
    for (auto [rows, cols] : std::vector<std::pair<uint32_t, uint32_t>>{{1152, 896},
                                                                        {896, 896},
                                                                        {9728, 896},
                                                                        {896, 4864},
                                                                        {151936, 896},
                                                                        {2048, 1536},
                                                                        {1536, 1536},
                                                                        {17920, 1536},
                                                                        {1536, 8960},
                                                                        {151936, 1536}}) {
      const auto r = k.matvec_tuning(rows, cols, t);
      SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + ": " + r.name());
      EXPECT_TRUE(std::has_single_bit(r.team));
      EXPECT_GE(r.team, std::max(32u, context().adapter().subgroup_max_size));
      EXPECT_EQ(r.rows_per_workgroup() % 2, 0u);
      EXPECT_TRUE(llm::ceil_div(rows, r.rows_per_workgroup()) >= 512 || r.rows_per_workgroup() == 2);
      if (t != WeightFormat::F32) {
        EXPECT_EQ(r.staged_x, rows != 17920);
        EXPECT_EQ(r, k.matvec_tuning(rows, cols, WeightFormat::F16));
      }
    }
  }
}

// Test the rule's LM head by format: quantized weights take the smallest team with 4 rows each, f16
// teams of at least 64 with 2 (x staged in both; the shapes measured fastest, RESULTS session 31),
// and every one is runnable with the grid in thousands of workgroups.
TEST(LlmMatvecTuning, QuantizedLmHeadTakesFourRowsATeam) {
  llm::DecodeKernels k(context());
  const uint32_t smallest = std::max(32u, std::bit_ceil(context().adapter().subgroup_max_size));
  for (uint32_t cols : {896u, 1536u}) {
    SCOPED_TRACE(std::to_string(cols) + " columns");
    for (WeightFormat t : {WeightFormat::Q8_0, WeightFormat::Q5_0, WeightFormat::Q4_K, WeightFormat::Q6_K}) {
      const auto q = k.matvec_tuning(151936, cols, t);
      EXPECT_EQ(q.rows_per_team, 4u) << q.name();
      EXPECT_TRUE(q.staged_x) << q.name();
      EXPECT_EQ(q.team, k.matvec_tuning(1152, cols, t).team) << q.name();  // the loads' rule, not 64
      EXPECT_GE(q.team, smallest) << q.name();
      EXPECT_EQ(q.workgroup % q.team, 0u) << q.name();
      EXPECT_GE(llm::ceil_div(151936, q.rows_per_workgroup()), 1024u) << q.name();
    }
    const auto f = k.matvec_tuning(151936, cols, WeightFormat::F16);
    EXPECT_EQ(f.rows_per_team, 2u) << f.name();
    EXPECT_GE(f.team, 64u) << f.name();
  }
}

// Decode attention of `heads` query heads on `kv_heads` at position pos over a cache of ctx_len,
// against the reference: `attend` makes the steps from (q, k, v, state, out). Cache slots past
// pos hold NaN, so reading past pos (non-causal) fails.
struct AttentionLayout {
  uint32_t heads, kv_heads, hd, ctx_len;
};
void check_decode_attention(
    const AttentionLayout& a, uint32_t pos,
    const std::function<std::vector<gpu::Dispatch>(
        llm::DecodeKernels&, const llm::ModelConfig&, const gpu::Buffer& q, const gpu::Buffer& k,
        const gpu::Buffer& v, const gpu::Buffer& state, const gpu::Buffer& out)>& attend) {
  auto c = attention_config();
  c.num_heads = a.heads, c.num_kv_heads = a.kv_heads, c.head_dim = a.hd;
  const uint32_t hd = a.hd, cache = a.kv_heads * a.ctx_len * hd;
  SCOPED_TRACE("heads " + std::to_string(a.heads) + "/" + std::to_string(a.kv_heads) + ", hd " +
               std::to_string(hd) + ", ctx " + std::to_string(a.ctx_len) + ", pos " + std::to_string(pos));
  auto q = test::random_floats(a.heads * hd, 20 + a.ctx_len, -1.5, 1.5);
  auto kc = test::random_floats(cache, 21 + pos, -1.5, 1.5);
  auto vc = test::random_floats(cache, 22 + pos, -1, 1);
  for (uint32_t h = 0; h < a.kv_heads; ++h)
    for (uint32_t p = pos + 1; p < a.ctx_len; ++p)
      for (uint32_t d = 0; d < hd; ++d)
        kc[(h * a.ctx_len + p) * hd + d] = vc[(h * a.ctx_len + p) * hd + d] = kNaN;
  const uint32_t state[4] = {pos, 0, 0, 0};
  auto out = poisoned(a.heads * hd);
  llm::DecodeKernels k(context());
  run(attend(k, c, llm::upload_padded(context(), "q", q), llm::upload_padded(context(), "k", kc),
             llm::upload_padded(context(), "v", vc),
             context().upload<uint32_t>(state, BufferUsage::StorageIO, "state"), out));
  auto want =
      ref::attention(as_double(q), as_double(kc), as_double(vc), a.heads, a.kv_heads, hd, a.ctx_len, pos + 1);
  EXPECT_TRUE(close_normalised(context().read<float>(out, 0, a.heads * hd), want, 1e-5));
}

// Test decode attention split along the cache against the reference: per layout (heads on kv
// heads, head_dim, capacity, chunk, heads per workgroup), positions at and around chunk edges.
// The partials hold NaN, so combining a chunk that was not written (or before it was) fails; the
// arrival counters are shared by all positions of a layout, so each dispatch must leave them at
// zero for the next one's last workgroup to combine (and they must be zero at the end).
TEST(LlmKernels, AttentionSplitAlongTheCache) {
  struct Case {
    AttentionLayout layout;
    llm::AttentionSplit split;
    std::vector<uint32_t> positions;
  };
  const std::vector<Case> cases = {
      {{4, 2, 12, 53}, {.chunk = 16}, {0, 1, 15, 16, 17, 36, 52}},
      {{6, 2, 12, 53}, {.chunk = 16, .heads_per_wg = 3}, {0, 1, 15, 16, 17, 41}},
      {{6, 1, 64, 29}, {.chunk = 7, .heads_per_wg = 2}, {0, 6, 7, 8, 28}},
      {{4, 2, 12, 131}, {}, {63, 64, 65, 130}},      // the default split
      {{14, 2, 64, 4096}, {}, {3999}},               // Qwen2.5-0.5B at 4,000 positions: 63 chunks a head
      {{14, 2, 64, 4096}, {.chunk = 256}, {3999}},   // a workgroup of 256 threads
      {{12, 2, 128, 4096}, {.chunk = 100}, {2999}},  // Qwen2.5-1.5B's heads, 128 threads for 100 positions
      {{3, 1, 16, 300}, {.chunk = 1}, {299}},        // 300 chunks: more than the workgroup's 64 threads
  };
  for (const Case& cs : cases) {
    SCOPED_TRACE("chunk " + std::to_string(cs.split.chunk) + ", heads per workgroup " +
                 std::to_string(cs.split.heads_per_wg));
    auto c = attention_config();
    c.num_heads = cs.layout.heads, c.num_kv_heads = cs.layout.kv_heads, c.head_dim = cs.layout.hd;
    const auto arrivals = context().buffer(4 * llm::DecodeKernels::attend_arrivals_words(c, cs.split),
                                           BufferUsage::StorageIO, "arrivals");
    for (uint32_t pos : cs.positions)
      check_decode_attention(cs.layout, pos,
                             [&](llm::DecodeKernels& k, const llm::ModelConfig& c, auto& q, auto& kc,
                                 auto& vc, auto& state, auto& out) {
                               const auto partials = poisoned(
                                   llm::DecodeKernels::attend_partials_words(c, cs.layout.ctx_len, cs.split));
                               return std::vector{k.attend(q, kc, vc, state, partials, arrivals, out, c,
                                                           cs.layout.ctx_len, cs.split)};
                             });
    const auto counts = context().read<uint32_t>(arrivals, 0, c.num_heads / cs.split.heads_per_wg);
    EXPECT_EQ(counts, std::vector<uint32_t>(counts.size(), 0u)) << "arrival counters left behind";
  }
}

// Test the one-pass short-context attention (attend_short: a workgroup of 256 threads per head)
// against the reference: positions 0, 1, around the workgroup's 256 (a thread's second score),
// and the last one below the bound; head_dim 12 (3 vec4s: slices of 85 threads, one idle), 64 and
// 128 with Qwen2.5-0.5B's and 1.5B's groups.
TEST(LlmKernels, AttentionShortInOnePass) {
  struct Case {
    AttentionLayout layout;
    uint32_t short_max;
    std::vector<uint32_t> positions;
  };
  const std::vector<Case> cases = {
      {{4, 2, 12, 53}, 37, {0, 1, 2, 17, 36}},
      {{14, 2, 64, 300}, 299, {0, 5, 143, 255, 256, 257, 298}},
      {{12, 2, 128, 520}, 512, {1, 63, 300, 511}},
  };
  for (const Case& cs : cases) {
    SCOPED_TRACE("bound " + std::to_string(cs.short_max));
    for (uint32_t pos : cs.positions)
      check_decode_attention(
          cs.layout, pos,
          [&](llm::DecodeKernels& k, const llm::ModelConfig& c, auto& q, auto& kc, auto& vc, auto& state,
              auto& out) {
            return std::vector{k.attend_short(q, kc, vc, state, out, c, cs.layout.ctx_len, cs.short_max)};
          });
  }
}

// Test that attend_short refuses bounds it cannot hold, naming the limit.
TEST(LlmKernels, AttentionShortBoundIsChecked) {
  const auto c = attention_config();
  llm::DecodeKernels k(context());
  auto b = poisoned(8);
  auto expect_error = [&](uint32_t ctx_len, uint32_t bound, const std::string& what) {
    try {
      k.attend_short(b, b, b, b, b, c, ctx_len, bound);
      FAIL() << "accepted bound " << bound << "; expected an error about " << what;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  expect_error(16, 0, "must cover 1 to --ctx (16) positions");
  expect_error(16, 17, "must cover 1 to --ctx (16) positions");
  expect_error(1u << 20, 1u << 20, "maxComputeWorkgroupStorageSize");
}

// The fused short-context layer after qkv_rope: attend_o (attention times W_o, a partial per kv
// head), gate_up_silu_sum (x + partials -> x_next, then rmsnorm, gate/up, SiLU), down into
// x_out = x_next + W_down act; against the reference and against the split sequence (attend,
// o_proj + residual, gate_up_silu, down + residual) on the same buffers. Cache slots past pos and
// every output hold NaN beforehand.
struct FusedLayerCase {
  uint32_t heads, kv_heads, hd, hidden, inter, ctx_len;
  std::vector<uint32_t> positions;
};
void PrintTo(const FusedLayerCase& f, std::ostream* os) {
  *os << f.heads << "/" << f.kv_heads << " heads, hd " << f.hd << ", hidden " << f.hidden;
}

void check_fused_layer(WeightFormat t, const FusedLayerCase& f) {
  auto c = attention_config();
  c.num_heads = f.heads, c.num_kv_heads = f.kv_heads, c.head_dim = f.hd, c.hidden_size = f.hidden;
  c.intermediate_size = f.inter;
  const uint32_t q_rows = f.heads * f.hd, cache = f.kv_heads * f.ctx_len * f.hd;
  Matrix w_o = random_matrix(t, f.hidden, q_rows, 30);
  Matrix w_gu = random_matrix(t, 2 * f.inter, f.hidden, 31, [&](uint32_t p) {
    auto [which, row] = llm::gate_up_source_row(p);
    return which * f.inter + row;
  });
  Matrix w_down = random_matrix(t, f.hidden, f.inter, 32);
  auto x = test::random_floats(f.hidden, 33, -2, 2), nw = test::random_floats(f.hidden, 34, 0.5, 1.5);
  auto q = test::random_floats(q_rows, 35, -1.5, 1.5);
  auto wv = as_double(w_gu.values);
  ref::Linear gate{{wv.begin(), wv.begin() + f.inter * f.hidden}, {}, f.inter, f.hidden};
  ref::Linear up{{wv.begin() + f.inter * f.hidden, wv.end()}, {}, f.inter, f.hidden};
  llm::DecodeKernels k(context());
  for (uint32_t pos : f.positions) {
    SCOPED_TRACE("pos " + std::to_string(pos));
    auto kc = test::random_floats(cache, 36 + pos, -1.5, 1.5),
         vc = test::random_floats(cache, 37 + pos, -1, 1);
    for (uint32_t h = 0; h < f.kv_heads; ++h)
      for (uint32_t p = pos + 1; p < f.ctx_len; ++p)
        for (uint32_t d = 0; d < f.hd; ++d)
          kc[(h * f.ctx_len + p) * f.hd + d] = vc[(h * f.ctx_len + p) * f.hd + d] = kNaN;
    const uint32_t words[4] = {pos, 0, 0, 0};
    auto state = context().upload<uint32_t>(words, BufferUsage::StorageIO, "state");
    auto q_buf = llm::upload_padded(context(), "q", q), k_buf = llm::upload_padded(context(), "k", kc),
         v_buf = llm::upload_padded(context(), "v", vc), x_buf = llm::upload_padded(context(), "x", x),
         nw_buf = llm::upload_padded(context(), "nw", nw);
    auto parts = poisoned(llm::DecodeKernels::attend_o_parts_words(c)), act = poisoned(f.inter),
         x_next = poisoned(f.hidden), x_out = poisoned(f.hidden);
    run({k.attend_o(w_o.view, q_buf, k_buf, v_buf, state, parts, c, f.ctx_len),
         k.gate_up_silu_sum(w_gu.view, x_buf, parts, nw_buf, act, x_next, c),
         k.matvec_residual_to(w_down.view, act, x_next, x_out, f.hidden, f.inter)});

    const auto att = ref::attention(as_double(q), as_double(kc), as_double(vc), f.heads, f.kv_heads, f.hd,
                                    f.ctx_len, pos + 1);
    auto x1 = ref::linear(linear_of(w_o, f.hidden, q_rows), att);
    for (uint32_t i = 0; i < f.hidden; ++i) x1[i] += x[i];
    const auto xn = ref::rmsnorm(x1, as_double(nw), 1e-6);
    const auto act_want = ref::swiglu(ref::linear(gate, xn), ref::linear(up, xn));
    auto x2 = ref::linear(linear_of(w_down, f.hidden, f.inter), act_want);
    for (uint32_t i = 0; i < f.hidden; ++i) x2[i] += x1[i];
    EXPECT_TRUE(close_normalised(context().read<float>(x_next, 0, f.hidden), x1, 1e-5)) << "x_next";
    EXPECT_TRUE(close_normalised(context().read<float>(act, 0, f.inter), act_want, 1e-5)) << "act";
    const auto fused = context().read<float>(x_out, 0, f.hidden);
    EXPECT_TRUE(close_normalised(fused, x2, 1e-5)) << "x_out";

    const llm::AttentionSplit split{.chunk = 16};
    auto att_buf = poisoned(q_rows), act_split = poisoned(f.inter);
    auto chunks = poisoned(llm::DecodeKernels::attend_partials_words(c, f.ctx_len, split));
    auto arrivals = context().buffer(4 * llm::DecodeKernels::attend_arrivals_words(c, split),
                                     BufferUsage::StorageIO, "arrivals");
    run({k.attend(q_buf, k_buf, v_buf, state, chunks, arrivals, att_buf, c, f.ctx_len, split),
         k.matvec_residual(w_o.view, att_buf, x_buf, f.hidden, q_rows),
         k.gate_up_silu(w_gu.view, x_buf, nw_buf, act_split, f.inter, f.hidden, 1e-6),
         k.matvec_residual(w_down.view, act_split, x_buf, f.hidden, f.inter)});
    EXPECT_TRUE(close_normalised(fused, as_double(context().read<float>(x_buf, 0, f.hidden)), 1e-5))
        << "fused vs split";
  }
}

class LlmFusedLayer : public ::testing::TestWithParam<std::tuple<WeightFormat, FusedLayerCase>> {};
std::string fused_layer_name(const ::testing::TestParamInfo<LlmFusedLayer::ParamType>& info) {
  const auto& f = std::get<1>(info.param);
  return std::string(gpu::to_string(std::get<0>(info.param))) + "_heads" + std::to_string(f.heads) + "_kv" +
         std::to_string(f.kv_heads) + "_hd" + std::to_string(f.hd);
}

// Test the fused layer at contexts 1, 37 and across attend_o's tiles of 32 positions, for GQA
// groups of 2, 3 (a group's W_o columns start inside a group of 8), 6 with head_dim 64, and 7
// (Qwen2.5-0.5B's).
TEST_P(LlmFusedLayer, MatchesTheReferenceAndTheSplitLayer) {
  check_fused_layer(std::get<0>(GetParam()), std::get<1>(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(
    Groups, LlmFusedLayer,
    ::testing::Combine(::testing::Values(WeightFormat::F32, WeightFormat::F16, WeightFormat::BF16),
                       ::testing::Values(FusedLayerCase{4, 2, 12, 50, 37, 150, {0, 31, 32, 36, 149}},
                                         FusedLayerCase{6, 2, 12, 50, 37, 70, {0, 40, 69}},
                                         FusedLayerCase{6, 1, 64, 41, 29, 40, {36}},
                                         FusedLayerCase{14, 2, 64, 72, 45, 40, {0, 36}})),
    fused_layer_name);
// Quantized W_o whose head groups' columns start inside a group of 8 and a block of 32.
INSTANTIATE_TEST_SUITE_P(
    Quantized, LlmFusedLayer,
    ::testing::Combine(::testing::Values(WeightFormat::Q4_1, WeightFormat::Q5_K, WeightFormat::Q6_K),
                       ::testing::Values(FusedLayerCase{6, 2, 12, 50, 37, 70, {0, 40, 69}})),
    fused_layer_name);

// Test that attend_o refuses a tuning whose workgroup has fewer threads than the kv group's
// output vec4s, naming both.
TEST(LlmKernels, AttendORefusesATooSmallWorkgroup) {
  auto c = attention_config();
  c.num_heads = 6, c.num_kv_heads = 1, c.head_dim = 64;  // 6 x 64 / 4 = 96 output vec4s
  auto b = poisoned(8);
  const Matrix w_o = random_matrix(WeightFormat::F32, c.hidden_size, c.num_heads * c.head_dim, 5);
  llm::DecodeKernels k(context());
  const uint32_t team = std::max(32u, std::bit_ceil(context().adapter().subgroup_max_size));
  k.force_matvec_tuning(llm::MatvecTuning{.team = team, .rows_per_team = 1, .workgroup = team});
  if (team >= 96) GTEST_SKIP() << "subgroups of " << team << " threads";
  try {
    k.attend_o(w_o.view, b, b, b, b, b, c, 4);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("96 vec4s"), std::string::npos) << e.what();
  }
}

// Test that a split the kernels cannot run is refused, naming what is wrong.
TEST(LlmKernels, AttentionSplitIsChecked) {
  const auto c = attention_config();  // 2 query heads per kv head
  llm::DecodeKernels k(context());
  auto b = poisoned(8);
  auto expect_error = [&](llm::AttentionSplit split, const std::string& what) {
    try {
      k.attend(b, b, b, b, b, b, b, c, 16, split);
      FAIL() << "accepted; expected an error about " << what;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  expect_error({.chunk = 16, .heads_per_wg = 3}, "must divide the query heads per kv head (2)");
  expect_error({.chunk = 0}, "chunk (--attn-chunk) must be at least 1");
  expect_error({.chunk = 1u << 20}, "maxComputeWorkgroupStorageSize");
}

// Test that the embedding row of tokens[pos] lands in x, for every storage format (hidden 50).
TEST(LlmKernels, EmbedReadsTheTokenAtPos) {
  for (WeightFormat t : {WeightFormat::F32, WeightFormat::F16, WeightFormat::BF16}) {
    const uint32_t vocab = 300, hidden = 50, pos = 2;
    Matrix e = random_matrix(t, vocab, hidden, 30);
    const uint32_t tokens[4] = {17, 250, 123, 5}, state[4] = {pos, 0, 0, 0};
    auto x = poisoned(hidden);
    llm::DecodeKernels k(context());
    run({k.embed(e.view, context().upload<uint32_t>(tokens, BufferUsage::StorageIO, "tokens"),
                 context().upload<uint32_t>(state, BufferUsage::StorageIO, "state"), x, hidden)});
    auto got = context().read<float>(x, 0, hidden);
    for (uint32_t i = 0; i < hidden; ++i) ASSERT_EQ(got[i], e.values[123 * hidden + i]) << "element " << i;
  }
}

// Test greedy argmax over 5,000 logits in chunks of 256 (20 partial maxima): the lowest index of
// a tied maximum is written to tokens[pos + 1], and pos advances.
TEST(LlmKernels, ArgmaxTiesGoToTheLowestIndex) {
  const uint32_t vocab = 5000, chunk = 256, partials = (vocab + chunk - 1) / chunk;
  for (uint32_t first : {3u, 2600u, 4999u}) {
    auto logits = test::random_floats(vocab, first, -5, 5);
    logits[first] = 7.5f;
    if (first + 1000 < vocab) logits[first + 1000] = 7.5f;  // a tie in a later chunk
    if (first > 300) logits[first - 300] = 7.4999f;         // just below, earlier
    const uint32_t state[4] = {3, 0, 0, 0};
    std::vector<uint32_t> tokens(8, 0xdeadbeefu);
    auto tok = context().upload<uint32_t>(tokens, BufferUsage::StorageIO, "tokens");
    auto st = context().upload<uint32_t>(state, BufferUsage::StorageIO, "state");
    llm::DecodeKernels k(context());
    auto steps = k.argmax(llm::upload_padded(context(), "logits", logits), poisoned(partials),
                          poisoned(partials), tok, st, vocab, chunk);
    run({steps[0], steps[1]});
    auto got = context().read_all<uint32_t>(tok);
    EXPECT_EQ(got[4], first);
    EXPECT_EQ(got[3], 0xdeadbeefu);
    EXPECT_EQ(got[5], 0xdeadbeefu);
    EXPECT_EQ(context().read_all<uint32_t>(st)[0], 4u);
  }
}

// ---- Prefill: the tiled products of a prompt chunk, for every tile shape, at odd T ----

struct PromptCase {
  WeightFormat dtype;
  llm::PromptTile tile;
  uint32_t T;
};
std::string prompt_case_name(const PromptCase& p) {
  return std::string(gpu::to_string(p.dtype)) + "_tile" + std::to_string(p.tile.tokens) + "x" +
         std::to_string(p.tile.rows) + "_split" + std::to_string(p.tile.k_split) + "_groups" +
         std::to_string(p.tile.token_groups) + "_T" + std::to_string(p.T);
}
void PrintTo(const PromptCase& p, std::ostream* os) {
  *os << prompt_case_name(p);
}

class LlmPromptKernel : public ::testing::TestWithParam<PromptCase> {
 protected:
  llm::DecodeKernels kernels() const {
    llm::DecodeKernels k(context());
    k.force_prompt_tile(GetParam().tile);
    return k;
  }
  // {last position, the chunk's first position, its length T, 0}
  gpu::Buffer state(uint32_t p0) const {
    const uint32_t words[4] = {0, p0, GetParam().T, 0};
    return context().upload<uint32_t>(words, BufferUsage::StorageIO, "state");
  }
};

// Test the prefill Q/K/V product: T tokens from position 3 (state word 1); q rows per token,
// K/V at positions 3 .. 3 + T - 1, the positions before and after untouched (96 rows, hidden 50).
TEST_P(LlmPromptKernel, QkvRope) {
  const uint32_t T = GetParam().T, p0 = 3, ctx_len = p0 + T + 5;
  const Qkv s(GetParam().dtype, ctx_len);
  const auto& c = s.c;
  auto x = test::random_floats(T * c.hidden_size, 14, -2, 2),
       nw = test::random_floats(c.hidden_size, 15, 0.5, 1.5);
  auto q = token_rows(std::vector<float>(T * s.q_rows, kNaN), T, s.q_rows);
  auto kc = poisoned(s.kv_rows * ctx_len), vc = poisoned(s.kv_rows * ctx_len);
  // Room for any split: 8 slices of whole 128-token tiles, rows of the Q/K/V sums and a sum of squares.
  const uint64_t parts_words = 8ull * 128 * llm::ceil_div(T, 128) * llm::pad8(s.q_rows + 2 * s.kv_rows + 1);
  const auto steps = kernels().qkv_rope_prompt(
      s.w.view, token_rows(x, T, c.hidden_size), llm::upload_padded(context(), "nw", nw), s.packed_bias,
      s.rope, state(p0), q, kc, vc, poisoned(parts_words), parts_words, c, ctx_len, T);
  EXPECT_EQ(steps.size(), GetParam().tile.k_split > 1 ? 2u : 1u);
  run(steps);
  auto qg = context().read_all<float>(q), kg = context().read_all<float>(kc),
       vg = context().read_all<float>(vc);
  for (uint32_t t = 0; t < T; ++t) {
    const std::vector<float> xt(x.begin() + t * c.hidden_size, x.begin() + (t + 1) * c.hidden_size);
    const auto want = s.reference(ref::rmsnorm(as_double(xt), as_double(nw), 1e-6), p0 + t);
    ASSERT_TRUE(close_normalised({qg.begin() + t * s.q_rows, qg.begin() + (t + 1) * s.q_rows}, want[0], 1e-5))
        << "token " << t;
    s.expect_cache_at(kg, vg, ctx_len, p0 + t, want[1], want[2]);
  }
  for (uint32_t p = 0; p < ctx_len; ++p)
    if (p < p0 || p >= p0 + T) s.expect_cache_at(kg, vg, ctx_len, p, {}, {});
}

// Test the prefill product with residual: T tokens x 150 rows x 130 columns (several row tiles,
// the last partial; columns neither a multiple of 16 nor of 8; 9 steps of 16 columns, so a K
// split of 4 or 8 leaves slices without a step). The slices' buffer starts as NaN.
TEST_P(LlmPromptKernel, Residual) {
  const uint32_t T = GetParam().T, rows = 150, cols = 130;
  Matrix w = random_matrix(GetParam().dtype, rows, cols, 40);
  auto a = test::random_floats(T * cols, 41, -1, 1), resid = test::random_floats(T * rows, 42, -1, 1);
  auto r_buf = token_rows(resid, T, rows);
  const uint32_t part_tokens = 8 * 128 * llm::ceil_div(T, 128);  // room for any split
  const auto steps = kernels().residual_prompt(w.view, token_rows(a, T, cols), r_buf,
                                               poisoned(uint64_t(part_tokens) * llm::pad8(rows)), part_tokens,
                                               rows, cols, T);
  EXPECT_EQ(steps.size(), GetParam().tile.k_split > 1 ? 2u : 1u);
  run(steps);
  std::vector<double> want;
  for (uint32_t i = 0; i < T; ++i) {
    auto y =
        ref::linear(linear_of(w, rows, cols), as_double({a.begin() + i * cols, a.begin() + (i + 1) * cols}));
    for (uint32_t r = 0; r < rows; ++r) want.push_back(y[r] + resid[i * rows + r]);
  }
  EXPECT_TRUE(close_normalised(read_rows(r_buf, T, rows), want, 1e-5));
}

// Test the prefill RMSNorm + gate/up + SiLU product: T tokens, 75 intermediate rows (150 packed:
// a row tile ends inside a pair of pairs), hidden 70.
TEST_P(LlmPromptKernel, GateUpSilu) {
  const uint32_t T = GetParam().T, inter = 75, hidden = 70;
  Matrix w = random_matrix(GetParam().dtype, 2 * inter, hidden, 43, [&](uint32_t p) {
    auto [which, row] = llm::gate_up_source_row(p);
    return which * inter + row;
  });
  auto x = test::random_floats(T * hidden, 44, -2, 2), nw = test::random_floats(hidden, 45, 0.5, 1.5);
  auto act = token_rows(std::vector<float>(T * inter, kNaN), T, inter);
  run({kernels().gate_up_silu_prompt(w.view, token_rows(x, T, hidden),
                                     llm::upload_padded(context(), "nw", nw), act, inter, hidden, 1e-6, T)});
  auto wv = as_double(w.values);
  ref::Linear gate{{wv.begin(), wv.begin() + inter * hidden}, {}, inter, hidden};
  ref::Linear up{{wv.begin() + inter * hidden, wv.end()}, {}, inter, hidden};
  std::vector<double> want;
  for (uint32_t i = 0; i < T; ++i) {
    auto xn =
        ref::rmsnorm(as_double({x.begin() + i * hidden, x.begin() + (i + 1) * hidden}), as_double(nw), 1e-6);
    auto y = ref::swiglu(ref::linear(gate, xn), ref::linear(up, xn));
    want.insert(want.end(), y.begin(), y.end());
  }
  EXPECT_TRUE(close_normalised(read_rows(act, T, inter), want, 1e-5));
}

// Every tile at T = 100 (several token tiles, the last partial); the smallest at 1 and 31 (one
// partial tile), the middle one at 33 (a whole tile and one token). K splits (the residual
// product; the normed ones ignore them): 4 and 8 (slices without a step), 3 and 2 on the 8 x 8
// tiles.
std::vector<PromptCase> prompt_cases() {
  const llm::PromptTile small{32, 64, 1}, middle{64, 64, 1}, large{64, 128, 1}, quarters{32, 64, 4},
      eighths{64, 64, 8}, eights{128, 128, 1, 2}, eights_thirds{128, 128, 3, 2}, eights_half{64, 128, 1, 2},
      eights_half_halves{64, 128, 2, 2};
  std::vector<PromptCase> cases;
  for (WeightFormat t : {WeightFormat::F32, WeightFormat::F16, WeightFormat::BF16})
    for (auto [tile, T] :
         {std::pair{small, 1u}, std::pair{small, 31u}, std::pair{middle, 33u}, std::pair{small, 100u},
          std::pair{middle, 100u}, std::pair{large, 100u}, std::pair{quarters, 100u},
          std::pair{quarters, 31u}, std::pair{eighths, 33u}, std::pair{eights, 133u},
          std::pair{eights_thirds, 133u}, std::pair{eights_half, 37u}, std::pair{eights_half_halves, 37u}})
      cases.push_back({t, tile, T});
  for (WeightFormat t : {WeightFormat::Q4_1, WeightFormat::Q5_K, WeightFormat::Q6_K})
    cases.push_back({t, small, 31});
  cases.push_back({WeightFormat::Q8_0, eights_thirds, 133});
  return cases;
}
INSTANTIATE_TEST_SUITE_P(Tiles, LlmPromptKernel, ::testing::ValuesIn(prompt_cases()),
                         [](const auto& info) { return prompt_case_name(info.param); });

// Test the choice of tile (docs: DecodeKernels::prompt_tile) and that an unsupported tile is
// refused with an error naming the supported ones.
TEST(LlmKernels, PromptTileChoiceAndLimits) {
  using llm::DecodeKernels;
  auto is = [](llm::PromptTile t, uint32_t tokens, uint32_t rows, uint32_t split, uint32_t groups) {
    return t.tokens == tokens && t.rows == rows && t.k_split == split && t.token_groups == groups;
  };
  // Normed products (Qwen2.5-0.5B): gate/up 76 x 8 workgroups of 128 x 128 at 1,024 tokens, too few
  // for q8_0 (64 x 128 then; 128 x 128 from 1,200: 76 x 16 at 2,048); 76 x 4 at 512 and 76 x 3 at
  // 384, too few, so 64 x 128. Q/K/V: 9 x 32 of 128 x 128 at 4,000 tokens, too few, so 64 x 128;
  // 64 x 64 at 1,024 (9 x 16 at 64 x 128: too few); at 512 64 x 64 split 4 ways (its 896 columns
  // would allow 7 slices of 8 steps), where gate/up's rule takes 32 x 64; split in 3 for 400
  // columns (25 steps), not at all for 64 (4 steps).
  EXPECT_TRUE(is(DecodeKernels::prompt_tile(9728, 896, 1024, llm::PromptProduct::GateUp), 128, 128, 1, 2));
  EXPECT_TRUE(is(DecodeKernels::prompt_tile(9728, 896, 1024, llm::PromptProduct::GateUp, WeightFormat::Q8_0),
                 64, 128, 1, 1));
  EXPECT_TRUE(is(DecodeKernels::prompt_tile(9728, 896, 1024, llm::PromptProduct::GateUp, WeightFormat::Q4_K),
                 128, 128, 1, 2));
  EXPECT_TRUE(is(DecodeKernels::prompt_tile(9728, 896, 2048, llm::PromptProduct::GateUp, WeightFormat::Q8_0),
                 128, 128, 1, 2));
  EXPECT_TRUE(
      is(DecodeKernels::prompt_tile(17920, 1536, 1024, llm::PromptProduct::GateUp, WeightFormat::Q8_0), 64,
         128, 1, 1));
  EXPECT_TRUE(is(DecodeKernels::prompt_tile(9728, 896, 512, llm::PromptProduct::GateUp), 64, 128, 1, 1));
  EXPECT_TRUE(is(DecodeKernels::prompt_tile(9728, 896, 384, llm::PromptProduct::GateUp), 64, 128, 1, 1));
  EXPECT_TRUE(is(DecodeKernels::prompt_tile(1152, 896, 4000, llm::PromptProduct::Qkv), 64, 128, 1, 1));
  EXPECT_TRUE(is(DecodeKernels::prompt_tile(1152, 896, 1024, llm::PromptProduct::Qkv), 64, 64, 1, 1));
  EXPECT_TRUE(is(DecodeKernels::prompt_tile(1152, 896, 512, llm::PromptProduct::Qkv), 64, 64, 4, 1));
  EXPECT_TRUE(is(DecodeKernels::prompt_tile(1152, 896, 512, llm::PromptProduct::GateUp), 32, 64, 1, 1));
  EXPECT_TRUE(is(DecodeKernels::prompt_tile(96, 64, 5, llm::PromptProduct::Qkv), 32, 64, 1, 1));
  EXPECT_TRUE(is(DecodeKernels::prompt_tile(96, 400, 5, llm::PromptProduct::Qkv), 64, 64, 3, 1));
  // Residual products, 64 x 64 split along K in 8 slices (residual_prompt: fewer where its buffer
  // of sums is full); 896 columns are 56 steps, 7 slices of 8.
  EXPECT_TRUE(is(DecodeKernels::prompt_tile(896, 4864, 512, llm::PromptProduct::Residual), 64, 64, 8, 1));
  EXPECT_TRUE(is(DecodeKernels::prompt_tile(896, 896, 512, llm::PromptProduct::Residual), 64, 64, 7, 1));
  EXPECT_TRUE(is(DecodeKernels::prompt_tile(896, 4864, 4000, llm::PromptProduct::Residual), 64, 64, 8, 1));
  EXPECT_TRUE(is(DecodeKernels::prompt_tile(96, 400, 5, llm::PromptProduct::Residual), 64, 64, 3,
                 1));  // 25 steps: 3 of 8
  EXPECT_TRUE(is(DecodeKernels::prompt_tile(96, 64, 5, llm::PromptProduct::Residual), 64, 64, 1,
                 1));  // 4 steps: no split
  DecodeKernels k(context());
  EXPECT_THROW(k.force_prompt_tile({64, 64, 9}), Error);  // K split over 8
  try {
    k.force_prompt_tile({32, 128});
    FAIL() << "a 32 x 128 tile was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("32 x 64, 64 x 64 and 64 x 128"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(is(llm::parse_prompt_tile("128x128x4", "t"), 128, 128, 4, 2));
  EXPECT_TRUE(is(llm::parse_prompt_tile("64x128", "t"), 64, 128, 1, 1));
  EXPECT_TRUE(is(llm::parse_prompt_tile("64x128x2x2", "t"), 64, 128, 2, 2));
  EXPECT_THROW(llm::parse_prompt_tile("64x128x0", "t"), Error);
  EXPECT_THROW(llm::parse_prompt_tile("32x64x1x2", "t"), Error);
  // A split is the most: the rule's 3 slices (400 columns: 25 steps) over 512 tokens fit 4,096 rows
  // of sums; a forced 8 over 1,000 tokens in 128-token tiles only 4, and in 512 rows none.
  auto w = random_matrix(WeightFormat::F32, 96, 400, 1);
  auto buf = poisoned(16);
  EXPECT_EQ(k.residual_prompt(w.view, buf, buf, buf, 4096, 96, 400, 512).at(0).grid.z, 3u);  // 25 steps
  k.force_prompt_tile({128, 128, 8, 2});
  EXPECT_EQ(k.residual_prompt(w.view, buf, buf, buf, 4096, 96, 400, 1000).at(0).grid.z, 4u);
  EXPECT_EQ(k.residual_prompt(w.view, buf, buf, buf, 512, 96, 400, 1000).size(), 1u);
}

// Test prefill attention, both kernels (the tiled one at each tile it has, its keys shared out or
// not): T queries at positions p0 .. p0 + T - 1 (state word 1 = p0: the chunk starts after p0
// cached positions), each over positions 0 .. its own: cache slots from p0 + T on hold NaN, and each
// query must ignore its successors' keys (causal). Heads on kv heads: 4 on 2 at head_dim 12 or 128,
// 14 on 2 at 64 (Qwen2.5-0.5B), or as many kv heads as heads (no grouping). Several query and key
// blocks (16 x 16) and tiles (up to 64 x 32), a chunk start inside a key tile, lengths that fill no
// tile; splits that leave some workgroups no key tile, a query none in its share, and an odd split.
struct PromptAttentionCase {
  uint32_t T, hd, p0;
  bool grouped = true;
};
// The kernel: queries 0 = blocks, else tiled with this many queries a workgroup, its keys split
// `splits` ways (0: the rule).
struct PromptAttentionKernel {
  uint32_t queries, splits;
};
class LlmPromptAttention
    : public ::testing::TestWithParam<std::tuple<PromptAttentionCase, PromptAttentionKernel>> {};
TEST_P(LlmPromptAttention, IsCausalOverTheCache) {
  const auto [param, kernel] = GetParam();
  const auto [T, hd, p0, grouped] = param;
  auto c = attention_config();
  if (hd == 64) c.num_heads = 14, c.head_dim = 64;
  if (hd == 128) c.head_dim = 128;
  if (!grouped) c.num_heads = c.num_kv_heads = 3;
  const uint32_t q_rows = c.num_heads * hd, ctx_len = p0 + T + 3;
  auto q = test::random_floats(T * q_rows, 23, -1, 1);
  auto kc = test::random_floats(c.num_kv_heads * ctx_len * hd, 24, -1, 1);
  auto vc = test::random_floats(c.num_kv_heads * ctx_len * hd, 25, -1, 1);
  for (uint32_t h = 0; h < c.num_kv_heads; ++h)
    for (uint32_t p = p0 + T; p < ctx_len; ++p)
      for (uint32_t d = 0; d < hd; ++d)
        kc[(h * ctx_len + p) * hd + d] = vc[(h * ctx_len + p) * hd + d] = kNaN;
  // Scores of a few units: the softmax is neither flat nor one-hot.
  for (auto& v : q) v *= 3;
  const uint32_t state[4] = {0, p0, T, 0};
  auto out = token_rows(std::vector<float>(T * q_rows, kNaN), T, q_rows);
  llm::DecodeKernels k(context());
  if (kernel.queries && !k.prompt_attention_fits(kernel.queries, hd))
    GTEST_SKIP() << "tiles of " << kernel.queries << " queries at head_dim " << hd
                 << " do not fit this device's workgroup memory";
  const auto kind = kernel.queries ? llm::PromptAttention::Tiled : llm::PromptAttention::Blocks;
  // Room for the most partials; poisoned, so that a share's row left unwritten would show.
  const uint64_t parts_words =
      llm::DecodeKernels::prompt_attention_parts_words(c, T, std::max(kernel.queries, 16u), 8);
  auto parts = poisoned(parts_words);
  const auto steps =
      k.attend_prompt(llm::upload_padded(context(), "q", q), llm::upload_padded(context(), "k", kc),
                      llm::upload_padded(context(), "v", vc),
                      context().upload<uint32_t>(state, BufferUsage::StorageIO, "state"), out, parts,
                      parts_words, c, ctx_len, T, kind, kernel.queries, kernel.splits);
  const uint32_t splits = kernel.splits ? kernel.splits
                          : kernel.queries
                              ? llm::DecodeKernels::prompt_attention_splits(c.num_heads, T, kernel.queries)
                              : 1;
  ASSERT_EQ(steps.size(), splits > 1 ? 2u : 1u);
  EXPECT_EQ(steps[0].grid.z, splits);
  run(steps);
  std::vector<double> want;
  for (uint32_t t = 0; t < T; ++t) {
    auto o = ref::attention(as_double({q.begin() + t * q_rows, q.begin() + (t + 1) * q_rows}), as_double(kc),
                            as_double(vc), c.num_heads, c.num_kv_heads, hd, ctx_len, p0 + t + 1);
    want.insert(want.end(), o.begin(), o.end());
  }
  EXPECT_TRUE(close_normalised(read_rows(out, T, q_rows), want, 1e-5));
}
INSTANTIATE_TEST_SUITE_P(
    Queries, LlmPromptAttention,
    ::testing::Combine(::testing::Values(PromptAttentionCase{1, 12, 5}, PromptAttentionCase{31, 12, 5},
                                         PromptAttentionCase{33, 12, 5}, PromptAttentionCase{100, 12, 5},
                                         PromptAttentionCase{7, 64, 5, false}, PromptAttentionCase{33, 64, 5},
                                         PromptAttentionCase{133, 64, 5}, PromptAttentionCase{300, 64, 70},
                                         PromptAttentionCase{40, 128, 5},
                                         PromptAttentionCase{133, 128, 37, false}),
                       ::testing::Values(PromptAttentionKernel{0, 1}, PromptAttentionKernel{16, 1},
                                         PromptAttentionKernel{32, 1}, PromptAttentionKernel{64, 1},
                                         PromptAttentionKernel{16, 0}, PromptAttentionKernel{32, 3},
                                         PromptAttentionKernel{64, 8})),
    [](const auto& info) {
      const auto& p = std::get<0>(info.param);
      const auto& kernel = std::get<1>(info.param);
      return std::to_string(p.T) + "tokens_hd" + std::to_string(p.hd) + "_from" + std::to_string(p.p0) +
             (p.grouped ? "" : "_ungrouped") +
             (kernel.queries ? "_tiled" + std::to_string(kernel.queries) +
                                   (kernel.splits ? "_split" + std::to_string(kernel.splits) : "_rule")
                             : "_blocks");
    });

// Test that the prefill attention's option and tile size are checked: an unknown kernel name and
// a tile of queries the tiled kernel does not have are errors naming what was given.
TEST(LlmKernels, PromptAttentionChoiceIsChecked) {
  EXPECT_EQ(llm::parse_prompt_attention("auto", "--prefill-attention"), llm::PromptAttention::Auto);
  EXPECT_EQ(llm::parse_prompt_attention("tiled", "--prefill-attention"), llm::PromptAttention::Tiled);
  EXPECT_EQ(llm::parse_prompt_attention("blocks", "--prefill-attention"), llm::PromptAttention::Blocks);
  try {
    llm::parse_prompt_attention("flash", "--prefill-attention");
    FAIL() << "'flash' was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--prefill-attention 'flash'"), std::string::npos) << e.what();
  }
  auto b = poisoned(8);
  llm::DecodeKernels k(context());
  try {
    k.attend_prompt(b, b, b, b, b, b, 8, attention_config(), 4, 1, llm::PromptAttention::Tiled, 48);
    FAIL() << "tiles of 48 queries were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not 48"), std::string::npos) << e.what();
  }
  try {
    k.attend_prompt(b, b, b, b, b, b, 8, attention_config(), 4, 1, llm::PromptAttention::Tiled, 64,
                    llm::DecodeKernels::kPromptAttentionMaxSplits + 1);
    FAIL() << "a split of 9 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not 9"), std::string::npos) << e.what();
  }
}

// Test that a device requested with less workgroup memory than the adapter offers (wgfuse serve
// plans for browsers) gets that limit, and that the tiled prefill attention then takes a smaller
// tile that fits it.
TEST(LlmKernels, PromptAttentionTileFitsARequestedWorkgroupMemory) {
  gpu::ContextOptions o = test::context_options();
  o.max_compute_workgroup_storage_size = 16384;
  gpu::Context small(o);
  EXPECT_EQ(small.limits().max_compute_workgroup_storage_size, 16384u);
  const uint32_t tq = llm::DecodeKernels(small).prompt_attention_queries(64);
  ASSERT_NE(tq, 0u);
  EXPECT_TRUE(llm::DecodeKernels(small).prompt_attention_fits(tq, 64));
  EXPECT_LT(tq, llm::DecodeKernels(context()).prompt_attention_queries(64));
}

// Test that a head_dim the prefill attention cannot tile is a clear error.
TEST(LlmKernels, AttentionPromptRefusesAnOddHeadDim) {
  auto c = attention_config();
  c.head_dim = 10;
  auto b = poisoned(8);
  llm::DecodeKernels k(context());
  try {
    k.attend_prompt(b, b, b, b, b, b, 8, c, 4, 1);
    FAIL() << "head_dim 10 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("head_dim 10"), std::string::npos) << e.what();
  }
}
}  // namespace
}  // namespace wgfuse
