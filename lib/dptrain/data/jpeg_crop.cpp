#include "dptrain/data/jpeg_crop.hpp"

// jpeglib.h needs FILE and size_t declared before it.
#include <jpeglib.h>
#include <turbojpeg.h>

#include <algorithm>
#include <climits>
#include <csetjmp>
#include <cstddef>
#include <cstdio>
#include <vector>

#include "dptrain/core/error.hpp"
#include "dptrain/data/jpeg_warnings.hpp"

namespace dptrain::data {
namespace {

// libjpeg reports an error by calling error_exit, which must not return: it jumps back to the setjmp
// of the stage below that called into libjpeg, leaving the formatted message here. Warnings are
// recorded the way TurboJPEG records them (the text of the image's first one), so this decoder
// accepts and refuses exactly the files JpegDecoder does.
struct ErrorManager {
  jpeg_error_mgr pub;  // first member: libjpeg's pointer to it is a pointer to the whole
  std::jmp_buf jump;
  char error[JMSG_LENGTH_MAX];
  char warning[JMSG_LENGTH_MAX];
  bool warned;
};

ErrorManager& manager_of(j_common_ptr cinfo) { return *reinterpret_cast<ErrorManager*>(cinfo->err); }

[[noreturn]] void on_error(j_common_ptr cinfo) {
  ErrorManager& e = manager_of(cinfo);
  (*cinfo->err->format_message)(cinfo, e.error);
  std::longjmp(e.jump, 1);
}

void on_message(j_common_ptr cinfo, int level) {
  if (level >= 0) return;  // trace output, not a warning
  ErrorManager& e = manager_of(cinfo);
  if (!e.warned) (*cinfo->err->format_message)(cinfo, e.warning);
  e.warned = true;
  ++cinfo->err->num_warnings;
}

void set_error(ErrorManager& e, const char* text) { std::snprintf(e.error, sizeof e.error, "%s", text); }

// The stages below are everything libjpeg does for an image, each between its own setjmp and the
// longjmp of on_error. No object with a destructor lives in their frames (a longjmp would skip it),
// and nothing they change is read after a jump but the message. They return false on a libjpeg error.

bool create_stage(jpeg_decompress_struct* cinfo, ErrorManager* err) {
  if (setjmp(err->jump)) return false;
  jpeg_create_decompress(cinfo);
  return true;
}

struct Header {
  int height = 0, width = 0;  // at the decode scale
  bool cmyk = false;
};

// Reads the header and sets what TurboJPEG's tjDecompress2 sets for TJPF_RGB or TJPF_GRAY without
// TJFLAG_FASTDCT or TJFLAG_FASTUPSAMPLE: the output colour space, the accurate integer DCT, fancy
// upsampling, and the first of TurboJPEG's scaling factors (largest first) whose output fits in
// `scale`'s (the factor TurboJPEG would pick for that output size).
bool header_stage(jpeg_decompress_struct* cinfo, ErrorManager* err, const std::uint8_t* bytes, std::size_t size,
                  int channels, JpegScale scale, const tjscalingfactor* factors, int factor_count, Header* out) {
  if (setjmp(err->jump)) return false;
  jpeg_mem_src(cinfo, bytes, static_cast<unsigned long>(size));
  jpeg_read_header(cinfo, TRUE);  // a memory source cannot suspend; a stream without an image is an error
  out->cmyk = cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK;
  if (out->cmyk) return true;
  cinfo->out_color_space = channels == 3 ? JCS_EXT_RGB : JCS_GRAYSCALE;
  cinfo->dct_method = JDCT_ISLOW;
  cinfo->do_fancy_upsampling = TRUE;
  const int full_w = static_cast<int>(cinfo->image_width), full_h = static_cast<int>(cinfo->image_height);
  const int want_w = scale.scaled(full_w), want_h = scale.scaled(full_h);
  int k = 0;
  while (k < factor_count && (TJSCALED(full_w, factors[k]) > want_w || TJSCALED(full_h, factors[k]) > want_h)) ++k;
  if (k == factor_count) {
    set_error(*err, "no scaling factor gives the requested size");
    return false;
  }
  cinfo->scale_num = static_cast<unsigned>(factors[k].num);
  cinfo->scale_denom = static_cast<unsigned>(factors[k].denom);
  jpeg_calc_output_dimensions(cinfo);
  out->height = static_cast<int>(cinfo->output_height);
  out->width = static_cast<int>(cinfo->output_width);
  return true;
}

// Decodes rows [0, bottom) of the image, whole, into `pixels` (output_height x output_width x
// channels), through the row pointers `rows` (output_height of them). Measured on 256-pixel images
// with 224-pixel crops, the cheapest of the partial decodes libjpeg offers: jpeg_skip_scanlines over
// the few rows above a crop costs about what decoding them does (it decodes the iMCU row it lands
// in), and jpeg_crop_scanline made the loader slower, not faster (a sample took 400 us instead of
// 330), so only the rows below the window are left out, and with them their entropy decoding.
bool rows_stage(jpeg_decompress_struct* cinfo, ErrorManager* err, int bottom, int channels, std::uint8_t* pixels,
                JSAMPROW* rows) {
  if (setjmp(err->jump)) return false;
  jpeg_start_decompress(cinfo);
  const std::size_t stride = static_cast<std::size_t>(cinfo->output_width) * static_cast<std::size_t>(channels);
  const auto end = static_cast<JDIMENSION>(bottom);
  for (JDIMENSION y = 0; y < end; ++y) rows[y] = pixels + static_cast<std::size_t>(y) * stride;
  while (cinfo->output_scanline < end) {
    const JDIMENSION row = cinfo->output_scanline;
    if (jpeg_read_scanlines(cinfo, rows + row, end - row) == 0) {
      set_error(*err, "the decoder returned no rows");  // a memory source never suspends
      return false;
    }
  }
  return true;  // the rows below are never decoded: the caller aborts the decompression
}

PixelWindow clip(const PixelWindow& w, int height, int width) {
  const int top = std::clamp(w.top, 0, height), left = std::clamp(w.left, 0, width);
  const int bottom = std::clamp(w.top + w.height, top, height), right = std::clamp(w.left + w.width, left, width);
  return PixelWindow{top, left, bottom - top, right - left};
}

}  // namespace

struct JpegCropDecoder::State {
  jpeg_decompress_struct cinfo{};
  ErrorManager err{};
  bool created = false;
  const tjscalingfactor* factors = nullptr;
  int factor_count = 0;
  std::vector<JSAMPROW> rows;  // reused: one pointer per output row
  JpegDecoder whole;           // CMYK and YCCK images (decoded whole, then converted)

