#include "json_counts.hpp"

#include <cmath>

#include "dptrain/core/error.hpp"
#include "dptrain/core/json_line.hpp"

namespace dptrain::app {

std::optional<std::int64_t> json_count(const nlohmann::json& j, const std::string& key, const std::string& where,
                                       std::int64_t min, std::int64_t max) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return std::nullopt;
  const nlohmann::json& v = j[key];
  const auto fail = [&] {
    throw Error(detail::concat(where, ": the field '", key, "' must be a whole number from ", min, " to ", max,
                               ", not ", json_text(v)));
  };
  // Compared before any conversion: an unsigned above 2^63, a float of 1e300 or NaN never wraps.
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(max) || static_cast<std::int64_t>(u) < min) fail();
    return static_cast<std::int64_t>(u);
  }
  if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    if (i < min || i > max) fail();
    return i;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || d < static_cast<double>(min) || d > static_cast<double>(max)) fail();
    return static_cast<std::int64_t>(d);
  }
  fail();
  return std::nullopt;
}

}  // namespace dptrain::app
