#include "dptrain/core/input_format.hpp"

#include <cstddef>

#include "dptrain/core/error.hpp"

namespace dptrain {

void normalise_planes(const std::uint8_t* in, float* out, std::int64_t images, std::int64_t plane,
                      const InputNormalisation& normalisation) {
  const std::size_t channels = normalisation.mean.size();
  for (std::int64_t n = 0; n < images; ++n) {
    for (std::size_t c = 0; c < channels; ++c) {
      const float m = normalisation.mean[c], s = normalisation.stddev[c];
      for (std::int64_t k = 0; k < plane; ++k) out[k] = (static_cast<float>(in[k]) - m) / s;
      in += plane;
      out += plane;
    }
  }
}

void check_input_format(const InputFormat& format, const Shape& batch, const char* who) {
  DPTRAIN_CHECK(format.host == DType::f32 || format.host == DType::u8, who, ": input batches are f32 or u8, not ",
                name_of(format.host));
  if (format.host != DType::u8) return;
  DPTRAIN_CHECK(batch.rank() == 4, who, ": u8 batches are [N, C, H, W], not ", batch.to_string());
  const std::int64_t channels = batch[1];
  const InputNormalisation& n = format.normalisation;
  DPTRAIN_CHECK(
      static_cast<std::int64_t>(n.mean.size()) == channels && static_cast<std::int64_t>(n.stddev.size()) == channels,
      who, ": u8 batches of ", channels, " channels need one mean and one std per channel, not ", n.mean.size(),
      " and ", n.stddev.size());
  for (std::size_t c = 0; c < n.stddev.size(); ++c) {
    DPTRAIN_CHECK(n.stddev[c] > 0, who, ": the std of channel ", c, " must be positive, not ", n.stddev[c]);
  }
}

}  // namespace dptrain
