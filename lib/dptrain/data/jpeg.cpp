#include "dptrain/data/jpeg.hpp"

#include <turbojpeg.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <memory>

#include "dptrain/core/error.hpp"
#include "dptrain/data/jpeg_warnings.hpp"

namespace dptrain::data {
namespace {

// TurboJPEG handles and buffers are C resources; these owners release them on every path, including
// the throw that reports a corrupt file.
struct TjDestroy {
  // tjDestroy can only fail for an invalid handle, which an owner never holds; nothing to report.
  void operator()(void* handle) const noexcept { tjDestroy(handle); }
};
using TjHandle = std::unique_ptr<void, TjDestroy>;

struct TjFree {
  void operator()(unsigned char* buffer) const noexcept { tjFree(buffer); }
};
using TjBuffer = std::unique_ptr<unsigned char, TjFree>;

std::string tj_message(tjhandle handle) {
  const char* text = tjGetErrorStr2(handle);
  return text ? text : "unknown TurboJPEG error";
}

// Turns a failed TurboJPEG call into an Error naming the file, or lets a benign warning through
// (jpeg_warnings.hpp). libjpeg keeps only the text of a decode's first warning, so real damage that
// follows a benign warning in the same file passes.
void check_tj(int rc, tjhandle handle, const char* action, const std::string& what) {
  if (rc == 0) return;
  const std::string message = tj_message(handle);
  if (tjGetErrorCode(handle) == TJERR_WARNING && jpeg_warning_leaves_pixels_intact(message)) return;
  throw Error(detail::concat(what, ": not a readable JPEG image (", action, ": ", message, ")"));
}

struct Header {
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  bool cmyk() const { return colorspace == TJCS_CMYK || colorspace == TJCS_YCCK; }
};

TjHandle make_decompressor(const std::string& what) {
  TjHandle handle(tjInitDecompress());
  DPTRAIN_CHECK(handle != nullptr, what, ": cannot create a TurboJPEG decompressor (", tj_message(nullptr), ")");
  return handle;
}

Header read_header(tjhandle handle, const std::uint8_t* bytes, std::size_t size, const std::string& what) {
  DPTRAIN_CHECK(bytes != nullptr && size > 0, what, ": the file is empty, not a JPEG image");
  DPTRAIN_CHECK(size <= ULONG_MAX, what, ": the file is too large for TurboJPEG");
  Header h;
  check_tj(tjDecompressHeader3(handle, bytes, static_cast<unsigned long>(size), &h.width, &h.height, &h.subsampling,
                               &h.colorspace),
           handle, "reading the header", what);
  DPTRAIN_CHECK(h.width > 0 && h.height > 0, what, ": the JPEG header gives an empty image (", h.width, "x", h.height,
                ")");
  return h;
}

// CMYK to RGB for Adobe-style inverted CMYK, which is what Photoshop writes and what ImageNet's ~22
// CMYK files are: the stored byte is 255 minus the ink amount, so with stored values C, M, Y, K
//   R = C * K / 255,  G = M * K / 255,  B = Y * K / 255
// (the same as Pillow's (255 - c)(255 - k)/255 on un-inverted ink amounts). libjpeg-turbo returns the
// stored bytes unchanged for both CMYK and YCCK files (YCCK is only undone to CMYK), and it has no
// colour management, so this formula is the conversion, rounded to nearest.
std::uint8_t ink_to_rgb(unsigned stored_ink, unsigned stored_black) {
  return static_cast<std::uint8_t>((stored_ink * stored_black + 127) / 255);
}

// ITU-R BT.601 luma, the weights libjpeg itself uses for RGB to grey.
std::uint8_t luma(unsigned r, unsigned g, unsigned b) {
  return static_cast<std::uint8_t>((299 * r + 587 * g + 114 * b + 500) / 1000);
}

void check_image(const Image& image, const char* who) {
  DPTRAIN_CHECK(image.height > 0 && image.width > 0 && (image.channels == 1 || image.channels == 3), who,
                ": an image must be at least 1x1 with 1 or 3 channels, not ", image.height, "x", image.width, "x",
                image.channels);
  DPTRAIN_CHECK(image.pixels.size() == static_cast<std::size_t>(image.height) * static_cast<std::size_t>(image.width) *
                                           static_cast<std::size_t>(image.channels),
                who, ": the image holds ", image.pixels.size(), " bytes, not ", image.height, "x", image.width, "x",
                image.channels);
}

// Resampling weights along one axis: output coordinate i reads `count[i]` input pixels from `first[i]`
// with `weight[i * taps + k]`.
struct AxisWeights {
  int taps = 0;
  std::vector<int> first, count;
  std::vector<float> weight;
};

AxisWeights axis_weights(int in, int out) {
  AxisWeights w;
  w.first.resize(static_cast<std::size_t>(out));
  w.count.resize(static_cast<std::size_t>(out));
  const double step = static_cast<double>(in) / out;  // input pixels per output pixel
  if (in > 2 * out) {
    // Shrinking by more than 2x: bilinear would read only 2 of every `step` input pixels and alias
    // (moire on fine textures), so each output pixel averages the input area it covers (a box
    // filter, with fractional weights at the area's edges).
    w.taps = static_cast<int>(std::ceil(step)) + 1;
    w.weight.assign(static_cast<std::size_t>(out) * static_cast<std::size_t>(w.taps), 0.f);
    for (int i = 0; i < out; ++i) {
      const double lo = i * step, hi = std::min<double>((i + 1) * step, in);
      const int begin = static_cast<int>(std::floor(lo));
      const int end = std::min(in, static_cast<int>(std::ceil(hi)));
      w.first[static_cast<std::size_t>(i)] = begin;
      w.count[static_cast<std::size_t>(i)] = end - begin;
      for (int s = begin; s < end; ++s) {
        const double overlap = std::min<double>(hi, s + 1) - std::max<double>(lo, s);
        w.weight[static_cast<std::size_t>(i * w.taps + (s - begin))] = static_cast<float>(overlap / (hi - lo));
      }
    }
  } else {
    // Bilinear on pixel centres (input x = (i + 0.5) * step - 0.5), clamped at the borders: the
    // convention of OpenCV's INTER_LINEAR and PyTorch's align_corners=False.
    w.taps = 2;
    w.weight.assign(static_cast<std::size_t>(out) * 2, 0.f);
    for (int i = 0; i < out; ++i) {
      const double x = std::clamp((i + 0.5) * step - 0.5, 0.0, static_cast<double>(in - 1));
      const int x0 = std::min(static_cast<int>(x), in - 1);
      const double frac = x - x0;
      w.first[static_cast<std::size_t>(i)] = x0;
      w.count[static_cast<std::size_t>(i)] = x0 + 1 < in ? 2 : 1;
      w.weight[static_cast<std::size_t>(i * 2)] = static_cast<float>(1.0 - frac);
      if (x0 + 1 < in) w.weight[static_cast<std::size_t>(i * 2 + 1)] = static_cast<float>(frac);
    }
  }
  return w;
}

}  // namespace

JpegScale jpeg_scale_for(int height, int width, int needed) {
  JpegScale best;
  const int side = std::min(height, width);
  if (needed <= 0 || side < 2 * needed) return best;
  int count = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&count);
  DPTRAIN_CHECK(factors != nullptr && count > 0, "TurboJPEG lists no scaling factors (", tj_message(nullptr), ")");
  for (int k = 0; k < count; ++k) {
    const JpegScale f{factors[k].num, factors[k].denom};
    if (2 * f.num > f.denom || f.scaled(side) < needed) continue;  // not at most 1/2, or too small
    if (static_cast<long>(f.num) * best.denom < static_cast<long>(best.num) * f.denom) best = f;
  }
  return best;
}

