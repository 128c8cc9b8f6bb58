#include "gpu/staging.h"

#include <algorithm>
#include <memory>

#include "gpu/context.h"
#include "gpu/recorder.h"
#include "util/error.h"
#include "webgpu/strings.h"

namespace wgfuse::gpu {

using webgpu::api;

struct Staging::MapStatus {
  bool ok = false;
  std::string message;
};

Staging::Staging(Context& ctx, uint64_t chunk_bytes, uint32_t slots, std::string label)
    : ctx_(&ctx), chunk_((std::max<uint64_t>(chunk_bytes, 16) + 15) / 16 * 16), label_(std::move(label)) {
  if (slots == 0) throw Error("staging '" + label_ + "': 0 slots (must be at least 1)");
  for (uint32_t i = 0; i < slots; ++i)
    slots_.push_back({ctx.buffer(chunk_, BufferUsage::MapWrite | BufferUsage::CopySrc,
                                 label_ + ".staging" + std::to_string(i), /*mapped=*/true)});
}

Staging::~Staging() {
  for (Slot& s : slots_) {
    if (!s.pending) continue;
    try {
      finish_map(s);
    } catch (...) {  // a map that failed or timed out: its status is left to the callback
    }
  }
}

void Staging::finish_map(Slot& s) {
  MapStatus* st = s.pending;
  s.pending = nullptr;
  // If the wait throws, the callback may still run later: the status is left to it.
  ctx_->wait_future(WGPUFuture{s.future}, "a staging buffer of '" + label_ + "' to map");
  std::unique_ptr<MapStatus> own(st);
  if (!own->ok) throw Error("mapping staging buffer for writing failed: " + own->message);
}

std::span<std::byte> Staging::next() {
  Slot& s = slots_[current_];
  if (s.pending) finish_map(s);
  void* p = api().BufferGetMappedRange(s.buffer.raw(), 0, chunk_);
  if (!p) throw Error("staging '" + label_ + "': the mapped staging buffer gave no memory");
  handed_out_ = true;
  return {static_cast<std::byte*>(p), chunk_};
}

void Staging::send(const Buffer& dst, uint64_t offset, uint64_t bytes) {
  if (!handed_out_) throw Error("staging '" + label_ + "': send() without next()");
  if (bytes > chunk_ || bytes % 4)
    throw Error("staging '" + label_ + "': send of " + std::to_string(bytes) + " bytes from a slot of " +
                std::to_string(chunk_) + " (must fit and be a multiple of 4)");
  Slot& s = slots_[current_];
  handed_out_ = false;
  api().BufferUnmap(s.buffer.raw());
  Recorder rec(*ctx_);
  rec.copy(s.buffer, 0, dst, offset, bytes);
  rec.submit();
  auto* st = new MapStatus;
  WGPUBufferMapCallbackInfo cb{};
  cb.mode = WGPUCallbackMode_WaitAnyOnly;
  cb.callback = [](WGPUMapAsyncStatus status, WGPUStringView m, void* ud1, void*) {
    auto* r = static_cast<MapStatus*>(ud1);
    r->ok = status == WGPUMapAsyncStatus_Success;
    r->message = webgpu::str(m);
  };
  cb.userdata1 = st;
  s.future = api().BufferMapAsync(s.buffer.raw(), WGPUMapMode_Write, 0, chunk_, cb).id;
  s.pending = st;
  current_ = (current_ + 1) % slots_.size();
}

}  // namespace wgfuse::gpu
