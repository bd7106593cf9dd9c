// Fully connected on cuBLAS. Our matrices are row-major and cuBLAS's column-major, and a row-major
// [r, c] matrix is the column-major [c, r] one: so y[N,O] = x[N,F] W[O,F]^T is computed as
// y^T = W x^T with W read transposed, and likewise for the two backward products.
//
// fp32: SGEMM/SGEMV, as always. bf16/fp16: cublasGemmEx with A and B in the low type and
// CUBLAS_COMPUTE_32F (fp32 accumulation, fp32 alpha/beta; tensor cores under the default math mode).
// The forward and backward-data products write the low type (the f32 master weight is converted into
// the plan's low-precision copy at each forward, reused by the backward-data pass of the step); the
// weight gradient is written straight as f32 (Ctype CUDA_R_32F with 16-bit A/B is one of GemmEx's
// COMPUTE_32F combinations). The bias is added, and its gradient summed, by our kernels in fp32.
//
// An NHWC input of more than one pixel (a classifier straight after convolutions) is flattened in the
// NCHW order the weight's columns follow: the plan reads an NCHW copy of x and writes dx through one.
#include <limits>

#include "dptrain/backend/cuda/kernels.hpp"
#include "dptrain/backend/cuda/layout_kernels.hpp"
#include "dptrain/backend/cuda/plans.hpp"
#include "dptrain/backend/cuda/precision_kernels.hpp"

namespace dptrain::cuda {
namespace {
int narrow(std::int64_t value, const std::string& who) {
  DPTRAIN_CHECK(value > 0 && value <= std::numeric_limits<int>::max(), who, ": dimension ", value,
                " does not fit cuBLAS's int");
  return static_cast<int>(value);
}

cudaDataType_t cublas_type(DType type) {
  switch (type) {
    case DType::f32: return CUDA_R_32F;
    case DType::bf16: return CUDA_R_16BF;
    case DType::f16: return CUDA_R_16F;
    default: break;
  }
  throw Error("cuBLAS: no matrix type for " + std::string(name_of(type)));
}

class CublasLinear final : public LinearPlan {
 public:
  CublasLinear(CudaContextPtr ctx, const LinearSpec& spec)
      : ctx_(std::move(ctx)),
        spec_(spec),
        output_(linear_output_shape(spec, spec.who)),
        weight_(linear_weight_shape(spec)),
        bias_(Shape{spec.out_features}),
        type_(ctx_->activation_dtype()) {
    batch_ = narrow(spec.input[0], spec.who);
    in_ = narrow(spec.input.per_sample(), spec.who);
    out_ = spec.out_features;
    if (low()) {
      weight_low_ = ctx_->allocate(weight_, type_);
      const std::int64_t groups = kernels::channel_sum_splits(spec.input[0], out_, 1);
      if (spec.bias && groups > 1) bias_partials_ = ctx_->allocate(Shape{out_ * groups}, DType::f32);
    } else if (spec.bias) {
      ones_ = ctx_->allocate(Shape{spec.input[0]}, DType::f32);
      kernels::fill(device_floats(ones_), ones_.numel(), 1.f, ctx_->stream());
    }
  }

  void forward(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& y) override {
    check_data(x, spec_.input, "input");
    check(weight, weight_, "weight");
    check_data(y, output_, "output");
    if (spec_.bias) check(bias, bias_, "bias");
    const float one = 1.f;
    Tensor plain_x;
    const void* xs = plain_input(x, plain_x);
    if (low()) {
      const float zero = 0.f;
      gemm_ex(CUBLAS_OP_T, CUBLAS_OP_N, out_, batch_, in_, compute_weight(weight, true), in_, xs, in_, &zero, y.raw(),
              type_, out_);
      if (spec_.bias) kernels::add_channel_bias(device_floats(bias), y.raw(), type_, batch_, out_, 1, ctx_->stream());
      return;
    }
    float beta = 0.f;
    if (spec_.bias) {
      kernels::broadcast_rows(device_floats(bias), device_floats(y), batch_, out_, ctx_->stream());
      beta = 1.f;
    }
    DPTRAIN_CUBLAS_CHECK(cublasSgemm(ctx_->cublas(), CUBLAS_OP_T, CUBLAS_OP_N, out_, batch_, in_, &one,
                                     device_floats(weight), in_, static_cast<const float*>(xs), in_, &beta,
                                     device_floats(y), out_));
  }

  void backward_data(const Tensor& dy, const Tensor& weight, Tensor& dx) override {
    check_data(dy, output_, "output gradient");
    check(weight, weight_, "weight");
    check_data(dx, spec_.input, "input gradient");
    const float one = 1.f, zero = 0.f;  // dx^T[F,N] = W^T[F,O] dy^T[O,N]
    Tensor plain_dx = flattens_nhwc() ? ctx_->allocate(spec_.input, type_) : dx;
    if (low()) {
      gemm_ex(CUBLAS_OP_N, CUBLAS_OP_N, in_, batch_, out_, compute_weight(weight, false), in_, dy.raw(), out_, &zero,
              plain_dx.raw(), type_, in_);
    } else {
      DPTRAIN_CUBLAS_CHECK(cublasSgemm(ctx_->cublas(), CUBLAS_OP_N, CUBLAS_OP_N, in_, batch_, out_, &one,
                                       device_floats(weight), in_, device_floats(dy), out_, &zero,
                                       device_floats(plain_dx), in_));
    }
    if (flattens_nhwc()) {
      kernels::transpose_samples(plain_dx.raw(), type_, dx.raw(), type_, spec_.input[0], spec_.input[1], pixels(),
                                 ctx_->stream());
    }
  }

