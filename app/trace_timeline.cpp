#include "trace_timeline.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "dptrain/core/duration.hpp"
#include "dptrain/core/error.hpp"
#include "gnuplot.hpp"
#include "json_counts.hpp"

namespace dptrain::app {
namespace {
using nlohmann::json;

constexpr std::int64_t kMaxId = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t kMaxStep = std::numeric_limits<std::int64_t>::max() / 2;
// Microseconds: |ts| up to some 30000 years from the epoch, dur up to 30 years; beyond, a double's
// microseconds would no longer be whole.
constexpr double kMaxTimestamp = 1e18;
constexpr double kMaxDuration = 1e15;

struct Event {
  std::int64_t pid = 0, tid = 0, step = -1;
  double ts = 0, dur = 0;
  std::string name;
};

// What the files hold: their complete events, and the names their metadata gives processes and threads.
struct Events {
  std::vector<Event> complete;
  std::map<std::int64_t, std::string> processes;
  std::map<std::pair<std::int64_t, std::int64_t>, std::string> threads;
};

// The trace-rank-R.json files directly in `dir`, by rank.
std::vector<std::string> trace_files_in(const std::string& dir) {
  std::vector<std::pair<std::int64_t, std::string>> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    const std::string prefix = "trace-rank-", suffix = ".json";
    if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    const auto rank = parse_count(name.substr(prefix.size(), name.size() - prefix.size() - suffix.size()));
    if (rank && entry.is_regular_file()) files.emplace_back(*rank, entry.path().string());
  }
  DPTRAIN_CHECK(!error, "cannot list '", printable_name(dir), "': ", error.message());
  DPTRAIN_CHECK(!files.empty(), "'", printable_name(dir),
                "' holds no trace file (trace-rank-R.json, as 'dptrain train --trace DIR' writes)");
  std::sort(files.begin(), files.end());
  std::vector<std::string> paths;
  for (auto& [rank, path] : files) paths.push_back(std::move(path));
  return paths;
}

json read_json_file(const std::string& path) {
  std::error_code error;
  const bool regular = std::filesystem::is_regular_file(path, error);
  DPTRAIN_CHECK(regular, "'", printable_name(path), "' is not a file: give trace files or directories of them");
  const std::uintmax_t bytes = std::filesystem::file_size(path, error);
  DPTRAIN_CHECK(!error && bytes <= kMaxTraceFileBytes, "'", printable_name(path), "' holds more than ",
                kMaxTraceFileBytes >> 20, " MiB: not a trace of 'dptrain train --trace' (at most 10000 steps)");
  std::ifstream in(path);
  DPTRAIN_CHECK(in.good(), "cannot read '", printable_name(path), "': ", std::strerror(errno));
  json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  DPTRAIN_CHECK(!j.is_discarded(), "'", printable_name(path),
                "' is not JSON: expected a Chrome trace, as 'dptrain train --trace' writes");
  return j;
}

// A finite number in [min, max], required.
double time_field(const json& e, const char* key, const std::string& where, double min, double max) {
  const auto it = e.find(key);
  DPTRAIN_CHECK(it != e.end() && it->is_number(), where, ": a complete event (\"ph\": \"X\") without its '", key,
                "' (a number of microseconds)");
  const double v = it->get<double>();
  DPTRAIN_CHECK(std::isfinite(v) && v >= min && v <= max, where, ": '", key, "' is ", it->dump(),
                ", outside the times of a trace");
  return v;
}

std::int64_t id_field(const json& e, const char* key, const std::string& where) {
  const auto id = json_count(e, key, where, -kMaxId, kMaxId);
  DPTRAIN_CHECK(id.has_value(), where, ": a complete event (\"ph\": \"X\") without its '", key, "'");
  return *id;
}

void read_events(const std::string& path, Events& into) {
  const json j = read_json_file(path);
  const json* events = &j;
  if (j.is_object()) {
    const auto it = j.find("traceEvents");
    events = it != j.end() ? &*it : nullptr;
  }
  DPTRAIN_CHECK(events != nullptr && events->is_array(), "'", printable_name(path),
                "' is not a Chrome trace: expected an object with a traceEvents array, as 'dptrain train --trace' "
                "writes");
  for (std::size_t i = 0; i < events->size(); ++i) {
    const json& e = (*events)[i];
    const std::string where = "'" + printable_name(path) + "': traceEvents[" + std::to_string(i) + "]";
    DPTRAIN_CHECK(e.is_object(), where, " is not an object");
    const auto ph = e.find("ph");
    if (ph == e.end() || !ph->is_string()) continue;
    if (*ph == "M") {
      // Names: where one is not what we write, the lane keeps its number.
      const auto name = e.find("name");
      const auto args = e.find("args");
      if (name == e.end() || args == e.end() || !args->is_object() || !args->contains("name") ||
          !(*args)["name"].is_string()) {
        continue;
      }
      const auto pid = json_count(e, "pid", where, -kMaxId, kMaxId);
      const auto tid = json_count(e, "tid", where, -kMaxId, kMaxId);
      if (*name == "process_name" && pid) into.processes[*pid] = (*args)["name"].get<std::string>();
      if (*name == "thread_name" && pid && tid) into.threads[{*pid, *tid}] = (*args)["name"].get<std::string>();
      continue;
    }
    if (*ph != "X") continue;  // instants, counters, begin/end pairs: not drawn
    Event event;
    const auto name = e.find("name");
    DPTRAIN_CHECK(name != e.end() && name->is_string(), where, ": a complete event (\"ph\": \"X\") without its name");
    event.name = name->get<std::string>();
    event.ts = time_field(e, "ts", where, -kMaxTimestamp, kMaxTimestamp);
    event.dur = time_field(e, "dur", where, 0, kMaxDuration);
    event.pid = id_field(e, "pid", where);
    event.tid = id_field(e, "tid", where);
    const auto args = e.find("args");
    if (args != e.end() && args->is_object()) {
      event.step = json_count(*args, "step", where + ".args", 0, kMaxStep).value_or(-1);
    }
    into.complete.push_back(std::move(event));
  }
}

// An event's kind, its colour: its name without the words that are numbers ("step 12": "step",
// "allreduce bucket 3": "allreduce bucket").
std::string kind_of(const std::string& name) {
  std::string kind;
  std::size_t start = 0;
  while (start <= name.size()) {
    const std::size_t end = std::min(name.find(' ', start), name.size());
    const std::string word = name.substr(start, end - start);
    const bool number = !word.empty() && word.find_first_not_of("0123456789") == std::string::npos;
    if (!word.empty() && !number) kind += (kind.empty() ? "" : " ") + word;
    start = end + 1;
  }
  return kind.empty() ? (name.empty() ? "(no name)" : name) : kind;
}

std::string lane_name(const Events& all, std::int64_t pid, std::int64_t tid) {
  const auto process = all.processes.find(pid);
  const auto thread = all.threads.find({pid, tid});
  return (process != all.processes.end() ? process->second : "pid " + std::to_string(pid)) + ": " +
         (thread != all.threads.end() ? thread->second : "thread " + std::to_string(tid));
}

// Each box's depth: how many earlier boxes of its lane are still open at its start.
void nest(TraceTimeline& t) {
  std::sort(t.boxes.begin(), t.boxes.end(), [](const TraceBox& a, const TraceBox& b) {
    if (a.lane != b.lane) return a.lane < b.lane;
    if (a.start_ms != b.start_ms) return a.start_ms < b.start_ms;
    return a.end_ms > b.end_ms;
  });
  std::vector<double> open;  // the ends of the enclosing boxes, innermost last
  for (std::size_t i = 0; i < t.boxes.size(); ++i) {
    TraceBox& b = t.boxes[i];
    if (i == 0 || t.boxes[i - 1].lane != b.lane) open.clear();
    while (!open.empty() && open.back() <= b.start_ms) open.pop_back();
    b.depth = static_cast<int>(open.size());
    open.push_back(b.end_ms);
  }
  std::stable_sort(t.boxes.begin(), t.boxes.end(),
                   [](const TraceBox& a, const TraceBox& b) { return a.depth < b.depth; });
}
}  // namespace

