// Staging: large host-to-GPU writes through a few staging buffers (MapWrite | CopySrc) that the
// caller fills in place while they are mapped. Against Context::write (wgpuQueueWriteBuffer copies
// the bytes, on the calling thread, into a staging allocation of its own made per call): one host
// copy fewer, the fill done by as many threads as the caller likes, the staging allocated once and
// reused (a slot is mapped again once the GPU has copied out of it), and the fill of one slot
// overlapping the GPU's copies out of the others. Host memory: slots x chunk bytes.
//
//   auto out = staging.next();          // waits until the slot's previous copy is done
//   ... write up to out.size() bytes ...
//   staging.send(dst, offset, bytes);   // unmaps, copies the first `bytes` into dst, submits
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gpu/buffer.h"

namespace wgfuse::gpu {

class Context;

class Staging {
 public:
  // `chunk_bytes` (rounded up to 16) per slot, `slots` >= 1.
  Staging(Context& ctx, uint64_t chunk_bytes, uint32_t slots, std::string label);
  ~Staging();  // waits for the slots' pending maps
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;

  uint64_t chunk_bytes() const { return chunk_; }
  // The next slot's mapped memory (chunk_bytes()), once the GPU has finished copying out of it.
  std::span<std::byte> next();
  // Copies the first `bytes` (a multiple of 4) of the slot next() gave into `dst` at `offset`
  // and submits; the slot is then mapped again in the background.
  void send(const Buffer& dst, uint64_t offset, uint64_t bytes);

 private:
  struct MapStatus;
  struct Slot {
    Buffer buffer;
    MapStatus* pending = nullptr;  // a map in flight, owned here once waited for
    uint64_t future = 0;
  };
  void finish_map(Slot& s);

  Context* ctx_;
  uint64_t chunk_;
  std::string label_;
  std::vector<Slot> slots_;
  size_t current_ = 0;
  bool handed_out_ = false;  // next() gave the current slot, send() has not yet sent it
};

}  // namespace wgfuse::gpu
