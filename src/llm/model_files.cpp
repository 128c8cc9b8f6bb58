#include "llm/model_files.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "llm/architecture.h"
#include "llm/gguf.h"
#include "llm/gguf_model.h"
#include "util/error.h"
#include "util/file.h"
#include "util/worker_pool.h"

namespace wgfuse::llm {
namespace {

using nlohmann::json;

json parse_json_object(std::string_view text, const std::string& file_name) {
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    throw Error(file_name + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw Error(file_name + ": not a JSON object");
  return j;
}

// A field of `j` read as a positive size that fits 32 bits; nullopt when absent (or null).
std::optional<uint32_t> size_field(const json& j, const char* key, const std::string& file_name) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_unsigned() || it->get<uint64_t>() == 0 ||
      it->get<uint64_t>() > std::numeric_limits<uint32_t>::max())
    throw Error(file_name + ": \"" + key + "\" is " + it->dump() +
                ", expected a positive integer below 2^32");
  return uint32_t(it->get<uint64_t>());
}

uint32_t required_size(const json& j, const char* key, const std::string& file_name) {
  auto v = size_field(j, key, file_name);
  if (!v) throw Error(file_name + ": required field \"" + key + "\" is missing");
  return *v;
}

// A token id: a non-negative integer below 2^32.
uint32_t token_id(const json& v, const char* key, const std::string& file_name) {
  if (!v.is_number_unsigned() || v.get<uint64_t>() > std::numeric_limits<uint32_t>::max())
    throw Error(file_name + ": \"" + key + "\" holds " + v.dump() + ", expected a token id");
  return uint32_t(v.get<uint64_t>());
}

std::optional<double> number_field(const json& j, const char* key, const std::string& file_name) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) throw Error(file_name + ": \"" + key + "\" is " + it->dump() + ", expected a number");
  return it->get<double>();
}

std::optional<bool> bool_field(const json& j, const char* key, const std::string& file_name) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean())
    throw Error(file_name + ": \"" + key + "\" is " + it->dump() + ", expected true or false");
  return it->get<bool>();
}

bool path_exists(const std::filesystem::path& p) {
  return regular_file_size(p, "a model file", /*missing_ok=*/true).has_value();
}

