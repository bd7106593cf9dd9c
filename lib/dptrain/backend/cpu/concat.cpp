// Concatenation along channels and its inverse. Each input is a contiguous block per sample, in the
// plain layout and in the blocked layouts alike (whole channel blocks), so when all tensors share a layout both
// directions are one memcpy per (sample, input). Mixed layouts go through plain staging copies.
#include <cstring>
#include <vector>

#include "dptrain/backend/cpu/plans.hpp"

namespace dptrain::cpu {
namespace {
class HostConcat final : public ConcatPlan {
 public:
  HostConcat(DnnlContextPtr ctx, std::span<const Shape> inputs, std::string who)
      : ctx_(std::move(ctx)),
        inputs_(inputs.begin(), inputs.end()),
        who_(std::move(who)),
        output_(concat_output_shape(inputs, who_)),
        staged_(inputs_.size()) {}

  void forward(std::span<const Tensor* const> inputs, Tensor& y) override {
    check_count(inputs.size());
    check_cpu_tensor(y, output_, who_, "output");
    for (std::size_t i = 0; i < inputs.size(); ++i) check_cpu_tensor(*inputs[i], inputs_[i], who_, "input");
    std::vector<const Tensor*> sources(inputs.begin(), inputs.end());
    Tensor* target = &y;
    if (!same_layout(inputs, y)) {
      for (std::size_t i = 0; i < sources.size(); ++i) sources[i] = &plain_copy(i, *sources[i]);
      target = &plain_output();
    }
    for_each_block(sources.size(), [&](std::size_t i, std::int64_t n, std::size_t out_offset, std::size_t count) {
      std::memcpy(target->elements<float>() + out_offset, sources[i]->elements<float>() + n * inputs_[i].per_sample(),
                  count * sizeof(float));
    });
    if (target != &y) reorder_tensor(*ctx_, *target, y);
  }

  void backward(const Tensor& dy, std::span<Tensor* const> dinputs) override {
    check_count(dinputs.size());
    check_cpu_tensor(dy, output_, who_, "output gradient");
    for (std::size_t i = 0; i < dinputs.size(); ++i) check_cpu_tensor(*dinputs[i], inputs_[i], who_, "input gradient");
    const bool same = same_layout(dinputs, dy);
    const Tensor* source = &dy;
    if (!same) {
      reorder_tensor(*ctx_, dy, plain_output());
      source = &plain_output();
    }
    for_each_block(dinputs.size(), [&](std::size_t i, std::int64_t n, std::size_t out_offset, std::size_t count) {
      Tensor& target = same ? *dinputs[i] : plain_staging(i);
      std::memcpy(target.elements<float>() + n * inputs_[i].per_sample(), source->elements<float>() + out_offset,
                  count * sizeof(float));
    });
    if (!same) {
      for (std::size_t i = 0; i < dinputs.size(); ++i) reorder_tensor(*ctx_, plain_staging(i), *dinputs[i]);
    }
  }

 private:
  void check_count(std::size_t count) const {
    DPTRAIN_CHECK(count == inputs_.size(), who_, ": made for ", inputs_.size(), " inputs but given ", count);
  }
  template <typename Tensors>
  static bool same_layout(const Tensors& tensors, const Tensor& other) {
    for (const Tensor* t : tensors) {
      if (t->layout() != other.layout()) return false;
    }
    return true;
  }
  Tensor& plain_staging(std::size_t i) {
    if (!staged_[i].defined() || staged_[i].numel() == 0) staged_[i] = Tensor::empty(inputs_[i]);
    return staged_[i];
  }
  // Input i in the plain layout: itself, or a copy in its staging tensor.
  const Tensor& plain_copy(std::size_t i, const Tensor& t) {
    if (t.layout() == Layout::plain) return t;
    reorder_tensor(*ctx_, t, plain_staging(i));
    return plain_staging(i);
  }
  Tensor& plain_output() {
    if (!staged_output_.defined() || staged_output_.numel() == 0) staged_output_ = Tensor::empty(output_);
    return staged_output_;
  }
  // Calls fn(input, sample, offset in the output, element count) for every contiguous block.
  template <typename Fn>
  void for_each_block(std::size_t count, Fn&& fn) const {
    const std::int64_t per_sample_out = output_.per_sample();
    for (std::int64_t n = 0; n < output_[0]; ++n) {
      std::size_t offset = static_cast<std::size_t>(n * per_sample_out);
      for (std::size_t i = 0; i < count; ++i) {
        const auto block = static_cast<std::size_t>(inputs_[i].per_sample());
        fn(i, n, offset, block);
        offset += block;
      }
    }
  }

  DnnlContextPtr ctx_;
  std::vector<Shape> inputs_;
  std::string who_;
  Shape output_;
  std::vector<Tensor> staged_;  // plain copies, only when layouts are mixed
  Tensor staged_output_;
};
}  // namespace

std::unique_ptr<ConcatPlan> make_concat(DnnlContextPtr ctx, std::span<const Shape> inputs, const std::string& who) {
  return std::make_unique<HostConcat>(std::move(ctx), inputs, who);
}

}  // namespace dptrain::cpu
