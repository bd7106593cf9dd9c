// Batch normalization on the GPU (spatial mode: statistics per channel over N, H and W), in two
// implementations; DPTRAIN_BATCH_NORM picks one when a plan is made (batch_norm_policy.hpp). Scale,
// shift, statistics and their gradients are f32 in every precision.
//
// Our kernels (batch_norm_kernels.hpp): the default for bf16 and fp16 activations, and for every
// precision with DPTRAIN_BATCH_NORM=own. The batch's mean and biased variance come straight from a
// fixed-order reduction (the same bits at every run), x and dy are read in their own 16-bit type and y
// and dx written in it, all arithmetic fp32: about 16 bytes moved per element of a training step. The
// backward pass recomputes 1/sqrt(variance + epsilon) from the statistics it is handed. The workspace
// (the reductions' partials, per-channel coefficients) is allocated once, with the plan.
//
// cuDNN (its legacy API, deprecated in cuDNN 9): the default for fp32, and for every precision with
// DPTRAIN_BATCH_NORM=cudnn. cuDNN returns the batch statistics only as a running average, with the
// unbiased variance; the interface wants the batch's mean and biased variance. So the plan zeroes two
// buffers, asks for a running average with factor 1 (which is then exactly the batch's), and rescales
// the variance by (m - 1) / m. The backward pass is handed the mean and the inverse standard deviation
// computed from the statistics it is given, so it does not depend on state kept from the forward pass.
// fp16: x, y, dx and dy are HALF with the FLOAT per-channel descriptor, the mixed configuration cuDNN's
// spatial batch norm has documented since it first took half data. bf16: the same, natively, where a
// probe at first use finds that cuDNN accepts BFLOAT16 data and agrees with its f32 path
// (batch_norm_bf16.hpp, DPTRAIN_BF16_BATCH_NORM); otherwise the plan widens x (and dy) into f32
// scratch, runs the f32 routine and rounds y (or dx) back: extra passes over memory, the same
// statistics an fp32 run would compute from the bf16 activations.
#include <algorithm>

#include "dptrain/backend/cuda/batch_norm_bf16.hpp"
#include "dptrain/backend/cuda/batch_norm_kernels.hpp"
#include "dptrain/backend/cuda/batch_norm_policy.hpp"
#include "dptrain/backend/cuda/descriptors.hpp"
#include "dptrain/backend/cuda/kernels.hpp"
#include "dptrain/backend/cuda/plans.hpp"
#include "dptrain/backend/cuda/precision_kernels.hpp"

namespace dptrain::cuda {
namespace {
constexpr cudnnBatchNormMode_t kMode = CUDNN_BATCHNORM_SPATIAL;

// What both implementations check: the spec, and every tensor handed to a pass.
class CheckedBatchNorm : public BatchNormPlan {
 protected:
  CheckedBatchNorm(CudaContextPtr ctx, const BatchNormSpec& spec)
      : ctx_(std::move(ctx)), spec_(spec), channel_(Shape{spec.input.rank() >= 2 ? spec.input[1] : 0}) {
    DPTRAIN_CHECK(spec.input.rank() == 4, spec.who, ": input must be 4-D [N,C,H,W] but has shape ",
                  spec.input.to_string());
    DPTRAIN_CHECK(spec.epsilon > 0.f, spec.who, ": epsilon must be positive, not ", spec.epsilon);
    type_ = ctx_->activation_dtype();
  }

  void check_data(const Tensor& t, const char* what) const { check_activation(*ctx_, t, spec_.input, spec_.who, what); }
  void check_channel(const Tensor& t, const char* what) const {
    check_device_tensor(*ctx_, t, channel_, spec_.who, what);
  }
  void check_forward_training(const Tensor& x, const Tensor& scale, const Tensor& shift, const Tensor& y,
                              const Tensor& batch_mean, const Tensor& batch_variance) const {
    check_data(x, "input");
    check_data(y, "output");
    check_channel(scale, "scale");
    check_channel(shift, "shift");
    check_channel(batch_mean, "batch mean");
    check_channel(batch_variance, "batch variance");
    DPTRAIN_CHECK(values_per_channel() > 1, spec_.who, ": input of shape ", spec_.input.to_string(),
                  " has one value per channel; training needs more for batch statistics");
  }
  void check_forward_inference(const Tensor& x, const Tensor& scale, const Tensor& shift, const Tensor& mean,
                               const Tensor& variance, const Tensor& y) const {
    check_data(x, "input");
    check_data(y, "output");
    check_channel(scale, "scale");
    check_channel(shift, "shift");
    check_channel(mean, "running mean");
    check_channel(variance, "running variance");
  }
  void check_backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& scale, const Tensor& batch_mean,
                      const Tensor& batch_variance, const Tensor& dx, const Tensor& dscale,
                      const Tensor& dshift) const {
    check_data(x, "input");
    if (spec_.fuse_relu_backward) check_data(y, "output");
    check_data(dy, "output gradient");
    check_data(dx, "input gradient");
    check_channel(scale, "scale");
    check_channel(batch_mean, "batch mean");
    check_channel(batch_variance, "batch variance");
    check_channel(dscale, "scale gradient");
    check_channel(dshift, "shift gradient");
  }
  std::int64_t values_per_channel() const { return spec_.input[0] * spec_.input[2] * spec_.input[3]; }

