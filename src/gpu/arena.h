// WeightArena: many tensors (a model's weights) placed in a few large storage buffers, each
// tensor a view {buffer, offset, bytes, shape, format} that binds as one binding range.
//
// Two phases: add() every tensor (placement is planned, nothing is allocated), then allocate();
// then upload, through a fill callback that gives each chunk of whole rows either as bytes that
// already lie in host memory in the stored layout (a memory-mapped file: written from there, no
// copy) or converted into a staging chunk (gpu/weight_format.h's packer), so a multi-GB model is
// never copied whole into host memory. A tensor is rows of `cols` elements in its WeightFormat
// (rows of whole blocks). Placement: each tensor starts at a multiple of max(16,
// minStorageBufferOffsetAlignment) and its binding is padded to a multiple of 16 bytes (zeros),
// so a kernel may read it as array<vec4<u32>>; a new buffer starts when a tensor would pass the
// per-buffer cap, min(maxBufferSize, maxStorageBufferBindingSize), so every tensor stays bindable
// as one range.
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

class WeightArena {
 public:
  using TensorId = uint32_t;
  // Rows [first, first + count) of tensor `id` as stored (count * row_bytes bytes): written into
  // `staging` (of that size) and returned, or returned from host memory that stays valid until
  // upload() returns (a mapped file's bytes: queued from there without a copy).
  using Fill = std::function<std::span<const std::byte>(TensorId id, uint64_t first, uint64_t count,
                                                        std::span<std::byte> staging)>;
  using UploadProgress = std::function<void(uint64_t done_bytes, uint64_t total_bytes)>;
  static constexpr uint64_t kDefaultChunkBytes = 32ull << 20;

  explicit WeightArena(Context& ctx, ArenaOptions options = {});

  // Plans the placement of a tensor of `rows` rows of `cols` elements stored as `format`. Throws
  // Error on a duplicate name, an empty tensor, or one larger than the per-buffer cap (naming the
  // cap's limit).
  TensorId add(std::string name, uint64_t rows, uint64_t cols, WeightFormat format);
  // Creates the buffers (Storage | CopyDst | CopySrc) and the views.
  void allocate();

  // Every tensor through `fill`, in placement order, in chunks of whole rows of at most
  // `chunk_bytes` (at least one row) per queue write, with one host staging vector of that size;
  // waits for the GPU after every kDrainBytes queued, so Dawn's copies of queued writes stay
  // bounded. `progress` (optional) after each write; the bytes counted are the padded ones.
  void upload(const Fill& fill, const UploadProgress& progress = {},
              uint64_t chunk_bytes = kDefaultChunkBytes);
  static constexpr uint64_t kDrainBytes = 256ull << 20;

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
