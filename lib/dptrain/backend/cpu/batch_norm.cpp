// Batch normalization on oneDNN: per-channel statistics over N, H and W, with separate scale (gamma)
// and shift (beta) tensors. Running averages are the layer's business, not the backend's.
//
// With a fused ReLU the forward passes run with oneDNN's fuse_norm_relu (one pass over the output
// instead of two). Its training forward writes a mask into a workspace. With the ReLU's backward fused
// too (BatchNormSpec::fuse_relu_backward) the backward is oneDNN's fused one, which reads that mask
// and the ReLU's output gradient; otherwise the backward stays unfused (the ReLU's own backward masks
// the gradient first), made from an unfused training forward's descriptor, and the mask is scratch.
#include "dptrain/backend/cpu/plans.hpp"

namespace dptrain::cpu {
namespace {
using flags = dnnl::normalization_flags;

class OneDnnBatchNorm final : public BatchNormPlan {
 public:
  OneDnnBatchNorm(DnnlContextPtr ctx, const BatchNormSpec& spec)
      : ctx_(std::move(ctx)), spec_(spec), channel_(Shape{spec.input.rank() >= 2 ? spec.input[1] : 0}) {
    DPTRAIN_CHECK(spec.input.rank() == 4, spec.who, ": input must be 4-D [N,C,H,W] but has shape ",
                  spec.input.to_string());
    x_desc_ = layout_desc(spec.input, preferred_layout(*ctx_, spec.input));
    x_ = Slot(spec.input, x_desc_);
    y_ = Slot(spec.input, x_desc_);
    dy_ = Slot(spec.input, x_desc_);
    c_desc_ = plain_desc(channel_);
    const auto scale_shift = flags::use_scale | flags::use_shift;
    const auto relu = spec.fuse_relu ? flags::fuse_norm_relu : flags::none;
    auto train = DPTRAIN_DNNL_CHECK(
        dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, x_desc_, spec.epsilon, scale_shift));
    train_pd_ = DPTRAIN_DNNL_CHECK(dnnl::batch_normalization_forward::primitive_desc(train, ctx_->engine));
    if (spec.fuse_relu) {
      auto fused = DPTRAIN_DNNL_CHECK(dnnl::batch_normalization_forward::desc(
          dnnl::prop_kind::forward_training, x_desc_, spec.epsilon, scale_shift | relu));
      auto fused_pd = DPTRAIN_DNNL_CHECK(dnnl::batch_normalization_forward::primitive_desc(fused, ctx_->engine));
      train_ = DPTRAIN_DNNL_CHECK(dnnl::batch_normalization_forward(fused_pd));
      relu_mask_ = Workspace(fused_pd.workspace_desc());
      if (spec.fuse_relu_backward) train_pd_ = fused_pd;  // the backward below is made from it, fused
    } else {
      DPTRAIN_CHECK(!spec.fuse_relu_backward, spec.who, ": the ReLU's backward is fused only with its forward");
      train_ = DPTRAIN_DNNL_CHECK(dnnl::batch_normalization_forward(train_pd_));
    }
    auto infer = DPTRAIN_DNNL_CHECK(dnnl::batch_normalization_forward::desc(
        dnnl::prop_kind::forward_inference, x_desc_, spec.epsilon, scale_shift | flags::use_global_stats | relu));
    infer_ = DPTRAIN_DNNL_CHECK(
        dnnl::batch_normalization_forward(dnnl::batch_normalization_forward::primitive_desc(infer, ctx_->engine)));
    const auto backward_relu = spec.fuse_relu_backward ? flags::fuse_norm_relu : flags::none;
    auto bwd = DPTRAIN_DNNL_CHECK(dnnl::batch_normalization_backward::desc(dnnl::prop_kind::backward, x_desc_, x_desc_,
                                                                           spec.epsilon, scale_shift | backward_relu));
    bwd_ = DPTRAIN_DNNL_CHECK(dnnl::batch_normalization_backward(
        dnnl::batch_normalization_backward::primitive_desc(bwd, ctx_->engine, train_pd_)));
  }

