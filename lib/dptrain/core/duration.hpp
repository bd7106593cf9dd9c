#pragma once
// Durations as users write them on the command line and Slurm prints them: "90", "90s", "30m",
// "2h", "1d", "HH:MM:SS", "MM:SS", "D-HH:MM:SS".
#include <string>

namespace dptrain {

// Seconds; throws dptrain::Error naming `what` (the flag) on anything else.
double parse_duration_seconds(const std::string& text, const std::string& what);

}  // namespace dptrain
