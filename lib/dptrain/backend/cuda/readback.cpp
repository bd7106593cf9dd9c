#include "dptrain/backend/cuda/readback.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iostream>

#include "dptrain/backend/cuda/check_cuda.hpp"
#include "dptrain/core/error.hpp"

namespace dptrain::cuda {
namespace {
constexpr std::size_t kNotStaged = SIZE_MAX;  // a tensor read at once, not through the slot

class PendingCopy final : public PendingRead {
 public:
  PendingCopy(Readbacks::Slot& slot, std::vector<Tensor> host, std::vector<std::size_t> offsets)
      : slot_(&slot), host_(std::move(host)), offsets_(std::move(offsets)) {}
  PendingCopy(const PendingCopy&) = delete;
  PendingCopy& operator=(const PendingCopy&) = delete;
  // Never waited for (a step that threw, say): the slot is free only once its copies are over.
  ~PendingCopy() override {
    if (!slot_) return;
    try {
      slot_->copied.synchronize();
      slot_->in_use = false;
    } catch (const std::exception& e) {
      // A failed device: the slot stays taken, so nothing ever copies into it again.
      std::cerr << "dptrain: warning: a read-back was not completed: " << e.what() << "\n";
    }
  }

  std::vector<Tensor> wait() override {
    DPTRAIN_CHECK(slot_ != nullptr, "PendingRead::wait() twice");
    slot_->copied.synchronize();
    const auto* staging = static_cast<const std::byte*>(slot_->buffer->data());
    for (std::size_t i = 0; i < host_.size(); ++i) {
      if (offsets_[i] != kNotStaged && host_[i].bytes())
        std::memcpy(host_[i].raw(), staging + offsets_[i], host_[i].bytes());
    }
    slot_->in_use = false;
    slot_ = nullptr;
    return std::move(host_);
  }

 private:
  Readbacks::Slot* slot_;
  std::vector<Tensor> host_;
  std::vector<std::size_t> offsets_;
};

bool staged(const Tensor& t) { return t.dtype() == DType::f32 && t.layout() == Layout::plain; }
}  // namespace

Readbacks::Slot& Readbacks::free_slot(std::size_t bytes) {
  auto found = std::find_if(slots_.begin(), slots_.end(), [](const auto& s) { return !s->in_use; });
  if (found == slots_.end()) {
    slots_.push_back(std::make_unique<Slot>());
    found = std::prev(slots_.end());
  }
  Slot& slot = **found;
  if (!slot.buffer || slot.buffer->bytes() < bytes)
    slot.buffer = std::make_unique<PinnedBuffer>(std::max<std::size_t>(bytes, 256));
  return slot;
}

std::unique_ptr<PendingRead> Readbacks::start(std::span<const Tensor* const> tensors,
                                              const std::function<Tensor(const Tensor&)>& to_host) {
  std::size_t bytes = 0;
  for (const Tensor* t : tensors) {
    if (staged(*t)) bytes += t->bytes();
  }
  Slot& slot = free_slot(bytes);
  // Taken before anything is queued into it: a copy that fails half-way leaves it taken for good.
  slot.in_use = true;
  auto* staging = static_cast<std::byte*>(slot.buffer->data());
  std::vector<Tensor> host;
  std::vector<std::size_t> offsets;
  std::size_t offset = 0;
  try {
    for (const Tensor* t : tensors) {
      if (!staged(*t)) {
        host.push_back(to_host(*t));
        offsets.push_back(kNotStaged);
        continue;
      }
      if (t->bytes()) {
        DPTRAIN_CUDA_CHECK(
            cudaMemcpyAsync(staging + offset, t->raw(), t->bytes(), cudaMemcpyDeviceToHost, ctx_->stream()));
      }
      host.push_back(Tensor::empty(t->shape(), t->dtype()));
      offsets.push_back(offset);
      offset += t->bytes();
    }
    slot.copied.record(ctx_->stream());
  } catch (...) {
    // A failed read (to_host out of memory, say) frees its slot once the copies it queued are over; on a
    // device that fails even that, the slot stays taken and is never copied into again.
    if (cudaEventRecord(slot.copied.get(), ctx_->stream()) == cudaSuccess &&
        cudaEventSynchronize(slot.copied.get()) == cudaSuccess)
      slot.in_use = false;
    throw;
  }
  return std::make_unique<PendingCopy>(slot, std::move(host), std::move(offsets));
}

}  // namespace dptrain::cuda
