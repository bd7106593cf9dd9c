#pragma once
// Durations as users write them on the command line and Slurm prints them, parsed in one place for
// every flag that takes one (--stall-timeout, --time-limit, --checkpoint-every): a number with a unit
// ("90s", "30m", "1.5h", "1d"), a bare number ("90": seconds, or minutes where Slurm's --time says
// so), "MM:SS", "HH:MM:SS", and Slurm's "D-HH", "D-HH:MM", "D-HH:MM:SS".
#include <cstdint>
#include <optional>
#include <string>

namespace dptrain {

// What a number without a unit means: seconds for our own flags, minutes in Slurm's --time.
enum class BareNumber { seconds, minutes };

// Seconds (>= 0, at most ten years), or nullopt when `text` is none of the forms above (spaces, signs
// and exponents included).
std::optional<double> duration_seconds(const std::string& text, BareNumber bare = BareNumber::seconds);

// Whether `text` names its unit (a letter s, m, h, d) or is a clock form: where a bare number means
// something else (--checkpoint-every: steps), only these are durations.
bool has_unit(const std::string& text);

// Seconds; throws dptrain::Error naming `what` (the flag) on anything else.
double parse_duration_seconds(const std::string& text, const std::string& what);
// The same for a duration that must be longer than 0 s (a timeout).
double parse_positive_duration_seconds(const std::string& text, const std::string& what);

// A non-negative integer of at most 12 decimal digits (no sign, no spaces), or nullopt: step counts,
// epoch seconds, the fields of Slurm's clock forms.
std::optional<std::int64_t> parse_count(const std::string& text);

}  // namespace dptrain
