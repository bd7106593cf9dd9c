#include "dptrain/ckpt/duration.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>

namespace dptrain::ckpt {

std::optional<std::int64_t> parse_count(const std::string& text) {
  // 12 digits at most, so the value times a day's seconds still fits in int64.
  if (text.empty() || text.size() > 12 || !std::all_of(text.begin(), text.end(), [](unsigned char c) {
        return std::isdigit(c) != 0;
      })) {
    return std::nullopt;
  }
  return std::stoll(text);
}

std::optional<std::chrono::seconds> parse_suffixed_duration(const std::string& text) {
  if (text.size() < 2) return std::nullopt;
  const std::optional<std::int64_t> n = parse_count(text.substr(0, text.size() - 1));
  if (!n || *n == 0) return std::nullopt;
  switch (text.back()) {
    case 's': return std::chrono::seconds(*n);
    case 'm': return std::chrono::seconds(*n * 60);
    case 'h': return std::chrono::seconds(*n * 3600);
    case 'd': return std::chrono::seconds(*n * 86400);
    default: return std::nullopt;
  }
}

}  // namespace dptrain::ckpt
