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
  entries_.push_back({std::move(sources), std::move(source), path, {}});
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
  if (e.path == Path::Direct) {
    std::memcpy(out.data(), e.sources[0]->bytes.data() + first * v.row_bytes, out.size());
    return;
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
  }
}

void WeightLoader::load(const std::function<void(uint64_t, uint64_t)>& progress,
                        const gpu::UploadOptions& options) {
  arena_.allocate();
  arena_.upload([this](TensorId id, uint64_t first, uint64_t count,
                       std::span<std::byte> out) { fill(id, first, count, out); },
                progress, options);
}

}  // namespace wgfuse::llm
