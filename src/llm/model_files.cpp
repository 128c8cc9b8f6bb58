#include "llm/model_files.h"

#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "util/error.h"

namespace wgfuse::llm {
namespace {

using nlohmann::json;

std::string shape_text(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

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

// Without throwing std::filesystem_error: an unreadable path counts as absent, and opening it
// then gives our own error.
bool path_exists(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::exists(p, ec);
}
bool is_folder(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_directory(p, ec);
}

std::string read_text_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw Error(p.string() + ": cannot open");
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) throw Error(p.string() + ": read error");
  return s.str();
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
  if (c.architecture != "Qwen2ForCausalLM")
    throw Error(file_name + ": unsupported architecture \"" + c.architecture +
                "\" (wgfuse runs Qwen2ForCausalLM: Qwen2 and Qwen2.5 checkpoints)");

  c.vocab_size = required_size(j, "vocab_size", file_name);
  c.hidden_size = required_size(j, "hidden_size", file_name);
  c.intermediate_size = required_size(j, "intermediate_size", file_name);
  c.num_layers = required_size(j, "num_hidden_layers", file_name);
  c.num_heads = required_size(j, "num_attention_heads", file_name);
  c.max_position_embeddings = required_size(j, "max_position_embeddings", file_name);
  c.num_kv_heads = size_field(j, "num_key_value_heads", file_name).value_or(c.num_heads);
  if (c.num_heads % c.num_kv_heads != 0)
    throw Error(file_name + ": num_attention_heads " + std::to_string(c.num_heads) +
                " is not a multiple of num_key_value_heads " + std::to_string(c.num_kv_heads));
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
  if (!(c.rms_norm_eps > 0)) throw Error(file_name + ": \"rms_norm_eps\" must be positive");
  c.tie_word_embeddings = bool_field(j, "tie_word_embeddings", file_name).value_or(false);

  // RoPE: transformers 4 writes rope_theta and rope_scaling at the top level; transformers 5
  // writes both into rope_parameters. Only plain RoPE is implemented.
  const json* rope = &j;
  if (auto rp = j.find("rope_parameters"); rp != j.end() && !rp->is_null()) {
    if (!rp->is_object()) throw Error(file_name + ": \"rope_parameters\" is not an object");
    rope = &*rp;
  }
  c.rope_theta = number_field(*rope, "rope_theta", file_name).value_or(10000.0);
  if (!(c.rope_theta > 0)) throw Error(file_name + ": \"rope_theta\" must be positive");
  auto rope_type = [&](const json& o) -> std::string {
    for (const char* k : {"rope_type", "type"})
      if (auto t = o.find(k); t != o.end() && t->is_string()) return t->get<std::string>();
    return "default";
  };
  if (rope != &j && rope_type(*rope) != "default")
    throw Error(file_name + ": rope_parameters.rope_type \"" + rope_type(*rope) +
                "\" is not supported (wgfuse implements plain RoPE)");
  if (auto rs = j.find("rope_scaling"); rs != j.end() && !rs->is_null()) {
    if (!rs->is_object() || rope_type(*rs) != "default")
      throw Error(file_name + ": \"rope_scaling\" " + rs->dump() +
                  " is not supported (wgfuse implements plain RoPE)");
  }

  if (auto act = j.find("hidden_act"); act != j.end() && *act != "silu")
    throw Error(file_name + ": \"hidden_act\" " + act->dump() + " is not supported (Qwen2 uses \"silu\")");
  if (bool_field(j, "use_sliding_window", file_name).value_or(false))
    throw Error(file_name +
                ": \"use_sliding_window\": true is not supported (wgfuse implements full attention)");
  if (auto lt = j.find("layer_types"); lt != j.end() && lt->is_array())
    for (const auto& t : *lt)
      if (t != "full_attention")
        throw Error(file_name + ": \"layer_types\" holds " + t.dump() +
                    " (wgfuse implements full_attention only)");
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

std::vector<ExpectedTensor> qwen2_expected_tensors(const ModelConfig& c) {
  const uint64_t hidden = c.hidden_size, q = uint64_t(c.num_heads) * c.head_dim,
                 kv = uint64_t(c.num_kv_heads) * c.head_dim, inter = c.intermediate_size;
  std::vector<ExpectedTensor> t;
  t.push_back({"model.embed_tokens.weight", {c.vocab_size, hidden}});
  for (uint32_t l = 0; l < c.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    t.push_back({p + "input_layernorm.weight", {hidden}});
    t.push_back({p + "self_attn.q_proj.weight", {q, hidden}});
    t.push_back({p + "self_attn.k_proj.weight", {kv, hidden}});
    t.push_back({p + "self_attn.v_proj.weight", {kv, hidden}});
    if (c.attention_bias) {
      t.push_back({p + "self_attn.q_proj.bias", {q}});
      t.push_back({p + "self_attn.k_proj.bias", {kv}});
      t.push_back({p + "self_attn.v_proj.bias", {kv}});
    }
    t.push_back({p + "self_attn.o_proj.weight", {hidden, q}});
    t.push_back({p + "post_attention_layernorm.weight", {hidden}});
    t.push_back({p + "mlp.gate_proj.weight", {inter, hidden}});
    t.push_back({p + "mlp.up_proj.weight", {inter, hidden}});
    t.push_back({p + "mlp.down_proj.weight", {hidden, inter}});
  }
  t.push_back({"model.norm.weight", {hidden}});
  if (!c.tie_word_embeddings) t.push_back({"lm_head.weight", {c.vocab_size, hidden}});
  return t;
}

ModelFiles::ModelFiles(const std::filesystem::path& dir) : dir_(dir) {
  if (!is_folder(dir)) throw Error(dir.string() + ": not a model folder (no such directory)");
  const auto config_path = dir / "config.json";
  const std::string config_text = read_text_file(config_path);
  config_ = parse_model_config(config_text, config_path.string());
  apply_generation_config(config_text, config_path.string(), generation_);  // token ids, if any
  if (const auto gen = dir / "generation_config.json"; path_exists(gen))
    apply_generation_config(read_text_file(gen), gen.string(), generation_);

  const auto single = dir / "model.safetensors";
  const auto index_path = dir / "model.safetensors.index.json";
  if (path_exists(single)) {
    index_file(SafetensorsFile(single.string()));
    return;
  }
  if (!path_exists(index_path))
    throw Error(dir.string() + ": no model.safetensors and no model.safetensors.index.json");

  // Sharded: the index maps each tensor name to the shard that holds it.
  const std::string index_name = index_path.string();
  const json index = parse_json_object(read_text_file(index_path), index_name);
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
  return files_.at(by_name_.at(t.name).file).path();
}

const TensorRef& ModelFiles::require(std::string_view name, const std::vector<uint64_t>& shape) const {
  const TensorRef* t = find(name);
  if (!t)
    throw Error(dir_.string() + ": tensor \"" + std::string(name) + "\" (shape " + shape_text(shape) +
                ") is in none of the model's safetensors files");
  if (t->shape != shape)
    throw Error(file_of(*t) + ": tensor \"" + t->name + "\" has shape " + shape_text(t->shape) +
                ", expected " + shape_text(shape) + " from config.json");
  return *t;
}

void ModelFiles::validate_qwen2() const {
  for (const auto& e : qwen2_expected_tensors(config_)) require(e.name, e.shape);
}

uint64_t ModelFiles::total_bytes() const {
  uint64_t n = 0;
  for (const auto& f : files_)
    for (const auto& t : f.tensors()) n += t.bytes.size();
  return n;
}

}  // namespace wgfuse::llm
