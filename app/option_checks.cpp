#include "option_checks.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <optional>
#include <sstream>

#include "dptrain/core/duration.hpp"
#include "dptrain/core/error.hpp"
#include "dptrain/core/file_write.hpp"

namespace dptrain::app {
namespace {
// The number in a bound, as a person writes it: 1, 0.5, 1e+06 (never 309 digits).
std::string number(double x) {
  if (x == std::floor(x) && std::fabs(x) < 1e15) return std::to_string(static_cast<long long>(x));
  std::ostringstream s;
  s << x;
  return s.str();
}

// A validator that parses the value as a finite double and hands it to `ok`, which returns what the
// value must be ("at least 1"), empty when it is fine.
CLI::Validator numeric(std::string description, std::function<bool(double)> ok) {
  const std::string& must = description;
  return CLI::Validator(
      [must, ok](std::string& value) -> std::string {
        char* end = nullptr;
        const double x = std::strtod(value.c_str(), &end);
        const bool parsed = !value.empty() && end != nullptr && *end == '\0';
        if (!parsed) return "must be a number " + must + ", not '" + value + "'";
        if (!std::isfinite(x)) return "must be a finite number " + must + ", not " + value;
        if (!ok(x)) return "must be " + must + ", not " + value;
        return std::string();
      },
      description);
}
}  // namespace

CLI::Validator at_least(double min) {
  return numeric("at least " + number(min), [min](double x) { return x >= min; });
}

CLI::Validator in_range(double min, double max) {
  return numeric("from " + number(min) + " to " + number(max), [min, max](double x) { return x >= min && x <= max; });
}

CLI::Validator above_zero() {
  return numeric("above 0", [](double x) { return x > 0; });
}

CLI::Validator from_zero_below_one() {
  return numeric("at least 0 and below 1", [](double x) { return x >= 0 && x < 1; });
}

CLI::Validator parsed_by(std::string description, std::function<void(const std::string&)> parse) {
  return CLI::Validator(
      [parse](std::string& value) -> std::string {
        try {
          parse(value);
        } catch (const Error& e) {
          return e.what();
        }
        return std::string();
      },
      std::move(description));
}

namespace {
CLI::Validator decimal_integer(bool is_unsigned) {
  return CLI::Validator(
      [is_unsigned](std::string& value) -> std::string {
        const bool negative = !value.empty() && value[0] == '-';
        const std::string digits = negative ? value.substr(1) : value;
        const bool decimal =
            !digits.empty() && std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (!decimal) return "must be a whole number in decimal digits, not '" + value + "'";
        if (negative && is_unsigned) return "must be 0 or more, not " + value;
        if (digits.size() > 1 && digits[0] == '0') {
          return "must be written without leading zeros (they would read as octal), not " + value;
        }
        bool fits = false;
        if (is_unsigned) {
          std::uint64_t x = 0;
          fits = std::from_chars(value.data(), value.data() + value.size(), x).ec == std::errc();
        } else {
          std::int64_t x = 0;
          fits = std::from_chars(value.data(), value.data() + value.size(), x).ec == std::errc();
        }
        if (!fits) {
          return "must fit in 64 bits (" +
                 (is_unsigned ? std::string("at most 18446744073709551615")
                              : std::string("from -9223372036854775808 to 9223372036854775807")) +
                 "), not " + value;
        }
        return std::string();
      },
      std::string());  // no description: the help keeps showing INT or UINT
}
}  // namespace

CLI::Validator output_file() {
  return parsed_by("FILE", [](const std::string& path) { check_output_file(path); });
}

CLI::Validator output_directory() {
  return parsed_by("DIR", [](const std::string& path) { check_output_directory(path); });
}

void check_integer_options(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    // The base type, without the descriptions of the validators CLI11 appends after ':'.
    const std::string type = option->get_type_name().substr(0, option->get_type_name().find(':'));
    if (type == "INT" || type == "UINT") option->check(decimal_integer(type == "UINT"));
  }
  for (CLI::App* sub : app.get_subcommands({})) check_integer_options(*sub);
}

CLI::Validator positive_duration(std::string option) {
  return parsed_by("DURATION", [option](const std::string& text) { parse_positive_duration_seconds(text, option); });
}

}  // namespace dptrain::app
