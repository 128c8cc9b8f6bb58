// A written plan (llm::plan_json, docs/PLAN.md) replayed by a small generic interpreter must give
// llm::Model's tokens and bitwise its logits. The interpreter below reads only the JSON, the
// embedded kernel sources (gpu::embedded_kernel by family and entry) and the model's tensors by
// file name (llm::tensor_row): it creates the buffers, packs the weights by the plan's packing
// and format names (gpu::pack_row, the formats' row packer), builds the plans and follows the prefill and
// decode sequences. It never calls llm::DecodeKernels or llm::Model, so what it needs is what another host
// (the browser page) needs to mirror.
#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpu/plan.h"
#include "gpu/recorder.h"
#include "gpu/weight_format.h"
#include "llm/model.h"
#include "llm/plan_file.h"
#include "llm/reference.h"
#include "llm/sampler.h"
#include "llm_support.h"
#include "support.h"
#include "util/error.h"

namespace wgfuse {
namespace {

using nlohmann::json;
using test::context;

// ---- The interpreter ----

gpu::BufferUsage usage_of(const json& names) {
  using gpu::BufferUsage;
  BufferUsage u = BufferUsage::None;
  for (const auto& n : names) {
    const std::string s = n.get<std::string>();
    u = u | (s == "storage"    ? BufferUsage::Storage
             : s == "uniform"  ? BufferUsage::Uniform
             : s == "copy_src" ? BufferUsage::CopySrc
             : s == "copy_dst" ? BufferUsage::CopyDst
             : s == "map_read" ? BufferUsage::MapRead
                               : throw Error("plan: unknown buffer usage " + s));
  }
  return u | BufferUsage::CopyDst;  // the interpreter writes every buffer's contents
}

class Replay {
 public:
  Replay(gpu::Context& ctx, const json& plan, const llm::WeightLookup& weights) : ctx_(&ctx), plan_(plan) {
    if (plan.at("format") != "wgfuse-plan" || plan.at("version") != 1)
      throw Error("plan: not a wgfuse-plan of version 1");
    for (const auto& b : plan.at("buffers")) {
      const auto name = b.at("name").get<std::string>();
      buffers_.emplace(name, ctx.buffer(b.at("size").get<uint64_t>(), usage_of(b.at("usage")), name));
      fill(buffers_.at(name), b.at("contents"), weights);
    }
    std::vector<const gpu::Kernel*> kernels;
    for (const auto& k : plan.at("kernels"))
      kernels.push_back(&ctx.kernel(
          gpu::embedded_kernel(k.at("family").get<std::string>(), k.at("entry").get<std::string>(),
                               k.at("overrides").get<std::map<std::string, double>>())));
    for (const auto& [name, steps] : plan.at("plans").items()) {
      gpu::Plan p(ctx, name);
      for (const auto& s : steps) {
        if (s.contains("copy")) {
          const auto& c = s.at("copy");
          p.copy(buffers_.at(c.at("src").get<std::string>()), c.at("src_offset").get<uint64_t>(),
                 buffers_.at(c.at("dst").get<std::string>()), c.at("dst_offset").get<uint64_t>(),
                 c.at("bytes").get<uint64_t>());
        } else if (s.contains("end_pass")) {
          p.end_pass();
        } else {
          std::vector<gpu::Binding> bindings;
          for (const auto& b : s.at("bindings"))
            bindings.push_back(b.is_null()
                                   ? gpu::Binding::unused()
                                   : gpu::BufferBinding(buffers_.at(b.at("buffer").get<std::string>()),
                                                        b.at("offset").get<uint64_t>(),
                                                        b.at("size").get<uint64_t>()));
          const auto g = s.at("grid").get<std::vector<uint32_t>>();
          p.dispatch(*kernels.at(s.at("kernel").get<size_t>()), bindings, {g.at(0), g.at(1), g.at(2)});
        }
      }
      p.build();
      plans_.emplace(name, std::move(p));
    }
  }

