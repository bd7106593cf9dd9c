// Concatenation along channels and its inverse as strided copies: in NCHW each input is one
// contiguous block per sample, so each direction is one cudaMemcpy2DAsync per input (rows = samples,
// the pitch of the output's sample). In NHWC the same holds per pixel: rows = N * H * W, each input's
// C_i channels one block, the output's C channels the pitch.
#include <vector>

#include "dptrain/backend/cuda/plans.hpp"

namespace dptrain::cuda {
namespace {
class CopyConcat final : public ConcatPlan {
 public:
  CopyConcat(CudaContextPtr ctx, std::span<const Shape> inputs, std::string who)
      : ctx_(std::move(ctx)),
        inputs_(inputs.begin(), inputs.end()),
        who_(std::move(who)),
        output_(concat_output_shape(inputs, who_)) {}

  void forward(std::span<const Tensor* const> inputs, Tensor& y) override {
    check_count(inputs.size());
    check_activation(*ctx_, y, output_, who_, "output");
    std::size_t offset = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      check_activation(*ctx_, *inputs[i], inputs_[i], who_, "input");
      const std::size_t block = block_bytes(i);
      DPTRAIN_CUDA_CHECK(cudaMemcpy2DAsync(static_cast<char*>(y.raw()) + offset, out_pitch(), inputs[i]->raw(), block,
                                           block, rows(), cudaMemcpyDeviceToDevice, ctx_->stream()));
      offset += block;
    }
  }

  void backward(const Tensor& dy, std::span<Tensor* const> dinputs) override {
    check_count(dinputs.size());
    check_activation(*ctx_, dy, output_, who_, "output gradient");
    std::size_t offset = 0;
    for (std::size_t i = 0; i < dinputs.size(); ++i) {
      check_activation(*ctx_, *dinputs[i], inputs_[i], who_, "input gradient");
      const std::size_t block = block_bytes(i);
      DPTRAIN_CUDA_CHECK(cudaMemcpy2DAsync(dinputs[i]->raw(), block, static_cast<const char*>(dy.raw()) + offset,
                                           out_pitch(), block, rows(), cudaMemcpyDeviceToDevice, ctx_->stream()));
      offset += block;
    }
  }

 private:
  void check_count(std::size_t count) const {
    DPTRAIN_CHECK(count == inputs_.size(), who_, ": made for ", inputs_.size(), " inputs but given ", count);
  }
  bool nhwc() const { return ctx_->activation_layout(output_) == Layout::nhwc; }
  // The elements of one row of an input (or of the output): a sample in NCHW, a pixel in NHWC.
  std::int64_t row_elements(const Shape& s) const { return nhwc() ? s[1] : s.per_sample(); }
  std::size_t block_bytes(std::size_t i) const {
    return static_cast<std::size_t>(row_elements(inputs_[i])) * element_size();
  }
  std::size_t out_pitch() const { return static_cast<std::size_t>(row_elements(output_)) * element_size(); }
  std::size_t element_size() const { return size_of(ctx_->activation_dtype()); }  // 4, or 2 in bf16/fp16
  std::size_t rows() const {
    return static_cast<std::size_t>(nhwc() ? output_[0] * output_[2] * output_[3] : output_[0]);
  }

  CudaContextPtr ctx_;
  std::vector<Shape> inputs_;
  std::string who_;
  Shape output_;
};
}  // namespace

std::unique_ptr<ConcatPlan> make_concat(CudaContextPtr ctx, std::span<const Shape> inputs, const std::string& who) {
  return std::make_unique<CopyConcat>(std::move(ctx), inputs, who);
}

}  // namespace dptrain::cuda
