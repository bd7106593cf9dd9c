// Inverted dropout: kept elements are scaled by 1/(1-p) in training so inference is the identity.
// The mask is drawn from Philox at (seed, stream, global element index), see RandomPosition.
#include "dptrain/backend/cpu/plans.hpp"
#include "dptrain/core/philox.hpp"

namespace dptrain::cpu {
namespace {
class HostDropout final : public DropoutPlan {
 public:
  explicit HostDropout(const DropoutSpec& spec) : spec_(spec) {
    DPTRAIN_CHECK(spec.probability >= 0.f && spec.probability < 1.f, spec.who, ": probability must be in [0, 1), not ",
                  spec.probability);
    DPTRAIN_CHECK(spec.input.rank() >= 1, spec.who, ": input needs a batch axis");
  }

  void forward(const Tensor& x, Tensor& y, const RandomPosition& position) override {
    check_cpu_tensor(x, spec_.input, spec_.who, "input");
    check_cpu_tensor(y, spec_.input, spec_.who, "output");
    DPTRAIN_CHECK(x.layout() == y.layout(), spec_.who, ": input and output are in different layouts");
    if (!mask_.defined() || mask_.layout() != x.layout() || mask_.numel() == 0) {
      mask_ = Tensor::empty(spec_.input, DType::f32, x.layout());
    }
    const CounterRng rng(position.seed, position.stream);
    const float keep_scale = 1.f / (1.f - spec_.probability);
    const std::int64_t per_sample = spec_.input.per_sample();
    float* mask = mask_.elements<float>();
    for (std::int64_t n = 0; n < spec_.input[0]; ++n) {
      const auto base = static_cast<std::uint64_t>((position.first_sample + n) * per_sample);
      for (std::int64_t e = 0; e < per_sample; ++e) {
        // The draw is keyed by the element's logical (NCHW) index, so the mask is the same whichever
        // layout the tensor is stored in (and on the GPU).
        const auto logical = static_cast<std::uint64_t>(logical_index(e));
        mask[n * per_sample + e] = rng.uniform(base + logical) >= spec_.probability ? keep_scale : 0.f;
      }
    }
    multiply(x, y);
  }

  void backward(const Tensor& dy, Tensor& dx) override {
    check_cpu_tensor(dy, spec_.input, spec_.who, "output gradient");
    check_cpu_tensor(dx, spec_.input, spec_.who, "input gradient");
    multiply(dy, dx);
  }

 private:
  // The NCHW index within a sample of the element at memory position `e` of the mask's layout.
  std::int64_t logical_index(std::int64_t e) const {
    if (mask_.layout() == Layout::plain) return e;
    const std::int64_t lanes = block_channels(mask_.layout());
    const std::int64_t spatial = spec_.input[2] * spec_.input[3];
    const std::int64_t block = e / (spatial * lanes), within = e % (spatial * lanes);
    return (block * lanes + within % lanes) * spatial + within / lanes;
  }

  void multiply(const Tensor& in, Tensor& out) const {
    DPTRAIN_CHECK(in.layout() == mask_.layout() && out.layout() == mask_.layout(), spec_.who,
                  ": tensors are in another layout than the mask of the forward pass");
    const float* a = in.elements<float>();
    const float* m = mask_.elements<float>();
    float* b = out.elements<float>();
    const std::int64_t count = in.numel();
    for (std::int64_t i = 0; i < count; ++i) b[i] = a[i] * m[i];
  }

  DropoutSpec spec_;
  Tensor mask_;  // 0 or 1/(1-p) per element, from the latest forward
};
}  // namespace

std::unique_ptr<DropoutPlan> make_dropout(DnnlContextPtr /*ctx: a host plan*/, const DropoutSpec& spec) {
  return std::make_unique<HostDropout>(spec);
}

}  // namespace dptrain::cpu
