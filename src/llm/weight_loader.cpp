#include "llm/weight_loader.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

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

// The non-finite values among `n` checkpoint elements of type t, and the finite ones of at
// least `limit` in magnitude.
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

}  // namespace

gpu::DType gpu_dtype(DType t) {
  return t == DType::F32 ? gpu::DType::F32 : t == DType::F16 ? gpu::DType::F16 : gpu::DType::BF16;
}

gpu::WeightFormat storage_format(std::optional<gpu::WeightFormat> asked, DType checkpoint) {
  if (asked) return *asked;
  return checkpoint == DType::BF16 ? gpu::WeightFormat::BF16 : gpu::WeightFormat::F16;
}

WeightLoader::WeightLoader(gpu::Context& ctx, gpu::WeightFormat format, gpu::ArenaOptions options)
    : format_(format), arena_(ctx, std::move(options)) {}

WeightLoader::TensorId WeightLoader::matrix(std::string name, std::vector<const TensorRef*> sources,
                                            uint32_t rows, uint32_t cols, RowSource source) {
  if (sources.empty()) throw Error("weight '" + name + "': no source tensor");
  for (const TensorRef* t : sources)
    if (t->shape.size() != 2 || t->shape[1] != cols)
      throw Error("weight '" + name + "': source tensor '" + t->name + "' is not a matrix of " +
                  std::to_string(cols) + " columns");
  if (!source && sources[0]->shape[0] != rows)
    throw Error("weight '" + name + "': source tensor '" + sources[0]->name + "' has " +
                std::to_string(sources[0]->shape[0]) + " rows, the matrix " + std::to_string(rows));
  const TensorId id = arena_.add(std::move(name), rows, cols, format_);
  // A matrix of several sources is only as direct as its least direct source.
  Path path = source ? Path::Rows : Path::Direct;
  for (const TensorRef* t : sources) {
    const gpu::DType d = gpu_dtype(t->dtype);
    if (!gpu::stored_as_is(format_, d, gpu::info(format_).block_elements))
      path = Path::Convert;
    else if (path == Path::Direct && !gpu::stored_as_is(format_, d, cols))
      path = Path::Rows;
  }
  const uint64_t bytes = arena_.view(id).bytes;
  (path == Path::Direct ? paths_.direct : path == Path::Rows ? paths_.rows : paths_.convert) += bytes;
  const size_t n = sources.size();
  entries_.push_back({std::move(sources), std::move(source), path, {}, sources_});
  sources_ += n;
  return id;
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
  const float limit = overflow_limit(format_);
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
    const uint64_t sb = dtype_bytes(t.dtype) * v.cols;
    gpu::pack_row(format_, gpu_dtype(t.dtype), t.bytes.subspan(row * sb, sb), v.cols,
                  out.subspan(r * v.row_bytes, v.row_bytes));
    count_values(t.dtype, t.bytes.data() + row * sb, v.cols, limit, counted[which]);
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
  for (const Entry& e : entries_)
    for (size_t i = 0; i < e.sources.size(); ++i) {
      const ValueCounts& c = counts_[e.first_count + i];
      auto name = [&](uint64_t n) {
        return "\"" + e.sources[i]->name + "\" (" + std::to_string(n) + " values)";
      };
      if (c.non_finite && named++ < 8) non_finite += (non_finite.empty() ? "" : ", ") + name(c.non_finite);
      if (c.overflow && named++ < 8) overflow += (overflow.empty() ? "" : ", ") + name(c.overflow);
    }
  if (!non_finite.empty())
    throw Error("the checkpoint holds NaN or infinite weights in " + non_finite +
                (named > 8 ? " and more" : "") +
                ": the model would compute NaN logits; the files are damaged");
  if (!overflow.empty())
    throw Error("weights above " +
                std::string(format_ == gpu::WeightFormat::F16 ? "65504" : "the format's range") +
                " would become infinite stored as " + gpu::to_string(format_) + " in " + overflow +
                (named > 8 ? " and more" : "") + ": use --dtype f32" +
                (format_ == gpu::WeightFormat::F16 ? " or --dtype bf16" : ""));
}

}  // namespace wgfuse::llm
