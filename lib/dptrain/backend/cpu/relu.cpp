// ReLU on oneDNN, with the backward pass computed from the output so that it may run in place. It is
// element-wise, so it runs on the flat memory of its tensors whatever their (common) layout.
#include "dptrain/backend/cpu/plans.hpp"

namespace dptrain::cpu {
namespace {
constexpr auto kRelu = dnnl::algorithm::eltwise_relu_use_dst_for_bwd;

class OneDnnRelu final : public ReluPlan {
 public:
  OneDnnRelu(DnnlContextPtr ctx, const Shape& shape, std::string who)
      : ctx_(std::move(ctx)), shape_(shape), who_(std::move(who)), desc_(plain_desc(Shape{shape.numel()})) {
    auto fwd =
        DPTRAIN_DNNL_CHECK(dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, kRelu, desc_, 0.f, 0.f));
    auto fwd_pd = DPTRAIN_DNNL_CHECK(dnnl::eltwise_forward::primitive_desc(fwd, ctx_->engine));
    fwd_ = DPTRAIN_DNNL_CHECK(dnnl::eltwise_forward(fwd_pd));
    auto bwd = DPTRAIN_DNNL_CHECK(dnnl::eltwise_backward::desc(kRelu, desc_, desc_, 0.f, 0.f));
    bwd_ =
        DPTRAIN_DNNL_CHECK(dnnl::eltwise_backward(dnnl::eltwise_backward::primitive_desc(bwd, ctx_->engine, fwd_pd)));
  }

  void forward(const Tensor& x, Tensor& y) override {
    check_cpu_tensor(x, shape_, who_, "input");
    check_cpu_tensor(y, shape_, who_, "output");
    check_same_layout(x, y);
    run(*ctx_, fwd_, {{DNNL_ARG_SRC, wrap(*ctx_, desc_, x)}, {DNNL_ARG_DST, wrap(*ctx_, desc_, y)}});
  }

  void backward(const Tensor& y, const Tensor& dy, Tensor& dx) override {
    check_cpu_tensor(y, shape_, who_, "output");
    check_cpu_tensor(dy, shape_, who_, "output gradient");
    check_cpu_tensor(dx, shape_, who_, "input gradient");
    check_same_layout(y, dy);
    check_same_layout(y, dx);
    run(*ctx_, bwd_,
        {{DNNL_ARG_DST, wrap(*ctx_, desc_, y)},
         {DNNL_ARG_DIFF_DST, wrap(*ctx_, desc_, dy)},
         {DNNL_ARG_DIFF_SRC, wrap(*ctx_, desc_, dx)}});
  }

 private:
  void check_same_layout(const Tensor& a, const Tensor& b) const {
    DPTRAIN_CHECK(a.layout() == b.layout(), who_, ": tensors in different layouts (plain and blocked)");
  }

  DnnlContextPtr ctx_;
  Shape shape_;
  std::string who_;
  dnnl::memory::desc desc_;
  dnnl::primitive fwd_, bwd_;
};
}  // namespace

std::unique_ptr<ReluPlan> make_relu(DnnlContextPtr ctx, const Shape& shape, const std::string& who) {
  return std::make_unique<OneDnnRelu>(std::move(ctx), shape, who);
}

}  // namespace dptrain::cpu