struct JpegDecoder::Handle {
  TjHandle tj;
  std::vector<std::uint8_t> cmyk;  // reused for CMYK sources
};

JpegDecoder::JpegDecoder() : handle_(std::make_unique<Handle>()) { handle_->tj = make_decompressor("JPEG decoder"); }
JpegDecoder::~JpegDecoder() = default;

void JpegDecoder::decode(const std::uint8_t* bytes, std::size_t size, int channels, JpegScale scale,
                         const std::string& what_for_errors, Image& image) {
  const std::string& what = what_for_errors;
  DPTRAIN_CHECK(channels == 1 || channels == 3, what, ": can decode to 1 (grey) or 3 (RGB) channels, not ", channels);
  DPTRAIN_CHECK(scale.num > 0 && scale.denom > 0, what, ": cannot decode at scale ", scale.num, "/", scale.denom);
  tjhandle handle = handle_->tj.get();
  const Header h = read_header(handle, bytes, size, what);
  const int width = scale.scaled(h.width), height = scale.scaled(h.height);
  const auto pixels = static_cast<std::size_t>(width) * static_cast<std::size_t>(height);

  image.height = height;
  image.width = width;
  image.channels = channels;
  image.pixels.resize(pixels * static_cast<std::size_t>(channels));
  if (!h.cmyk()) {
    // libjpeg converts YCbCr and grey sources to either format itself (grey to RGB replicates).
    check_tj(tjDecompress2(handle, bytes, static_cast<unsigned long>(size), image.pixels.data(), width, 0, height,
                           channels == 3 ? TJPF_RGB : TJPF_GRAY, TJFLAG_ACCURATEDCT),
             handle, "decoding", what);
    return;
  }
  // CMYK and YCCK sources can only be decoded to CMYK; convert here (see ink_to_rgb).
  std::vector<std::uint8_t>& cmyk = handle_->cmyk;
  cmyk.resize(pixels * 4);
  check_tj(tjDecompress2(handle, bytes, static_cast<unsigned long>(size), cmyk.data(), width, 0, height, TJPF_CMYK,
                         TJFLAG_ACCURATEDCT),
           handle, "decoding CMYK", what);
  for (std::size_t p = 0; p < pixels; ++p) {
    const std::uint8_t* in = &cmyk[p * 4];
    const std::uint8_t r = ink_to_rgb(in[0], in[3]), g = ink_to_rgb(in[1], in[3]), b = ink_to_rgb(in[2], in[3]);
    if (channels == 3) {
      image.pixels[p * 3] = r;
      image.pixels[p * 3 + 1] = g;
      image.pixels[p * 3 + 2] = b;
    } else {
      image.pixels[p] = luma(r, g, b);
    }
  }
}

