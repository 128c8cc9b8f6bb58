#include "llm/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "util/error.h"
#include "util/file.h"

namespace wgfuse::llm {

// Tensor bytes are little-endian and read with memcpy.
static_assert(std::endian::native == std::endian::little);

namespace {

// The reference implementation's limit; real headers are a few hundred KiB.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

std::string shape_text(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

[[noreturn]] void fail(const std::string& file, const std::string& problem) {
  throw Error(file + ": " + problem);
}
[[noreturn]] void fail_tensor(const std::string& file, const std::string& tensor,
                              const std::string& problem) {
  throw Error(file + ": tensor \"" + tensor + "\": " + problem);
}

bool parse_dtype(const std::string& s, DType& out) {
  if (s == "F32")
    out = DType::F32;
  else if (s == "F16")
    out = DType::F16;
  else if (s == "BF16")
    out = DType::BF16;
  else if (s == "I32")
    out = DType::I32;
  else
    return false;
  return true;
}

uint64_t read_u64_le(const std::byte* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | uint64_t(p[i]);
  return v;
}

// A header entry, before the ranges are checked against each other.
struct Entry {
  TensorRef ref;
  uint64_t begin, end;  // relative to the data region
};

Entry parse_entry(const std::string& file, const std::string& name, const nlohmann::json& v,
                  uint64_t data_start, uint64_t data_size) {
  if (!v.is_object()) fail_tensor(file, name, "header entry is not a JSON object");
  Entry e;
  e.ref.name = name;

  auto dtype = v.find("dtype");
  if (dtype == v.end() || !dtype->is_string()) fail_tensor(file, name, "\"dtype\" missing or not a string");
  if (!parse_dtype(dtype->get<std::string>(), e.ref.dtype))
    fail_tensor(file, name,
                "unsupported dtype \"" + dtype->get<std::string>() +
                    "\" (wgfuse reads F32, F16, BF16, and I32 for AWQ's and GPTQ's packed integers)");

  auto shape = v.find("shape");
  if (shape == v.end() || !shape->is_array()) fail_tensor(file, name, "\"shape\" missing or not an array");
  uint64_t elements = 1;
  for (const auto& d : *shape) {
    if (!d.is_number_unsigned()) fail_tensor(file, name, "\"shape\" holds " + d.dump() + ", not a size");
    e.ref.shape.push_back(d.get<uint64_t>());
    if (__builtin_mul_overflow(elements, e.ref.shape.back(), &elements))
      fail_tensor(file, name, "shape " + shape_text(e.ref.shape) + "... overflows 64 bits");
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(elements, dtype_bytes(e.ref.dtype), &bytes))
    fail_tensor(file, name, "shape " + shape_text(e.ref.shape) + " overflows 64 bits in bytes");

  auto offsets = v.find("data_offsets");
  if (offsets == v.end() || !offsets->is_array() || offsets->size() != 2 ||
      !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned())
    fail_tensor(file, name, "\"data_offsets\" missing or not two non-negative integers [begin, end]");
  e.begin = (*offsets)[0].get<uint64_t>();
  e.end = (*offsets)[1].get<uint64_t>();
  const std::string range = "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "]";
  if (e.begin > e.end || e.end > data_size)
    fail_tensor(file, name,
                range + " out of range: the data region holds " + std::to_string(data_size) + " bytes");
  if (e.end - e.begin != bytes)
    fail_tensor(file, name,
                "shape " + shape_text(e.ref.shape) + " x " + dtype_name(e.ref.dtype) + " is " +
                    std::to_string(bytes) + " bytes but " + range + " hold " +
                    std::to_string(e.end - e.begin));
  if ((data_start + e.begin) % dtype_bytes(e.ref.dtype) != 0)
    fail_tensor(file, name,
                "unaligned: its data starts at file byte " + std::to_string(data_start + e.begin) +
                    ", not a multiple of its element size " + std::to_string(dtype_bytes(e.ref.dtype)));
  return e;
}

}  // namespace

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32:
      return "F32";
    case DType::F16:
      return "F16";
    case DType::BF16:
      return "BF16";
    case DType::I32:
      return "I32";
    default:
      return gpu::to_string(t);
  }
}

