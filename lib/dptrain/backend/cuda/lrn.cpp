// Local response normalization across channels on cuDNN. cuDNN, like Caffe and oneDNN, divides alpha
// by the window size, so the hyper-parameters carry over unchanged. Its backward pass reads the
// forward output, which the interface does not hand back, so a training forward keeps a copy.
#include "dptrain/backend/cuda/descriptors.hpp"
#include "dptrain/backend/cuda/plans.hpp"

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
    desc_ = nchw_descriptor(spec.input);
    CUDNN_CHECK(cudnnSetLRNDescriptor(lrn_, static_cast<unsigned>(spec.size), spec.alpha, spec.beta, spec.k));
  }

  void forward(const Tensor& x, Tensor& y, bool training) override {
    check_device_tensor(*ctx_, x, spec_.input, spec_.who, "input");
    check_device_tensor(*ctx_, y, spec_.input, spec_.who, "output");
    const float one = 1.f, zero = 0.f;
    CUDNN_CHECK(cudnnLRNCrossChannelForward(ctx_->cudnn(), lrn_, CUDNN_LRN_CROSS_CHANNEL_DIM1, &one, desc_, x.raw(),
                                            &zero, desc_, y.raw()));
    if (training) {
      if (!output_.defined() || output_.numel() == 0) output_ = ctx_->allocate(spec_.input, DType::f32);
      CUDA_CHECK(cudaMemcpyAsync(output_.raw(), y.raw(), y.bytes(), cudaMemcpyDeviceToDevice, ctx_->stream()));
      have_output_ = true;
    }
  }

  void backward(const Tensor& x, const Tensor& dy, Tensor& dx) override {
    check_device_tensor(*ctx_, x, spec_.input, spec_.who, "input");
    check_device_tensor(*ctx_, dy, spec_.input, spec_.who, "output gradient");
    check_device_tensor(*ctx_, dx, spec_.input, spec_.who, "input gradient");
    DPTRAIN_CHECK(have_output_, spec_.who, ": backward needs a training forward pass first");
    const float one = 1.f, zero = 0.f;
    CUDNN_CHECK(cudnnLRNCrossChannelBackward(ctx_->cudnn(), lrn_, CUDNN_LRN_CROSS_CHANNEL_DIM1, &one, desc_,
                                             output_.raw(), desc_, dy.raw(), desc_, x.raw(), &zero, desc_, dx.raw()));
  }

 private:
  CudaContextPtr ctx_;
  LrnSpec spec_;
  TensorDescriptor desc_;
  LrnDescriptor lrn_;
  Tensor output_;  // the latest training forward's output, which cuDNN's backward reads
  bool have_output_ = false;
};
}  // namespace

std::unique_ptr<LrnPlan> make_lrn(CudaContextPtr ctx, const LrnSpec& spec) {
  return std::make_unique<CudnnLrn>(std::move(ctx), spec);
}

}  // namespace dptrain::cuda