Image decode_jpeg(const std::uint8_t* bytes, std::size_t size, int channels, const std::string& what_for_errors) {
  JpegDecoder decoder;
  Image image;
  decoder.decode(bytes, size, channels, JpegScale{}, what_for_errors, image);
  return image;
}

void check_jpeg(const std::uint8_t* bytes, std::size_t size, const std::string& what_for_errors) {
  const std::string& what = what_for_errors;
  TjHandle handle = make_decompressor(what);
  const Header h = read_header(handle.get(), bytes, size, what);
  // At 1/8 scale libjpeg still entropy-decodes every scan (only the inverse DCT shrinks), so
  // truncation and corrupt Huffman data surface exactly as in a full decode, at a fraction of its cost.
  const tjscalingfactor eighth{1, 8};
  const int width = TJSCALED(h.width, eighth), height = TJSCALED(h.height, eighth);
  const int format = h.cmyk() ? TJPF_CMYK : TJPF_GRAY;
  std::vector<std::uint8_t> small(static_cast<std::size_t>(width) * static_cast<std::size_t>(height) *
                                  static_cast<std::size_t>(tjPixelSize[format]));
  check_tj(
      tjDecompress2(handle.get(), bytes, static_cast<unsigned long>(size), small.data(), width, 0, height, format, 0),
      handle.get(), "decoding", what);
}

std::vector<std::uint8_t> encode_jpeg(const Image& image, int quality) {
  check_image(image, "encode_jpeg");
  DPTRAIN_CHECK(quality >= 1 && quality <= 100, "encode_jpeg: quality must be 1 to 100, not ", quality);
  TjHandle handle(tjInitCompress());
  DPTRAIN_CHECK(handle != nullptr, "cannot create a TurboJPEG compressor (", tj_message(nullptr), ")");
  unsigned char* out = nullptr;
  unsigned long out_size = 0;
  const bool rgb = image.channels == 3;
  // 4:2:0 for colour, the common choice (libjpeg's and Pillow's default): chroma at half resolution
  // costs little visible quality and about a third of the bytes. The accurate DCT keeps re-encoding
  // from adding more error than the quantisation already does.
  const int rc =
      tjCompress2(handle.get(), image.pixels.data(), image.width, 0, image.height, rgb ? TJPF_RGB : TJPF_GRAY, &out,
                  &out_size, rgb ? TJSAMP_420 : TJSAMP_GRAY, quality, TJFLAG_ACCURATEDCT);
  TjBuffer owned(out);  // TurboJPEG allocated it (even on some failures); free it on every path
  DPTRAIN_CHECK(rc == 0 && out != nullptr, "encoding a ", image.width, "x", image.height, " image as JPEG failed (",
                tj_message(handle.get()), ")");
  return std::vector<std::uint8_t>(out, out + out_size);
}

