// BatchNormPlan's residual join where a backend has none of its own: refused, since a layer asks
// joins_residual() first and composes the join itself when it is false.
#include "dptrain/backend/backend.hpp"

namespace dptrain {
namespace {
[[noreturn]] void no_join() {
  throw Error("this batch-norm plan does not join a residual in its own passes (joins_residual() is false)");
}
}  // namespace

void BatchNormPlan::forward_training_join(const Tensor&, const Tensor&, const Tensor&, const Tensor&, Tensor&, Tensor&,
                                          Tensor&) {
  no_join();
}

void BatchNormPlan::forward_inference_join(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                           const Tensor&, Tensor&) {
  no_join();
}

void BatchNormPlan::backward_join(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                  const Tensor&, Tensor&, Tensor&, Tensor&, Tensor&) {
  no_join();
}

}  // namespace dptrain