// RoPE: transformers 4 writes rope_theta and rope_scaling at the top level; transformers 5
// writes both into rope_parameters. Types default, llama3 and yarn (llm/rope.h).
void parse_rope(const json& j, ModelConfig& c, const std::string& file_name) {
  std::string where = "rope_parameters";
  const json* rope = nullptr;
  if (auto rp = j.find("rope_parameters"); rp != j.end() && !rp->is_null()) {
    if (!rp->is_object()) throw Error(file_name + ": \"rope_parameters\" is not an object");
    rope = &*rp;
  }
  c.rope_theta = number_field(rope ? *rope : j, "rope_theta", file_name).value_or(10000.0);
  if (auto rs = j.find("rope_scaling"); !rope && rs != j.end() && !rs->is_null()) {
    if (!rs->is_object())
      throw Error(file_name + ": \"rope_scaling\" is " + rs->dump() + ", expected an object");
    rope = &*rs;
    where = "rope_scaling";
  }
  if (!rope) return;
  std::string type = "default";
  for (const char* k : {"rope_type", "type"})
    if (auto t = rope->find(k); t != rope->end() && t->is_string()) {
      type = t->get<std::string>();
      break;
    }
  if (auto p = number_field(*rope, "partial_rotary_factor", file_name); p && *p != 1.0)
    throw Error(file_name + ": " + where + ".partial_rotary_factor " +
                rope->at("partial_rotary_factor").dump() + " is not supported (wgfuse rotates whole heads)");
  RopeScaling& s = c.rope_scaling;
  using Type = RopeScaling::Type;
  auto required = [&](const char* key) {
    auto v = number_field(*rope, key, file_name);
    if (!v) throw Error(file_name + ": " + where + "." + key + " is missing (rope_type \"" + type + "\")");
    return *v;
  };
  auto optional = [&](const char* key, double fallback) {
    return number_field(*rope, key, file_name).value_or(fallback);
  };
  auto original = [&](double v) {
    if (!(v >= 1 && v <= std::numeric_limits<uint32_t>::max()) || v != std::floor(v))
      throw Error(file_name + ": " + where + ".original_max_position_embeddings must be a positive integer");
    return uint32_t(v);
  };
  if (type == "default") return;
  if (type == "llama3") {
    s.type = Type::Llama3;
    s.factor = required("factor");
    s.low_freq_factor = required("low_freq_factor");
    s.high_freq_factor = required("high_freq_factor");
    s.original_max_position_embeddings = original(required("original_max_position_embeddings"));
    return;
  }
  if (type == "yarn") {
    s.type = Type::Yarn;
    s.factor = required("factor");
    // beta_fast/beta_slow null or 0 mean the defaults in transformers too ("or 32").
    s.beta_fast = optional("beta_fast", 0) ? optional("beta_fast", 0) : 32.0;
    s.beta_slow = optional("beta_slow", 0) ? optional("beta_slow", 0) : 1.0;
    s.attention_factor = optional("attention_factor", 0);
    s.mscale = optional("mscale", 0);
    s.mscale_all_dim = optional("mscale_all_dim", 0);
    s.truncate = bool_field(*rope, "truncate", file_name).value_or(true);
    if (auto o = number_field(*rope, "original_max_position_embeddings", file_name)) {
      s.original_max_position_embeddings = original(*o);
      // transformers 4.4x-4.5x replace factor by this ratio, 5.x keeps factor: refused where they differ.
      const double implied = double(c.max_position_embeddings) / s.original_max_position_embeddings;
      if (std::abs(implied - s.factor) > 1e-9 * s.factor)
        throw Error(file_name + ": " + where + ".factor " + rope->at("factor").dump() +
                    " differs from max_position_embeddings / original_max_position_embeddings (" +
                    std::to_string(implied) +
                    "); transformers versions disagree on which applies, so wgfuse "
                    "refuses the config: make them agree");
    }
    return;
  }
  throw Error(file_name + ": " + where + ".rope_type \"" + type +
              "\" is not supported (wgfuse implements RoPE types default, llama3 and yarn)");
}

}  // namespace

ModelConfig parse_model_config(std::string_view json_text, const std::string& file_name) {
  const json j = parse_json_object(json_text, file_name);
  ModelConfig c;

  auto arch = j.find("architectures");
  if (arch == j.end()) throw Error(file_name + ": required field \"architectures\" is missing");
  if (!arch->is_array() || arch->empty() || !(*arch)[0].is_string())
    throw Error(file_name + ": \"architectures\" is " + arch->dump() + ", expected a list of names");
  c.architecture = (*arch)[0].get<std::string>();
  const Architecture& a = find_architecture(c.architecture, file_name);

  c.vocab_size = required_size(j, "vocab_size", file_name);
  c.hidden_size = required_size(j, "hidden_size", file_name);
  c.intermediate_size = required_size(j, "intermediate_size", file_name);
  c.num_layers = required_size(j, "num_hidden_layers", file_name);
  c.num_heads = required_size(j, "num_attention_heads", file_name);
  c.max_position_embeddings = required_size(j, "max_position_embeddings", file_name);
  c.num_kv_heads = size_field(j, "num_key_value_heads", file_name).value_or(c.num_heads);
  if (auto hd = size_field(j, "head_dim", file_name)) {
    c.head_dim = *hd;
  } else {
    if (c.hidden_size % c.num_heads != 0)
      throw Error(file_name + ": hidden_size " + std::to_string(c.hidden_size) +
                  " is not a multiple of num_attention_heads " + std::to_string(c.num_heads) +
                  " and there is no \"head_dim\"");
    c.head_dim = c.hidden_size / c.num_heads;
  }
  c.rms_norm_eps = number_field(j, "rms_norm_eps", file_name).value_or(1e-6);
  c.tie_word_embeddings = bool_field(j, "tie_word_embeddings", file_name).value_or(false);
  parse_rope(j, c, file_name);

  // What the kernels do not implement is refused by name.
  const std::string runs = " (wgfuse runs " + std::string(a.name) + " ";
  if (auto act = j.find("hidden_act"); act != j.end() && *act != "silu")
    throw Error(file_name + ": \"hidden_act\" " + act->dump() + " is not supported" + runs +
                "with \"silu\")");
  if (!a.qkv_bias && bool_field(j, "attention_bias", file_name).value_or(false))
    throw Error(file_name + ": \"attention_bias\": true is not supported" + runs +
                "without attention biases: o_proj's bias is not implemented)");
  if (bool_field(j, "mlp_bias", file_name).value_or(false))
    throw Error(file_name + ": \"mlp_bias\": true is not supported" + runs + "without MLP biases)");
  for (const char* moe : {"num_experts", "num_local_experts", "n_routed_experts"})
    if (auto e = j.find(moe); e != j.end() && e->is_number() && e->get<double>() > 0)
      throw Error(file_name + ": \"" + moe + "\" " + e->dump() +
                  ": mixture-of-experts models are not supported (wgfuse runs dense models: " +
                  supported_architectures() + ")");
  if (bool_field(j, "use_sliding_window", file_name).value_or(false))
    throw Error(file_name +
                ": \"use_sliding_window\": true is not supported (wgfuse implements full attention)");
  if (auto lt = j.find("layer_types"); lt != j.end() && lt->is_array())
    for (const auto& t : *lt)
      if (t != "full_attention")
        throw Error(file_name + ": \"layer_types\" holds " + t.dump() +
                    " (wgfuse implements full_attention only)");
  check_config(c, file_name);
  return c;
}

