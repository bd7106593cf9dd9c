#include "dptrain/data/augment.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "dptrain/core/error.hpp"
#include "dptrain/core/philox.hpp"

// An AVX2 and a default version, chosen at load time. Not in a ThreadSanitizer build: the ifunc
// resolver runs before TSan's runtime is up, and its instrumented code crashes the program at load.
// Not under Clang either: Clang 14 does not clone function templates.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define DPTRAIN_AVX2_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define DPTRAIN_AVX2_CLONES
#endif

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
    mean_.push_back(static_cast<float>(config.mean[static_cast<std::size_t>(c)]));
    stddev_.push_back(static_cast<float>(config.stddev[static_cast<std::size_t>(c)]));
    padding_.push_back((0.f - mean_.back()) / stddev_.back());
  }
  byte_padding_.assign(static_cast<std::size_t>(channels), 0);
}

CropDraw Augmenter::draw(std::int64_t epoch, std::int64_t sample) const {
  const int range_y = height_ + 2 * pad_ - crop_ + 1, range_x = width_ + 2 * pad_ - crop_ + 1;
  if (!random_) return CropDraw{(height_ - crop_) / 2, (width_ - crop_) / 2, false};
  // One Philox block per (epoch, sample): word 0 the row, word 1 the column, word 2's top bit the flip.
  const PhiloxCounter words = CounterRng(seed_, augment_stream(epoch)).block(static_cast<std::uint64_t>(sample));
  return CropDraw{scaled(words[0], range_y), scaled(words[1], range_x), flip_ && (words[2] >> 31) != 0};
}

namespace {
// One row of the crop: `count` stored pixels from `pixels` (C interleaved bytes each) into the C
// planes of `out` (`plane` floats apart), normalised as (x - mean) / std in float. C is a constant,
// so the compiler vectorises the loop (de-interleave, widen, subtract, divide) with no branch inside;
// the division, not a multiplication by 1/std, keeps the values those of the formula, bit for bit.
template <int C>
// AVX2 where the CPU has it (8 floats a division, byte shuffles for the de-interleave), SSE2 else.
DPTRAIN_AVX2_CLONES void normalise_row(const std::uint8_t* __restrict pixels, int count, const float* mean,
                                       const float* stddev, std::size_t plane, float* __restrict out) {
  float m[C], s[C];
  for (int c = 0; c < C; ++c) m[c] = mean[c], s[c] = stddev[c];
  for (int k = 0; k < count; ++k) {
    for (int c = 0; c < C; ++c) {
      out[static_cast<std::size_t>(c) * plane + static_cast<std::size_t>(k)] =
          (static_cast<float>(pixels[k * C + c]) - m[c]) / s[c];
    }
  }
}

void normalise_row_any(const std::uint8_t* pixels, int count, int channels, const float* mean, const float* stddev,
                       std::size_t plane, float* out) {
  switch (channels) {
    case 1: return normalise_row<1>(pixels, count, mean, stddev, plane, out);
    case 3: return normalise_row<3>(pixels, count, mean, stddev, plane, out);
    default:
      for (int c = 0; c < channels; ++c) {
        for (int k = 0; k < count; ++k) {
          out[static_cast<std::size_t>(c) * plane + static_cast<std::size_t>(k)] =
              (static_cast<float>(pixels[k * channels + c]) - mean[c]) / stddev[c];
        }
      }
  }
}
}  // namespace

namespace {
// One row of the crop as bytes: `count` stored pixels (C interleaved bytes each) into the C planes of
// `out` (`plane` bytes apart). A de-interleaving copy; C a constant so the loop has no branch.
template <int C>
DPTRAIN_AVX2_CLONES void split_row(const std::uint8_t* __restrict pixels, int count, std::size_t plane,
                                   std::uint8_t* __restrict out) {
  for (int k = 0; k < count; ++k) {
    for (int c = 0; c < C; ++c)
      out[static_cast<std::size_t>(c) * plane + static_cast<std::size_t>(k)] = pixels[k * C + c];
  }
}

void split_row_any(const std::uint8_t* pixels, int count, int channels, std::size_t plane, std::uint8_t* out) {
  switch (channels) {
    case 1: return split_row<1>(pixels, count, plane, out);
    case 3: return split_row<3>(pixels, count, plane, out);
    default:
      for (int c = 0; c < channels; ++c) {
        for (int k = 0; k < count; ++k) {
          out[static_cast<std::size_t>(c) * plane + static_cast<std::size_t>(k)] = pixels[k * channels + c];
        }
      }
  }
}
}  // namespace

PixelWindow Augmenter::window(const CropDraw& d) const {
  const int top = std::clamp(d.y - pad_, 0, height_), bottom = std::clamp(d.y - pad_ + crop_, top, height_);
  const int left = std::clamp(d.x - pad_, 0, width_), right = std::clamp(d.x - pad_ + crop_, left, width_);
  return PixelWindow{top, left, bottom - top, right - left};
}