  void backward_weights(const Tensor& x, const Tensor& dy, Tensor& dweight, Tensor& dbias) override {
    check_data(x, spec_.input, "input");
    check_data(dy, output_, "output gradient");
    check(dweight, weight_, "weight gradient");
    if (spec_.bias) check(dbias, bias_, "bias gradient");
    const float one = 1.f, zero = 0.f;  // dW^T[F,O] = x^T[F,N] dy[N,O]
    Tensor plain_x;
    const void* xs = plain_input(x, plain_x);
    if (low()) {
      gemm_ex(CUBLAS_OP_N, CUBLAS_OP_T, in_, out_, batch_, xs, in_, dy.raw(), out_, &zero, dweight.raw(), DType::f32,
              in_);
      // db[O] = the column sums of dy[N,O], in fp32.
      if (spec_.bias) {
        kernels::channel_sums(dy.raw(), type_, device_floats(dbias), device_floats(bias_partials_), batch_, out_, 1,
                              ctx_->stream());
      }
      return;
    }
    DPTRAIN_CUBLAS_CHECK(cublasSgemm(ctx_->cublas(), CUBLAS_OP_N, CUBLAS_OP_T, in_, out_, batch_, &one,
                                     static_cast<const float*>(xs), in_, device_floats(dy), out_, &zero,
                                     device_floats(dweight), in_));
    if (spec_.bias) {  // db[O] = dy^T[O,N] 1[N]
      DPTRAIN_CUBLAS_CHECK(cublasSgemv(ctx_->cublas(), CUBLAS_OP_N, out_, batch_, &one, device_floats(dy), out_,
                                       device_floats(ones_), 1, &zero, device_floats(dbias), 1));
    }
  }

 private:
  bool low() const { return type_ != DType::f32; }
  std::int64_t pixels() const { return spec_.input.rank() == 4 ? spec_.input[2] * spec_.input[3] : 1; }
  // Whether x is NHWC with more than one pixel, so its memory order is not the NCHW features' order.
  bool flattens_nhwc() const { return ctx_->activation_layout(spec_.input) == Layout::nhwc && pixels() > 1; }
  // The input in NCHW order: x itself, or (flattens_nhwc) an NCHW copy made in `scratch` for this call.
  const void* plain_input(const Tensor& x, Tensor& scratch) const {
    if (!flattens_nhwc()) return x.raw();
    scratch = ctx_->allocate(spec_.input, type_);
    kernels::transpose_samples(x.raw(), type_, scratch.raw(), type_, spec_.input[0], pixels(), spec_.input[1],
                               ctx_->stream());
    return scratch.raw();
  }
  void check(const Tensor& t, const Shape& shape, const char* what) const {
    check_device_tensor(*ctx_, t, shape, spec_.who, what);
  }
  void check_data(const Tensor& t, const Shape& shape, const char* what) const {
    check_activation(*ctx_, t, shape, spec_.who, what);
  }
  // C[m,n] = A B (after the ops) with A and B of the activation type, C of `c_type`, fp32 compute.
  void gemm_ex(cublasOperation_t op_a, cublasOperation_t op_b, int m, int n, int k, const void* a, int lda,
               const void* b, int ldb, const float* beta, void* c, DType c_type, int ldc) {
    const float one = 1.f;
    const cudaDataType_t ab = cublas_type(type_);
    DPTRAIN_CUBLAS_CHECK(cublasGemmEx(ctx_->cublas(), op_a, op_b, m, n, k, &one, a, ab, lda, b, ab, ldb, beta, c,
                                      cublas_type(c_type), ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
  // See convolution.cpp: the forward refreshes the low-precision copy, backward-data reuses it.
  const void* compute_weight(const Tensor& weight, bool refresh) {
    if (refresh || converted_from_ != weight.raw()) {
      kernels::convert(weight.raw(), DType::f32, weight_low_.raw(), type_, weight.numel(), ctx_->stream());
      converted_from_ = weight.raw();
    }
    return weight_low_.raw();
  }

  CudaContextPtr ctx_;
  LinearSpec spec_;
  Shape output_, weight_, bias_;
  DType type_;
  int batch_ = 0, in_ = 0, out_ = 0;
  Tensor ones_;           // fp32, [N] ones: the bias gradient is dy summed over the batch, a matrix-vector product
  Tensor weight_low_;     // bf16/f16: the compute copy of the weight
  Tensor bias_partials_;  // bf16/f16 with a bias: the bias gradient's partial sums
  const void* converted_from_ = nullptr;
};
}  // namespace

std::unique_ptr<LinearPlan> make_linear(CudaContextPtr ctx, const LinearSpec& spec) {
  return std::make_unique<CublasLinear>(std::move(ctx), spec);
}

}  // namespace dptrain::cuda
