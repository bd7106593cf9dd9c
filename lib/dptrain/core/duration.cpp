#include "dptrain/core/duration.hpp"

#include <cctype>
#include <cstdlib>
#include <vector>

#include "dptrain/core/error.hpp"

namespace dptrain {
namespace {
// A non-negative decimal number filling all of `text`, or -1.
double number(const std::string& text) {
  if (text.empty() || !(std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.')) return -1;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  return *end == '\0' ? value : -1;
}
}  // namespace

double parse_duration_seconds(const std::string& text, const std::string& what) {
  const std::string usage = what + " '" + text + "' is not a duration (examples: 300, 300s, 5m, 2h, 1d, 01:30:00, 1-00:00:00)";
  if (text.find(':') != std::string::npos) {
    // Slurm's [D-]HH:MM:SS or MM:SS.
    double days = 0;
    std::string clock = text;
    if (const auto dash = text.find('-'); dash != std::string::npos) {
      days = number(text.substr(0, dash));
      clock = text.substr(dash + 1);
    }
    std::vector<double> parts;
    std::size_t start = 0;
    for (;;) {
      const auto colon = clock.find(':', start);
      parts.push_back(number(clock.substr(start, colon - start)));
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
    DPTRAIN_CHECK(days >= 0 && (parts.size() == 2 || parts.size() == 3), usage);
    for (double p : parts) DPTRAIN_CHECK(p >= 0, usage);
    const double hours = parts.size() == 3 ? parts[0] : 0;
    return days * 86400 + hours * 3600 + parts[parts.size() - 2] * 60 + parts.back();
  }
  double unit = 1;
  std::string digits = text;
  if (!text.empty()) {
    switch (text.back()) {
      case 's': unit = 1; digits.pop_back(); break;
      case 'm': unit = 60; digits.pop_back(); break;
      case 'h': unit = 3600; digits.pop_back(); break;
      case 'd': unit = 86400; digits.pop_back(); break;
      default: break;
    }
  }
  const double value = number(digits);
  DPTRAIN_CHECK(value >= 0, usage);
  return value * unit;
}

}  // namespace dptrain
