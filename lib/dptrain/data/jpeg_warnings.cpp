#include "dptrain/data/jpeg_warnings.hpp"

#include <algorithm>
#include <iterator>

namespace dptrain::data {

bool jpeg_warning_leaves_pixels_intact(const std::string& message) {
  static constexpr const char* kBenign[] = {"extraneous bytes before marker", "unknown JFIF revision",
                                            "Unknown Adobe color transform", "bad ICC marker"};
  return std::any_of(std::begin(kBenign), std::end(kBenign),
                     [&](const char* benign) { return message.find(benign) != std::string::npos; });
}

}  // namespace dptrain::data
