#pragma once
// Counts read from a JSON result file (`dptrain report`'s inputs, `predict --bench`): 64-bit, within
// stated limits, and named by file and field when they are not, so no absurd value is truncated by
// get<int>() or a cast into another number or reaches a shape.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace dptrain::app {

// The most GPUs (ranks) a result may claim, the largest image side and the most classes.
inline constexpr std::int64_t kMaxResultGpus = std::int64_t{1} << 20;
inline constexpr std::int64_t kMaxResultImageSize = std::int64_t{1} << 16;
inline constexpr std::int64_t kMaxResultClasses = std::int64_t{1} << 20;

// j[key] as an integer in [min, max]; nullopt when the field is missing or null. Throws, naming
// `where` and the field, when it is not a whole number in that range ("gpus must be a whole number
// from 1 to 1048576, not 4294967297").
std::optional<std::int64_t> json_count(const nlohmann::json& j, const std::string& key, const std::string& where,
                                       std::int64_t min, std::int64_t max);

}  // namespace dptrain::app
