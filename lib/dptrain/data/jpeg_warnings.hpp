#pragma once
// Which libjpeg warnings a decode may pass over. libjpeg reports some damage only as a warning and
// decodes anyway, filling what it could not read with grey (a truncated file is "Premature end of
// JPEG file"); such images must not reach a training set, so a warning is an error unless it is one
// of the few that leave every pixel intact. Shared by the TurboJPEG decoder (jpeg.cpp) and the
// libjpeg window decoder (jpeg_crop.cpp), so both accept and refuse the same files.
#include <string>

namespace dptrain::data {

// True for junk between segments (seen in real ImageNet files), an unknown JFIF revision, an unknown
// Adobe transform code, or a damaged ICC profile (colour management only).
bool jpeg_warning_leaves_pixels_intact(const std::string& message);

}  // namespace dptrain::data
