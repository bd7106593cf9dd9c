#include "dptrain/train/synthetic.hpp"

#include "dptrain/core/philox.hpp"

namespace dptrain {

void fill_synthetic_batch(Backend& backend, std::uint64_t seed, std::int64_t first_sample, int classes, Tensor& images,
                          Tensor& labels) {
  const std::int64_t batch = images.shape()[0], per_sample = images.shape().per_sample();
  Tensor host = Tensor::empty(images.shape());
  const CounterRng pixels(seed, stream_id("synthetic/images"));
  const CounterRng targets(seed, stream_id("synthetic/labels"));
  for (std::int64_t n = 0; n < batch; ++n) {
    const auto sample = static_cast<std::uint64_t>(first_sample + n);
    float* out = host.data<float>() + n * per_sample;
    for (std::int64_t e = 0; e < per_sample; ++e) {
      out[e] =
          2.f * pixels.uniform(sample * static_cast<std::uint64_t>(per_sample) + static_cast<std::uint64_t>(e)) - 1.f;
    }
    labels.data<std::int32_t>()[n] =
        static_cast<std::int32_t>(targets.bits(sample) % static_cast<std::uint32_t>(classes));
  }
  backend.copy_from_host(host, images);
}

}  // namespace dptrain