  // The prompt, then n - 1 decode steps: the n tokens picked and the logits each was picked from.
  std::vector<uint32_t> run(const std::vector<uint32_t>& prompt, uint32_t n,
                            std::vector<std::vector<float>>& logits) {
    const gpu::Buffer& tokens = buffers_.at(plan_.at("tokens").at("buffer").get<std::string>());
    const gpu::Buffer& state = buffers_.at(plan_.at("state").at("buffer").get<std::string>());
    ctx_->write(tokens, 0, std::as_bytes(std::span(prompt)));
    const uint32_t last = uint32_t(prompt.size()) - 1;
    const json& pre = plan_.at("prefill");
    const uint32_t C = pre.at("chunk_tokens").get<uint32_t>();
    gpu::Recorder rec(*ctx_);
    if (C > 0) {
      for (uint32_t p0 = 0; p0 <= last; p0 += C) {
        const uint32_t T = std::min(C, last + 1 - p0);
        const uint32_t words[3] = {last, p0, T};  // state_words_before_chunk
        ctx_->write(state, 0, std::as_bytes(std::span(words)));
        plans_.at(pre.at("chunk_plans").at(std::to_string(T)).get<std::string>()).encode(rec);
        if (p0 + T <= last) {
          rec.submit();
          continue;
        }
        for (const auto& op : pre.at("after_last_chunk")) {
          if (op.contains("plan")) {
            plans_.at(op.at("plan").get<std::string>()).encode(rec);
            continue;
          }
          const auto& c = op.at("copy");
          const auto& at = c.at("src_offset");
          if (at.at("row") != "chunk_length - 1") throw Error("plan: unknown row rule");
          rec.copy(buffers_.at(c.at("src").get<std::string>()), at.at("row_bytes").get<uint64_t>() * (T - 1),
                   buffers_.at(c.at("dst").get<std::string>()), c.at("dst_offset").get<uint64_t>(),
                   c.at("bytes").get<uint64_t>());
        }
      }
    } else {
      ctx_->write_value<uint32_t>(state, 0, 0);  // the first unfed position
      for (uint32_t p = 0; p <= last; ++p)
        for (const auto& op : pre.at(p < last ? "each_position_but_the_last" : "last_position"))
          plan_for(op.at("plan").get<std::string>(), p).encode(rec);
    }
    std::vector<uint32_t> out;
    for (uint32_t i = 0; i < n; ++i) {
      if (i == 0)
        plans_.at(plan_.at("picker").get<std::string>()).encode(rec);
      else
        for (const auto& name : plan_.at("decode").at("token"))
          plan_for(name.get<std::string>(), last + i).encode(rec);
      rec.submit();
      logits.push_back(ctx_->read<float>(buffers_.at(plan_.at("logits").get<std::string>()), 0,
                                         plan_.at("model").at("vocab_size").get<uint64_t>()));
      out.push_back(ctx_->read<uint32_t>(tokens, last + i + 1, 1)[0]);
    }
    return out;
  }

 private:
  // "decode": the variant for position pos (the last whose `from` <= pos); else the plan named.
  gpu::Plan& plan_for(const std::string& name, uint32_t pos) {
    if (name != "decode") return plans_.at(name);
    std::string chosen;
    for (const auto& v : plan_.at("decode").at("variants"))
      if (v.at("from").get<uint32_t>() <= pos) chosen = v.at("plan").get<std::string>();
    return plans_.at(chosen);
  }

  void fill(const gpu::Buffer& b, const json& what, const llm::WeightLookup& weights) {
    const auto kind = what.at("kind").get<std::string>();
    std::vector<std::byte> bytes;
    if (kind == "zeros") return;
    if (kind == "weights") {
      for (const auto& t : what.at("tensors")) {
        const auto packed = tensor(t, weights);
        const auto offset = t.at("offset").get<uint64_t>();
        if (offset % 16 || offset + packed.size() > b.size())
          throw Error("plan: tensor " + t.at("name").get<std::string>() + " outside its buffer");
        ctx_->write(b, offset, packed);
      }
      return;
    }
    if (kind == "words") {
      const auto words = what.at("words").get<std::vector<uint32_t>>();
      bytes.resize(words.size() * 4);
      std::memcpy(bytes.data(), words.data(), bytes.size());
    } else if (kind == "rope") {
      // (cos, sin) of pos * inv_freq[i] times the attention factor, in double, rounded once.
      const auto positions = what.at("positions").get<uint32_t>();
      const auto inv_freq = what.at("inv_freq").get<std::vector<double>>();
      const auto factor = what.at("attention_factor").get<double>();
      if (inv_freq.size() * 2 != what.at("head_dim").get<size_t>())
        throw Error("plan: the RoPE frequencies are not head_dim / 2");
      std::vector<float> t;
      for (uint32_t pos = 0; pos < positions; ++pos)
        for (double f : inv_freq) {
          t.push_back(float(std::cos(double(pos) * f) * factor));
          t.push_back(float(std::sin(double(pos) * f) * factor));
        }
      bytes.resize(t.size() * 4);
      std::memcpy(bytes.data(), t.data(), bytes.size());
    } else {
      throw Error("plan: unknown contents kind " + kind);
    }
    if (bytes.size() > b.size()) throw Error("plan: contents larger than their buffer");
    ctx_->write(b, 0, bytes);
  }

