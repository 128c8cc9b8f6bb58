// WeightLoader: a model's weights into one gpu::WeightArena, straight from the checkpoint's
// mapped files. Each tensor is declared with where its rows come from; load() places them and
// uploads them in large chunks of whole rows (gpu::WeightArena::upload: several threads fill
// mapped staging), each tensor by the cheapest path its layout allows:
//   direct   stored layout = file layout (same encoding, cols a multiple of 8, rows in file
//            order): one memcpy per range of rows from the mapping, no conversion
//   rows     same encoding, rows permuted (Q/K/V in RoPE pairs, gate/up interleaved) or padded:
//            a memcpy per row
//   convert  another encoding (f32 -> f16, bf16 -> f16, a quantized block into the GPU's planes,
//            ...): the format's packer per row
// Each matrix has its own storage format (a GGUF file mixes ggml types tensor by tensor); the
// kernels take the format from each view. Vectors (norms, biases) are f32 tensors from host
// memory.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gpu/arena.h"
#include "llm/decoder.h"
#include "llm/tensor.h"

namespace wgfuse::llm {

// The storage a tensor gets: `asked`, or with nullopt ("--dtype auto") its own type (bf16 stays
// bf16, f16 stays f16, a ggml block type stays itself; f32 becomes f16).
gpu::WeightFormat storage_format(std::optional<gpu::WeightFormat> asked, DType checkpoint);
// The storage of a matrix whose rows come from tensors of types `sources` (a fused Q/K/V or
// gate/up matrix): `asked`, or with nullopt each source's own (above) where they agree, else one
// that holds every source's values exactly: q8_0 for q4_0, q5_0 and q8_0 sources (each value d
// times a small integer), f32 for any other mix.
gpu::WeightFormat storage_format(std::optional<gpu::WeightFormat> asked, std::span<const DType> sources);

class WeightLoader {
 public:
  using TensorId = gpu::WeightArena::TensorId;
  // Packed row -> {index into the matrix's sources, row of that source}.
  using RowSource = std::function<std::pair<uint32_t, uint32_t>(uint32_t packed)>;
  enum class Path { Direct, Rows, Convert };
  struct Paths {
    uint64_t direct = 0, rows = 0, convert = 0;  // stored bytes of the matrices of each path
  };

  // `asked`: every matrix's storage (--dtype), or nullopt for each its own (storage_format).
  WeightLoader(gpu::Context& ctx, std::optional<gpu::WeightFormat> asked, gpu::ArenaOptions options = {});

  // A matrix of `rows` rows of `cols` elements, stored in storage_format(asked, its sources'
  // types): row r is row source(r) of the sources (each [rows', cols]); without a RowSource,
  // sources[0]'s rows in order.
  TensorId matrix(std::string name, std::vector<const TensorRef*> sources, uint32_t rows, uint32_t cols,
                  RowSource source = {});
  // An f32 vector (padded with zeros to 8 floats).
  TensorId vector(std::string name, std::vector<float> values);
  // Allocates the arena and uploads every tensor; `progress(done, total)` after each write.
  // Counts, per source tensor, the values that are not finite in the checkpoint and the finite
  // ones that the storage format cannot hold (above 65504 as f16); throws an Error naming the
  // tensors (and the --dtype that holds them) when there are any.
  void load(const std::function<void(uint64_t done, uint64_t total)>& progress = {},
            const gpu::UploadOptions& options = {});

  gpu::WeightArena& arena() { return arena_; }
  const gpu::TensorView& view(TensorId id) const { return arena_.view(id); }
  const Paths& paths() const { return paths_; }
  // The matrices' formats: how many matrices and stored bytes each has, most bytes first.
  std::vector<DecoderStats::FormatUse> formats() const;

 private:
  struct Entry {
    std::vector<const TensorRef*> sources;  // empty: a vector
    RowSource source;
    Path path = Path::Direct;
    std::vector<float> values;
    size_t first_count = 0;  // the counters of its sources: [first_count, + sources.size())
  };
  // Per source tensor, added to by the upload threads.
  struct ValueCounts {
    std::atomic<uint64_t> non_finite{0}, overflow{0};
  };
  // Thread-safe (WeightArena::upload calls it from several threads).
  void fill(TensorId id, uint64_t first, uint64_t count, std::span<std::byte> out) const;

  std::optional<gpu::WeightFormat> asked_;
  gpu::WeightArena arena_;
  std::vector<Entry> entries_;
  Paths paths_;
  size_t sources_ = 0;                     // source tensors of all matrices
  std::unique_ptr<ValueCounts[]> counts_;  // [sources_], from load()
};

}  // namespace wgfuse::llm
