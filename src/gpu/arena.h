// WeightArena: many tensors (a model's weights) placed in a few large storage buffers, each
// tensor a typed view {buffer, offset, bytes, shape, dtype} that binds as one binding range.
//
// Two phases: add() every tensor (placement is planned, nothing is allocated), then allocate();
// then upload, from host memory or through a fill callback that converts chunk by chunk (e.g.
// bf16 -> f16 from a memory-mapped file), so a multi-GB model is never copied whole into host
// memory. Placement: each tensor starts at a multiple of max(16, minStorageBufferOffsetAlignment)
// and its binding is padded to a multiple of 16 bytes (zeros), so a kernel may read it as
// array<vec4<u32>>; a new buffer starts when a tensor would pass the per-buffer cap,
// min(maxBufferSize, maxStorageBufferBindingSize), so every tensor stays bindable as one range.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/buffer.h"

namespace wgfuse::gpu {

class Context;

// What a tensor's elements are; a tag for the kernels and the checks, the arena moves bytes.
// F16 and BF16 are stored two per u32 (little-endian: element 0 in the low half).
enum class DType : uint8_t { F32, F16, BF16, U32, I32, U8 };
const char* to_string(DType t);
uint32_t dtype_bytes(DType t);

struct TensorView {
  std::string name;
  Buffer buffer;
  uint64_t offset = 0;        // in bytes, a multiple of the arena's alignment
  uint64_t bytes = 0;         // the tensor's own bytes
  uint64_t padded_bytes = 0;  // bytes rounded up to 16: the binding's size
  std::vector<uint64_t> shape;
  DType dtype = DType::F32;

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
  // Fills `out` with bytes [offset, offset + out.size()) of tensor `id` as they go to the GPU.
  using Fill = std::function<void(TensorId id, uint64_t offset, std::span<std::byte> out)>;
  using UploadProgress = std::function<void(uint64_t done_bytes, uint64_t total_bytes)>;
  static constexpr uint64_t kDefaultChunkBytes = 32ull << 20;

  explicit WeightArena(Context& ctx, ArenaOptions options = {});

  // Plans the placement of a tensor of `bytes` bytes. Throws Error on a duplicate name, an empty
  // tensor, or one larger than the per-buffer cap (naming the cap's limit).
  TensorId add(std::string name, uint64_t bytes, std::vector<uint64_t> shape, DType dtype);
  // Creates the buffers (Storage | CopyDst | CopySrc) and the views.
  void allocate();

  // Every tensor through `fill`, in placement order, at most `chunk_bytes` (a multiple of 16) per
  // queue write, with one host staging vector of that size; waits for the GPU after each
  // `chunk_bytes` written, so Dawn's copies of queued writes stay bounded too. `progress`
  // (optional) after each write; the bytes counted are the padded ones.
  void upload(const Fill& fill, const UploadProgress& progress = {},
              uint64_t chunk_bytes = kDefaultChunkBytes);
  // One tensor from host memory (exactly its bytes).
  void upload(TensorId id, std::span<const std::byte> bytes);

  const TensorView& view(TensorId id) const;
  const TensorView& view(std::string_view name) const;  // throws Error naming the tensor
  TensorId id(std::string_view name) const;
  size_t tensors() const { return views_.size(); }
  size_t buffers() const { return buffers_.size(); }
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
