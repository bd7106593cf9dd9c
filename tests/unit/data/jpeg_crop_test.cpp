// JpegCropDecoder against the full decode it replaces in the loader (JpegDecoder::decode, then the
// crop): every pixel of the window must be the same byte, over random windows and the windows at the
// image's edges, for every chroma subsampling, scale, output colour space and progressive coding.
#include "dptrain/data/jpeg_crop.hpp"

#include <turbojpeg.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dptrain/core/error.hpp"
#include "dptrain/data/jpeg.hpp"

using namespace dptrain;
using namespace dptrain::data;
using Catch::Matchers::Contains;

namespace {

// Smooth colour gradients, edges and noise: every chroma sample differs from its neighbours, so an
// upsampling that treats a window's edge as the image's edge shows up.
std::vector<std::uint8_t> photo_like(int height, int width, int channels, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> noise(-20, 20);
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(height * width * channels));
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < channels; ++c) {
        const double v = 128 + 70 * std::sin(0.11 * x * (c + 1) + 0.05 * y) + 40 * std::cos(0.07 * y * (3 - c)) +
                         ((x / 13 + y / 11) % 2 ? 25 : -25) + noise(rng);
        pixels[static_cast<std::size_t>((y * width + x) * channels + c)] =
            static_cast<std::uint8_t>(std::clamp(v, 0.0, 255.0));
      }
  return pixels;
}

struct TjFree {
  void operator()(unsigned char* p) const noexcept { tjFree(p); }
};
struct TjDestroy {
  void operator()(void* h) const noexcept { tjDestroy(h); }
};

// TurboJPEG's own encoder, for the subsamplings and codings encode_jpeg does not offer.
std::vector<std::uint8_t> encode(const std::vector<std::uint8_t>& pixels, int height, int width, int pixel_format,
                                 int subsampling, int flags) {
  std::unique_ptr<void, TjDestroy> handle(tjInitCompress());
  REQUIRE(handle != nullptr);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  const int rc = tjCompress2(handle.get(), pixels.data(), width, 0, height, pixel_format, &out, &size, subsampling, 90,
                             flags | TJFLAG_ACCURATEDCT);
  std::unique_ptr<unsigned char, TjFree> owned(out);
  REQUIRE(rc == 0);
  return std::vector<std::uint8_t>(out, out + size);
}

// The number of window pixels (all channels) where `got` differs from `full`.
int differences(const Image& full, const Image& got, const PixelWindow& w) {
  REQUIRE(got.height == full.height);
  REQUIRE(got.width == full.width);
  REQUIRE(got.channels == full.channels);
  int wrong = 0;
  const auto c = static_cast<std::size_t>(full.channels);
  for (int y = w.top; y < w.top + w.height; ++y)
    for (int x = w.left; x < w.left + w.width; ++x)
      for (std::size_t k = 0; k < c; ++k) {
        const std::size_t i =
            (static_cast<std::size_t>(y) * static_cast<std::size_t>(full.width) + static_cast<std::size_t>(x)) * c + k;
        wrong += got.pixels[i] != full.pixels[i];
      }
  return wrong;
}

// Windows to try on an image of height x width: the whole image, the four edges and corners, single
// rows and columns, and random ones (the loader's crops are random).
std::vector<PixelWindow> windows_for(int height, int width, std::mt19937& rng, int random_count) {
  std::vector<PixelWindow> windows = {
      {0, 0, height, width},
      {0, 0, std::max(1, height / 2), std::max(1, width / 2)},
      {height / 2, width / 2, height - height / 2, width - width / 2},
      {0, width - 1, height, 1},
      {height - 1, 0, 1, width},
      {height / 3, width / 3, 1, 1},
  };
  std::uniform_int_distribution<int> top(0, height - 1), left(0, width - 1);
  for (int k = 0; k < random_count; ++k) {
    const int t = top(rng), l = left(rng);
    std::uniform_int_distribution<int> h(1, height - t), w(1, width - l);
    windows.push_back(PixelWindow{t, l, h(rng), w(rng)});
  }
  return windows;
}

}  // namespace

