// Fully connected on cuBLAS. Our matrices are row-major and cuBLAS's column-major, and a row-major
// [r, c] matrix is the column-major [c, r] one: so y[N,O] = x[N,F] W[O,F]^T is computed as
// y^T = W x^T with W read transposed, and likewise for the two backward products.
#include <limits>

#include "dptrain/backend/cuda/kernels.hpp"
#include "dptrain/backend/cuda/plans.hpp"

namespace dptrain::cuda {
namespace {
int narrow(std::int64_t value, const std::string& who) {
  DPTRAIN_CHECK(value > 0 && value <= std::numeric_limits<int>::max(), who, ": dimension ", value,
                " does not fit cuBLAS's int");
  return static_cast<int>(value);
}

class CublasLinear final : public LinearPlan {
 public:
  CublasLinear(CudaContextPtr ctx, const LinearSpec& spec)
      : ctx_(std::move(ctx)),
        spec_(spec),
        output_(linear_output_shape(spec, spec.who)),
        weight_(linear_weight_shape(spec)),
        bias_(Shape{spec.out_features}) {
    batch_ = narrow(spec.input[0], spec.who);
    in_ = narrow(spec.input.per_sample(), spec.who);
    out_ = spec.out_features;
    if (spec.bias) {
      ones_ = ctx_->allocate(Shape{spec.input[0]}, DType::f32);
      kernels::fill(device_floats(ones_), ones_.numel(), 1.f, ctx_->stream());
    }
  }

  void forward(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& y) override {
    check(x, spec_.input, "input");
    check(weight, weight_, "weight");
    check(y, output_, "output");
    float beta = 0.f;
    if (spec_.bias) {
      check(bias, bias_, "bias");
      kernels::broadcast_rows(device_floats(bias), device_floats(y), batch_, out_, ctx_->stream());
      beta = 1.f;
    }
    const float one = 1.f;
    CUBLAS_CHECK(cublasSgemm(ctx_->cublas(), CUBLAS_OP_T, CUBLAS_OP_N, out_, batch_, in_, &one, device_floats(weight),
                             in_, device_floats(x), in_, &beta, device_floats(y), out_));
  }

  void backward_data(const Tensor& dy, const Tensor& weight, Tensor& dx) override {
    check(dy, output_, "output gradient");
    check(weight, weight_, "weight");
    check(dx, spec_.input, "input gradient");
    const float one = 1.f, zero = 0.f;  // dx^T[F,N] = W^T[F,O] dy^T[O,N]
    CUBLAS_CHECK(cublasSgemm(ctx_->cublas(), CUBLAS_OP_N, CUBLAS_OP_N, in_, batch_, out_, &one, device_floats(weight),
                             in_, device_floats(dy), out_, &zero, device_floats(dx), in_));
  }

  void backward_weights(const Tensor& x, const Tensor& dy, Tensor& dweight, Tensor& dbias) override {
    check(x, spec_.input, "input");
    check(dy, output_, "output gradient");
    check(dweight, weight_, "weight gradient");
    const float one = 1.f, zero = 0.f;  // dW^T[F,O] = x^T[F,N] dy[N,O]
    CUBLAS_CHECK(cublasSgemm(ctx_->cublas(), CUBLAS_OP_N, CUBLAS_OP_T, in_, out_, batch_, &one, device_floats(x), in_,
                             device_floats(dy), out_, &zero, device_floats(dweight), in_));
    if (spec_.bias) {
      check(dbias, bias_, "bias gradient");  // db[O] = dy^T[O,N] 1[N]
      CUBLAS_CHECK(cublasSgemv(ctx_->cublas(), CUBLAS_OP_N, out_, batch_, &one, device_floats(dy), out_,
                               device_floats(ones_), 1, &zero, device_floats(dbias), 1));
    }
  }

 private:
  void check(const Tensor& t, const Shape& shape, const char* what) const {
    check_device_tensor(*ctx_, t, shape, spec_.who, what);
  }

  CudaContextPtr ctx_;
  LinearSpec spec_;
  Shape output_, weight_, bias_;
  int batch_ = 0, in_ = 0, out_ = 0;
  Tensor ones_;  // [N] ones: the bias gradient is dy summed over the batch, a matrix-vector product
};
}  // namespace

std::unique_ptr<LinearPlan> make_linear(CudaContextPtr ctx, const LinearSpec& spec) {
  return std::make_unique<CublasLinear>(std::move(ctx), spec);
}

}  // namespace dptrain::cuda
