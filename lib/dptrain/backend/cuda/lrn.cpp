// Local response normalization across channels on cuDNN. cuDNN, like Caffe and oneDNN, divides alpha
// by the window size, so the hyper-parameters carry over unchanged. Its backward pass reads the
// forward output, which the interface does not hand back, so a training forward keeps a copy.
//
// bf16/fp16: cuDNN's LRN documents its data types per version (BFLOAT16 nowhere we could rely on for
// cuDNN 8 and 9), and LRN runs only in GoogLeNet's stem, on two small tensors. So the plan widens its
// inputs into f32 scratch, runs the f32 routine and rounds the result into the low type; the kept
// forward output is the f32 one, so the backward reads exactly what the forward computed. NHWC
// activations (in any precision) take the same route, the widening pass transposing to NCHW and the
// narrowing one back: LRN is in no network that runs NHWC for speed.
#include "dptrain/backend/cuda/descriptors.hpp"
#include "dptrain/backend/cuda/layout_kernels.hpp"
#include "dptrain/backend/cuda/plans.hpp"
#include "dptrain/backend/cuda/precision_kernels.hpp"

namespace dptrain::cuda {
namespace {
class CudnnLrn final : public LrnPlan {
 public:
  CudnnLrn(CudaContextPtr ctx, const LrnSpec& spec) : ctx_(std::move(ctx)), spec_(spec) {
    DPTRAIN_CHECK(spec.input.rank() == 4, spec.who, ": input must be 4-D [N,C,H,W] but has shape ",
                  spec.input.to_string());
    DPTRAIN_CHECK(spec.size >= CUDNN_LRN_MIN_N && spec.size <= CUDNN_LRN_MAX_N && spec.size % 2 == 1, spec.who,
                  ": cuDNN needs an odd window size between ", CUDNN_LRN_MIN_N, " and ", CUDNN_LRN_MAX_N, ", not ",
                  spec.size);
    DPTRAIN_CHECK(spec.k >= CUDNN_LRN_MIN_K && spec.beta >= CUDNN_LRN_MIN_BETA, spec.who,
                  ": cuDNN needs k >= ", CUDNN_LRN_MIN_K, " and beta >= ", CUDNN_LRN_MIN_BETA);
    type_ = ctx_->activation_dtype();
    desc_ = nchw_descriptor(spec.input, DType::f32, spec.who);  // f32 in every precision (see above)
    DPTRAIN_CUDNN_CHECK(cudnnSetLRNDescriptor(lrn_, static_cast<unsigned>(spec.size), spec.alpha, spec.beta, spec.k));
  }

  void forward(const Tensor& x, Tensor& y, bool training) override {
    check_activation(*ctx_, x, spec_.input, spec_.who, "input");
    check_activation(*ctx_, y, spec_.input, spec_.who, "output");
    const float one = 1.f, zero = 0.f;
    Tensor wide_x = widened(x);
    if (training && (!output_.defined() || output_.numel() == 0)) output_ = ctx_->allocate(spec_.input, DType::f32);
    // Low precision writes the f32 result where the backward will read it (training) or in scratch.
    Tensor wide_y = !staged() ? Tensor() : training ? output_ : ctx_->allocate(spec_.input, DType::f32);
    DPTRAIN_CUDNN_CHECK(cudnnLRNCrossChannelForward(ctx_->cudnn(), lrn_, CUDNN_LRN_CROSS_CHANNEL_DIM1, &one, desc_,
                                                    staged() ? wide_x.raw() : x.raw(), &zero, desc_,
                                                    staged() ? wide_y.raw() : y.raw()));
    if (staged()) narrowed(wide_y, y);
    if (training) {
      if (!staged()) {
        DPTRAIN_CUDA_CHECK(
            cudaMemcpyAsync(output_.raw(), y.raw(), y.bytes(), cudaMemcpyDeviceToDevice, ctx_->stream()));
      }
      have_output_ = true;
    }
  }

  void backward(const Tensor& x, const Tensor& dy, Tensor& dx) override {
    check_activation(*ctx_, x, spec_.input, spec_.who, "input");
    check_activation(*ctx_, dy, spec_.input, spec_.who, "output gradient");
    check_activation(*ctx_, dx, spec_.input, spec_.who, "input gradient");
    DPTRAIN_CHECK(have_output_, spec_.who, ": backward needs a training forward pass first");
    const float one = 1.f, zero = 0.f;
    Tensor wide_x = widened(x), wide_dy = widened(dy);
    Tensor wide_dx = staged() ? ctx_->allocate(spec_.input, DType::f32) : Tensor();
    DPTRAIN_CUDNN_CHECK(cudnnLRNCrossChannelBackward(ctx_->cudnn(), lrn_, CUDNN_LRN_CROSS_CHANNEL_DIM1, &one, desc_,
                                                     output_.raw(), desc_, staged() ? wide_dy.raw() : dy.raw(), desc_,
                                                     staged() ? wide_x.raw() : x.raw(), &zero, desc_,
                                                     staged() ? wide_dx.raw() : dx.raw()));
    if (staged()) narrowed(wide_dx, dx);
  }

 private:
  bool nhwc() const { return ctx_->activation_layout(spec_.input) == Layout::nhwc; }
  // Whether cuDNN runs on f32 NCHW copies (16-bit or NHWC activations) rather than on the tensors.
  bool staged() const { return type_ != DType::f32 || nhwc(); }
  // staged(): an f32 NCHW copy of `t` for this call (the caching allocator reuses blocks in stream
  // order); otherwise nothing (the caller passes `t` itself).
  Tensor widened(const Tensor& t) const {
    if (!staged()) return Tensor();
    Tensor wide = ctx_->allocate(spec_.input, DType::f32);
    if (nhwc()) {
      kernels::transpose_samples(t.raw(), type_, wide.raw(), DType::f32, spec_.input[0], pixels(), spec_.input[1],
                                 ctx_->stream());
    } else {
      kernels::convert(t.raw(), type_, wide.raw(), DType::f32, t.numel(), ctx_->stream());
    }
    return wide;
  }
  // The f32 NCHW result `wide` into `t`, in t's type and layout.
  void narrowed(const Tensor& wide, Tensor& t) const {
    if (nhwc()) {
      kernels::transpose_samples(wide.raw(), DType::f32, t.raw(), type_, spec_.input[0], spec_.input[1], pixels(),
                                 ctx_->stream());
    } else {
      kernels::convert(wide.raw(), DType::f32, t.raw(), type_, t.numel(), ctx_->stream());
    }
  }
  std::int64_t pixels() const { return spec_.input[2] * spec_.input[3]; }

  CudaContextPtr ctx_;
  LrnSpec spec_;
  DType type_ = DType::f32;
  TensorDescriptor desc_;
  LrnDescriptor lrn_;
  Tensor output_;  // the latest training forward's output (f32), which cuDNN's backward reads
  bool have_output_ = false;
};
}  // namespace

std::unique_ptr<LrnPlan> make_lrn(CudaContextPtr ctx, const LrnSpec& spec) {
  return std::make_unique<CudnnLrn>(std::move(ctx), spec);
}

}  // namespace dptrain::cuda
