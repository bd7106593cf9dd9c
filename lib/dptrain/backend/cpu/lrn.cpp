// Local response normalization across channels on oneDNN (AlexNet's and GoogLeNet's LRN). oneDNN
// divides alpha by the window size, as Caffe does, so the hyper-parameters carry over unchanged.
#include "dptrain/backend/cpu/plans.hpp"

namespace dptrain::cpu {
namespace {
constexpr auto kAcross = dnnl::algorithm::lrn_across_channels;

class OneDnnLrn final : public LrnPlan {
 public:
  OneDnnLrn(DnnlContextPtr ctx, const LrnSpec& spec) : ctx_(std::move(ctx)), spec_(spec) {
    DPTRAIN_CHECK(spec.input.rank() == 4, spec.who, ": input must be 4-D [N,C,H,W] but has shape ",
                  spec.input.to_string());
    DPTRAIN_CHECK(spec.size > 0 && spec.size % 2 == 1, spec.who, ": the window size must be odd and positive, not ",
                  spec.size);
    desc_ =
        layout_desc(spec.input, preferred_layout(*ctx_, spec.input));  // oneDNN's nchw LRN backward is a slow reference
    x_ = Slot(spec.input, desc_);
    y_ = Slot(spec.input, desc_);
    dy_ = Slot(spec.input, desc_);
    auto fwd = DPTRAIN_DNNL_CHECK(dnnl::lrn_forward::desc(dnnl::prop_kind::forward_training, kAcross, desc_, spec.size,
                                                          spec.alpha, spec.beta, spec.k));
    auto fwd_pd = DPTRAIN_DNNL_CHECK(dnnl::lrn_forward::primitive_desc(fwd, ctx_->engine));
    fwd_ = DPTRAIN_DNNL_CHECK(dnnl::lrn_forward(fwd_pd));
    auto bwd =
        DPTRAIN_DNNL_CHECK(dnnl::lrn_backward::desc(kAcross, desc_, desc_, spec.size, spec.alpha, spec.beta, spec.k));
    bwd_ = DPTRAIN_DNNL_CHECK(dnnl::lrn_backward(dnnl::lrn_backward::primitive_desc(bwd, ctx_->engine, fwd_pd)));
    workspace_ = Workspace(fwd_pd.workspace_desc());
  }

  void forward(const Tensor& x, Tensor& y, bool /*training*/) override {
    check_cpu_tensor(x, spec_.input, spec_.who, "input");
    check_cpu_tensor(y, spec_.input, spec_.who, "output");
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, x_.input(*ctx_, x)}, {DNNL_ARG_DST, y_.output(*ctx_, y)}};
    workspace_.add_to(*ctx_, args);
    run(*ctx_, fwd_, args);
    y_.finish_output(*ctx_, y);
  }

  void backward(const Tensor& x, const Tensor& dy, Tensor& dx) override {
    check_cpu_tensor(x, spec_.input, spec_.who, "input");
    check_cpu_tensor(dy, spec_.input, spec_.who, "output gradient");
    check_cpu_tensor(dx, spec_.input, spec_.who, "input gradient");
    // The input and the output gradient use separate slots: their staging buffers must not alias.
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, x_.input(*ctx_, x)},
                                               {DNNL_ARG_DIFF_DST, dy_.input(*ctx_, dy)},
                                               {DNNL_ARG_DIFF_SRC, y_.output(*ctx_, dx)}};
    workspace_.add_to(*ctx_, args);
    run(*ctx_, bwd_, args);
    y_.finish_output(*ctx_, dx);
  }

 private:
  DnnlContextPtr ctx_;
  LrnSpec spec_;
  dnnl::memory::desc desc_;
  Slot x_, y_, dy_;  // y_ also carries the input gradient
  dnnl::primitive fwd_, bwd_;
  Workspace workspace_;
};
}  // namespace

std::unique_ptr<LrnPlan> make_lrn(DnnlContextPtr ctx, const LrnSpec& spec) {
  return std::make_unique<OneDnnLrn>(std::move(ctx), spec);
}

}  // namespace dptrain::cpu
