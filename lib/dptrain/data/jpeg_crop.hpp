#pragma once
// Decoding only the rows of a JPEG image that a crop reads, with the libjpeg API of libjpeg-turbo
// (TurboJPEG 2.1 has no partial decode): the decode stops after the window's last row, so the rows
// below it (16 of 256 on average for a random 224-pixel crop) cost neither entropy decoding nor
// inverse DCT, upsampling or colour conversion. Rows above the window and columns beside it are
// decoded: libjpeg's jpeg_skip_scanlines and jpeg_crop_scanline were measured and did not pay (see
// rows_stage in jpeg_crop.cpp).
//
// The pixels are bit-identical to those of a full decode (JpegDecoder::decode with the same scale):
// the same libjpeg settings as TurboJPEG's (accurate integer DCT, fancy upsampling, the same scaling
// factor and output colour space), and a row's pixels do not depend on the rows decoded after it
// (libjpeg reads the next iMCU row as context before it outputs a row). tests/unit/data/
// jpeg_crop_test.cpp checks this over random windows, subsamplings, scales and colour spaces.
#include <cstdint>
#include <memory>
#include <string>

#include "dptrain/data/jpeg.hpp"
#include "dptrain/data/pixel_window.hpp"

namespace dptrain::data {

// One libjpeg decompressor made once (a loader worker keeps one), and a TurboJPEG decoder for the
// CMYK and YCCK images it hands over whole (about 22 of ImageNet's 1.28 million).
class JpegCropDecoder {
 public:
  JpegCropDecoder();
  ~JpegCropDecoder();
  JpegCropDecoder(const JpegCropDecoder&) = delete;
  JpegCropDecoder& operator=(const JpegCropDecoder&) = delete;

  // Decodes `bytes` at `scale` into `out`, which gets the full scaled geometry (H x W x channels),
  // with at least the pixels of `window` (clipped to the image) as a full decode gives them; the
  // others are unspecified (left from an earlier image, or decoded). An Error naming
  // `what_for_errors` for a file a full decode refuses, as JpegDecoder::decode words it; damage
  // below the window's last row goes unseen, as it changes none of the pixels returned.
  // `expected_height` x `expected_width` (when not 0): the scaled geometry the header must give; any
  // other is an Error before anything is allocated for it (a crafted header can claim 65535 x 65535).
  void decode(const std::uint8_t* bytes, std::size_t size, int channels, JpegScale scale, const PixelWindow& window,
              const std::string& what_for_errors, Image& out, int expected_height = 0, int expected_width = 0);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace dptrain::data