  CudaContextPtr ctx_;
  BatchNormSpec spec_;
  Shape channel_;
  DType type_ = DType::f32;
};

// Our kernels, in the activation type itself.
class OwnBatchNorm final : public CheckedBatchNorm {
 public:
  OwnBatchNorm(CudaContextPtr ctx, const BatchNormSpec& spec)
      : CheckedBatchNorm(std::move(ctx), spec),
        shape_{spec_.input[0], spec_.input[1], spec_.input[2] * spec_.input[3],
               ctx_->activation_layout(spec_.input) == Layout::nhwc},
        workspace_(ctx_->allocate(Shape{std::max<std::int64_t>(1, kernels::batch_norm_workspace_floats(shape_, type_))},
                                  DType::f32)) {}

  void forward_training(const Tensor& x, const Tensor& scale, const Tensor& shift, Tensor& y, Tensor& batch_mean,
                        Tensor& batch_variance) override {
    check_forward_training(x, scale, shift, y, batch_mean, batch_variance);
    kernels::batch_norm_forward_training(x.raw(), /*z=*/nullptr, y.raw(), type_, shape_, device_floats(scale),
                                         device_floats(shift), spec_.epsilon, activation(), device_floats(batch_mean),
                                         device_floats(batch_variance), device_floats(workspace_), ctx_->stream());
  }

  void forward_inference(const Tensor& x, const Tensor& scale, const Tensor& shift, const Tensor& mean,
                         const Tensor& variance, Tensor& y) override {
    check_forward_inference(x, scale, shift, mean, variance, y);
    kernels::batch_norm_forward_inference(x.raw(), /*z=*/nullptr, y.raw(), type_, shape_, device_floats(scale),
                                          device_floats(shift), device_floats(mean), device_floats(variance),
                                          spec_.epsilon, activation(), device_floats(workspace_), ctx_->stream());
  }

  // A fused ReLU's backward (spec_.fuse_relu_backward) is the kernel's mask: g = y > 0 ? dy : 0.
  void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& scale, const Tensor& /*shift*/,
                const Tensor& batch_mean, const Tensor& batch_variance, Tensor& dx, Tensor& dscale,
                Tensor& dshift) override {
    check_backward(x, y, dy, scale, batch_mean, batch_variance, dx, dscale, dshift);
    DPTRAIN_CHECK(values_per_channel() > 0, spec_.who, ": input of shape ", spec_.input.to_string(),
                  " has no values per channel");
    const void* relu_output = spec_.fuse_relu_backward ? y.raw() : nullptr;
    kernels::batch_norm_backward(x.raw(), dy.raw(), relu_output, dx.raw(), /*masked_dy=*/nullptr, type_, shape_,
                                 device_floats(scale), device_floats(batch_mean), device_floats(batch_variance),
                                 spec_.epsilon, device_floats(dscale), device_floats(dshift), device_floats(workspace_),
                                 ctx_->stream());
  }

  // The residual join in the kernels' own passes: the forward adds z before its ReLU (y rounded once),
  // the backward masks dy by y > 0 while it reads it and writes that masked gradient into dz in the
  // input-gradient pass. Against the composed join this saves a read and a write of y in the forward
  // and a read of y and dy in the backward.
  bool joins_residual() const override { return !spec_.fuse_relu; }

  void forward_training_join(const Tensor& x, const Tensor& z, const Tensor& scale, const Tensor& shift, Tensor& y,
                             Tensor& batch_mean, Tensor& batch_variance) override {
    check_forward_training(x, scale, shift, y, batch_mean, batch_variance);
    check_data(z, "residual");
    kernels::batch_norm_forward_training(x.raw(), z.raw(), y.raw(), type_, shape_, device_floats(scale),
                                         device_floats(shift), spec_.epsilon, kernels::BatchNormActivation::add_relu,
                                         device_floats(batch_mean), device_floats(batch_variance),
                                         device_floats(workspace_), ctx_->stream());
  }