TEST_CASE("a cropped JPEG decode gives the full decode's pixels in its window", "[data][jpeg]") {
  struct Source {
    const char* name;
    int pixel_format, subsampling, flags;
  };
  const Source sources[] = {
      {"4:2:0", TJPF_RGB, TJSAMP_420, 0},
      {"4:2:2", TJPF_RGB, TJSAMP_422, 0},
      {"4:4:4", TJPF_RGB, TJSAMP_444, 0},
      {"4:4:0", TJPF_RGB, TJSAMP_440, 0},
      {"4:1:1", TJPF_RGB, TJSAMP_411, 0},
      {"grey", TJPF_GRAY, TJSAMP_GRAY, 0},
      {"4:2:0 progressive", TJPF_RGB, TJSAMP_420, TJFLAG_PROGRESSIVE},
  };
  // Sizes that are and are not multiples of the 16-pixel iMCU, including ones smaller than it.
  const int sizes[][2] = {{256, 256}, {375, 500}, {67, 93}, {8, 13}, {1, 1}, {17, 3}};
  std::mt19937 rng(20261202);
  JpegCropDecoder cropped;  // one decoder throughout, as a loader worker keeps one
  JpegDecoder whole;
  Image full, got;
  unsigned seed = 1;
  for (const Source& source : sources) {
    for (const auto& size : sizes) {
      const int height = size[0], width = size[1];
      const int in_channels = source.pixel_format == TJPF_GRAY ? 1 : 3;
      const auto bytes = encode(photo_like(height, width, in_channels, seed++), height, width, source.pixel_format,
                                source.subsampling, source.flags);
      for (const JpegScale scale : {JpegScale{1, 1}, JpegScale{1, 2}, JpegScale{1, 4}, JpegScale{1, 8}}) {
        for (int channels : {3, 1}) {
          whole.decode(bytes.data(), bytes.size(), channels, scale, "full", full);
          const bool big = height >= 64 && width >= 64;
          for (const PixelWindow& w : windows_for(full.height, full.width, rng, big ? 40 : 8)) {
            INFO(source.name << ", " << height << "x" << width << " at " << scale.num << "/" << scale.denom << " to "
                             << channels << " channels, window (" << w.top << ", " << w.left << ") " << w.height << "x"
                             << w.width);
            std::fill(got.pixels.begin(), got.pixels.end(), std::uint8_t{0xA5});  // no luck from the last image
            cropped.decode(bytes.data(), bytes.size(), channels, scale, w, "cropped", got);
            CHECK(differences(full, got, w) == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("a cropped JPEG decode of a training crop matches the full decode", "[data][jpeg]") {
  // The loader's case: 256 x 256 stored, random 224 x 224 crops, and 512 x 512 at 1/2.
  std::mt19937 rng(7);
  JpegCropDecoder cropped;
  JpegDecoder whole;
  Image full, got;
  for (int side : {256, 512}) {
    const JpegScale scale = side == 512 ? JpegScale{1, 2} : JpegScale{1, 1};
    for (unsigned image = 0; image < 6; ++image) {
      const Image source{side, side, 3, photo_like(side, side, 3, 100 + image)};
      const auto bytes = encode_jpeg(source, 90);
      whole.decode(bytes.data(), bytes.size(), 3, scale, "full", full);
      std::uniform_int_distribution<int> offset(0, full.height - 224);
      for (int k = 0; k < 30; ++k) {
        const PixelWindow w{offset(rng), offset(rng), 224, 224};
        INFO(side << " image " << image << ", window at (" << w.top << ", " << w.left << ")");
        cropped.decode(bytes.data(), bytes.size(), 3, scale, w, "cropped", got);
        CHECK(differences(full, got, w) == 0);
      }
    }
  }
}

TEST_CASE("a cropped JPEG decode clips its window and decodes CMYK whole", "[data][jpeg]") {
  JpegCropDecoder cropped;
  JpegDecoder whole;
  Image full, got;
  const Image source{40, 56, 3, photo_like(40, 56, 3, 3)};
  const auto bytes = encode_jpeg(source, 90);
  whole.decode(bytes.data(), bytes.size(), 3, JpegScale{}, "full", full);
  // A window reaching past the image (a padded crop) decodes its part inside the image.
  cropped.decode(bytes.data(), bytes.size(), 3, JpegScale{}, PixelWindow{-4, 50, 20, 20}, "cropped", got);
  CHECK(differences(full, got, PixelWindow{0, 50, 16, 6}) == 0);
  // An empty window (a crop of padding only) still gives the image's geometry.
  cropped.decode(bytes.data(), bytes.size(), 3, JpegScale{}, PixelWindow{0, 0, 0, 0}, "cropped", got);
  CHECK(got.height == 40);
  CHECK(got.width == 56);

  const auto cmyk = encode(photo_like(24, 32, 4, 4), 24, 32, TJPF_CMYK, TJSAMP_444, 0);
  whole.decode(cmyk.data(), cmyk.size(), 3, JpegScale{}, "full", full);
  cropped.decode(cmyk.data(), cmyk.size(), 3, JpegScale{}, PixelWindow{3, 5, 10, 11}, "cropped", got);
  CHECK(differences(full, got, PixelWindow{3, 5, 10, 11}) == 0);
}

TEST_CASE("a cropped JPEG decode refuses what the full decode refuses", "[data][jpeg]") {
  JpegCropDecoder cropped;
  Image got;
  const Image source{64, 64, 3, photo_like(64, 64, 3, 5)};
  const auto bytes = encode_jpeg(source, 90);
  const PixelWindow all{0, 0, 64, 64};
  // Cut inside the entropy-coded data: libjpeg only warns ("Premature end of JPEG file") and fills
  // the rest with grey; a training set must not get that image.
  const std::vector<std::uint8_t> truncated(bytes.begin(), bytes.begin() + static_cast<long>(bytes.size() * 2 / 3));
  CHECK_THROWS_WITH(cropped.decode(truncated.data(), truncated.size(), 3, JpegScale{}, all, "cut.jpg", got),
                    Contains("cut.jpg: not a readable JPEG image") && Contains("Premature end"));
  const std::vector<std::uint8_t> garbage(100, 0x42);
  CHECK_THROWS_WITH(cropped.decode(garbage.data(), garbage.size(), 3, JpegScale{}, all, "junk.jpg", got),
                    Contains("junk.jpg: not a readable JPEG image (reading the header"));
  CHECK_THROWS_WITH(cropped.decode(nullptr, 0, 3, JpegScale{}, all, "empty.jpg", got), Contains("empty.jpg"));
  // The decoder is usable again after a failure.
  cropped.decode(bytes.data(), bytes.size(), 3, JpegScale{}, all, "good.jpg", got);
  Image full = decode_jpeg(bytes.data(), bytes.size(), 3, "good.jpg");
  CHECK(differences(full, got, all) == 0);
}
