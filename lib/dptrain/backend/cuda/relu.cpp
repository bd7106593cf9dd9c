// ReLU on our element-wise kernels: the backward pass reads the output (so the forward may run in
// place), which cuDNN's activation backward, wanting the input too, would not allow as cleanly.
#include "dptrain/backend/cuda/kernels.hpp"
#include "dptrain/backend/cuda/plans.hpp"

namespace dptrain::cuda {
namespace {
class KernelRelu final : public ReluPlan {
 public:
  KernelRelu(CudaContextPtr ctx, const Shape& shape, std::string who)
      : ctx_(std::move(ctx)), shape_(shape), who_(std::move(who)) {}

  void forward(const Tensor& x, Tensor& y) override {
    check_activation(*ctx_, x, shape_, who_, "input");
    check_activation(*ctx_, y, shape_, who_, "output");
    kernels::relu_forward(x.raw(), y.raw(), y.dtype(), shape_.numel(), ctx_->stream());
  }

  void backward(const Tensor& y, const Tensor& dy, Tensor& dx) override {
    check_activation(*ctx_, y, shape_, who_, "output");
    check_activation(*ctx_, dy, shape_, who_, "output gradient");
    check_activation(*ctx_, dx, shape_, who_, "input gradient");
    kernels::relu_backward(y.raw(), dy.raw(), dx.raw(), dx.dtype(), shape_.numel(), ctx_->stream());
  }

 private:
  CudaContextPtr ctx_;
  Shape shape_;
  std::string who_;
};
}  // namespace

std::unique_ptr<ReluPlan> make_relu(CudaContextPtr ctx, const Shape& shape, const std::string& who) {
  return std::make_unique<KernelRelu>(std::move(ctx), shape, who);
}

}  // namespace dptrain::cuda