void apply_generation_config(std::string_view json_text, const std::string& file_name,
                             GenerationConfig& into) {
  const json j = parse_json_object(json_text, file_name);
  if (auto eos = j.find("eos_token_id"); eos != j.end() && !eos->is_null()) {
    into.eos_token_ids.clear();
    if (eos->is_array()) {
      for (const auto& id : *eos) into.eos_token_ids.push_back(token_id(id, "eos_token_id", file_name));
    } else {
      into.eos_token_ids.push_back(token_id(*eos, "eos_token_id", file_name));
    }
  }
  for (auto [key, field] :
       {std::pair{"bos_token_id", &into.bos_token_id}, {"pad_token_id", &into.pad_token_id}})
    if (auto it = j.find(key); it != j.end() && !it->is_null()) *field = token_id(*it, key, file_name);

  into.do_sample = bool_field(j, "do_sample", file_name).value_or(into.do_sample);
  into.temperature = number_field(j, "temperature", file_name).value_or(into.temperature);
  if (!(into.temperature >= 0)) throw Error(file_name + ": \"temperature\" must be >= 0");
  if (auto it = j.find("top_k"); it != j.end() && !it->is_null()) {
    if (!it->is_number_unsigned() || it->get<uint64_t>() > std::numeric_limits<uint32_t>::max())
      throw Error(file_name + ": \"top_k\" is " + it->dump() + ", expected a non-negative integer");
    into.top_k = uint32_t(it->get<uint64_t>());
  }
  into.top_p = number_field(j, "top_p", file_name).value_or(into.top_p);
  if (!(into.top_p > 0 && into.top_p <= 1)) throw Error(file_name + ": \"top_p\" must be in (0, 1]");
  into.repetition_penalty =
      number_field(j, "repetition_penalty", file_name).value_or(into.repetition_penalty);
  if (!(into.repetition_penalty > 0)) throw Error(file_name + ": \"repetition_penalty\" must be positive");
}

