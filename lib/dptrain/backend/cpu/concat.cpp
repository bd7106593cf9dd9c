// Concatenation along channels and its inverse. Each input is a contiguous block per sample, so both
// directions are one memcpy per (sample, input): memory-bound, nothing for oneDNN to add.
#include <cstring>
#include <vector>

#include "dptrain/backend/cpu/plans.hpp"

namespace dptrain::cpu {
namespace {
class HostConcat final : public ConcatPlan {
 public:
  HostConcat(std::span<const Shape> inputs, std::string who)
      : inputs_(inputs.begin(), inputs.end()), who_(std::move(who)), output_(concat_output_shape(inputs, who_)) {}

  void forward(std::span<const Tensor* const> inputs, Tensor& y) override {
    check_count(inputs.size());
    check_cpu_tensor(y, output_, who_, "output");
    for_each_block(inputs.size(), [&](std::size_t i, std::int64_t n, std::size_t out_offset, std::size_t count) {
      check_once(*inputs[i], i, n, "input");
      std::memcpy(y.data<float>() + out_offset, inputs[i]->data<float>() + n * inputs_[i].per_sample(),
                  count * sizeof(float));
    });
  }

  void backward(const Tensor& dy, std::span<Tensor* const> dinputs) override {
    check_count(dinputs.size());
    check_cpu_tensor(dy, output_, who_, "output gradient");
    for_each_block(dinputs.size(), [&](std::size_t i, std::int64_t n, std::size_t out_offset, std::size_t count) {
      check_once(*dinputs[i], i, n, "input gradient");
      std::memcpy(dinputs[i]->data<float>() + n * inputs_[i].per_sample(), dy.data<float>() + out_offset,
                  count * sizeof(float));
    });
  }

 private:
  void check_count(std::size_t count) const {
    DPTRAIN_CHECK(count == inputs_.size(), who_, ": made for ", inputs_.size(), " inputs but given ", count);
  }
  void check_once(const Tensor& t, std::size_t i, std::int64_t n, const char* what) const {
    if (n == 0) check_cpu_tensor(t, inputs_[i], who_, what);
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

  std::vector<Shape> inputs_;
  std::string who_;
  Shape output_;
};
}  // namespace

std::unique_ptr<ConcatPlan> make_concat(std::span<const Shape> inputs, const std::string& who) {
  return std::make_unique<HostConcat>(inputs, who);
}

}  // namespace dptrain::cpu
