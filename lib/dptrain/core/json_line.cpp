#include "dptrain/core/json_line.hpp"

namespace dptrain {

std::string json_line(const nlohmann::ordered_json& object) {
  if (!object.is_object()) return object.dump();
  std::string line = "{";
  bool first = true;
  for (const auto& [key, value] : object.items()) {
    line += first ? "" : ", ";
    first = false;
    line += nlohmann::json(key).dump();
    line += ": ";
    line += value.is_object() ? json_line(value) : value.dump();
  }
  return line + "}";
}

}  // namespace dptrain