  void forward_training(const Tensor& x, const Tensor& scale, const Tensor& shift, Tensor& y, Tensor& batch_mean,
                        Tensor& batch_variance) override {
    check_data(x, "input");
    check_data(y, "output");
    DPTRAIN_CHECK(spec_.input[0] * spec_.input[2] * spec_.input[3] > 1, spec_.who, ": input of shape ",
                  spec_.input.to_string(), " has one value per channel; training needs more for batch statistics");
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, x_.input(*ctx_, x)},
                                               {DNNL_ARG_DST, y_.output(*ctx_, y)},
                                               {DNNL_ARG_SCALE, channel(scale, "scale")},
                                               {DNNL_ARG_SHIFT, channel(shift, "shift")},
                                               {DNNL_ARG_MEAN, channel(batch_mean, "batch mean")},
                                               {DNNL_ARG_VARIANCE, channel(batch_variance, "batch variance")}};
    relu_mask_.add_to(*ctx_, args);
    run(*ctx_, train_, args);
    y_.finish_output(*ctx_, y);
  }

  void forward_inference(const Tensor& x, const Tensor& scale, const Tensor& shift, const Tensor& mean,
                         const Tensor& variance, Tensor& y) override {
    check_data(x, "input");
    check_data(y, "output");
    run(*ctx_, infer_,
        {{DNNL_ARG_SRC, x_.input(*ctx_, x)},
         {DNNL_ARG_DST, y_.output(*ctx_, y)},
         {DNNL_ARG_SCALE, channel(scale, "scale")},
         {DNNL_ARG_SHIFT, channel(shift, "shift")},
         {DNNL_ARG_MEAN, channel(mean, "running mean")},
         {DNNL_ARG_VARIANCE, channel(variance, "running variance")}});
    y_.finish_output(*ctx_, y);
  }

  // With fuse_relu_backward oneDNN masks dy by the workspace its training forward wrote (y > 0), so
  // `y` itself is not read.
  void backward(const Tensor& x, const Tensor& /*y*/, const Tensor& dy, const Tensor& scale, const Tensor& shift,
                const Tensor& batch_mean, const Tensor& batch_variance, Tensor& dx, Tensor& dscale,
                Tensor& dshift) override {
    check_data(x, "input");
    check_data(dy, "output gradient");
    check_data(dx, "input gradient");
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, x_.input(*ctx_, x)},
                                               {DNNL_ARG_DIFF_DST, dy_.input(*ctx_, dy)},
                                               {DNNL_ARG_SCALE, channel(scale, "scale")},
                                               {DNNL_ARG_SHIFT, channel(shift, "shift")},
                                               {DNNL_ARG_MEAN, channel(batch_mean, "batch mean")},
                                               {DNNL_ARG_VARIANCE, channel(batch_variance, "batch variance")},
                                               {DNNL_ARG_DIFF_SRC, y_.output(*ctx_, dx)},
                                               {DNNL_ARG_DIFF_SCALE, channel(dscale, "scale gradient")},
                                               {DNNL_ARG_DIFF_SHIFT, channel(dshift, "shift gradient")}};
    if (spec_.fuse_relu_backward) relu_mask_.add_to(*ctx_, args);
    run(*ctx_, bwd_, args);
    y_.finish_output(*ctx_, dx);
  }

 private:
  void check_data(const Tensor& t, const char* what) const { check_cpu_tensor(t, spec_.input, spec_.who, what); }
  dnnl::memory channel(const Tensor& t, const char* what) const {
    check_cpu_tensor(t, channel_, spec_.who, what);
    return wrap(*ctx_, c_desc_, t);
  }

  DnnlContextPtr ctx_;
  BatchNormSpec spec_;
  Shape channel_;
  dnnl::memory::desc x_desc_, c_desc_;
  Slot x_, y_, dy_;                                             // y_ also carries the input gradient
  dnnl::batch_normalization_forward::primitive_desc train_pd_;  // what the backward is made from
  Workspace relu_mask_;  // fused ReLU: the mask oneDNN's training forward writes (read by a fused backward)
  dnnl::primitive train_, infer_, bwd_;
};
}  // namespace

std::unique_ptr<BatchNormPlan> make_batch_norm(DnnlContextPtr ctx, const BatchNormSpec& spec) {
  return std::make_unique<OneDnnBatchNorm>(std::move(ctx), spec);
}

}  // namespace dptrain::cpu
