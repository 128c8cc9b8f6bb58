// WeightArena: many tensors (a model's weights) placed in a few large storage buffers, each
// tensor a view {buffer, offset, bytes, shape, format} that binds as one binding range.
//
// Two phases: add() every tensor (placement is planned, nothing is allocated), then allocate();
// then upload, through a fill callback that writes each range of whole rows, in the stored layout,
// straight into mapped staging memory (gpu::Staging): from a memory-mapped file that is the one
// host copy, or the format's packer (gpu/weight_format.h) converts into it, so a multi-GB model is
// never copied whole into host memory. Several threads fill at once. A tensor is rows of `cols`
// elements in its WeightFormat (rows of whole blocks). Placement: each tensor starts at a multiple
// of max(16, minStorageBufferOffsetAlignment) and its binding is padded to a multiple of 16 bytes
// (zeros), so a kernel may read it as array<vec4<u32>>; a new buffer starts when a tensor would
// pass the per-buffer cap, min(maxBufferSize, maxStorageBufferBindingSize), so every tensor stays
// bindable as one range.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/buffer.h"
#include "gpu/weight_format.h"

namespace wgfuse::gpu {

class Context;

struct TensorView {
  std::string name;
  Buffer buffer;
  uint64_t offset = 0;        // in bytes, a multiple of the arena's alignment
  uint64_t bytes = 0;         // the tensor's own bytes
  uint64_t padded_bytes = 0;  // bytes rounded up to 16: the binding's size
  uint64_t rows = 0, cols = 0;
  uint64_t row_bytes = 0;  // stored_row_bytes(format, cols)
  WeightFormat format = WeightFormat::F32;

  BufferBinding binding() const { return {buffer, offset, padded_bytes}; }
  operator BufferBinding() const { return binding(); }  // NOLINT: a view binds as its range
};

struct ArenaOptions {
  std::string label = "weights";
  // Cap on each buffer's size; 0: min(maxBufferSize, maxStorageBufferBindingSize). A smaller
  // cap (tests) forces tensors into more buffers.
  uint64_t max_buffer_bytes = 0;
};

// How WeightArena::upload moves the bytes.
struct UploadOptions {
  uint64_t chunk_bytes = 16ull << 20;  // each staging slot (raised to one row of any tensor)
  uint32_t slots = 4;                  // staging slots: host memory is slots x chunk_bytes
  unsigned threads = 0;                // filling each chunk; 0: the hardware's threads
};

class WeightArena {
 public:
  using TensorId = uint32_t;
  // Writes rows [first, first + count) of tensor `id` as stored (count * row_bytes bytes) into
  // `out`. Called from several threads at once, for disjoint row ranges: it must be thread-safe.
  using Fill = std::function<void(TensorId id, uint64_t first, uint64_t count, std::span<std::byte> out)>;
  using UploadProgress = std::function<void(uint64_t done_bytes, uint64_t total_bytes)>;

  explicit WeightArena(Context& ctx, ArenaOptions options = {});

  // Plans the placement of a tensor of `rows` rows of `cols` elements stored as `format`. Throws
  // Error on a duplicate name, an empty tensor, or one larger than the per-buffer cap (naming the
  // cap's limit).
  TensorId add(std::string name, uint64_t rows, uint64_t cols, WeightFormat format);
  // Creates the buffers (Storage | CopyDst | CopySrc) and the views.
  void allocate();

  // Every tensor through `fill`, in placement order, in chunks of whole rows: the chunk's rows
  // (and the zero padding between them) are filled into a staging slot by the threads, then
  // copied into the buffer by the GPU while the next chunk fills; returns once the GPU is done.
  // `progress` (optional) after each chunk; the bytes counted are the padded ones.
  void upload(const Fill& fill, const UploadProgress& progress = {}, const UploadOptions& options = {});

  const TensorView& view(TensorId id) const;
  const TensorView& view(std::string_view name) const;  // throws Error naming the tensor
  TensorId id(std::string_view name) const;
  size_t tensors() const { return views_.size(); }
  size_t buffers() const { return buffer_sizes_.size(); }  // planned (allocate() creates them)
  const Buffer& buffer(size_t i) const { return buffers_.at(i); }
  uint64_t max_buffer_bytes() const { return cap_; }
  uint64_t alignment() const { return align_; }
  uint64_t total_bytes() const;  // the buffers' sizes together
  bool allocated() const { return allocated_; }

 private:
  Context* ctx_;
  ArenaOptions opts_;
  uint64_t cap_ = 0, align_ = 16;
  std::vector<TensorView> views_;
  std::vector<uint32_t> buffer_of_;     // per tensor, its buffer's index
  std::vector<uint64_t> buffer_sizes_;  // planned
  std::vector<Buffer> buffers_;
  std::map<std::string, TensorId, std::less<>> by_name_;
  bool allocated_ = false;
  void require_allocated(const char* what) const;
};

}  // namespace wgfuse::gpu