TraceWindow parse_step_range(const std::string& text) {
  const std::size_t colon = text.find(':');
  const auto first = colon == std::string::npos ? std::nullopt : parse_count(text.substr(0, colon));
  const auto last = colon == std::string::npos ? std::nullopt : parse_count(text.substr(colon + 1));
  DPTRAIN_CHECK(first && last && *first <= *last, "--steps '", printable_name(text),
                "' is not FIRST:LAST, the log's step numbers with FIRST <= LAST (e.g. 10:12)");
  return TraceWindow{*first, *last};
}

TraceTimeline read_trace_timeline(const std::vector<std::string>& inputs, const std::optional<TraceWindow>& steps) {
  TraceTimeline t;
  Events all;
  std::map<std::int64_t, std::string> file_of_pid;  // a rank's events come from one file
  std::set<std::filesystem::path> read;
  for (const std::string& input : inputs) {
    const std::vector<std::string> files =
        std::filesystem::is_directory(input) ? trace_files_in(input) : std::vector<std::string>{input};
    for (const std::string& file : files) {
      std::error_code error;
      const std::filesystem::path canonical = std::filesystem::weakly_canonical(file, error);
      DPTRAIN_CHECK(read.insert(error ? std::filesystem::path(file) : canonical).second, "'", printable_name(file),
                    "' is given twice (a directory given holds it too): give each rank's trace once");
      const std::size_t before = all.complete.size();
      read_events(file, all);
      for (std::size_t i = before; i < all.complete.size(); ++i) {
        const auto [it, added] = file_of_pid.emplace(all.complete[i].pid, file);
        DPTRAIN_CHECK(added || it->second == file, "'", printable_name(it->second), "' and '", printable_name(file),
                      "' both hold events of process ", it->first,
                      " (rank): give each rank's trace once, all of one run");
      }
      ++t.files;
    }
  }
  DPTRAIN_CHECK(!all.complete.empty(), "the trace files hold no complete event (\"ph\": \"X\"): nothing to draw");

  std::vector<Event> drawn;
  if (steps) {
    std::int64_t low = kMaxStep, high = -1;
    for (const Event& e : all.complete) {
      if (e.step < 0) continue;
      low = std::min(low, e.step);
      high = std::max(high, e.step);
      if (steps->contains(e.step)) drawn.push_back(e);
    }
    DPTRAIN_CHECK(high >= 0, "--steps: the trace's events have no step numbers (args.step), so no step can be picked");
    DPTRAIN_CHECK(!drawn.empty(), "--steps ", steps->first, ":", steps->last,
                  ": the traces hold no event of those steps (", "they hold steps ", low, " to ", high, ")");
  } else {
    drawn = std::move(all.complete);
  }
  DPTRAIN_CHECK(drawn.size() <= kMaxTraceBoxes, drawn.size(), " events to draw, more than the ", kMaxTraceBoxes,
                " one chart holds: pick a few steps with --steps");

  std::set<std::pair<std::int64_t, std::int64_t>> lane_ids;
  double origin = kMaxTimestamp;
  for (const Event& e : drawn) {
    lane_ids.insert({e.pid, e.tid});
    origin = std::min(origin, e.ts);
  }
  std::map<std::pair<std::int64_t, std::int64_t>, std::size_t> lane_of;
  for (const auto& [pid, tid] : lane_ids) {
    lane_of[{pid, tid}] = t.lanes.size();
    t.lanes.push_back({pid, tid, lane_name(all, pid, tid)});
  }
  std::map<std::string, std::size_t> kind_index;
  std::size_t step_lane = t.lanes.size();
  for (const Event& e : drawn) {
    std::string kind = kind_of(e.name);
    if (kind_index.count(kind) == 0 && t.kinds.size() + 1 >= kMaxTraceKinds) kind = "other";
    const auto [it, added] = kind_index.emplace(kind, t.kinds.size());
    if (added) t.kinds.push_back(kind);
    TraceBox box;
    box.lane = lane_of.at({e.pid, e.tid});
    box.start_ms = (e.ts - origin) / 1000;
    box.end_ms = box.start_ms + e.dur / 1000;
    box.kind = it->second;
    t.boxes.push_back(box);
    t.end_ms = std::max(t.end_ms, box.end_ms);
    if (e.step >= 0) {
      t.first_step = t.first_step < 0 ? e.step : std::min(t.first_step, e.step);
      t.last_step = std::max(t.last_step, e.step);
      if (kind == "step") step_lane = std::min(step_lane, box.lane);
    }
  }
  for (std::size_t i = 0; i < drawn.size(); ++i) {
    const TraceBox& box = t.boxes[i];
    if (box.lane == step_lane && drawn[i].step >= 0 && t.kinds[box.kind] == "step") {
      t.steps.push_back({drawn[i].step, box.start_ms});
    }
  }
  std::sort(t.steps.begin(), t.steps.end(),
            [](const TraceStepMark& a, const TraceStepMark& b) { return a.start_ms < b.start_ms; });
  nest(t);
  return t;
}

}  // namespace dptrain::app
