#include "dptrain/train/run_config.hpp"

#include "dptrain/core/json_line.hpp"
#include "dptrain/core/record_json.hpp"

namespace dptrain {

std::string stored_configuration(const TrainingRunConfig& config) { return json_text(record_json(config)); }

TrainingRunConfig parse_stored_configuration(const std::string& json_text, const std::string& where) {
  TrainingRunConfig config;
  const nlohmann::json j = nlohmann::json::parse(json_text, nullptr, false);
  if (j.is_object()) read_record_json(j, config, where, MissingFields::keep_defaults);
  return config;
}

}  // namespace dptrain