// The crop, padding and flip of apply() and apply_bytes(), for output elements of type T: `row(pixels,
// count, out)` writes `count` stored pixels into the C planes at `out`, `padding[c]` fills the rest.
template <typename T, typename Row, typename RowDone>
void crop_rows(const std::uint8_t* hwc, const CropDraw& d, int height, int width, int channels, int crop, int pad,
               const T* padding, Row row, T* chw, std::size_t plane, std::size_t row_stride, RowDone row_done) {
  DPTRAIN_CHECK(d.y >= 0 && d.x >= 0 && d.y + crop <= height + 2 * pad && d.x + crop <= width + 2 * pad,
                "crop window (", d.y, ", ", d.x, ") is outside the padded image");
  const std::size_t stride = static_cast<std::size_t>(width) * static_cast<std::size_t>(channels);
  // Crop column k shows stored column base + k; only columns [k0, k1) of the crop are inside the image.
  // Only the crop's pixels are read and converted: the rest of the stored image is never touched.
  const int base = d.x - pad;
  const int k0 = std::clamp(-base, 0, crop), k1 = std::clamp(width - base, k0, crop);
  for (int y = 0; y < crop; ++y) {
    T* out = chw + static_cast<std::size_t>(y) * row_stride;
    const int sy = d.y + y - pad;  // row in the stored image
    const bool inside = sy >= 0 && sy < height;
    if (!inside || k0 > 0 || k1 < crop) {  // padding
      for (int c = 0; c < channels; ++c) {
        T* plane_row = out + static_cast<std::size_t>(c) * plane;
        std::fill(plane_row, plane_row + crop, padding[c]);
      }
    }
    if (inside && k1 > k0) {
      const std::uint8_t* pixels = hwc + static_cast<std::size_t>(sy) * stride +
                                   static_cast<std::size_t>(base + k0) * static_cast<std::size_t>(channels);
      row(pixels, k1 - k0, plane, out + k0);
    }
    // Flipping the crop: output column x shows crop column S-1-x, so the finished row is reversed.
    if (d.flip) {
      for (int c = 0; c < channels; ++c) {
        T* plane_row = out + static_cast<std::size_t>(c) * plane;
        std::reverse(plane_row, plane_row + crop);
      }
    }
    row_done(y, out);
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
// `bytes` (a multiple of 32) from `from` to `to` (32-byte aligned) with streaming stores, which write
// memory without first reading the lines they fill into the cache.
__attribute__((target("avx"))) void stream_bytes(const void* from, void* to, std::size_t bytes) {
  const auto* src = static_cast<const char*>(from);
  auto* dst = static_cast<char*>(to);
  for (std::size_t i = 0; i < bytes; i += 32) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
  }
}

__attribute__((target("avx"))) void stream_fence() { _mm_sfence(); }
#endif

// The crop into the C planes of `chw`. A batch of crops (600 KB of floats an image at 224) does not
// stay in the cache until it is read, so where the CPU has AVX and the rows are whole 32-byte lines
// each row is built in a scratch row that stays cached (flip included) and streamed out: the batch's
// lines are then written without being read first (the 1-thread JPEG loader 1.27x, raw 1.09-1.14x on
// this machine). The same values as the direct write, which serves every other case.
template <typename T, typename Row>
void crop_into(const std::uint8_t* hwc, const CropDraw& d, int height, int width, int channels, int crop, int pad,
               const T* padding, Row row, T* chw) {
  const std::size_t side = static_cast<std::size_t>(crop);
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool avx = __builtin_cpu_supports("avx");
  const std::size_t row_bytes = side * sizeof(T);
  if (avx && reinterpret_cast<std::uintptr_t>(chw) % 32 == 0 && row_bytes % 32 == 0) {
    thread_local std::vector<T> scratch;
    scratch.resize(side * static_cast<std::size_t>(channels));
    crop_rows(
        hwc, d, height, width, channels, crop, pad, padding, row, scratch.data(), side, 0, [&](int y, const T* done) {
          for (int c = 0; c < channels; ++c) {
            stream_bytes(done + static_cast<std::size_t>(c) * side,
                         chw + (static_cast<std::size_t>(c) * side + static_cast<std::size_t>(y)) * side, row_bytes);
          }
        });
    stream_fence();  // the streamed lines are in memory before the batch is handed over
    return;
  }
#endif
  crop_rows(hwc, d, height, width, channels, crop, pad, padding, row, chw, side * side, side, [](int, const T*) {});
}

void Augmenter::apply(const std::uint8_t* hwc, const CropDraw& d, float* chw) const {
  crop_into(
      hwc, d, height_, width_, channels_, crop_, pad_, padding_.data(),
      [this](const std::uint8_t* pixels, int count, std::size_t plane, float* out) {
        normalise_row_any(pixels, count, channels_, mean_.data(), stddev_.data(), plane, out);
      },
      chw);
}

void Augmenter::apply_bytes(const std::uint8_t* hwc, const CropDraw& d, std::uint8_t* chw) const {
  crop_into(
      hwc, d, height_, width_, channels_, crop_, pad_, byte_padding_.data(),
      [this](const std::uint8_t* pixels, int count, std::size_t plane, std::uint8_t* out) {
        split_row_any(pixels, count, channels_, plane, out);
      },
      chw);
}

}  // namespace dptrain::data
