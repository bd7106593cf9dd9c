// Max and average pooling on oneDNN. Ceil rounding (Caffe's, which GoogLeNet's shapes assume) is
// expressed as extra padding after the last row and column; max pooling ignores padded positions.
#include "dptrain/backend/cpu/plans.hpp"

namespace dptrain::cpu {
namespace {
dnnl::algorithm algorithm_of(PoolingKind kind) {
  switch (kind) {
    case PoolingKind::max: return dnnl::algorithm::pooling_max;
    case PoolingKind::average_include_padding: return dnnl::algorithm::pooling_avg_include_padding;
    case PoolingKind::average_exclude_padding: return dnnl::algorithm::pooling_avg_exclude_padding;
  }
  throw Error("unknown pooling kind");
}

class OneDnnPooling final : public PoolingPlan {
 public:
  OneDnnPooling(DnnlContextPtr ctx, const PoolingSpec& spec)
      : ctx_(std::move(ctx)), spec_(spec), output_(pooling_output_shape(spec, spec.who)) {
    const auto& w = spec.window;
    std::int64_t extra_h = 0, extra_w = 0;
    window_output_size(spec.input[2], w.kernel_h, w.stride_h, w.pad_h, spec.rounding, &extra_h);
    window_output_size(spec.input[3], w.kernel_w, w.stride_w, w.pad_w, spec.rounding, &extra_w);
    const dnnl::memory::dims strides{w.stride_h, w.stride_w}, kernel{w.kernel_h, w.kernel_w};
    const dnnl::memory::dims pad_l{w.pad_h, w.pad_w}, pad_r{w.pad_h + extra_h, w.pad_w + extra_w};
    const Layout layout = preferred_layout(*ctx_, spec.input);  // oneDNN's nchw pooling is ~20x slower
    x_desc_ = layout_desc(spec.input, layout);
    y_desc_ = layout_desc(output_, layout);
    x_ = Slot(spec.input, x_desc_);
    y_ = Slot(output_, y_desc_);
    const auto algorithm = algorithm_of(spec.kind);
    auto fwd = DPTRAIN_DNNL_CHECK(dnnl::pooling_forward::desc(dnnl::prop_kind::forward_training, algorithm, x_desc_,
                                                              y_desc_, strides, kernel, pad_l, pad_r));
    fwd_pd_ = DPTRAIN_DNNL_CHECK(dnnl::pooling_forward::primitive_desc(fwd, ctx_->engine));
    fwd_ = DPTRAIN_DNNL_CHECK(dnnl::pooling_forward(fwd_pd_));
    auto bwd =
        DPTRAIN_DNNL_CHECK(dnnl::pooling_backward::desc(algorithm, x_desc_, y_desc_, strides, kernel, pad_l, pad_r));
    bwd_pd_ = DPTRAIN_DNNL_CHECK(dnnl::pooling_backward::primitive_desc(bwd, ctx_->engine, fwd_pd_));
    bwd_ = DPTRAIN_DNNL_CHECK(dnnl::pooling_backward(bwd_pd_));
    workspace_ = Workspace(fwd_pd_.workspace_desc());
  }

  void forward(const Tensor& x, Tensor& y, bool /*training: the workspace is cheap, always kept*/) override {
    check_cpu_tensor(x, spec_.input, spec_.who, "input");
    check_cpu_tensor(y, output_, spec_.who, "output");
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, x_.input(*ctx_, x)}, {DNNL_ARG_DST, y_.output(*ctx_, y)}};
    workspace_.add_to(*ctx_, args);
    run(*ctx_, fwd_, args);
    y_.finish_output(*ctx_, y);
  }

  void backward(const Tensor& dy, Tensor& dx) override {
    check_cpu_tensor(dy, output_, spec_.who, "output gradient");
    check_cpu_tensor(dx, spec_.input, spec_.who, "input gradient");
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_DIFF_DST, y_.input(*ctx_, dy)},
                                               {DNNL_ARG_DIFF_SRC, x_.output(*ctx_, dx)}};
    workspace_.add_to(*ctx_, args);
    run(*ctx_, bwd_, args);
    x_.finish_output(*ctx_, dx);
  }

 private:
  DnnlContextPtr ctx_;
  PoolingSpec spec_;
  Shape output_;
  dnnl::memory::desc x_desc_, y_desc_;
  Slot x_, y_;  // the input (and its gradient) and the output (and its gradient)
  dnnl::pooling_forward::primitive_desc fwd_pd_;
  dnnl::pooling_backward::primitive_desc bwd_pd_;
  dnnl::primitive fwd_, bwd_;
  Workspace workspace_;  // max pooling: where each maximum came from, for the backward pass
};
}  // namespace

std::unique_ptr<PoolingPlan> make_pooling(DnnlContextPtr ctx, const PoolingSpec& spec) {
  return std::make_unique<OneDnnPooling>(std::move(ctx), spec);
}

}  // namespace dptrain::cpu
