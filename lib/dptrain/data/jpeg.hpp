#pragma once
// JPEG decode and encode with libjpeg-turbo's TurboJPEG API, and the resize the converter needs.
// Images are uint8, row-major H x W x C with C = 3 (RGB) or 1 (gray).
#include <cstdint>
#include <string>
#include <vector>

namespace dptrain::data {

struct Image {
  int height = 0, width = 0, channels = 0;
  std::vector<std::uint8_t> pixels;  // height * width * channels
};

// Decodes any JPEG libjpeg-turbo reads (baseline, progressive, grayscale, CMYK/YCCK, which ImageNet
// contains) into `channels` (3: RGB, 1: gray). Throws dptrain::Error naming `what_for_errors` (a path)
// on a corrupt file.
Image decode_jpeg(const std::uint8_t* bytes, std::size_t size, int channels, const std::string& what_for_errors);
std::vector<std::uint8_t> encode_jpeg(const Image& image, int quality = 90);
// Checks that decode_jpeg would succeed, several times faster than decoding: it reads every scan
// but decodes at 1/8 scale. Throws the same Error as decode_jpeg.
void check_jpeg(const std::uint8_t* bytes, std::size_t size, const std::string& what_for_errors);

// Resizes so the shorter side is `shorter_side` (bilinear, area-averaging when shrinking), keeping
// the aspect ratio.
Image resize_shorter_side(const Image& image, int shorter_side);
// The centred `height` x `width` window.
Image center_crop(const Image& image, int height, int width);

}  // namespace dptrain::data