  // One weight tensor as stored: each row gathered from the sources by the packing (as f32), then
  // stored in the tensor's format by the format's row packer.
  std::vector<std::byte> tensor(const json& t, const llm::WeightLookup& weights) const {
    const auto packing = t.at("packing").get<std::string>();
    const auto rows = t.at("rows").get<uint32_t>(), cols = t.at("cols").get<uint32_t>();
    const auto row_bytes = t.at("row_bytes").get<uint64_t>();
    const gpu::WeightFormat format =
        gpu::parse_weight_format(t.at("format").get<std::string>(), "plan format");
    if (row_bytes != gpu::stored_row_bytes(format, cols))
      throw Error("plan: row_bytes disagree with the format");
    const auto& m = plan_.at("model");
    const auto hd = m.at("head_dim").get<uint32_t>(), q_rows = m.at("num_heads").get<uint32_t>() * hd,
               kv_rows = m.at("num_kv_heads").get<uint32_t>() * hd;
    std::vector<const llm::TensorRef*> src;
    for (const auto& s : t.at("sources")) src.push_back(weights(s.get<std::string>()));
    // Row p of a Q/K/V packing: {source, row}: q rows then k rows, each head's as RoPE pairs
    // (i, i + hd/2); then v rows.
    auto qkv_row = [&](uint32_t p) -> std::pair<uint32_t, uint32_t> {
      const uint32_t which = p < q_rows ? 0 : p < q_rows + kv_rows ? 1 : 2;
      const uint32_t r = p - (which == 0 ? 0 : which == 1 ? q_rows : q_rows + kv_rows);
      if (which == 2) return {2, r};
      const uint32_t i = r % hd;
      return {which, r - i + (i % 2 ? hd / 2 + i / 2 : i / 2)};
    };
    std::vector<float> row(cols, 0.0f);
    std::vector<std::byte> out(rows * row_bytes);
    for (uint32_t p = 0; p < rows; ++p) {
      if (packing == "rows") {
        llm::tensor_row(*src.at(0), p, row);
      } else if (packing == "gate_up_interleaved") {
        llm::tensor_row(*src.at(p % 2), p / 2, row);
      } else if (packing == "qkv_rope_pairs") {
        const auto [which, r] = qkv_row(p);
        llm::tensor_row(*src.at(which), r, row);
      } else if (packing == "vector") {
        llm::tensor_row(*src.at(0), 0, row);
      } else if (packing == "vectors") {  // the 1-D sources one after another
        size_t at = 0;
        for (const llm::TensorRef* v : src) {
          if (at + v->elements() > cols) throw Error("plan: vectors longer than their row");
          llm::tensor_row(*v, 0, std::span(row).subspan(at, v->elements()));
          at += v->elements();
        }
      } else if (packing == "qkv_bias") {
        if (!src.empty()) {  // else no bias: zeros
          std::vector<float> parts[3];
          for (int s = 0; s < 3; ++s) {
            parts[s].resize(src[s]->elements());
            llm::tensor_row(*src[s], 0, parts[s]);
          }
          for (uint32_t c = 0; c < cols; ++c) {
            const auto [which, r] = qkv_row(c);
            row[c] = parts[which][r];
          }
        }
      } else {
        throw Error("plan: unknown packing " + packing);
      }
      gpu::pack_row(format, gpu::DType::F32, std::as_bytes(std::span(row)), cols,
                    std::span(out).subspan(p * row_bytes, row_bytes));
    }
    return out;
  }