ModelFiles::ModelFiles(const std::filesystem::path& dir) : dir_(dir) {
  if (is_gguf_file(dir.string())) {
    open_gguf();
    return;
  }
  {
    std::error_code ec;
    const auto st = std::filesystem::status(dir, ec);
    if (st.type() == std::filesystem::file_type::not_found)
      throw Error(dir.string() + ": not a model folder (no such directory)");
    if (ec) throw Error(dir.string() + ": not a model folder (" + ec.message() + ")");
    if (st.type() != std::filesystem::file_type::directory)
      throw Error(dir.string() +
                  ": not a model folder (a file, not a directory: give the folder holding "
                  "config.json, or a GGUF file)");
  }
  const auto config_path = dir / "config.json";
  const std::string config_text = read_file(config_path, "the model config", kMaxConfigBytes);
  config_ = parse_model_config(config_text, config_path.string());
  quant_ = parse_quantization_config(config_text, config_path.string());
  apply_generation_config(config_text, config_path.string(), generation_);  // token ids, if any
  if (const auto gen =
          read_file_if_exists(dir / "generation_config.json", "the generation config", kMaxConfigBytes))
    apply_generation_config(*gen, (dir / "generation_config.json").string(), generation_);

  const auto single = dir / "model.safetensors";
  const auto index_path = dir / "model.safetensors.index.json";
  if (path_exists(single)) {
    index_file(SafetensorsFile(single.string()));
    validate();
    return;
  }
  if (!path_exists(index_path))
    throw Error(dir.string() + ": no model.safetensors and no model.safetensors.index.json");

  // Sharded: the index maps each tensor name to the shard that holds it.
  const std::string index_name = index_path.string();
  const json index =
      parse_json_object(read_file(index_path, "the shard index", kMaxTokenizerBytes), index_name);
  auto map = index.find("weight_map");
  if (map == index.end() || !map->is_object())
    throw Error(index_name + ": required field \"weight_map\" is missing or not an object");
  std::map<std::string, std::string> shard_of;         // tensor -> shard file name
  std::map<std::string, std::string> first_tensor_in;  // shard -> a tensor it should hold (for messages)
  for (const auto& [name, shard] : map->items()) {
    if (!shard.is_string()) throw Error(index_name + ": weight_map[\"" + name + "\"] is not a file name");
    const std::string s = shard.get<std::string>();
    if (s.empty() || s.find('/') != std::string::npos || s == "." || s == "..")
      throw Error(index_name + ": weight_map[\"" + name + "\"] = \"" + s +
                  "\" is not a file name in the folder");
    shard_of[name] = s;
    first_tensor_in.emplace(s, name);
  }
  for (const auto& [shard, tensor] : first_tensor_in) {
    const auto p = dir / shard;
    if (!path_exists(p))
      throw Error(index_name + ": shard \"" + shard + "\" (holding \"" + tensor +
                  "\" and others) is missing from " + dir.string());
    index_file(SafetensorsFile(p.string()));
  }
  for (const auto& [name, shard] : shard_of) {
    auto it = by_name_.find(name);
    if (it == by_name_.end() || std::filesystem::path(files_[it->second.file].path()).filename() != shard)
      throw Error(index_name + ": weight_map puts \"" + name + "\" in " + shard + ", which does not hold it");
  }
  // transformers loads what the index lists: a tensor it misses would be left uninitialised.
  for (const auto& [name, located] : by_name_)
    if (!shard_of.contains(name))
      throw Error(index_name + ": weight_map does not list \"" + name + "\", which " +
                  files_[located.file].path() + " holds: the index and the shards disagree");
  validate();
}

ModelFiles::~ModelFiles() = default;
ModelFiles::ModelFiles(ModelFiles&&) noexcept = default;

void ModelFiles::open_gguf() {
  gguf_ = std::make_unique<GgufFile>(dir_.string());
  config_ = gguf_model_config(*gguf_);
  generation_ = gguf_generation_config(*gguf_);
  const Architecture& a = architecture_of(config_);
  using enum TensorRole;
  for (const ExpectedTensor& e : expected_tensors(config_)) {
    const std::string name = gguf_name(e.role, e.layer);
    const GgufTensor* t = gguf_->find_tensor(name);
    if (!t)
      throw Error(dir_.string() + ": tensor \"" + name + "\" (" + e.name + ", shape " + shape_text(e.shape) +
                  ") is missing");
    TensorRef& ref = gguf_refs_.emplace_back(gguf_->tensor_ref(*t, e.name));
    const bool rope_rows = e.role == Q || e.role == K || e.role == QBias || e.role == KBias;
    if (a.gguf_rope_pairs_adjacent && rope_rows && ref.shape == e.shape) {
      ref.bytes = reordered_.emplace_back(rope_rows_to_hf(ref, config_.head_dim));
    }
    by_name_.emplace(e.name, Located{&ref, 0});
  }
  validate();
}

