#include "dptrain/core/byte_size.hpp"

#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <string_view>

#include "dptrain/core/error.hpp"

namespace dptrain {
namespace {
struct Unit {
  std::string_view name;
  double bytes;
};
constexpr double kKi = 1024.0;
constexpr std::array kUnits{
    Unit{"K", kKi},
    Unit{"M", kKi* kKi},
    Unit{"G", kKi* kKi* kKi},
    Unit{"T", kKi* kKi* kKi* kKi},
    Unit{"KiB", kKi},
    Unit{"MiB", kKi* kKi},
    Unit{"GiB", kKi* kKi* kKi},
    Unit{"TiB", kKi* kKi* kKi* kKi},
    Unit{"kB", 1e3},
    Unit{"KB", 1e3},
    Unit{"MB", 1e6},
    Unit{"GB", 1e9},
    Unit{"TB", 1e12},
};
}  // namespace

std::optional<std::size_t> byte_size(const std::string& text) {
  std::size_t i = 0;
  bool digits = false, point = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digits = true;
    } else if (c == '.' && !point) {
      point = true;
    } else {
      break;
    }
  }
  if (!digits || i > 20) return std::nullopt;
  const std::string_view unit = std::string_view(text).substr(i);
  for (const Unit& u : kUnits) {
    if (unit != u.name) continue;
    const double bytes = std::stod(text.substr(0, i)) * u.bytes;
    if (!(bytes >= 1) || bytes > 1e18) return std::nullopt;
    return static_cast<std::size_t>(bytes);
  }
  return std::nullopt;
}

std::size_t parse_byte_size(const std::string& text, const std::string& what) {
  const auto bytes = byte_size(text);
  DPTRAIN_CHECK(bytes.has_value(), what, ": '", text,
                "' is not a memory size; give a number with a unit, like 16GiB, 16G, 512MiB or 80GB");
  return *bytes;
}

std::string format_bytes(double bytes) {
  static constexpr std::array<const char*, 5> kNames{"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t unit = 0;
  while (unit + 1 < kNames.size() && std::fabs(bytes) >= 1024.0) {
    bytes /= 1024.0;
    ++unit;
  }
  char out[48];
  std::snprintf(out, sizeof out, unit == 0 ? "%.0f %s" : "%.1f %s", bytes, kNames[unit]);
  return out;
}

}  // namespace dptrain
