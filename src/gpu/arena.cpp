#include "gpu/arena.h"

#include <algorithm>
#include <cstring>

#include "gpu/context.h"
#include "util/error.h"

namespace wgfuse::gpu {

namespace {
uint64_t round_up(uint64_t x, uint64_t to) {
  return (x + to - 1) / to * to;
}
}  // namespace

WeightArena::WeightArena(Context& ctx, ArenaOptions options) : ctx_(&ctx), opts_(std::move(options)) {
  const auto& lim = ctx.limits();
  const uint64_t device_cap = std::min(lim.max_buffer_size, lim.max_storage_buffer_binding_size);
  cap_ = opts_.max_buffer_bytes ? std::min(opts_.max_buffer_bytes, device_cap) : device_cap;
  align_ = std::max<uint64_t>(16, lim.min_storage_buffer_offset_alignment);
  cap_ = cap_ / 16 * 16;  // a padded tensor must fit
}

WeightArena::TensorId WeightArena::add(std::string name, uint64_t rows, uint64_t cols, WeightFormat format) {
  if (allocated_) throw Error("arena '" + opts_.label + "': tensor '" + name + "' added after allocate()");
  if (by_name_.count(name)) throw Error("arena '" + opts_.label + "': tensor '" + name + "' added twice");
  if (rows == 0 || cols == 0)
    throw Error("arena '" + opts_.label + "': tensor '" + name + "' has no elements");
  const uint64_t row_bytes = stored_row_bytes(format, cols), bytes = rows * row_bytes;
  const uint64_t padded = round_up(bytes, 16);
  if (padded > cap_)
    throw Error("arena '" + opts_.label + "': tensor '" + name + "' of " + std::to_string(bytes) +
                " bytes exceeds the per-buffer cap of " + std::to_string(cap_) +
                " bytes (min of the device limits maxBufferSize = " +
                std::to_string(ctx_->limits().max_buffer_size) + " and maxStorageBufferBindingSize = " +
                std::to_string(ctx_->limits().max_storage_buffer_binding_size) +
                (opts_.max_buffer_bytes ? ", and the arena's max_buffer_bytes option" : "") + ")");
  uint64_t offset = buffer_sizes_.empty() ? 0 : round_up(buffer_sizes_.back(), align_);
  if (buffer_sizes_.empty() || offset + padded > cap_) {
    buffer_sizes_.push_back(0);
    offset = 0;
  }
  buffer_sizes_.back() = offset + padded;
  buffer_of_.push_back(uint32_t(buffer_sizes_.size() - 1));
  const auto id = TensorId(views_.size());
  by_name_.emplace(name, id);
  views_.push_back({.name = std::move(name),
                    .offset = offset,
                    .bytes = bytes,
                    .padded_bytes = padded,
                    .rows = rows,
                    .cols = cols,
                    .row_bytes = row_bytes,
                    .format = format});
  return id;
}

void WeightArena::allocate() {
  if (allocated_) return;
  for (size_t i = 0; i < buffer_sizes_.size(); ++i)
    buffers_.push_back(
        ctx_->buffer(buffer_sizes_[i], BufferUsage::StorageIO, opts_.label + "." + std::to_string(i)));
  for (size_t t = 0; t < views_.size(); ++t) views_[t].buffer = buffers_[buffer_of_[t]];
  allocated_ = true;
}

void WeightArena::require_allocated(const char* what) const {
  if (!allocated_) throw Error("arena '" + opts_.label + "': " + what + " before allocate()");
}

void WeightArena::upload(const Fill& fill, const UploadProgress& progress, uint64_t chunk_bytes) {
  require_allocated("upload");
  if (chunk_bytes == 0)
    throw Error("arena '" + opts_.label + "': upload chunk of 0 bytes (must be positive)");
  uint64_t total = 0, done = 0, queued = 0, staging_bytes = 0;
  for (auto& v : views_) {
    total += v.padded_bytes;
    staging_bytes = std::max(
        staging_bytes, std::min(v.bytes, std::max(chunk_bytes / v.row_bytes, uint64_t(1)) * v.row_bytes));
  }
  std::vector<std::byte> staging(staging_bytes);
  auto written = [&](uint64_t n) {
    done += n;
    queued += n;
    if (queued >= kDrainBytes || done == total) {
      ctx_->wait();  // Dawn keeps a copy of every queued write until a submit completes
      queued = 0;
    }
    if (progress) progress(done, total);
  };
  for (TensorId id = 0; id < views_.size(); ++id) {
    const TensorView& v = views_[id];
    const uint64_t per_chunk = std::max(chunk_bytes / v.row_bytes, uint64_t(1));
    for (uint64_t r = 0; r < v.rows; r += per_chunk) {
      const uint64_t n = std::min(per_chunk, v.rows - r), bytes = n * v.row_bytes;
      const std::span<const std::byte> out = fill(id, r, n, std::span(staging).first(bytes));
      if (out.size() != bytes)
        throw Error("arena '" + opts_.label + "': the fill of tensor '" + v.name + "' gave " +
                    std::to_string(out.size()) + " bytes for " + std::to_string(n) + " rows of " +
                    std::to_string(v.row_bytes));
      ctx_->write(v.buffer, v.offset + r * v.row_bytes, out);
      written(bytes);
    }
    if (v.padded_bytes > v.bytes) {  // the padding reads as zeros
      const std::vector<std::byte> zeros(v.padded_bytes - v.bytes);
      ctx_->write(v.buffer, v.offset + v.bytes, zeros);
      written(zeros.size());
    }
  }
}

const TensorView& WeightArena::view(TensorId id) const {
  if (id >= views_.size())
    throw Error("arena '" + opts_.label + "': no tensor " + std::to_string(id) + " (it has " +
                std::to_string(views_.size()) + ")");
  return views_[id];
}

WeightArena::TensorId WeightArena::id(std::string_view name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end())
    throw Error("arena '" + opts_.label + "': no tensor named '" + std::string(name) + "'");
  return it->second;
}

const TensorView& WeightArena::view(std::string_view name) const {
  return view(id(name));
}

uint64_t WeightArena::total_bytes() const {
  uint64_t t = 0;
  for (auto s : buffer_sizes_) t += s;
  return t;
}

}  // namespace wgfuse::gpu