std::string ModelFiles::tensor_types() const {
  if (gguf_) return gguf_->type_summary();
  std::map<std::string, size_t> count;
  for (const auto& f : files_)
    for (const auto& t : f.tensors()) ++count[dtype_name(t.dtype)];
  std::string s;
  for (const auto& [name, n] : count) s += (s.empty() ? "" : ", ") + name + " x " + std::to_string(n);
  return s;
}

void ModelFiles::index_file(SafetensorsFile&& f) {
  files_.push_back(std::move(f));
  const size_t i = files_.size() - 1;
  for (const TensorRef& t : files_[i].tensors()) {
    auto [it, fresh] = by_name_.emplace(t.name, Located{&t, i});
    if (!fresh)
      throw Error(files_[i].path() + ": tensor \"" + t.name + "\" is also in " +
                  files_[it->second.file].path());
  }
}

const TensorRef* ModelFiles::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : it->second.ref;
}

const std::string& ModelFiles::file_of(const TensorRef& t) const {
  if (gguf_) return gguf_->path();
  return files_.at(by_name_.at(t.name).file).path();
}

const TensorRef& ModelFiles::require(std::string_view name, const std::vector<uint64_t>& shape) const {
  const TensorRef* t = find(name);
  if (!t)
    throw Error(dir_.string() + ": tensor \"" + std::string(name) + "\" (shape " + shape_text(shape) +
                ") is in none of the model's safetensors files");
  if (t->dtype == DType::I32)
    throw Error(file_of(*t) + ": tensor \"" + t->name + "\" is I32, expected floats (F32, F16 or BF16)");
  if (t->shape != shape)
    throw Error(file_of(*t) + ": tensor \"" + t->name + "\" has shape " + shape_text(t->shape) +
                ", expected " + shape_text(shape) + (gguf_ ? " from its metadata" : " from config.json"));
  return *t;
}

namespace {

// N of a tensor named "model.layers.N. ..." (Hugging Face's per-layer names), else nullopt.
std::optional<uint64_t> layer_of(std::string_view name) {
  constexpr std::string_view prefix = "model.layers.";
  if (!name.starts_with(prefix)) return std::nullopt;
  name.remove_prefix(prefix.size());
  uint64_t n = 0;
  size_t digits = 0;
  while (digits < name.size() && digits < 12 && name[digits] >= '0' && name[digits] <= '9')
    n = n * 10 + uint64_t(name[digits++] - '0');
  if (digits == 0 || digits == name.size() || name[digits] != '.') return std::nullopt;
  return n;
}

}  // namespace