  gpu::Context* ctx_;
  const json& plan_;
  std::map<std::string, gpu::Buffer> buffers_;
  std::map<std::string, gpu::Plan> plans_;
};

// ---- The tests ----

const std::vector<uint32_t> kPrompt = {7, 123, 42, 299, 0, 64, 5};

struct Case {
  const char* name;
  llm::ModelConfig (*config)();
  gpu::WeightFormat dtype;
  llm::ModelOptions options;
  std::optional<llm::SamplingParams> sampling;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

class PlanReplay : public ::testing::TestWithParam<Case> {};

// Test that the replayed plan picks the model's tokens from bitwise the model's logits, through
// every prefill chunk and decode variant the case crosses.
TEST_P(PlanReplay, GivesTheModelsTokensAndLogits) {
  const Case& c = GetParam();
  const llm::ModelConfig cfg = c.config();  // two layers: what a layer does is the same in each
  const auto weights = llm::HostWeights::random(cfg, 31);
  const uint32_t n = 6;
  llm::ModelOptions mo = c.options;
  mo.dtype = c.dtype;
  llm::Model model(context(), cfg, weights.lookup(), mo);
  std::optional<llm::Sampler> sampler;
  std::optional<gpu::Plan> sampler_plan;
  llm::GenerateOptions go;
  if (c.sampling) {
    sampler.emplace(context(), cfg.vocab_size);
    sampler->set_params(*c.sampling);
    const auto b = model.decode_buffers();
    go.picker = &sampler_plan.emplace(sampler->plan(b.logits, b.tokens, b.state));
  }
  const json plan = llm::plan_json(model, uint32_t(kPrompt.size()), sampler ? &*sampler : nullptr);

  std::vector<std::vector<float>> want_logits;
  go.on_logits = [&](std::span<const float> l) { want_logits.emplace_back(l.begin(), l.end()); };
  const auto want = model.generate(kPrompt, n, {}, go);
  ASSERT_EQ(want_logits.size(), n);

  // Through text, as another host would read it.
  const json read = json::parse(plan.dump());
  Replay replay(context(), read, weights.lookup());
  std::vector<std::vector<float>> got_logits;
  const auto got = replay.run(kPrompt, n, got_logits);
  EXPECT_EQ(got, want);
  ASSERT_EQ(got_logits.size(), n);
  for (uint32_t i = 0; i < n; ++i) {
    ASSERT_EQ(got_logits[i].size(), want_logits[i].size());
    EXPECT_EQ(std::memcmp(got_logits[i].data(), want_logits[i].data(), 4 * got_logits[i].size()), 0)
        << "the logits of token " << i << " differ";
  }
  // A forced K split: Q/K/V's sums of the slices leave bindings 1 and 2 unused (null in the file).
  if (mo.prefill_tile.k_split > 1) {
    bool unused = false;
    for (const json& s : read.at("plans").at("prefill." + std::to_string(kPrompt.size())))
      for (const json& g : s.value("bindings", json::array())) unused |= g.is_null();
    EXPECT_TRUE(unused) << "no step of the prefill plan has an unused binding";
  }
  // The plan's decode step is the model's: its dispatches per token.
  const auto& variants = read.at("decode").at("variants");
  const auto dispatches = [&](const std::string& name) { return read.at("plans").at(name).size(); };
  EXPECT_EQ(dispatches(variants.front().at("plan").get<std::string>()) + dispatches("lm_head") +
                dispatches("argmax"),
            model.stats().dispatches_per_step);
  EXPECT_EQ(dispatches(variants.back().at("plan").get<std::string>()) + dispatches("lm_head") +
                dispatches("argmax"),
            model.stats().dispatches_per_step_long);
}

// Qwen2 (q/k/v biases), tied or not: two layers.
llm::ModelConfig qwen2_tied() {
  auto c = test::small_llm_config(true);
  c.num_layers = 2;
  return c;
}
llm::ModelConfig qwen2_untied() {
  auto c = qwen2_tied();
  c.tie_word_embeddings = false;
  return c;
}

// Two prefill chunks (4 + 3 tokens); attend_short below position 9, then split attention, from
// position 10 in chunks twice as long (split_long).
const llm::ModelOptions kChunkedShortThenSplit{
    .attn_short_max = 9, .attn_long_from = 10, .ctx = 16, .prefill_chunk = 4, .attention = {.chunk = 8}};
// The prompt through decode steps; fused layers below position 9, then split ones.
const llm::ModelOptions kStepwiseFusedThenSplit{.fusion = llm::Fusion::Full,
                                                .attn_fuse_max = 9,
                                                .ctx = 16,
                                                .prefill_chunk = 0,
                                                .attention = {.chunk = 8}};
// One tiled prefill chunk (no short passes), every product split along K in 2 (o, down and Q/K/V,
// whose sums of squares travel with the slices), in a context long enough for the slices' sums.
const llm::ModelOptions kTiledSplit{
    .ctx = 512, .prefill_chunk = 512, .prefill_short_max = 0, .prefill_tile = {64, 64, 2}};
llm::ModelConfig qwen2_long() {
  auto c = qwen2_tied();
  c.max_position_embeddings = 512;
  return c;
}
llm::ModelConfig qwen3_long() {
  auto c = test::qwen3_config();
  c.max_position_embeddings = 512;
  return c;
}
const llm::SamplingParams kSampling{.temperature = 0.8, .top_k = 40, .top_p = 0.9, .seed = 5};

// Qwen3 (per-head q/k norms: one more stage per layer, a "vectors" packing; YaRN RoPE) and Llama
// (no biases; llama3 RoPE) through the same sequences, f16 and bf16.
INSTANTIATE_TEST_SUITE_P(
    Cases, PlanReplay,
    ::testing::Values(Case{"qwen2_f16_chunked_short_then_split",
                           qwen2_tied,
                           gpu::WeightFormat::F16,
                           kChunkedShortThenSplit,
                           {}},
                      Case{"qwen2_bf16_stepwise_fused_then_split_sampled", qwen2_untied,
                           gpu::WeightFormat::BF16, kStepwiseFusedThenSplit, kSampling},
                      Case{"qwen3_bf16_chunked_short_then_split",
                           test::qwen3_config,
                           gpu::WeightFormat::BF16,
                           kChunkedShortThenSplit,
                           {}},
                      Case{"qwen3_f16_stepwise_fused_then_split_sampled", test::qwen3_config,
                           gpu::WeightFormat::F16, kStepwiseFusedThenSplit, kSampling},
                      Case{"llama_f16_chunked_short_then_split",
                           test::llama_config,
                           gpu::WeightFormat::F16,
                           kChunkedShortThenSplit,
                           {}},
                      Case{"qwen2_f16_tiled_split", qwen2_long, gpu::WeightFormat::F16, kTiledSplit, {}},
                      Case{"qwen3_f16_tiled_split", qwen3_long, gpu::WeightFormat::F16, kTiledSplit, {}}),
    [](const auto& info) { return std::string(info.param.name); });

// Test that the plan names what a device must offer (docs/PLAN.md, "Device"), read off its own
// buffers, bindings and kernels, and the sampler's params record word by word.
TEST(PlanFile, NamesTheDeviceNeedsAndTheSamplerFields) {
  const llm::ModelConfig cfg = qwen2_tied();
  const auto weights = llm::HostWeights::random(cfg, 31);
  llm::Model model(context(), cfg, weights.lookup(), kChunkedShortThenSplit);
  llm::Sampler sampler(context(), cfg.vocab_size);
  const llm::SamplingParams params{.temperature = 0.7, .top_k = 17, .top_p = 0.85, .seed = (7ull << 32) | 9};
  sampler.set_params(params);
  const json plan = json::parse(llm::plan_json(model, 5, &sampler).dump());
  const json& device = plan.at("device");
  EXPECT_EQ(device.at("features"), json::array({"subgroups"}));
  const uint64_t team = device.at("subgroup_max_size");
  EXPECT_TRUE(std::has_single_bit(team) && team >= context().adapter().subgroup_max_size) << team;
  // The short prefill passes' gate/up product reduces across BFLY lanes of one subgroup.
  const uint64_t butterfly = device.at("subgroup_min_size");
  EXPECT_TRUE(std::has_single_bit(butterfly) && butterfly <= context().adapter().subgroup_min_size)
      << butterfly;
  uint64_t buffer = 0, binding = 0;
  for (const json& b : plan.at("buffers")) buffer = std::max(buffer, b.at("size").get<uint64_t>());
  const uint64_t alignment = device.at("limits").at("minStorageBufferOffsetAlignment");
  for (const auto& [name, steps] : plan.at("plans").items())
    for (const json& s : steps)
      for (const json& g : s.value("bindings", json::array())) {
        if (g.is_null()) continue;  // an unused binding number
        binding = std::max(binding, g.at("size").get<uint64_t>());
        EXPECT_EQ(g.at("offset").get<uint64_t>() % alignment, 0u) << name;
      }
  EXPECT_EQ(device.at("limits").at("maxBufferSize"), buffer);
  EXPECT_EQ(device.at("limits").at("maxStorageBufferBindingSize"), binding);
  EXPECT_TRUE(std::has_single_bit(alignment) &&
              alignment % context().limits().min_storage_buffer_offset_alignment == 0);

  // The params record by its field names, each word as its type says.
  for (const json& b : plan.at("buffers"))
    if (b.at("name") == "sampler.params") {
      const json& c = b.at("contents");
      EXPECT_EQ(c.at("record"), "SamplerParams");
      std::map<std::string, uint32_t> word;
      std::map<std::string, float> real;
      for (size_t i = 0; i < c.at("fields").size(); ++i) {
        const json& f = c.at("fields")[i];
        const uint32_t w = c.at("words")[i];
        word[f.at("name")] = w;
        if (f.at("type") == "f32") real[f.at("name")] = std::bit_cast<float>(w);
      }
      EXPECT_EQ(word.at("vocab"), cfg.vocab_size);
      EXPECT_EQ(word.at("top_k"), 17u);
      EXPECT_EQ(real.at("top_p"), 0.85f);
      EXPECT_EQ(real.at("temperature"), 0.7f);
      EXPECT_EQ(word.at("greedy"), 0u);
      EXPECT_EQ(word.at("seed_lo"), 9u);
      EXPECT_EQ(word.at("seed_hi"), 7u);
      return;
    }
  FAIL() << "no sampler.params buffer";
}

// Test that a binding limit (a browser's: `serve --limits`) splits the weight arena into buffers
// within it, and that a buffer that must be one binding over it is refused, naming it.
TEST(PlanFile, BindingLimitSplitsTheArenaOrNamesTheBuffer) {
  const llm::ModelConfig cfg = qwen2_tied();
  const auto weights = llm::HostWeights::random(cfg, 31);
  llm::ModelOptions o = kChunkedShortThenSplit;
  const llm::Model whole(context(), cfg, weights.lookup(), o);
  uint64_t arena = 0, largest = 0;
  for (const llm::NamedBuffer& b : whole.buffers())
    if (b.contents.kind == llm::BufferContents::Kind::Weights) arena += b.buffer.size();
  for (const llm::NamedBuffer& b : whole.buffers()) largest = std::max(largest, b.buffer.size());
  o.binding_limit = std::max(largest - largest / 3, arena / 2 + 4096) / 256 * 256;
  llm::Model split(context(), cfg, weights.lookup(), o);
  const json plan = llm::plan_json(split, 5);
  int weight_buffers = 0;
  for (const json& b : plan.at("buffers")) weight_buffers += b.at("contents").at("kind") == "weights";
  EXPECT_GE(weight_buffers, 2);
  EXPECT_LE(plan.at("device").at("limits").at("maxBufferSize").get<uint64_t>(), o.binding_limit);
  EXPECT_LE(plan.at("device").at("limits").at("maxStorageBufferBindingSize").get<uint64_t>(),
            o.binding_limit);
  o.binding_limit = 1024;
  try {
    llm::Model refused(context(), cfg, weights.lookup(), o);
    FAIL() << "a 1024-byte limit accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("above the planned limit of 1024 bytes per buffer and binding"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace wgfuse
