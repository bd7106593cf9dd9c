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
// Gives every integer option of `app` and of its subcommands (CLI11's type INT or UINT) one strict
// reading: decimal digits only (CLI11 alone reads "010" as octal 8 and "0x10" as 16), no sign where
// the option is unsigned (CLI11 alone turns --seed -1 into 2^64-1), and nothing beyond 64 bits (CLI11
// alone clamps 2^64 to 2^64-1). A value outside a narrower option's range is CLI11's conversion
// error, which the command line words (exit code 105 either way). Call after every option exists.
void check_integer_options(CLI::App& app);
// An output the command writes, checked when the command line is read, before any work
// (core/file_write.hpp): a file in an existing directory this job can write, or a directory this job
// can write (or create).
CLI::Validator output_file();
CLI::Validator output_directory();
// A duration (90s, 30m, 2h, HH:MM:SS; core/duration.hpp) longer than 0 s.
CLI::Validator positive_duration(std::string option);

}  // namespace dptrain::app
