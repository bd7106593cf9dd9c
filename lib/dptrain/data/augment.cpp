#include "dptrain/data/augment.hpp"

#include <algorithm>

#include "dptrain/core/error.hpp"
#include "dptrain/core/philox.hpp"

namespace dptrain::data {
namespace {
// The Philox stream of one epoch's augmentation; the sample index is the counter. Mixed (splitmix64's
// finaliser) so that neighbouring epochs get unrelated streams.
std::uint64_t augment_stream(std::int64_t epoch) {
  std::uint64_t z = stream_id("data/augment") + static_cast<std::uint64_t>(epoch) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A uniform integer in [0, range) from 32 random bits (multiply-high: no modulo bias worth the name
// for ranges of a few hundred).
int scaled(std::uint32_t bits, int range) {
  return static_cast<int>((static_cast<std::uint64_t>(bits) * static_cast<std::uint64_t>(range)) >> 32);
}
}  // namespace

Augmenter::Augmenter(const AugmentConfig& config, int height, int width, int channels)
    : height_(height),
      width_(width),
      channels_(channels),
      crop_(config.crop > 0 ? config.crop : std::min(height, width)),
      pad_(config.random ? config.pad : 0),
      random_(config.random),
      flip_(config.random && config.flip),
      seed_(config.seed) {
  DPTRAIN_CHECK(height > 0 && width > 0 && channels > 0, "cannot augment images of ", height, "x", width, "x",
                channels);
  DPTRAIN_CHECK(config.crop >= 0 && config.pad >= 0, "the crop size (", config.crop, ") and padding (", config.pad,
                ") must not be negative");
  DPTRAIN_CHECK(crop_ <= height + 2 * pad_ && crop_ <= width + 2 * pad_, "a crop of ", crop_, "x", crop_,
                " does not fit the stored ", height, "x", width, " images",
                pad_ > 0 ? detail::concat(" padded by ", pad_) : std::string(), "; use a crop size of at most ",
                std::min(height, width) + 2 * pad_);
  DPTRAIN_CHECK(static_cast<int>(config.mean.size()) == channels && static_cast<int>(config.stddev.size()) == channels,
                "augmentation needs one mean and one std per channel (", channels, "), not ", config.mean.size(),
                " and ", config.stddev.size());
  for (int c = 0; c < channels; ++c) {
    DPTRAIN_CHECK(config.stddev[static_cast<std::size_t>(c)] > 0, "the std of channel ", c, " must be positive");
    // (x - mean) / std for each of the 256 byte values: a table look-up per pixel instead of a division,
    // with exactly the values the formula gives in float.
    const auto mean = static_cast<float>(config.mean[static_cast<std::size_t>(c)]);
    const auto stddev = static_cast<float>(config.stddev[static_cast<std::size_t>(c)]);
    for (int v = 0; v < 256; ++v) lut_.push_back((static_cast<float>(v) - mean) / stddev);
  }
}

CropDraw Augmenter::draw(std::int64_t epoch, std::int64_t sample) const {
  const int range_y = height_ + 2 * pad_ - crop_ + 1, range_x = width_ + 2 * pad_ - crop_ + 1;
  if (!random_) return CropDraw{(height_ - crop_) / 2, (width_ - crop_) / 2, false};
  // One Philox block per (epoch, sample): word 0 the row, word 1 the column, word 2's top bit the flip.
  const PhiloxCounter words = CounterRng(seed_, augment_stream(epoch)).block(static_cast<std::uint64_t>(sample));
  return CropDraw{scaled(words[0], range_y), scaled(words[1], range_x), flip_ && (words[2] >> 31) != 0};
}

void Augmenter::apply(const std::uint8_t* hwc, const CropDraw& d, float* chw) const {
  DPTRAIN_CHECK(d.y >= 0 && d.x >= 0 && d.y + crop_ <= height_ + 2 * pad_ && d.x + crop_ <= width_ + 2 * pad_,
                "crop window (", d.y, ", ", d.x, ") is outside the padded image");
  const std::size_t plane = static_cast<std::size_t>(crop_) * static_cast<std::size_t>(crop_);
  const std::size_t stride = static_cast<std::size_t>(width_) * static_cast<std::size_t>(channels_);
  // Crop column k shows stored column base + k; only columns [k0, k1) of the crop are inside the image.
  const int base = d.x - pad_;
  const int k0 = std::clamp(-base, 0, crop_), k1 = std::clamp(width_ - base, k0, crop_);
  for (int c = 0; c < channels_; ++c) {
    const float* table = lut_.data() + static_cast<std::size_t>(c) * 256;
    float* out = chw + static_cast<std::size_t>(c) * plane;
    for (int y = 0; y < crop_; ++y, out += crop_) {
      const int sy = d.y + y - pad_;  // row in the stored image
      if (sy < 0 || sy >= height_ || k0 > 0 || k1 < crop_) std::fill(out, out + crop_, table[0]);  // padding
      if (sy < 0 || sy >= height_) continue;
      const std::uint8_t* row = hwc + static_cast<std::size_t>(sy) * stride + c;
      // Flipping the crop: output column x shows crop column S-1-x.
      if (d.flip) {
        for (int k = k0; k < k1; ++k) out[crop_ - 1 - k] = table[row[static_cast<std::ptrdiff_t>(base + k) * channels_]];
      } else {
        for (int k = k0; k < k1; ++k) out[k] = table[row[static_cast<std::ptrdiff_t>(base + k) * channels_]];
      }
    }
  }
}

}  // namespace dptrain::data
