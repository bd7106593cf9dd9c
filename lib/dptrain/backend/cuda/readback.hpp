#pragma once
// Small device tensors read back to the host without the host waiting when they are asked for: a
// step's losses and top-k counts are copied into page-locked memory behind the step's work, and read
// during the next step, whose work the host queues meanwhile (Backend::start_to_host_together).
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "dptrain/backend/backend.hpp"
#include "dptrain/backend/cuda/context.hpp"
#include "dptrain/backend/cuda/streams.hpp"

namespace dptrain::cuda {

class Readbacks {
 public:
  explicit Readbacks(CudaContextPtr ctx) : ctx_(std::move(ctx)) {}
  Readbacks(const Readbacks&) = delete;
  Readbacks& operator=(const Readbacks&) = delete;

  // Queues a copy of each plain f32 tensor on the compute stream into a page-locked slot of its own
  // read (one slot per read in flight, so a later read never overwrites an earlier one's values);
  // any other tensor is read at once through `to_host`. The PendingRead must not outlive this object.
  std::unique_ptr<PendingRead> start(std::span<const Tensor* const> tensors,
                                     const std::function<Tensor(const Tensor&)>& to_host);
  // Slots made so far: two while reads overlap by one step (a test's view).
  std::size_t slots() const { return slots_.size(); }

  struct Slot {
    std::unique_ptr<PinnedBuffer> buffer;
    Event copied{true};  // blocking: the host sleeps through the wait instead of spinning a core
    bool in_use = false;
  };

 private:
  Slot& free_slot(std::size_t bytes);

  CudaContextPtr ctx_;
  std::vector<std::unique_ptr<Slot>> slots_;  // by pointer: a pending read keeps its slot's address
};

}  // namespace dptrain::cuda
