#pragma once
// Validators for numeric options whose messages a person reads: "--epochs: must be at least 1, not
// 0" (CLI11's Range and PositiveNumber print the bounds of a double, 309 digits for the largest).
// Every one refuses what is not a finite number ("nan", "inf", "1e999") by name.
#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace dptrain::app {

// A finite number >= `min`.
CLI::Validator at_least(double min);
// A finite number in [min, max].
CLI::Validator in_range(double min, double max);
// A finite number > 0 (learning rates, bucket sizes, seconds).
CLI::Validator above_zero();
// A finite number in [0, 1) (momentum, label smoothing).
CLI::Validator from_zero_below_one();

// A value the library's own parser accepts: `parse` throws dptrain::Error (whose message the refusal
// shows) on anything else. The same parser then reads the value in the run, so the command line refuses
// (exit code 105) exactly what the run would, before any work.
CLI::Validator parsed_by(std::string description, std::function<void(const std::string&)> parse);
// A duration (90s, 30m, 2h, HH:MM:SS; core/duration.hpp) longer than 0 s.
CLI::Validator positive_duration(std::string option);

}  // namespace dptrain::app
