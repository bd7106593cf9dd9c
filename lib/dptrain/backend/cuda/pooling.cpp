// Pooling on our own kernels (pooling_kernels.cu): Caffe's ceil rounding needs more padding after the
// image than before it, which cuDNN's pooling descriptor cannot say, and the kernels then match the
// CPU backend's oneDNN semantics exactly in every case. bf16/fp16 activations: fp32 arithmetic in the
// kernels, one rounding per output.
#include "dptrain/backend/cuda/kernels.hpp"
#include "dptrain/backend/cuda/plans.hpp"

namespace dptrain::cuda {
namespace {
kernels::PoolKind kind_of(PoolingKind kind) {
  switch (kind) {
    case PoolingKind::max: return kernels::PoolKind::max;
    case PoolingKind::average_include_padding: return kernels::PoolKind::average_include_padding;
    case PoolingKind::average_exclude_padding: return kernels::PoolKind::average_exclude_padding;
  }
  throw Error("unknown pooling kind");
}

class KernelPooling final : public PoolingPlan {
 public:
  KernelPooling(CudaContextPtr ctx, const PoolingSpec& spec)
      : ctx_(std::move(ctx)), spec_(spec), output_(pooling_output_shape(spec, spec.who)), kind_(kind_of(spec.kind)) {
    const auto& w = spec.window;
    geometry_.planes = spec.input[0] * spec.input[1];
    geometry_.height = static_cast<int>(spec.input[2]);
    geometry_.width = static_cast<int>(spec.input[3]);
    geometry_.out_height = static_cast<int>(output_[2]);
    geometry_.out_width = static_cast<int>(output_[3]);
    geometry_.kernel_h = w.kernel_h;
    geometry_.kernel_w = w.kernel_w;
    geometry_.stride_h = w.stride_h;
    geometry_.stride_w = w.stride_w;
    geometry_.pad_h = w.pad_h;
    geometry_.pad_w = w.pad_w;
    geometry_.channels = static_cast<int>(spec.input[1]);
    geometry_.channels_last = ctx_->activation_layout(spec.input) == Layout::nhwc;
    // The padding after the image (pad + ceil's extra) needs no parameter: the kernels clip windows to
    // the image, and the include-padding divisor is the whole window either way.
    if (kind_ == kernels::PoolKind::max) argmax_ = ctx_->allocate(output_, DType::i32);
  }

  void forward(const Tensor& x, Tensor& y, bool /*training: the argmax is cheap, always kept*/) override {
    check_activation(*ctx_, x, spec_.input, spec_.who, "input");
    check_activation(*ctx_, y, output_, spec_.who, "output");
    kernels::pool_forward(x.raw(), y.raw(), x.dtype(), argmax(), geometry_, kind_, ctx_->stream());
  }

  void backward(const Tensor& dy, Tensor& dx) override {
    check_activation(*ctx_, dy, output_, spec_.who, "output gradient");
    check_activation(*ctx_, dx, spec_.input, spec_.who, "input gradient");
    kernels::pool_backward(dy.raw(), argmax(), dx.raw(), dx.dtype(), geometry_, kind_, ctx_->stream());
  }

 private:
  std::int32_t* argmax() { return argmax_.defined() ? static_cast<std::int32_t*>(argmax_.raw()) : nullptr; }

  CudaContextPtr ctx_;
  PoolingSpec spec_;
  Shape output_;
  kernels::PoolKind kind_;
  kernels::PoolGeometry geometry_;
  Tensor argmax_;  // max pooling: where each maximum came from, for the backward pass
};
}  // namespace

std::unique_ptr<PoolingPlan> make_pooling(CudaContextPtr ctx, const PoolingSpec& spec) {
  return std::make_unique<KernelPooling>(std::move(ctx), spec);
}

}  // namespace dptrain::cuda
