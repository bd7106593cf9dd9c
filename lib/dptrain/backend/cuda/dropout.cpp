// Inverted dropout with the CPU backend's mask: the same Philox words (core/philox_block.hpp) at the
// same (seed, stream, global element index), so both backends drop the same elements. The mask is f32
// in every precision; bf16/fp16 activations are multiplied in fp32 and rounded once.
#include "dptrain/backend/cuda/kernels.hpp"
#include "dptrain/backend/cuda/plans.hpp"

namespace dptrain::cuda {
namespace {
class KernelDropout final : public DropoutPlan {
 public:
  KernelDropout(CudaContextPtr ctx, const DropoutSpec& spec) : ctx_(std::move(ctx)), spec_(spec) {
    DPTRAIN_CHECK(spec.probability >= 0.f && spec.probability < 1.f, spec.who, ": probability must be in [0, 1), not ",
                  spec.probability);
    DPTRAIN_CHECK(spec.input.rank() >= 1, spec.who, ": input needs a batch axis");
    mask_ = ctx_->allocate(spec.input, DType::f32);
  }

  void forward(const Tensor& x, Tensor& y, const RandomPosition& position) override {
    check_activation(*ctx_, x, spec_.input, spec_.who, "input");
    check_activation(*ctx_, y, spec_.input, spec_.who, "output");
    kernels::dropout_mask(device_floats(mask_), spec_.input[0], spec_.input.per_sample(), position.seed,
                          position.stream, position.first_sample, spec_.probability, 1.f / (1.f - spec_.probability),
                          ctx_->stream());
    kernels::multiply(x.raw(), device_floats(mask_), y.raw(), y.dtype(), x.numel(), ctx_->stream());
  }

  void backward(const Tensor& dy, Tensor& dx) override {
    check_activation(*ctx_, dy, spec_.input, spec_.who, "output gradient");
    check_activation(*ctx_, dx, spec_.input, spec_.who, "input gradient");
    kernels::multiply(dy.raw(), device_floats(mask_), dx.raw(), dx.dtype(), dy.numel(), ctx_->stream());
  }

 private:
  CudaContextPtr ctx_;
  DropoutSpec spec_;
  Tensor mask_;  // 0 or 1/(1-p) per element, from the latest forward
};
}  // namespace

std::unique_ptr<DropoutPlan> make_dropout(CudaContextPtr ctx, const DropoutSpec& spec) {
  return std::make_unique<KernelDropout>(std::move(ctx), spec);
}

}  // namespace dptrain::cuda
