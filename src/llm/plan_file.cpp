#include "llm/plan_file.h"

#include <cstring>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <vector>

#include "gpu/kernel.h"
#include "gpu/plan.h"
#include "llm/model.h"
#include "llm/rope.h"
#include "llm/sampler.h"
#include "util/error.h"

namespace wgfuse::llm {
namespace {

using nlohmann::json;

json usage_json(gpu::BufferUsage u) {
  using gpu::BufferUsage;
  json out = json::array();
  for (auto [bit, name] : {std::pair{BufferUsage::Storage, "storage"},
                           {BufferUsage::Uniform, "uniform"},
                           {BufferUsage::CopySrc, "copy_src"},
                           {BufferUsage::CopyDst, "copy_dst"},
                           {BufferUsage::MapRead, "map_read"}})
    if (has(u, bit)) out.push_back(name);
  return out;
}

const char* variant_name(Model::LayerVariant v) {
  switch (v) {
    case Model::LayerVariant::Split:
      return "split";
    case Model::LayerVariant::SplitLong:
      return "split_long";
    case Model::LayerVariant::Short:
      return "short";
    case Model::LayerVariant::Fused:
      return "fused";
  }
  return "?";
}

// Plans as JSON over named buffers, collecting the kernels they use.
class Writer {
 public:
  void name(const gpu::Buffer& b, const std::string& name) { names_[b.id()] = name; }

  json plan(const gpu::Plan& p) {
    json steps = json::array();
    for (size_t i = 0; i < p.steps(); ++i) {
      const auto s = p.step(i);
      switch (s.kind) {
        case gpu::Plan::StepKind::Dispatch: {
          if (s.bindings.empty())
            throw Error("plan '" + p.label() + "', step " + std::to_string(i) +
                        ": a bind group made outside the plan cannot be written down");
          json bindings = json::array();
          for (const auto& b : s.bindings) {
            if (b.is_params())
              throw Error("plan '" + p.label() + "': params records are not written down (none expected)");
            if (b.is_unused()) {
              bindings.push_back(nullptr);
              continue;
            }
            bindings.push_back(
                {{"buffer", buffer(b.buffer(), p, i)}, {"offset", b.offset()}, {"size", b.size()}});
          }
          steps.push_back({{"name", std::string(p.step_name(i))},
                           {"kernel", kernel(*s.kernel)},
                           {"grid", {s.grid.x, s.grid.y, s.grid.z}},
                           {"bindings", std::move(bindings)},
                           {"bytes", s.info.bytes},
                           {"bytes_per_position", s.info.bytes_per_position}});
          break;
        }
        case gpu::Plan::StepKind::Copy:
          steps.push_back({{"copy",
                            {{"src", buffer(*s.src, p, i)},
                             {"src_offset", s.src_offset},
                             {"dst", buffer(*s.dst, p, i)},
                             {"dst_offset", s.dst_offset},
                             {"bytes", s.bytes}}}});
          break;
        case gpu::Plan::StepKind::EndPass:
          steps.push_back({{"end_pass", true}});
          break;
      }
    }
    return steps;
  }

  json kernels() const {
    json out = json::array();
    for (const gpu::KernelKey* k : kernels_)
      out.push_back({{"family", k->name}, {"entry", k->entry}, {"overrides", k->overrides}});
    return out;
  }

