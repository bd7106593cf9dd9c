#include "dptrain/core/trace_recorder.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "dptrain/core/duration.hpp"
#include "dptrain/core/error.hpp"
#include "dptrain/core/json_line.hpp"

namespace dptrain {
namespace {
std::int64_t nanoseconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

const char* category(TraceEvent event) {
  switch (event) {
    case TraceEvent::step: return "step";
    case TraceEvent::data_wait: return "data";
    case TraceEvent::forward:
    case TraceEvent::backward:
    case TraceEvent::optimizer_update: return "compute";
    case TraceEvent::allreduce:
    case TraceEvent::gradient_wait: return "communication";
    case TraceEvent::evaluation: return "evaluation";
    case TraceEvent::checkpoint: return "checkpoint";
  }
  return "other";
}

nlohmann::ordered_json metadata(const char* name, int pid, int tid, const nlohmann::ordered_json& args) {
  return {{"name", name}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", args}};
}
}  // namespace

TraceWindow parse_trace_window(const std::string& text) {
  const std::size_t colon = text.find(':');
  const auto first = parse_count(text.substr(0, colon));
  const auto last = colon == std::string::npos ? std::nullopt : parse_count(text.substr(colon + 1));
  DPTRAIN_CHECK(first && last, "--trace-steps: '", text, "' is not FIRST:LAST (step numbers, e.g. 5:24)");
  DPTRAIN_CHECK(*first >= 1 && *first <= *last, "--trace-steps: '", text,
                "' must have 1 <= FIRST <= LAST (steps are numbered from 1)");
  DPTRAIN_CHECK(*last - *first < kMaxTraceSteps, "--trace-steps: '", text, "' holds ", *last - *first + 1,
                " steps; a trace records at most ", kMaxTraceSteps);
  return TraceWindow{*first, *last};
}

const char* trace_event_name(TraceEvent event) {
  switch (event) {
    case TraceEvent::step: return "step";
    case TraceEvent::data_wait: return "data wait";
    case TraceEvent::forward: return "forward";
    case TraceEvent::backward: return "backward";
    case TraceEvent::allreduce: return "allreduce";
    case TraceEvent::gradient_wait: return "gradient wait";
    case TraceEvent::optimizer_update: return "optimizer update";
    case TraceEvent::evaluation: return "evaluation";
    case TraceEvent::checkpoint: return "checkpoint";
  }
  return "unknown";
}

TraceRecorder::TraceRecorder(TraceWindow window, std::size_t events_per_step)
    : window_(window),
      steady_origin_(Clock::now()),
      epoch_origin_ns_(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
              .count()) {
  events_.reserve(static_cast<std::size_t>(window_.steps()) * events_per_step);
}

void TraceRecorder::begin_step(std::int64_t step) {
  step_.store(step, std::memory_order_relaxed);
  recording_.store(window_.contains(step), std::memory_order_relaxed);
}

void TraceRecorder::record(TraceEvent event, TraceThread thread, Clock::time_point start, Clock::time_point end,
                           int index) {
  if (!recording()) return;
  const std::int64_t step = step_.load(std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  // The buffer was reserved for the window: a step with more events than foreseen loses the excess
  // (counted in the file) instead of reallocating in the middle of a step.
  if (events_.size() == events_.capacity()) {
    ++dropped_;
    return;
  }
  events_.push_back(Event{start, end, step, static_cast<std::int32_t>(index), event, thread});
}

std::size_t TraceRecorder::event_count() const {
  std::lock_guard lock(mutex_);
  return events_.size();
}

std::size_t TraceRecorder::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

std::string TraceRecorder::chrome_trace_json(int rank, const std::string& node) const {
  std::vector<Event> events;
  std::size_t dropped = 0;
  {
    std::lock_guard lock(mutex_);
    events = events_;
    dropped = dropped_;
  }
  // By start; of two events starting together the longer (the enclosing one) first, so a viewer
  // that reads in order nests them.
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.start != b.start) return a.start < b.start;
    return a.end > b.end;
  });
  // `ts` in whole microseconds (a double of the epoch's microseconds would print as 1.79e+15 and
  // lose its fraction anyway); `dur` from that start to the exact end, so ts + dur is the end to the
  // nanosecond and nested events stay nested.
  const auto nanoseconds_since_epoch = [this](Clock::time_point t) {
    return epoch_origin_ns_ + nanoseconds(t - steady_origin_);
  };

  nlohmann::ordered_json trace_events = nlohmann::ordered_json::array();
  std::string process = "rank ";  // appended: GCC 12's -Wrestrict misfires on "literal" + std::string
  process.append(std::to_string(rank)).append(" on ").append(node);
  trace_events.push_back(metadata("process_name", rank, 0, {{"name", process}}));
  trace_events.push_back(metadata("process_sort_index", rank, 0, {{"sort_index", rank}}));
  for (const auto& [thread, name] :
       {std::pair{TraceThread::main, "main"}, {TraceThread::communication, "communication"}}) {
    const int tid = static_cast<int>(thread);
    trace_events.push_back(metadata("thread_name", rank, tid, {{"name", name}}));
    trace_events.push_back(metadata("thread_sort_index", rank, tid, {{"sort_index", tid}}));
  }
  for (const Event& e : events) {
    const std::int64_t start_us = nanoseconds_since_epoch(e.start) / 1000;
    nlohmann::ordered_json args = {{"step", e.step}};
    std::string name = trace_event_name(e.event);
    if (e.event == TraceEvent::step) name.append(" ").append(std::to_string(e.step));
    if (e.index >= 0) {
      args["bucket"] = e.index;
      name.append(" bucket ").append(std::to_string(e.index));
    }
    trace_events.push_back({{"name", name},
                            {"cat", category(e.event)},
                            {"ph", "X"},
                            {"ts", start_us},
                            {"dur", static_cast<double>(nanoseconds_since_epoch(e.end) - start_us * 1000) / 1000.0},
                            {"pid", rank},
                            {"tid", static_cast<int>(e.thread)},
                            {"args", std::move(args)}});
  }
  nlohmann::ordered_json other = {
      {"producer", "dptrain train --trace"},
      {"rank", rank},
      {"node", node},
      {"first_step", window_.first},
      {"last_step", window_.last},
      {"events", events.size()},
      {"events_dropped", dropped},
      {"clock", "microseconds since the Unix epoch: the system clock at start, advanced by the steady clock"}};
  // One event a line: the file stays readable and grep-able, and is still one JSON object.
  std::string text = "{\"traceEvents\": [\n";
  for (std::size_t i = 0; i < trace_events.size(); ++i) {
    text += json_text(trace_events[i]);
    text += i + 1 < trace_events.size() ? ",\n" : "\n";
  }
  text += "], \"displayTimeUnit\": \"ms\", \"otherData\": " + json_text(other) + "}\n";
  return text;
}

}  // namespace dptrain
