#include "llm/gguf.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <unordered_set>

#include "util/error.h"

namespace wgfuse::llm {

static_assert(std::endian::native == std::endian::little);

namespace {

// ggml's names are at most GGML_MAX_NAME - 1 bytes; a key longer than this is no real key.
constexpr uint64_t kMaxTensorName = 63;
constexpr uint64_t kMaxKey = 65535;
constexpr uint32_t kMaxDims = 4;  // GGML_MAX_DIMS

// ggml's types (ggml.h, gguf-py's GGML_QUANT_SIZES), with the gpu::DType of those wgfuse decodes
// (gpu/ggml_blocks.h); a tensor of another type is refused by name when a model needs it.
constexpr uint32_t kQK = 256;  // elements of a K-quant super-block
const GgmlType kGgmlTypes[] = {
    {0, "F32", 1, 4, gpu::DType::F32},
    {1, "F16", 1, 2, gpu::DType::F16},
    {2, "Q4_0", 32, 18, gpu::DType::Q4_0},
    {3, "Q4_1", 32, 20, gpu::DType::Q4_1},
    {6, "Q5_0", 32, 22, gpu::DType::Q5_0},
    {7, "Q5_1", 32, 24, gpu::DType::Q5_1},
    {8, "Q8_0", 32, 34, gpu::DType::Q8_0},
    {9, "Q8_1", 32, 36, {}},
    {10, "Q2_K", kQK, 84, {}},
    {11, "Q3_K", kQK, 110, {}},
    {12, "Q4_K", kQK, 144, gpu::DType::Q4_K},
    {13, "Q5_K", kQK, 176, gpu::DType::Q5_K},
    {14, "Q6_K", kQK, 210, gpu::DType::Q6_K},
    {15, "Q8_K", kQK, 292, {}},
    {16, "IQ2_XXS", kQK, 66, {}},
    {17, "IQ2_XS", kQK, 74, {}},
    {18, "IQ3_XXS", kQK, 98, {}},
    {19, "IQ1_S", kQK, 50, {}},
    {20, "IQ4_NL", 32, 18, {}},
    {21, "IQ3_S", kQK, 110, {}},
    {22, "IQ2_S", kQK, 82, {}},
    {23, "IQ4_XS", kQK, 136, {}},
    {24, "I8", 1, 1, {}},
    {25, "I16", 1, 2, {}},
    {26, "I32", 1, 4, {}},
    {27, "I64", 1, 8, {}},
    {28, "F64", 1, 8, {}},
    {29, "IQ1_M", kQK, 56, {}},
    {30, "BF16", 1, 2, gpu::DType::BF16},
    {34, "TQ1_0", kQK, 54, {}},
    {35, "TQ2_0", kQK, 66, {}},
    {39, "MXFP4", 32, 17, {}},
};

// The smallest encoding of each value type, to bound a count by the bytes that remain.
uint64_t min_value_bytes(GgufType t) {
  switch (t) {
    case GgufType::U8:
    case GgufType::I8:
    case GgufType::Bool:
      return 1;
    case GgufType::U16:
    case GgufType::I16:
      return 2;
    case GgufType::U32:
    case GgufType::I32:
    case GgufType::F32:
      return 4;
    case GgufType::U64:
    case GgufType::I64:
    case GgufType::F64:
    case GgufType::String:  // its u64 length
      return 8;
    case GgufType::Array:  // element type + count
      return 12;
  }
  return 1;
}

bool valid_type(uint32_t t) {
  return t <= uint32_t(GgufType::F64);
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// Reads the header front to back; every read names its field and checks the bytes it needs.
class Cursor {
 public:
  Cursor(std::span<const std::byte> file, const std::string& name) : file_(file), name_(name) {}

  [[noreturn]] void fail(const std::string& problem) const { throw Error(name_ + ": " + problem); }
  uint64_t pos() const { return pos_; }
  uint64_t left() const { return file_.size() - pos_; }

  std::span<const std::byte> take(uint64_t n, const std::string& field) {
    if (n > left())
      fail(field + " needs " + std::to_string(n) + " bytes at offset " + std::to_string(pos_) +
           ", the file has " + std::to_string(left()) + " left (truncated?)");
    auto s = file_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  template <typename T>
  T read(const std::string& field) {
    T v;
    std::memcpy(&v, take(sizeof(T), field).data(), sizeof(T));
    return v;
  }
  // A string; `index` names an array element in messages (built only on failure: a vocabulary
  // is 150,000 of them).
  std::string_view string(const std::string& field, uint64_t max_len, uint64_t index = UINT64_MAX) {
    auto name = [&] { return index == UINT64_MAX ? field : field + "[" + std::to_string(index) + "]"; };
    if (left() < 8) take(8, name() + " (its length)");
    const auto len = read<uint64_t>(field);
    if (len > left())
      fail(name() + ": a string of " + std::to_string(len) + " bytes at offset " + std::to_string(pos_) +
           ", the file has " + std::to_string(left()) + " left");
    if (len > max_len)
      fail(name() + ": a string of " + std::to_string(len) + " bytes, more than the limit of " +
           std::to_string(max_len));
    auto s = file_.subspan(pos_, len);
    pos_ += len;
    return {reinterpret_cast<const char*>(s.data()), s.size()};
  }
  // A count of items that take at least `min_bytes` each, bounded by the bytes that remain.
  uint64_t count(const std::string& field, uint64_t min_bytes) {
    const auto n = read<uint64_t>(field);
    if (n > left() / min_bytes)
      fail(field + " is " + std::to_string(n) + ", but the " + std::to_string(left()) +
           " bytes left hold at most " + std::to_string(left() / min_bytes) + " (" +
           std::to_string(min_bytes) + " bytes each)");
    return n;
  }

 private:
  std::span<const std::byte> file_;
  const std::string& name_;
  uint64_t pos_ = 0;
};

GgufType read_type(Cursor& in, const std::string& field) {
  const auto t = in.read<uint32_t>(field);
  if (!valid_type(t)) in.fail(field + " is " + std::to_string(t) + ", not a GGUF value type (0..12)");
  return GgufType(t);
}

GgufValue read_value(Cursor& in, GgufType type, const std::string& field) {
  GgufValue v;
  v.type = type;
  if (type == GgufType::String) {
    const std::string_view s = in.string(field, UINT64_MAX);
    v.bytes = std::as_bytes(std::span(s.data(), s.size()));
    return v;
  }
  if (type != GgufType::Array) {
    v.bytes = in.take(min_value_bytes(type), field);
    if (type == GgufType::Bool && uint8_t(v.bytes[0]) > 1)
      in.fail(field + ": a bool holds " + std::to_string(uint8_t(v.bytes[0])) + ", not 0 or 1");
    return v;
  }
  v.element_type = read_type(in, field + " (array element type)");
  if (v.element_type == GgufType::Array) in.fail(field + ": an array of arrays (not supported)");
  v.count = in.count(field + " (array length)", min_value_bytes(v.element_type));
  if (v.element_type == GgufType::String) {
    v.strings.reserve(v.count);
    for (uint64_t i = 0; i < v.count; ++i) v.strings.push_back(in.string(field, UINT64_MAX, i));
    return v;
  }
  v.bytes = in.take(v.count * min_value_bytes(v.element_type), field);
  if (v.element_type == GgufType::Bool)
    for (uint64_t i = 0; i < v.count; ++i)
      if (uint8_t(v.bytes[i]) > 1)
        in.fail(field + "[" + std::to_string(i) + "]: a bool holds " + std::to_string(uint8_t(v.bytes[i])) +
                ", not 0 or 1");
  return v;
}

// Element i of a numeric array or a scalar, as int64 (integers) or double.
int64_t integer_at(const GgufValue& v, GgufType t, uint64_t i) {
  const std::byte* p = v.bytes.data() + i * min_value_bytes(t);
  auto get = [p]<typename T>(T) {
    T x;
    std::memcpy(&x, p, sizeof x);
    return x;
  };
  switch (t) {
    case GgufType::U8:
    case GgufType::Bool:
      return get(uint8_t{});
    case GgufType::I8:
      return get(int8_t{});
    case GgufType::U16:
      return get(uint16_t{});
    case GgufType::I16:
      return get(int16_t{});
    case GgufType::U32:
      return get(uint32_t{});
    case GgufType::I32:
      return get(int32_t{});
    case GgufType::U64: {
      const uint64_t u = get(uint64_t{});
      return u > uint64_t(INT64_MAX) ? -1 : int64_t(u);  // callers refuse negatives
    }
    case GgufType::I64:
      return get(int64_t{});
    default:
      return 0;
  }
}

bool is_integer(GgufType t) {
  return t == GgufType::U8 || t == GgufType::I8 || t == GgufType::U16 || t == GgufType::I16 ||
         t == GgufType::U32 || t == GgufType::I32 || t == GgufType::U64 || t == GgufType::I64;
}

std::string dims_text(const std::vector<uint64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

}  // namespace

const char* to_string(GgufType t) {
  static constexpr const char* kNames[] = {"uint8",  "int8",    "uint16", "int16",  "uint32",
                                           "int32",  "float32", "bool",   "string", "array",
                                           "uint64", "int64",   "float64"};
  return valid_type(uint32_t(t)) ? kNames[uint32_t(t)] : "?";
}

const GgmlType* find_ggml_type(uint32_t id) {
  for (const GgmlType& t : kGgmlTypes)
    if (t.id == id) return &t;
  return nullptr;
}

std::string supported_ggml_types() {
  std::string s;
  for (const GgmlType& t : kGgmlTypes)
    if (t.dtype) s += (s.empty() ? "" : ", ") + std::string(t.name);
  return s;
}

GgufContents parse_gguf(std::span<const std::byte> file, const std::string& file_name) {
  Cursor in(file, file_name);
  GgufContents c;
  const auto magic = in.take(4, "magic");
  if (std::memcmp(magic.data(), "GGUF", 4) != 0) {
    std::string shown;
    for (std::byte b : magic) {
      const auto ch = std::to_integer<unsigned char>(b);
      shown += ch >= 0x20 && ch < 0x7f ? char(ch) : '?';
    }
    in.fail("not a GGUF file (magic \"" + shown + "\" at offset 0, expected \"GGUF\")");
  }
  c.version = in.read<uint32_t>("version");
  if (c.version != 2 && c.version != 3)
    in.fail("GGUF version " + std::to_string(c.version) + " (" + hex(c.version) +
            ") is not supported: wgfuse reads versions 2 and 3" +
            (c.version == 1 ? " (convert the file with a current llama.cpp)" : "") +
            (c.version > 0xFFFF ? " (a big-endian file?)" : ""));
  // A tensor info takes at least a name (8 + 1), n_dims, one dim, the type and the offset.
  const uint64_t tensor_count = in.read<uint64_t>("tensor_count");
  const uint64_t kv_count = in.count("metadata_kv_count", 8 + 1 + 4 + 1);
  if (tensor_count > in.left() / (8 + 1 + 4 + 8 + 4 + 8))
    in.fail("tensor_count is " + std::to_string(tensor_count) + ", but the " + std::to_string(in.left()) +
            " bytes left hold at most " + std::to_string(in.left() / 33) + " tensor infos");

  std::unordered_set<std::string_view> keys;
  c.metadata.reserve(kv_count);
  for (uint64_t i = 0; i < kv_count; ++i) {
    const std::string at = "metadata[" + std::to_string(i) + "]";
    const std::string_view key = in.string(at + " key", kMaxKey);
    if (key.empty()) in.fail(at + ": an empty key");
    const std::string field = "metadata \"" + std::string(key) + "\"";
    if (!keys.insert(key).second) in.fail(field + " appears twice");
    const GgufType type = read_type(in, field + " value type");
    c.metadata.emplace_back(std::string(key), read_value(in, type, field));
  }
  for (const auto& [key, v] : c.metadata) {
    if (key != "general.alignment") continue;
    if (v.type != GgufType::U32)
      in.fail("metadata \"general.alignment\" is a " + std::string(to_string(v.type)) + ", expected uint32");
    std::memcpy(&c.alignment, v.bytes.data(), 4);
    if (!std::has_single_bit(c.alignment))
      in.fail("metadata \"general.alignment\" is " + std::to_string(c.alignment) +
              ", expected a power of two (32 by default)");
  }

  std::unordered_set<std::string_view> names;
  std::vector<uint64_t> sizes;  // bytes of each tensor, placed once the data start is known
  c.tensors.reserve(tensor_count);
  for (uint64_t i = 0; i < tensor_count; ++i) {
    const std::string at = "tensor_info[" + std::to_string(i) + "]";
    const std::string_view name = in.string(at + " name", kMaxTensorName);
    if (name.empty()) in.fail(at + ": an empty tensor name");
    const std::string field = "tensor \"" + std::string(name) + "\"";
    if (!names.insert(name).second) in.fail(field + " appears twice");
    GgufTensor t;
    t.name = std::string(name);
    const auto n_dims = in.read<uint32_t>(field + " n_dims");
    if (n_dims < 1 || n_dims > kMaxDims)
      in.fail(field + ": n_dims is " + std::to_string(n_dims) + ", expected 1 to " +
              std::to_string(kMaxDims));
    std::vector<uint64_t> dims(n_dims);
    uint64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      dims[d] = in.read<uint64_t>(field + " dims[" + std::to_string(d) + "]");
      if (dims[d] == 0 || dims[d] > uint64_t(INT64_MAX) ||
          __builtin_mul_overflow(elements, dims[d], &elements) || elements > uint64_t(INT64_MAX))
        in.fail(field + ": dims " + dims_text(dims) + " (each at least 1, their product below 2^63)");
    }
    const auto type_id = in.read<uint32_t>(field + " type");
    t.type = find_ggml_type(type_id);
    if (!t.type) in.fail(field + ": ggml type " + std::to_string(type_id) + " is not a type ggml defines");
    if (dims[0] % t.type->block_elements != 0)
      in.fail(field + ": its rows of " + std::to_string(dims[0]) + " elements are not whole " + t.type->name +
              " blocks of " + std::to_string(t.type->block_elements));
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(elements / t.type->block_elements, uint64_t(t.type->block_bytes), &bytes))
      in.fail(field + ": dims " + dims_text(dims) + " of " + t.type->name + " overflow 64 bits in bytes");
    t.offset = in.read<uint64_t>(field + " offset");
    if (t.offset % c.alignment != 0)
      in.fail(field + ": offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
              std::to_string(c.alignment));
    t.shape.assign(dims.rbegin(), dims.rend());
    sizes.push_back(bytes);
    c.tensors.push_back(std::move(t));
  }

  c.data_offset = in.pos() + (c.alignment - in.pos() % c.alignment) % c.alignment;
  if (c.data_offset > file.size() && !c.tensors.empty())
    in.fail("the tensor data would start at offset " + std::to_string(c.data_offset) +
            ", past the end of the " + std::to_string(file.size()) + "-byte file");
  const uint64_t data_size = c.data_offset <= file.size() ? file.size() - c.data_offset : 0;
  std::vector<const GgufTensor*> by_offset;
  for (size_t i = 0; i < c.tensors.size(); ++i) {
    GgufTensor& t = c.tensors[i];
    const uint64_t bytes = sizes[i];
    if (t.offset > data_size || bytes > data_size - t.offset)
      in.fail("tensor \"" + t.name + "\": " + std::to_string(bytes) + " bytes at data offset " +
              std::to_string(t.offset) + " end past the data section's " + std::to_string(data_size) +
              " bytes (file of " + std::to_string(file.size()) + " bytes, data from offset " +
              std::to_string(c.data_offset) + ")");
    t.bytes = file.subspan(c.data_offset + t.offset, bytes);
    by_offset.push_back(&t);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const GgufTensor* a, const GgufTensor* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const GgufTensor &a = *by_offset[i - 1], &b = *by_offset[i];
    if (b.offset < a.offset + a.bytes.size())
      in.fail("tensor \"" + b.name + "\" (data offset " + std::to_string(b.offset) + ") overlaps tensor \"" +
              a.name + "\" (data offsets " + std::to_string(a.offset) + " to " +
              std::to_string(a.offset + a.bytes.size()) + ")");
  }
  return c;
}

GgufFile::GgufFile(const std::string& path) : map_(path), c_(parse_gguf(map_.bytes(), path)) {}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
  for (const GgufTensor& t : c_.tensors)
    if (t.name == name) return &t;
  return nullptr;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  for (const auto& [k, v] : c_.metadata)
    if (k == key) return &v;
  return nullptr;
}

void GgufFile::wrong_type(std::string_view key, const GgufValue& v, const char* wanted) const {
  std::string is = to_string(v.type);
  if (v.type == GgufType::Array) is = std::string("array of ") + to_string(v.element_type);
  throw Error(path() + ": metadata \"" + std::string(key) + "\" is a " + is + ", expected " + wanted);
}

std::optional<uint64_t> GgufFile::uint(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (!is_integer(v->type)) wrong_type(key, *v, "an integer");
  const int64_t x = integer_at(*v, v->type, 0);
  if (x < 0)
    throw Error(path() + ": metadata \"" + std::string(key) + "\" is " + std::to_string(x) +
                ", expected a non-negative integer below 2^63");
  return uint64_t(x);
}

std::optional<double> GgufFile::number(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type == GgufType::F32) {
    float f;
    std::memcpy(&f, v->bytes.data(), 4);
    return f;
  }
  if (v->type == GgufType::F64) {
    double d;
    std::memcpy(&d, v->bytes.data(), 8);
    return d;
  }
  if (!is_integer(v->type)) wrong_type(key, *v, "a number");
  return double(integer_at(*v, v->type, 0));
}