void ModelFiles::validate() {
  // The layers first, from the names present: the expected list is as long as num_hidden_layers,
  // which must not size anything before the files back it.
  const std::string config_name = (dir_ / "config.json").string();
  std::optional<uint64_t> last;
  const TensorRef* last_ref = nullptr;
  for (const auto& [name, located] : by_name_)
    if (const auto l = layer_of(name); l && (!last || *l > *last)) last = l, last_ref = located.ref;
  const uint64_t held = last ? *last + 1 : 0;
  if (held != config_.num_layers)
    throw Error(config_name + ": \"num_hidden_layers\" is " + std::to_string(config_.num_layers) +
                ", but the safetensors files hold " + std::to_string(held) + " layers" +
                (last_ref ? " (the last: \"" + last_ref->name + "\" in " + file_of(*last_ref) + ")" : "") +
                ": the config and the weights disagree");
  const std::vector<ExpectedTensor> table = expected_tensors(config_);
  convert_quantized(table);
  std::unordered_map<std::string_view, bool> expected;
  for (const auto& e : table) {
    require(e.name, e.shape);
    expected.emplace(e.name, true);
  }
  // What the table does not read. transformers warns of unused weights and runs; so does wgfuse,
  // naming them. A tied model's lm_head is ignored as transformers ignores it (the embedding is
  // the head), named only when it differs from the embedding.
  std::vector<std::string> unused;
  for (const auto& [name, located] : by_name_) {
    if (expected.contains(name)) continue;
    if (config_.tie_word_embeddings && name == hf_name(TensorRole::LmHead)) {
      const TensorRef* embed = find(hf_name(TensorRole::Embedding));
      if (embed && embed->dtype == located.ref->dtype && embed->shape == located.ref->shape &&
          std::equal(embed->bytes.begin(), embed->bytes.end(), located.ref->bytes.begin()))
        continue;
      warnings_.push_back(file_of(*located.ref) + ": \"" + name +
                          "\" differs from the embedding but is not used: config.json ties the LM head to "
                          "the embedding (\"tie_word_embeddings\": true), as transformers does; set it to "
                          "false to use this head");
      continue;
    }
    unused.push_back(name);
  }
  if (!unused.empty()) {
    std::sort(unused.begin(), unused.end());
    std::string list;
    for (size_t i = 0; i < unused.size() && i < 5; ++i) list += (i ? ", \"" : "\"") + unused[i] + "\"";
    if (unused.size() > 5) list += " and " + std::to_string(unused.size() - 5) + " more";
    warnings_.push_back(dir_.string() + ": " + std::to_string(unused.size()) + " tensor" +
                        (unused.size() == 1 ? " is" : "s are") + " not part of " + config_.architecture +
                        " and not used: " + list);
  }
}

void ModelFiles::convert_quantized(const std::vector<ExpectedTensor>& table) {
  const WeightLookup lookup = [&](std::string_view n) { return find(n); };
  struct Layer {
    const ExpectedTensor* e;
    std::string prefix;
    QuantizedLinear t;
  };
  std::vector<Layer> layers;
  constexpr std::string_view suffix = ".weight";
  for (const ExpectedTensor& e : table) {
    if (e.shape.size() != 2 || !e.name.ends_with(suffix) || find(e.name)) continue;
    std::string prefix = e.name.substr(0, e.name.size() - suffix.size());
    const TensorRef* packed = find(prefix + ".qweight");
    if (!packed) continue;  // validate's require() names the missing tensor
    if (!quant_)
      throw Error(file_of(*packed) + ": \"" + packed->name + "\" is a quantized layer, but " +
                  (dir_ / "config.json").string() +
                  " has no \"quantization_config\" saying how it is packed");
    QuantizedLinear t = quantized_linear(*quant_, lookup, prefix, e.shape[0], e.shape[1], file_of(*packed));
    layers.push_back({&e, std::move(prefix), t});
  }
  if (layers.empty()) return;
  std::vector<QuantizedRows> rows(layers.size());
  util::WorkerPool pool;
  pool.run(layers.size(), [&](size_t i) { rows[i] = quantized_linear_to_rows(*quant_, layers[i].t); });
  for (size_t i = 0; i < layers.size(); ++i) {
    const Layer& l = layers[i];
    const size_t file = by_name_.at(l.t.qweight->name).file;
    const std::vector<std::byte>& bytes = quantized_rows_.emplace_back(std::move(rows[i].bytes));
    TensorRef& ref = quantized_refs_.emplace_back(TensorRef{l.e->name, rows[i].type, l.e->shape, bytes});
    for (const char* part : {".qweight", ".qzeros", ".scales", ".g_idx"}) by_name_.erase(l.prefix + part);
    by_name_.emplace(l.e->name, Located{&ref, file});
  }
}

uint64_t ModelFiles::total_bytes() const {
  uint64_t n = 0;
  if (gguf_)
    for (const auto& t : gguf_->tensors()) n += t.bytes.size();
  for (const auto& f : files_)
    for (const auto& t : f.tensors()) n += t.bytes.size();
  return n;
}

}  // namespace wgfuse::llm
