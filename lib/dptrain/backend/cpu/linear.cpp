// Fully connected (inner product) on oneDNN. The input [N, ...] is read as [N, features], which is the
// same memory in row-major order, so no copy is needed to flatten.
#include "dptrain/backend/cpu/plans.hpp"

namespace dptrain::cpu {
namespace {
class OneDnnLinear final : public LinearPlan {
 public:
  OneDnnLinear(DnnlContextPtr ctx, const LinearSpec& spec)
      : ctx_(std::move(ctx)),
        spec_(spec),
        output_(linear_output_shape(spec, spec.who)),
        weight_(linear_weight_shape(spec)),
        bias_(Shape{spec.out_features}) {
    x_desc_ = plain_desc(Shape{spec.input[0], spec.input.per_sample()});
    // The primitive reads the input as plain [N, features]; a blocked input is reordered to plain first.
    x_ = Slot(spec.input, layout_desc(spec.input, Layout::plain));
    w_desc_ = plain_desc(weight_);
    b_desc_ = plain_desc(bias_);
    y_desc_ = plain_desc(output_);
    auto fwd = spec.bias ? DPTRAIN_DNNL_CHECK(dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_training,
                                                                                x_desc_, w_desc_, b_desc_, y_desc_))
                         : DPTRAIN_DNNL_CHECK(dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_training,
                                                                                x_desc_, w_desc_, y_desc_));
    auto fwd_pd = DPTRAIN_DNNL_CHECK(dnnl::inner_product_forward::primitive_desc(fwd, ctx_->engine));
    fwd_ = DPTRAIN_DNNL_CHECK(dnnl::inner_product_forward(fwd_pd));
    auto bd = DPTRAIN_DNNL_CHECK(dnnl::inner_product_backward_data::desc(x_desc_, w_desc_, y_desc_));
    bwd_data_ = DPTRAIN_DNNL_CHECK(
        dnnl::inner_product_backward_data(dnnl::inner_product_backward_data::primitive_desc(bd, ctx_->engine, fwd_pd)));
    auto bw = spec.bias
                  ? DPTRAIN_DNNL_CHECK(dnnl::inner_product_backward_weights::desc(x_desc_, w_desc_, b_desc_, y_desc_))
                  : DPTRAIN_DNNL_CHECK(dnnl::inner_product_backward_weights::desc(x_desc_, w_desc_, y_desc_));
    bwd_weights_ = DPTRAIN_DNNL_CHECK(dnnl::inner_product_backward_weights(
        dnnl::inner_product_backward_weights::primitive_desc(bw, ctx_->engine, fwd_pd)));
  }

  void forward(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& y) override {
    check_cpu_tensor(x, spec_.input, spec_.who, "input");
    check_cpu_tensor(weight, weight_, spec_.who, "weight");
    check_cpu_tensor(y, output_, spec_.who, "output");
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, flat(x_.input(*ctx_, x))},
                                               {DNNL_ARG_WEIGHTS, wrap(*ctx_, w_desc_, weight)},
                                               {DNNL_ARG_DST, wrap(*ctx_, y_desc_, y)}};
    if (spec_.bias) {
      check_cpu_tensor(bias, bias_, spec_.who, "bias");
      args.emplace(DNNL_ARG_BIAS, wrap(*ctx_, b_desc_, bias));
    }
    run(*ctx_, fwd_, args);
  }

  void backward_data(const Tensor& dy, const Tensor& weight, Tensor& dx) override {
    check_cpu_tensor(dy, output_, spec_.who, "output gradient");
    check_cpu_tensor(weight, weight_, spec_.who, "weight");
    check_cpu_tensor(dx, spec_.input, spec_.who, "input gradient");
    run(*ctx_, bwd_data_,
        {{DNNL_ARG_DIFF_DST, wrap(*ctx_, y_desc_, dy)},
         {DNNL_ARG_WEIGHTS, wrap(*ctx_, w_desc_, weight)},
         {DNNL_ARG_DIFF_SRC, flat(x_.output(*ctx_, dx))}});
    x_.finish_output(*ctx_, dx);
  }

  void backward_weights(const Tensor& x, const Tensor& dy, Tensor& dweight, Tensor& dbias) override {
    check_cpu_tensor(x, spec_.input, spec_.who, "input");
    check_cpu_tensor(dy, output_, spec_.who, "output gradient");
    check_cpu_tensor(dweight, weight_, spec_.who, "weight gradient");
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, flat(x_.input(*ctx_, x))},
                                               {DNNL_ARG_DIFF_DST, wrap(*ctx_, y_desc_, dy)},
                                               {DNNL_ARG_DIFF_WEIGHTS, wrap(*ctx_, w_desc_, dweight)}};
    if (spec_.bias) {
      check_cpu_tensor(dbias, bias_, spec_.who, "bias gradient");
      args.emplace(DNNL_ARG_DIFF_BIAS, wrap(*ctx_, b_desc_, dbias));
    }
    run(*ctx_, bwd_weights_, args);
  }

 private:
  // The same plain memory seen as [N, features].
  dnnl::memory flat(const dnnl::memory& m) const {
    return DPTRAIN_DNNL_CHECK(dnnl::memory(x_desc_, ctx_->engine, m.get_data_handle()));
  }

  DnnlContextPtr ctx_;
  LinearSpec spec_;
  Slot x_;
  Shape output_, weight_, bias_;
  dnnl::memory::desc x_desc_, w_desc_, b_desc_, y_desc_;
  dnnl::primitive fwd_, bwd_data_, bwd_weights_;
};
}  // namespace

std::unique_ptr<LinearPlan> make_linear(DnnlContextPtr ctx, const LinearSpec& spec) {
  return std::make_unique<OneDnnLinear>(std::move(ctx), spec);
}

}  // namespace dptrain::cpu