std::optional<bool> GgufFile::boolean(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufType::Bool) wrong_type(key, *v, "a bool");
  return v->bytes[0] != std::byte{0};
}

std::optional<std::string_view> GgufFile::string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufType::String) wrong_type(key, *v, "a string");
  return std::string_view(reinterpret_cast<const char*>(v->bytes.data()), v->bytes.size());
}

std::optional<std::span<const std::string_view>> GgufFile::strings(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufType::Array || v->element_type != GgufType::String)
    wrong_type(key, *v, "an array of strings");
  return std::span<const std::string_view>(v->strings);
}

std::optional<std::vector<int64_t>> GgufFile::integers(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufType::Array || !is_integer(v->element_type)) wrong_type(key, *v, "an array of integers");
  std::vector<int64_t> out(v->count);
  for (uint64_t i = 0; i < v->count; ++i) out[i] = integer_at(*v, v->element_type, i);
  return out;
}

TensorRef GgufFile::tensor_ref(const GgufTensor& t, std::string name) const {
  if (!t.type->dtype)
    throw Error(path() + ": tensor \"" + t.name + "\" has type " + t.type->name +
                ", which wgfuse does not decode (it loads " + supported_ggml_types() +
                "): requantize the model to one of those with llama.cpp's llama-quantize");
  return {std::move(name), *t.type->dtype, t.shape, t.bytes};
}

std::string GgufFile::type_summary() const {
  std::map<std::string, size_t> count;
  for (const GgufTensor& t : c_.tensors) ++count[t.type->name];
  std::vector<std::pair<std::string, size_t>> sorted(count.begin(), count.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string s;
  for (const auto& [name, n] : sorted) s += (s.empty() ? "" : ", ") + name + " x " + std::to_string(n);
  return s;
}

bool is_gguf_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

}  // namespace wgfuse::llm
