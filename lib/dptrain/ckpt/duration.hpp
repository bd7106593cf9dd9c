#pragma once
// Durations written by people on command lines: "90s", "30m", "2h", "1d".
#include <chrono>
#include <optional>
#include <string>

namespace dptrain::ckpt {

// A positive whole number followed by s, m, h or d; nullopt when `text` is not of that form.
std::optional<std::chrono::seconds> parse_suffixed_duration(const std::string& text);
// A non-negative integer of decimal digits only (no sign, no spaces), or nullopt.
std::optional<std::int64_t> parse_count(const std::string& text);

}  // namespace dptrain::ckpt