  void forward_inference_join(const Tensor& x, const Tensor& z, const Tensor& scale, const Tensor& shift,
                              const Tensor& mean, const Tensor& variance, Tensor& y) override {
    check_forward_inference(x, scale, shift, mean, variance, y);
    check_data(z, "residual");
    kernels::batch_norm_forward_inference(x.raw(), z.raw(), y.raw(), type_, shape_, device_floats(scale),
                                          device_floats(shift), device_floats(mean), device_floats(variance),
                                          spec_.epsilon, kernels::BatchNormActivation::add_relu,
                                          device_floats(workspace_), ctx_->stream());
  }

  void backward_join(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& scale, const Tensor& batch_mean,
                     const Tensor& batch_variance, Tensor& dx, Tensor& dz, Tensor& dscale, Tensor& dshift) override {
    check_data(y, "output");
    check_data(dz, "residual gradient");
    check_backward(x, y, dy, scale, batch_mean, batch_variance, dx, dscale, dshift);
    // dz is written element by element after that element's dy is read; dx must be another tensor.
    DPTRAIN_CHECK(dz.raw() != dx.raw(), spec_.who, ": the residual's gradient and the input's must not alias");
    kernels::batch_norm_backward(x.raw(), dy.raw(), y.raw(), dx.raw(), dz.raw(), type_, shape_, device_floats(scale),
                                 device_floats(batch_mean), device_floats(batch_variance), spec_.epsilon,
                                 device_floats(dscale), device_floats(dshift), device_floats(workspace_),
                                 ctx_->stream());
  }

 private:
  // A fused ReLU (BatchNormSpec::fuse_relu) is applied in the normalisation's own pass.
  kernels::BatchNormActivation activation() const {
    return spec_.fuse_relu ? kernels::BatchNormActivation::relu : kernels::BatchNormActivation::none;
  }

  kernels::BatchNormShape shape_;
  Tensor workspace_;  // batch_norm_workspace_floats(shape_, type_): reused by every pass, in stream order
};

// cuDNN's legacy batch norm.
class CudnnBatchNorm final : public CheckedBatchNorm {
 public:
  CudnnBatchNorm(CudaContextPtr ctx, const BatchNormSpec& spec) : CheckedBatchNorm(std::move(ctx), spec) {
    widen_ = type_ == DType::bf16 && !bf16_batch_norm_native(*ctx_);
    // NHWC activations (backend/gpu_layout.hpp) are described as such; the widened f32 scratch copies
    // them element for element, so it is in the same layout.
    x_desc_ =
        activation_descriptor(spec.input, widen_ ? DType::f32 : type_, ctx_->activation_layout(spec.input), spec.who);
    c_desc_ = channel_descriptor(channel_[0]);
    inverse_std_ = ctx_->allocate(channel_, DType::f32);
  }

