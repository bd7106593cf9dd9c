#pragma once
// JPEG decode and encode with libjpeg-turbo's TurboJPEG API, and the resize the converter needs.
// Images are uint8, row-major H x W x C with C = 3 (RGB) or 1 (gray).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dptrain::data {

struct Image {
  int height = 0, width = 0, channels = 0;
  std::vector<std::uint8_t> pixels;  // height * width * channels
};

// A scaling factor TurboJPEG can apply while decoding (num / denom of each side).
struct JpegScale {
  int num = 1, denom = 1;
  bool operator==(const JpegScale&) const = default;
  int scaled(int side) const { return (side * num + denom - 1) / denom; }  // TJSCALED
};

// The smallest factor of at most 1/2 that keeps the shorter side of a `height` x `width` image at
// least `needed` pixels; 1/1 when the image is not at least twice that (decoding at reduced size
// skips most of the inverse DCT and colour conversion, so a 512-pixel image cropped to 224 decodes
// at 1/2 in about a third of the time).
JpegScale jpeg_scale_for(int height, int width, int needed);

// Decodes with one TurboJPEG handle made once (a loader worker keeps one), into an Image whose
// buffer is reused from one call to the next.
class JpegDecoder {
 public:
  JpegDecoder();
  ~JpegDecoder();
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;
  // As decode_jpeg, at `scale`, into `out`.
  void decode(const std::uint8_t* bytes, std::size_t size, int channels, JpegScale scale,
              const std::string& what_for_errors, Image& out);

 private:
  struct Handle;
  std::unique_ptr<Handle> handle_;
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
