#include "dptrain/core/duration.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <vector>

#include "dptrain/core/error.hpp"

namespace dptrain {
namespace {
// Longer than any job runs; also keeps a deadline (now + duration, in nanoseconds) inside int64.
constexpr double kLongestSeconds = 10.0 * 366 * 86400;

// Digits with at most one decimal point ("90", "1.5", ".5"), 12 characters at most, or nullopt: no
// sign, exponent, hex, inf or nan, which strtod alone would take.
std::optional<double> decimal(const std::string& text) {
  if (text.empty() || text.size() > 12 || text == "." || std::count(text.begin(), text.end(), '.') > 1 ||
      !std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c) != 0 || c == '.'; })) {
    return std::nullopt;
  }
  return std::strtod(text.c_str(), nullptr);
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t end = text.find(separator, begin);
    parts.push_back(text.substr(begin, end - begin));
    if (end == std::string::npos) return parts;
    begin = end + 1;
  }
}

// Slurm's clock forms: "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS".
std::optional<double> clock_seconds(const std::string& text) {
  std::int64_t days = 0;
  std::string clock = text;
  const bool has_days = text.find('-') != std::string::npos;
  if (has_days) {
    const std::vector<std::string> parts = split(text, '-');
    if (parts.size() != 2) return std::nullopt;
    const std::optional<std::int64_t> d = parse_count(parts[0]);
    if (!d) return std::nullopt;
    days = *d;
    clock = parts[1];
  }
  std::vector<std::int64_t> fields;
  for (const std::string& part : split(clock, ':')) {
    const std::optional<std::int64_t> value = parse_count(part);
    if (!value) return std::nullopt;
    fields.push_back(*value);
  }
  if (fields.size() > 3 || (!has_days && fields.size() < 2)) return std::nullopt;
  // After a day count the fields start at hours; without one, two fields are minutes and seconds.
  const std::int64_t hours_first[3] = {3600, 60, 1}, minutes_first[2] = {60, 1};
  const std::int64_t* units = has_days || fields.size() == 3 ? hours_first : minutes_first;
  std::int64_t seconds = days * 86400;
  for (std::size_t i = 0; i < fields.size(); ++i) seconds += fields[i] * units[i];
  return static_cast<double>(seconds);
}

// The seconds in the unit a letter names (s, m, h, d), or 0 for any other character.
double unit_seconds(char letter) {
  switch (letter) {
    case 's': return 1;
    case 'm': return 60;
    case 'h': return 3600;
    case 'd': return 86400;
    default: return 0;
  }
}

// A number with a unit letter, or without one in the `bare` unit.
std::optional<double> number_seconds(const std::string& text, BareNumber bare) {
  double unit = bare == BareNumber::minutes ? 60 : 1;
  std::string number = text;
  if (!text.empty() && unit_seconds(text.back()) > 0) {
    unit = unit_seconds(text.back());
    number.pop_back();
  }
  const std::optional<double> value = decimal(number);
  if (!value) return std::nullopt;
  return *value * unit;
}
}  // namespace

std::optional<std::int64_t> parse_count(const std::string& text) {
  // 12 digits at most, so the value times a day's seconds still fits in int64.
  if (text.empty() || text.size() > 12 ||
      !std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) {
    return std::nullopt;
  }
  return std::stoll(text);
}

std::optional<double> duration_seconds(const std::string& text, BareNumber bare) {
  const std::optional<double> seconds =
      text.find_first_of(":-") != std::string::npos ? clock_seconds(text) : number_seconds(text, bare);
  if (!seconds || *seconds > kLongestSeconds) return std::nullopt;
  return seconds;
}

bool has_unit(const std::string& text) {
  return !text.empty() && (unit_seconds(text.back()) > 0 || text.find_first_of(":-") != std::string::npos);
}

double parse_duration_seconds(const std::string& text, const std::string& what) {
  const std::optional<double> seconds = duration_seconds(text);
  DPTRAIN_CHECK(seconds, what, " '", text,
                "' is not a duration (examples: 300, 300s, 5m, 2h, 1d, 01:30:00, 1-00:00:00)");
  return *seconds;
}

double parse_positive_duration_seconds(const std::string& text, const std::string& what) {
  const std::optional<double> seconds = duration_seconds(text);
  DPTRAIN_CHECK(seconds && *seconds > 0, what, " '", text,
                "' is not a duration longer than 0 s (examples: 90s, 30m, 2h, 01:30:00)");
  return *seconds;
}

}  // namespace dptrain
