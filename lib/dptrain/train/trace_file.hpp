#pragma once
// Where `dptrain train --trace DIR` puts each rank's trace (core/trace_recorder.hpp): DIR/trace-rank-R.json,
// written once, atomically (a temporary renamed into place), so a viewer or a copy never sees half a
// file.
#include <cstdint>
#include <string>

#include "dptrain/core/trace_recorder.hpp"

namespace dptrain {

// The steps to record: `steps` as --trace-steps gives them (FIRST:LAST, global step numbers), or by
// default the 5th to the 24th step of this process (a fresh run: steps 5 to 24; a resume from step
// 1000: steps 1005 to 1024), past the first step's one-time work (algorithm searches, the warm-up
// step without overlap) and short enough to write a few hundred kilobytes.
TraceWindow trace_window(const std::string& steps, std::int64_t first_step);
// Creates `directory` (and its parents) if needed, before any step: a path that cannot hold the
// traces is an error at start-up, not after hours of training. Ranks may race to create it.
void prepare_trace_directory(const std::string& directory);
// "DIRECTORY/trace-rank-R.json".
std::string trace_file_path(const std::string& directory, int rank);
// Writes `json` to trace_file_path(directory, rank) through a temporary beside it.
void write_trace_file(const std::string& directory, int rank, const std::string& json);

}  // namespace dptrain
