#include "gpu/arena.h"

#include <algorithm>
#include <cstring>

#include "gpu/context.h"
#include "gpu/staging.h"
#include "util/error.h"
#include "util/worker_pool.h"

namespace wgfuse::gpu {

namespace {
uint64_t round_up(uint64_t x, uint64_t to) {
  return (x + to - 1) / to * to;
}
}  // namespace

WeightArena::WeightArena(Context& ctx, ArenaOptions options) : ctx_(&ctx), opts_(std::move(options)) {
  const auto& lim = ctx.limits();
  // The kernels index a buffer's u32 words in 32 bits: at most 2^32 words, whatever the device allows.
  const uint64_t device_cap =
      std::min({lim.max_buffer_size, lim.max_storage_buffer_binding_size, uint64_t(4) << 32});
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

namespace {

// A range of a chunk's staging: `count` rows of tensor `id` from row `first`, or (id ==
// kZeros) `count` zero bytes; `at` is its byte offset in the chunk.
struct Piece {
  static constexpr WeightArena::TensorId kZeros = ~WeightArena::TensorId(0);
  WeightArena::TensorId id;
  uint64_t first, count, at;
};

}  // namespace

void WeightArena::upload(const Fill& fill, const UploadProgress& progress, const UploadOptions& options) {
  require_allocated("upload");
  uint64_t total = 0, chunk = options.chunk_bytes;
  for (const auto& v : views_) {
    total += v.padded_bytes;
    chunk = std::max(chunk, v.row_bytes);
  }
  Staging staging(*ctx_, chunk, options.slots, opts_.label);
  chunk = staging.chunk_bytes();
  util::WorkerPool pool(options.threads);
  // Items of about this size keep the threads busy to the end of a chunk.
  const uint64_t grain = std::max<uint64_t>(chunk / (4 * pool.threads()), 1);

  uint64_t done = 0;
  uint32_t buffer = 0;
  uint64_t begin = 0, used = 0;  // the chunk being planned: buffer bytes [begin, begin + used)
  std::vector<Piece> pieces;
  auto send = [&] {
    if (pieces.empty()) return;
    const std::span<std::byte> out = staging.next();
    pool.run(pieces.size(), [&](size_t i) {
      const Piece& p = pieces[i];
      if (p.id == Piece::kZeros) {
        std::memset(out.data() + p.at, 0, p.count);
        return;
      }
      const uint64_t rb = views_[p.id].row_bytes;
      fill(p.id, p.first, p.count, out.subspan(p.at, p.count * rb));
    });
    staging.send(buffers_[buffer], begin, used);
    pieces.clear();
    if (progress) progress(done, total);
  };
  for (TensorId id = 0; id < views_.size(); ++id) {
    const TensorView& v = views_[id];
    const uint64_t rows_per_item = std::max<uint64_t>(grain / v.row_bytes, 1);
    for (uint64_t r = 0; r < v.rows;) {
      const uint64_t at = v.offset + r * v.row_bytes;
      // The gap from the chunk's end to these rows (padding, alignment) is sent as zeros when
      // the rows still fit; else the chunk goes and the next starts at the rows.
      if (!pieces.empty() && (buffer_of_[id] != buffer || at - (begin + used) + v.row_bytes > chunk - used))
        send();
      if (pieces.empty()) {
        buffer = buffer_of_[id];
        begin = at;
        used = 0;
      }
      if (at > begin + used) {
        pieces.push_back({Piece::kZeros, 0, at - begin - used, used});
        used = at - begin;
      }
      const uint64_t n = std::min(v.rows - r, (chunk - used) / v.row_bytes);
      for (uint64_t k = 0; k < n; k += rows_per_item) {
        const uint64_t m = std::min(rows_per_item, n - k);
        pieces.push_back({id, r + k, m, used + k * v.row_bytes});
      }
      used += n * v.row_bytes;
      done += n * v.row_bytes;
      r += n;
    }
    done += v.padded_bytes - v.bytes;  // the padding: zeros already (a new buffer reads as zeros)
  }
  send();
  ctx_->wait();
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