  State() {
    cinfo.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = on_error;
    err.pub.emit_message = on_message;
    DPTRAIN_CHECK(create_stage(&cinfo, &err), "cannot create a libjpeg decompressor (", err.error, ")");
    created = true;
    factors = tjGetScalingFactors(&factor_count);
    DPTRAIN_CHECK(factors != nullptr && factor_count > 0, "TurboJPEG lists no scaling factors (",
                  tjGetErrorStr2(nullptr), ")");
  }
  ~State() {
    if (created) jpeg_destroy_decompress(&cinfo);
  }
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  [[noreturn]] void fail(const std::string& what, const char* action, const char* message) {
    jpeg_abort_decompress(&cinfo);
    throw Error(detail::concat(what, ": not a readable JPEG image (", action, ": ", message, ")"));
  }
};

JpegCropDecoder::JpegCropDecoder() : state_(std::make_unique<State>()) {}
JpegCropDecoder::~JpegCropDecoder() = default;

void JpegCropDecoder::decode(const std::uint8_t* bytes, std::size_t size, int channels, JpegScale scale,
                             const PixelWindow& window, const std::string& what_for_errors, Image& out,
                             int expected_height, int expected_width) {
  const std::string& what = what_for_errors;
  DPTRAIN_CHECK(channels == 1 || channels == 3, what, ": can decode to 1 (grey) or 3 (RGB) channels, not ", channels);
  DPTRAIN_CHECK(scale.num > 0 && scale.denom > 0, what, ": cannot decode at scale ", scale.num, "/", scale.denom);
  DPTRAIN_CHECK(bytes != nullptr && size > 0, what, ": the file is empty, not a JPEG image");
  DPTRAIN_CHECK(size <= ULONG_MAX, what, ": the file is too large for libjpeg");
  State& s = *state_;
  // Back to the start, whatever an earlier call left (an exception between two stages).
  jpeg_abort_decompress(&s.cinfo);
  s.err.warned = false;
  s.err.pub.num_warnings = 0;

  Header h;
  if (!header_stage(&s.cinfo, &s.err, bytes, size, channels, scale, s.factors, s.factor_count, &h)) {
    s.fail(what, "reading the header", s.err.error);
  }
  if (expected_height > 0 && expected_width > 0 && (h.height != expected_height || h.width != expected_width)) {
    jpeg_abort_decompress(&s.cinfo);
    throw Error(detail::concat(what, ": the JPEG header gives ", h.height, "x", h.width, " pixels",
                               scale == JpegScale{} ? "" : " at the decode scale", ", not the ", expected_height, "x",
                               expected_width, " the dataset's images have"));
  }
  if (h.cmyk) {
    // libjpeg-turbo decodes these to CMYK only; JpegDecoder converts them to RGB (see ink_to_rgb).
    jpeg_abort_decompress(&s.cinfo);
    s.whole.decode(bytes, size, channels, scale, what, out);
    return;
  }
  out.height = h.height;
  out.width = h.width;
  out.channels = channels;
  out.pixels.resize(static_cast<std::size_t>(h.height) * static_cast<std::size_t>(h.width) *
                    static_cast<std::size_t>(channels));
  s.rows.resize(static_cast<std::size_t>(h.height));
  const PixelWindow inside = clip(window, h.height, h.width);
  if (!inside.empty() &&
      !rows_stage(&s.cinfo, &s.err, inside.top + inside.height, channels, out.pixels.data(), s.rows.data())) {
    s.fail(what, "decoding", s.err.error);
  }
  jpeg_abort_decompress(&s.cinfo);  // frees the decode's memory; the rows below the window stay undecoded
  if (s.err.warned && !jpeg_warning_leaves_pixels_intact(s.err.warning)) s.fail(what, "decoding", s.err.warning);
}

}  // namespace dptrain::data