std::vector<TensorRef> parse_safetensors(std::span<const std::byte> file, const std::string& file_name) {
  if (file.size() < 8)
    fail(file_name, "truncated: " + std::to_string(file.size()) +
                        " bytes, shorter than the 8-byte header length that starts a safetensors file");
  const uint64_t header_len = read_u64_le(file.data());
  if (header_len > file.size() - 8)
    fail(file_name, "header length " + std::to_string(header_len) + " runs past the end of the file (" +
                        std::to_string(file.size()) + " bytes): truncated or not a safetensors file");
  if (header_len > kMaxHeaderBytes)
    fail(file_name, "header length " + std::to_string(header_len) + " exceeds the format's limit of " +
                        std::to_string(kMaxHeaderBytes) + " bytes");
  const char* text = reinterpret_cast<const char*>(file.data() + 8);
  if (header_len == 0 || text[0] != '{')
    fail(file_name, "the header does not start with '{': not a safetensors file");

  // A repeated tensor name would let two headers describe one file; the callback sees each key
  // of the top-level object (depth 1) once.
  std::set<std::string> names;
  std::string duplicate;
  auto on_event = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::key && depth == 1 &&
        !names.insert(parsed.get<std::string>()).second)
      duplicate = parsed.get<std::string>();
    return true;
  };
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text, text + header_len, on_event);
  } catch (const nlohmann::json::exception& e) {
    fail(file_name, std::string("header is not valid JSON: ") + e.what());
  }
  if (!duplicate.empty()) fail_tensor(file_name, duplicate, "named twice in the header");
  if (!header.is_object()) fail(file_name, "header is not a JSON object");

  const uint64_t data_start = 8 + header_len;
  const uint64_t data_size = file.size() - data_start;
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") continue;
    entries.push_back(parse_entry(file_name, name, value, data_start, data_size));
  }

  // The format demands that the ranges tile the data region: sorted, no overlap, no hole, no
  // trailing bytes (a file cannot hide a second payload).
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    if (e.begin < covered)
      fail_tensor(file_name, e.ref.name,
                  "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                      "] overlap tensor \"" + entries[i - 1].ref.name + "\" (which ends at " +
                      std::to_string(covered) + ")");
    if (e.begin > covered)
      fail_tensor(file_name, e.ref.name,
                  "data_offsets start at " + std::to_string(e.begin) + ", leaving bytes [" +
                      std::to_string(covered) + ", " + std::to_string(e.begin) +
                      ") of the data region unused (the format allows no holes)");
    covered = e.end;
  }
  if (covered != data_size)
    fail(file_name, "the data region holds " + std::to_string(data_size) +
                        " bytes but the tensors cover only " + std::to_string(covered) +
                        " (trailing bytes; the format allows no holes)");

  std::vector<TensorRef> refs;
  refs.reserve(entries.size());
  for (Entry& e : entries) {
    e.ref.bytes = file.subspan(data_start + e.begin, e.end - e.begin);
    refs.push_back(std::move(e.ref));
  }
  return refs;
}

MappedFile::MappedFile(const std::string& path) : path_(path) {
  regular_file_size(path, "the file");  // before open(): a FIFO would block it
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path + ": not a regular file");
  }
  size_ = size_t(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      throw Error(path + ": cannot memory-map " + std::to_string(size_) + " bytes: " + std::strerror(err));
    }
    data_ = static_cast<const std::byte*>(p);
  }
  ::close(fd);  // the mapping keeps the file open
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

SafetensorsFile::SafetensorsFile(const std::string& path)
    : map_(path), tensors_(parse_safetensors(map_.bytes(), path)) {}

namespace {

// IEEE binary16 -> binary32, exact (every half is a float). Local because this file must
// compile on its own for the fuzzers; the GPU packing lives in src/util/half.h.
float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);  // inf, NaN (payload kept)
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);  // rebias 15 -> 127
  } else {
    // zero or subnormal: man * 2^-24, exact in float
    const float v = std::ldexp(float(man), -24);
    return sign ? -v : v;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace

void to_f32(DType dtype, std::span<const std::byte> in, std::span<float> out) {
  const size_t n = out.size();
  if (in.size() != n * dtype_bytes(dtype))
    throw Error(std::string("to_f32: ") + std::to_string(in.size()) + " bytes of " + dtype_name(dtype) +
                " for " + std::to_string(n) + " values");
  const std::byte* p = in.data();
  switch (dtype) {
    case DType::F32:
      if (n) std::memcpy(out.data(), p, n * 4);
      break;
    case DType::F16:
    case DType::BF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        if (dtype == DType::F16) {
          out[i] = half_to_float(h);
        } else {
          const uint32_t bits = uint32_t(h) << 16;  // bf16 is the top half of a float
          std::memcpy(&out[i], &bits, 4);
        }
      }
      break;
    default:  // quantized: dtype_bytes threw above
      throw Error(std::string("to_f32: ") + dtype_name(dtype) + " elements are not floats");
  }
}

std::vector<float> to_f32(const TensorRef& t) {
  std::vector<float> v(t.elements());
  if (gpu::is_quantized(t.dtype)) {
    const std::vector<double> d = tensor_values(t);  // dequantized, each exact in f32
    std::copy(d.begin(), d.end(), v.begin());
  } else {
    to_f32(t.dtype, t.bytes, v);
  }
  return v;
}

}  // namespace wgfuse::llm