 private:
  std::string buffer(const gpu::Buffer& b, const gpu::Plan& p, size_t step) const {
    auto it = names_.find(b.id());
    if (it == names_.end())
      throw Error("plan '" + p.label() + "', step " + std::to_string(step) +
                  " binds a buffer the model does not name (internal error)");
    return it->second;
  }
  size_t kernel(const gpu::Kernel& k) {
    auto [it, added] = kernel_index_.try_emplace(&k, kernels_.size());
    if (added) {
      if (k.key().enable_f16) throw Error("kernel " + k.key().label() + ": enable f16 is not written down");
      kernels_.push_back(&k.key());
    }
    return it->second;
  }
  std::map<uint64_t, std::string> names_;
  std::map<const gpu::Kernel*, size_t> kernel_index_;
  std::vector<const gpu::KernelKey*> kernels_;
};

json contents_json(const BufferContents& c, const ModelConfig& config) {
  switch (c.kind) {
    case BufferContents::Kind::Zeros:
      return {{"kind", "zeros"}};
    case BufferContents::Kind::Rope: {
      // The frequencies after RoPE scaling (llm/rope.h), in double: the table is rounded from them.
      const RopeFrequencies f = rope_frequencies(config);
      return {{"kind", "rope"},
              {"positions", c.positions},
              {"head_dim", c.head_dim},
              {"inv_freq", f.inv_freq},
              {"attention_factor", f.attention_factor}};
    }
    case BufferContents::Kind::Weights: {
      json tensors = json::array();
      for (const WeightTensor& t : c.tensors) {
        const gpu::WeightFormatInfo& f = gpu::info(t.view.format);
        tensors.push_back({{"name", t.view.name},
                           {"offset", t.view.offset},
                           {"bytes", t.view.bytes},
                           {"rows", t.view.rows},
                           {"cols", t.view.cols},
                           {"row_bytes", t.view.row_bytes},
                           {"format", f.name},
                           {"packing", t.packing},
                           {"sources", t.sources}});
      }
      return {{"kind", "weights"}, {"tensors", std::move(tensors)}};
    }
  }
  return {};
}

// The weight formats the model's tensors use: how each stores a row (gpu/weight_format.h).
json formats_json(const Model& model) {
  std::set<gpu::WeightFormat> used;
  for (const NamedBuffer& b : model.buffers())
    for (const WeightTensor& t : b.contents.tensors) used.insert(t.view.format);
  json out = json::object();
  for (gpu::WeightFormat f : used) {
    const gpu::WeightFormatInfo& i = gpu::info(f);
    out[i.name] = {
        {"weight_format", int(f)}, {"block_elements", i.block_elements}, {"block_bytes", i.block_bytes}};
  }
  return out;
}

// What a device must offer to run the plan: the WebGPU features its kernels enable, the largest
// subgroup its matvec teams cover (TEAM, a power of two: a subgroup must not span two teams), the
// smallest subgroup its row products' butterflies fit in (BFLY lanes: llm_batch.wgsl's
// xreg_totals), and the largest buffer and binding it creates and binds, and the alignment of its
// binding offsets.
json device_json(const json& buffers, const json& kernels, const json& plans) {
  std::set<std::string> families, features;
  std::optional<double> team, butterfly;
  for (const json& k : kernels) {
    families.insert(k["family"].get<std::string>());
    if (auto it = k["overrides"].find("TEAM"); it != k["overrides"].end())
      team = std::min(team.value_or(it->get<double>()), it->get<double>());
    if (auto it = k["overrides"].find("BFLY"); it != k["overrides"].end())
      butterfly = std::max(butterfly.value_or(it->get<double>()), it->get<double>());
  }
  for (const std::string& f : families) {
    const std::string_view source = gpu::kernel_source(f);
    if (source.find("enable subgroups;") != std::string_view::npos) features.insert("subgroups");
    if (source.find("enable f16;") != std::string_view::npos) features.insert("shader-f16");
  }
  uint64_t buffer = 0, binding = 0, alignment = 0;
  for (const json& b : buffers) buffer = std::max(buffer, b["size"].get<uint64_t>());
  for (const auto& [name, steps] : plans.items())
    for (const json& s : steps)
      if (s.contains("bindings"))
        for (const json& g : s["bindings"]) {
          if (g.is_null()) continue;  // unused
          binding = std::max(binding, g["size"].get<uint64_t>());
          alignment = std::gcd(alignment, g["offset"].get<uint64_t>());
        }
  json out{{"features", features},
           {"limits",
            {{"maxBufferSize", buffer},
             {"maxStorageBufferBindingSize", binding},
             // the largest power of two dividing every binding offset
             {"minStorageBufferOffsetAlignment", alignment ? alignment & -alignment : 0}}}};
  out["subgroup_max_size"] = team ? json(uint64_t(*team)) : json(nullptr);
  out["subgroup_min_size"] = butterfly ? json(uint64_t(*butterfly)) : json(nullptr);
  return out;
}

}  // namespace

json plan_json(Model& model, uint32_t prompt_length, Sampler* sampler) {
  const ModelConfig& c = model.config();
  const ModelOptions& o = model.options();
  if (prompt_length == 0 || prompt_length > model.capacity())
    throw Error("--write-plan: the prompt of " + std::to_string(prompt_length) +
                " tokens must hold 1 to --ctx (" + std::to_string(model.capacity()) + ") tokens");
  Writer w;
  json buffers = json::array();
  for (const NamedBuffer& b : model.buffers()) {
    w.name(b.buffer, b.name);
    buffers.push_back({{"name", b.name},
                       {"size", b.buffer.size()},
                       {"usage", usage_json(b.buffer.usage())},
                       {"contents", contents_json(b.contents, c)}});
  }

  json plans = json::object();
  json decode = json::array();
  for (const auto& v : model.decode_variants()) {
    const std::string name = std::string("decode.") + variant_name(v.variant);
    plans[name] = w.plan(v.body);
    decode.push_back({{"plan", name}, {"from", v.from}});
  }
  plans["lm_head"] = w.plan(model.lm_head());
  plans["advance"] = w.plan(model.advance());
  std::string picker = "argmax";
  plans["argmax"] = w.plan(model.argmax());
  if (sampler) {
    picker = "sampler";
    const auto db = model.decode_buffers();
    gpu::Plan p = sampler->plan(db.logits, db.tokens, db.state);
    const SamplerParams& r = sampler->record();
    std::vector<uint32_t> words(sizeof(r) / 4);
    std::memcpy(words.data(), &r, sizeof(r));
    for (auto [b, name] : {std::pair{&sampler->uniform(), "sampler.params"},
                           {&sampler->keys(), "sampler.keys"},
                           {&sampler->scratch(), "sampler.scratch"}}) {
      w.name(*b, name);
      json fields = json::array();
      for (auto [field, type] : kSamplerParamsFields) fields.push_back({{"name", field}, {"type", type}});
      json contents =
          b == &sampler->uniform()
              ? json{{"kind", "words"}, {"words", words}, {"record", "SamplerParams"}, {"fields", fields}}
              : json{{"kind", "zeros"}};
      buffers.push_back(
          {{"name", name}, {"size", b->size()}, {"usage", usage_json(b->usage())}, {"contents", contents}});
    }
    plans["sampler"] = w.plan(p);
  }

  json prefill{{"chunk_tokens", o.prefill_chunk}};
  if (o.prefill_chunk) {
    std::set<uint32_t> lengths{std::min(o.prefill_chunk, model.capacity())};
    for (uint32_t p0 = 0; p0 < prompt_length; p0 += o.prefill_chunk)
      lengths.insert(std::min(o.prefill_chunk, prompt_length - p0));
    json chunk_plans = json::object();
    for (uint32_t T : lengths) {
      const std::string name = "prefill." + std::to_string(T);
      plans[name] = w.plan(model.prompt_chunk(T));
      chunk_plans[std::to_string(T)] = name;
    }
    prefill["chunk_plans"] = std::move(chunk_plans);
    prefill["state_words_before_chunk"] = {"last_position", "chunk_start", "chunk_length"};
    prefill["submit_between_chunks"] = true;
    const uint64_t row = model.residual_row_bytes();
    prefill["after_last_chunk"] = {{{"copy",
                                     {{"src", "prefill.x"},
                                      {"src_offset", {{"row_bytes", row}, {"row", "chunk_length - 1"}}},
                                      {"dst", "x"},
                                      {"dst_offset", 0},
                                      {"bytes", row}}}},
                                   {{"plan", "lm_head"}}};
  } else {
    prefill["state_words_before"] = {"first_unfed_position"};
    prefill["each_position_but_the_last"] = {{{"plan", "decode"}}, {{"plan", "advance"}}};
    prefill["last_position"] = {{{"plan", "decode"}}, {{"plan", "lm_head"}}};
  }

  json kernels = w.kernels();
  json device = device_json(buffers, kernels, plans);
  return {{"format", "wgfuse-plan"},
          {"version", kPlanFormatVersion},
          {"device", std::move(device)},
          {"model", config_json(c)},
          {"weight_formats", formats_json(model)},
          {"ctx", model.capacity()},
          {"prompt_length", prompt_length},
          {"buffers", std::move(buffers)},
          {"state",
           {{"buffer", "state"},
            {"words",
             {{{"word", 0},
               {"name", "pos"},
               {"meaning", "the position the decode step feeds"},
               {"written_by",
                {"host: the last prompt position, before each prefill chunk",
                 "host: the first unfed position, before a prompt fed through decode steps",
                 "the picker's last dispatch (argmax_final, the sampler's pick): pos + 1, after writing "
                 "tokens[pos + 1]",
                 "advance: pos + 1"}}},
              {{"word", 1},
               {"name", "chunk_start"},
               {"meaning", "a prefill chunk's first position"},
               {"written_by", {"host: before each prefill chunk"}}},
              {{"word", 2},
               {"name", "chunk_length"},
               {"meaning", "a prefill chunk's length T"},
               {"written_by", {"host: before each prefill chunk"}}}}}}},
          {"tokens",
           {{"buffer", "tokens"}, {"meaning", "u32 token ids by position; the host writes the prompt's"}}},
          {"logits", "logits"},
          {"kernels", std::move(kernels)},
          {"plans", std::move(plans)},
          {"prefill", std::move(prefill)},
          {"decode", {{"variants", std::move(decode)}, {"token", {"decode", "lm_head", picker}}}},
          {"picker", picker}};
}

json config_json(const ModelConfig& c) {
  return {{"architecture", c.architecture},
          {"vocab_size", c.vocab_size},
          {"hidden_size", c.hidden_size},
          {"intermediate_size", c.intermediate_size},
          {"num_layers", c.num_layers},
          {"num_heads", c.num_heads},
          {"num_kv_heads", c.num_kv_heads},
          {"head_dim", c.head_dim},
          {"rope_theta", c.rope_theta},
          {"rms_norm_eps", c.rms_norm_eps},
          {"tie_word_embeddings", c.tie_word_embeddings}};
}

void write_plan(const std::string& path, const json& plan) {
  std::ofstream f(path);
  if (!f) throw Error("--write-plan: cannot write " + path);
  f << plan.dump(1) << '\n';
  if (!f) throw Error("--write-plan: writing " + path + " failed");
}

}  // namespace wgfuse::llm
