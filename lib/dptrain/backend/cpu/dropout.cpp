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
    mask_ = Tensor::empty(spec.input);
  }

  void forward(const Tensor& x, Tensor& y, const RandomPosition& position) override {
    check_cpu_tensor(x, spec_.input, spec_.who, "input");
    check_cpu_tensor(y, spec_.input, spec_.who, "output");
    const CounterRng rng(position.seed, position.stream);
    const float keep_scale = 1.f / (1.f - spec_.probability);
    const std::int64_t per_sample = spec_.input.per_sample();
    float* mask = mask_.data<float>();
    for (std::int64_t n = 0; n < spec_.input[0]; ++n) {
      const auto base = static_cast<std::uint64_t>((position.first_sample + n) * per_sample);
      for (std::int64_t e = 0; e < per_sample; ++e) {
        const std::int64_t i = n * per_sample + e;
        mask[i] = rng.uniform(base + static_cast<std::uint64_t>(e)) >= spec_.probability ? keep_scale : 0.f;
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
  void multiply(const Tensor& in, Tensor& out) const {
    const float* a = in.data<float>();
    const float* m = mask_.data<float>();
    float* b = out.data<float>();
    for (std::int64_t i = 0; i < in.numel(); ++i) b[i] = a[i] * m[i];
  }

  DropoutSpec spec_;
  Tensor mask_;  // 0 or 1/(1-p) per element, from the latest forward
};
}  // namespace

std::unique_ptr<DropoutPlan> make_dropout(const DropoutSpec& spec) { return std::make_unique<HostDropout>(spec); }

}  // namespace dptrain::cpu
