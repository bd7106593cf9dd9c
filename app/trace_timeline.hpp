#pragma once
// `dptrain train --trace` files (Chrome trace event JSON, core/trace_recorder.hpp) read back as a
// timeline for `dptrain plot --trace`: a lane for each rank and thread that has events (a process is
// a rank, its `tid` 1 the main thread, 2 the communication thread), and each complete event ("ph":
// "X", `ts` and `dur` in microseconds) a box on its lane, in milliseconds from the window's first
// event. Several files are several ranks of one job (the clocks are the nodes' epoch clocks); a file
// may also hold several ranks (the merged file of docs/training.md).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dptrain/core/trace_recorder.hpp"

namespace dptrain::app {

struct TraceLane {
  std::int64_t pid = 0, tid = 0;
  std::string name;  // "rank 0 on node7: main", from the file's metadata, as the file has it
};

struct TraceBox {
  std::size_t lane = 0;
  double start_ms = 0, end_ms = 0;  // since the window's first event
  std::size_t kind = 0;             // into TraceTimeline::kinds
  int depth = 0;                    // how many boxes of its lane it is inside (forward: 1, in its step)
};

// Where a step starts, on the first lane that has step events ("step N", args.step = N).
struct TraceStepMark {
  std::int64_t step = 0;
  double start_ms = 0;
};

struct TraceTimeline {
  std::vector<TraceLane> lanes;                  // by pid, then tid
  std::vector<std::string> kinds;                // the events' names without their numbers ("step", "allreduce bucket")
  std::vector<TraceBox> boxes;                   // by depth (an enclosing box before the boxes inside it), lane, start
  std::vector<TraceStepMark> steps;              // by start
  std::int64_t first_step = -1, last_step = -1;  // of the events drawn; -1: none has a step
  double end_ms = 0;                             // the last box's end
  std::size_t files = 0;
};

// The most kinds that get a colour and a legend entry of their own; the events of the others are
// drawn as the kind "other".
inline constexpr std::size_t kMaxTraceKinds = 16;
// The most boxes one chart draws (20 steps of resnet50 on 4 ranks are some 5000).
inline constexpr std::size_t kMaxTraceBoxes = 200000;
// The largest trace file read (a window of 10000 steps is some 15 MB a rank).
inline constexpr std::uintmax_t kMaxTraceFileBytes = std::uintmax_t{512} << 20;

// --steps "FIRST:LAST": the log's step numbers, both included; throws naming --steps.
TraceWindow parse_step_range(const std::string& text);

// The trace files given and every trace-rank-R.json of the directories given (by rank). `steps`:
// only the events of those steps (their args.step); nullopt: every event. Throws, naming the file and
// event, on a file that is not a Chrome trace, an event without its ts, dur, pid or tid, a rank in
// two files, and when nothing is left to draw.
TraceTimeline read_trace_timeline(const std::vector<std::string>& inputs, const std::optional<TraceWindow>& steps);

}  // namespace dptrain::app
