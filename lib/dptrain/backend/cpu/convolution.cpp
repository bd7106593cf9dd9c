// Convolution on oneDNN. The primitives choose their own (blocked) layouts through format_tag::any,
// which is several times faster than forcing NCHW; a Slot reorders a tensor in another layout in and
// out (activations kept in the machine's block layout need none).
#include "dptrain/backend/cpu/plans.hpp"

namespace dptrain::cpu {
namespace {
using dnnl::algorithm;
using dnnl::prop_kind;
using tag = dnnl::memory::format_tag;

dnnl::memory::desc any_desc(const Shape& shape) {
  return DPTRAIN_DNNL_CHECK(dnnl::memory::desc(dims_of(shape), dnnl::memory::data_type::f32, tag::any));
}

class OneDnnConvolution final : public ConvolutionPlan {
 public:
  OneDnnConvolution(DnnlContextPtr ctx, const ConvolutionSpec& spec)
      : ctx_(std::move(ctx)),
        spec_(spec),
        output_(convolution_output_shape(spec, spec.who)),
        weight_(convolution_weight_shape(spec)),
        bias_(Shape{spec.out_channels}) {
    const auto& w = spec.window;
    const dnnl::memory::dims strides{w.stride_h, w.stride_w};
    const dnnl::memory::dims padding{w.pad_h, w.pad_w};
    // oneDNN 2's backward-data primitive takes no sum post-op (Backend::accumulates_convolution_input_gradient).
    DPTRAIN_CHECK(!spec.accumulate_input_gradient, spec.who,
                  ": the CPU backend cannot add into an input gradient (the net sums it instead)");
    const auto src = any_desc(spec.input), wei = any_desc(weight_), dst = any_desc(output_);
    const auto bias = plain_desc(bias_);
    auto& engine = ctx_->engine;

    auto fwd_desc = spec.bias
                        ? DPTRAIN_DNNL_CHECK(dnnl::convolution_forward::desc(prop_kind::forward_training,
                                                                             algorithm::convolution_direct, src, wei,
                                                                             bias, dst, strides, padding, padding))
                        : DPTRAIN_DNNL_CHECK(dnnl::convolution_forward::desc(prop_kind::forward_training,
                                                                             algorithm::convolution_direct, src, wei,
                                                                             dst, strides, padding, padding));
    // A fused ReLU is a post-op of the forward primitive; the backward primitives do not see it (the
    // ReLU's own backward runs from the fused output).
    dnnl::primitive_attr attr;
    if (spec.fuse_relu) {
      dnnl::post_ops ops;
      DPTRAIN_DNNL_CHECK(ops.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f));
      DPTRAIN_DNNL_CHECK(attr.set_post_ops(ops));
    }
    fwd_pd_ = DPTRAIN_DNNL_CHECK(dnnl::convolution_forward::primitive_desc(fwd_desc, attr, engine));
    fwd_ = DPTRAIN_DNNL_CHECK(dnnl::convolution_forward(fwd_pd_));

    auto bwd_data_desc = DPTRAIN_DNNL_CHECK(
        dnnl::convolution_backward_data::desc(algorithm::convolution_direct, src, wei, dst, strides, padding, padding));
    bwd_data_pd_ = DPTRAIN_DNNL_CHECK(dnnl::convolution_backward_data::primitive_desc(bwd_data_desc, engine, fwd_pd_));
    bwd_data_ = DPTRAIN_DNNL_CHECK(dnnl::convolution_backward_data(bwd_data_pd_));

    auto bwd_w_desc = spec.bias ? DPTRAIN_DNNL_CHECK(dnnl::convolution_backward_weights::desc(
                                      algorithm::convolution_direct, src, wei, bias, dst, strides, padding, padding))
                                : DPTRAIN_DNNL_CHECK(dnnl::convolution_backward_weights::desc(
                                      algorithm::convolution_direct, src, wei, dst, strides, padding, padding));
    bwd_w_pd_ = DPTRAIN_DNNL_CHECK(dnnl::convolution_backward_weights::primitive_desc(bwd_w_desc, engine, fwd_pd_));
    bwd_w_ = DPTRAIN_DNNL_CHECK(dnnl::convolution_backward_weights(bwd_w_pd_));

