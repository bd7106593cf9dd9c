#pragma once
// A timeline of one rank's training steps (`dptrain train --trace DIR`), written in the Chrome trace
// event format that Perfetto (ui.perfetto.dev) and chrome://tracing open.
//
// Recording must not slow the steps it shows, and a week-long run must not write gigabytes: only the
// steps of a window (TraceWindow) are recorded, into a buffer reserved once for the whole window.
// Recording an event is a steady_clock read at each end and, under a mutex (the communication thread
// records too), a copy of a few words into that buffer: no allocation, no formatting, no I/O. The
// JSON is made once, after the window (chrome_trace_json). Where no recorder is given (a null
// pointer), TraceSpan reads no clock and records nothing.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace dptrain {

// The steps recorded, by the global step numbers the training log prints (the first step is 1), both
// ends included.
struct TraceWindow {
  std::int64_t first = 0, last = -1;
  bool contains(std::int64_t step) const { return step >= first && step <= last; }
  std::int64_t steps() const { return last >= first ? last - first + 1 : 0; }
};

// The most steps one window may hold: enough to see a pattern, small enough that the buffer and the
// file stay in megabytes.
inline constexpr std::int64_t kMaxTraceSteps = 10000;

// "FIRST:LAST" (1 <= FIRST <= LAST, at most kMaxTraceSteps steps); throws dptrain::Error naming
// --trace-steps and what is wrong.
TraceWindow parse_trace_window(const std::string& text);

// What happened, in the order of a step. Each has a fixed name in the file (trace_event_name).
enum class TraceEvent : std::uint8_t {
  step,              // one training step, from its batch's hand-over to its log record
  data_wait,         // the training loop waits for the loader's next batch
  forward,           // the forward pass (on a GPU: queueing it)
  backward,          // the backward pass (on a GPU: queueing it)
  allreduce,         // one gradient bucket summed over the ranks, start to finish
  gradient_wait,     // the main thread waits for the buckets still in flight
  optimizer_update,  // loss-scale check and SGD update
  evaluation,        // the validation split scored
  checkpoint,        // a checkpoint written (rank 0) or waited for (the others)
};
const char* trace_event_name(TraceEvent event);

// The thread an event ran on: the Chrome format's tid.
enum class TraceThread : std::uint8_t { main = 1, communication = 2 };

class TraceRecorder {
 public:
  using Clock = std::chrono::steady_clock;

  // `events_per_step`: how many events a step records at most (the buffer holds the window's); more
  // are counted as dropped, never allocated for.
  TraceRecorder(TraceWindow window, std::size_t events_per_step);
  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;

  // The training loop starts `step` (numbered as the window is): events are recorded while it is in
  // the window.
  void begin_step(std::int64_t step);
  bool recording() const { return recording_.load(std::memory_order_relaxed); }
  // Whether `step` is the window's last: the trace is complete once it ends.
  bool is_last_step(std::int64_t step) const { return step == window_.last; }
  const TraceWindow& window() const { return window_; }

  // `index`: the bucket of an allreduce, -1 otherwise. Ignored while not recording.
  void record(TraceEvent event, TraceThread thread, Clock::time_point start, Clock::time_point end, int index = -1);

  std::size_t event_count() const;
  std::size_t dropped() const;

  // The Chrome trace event JSON of what was recorded: a process named "rank R on NODE", its threads
  // named, then the events ordered by start (an enclosing event before what it encloses). Times are
  // microseconds since the Unix epoch (the system clock when the recorder was made, advanced by the
  // steady clock), so the files of several ranks can be merged into one timeline.
  std::string chrome_trace_json(int rank, const std::string& node) const;

 private:
  struct Event {
    Clock::time_point start, end;
    std::int64_t step;
    std::int32_t index;
    TraceEvent event;
    TraceThread thread;
  };

  const TraceWindow window_;
  const Clock::time_point steady_origin_;
  const std::int64_t epoch_origin_ns_;  // the system clock at steady_origin_
  std::atomic<bool> recording_{false};
  std::atomic<std::int64_t> step_{0};
  mutable std::mutex mutex_;
  std::vector<Event> events_;  // reserved for the window; never grows past it
  std::size_t dropped_ = 0;
};

// Records one event from its construction to finish() or its destruction, when `recorder` is not
// null and is recording at construction.
class TraceSpan {
 public:
  TraceSpan(TraceRecorder* recorder, TraceEvent event, TraceThread thread = TraceThread::main, int index = -1)
      : recorder_(recorder != nullptr && recorder->recording() ? recorder : nullptr),
        event_(event),
        thread_(thread),
        index_(index) {
    if (recorder_ != nullptr) start_ = TraceRecorder::Clock::now();
  }
  ~TraceSpan() { finish(); }
  TraceSpan(const TraceSpan&) = delete;
  TraceSpan& operator=(const TraceSpan&) = delete;

  // Ends the event now (once; the destructor then does nothing).
  void finish() {
    if (recorder_ == nullptr) return;
    recorder_->record(event_, thread_, start_, TraceRecorder::Clock::now(), index_);
    recorder_ = nullptr;
  }

 private:
  TraceRecorder* recorder_;
  TraceEvent event_;
  TraceThread thread_;
  int index_;
  TraceRecorder::Clock::time_point start_{};
};

}  // namespace dptrain
