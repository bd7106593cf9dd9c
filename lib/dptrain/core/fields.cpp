#include "dptrain/core/fields.hpp"

#include <cstdio>
#include <sstream>

namespace dptrain {
namespace {
std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

template <class T>
std::string list_text(const std::vector<T>& values) {
  std::ostringstream out;
  out << "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    out << (i ? ", " : "");
    if constexpr (std::is_floating_point_v<T>) {
      out << number_text(values[i]);
    } else {
      out << values[i];
    }
  }
  out << "]";
  return out.str();
}
}  // namespace

std::string field_value_text(const FieldValue& value) {
  struct Text {
    std::string operator()(std::int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return number_text(v); }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(const std::string& v) const { return v; }
    std::string operator()(const std::vector<std::int64_t>& v) const { return list_text(v); }
    std::string operator()(const std::vector<double>& v) const { return list_text(v); }
  };
  return std::visit(Text{}, value);
}

}  // namespace dptrain
