#include "dptrain/layers/batch_norm.hpp"

#include "dptrain/layers/initializers.hpp"

namespace dptrain {

BatchNorm::BatchNorm(std::string name, float epsilon, float momentum, BatchNormJoin join)
    : Layer(std::move(name)), momentum_(momentum), join_(join) {
  spec_.epsilon = epsilon;
  DPTRAIN_CHECK(momentum > 0.f && momentum <= 1.f, who(), ": momentum must be in (0, 1], not ", momentum);
}

Shape BatchNorm::setup(std::span<const Shape> inputs, Backend& backend) {
  spec_.who = who();
  const bool joins = join_ == BatchNormJoin::add_relu;
  check_input_count(inputs, joins ? 2 : 1);
  DPTRAIN_CHECK(inputs[0].rank() == 4, who(), ": input must be 4-D [N,C,H,W] but has shape ", inputs[0].to_string());
  DPTRAIN_CHECK(!joins || inputs[1] == inputs[0], who(), ": the residual has shape ", inputs[joins ? 1 : 0].to_string(),
                ", the input ", inputs[0].to_string(), "; they must be equal");
  spec_.input = inputs[0];
  backend_ = &backend;
  plan_ = backend.make_batch_norm(spec_);
  // A plan that joins the residual in its own passes needs no ReLU plan of the layer's.
  relu_.reset();
  if (joins && !plan_->joins_residual()) relu_ = backend.make_relu(spec_.input, who());
  const Shape channels{spec_.input[1]};
  params_.clear();
  params_.push_back(make_parameter(backend, name() + "/scale", channels, false));
  params_.push_back(make_parameter(backend, name() + "/shift", channels, false));
  buffers_.clear();
  buffers_.push_back({name() + "/running_mean", backend.allocate(channels)});
  buffers_.push_back({name() + "/running_variance", backend.allocate(channels)});
  batch_mean_ = backend.allocate(channels);
  batch_variance_ = backend.allocate(channels);
  initialize(0);
  return spec_.input;
}

void BatchNorm::forward(const PassContext& ctx, std::span<const Tensor* const> inputs, Tensor& output) {
  const Tensor& x = *inputs[0];
  check_input(x, spec_.input, 0);
  const bool in_plan = join_ == BatchNormJoin::add_relu && plan_->joins_residual();
  if (in_plan) check_input(*inputs[1], spec_.input, 1);
  if (!ctx.training) {
    if (in_plan) {
      plan_->forward_inference_join(x, *inputs[1], scale().value, shift().value, running_mean(), running_variance(),
                                    output);
    } else {
      plan_->forward_inference(x, scale().value, shift().value, running_mean(), running_variance(), output);
      join(inputs, output);
    }
    return;
  }
  if (in_plan) {
    plan_->forward_training_join(x, *inputs[1], scale().value, shift().value, output, batch_mean_, batch_variance_);
  } else {
    plan_->forward_training(x, scale().value, shift().value, output, batch_mean_, batch_variance_);
    join(inputs, output);
  }
  const double count = static_cast<double>(spec_.input[0] * spec_.input[2] * spec_.input[3]);
  const auto unbiased = static_cast<float>(count / (count - 1.0));
  backend_->axpby(momentum_, batch_mean_, 1.f - momentum_, running_mean());
  backend_->axpby(momentum_ * unbiased, batch_variance_, 1.f - momentum_, running_variance());
}

void BatchNorm::join(std::span<const Tensor* const> inputs, Tensor& output) {
  if (join_ != BatchNormJoin::add_relu) return;
  check_input(*inputs[1], spec_.input, 1);
  backend_->add_relu(output, *inputs[1], output);  // in place: one more pass over the output
}

void BatchNorm::backward(std::span<const Tensor* const> inputs, const Tensor& output, const Tensor& doutput,
                         std::span<Tensor* const> dinputs) {
  check_input(*inputs[0], spec_.input, 0);
  // A residual join: the ReLU's mask, written once into z's gradient (the sum's gradient for both of
  // its inputs), is the gradient the normalisation's backward starts from.
  const Tensor* gradient = &doutput;
  Tensor* dz = nullptr;
  if (join_ == BatchNormJoin::add_relu) {
    dz = dinputs[1];
    if (dz == nullptr) {
      if (!unused_dz_.defined()) unused_dz_ = backend_->allocate_activation(spec_.input);
      dz = &unused_dz_;
    }
  }
  // oneDNN always computes the input gradient; when nobody wants it, it lands in a scratch tensor.
  Tensor* dx = dinputs[0];
  if (dx == nullptr) {
    if (!unused_dx_.defined() || unused_dx_.shape() != spec_.input) {
      unused_dx_ = backend_->allocate_activation(spec_.input);
    }
    dx = &unused_dx_;
  }
  if (dz != nullptr && plan_->joins_residual()) {
    plan_->backward_join(*inputs[0], output, doutput, scale().value, batch_mean_, batch_variance_, *dx, *dz,
                         scale().grad, shift().grad);
    return;
  }
  if (dz != nullptr) {
    relu_->backward(output, doutput, *dz);
    gradient = dz;
  }
  plan_->backward(*inputs[0], output, *gradient, scale().value, shift().value, batch_mean_, batch_variance_, *dx,
                  scale().grad, shift().grad);
}

bool BatchNorm::fuse_relu() {
  if (join_ != BatchNormJoin::none) return false;  // its output has had its ReLU
  if (!spec_.fuse_relu) {
    spec_.fuse_relu = true;
    plan_ = backend_->make_batch_norm(spec_);
  }
  return true;
}

void BatchNorm::fuse_relu_backward() {
  DPTRAIN_CHECK(spec_.fuse_relu, who(), ": a ReLU's backward is fused only after its forward");
  if (!spec_.fuse_relu_backward) {
    spec_.fuse_relu_backward = true;
    plan_ = backend_->make_batch_norm(spec_);
  }
}

void BatchNorm::initialize(std::uint64_t) {
  init_constant(*backend_, scale().value, 1.f);
  init_constant(*backend_, shift().value, 0.f);
  init_constant(*backend_, running_mean(), 0.f);
  init_constant(*backend_, running_variance(), 1.f);
}

}  // namespace dptrain