    const Shape& x = spec.input;
    fwd_x_ = Slot(x, fwd_pd_.src_desc());
    fwd_w_ = Slot(weight_, fwd_pd_.weights_desc());
    fwd_y_ = Slot(output_, fwd_pd_.dst_desc());
    bd_dy_ = Slot(output_, bwd_data_pd_.diff_dst_desc());
    bd_w_ = Slot(weight_, bwd_data_pd_.weights_desc());
    bd_dx_ = Slot(x, bwd_data_pd_.diff_src_desc());
    bw_x_ = Slot(x, bwd_w_pd_.src_desc());
    bw_dy_ = Slot(output_, bwd_w_pd_.diff_dst_desc());
    bw_dw_ = Slot(weight_, bwd_w_pd_.diff_weights_desc());
  }

  void forward(const Tensor& x, const Tensor& weight, const Tensor& b, Tensor& y) override {
    check_cpu_tensor(x, spec_.input, spec_.who, "input");
    check_cpu_tensor(weight, weight_, spec_.who, "weight");
    check_cpu_tensor(y, output_, spec_.who, "output");
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, fwd_x_.input(*ctx_, x)},
                                               {DNNL_ARG_WEIGHTS, fwd_w_.input(*ctx_, weight)},
                                               {DNNL_ARG_DST, fwd_y_.output(*ctx_, y)}};
    if (spec_.bias) {
      check_cpu_tensor(b, bias_, spec_.who, "bias");
      args.emplace(DNNL_ARG_BIAS, wrap(*ctx_, plain_desc(bias_), b));
    }
    run(*ctx_, fwd_, args);
    fwd_y_.finish_output(*ctx_, y);
  }

  void backward_data(const Tensor& dy, const Tensor& weight, Tensor& dx) override {
    check_cpu_tensor(dy, output_, spec_.who, "output gradient");
    check_cpu_tensor(weight, weight_, spec_.who, "weight");
    check_cpu_tensor(dx, spec_.input, spec_.who, "input gradient");
    run(*ctx_, bwd_data_,
        {{DNNL_ARG_DIFF_DST, bd_dy_.input(*ctx_, dy)},
         {DNNL_ARG_WEIGHTS, bd_w_.input(*ctx_, weight)},
         {DNNL_ARG_DIFF_SRC, bd_dx_.output(*ctx_, dx)}});
    bd_dx_.finish_output(*ctx_, dx);
  }

  void backward_weights(const Tensor& x, const Tensor& dy, Tensor& dweight, Tensor& dbias) override {
    check_cpu_tensor(x, spec_.input, spec_.who, "input");
    check_cpu_tensor(dy, output_, spec_.who, "output gradient");
    check_cpu_tensor(dweight, weight_, spec_.who, "weight gradient");
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, bw_x_.input(*ctx_, x)},
                                               {DNNL_ARG_DIFF_DST, bw_dy_.input(*ctx_, dy)},
                                               {DNNL_ARG_DIFF_WEIGHTS, bw_dw_.output(*ctx_, dweight)}};
    if (spec_.bias) {
      check_cpu_tensor(dbias, bias_, spec_.who, "bias gradient");
      args.emplace(DNNL_ARG_DIFF_BIAS, wrap(*ctx_, plain_desc(bias_), dbias));
    }
    run(*ctx_, bwd_w_, args);
    bw_dw_.finish_output(*ctx_, dweight);
  }

 private:
  DnnlContextPtr ctx_;
  ConvolutionSpec spec_;
  Shape output_, weight_, bias_;
  dnnl::convolution_forward::primitive_desc fwd_pd_;
  dnnl::convolution_backward_data::primitive_desc bwd_data_pd_;
  dnnl::convolution_backward_weights::primitive_desc bwd_w_pd_;
  dnnl::primitive fwd_, bwd_data_, bwd_w_;
  Slot fwd_x_, fwd_w_, fwd_y_, bd_dy_, bd_w_, bd_dx_, bw_x_, bw_dy_, bw_dw_;
};
}  // namespace

std::unique_ptr<ConvolutionPlan> make_convolution(DnnlContextPtr ctx, const ConvolutionSpec& spec) {
  return std::make_unique<OneDnnConvolution>(std::move(ctx), spec);
}

}  // namespace dptrain::cpu
