// Inverted dropout with the CPU backend's mask: the same Philox words (core/philox_block.hpp) at the
// same (seed, stream, global element index), so both backends drop the same elements. The mask is f32
// in every precision; bf16/fp16 activations are multiplied in fp32 and rounded once. The words are
// keyed by the logical (NCHW) index: with NHWC activations of more than one pixel the mask is drawn in
// NCHW order and transposed, so a layout never changes which elements drop.
#include "dptrain/backend/cuda/kernels.hpp"
#include "dptrain/backend/cuda/layout_kernels.hpp"
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
    const bool transposed = ctx_->activation_layout(spec_.input) == Layout::nhwc && pixels() > 1;
    Tensor drawn = transposed ? ctx_->allocate(spec_.input, DType::f32) : mask_;
    kernels::dropout_mask(device_floats(drawn), spec_.input[0], spec_.input.per_sample(), position.seed,
                          position.stream, position.first_sample, spec_.probability, 1.f / (1.f - spec_.probability),
                          ctx_->stream());
    if (transposed) {
      kernels::transpose_samples(drawn.raw(), DType::f32, mask_.raw(), DType::f32, spec_.input[0], spec_.input[1],
                                 pixels(), ctx_->stream());
    }
    kernels::multiply(x.raw(), device_floats(mask_), y.raw(), y.dtype(), x.numel(), ctx_->stream());
  }

  void backward(const Tensor& dy, Tensor& dx) override {
    check_activation(*ctx_, dy, spec_.input, spec_.who, "output gradient");
    check_activation(*ctx_, dx, spec_.input, spec_.who, "input gradient");
    kernels::multiply(dy.raw(), device_floats(mask_), dx.raw(), dx.dtype(), dy.numel(), ctx_->stream());
  }

 private:
  std::int64_t pixels() const { return spec_.input.rank() == 4 ? spec_.input[2] * spec_.input[3] : 1; }

  CudaContextPtr ctx_;
  DropoutSpec spec_;
  Tensor mask_;  // 0 or 1/(1-p) per element, from the latest forward
};
}  // namespace

std::unique_ptr<DropoutPlan> make_dropout(CudaContextPtr ctx, const DropoutSpec& spec) {
  return std::make_unique<KernelDropout>(std::move(ctx), spec);
}

}  // namespace dptrain::cuda