  void forward_training(const Tensor& x, const Tensor& scale, const Tensor& shift, Tensor& y, Tensor& batch_mean,
                        Tensor& batch_variance) override {
    check_forward_training(x, scale, shift, y, batch_mean, batch_variance);
    const std::int64_t m = values_per_channel();
    DPTRAIN_CUDA_CHECK(cudaMemsetAsync(batch_mean.raw(), 0, batch_mean.bytes(), ctx_->stream()));
    DPTRAIN_CUDA_CHECK(cudaMemsetAsync(batch_variance.raw(), 0, batch_variance.bytes(), ctx_->stream()));
    const float one = 1.f, zero = 0.f;
    Tensor wide_x = scratch(), wide_y = scratch();
    const void* x_in = widened(x, wide_x);
    void* y_out = output_of(y, wide_y);
    DPTRAIN_CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(
        ctx_->cudnn(), kMode, &one, &zero, x_desc_, x_in, x_desc_, y_out, c_desc_, scale.raw(), shift.raw(),
        /*exponentialAverageFactor=*/1.0, batch_mean.raw(), batch_variance.raw(), epsilon(),
        /*resultSaveMean=*/nullptr, /*resultSaveInvVariance=*/nullptr));
    narrowed(wide_y, y);
    fused_relu(y);
    const float biased = static_cast<float>(m - 1) / static_cast<float>(m);
    kernels::axpby(biased, device_floats(batch_variance), 0.f, device_floats(batch_variance), channel_[0],
                   ctx_->stream());
  }

  void forward_inference(const Tensor& x, const Tensor& scale, const Tensor& shift, const Tensor& mean,
                         const Tensor& variance, Tensor& y) override {
    check_forward_inference(x, scale, shift, mean, variance, y);
    const float one = 1.f, zero = 0.f;
    Tensor wide_x = scratch(), wide_y = scratch();
    const void* x_in = widened(x, wide_x);
    void* y_out = output_of(y, wide_y);
    DPTRAIN_CUDNN_CHECK(cudnnBatchNormalizationForwardInference(ctx_->cudnn(), kMode, &one, &zero, x_desc_, x_in,
                                                                x_desc_, y_out, c_desc_, scale.raw(), shift.raw(),
                                                                mean.raw(), variance.raw(), epsilon()));
    narrowed(wide_y, y);
    fused_relu(y);
  }

  // A fused ReLU's backward (spec_.fuse_relu_backward): our relu_backward masks dy into scratch first.
  void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& scale, const Tensor& /*shift*/,
                const Tensor& batch_mean, const Tensor& batch_variance, Tensor& dx, Tensor& dscale,
                Tensor& dshift) override {
    check_backward(x, y, dy, scale, batch_mean, batch_variance, dx, dscale, dshift);
    Tensor masked;
    const Tensor* gradient = &dy;
    if (spec_.fuse_relu_backward) {
      masked = ctx_->allocate_activation(spec_.input);
      kernels::relu_backward(y.raw(), dy.raw(), masked.raw(), type_, dy.numel(), ctx_->stream());
      gradient = &masked;
    }
    kernels::inverse_std(device_floats(batch_variance), static_cast<float>(epsilon()), device_floats(inverse_std_),
                         channel_[0], ctx_->stream());
    const float one = 1.f, zero = 0.f;
    Tensor wide_x = scratch(), wide_dy = scratch(), wide_dx = scratch();
    const void* x_in = widened(x, wide_x);
    const void* dy_in = widened(*gradient, wide_dy);
    void* dx_out = output_of(dx, wide_dx);
    DPTRAIN_CUDNN_CHECK(cudnnBatchNormalizationBackward(
        ctx_->cudnn(), kMode, &one, &zero, &one, &zero, x_desc_, x_in, x_desc_, dy_in, x_desc_, dx_out, c_desc_,
        scale.raw(), dscale.raw(), dshift.raw(), epsilon(), batch_mean.raw(), inverse_std_.raw()));
    narrowed(wide_dx, dx);
  }

 private:
  // CUDNN_BN_MIN_EPSILON is 0 in cuDNN 9 (cuDNN 8 had the double 1e-5, which the float 1e-5,
  // 9.99999975e-06, fell just short of); the clamp keeps a build against cuDNN 8 working.
  double epsilon() const { return std::max<double>(spec_.epsilon, CUDNN_BN_MIN_EPSILON); }
  // bf16 scratch of the input's shape in f32, for one call: the caching allocator reuses blocks in
  // stream order, so it costs no allocation after the first step and no memory between calls.
  Tensor scratch() const { return widen_ ? ctx_->allocate(spec_.input, DType::f32) : Tensor(); }
  // bf16: `t` widened into `wide`; otherwise `t` itself.
  const void* widened(const Tensor& t, Tensor& wide) const {
    if (!widen_) return t.raw();
    kernels::convert(t.raw(), type_, wide.raw(), DType::f32, t.numel(), ctx_->stream());
    return wide.raw();
  }
  // A fused ReLU (BatchNormSpec::fuse_relu): cuDNN's legacy batch norm has none, so a pass of our own
  // over the output in place.
  void fused_relu(Tensor& y) const {
    if (spec_.fuse_relu) kernels::relu_forward(y.raw(), y.raw(), type_, y.numel(), ctx_->stream());
  }
  // bf16: where cuDNN writes (`wide`), rounded into `t` afterwards by narrowed(); otherwise `t`.
  void* output_of(Tensor& t, Tensor& wide) const { return widen_ ? wide.raw() : t.raw(); }
  void narrowed(const Tensor& wide, Tensor& t) const {
    if (widen_) kernels::convert(wide.raw(), DType::f32, t.raw(), type_, t.numel(), ctx_->stream());
  }

  TensorDescriptor x_desc_, c_desc_;
  Tensor inverse_std_;  // 1 / sqrt(variance + epsilon), what cuDNN's backward reads
  bool widen_ = false;  // bf16 where cuDNN's native path failed its probe: run in f32 on widened copies
};
}  // namespace

std::unique_ptr<BatchNormPlan> make_batch_norm(CudaContextPtr ctx, const BatchNormSpec& spec) {
  if (uses_own_batch_norm(batch_norm_policy(), ctx->activation_dtype())) {
    return std::make_unique<OwnBatchNorm>(std::move(ctx), spec);
  }
  return std::make_unique<CudnnBatchNorm>(std::move(ctx), spec);
}

}  // namespace dptrain::cuda
