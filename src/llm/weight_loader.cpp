#include "llm/weight_loader.h"

#include <cstring>

#include "util/error.h"

namespace wgfuse::llm {

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
  entries_.push_back({std::move(sources), std::move(source), {}});
  return id;
}

WeightLoader::TensorId WeightLoader::vector(std::string name, std::vector<float> values) {
  const TensorId id = arena_.add(std::move(name), 1, values.size(), gpu::WeightFormat::F32);
  values.resize(arena_.view(id).row_bytes / 4, 0.0f);
  entries_.push_back({{}, {}, std::move(values)});
  return id;
}

std::span<const std::byte> WeightLoader::fill(TensorId id, uint64_t first, uint64_t count,
                                              std::span<std::byte> staging) {
  const Entry& e = entries_[id];
  if (e.sources.empty()) return std::as_bytes(std::span(e.values));
  const gpu::TensorView& v = arena_.view(id);
  const TensorRef& only = *e.sources[0];
  if (!e.source && gpu::stored_as_is(format_, gpu_dtype(only.dtype), v.cols)) {
    paths_.direct += staging.size();
    return only.bytes.subspan(first * v.row_bytes, count * v.row_bytes);
  }
  for (uint64_t r = 0; r < count; ++r) {
    const auto [which, row] =
        e.source ? e.source(uint32_t(first + r)) : std::pair<uint32_t, uint32_t>{0, uint32_t(first + r)};
    const TensorRef& t = *e.sources.at(which);
    if (row >= t.shape[0])
      throw Error("weight '" + v.name + "': packed row " + std::to_string(first + r) + " reads row " +
                  std::to_string(row) + " of '" + t.name + "', which has " + std::to_string(t.shape[0]));
    const uint64_t sb = dtype_bytes(t.dtype) * v.cols;
    const gpu::DType d = gpu_dtype(t.dtype);
    gpu::pack_row(format_, d, t.bytes.subspan(row * sb, sb), v.cols,
                  staging.subspan(r * v.row_bytes, v.row_bytes));
    const bool same_encoding = gpu::stored_as_is(format_, d, gpu::info(format_).block_elements);
    (same_encoding ? paths_.rows : paths_.convert) += v.row_bytes;
  }
  return staging;
}

void WeightLoader::load(const std::function<void(uint64_t, uint64_t)>& progress, uint64_t chunk_bytes) {
  arena_.allocate();
  arena_.upload([this](TensorId id, uint64_t first, uint64_t count,
                       std::span<std::byte> staging) { return fill(id, first, count, staging); },
                progress, chunk_bytes);
}

}  // namespace wgfuse::llm
