#include "llm/weight_loader.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "gpu/ggml_blocks.h"
#include "util/error.h"

namespace wgfuse::llm {
namespace {

// The smallest magnitude that rounds to infinity when stored in `f` (ties to even at the
// halfway point above the largest finite value); infinity where every float fits.
float overflow_limit(gpu::WeightFormat f) {
  if (f == gpu::WeightFormat::F16) return 65520.0f;
  if (f == gpu::WeightFormat::BF16) return std::bit_cast<float>(0x7f7f8000u);
  return std::numeric_limits<float>::infinity();
}

struct Counted {
  uint64_t non_finite = 0, overflow = 0;
};

// The non-finite values among `n` elements of an unquantized checkpoint type t, and the finite
// ones of at least `limit` in magnitude.
void count_values(DType t, const std::byte* p, uint64_t n, float limit, Counted& c) {
  for (uint64_t i = 0; i < n; ++i) {
    uint32_t bits;  // as f32
    if (t == DType::F32) {
      std::memcpy(&bits, p + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      if (t == DType::F16) {
        c.non_finite += (h & 0x7c00u) == 0x7c00u;  // f16 holds every f16: no overflow
        continue;
      }
      bits = uint32_t(h) << 16;
    }
    const uint32_t abs = bits & 0x7fffffffu;
    if (abs >= 0x7f800000u)
      ++c.non_finite;
    else if (std::bit_cast<float>(abs) >= limit)
      ++c.overflow;
  }
}

// The same for one row of `cols` elements of any type. A quantized block's values are finite
// when its f16 scales are (its quants are small integers): the row is dequantized only when the
// storage has a limit.
void count_row(DType t, std::span<const std::byte> row, uint64_t cols, float limit, Counted& c) {
  if (!gpu::is_quantized(t)) return count_values(t, row.data(), cols, limit, c);
  if (std::isfinite(limit)) {
    for (double v : gpu::dequantize_row(t, row, cols)) {
      if (!std::isfinite(v))
        ++c.non_finite;
      else if (std::abs(float(v)) >= limit)
        ++c.overflow;
    }
    return;
  }
  const gpu::DTypeInfo& i = gpu::info(t);
  for (uint64_t k = 0; k < cols / i.block_elements; ++k) {
    const gpu::QuantBlock b = gpu::decode_block(t, row.data() + k * i.block_bytes);
    if ((b.d & 0x7c00u) == 0x7c00u || (b.m & 0x7c00u) == 0x7c00u) c.non_finite += i.block_elements;
  }
}

// --dtype auto's storage of one tensor type.
gpu::WeightFormat own_format(DType t) {
  if (t == DType::BF16) return gpu::WeightFormat::BF16;
  if (t == DType::F32 || t == DType::F16) return gpu::WeightFormat::F16;
  for (gpu::WeightFormat f : gpu::kWeightFormats)
    if (gpu::info(f).encoding == t) return f;
  throw Error(std::string("no weight format stores ") + gpu::to_string(t));
}

}  // namespace

gpu::WeightFormat storage_format(std::optional<gpu::WeightFormat> asked, DType checkpoint) {
  return asked ? *asked : own_format(checkpoint);
}

gpu::WeightFormat storage_format(std::optional<gpu::WeightFormat> asked, std::span<const DType> sources) {
  if (asked) return *asked;
  if (sources.empty()) throw Error("storage_format: a matrix without sources");
  const gpu::WeightFormat first = own_format(sources[0]);
  bool same = true, d_times_int = true;
  for (DType t : sources) {
    same = same && own_format(t) == first;
    d_times_int = d_times_int && (t == DType::Q4_0 || t == DType::Q5_0 || t == DType::Q8_0);
  }
  return same ? first : d_times_int ? gpu::WeightFormat::Q8_0 : gpu::WeightFormat::F32;
}

WeightLoader::WeightLoader(gpu::Context& ctx, std::optional<gpu::WeightFormat> asked,
                           gpu::ArenaOptions options)
    : asked_(asked), arena_(ctx, std::move(options)) {}

WeightLoader::TensorId WeightLoader::matrix(std::string name, std::vector<const TensorRef*> sources,
                                            uint32_t rows, uint32_t cols, RowSource source) {
  if (sources.empty()) throw Error("weight '" + name + "': no source tensor");
  std::vector<DType> types;
  for (const TensorRef* t : sources) {
    if (t->shape.size() != 2 || t->shape[1] != cols)
      throw Error("weight '" + name + "': source tensor '" + t->name + "' is not a matrix of " +
                  std::to_string(cols) + " columns");
    types.push_back(t->dtype);
  }
  if (!source && sources[0]->shape[0] != rows)
    throw Error("weight '" + name + "': source tensor '" + sources[0]->name + "' has " +
                std::to_string(sources[0]->shape[0]) + " rows, the matrix " + std::to_string(rows));
  const gpu::WeightFormat format = storage_format(asked_, types);
  const TensorId id = arena_.add(std::move(name), rows, cols, format);
  // A matrix of several sources is only as direct as its least direct source.
  Path path = source ? Path::Rows : Path::Direct;
  for (DType d : types) {
    if (!gpu::stored_as_is(format, d, gpu::info(format).block_elements))
      path = Path::Convert;
    else if (path == Path::Direct && !gpu::stored_as_is(format, d, cols))
      path = Path::Rows;
  }
  const uint64_t bytes = arena_.view(id).bytes;
  (path == Path::Direct ? paths_.direct : path == Path::Rows ? paths_.rows : paths_.convert) += bytes;
  const size_t n = sources.size();
  entries_.push_back({std::move(sources), std::move(source), path, {}, sources_});
  sources_ += n;
  return id;
}

std::vector<DecoderStats::FormatUse> WeightLoader::formats() const {
  std::vector<DecoderStats::FormatUse> out;
  for (TensorId id = 0; id < entries_.size(); ++id) {
    if (entries_[id].sources.empty()) continue;  // a vector
    const gpu::TensorView& v = arena_.view(id);
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& u) { return u.format == v.format; });
    if (it == out.end()) it = out.insert(out.end(), DecoderStats::FormatUse{v.format});
    ++it->matrices;
    it->bytes += v.bytes;
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
  return out;
}

WeightLoader::TensorId WeightLoader::vector(std::string name, std::vector<float> values) {
  const TensorId id = arena_.add(std::move(name), 1, values.size(), gpu::WeightFormat::F32);
  values.resize(arena_.view(id).row_bytes / 4, 0.0f);
  entries_.push_back({{}, {}, Path::Direct, std::move(values)});
  return id;
}

void WeightLoader::fill(TensorId id, uint64_t first, uint64_t count, std::span<std::byte> out) const {
  const Entry& e = entries_[id];
  const gpu::TensorView& v = arena_.view(id);
  if (e.sources.empty()) {
    std::memcpy(out.data(), e.values.data(), out.size());  // a vector: one row
    return;
  }
  const float limit = overflow_limit(v.format);
  std::vector<Counted> counted(e.sources.size());
  auto add_counts = [&] {
    for (size_t i = 0; i < counted.size(); ++i) {
      if (counted[i].non_finite) counts_[e.first_count + i].non_finite += counted[i].non_finite;
      if (counted[i].overflow) counts_[e.first_count + i].overflow += counted[i].overflow;
    }
  };
  if (e.path == Path::Direct) {
    const std::byte* src = e.sources[0]->bytes.data() + first * v.row_bytes;
    std::memcpy(out.data(), src, out.size());
    count_values(e.sources[0]->dtype, src, out.size() / dtype_bytes(e.sources[0]->dtype), limit, counted[0]);
    return add_counts();
  }
  for (uint64_t r = 0; r < count; ++r) {
    const auto [which, row] =
        e.source ? e.source(uint32_t(first + r)) : std::pair<uint32_t, uint32_t>{0, uint32_t(first + r)};
    const TensorRef& t = *e.sources.at(which);
    if (row >= t.shape[0])
      throw Error("weight '" + v.name + "': packed row " + std::to_string(first + r) + " reads row " +
                  std::to_string(row) + " of '" + t.name + "', which has " + std::to_string(t.shape[0]));
    const uint64_t sb = t.row_bytes();
    const auto src = t.bytes.subspan(row * sb, sb);
    gpu::pack_row(v.format, t.dtype, src, v.cols, out.subspan(r * v.row_bytes, v.row_bytes));
    count_row(t.dtype, src, v.cols, limit, counted[which]);
  }
  add_counts();
}

void WeightLoader::load(const std::function<void(uint64_t, uint64_t)>& progress,
                        const gpu::UploadOptions& options) {
  for (TensorId id = 0; id < entries_.size(); ++id)
    for (float x : entries_[id].values)
      if (!std::isfinite(x))
        throw Error("the checkpoint holds NaN or infinite weights in the vector '" + arena_.view(id).name +
                    "': the model would compute NaN logits; the files are damaged");
  counts_ = std::make_unique<ValueCounts[]>(sources_);
  arena_.allocate();
  arena_.upload([this](TensorId id, uint64_t first, uint64_t count,
                       std::span<std::byte> out) { fill(id, first, count, out); },
                progress, options);
  // Each source tensor once (a tied LM head is the embedding's entry), in load order.
  std::string non_finite, overflow;
  size_t named = 0;
  gpu::WeightFormat overflowed = gpu::WeightFormat::F16;  // the format of the first overflow
  for (TensorId id = 0; id < entries_.size(); ++id) {
    const Entry& e = entries_[id];
    for (size_t i = 0; i < e.sources.size(); ++i) {
      const ValueCounts& c = counts_[e.first_count + i];
      auto name = [&](uint64_t n) {
        return "\"" + e.sources[i]->name + "\" (" + std::to_string(n) + " values)";
      };
      if (c.non_finite && named++ < 8) non_finite += (non_finite.empty() ? "" : ", ") + name(c.non_finite);
      if (c.overflow && overflow.empty()) overflowed = arena_.view(id).format;
      if (c.overflow && named++ < 8) overflow += (overflow.empty() ? "" : ", ") + name(c.overflow);
    }
  }
  if (!non_finite.empty())
    throw Error("the checkpoint holds NaN or infinite weights in " + non_finite +
                (named > 8 ? " and more" : "") +
                ": the model would compute NaN logits; the files are damaged");
  if (!overflow.empty())
    throw Error("weights above " +
                std::string(overflowed == gpu::WeightFormat::F16 ? "65504" : "the format's range") +
                " would become infinite stored as " + gpu::to_string(overflowed) + " in " + overflow +
                (named > 8 ? " and more" : "") + ": use --dtype f32" +
                (overflowed == gpu::WeightFormat::F16 ? " or --dtype bf16" : ""));
}

}  // namespace wgfuse::llm