Image resize_shorter_side(const Image& image, int shorter_side) {
  check_image(image, "resize_shorter_side");
  DPTRAIN_CHECK(shorter_side > 0, "resize_shorter_side: the target size must be positive, not ", shorter_side);
  const int in_h = image.height, in_w = image.width, c = image.channels;
  const double scale = static_cast<double>(shorter_side) / std::min(in_h, in_w);
  const int out_h = in_h <= in_w ? shorter_side : std::max(1, static_cast<int>(std::lround(in_h * scale)));
  const int out_w = in_w < in_h ? shorter_side : std::max(1, static_cast<int>(std::lround(in_w * scale)));
  if (out_h == in_h && out_w == in_w) return image;

  // Separable: rows first into a float buffer (in_h x out_w), then columns. Rounding only once at
  // the end keeps the two passes from compounding error.
  const AxisWeights wx = axis_weights(in_w, out_w), wy = axis_weights(in_h, out_h);
  std::vector<float> rows(static_cast<std::size_t>(in_h) * static_cast<std::size_t>(out_w) *
                          static_cast<std::size_t>(c));
  for (int y = 0; y < in_h; ++y) {
    const std::uint8_t* src = &image.pixels[static_cast<std::size_t>(y) * static_cast<std::size_t>(in_w * c)];
    float* dst = &rows[static_cast<std::size_t>(y) * static_cast<std::size_t>(out_w * c)];
    for (int x = 0; x < out_w; ++x) {
      const int first = wx.first[static_cast<std::size_t>(x)], count = wx.count[static_cast<std::size_t>(x)];
      const float* w = &wx.weight[static_cast<std::size_t>(x * wx.taps)];
      for (int ch = 0; ch < c; ++ch) {
        float sum = 0.f;
        for (int k = 0; k < count; ++k) sum += w[k] * static_cast<float>(src[(first + k) * c + ch]);
        dst[x * c + ch] = sum;
      }
    }
  }
  Image out;
  out.height = out_h;
  out.width = out_w;
  out.channels = c;
  out.pixels.resize(static_cast<std::size_t>(out_h) * static_cast<std::size_t>(out_w) * static_cast<std::size_t>(c));
  const std::size_t row_floats = static_cast<std::size_t>(out_w) * static_cast<std::size_t>(c);
  std::vector<float> sum(row_floats);
  for (int y = 0; y < out_h; ++y) {
    const int first = wy.first[static_cast<std::size_t>(y)], count = wy.count[static_cast<std::size_t>(y)];
    const float* w = &wy.weight[static_cast<std::size_t>(y * wy.taps)];
    std::fill(sum.begin(), sum.end(), 0.f);
    for (int k = 0; k < count; ++k) {
      const float* src = &rows[static_cast<std::size_t>(first + k) * row_floats];
      for (std::size_t i = 0; i < row_floats; ++i) sum[i] += w[k] * src[i];
    }
    std::uint8_t* dst = &out.pixels[static_cast<std::size_t>(y) * row_floats];
    for (std::size_t i = 0; i < row_floats; ++i) {
      dst[i] = static_cast<std::uint8_t>(std::clamp(sum[i] + 0.5f, 0.f, 255.f));
    }
  }
  return out;
}

Image center_crop(const Image& image, int height, int width) {
  check_image(image, "center_crop");
  DPTRAIN_CHECK(height > 0 && width > 0 && height <= image.height && width <= image.width, "center_crop: cannot cut ",
                height, "x", width, " out of a ", image.height, "x", image.width, " image");
  const int top = (image.height - height) / 2, left = (image.width - width) / 2;
  const auto c = static_cast<std::size_t>(image.channels);
  Image out;
  out.height = height;
  out.width = width;
  out.channels = image.channels;
  out.pixels.resize(static_cast<std::size_t>(height) * static_cast<std::size_t>(width) * c);
  const std::size_t row = static_cast<std::size_t>(width) * c;
  for (int y = 0; y < height; ++y) {
    const auto* src = &image.pixels[(static_cast<std::size_t>(top + y) * static_cast<std::size_t>(image.width) +
                                     static_cast<std::size_t>(left)) *
                                    c];
    std::copy(src, src + row, &out.pixels[static_cast<std::size_t>(y) * row]);
  }
  return out;
}

}  // namespace dptrain::data
