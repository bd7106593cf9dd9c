#include "dptrain/core/trace_recorder.hpp"

#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "dptrain/core/error.hpp"

using namespace dptrain;
using Clock = TraceRecorder::Clock;

namespace {
// The "X" events of a trace, in file order.
std::vector<nlohmann::json> complete_events(const nlohmann::json& trace) {
  std::vector<nlohmann::json> events;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "X") events.push_back(e);
  }
  return events;
}
}  // namespace

TEST_CASE("trace windows are FIRST:LAST step numbers, checked in words") {
  const TraceWindow w = parse_trace_window("5:24");
  CHECK(w.first == 5);
  CHECK(w.last == 24);
  CHECK(w.steps() == 20);
  CHECK_FALSE(w.contains(4));
  CHECK(w.contains(5));
  CHECK(w.contains(24));
  CHECK_FALSE(w.contains(25));
  CHECK(parse_trace_window("7:7").steps() == 1);
  CHECK_THROWS_WITH(parse_trace_window("24"), Catch::Contains("is not FIRST:LAST"));
  CHECK_THROWS_WITH(parse_trace_window("a:b"), Catch::Contains("is not FIRST:LAST"));
  CHECK_THROWS_WITH(parse_trace_window("-1:5"), Catch::Contains("is not FIRST:LAST"));
  CHECK_THROWS_WITH(parse_trace_window("0:5"), Catch::Contains("1 <= FIRST <= LAST"));
  CHECK_THROWS_WITH(parse_trace_window("9:5"), Catch::Contains("1 <= FIRST <= LAST"));
  CHECK_THROWS_WITH(parse_trace_window("1:10001"), Catch::Contains("at most 10000"));
  CHECK(parse_trace_window("1:10000").steps() == kMaxTraceSteps);
}

TEST_CASE("a trace records only the steps of its window") {
  TraceRecorder trace(TraceWindow{2, 3}, 4);
  CHECK_FALSE(trace.recording());  // before the first step
  for (std::int64_t step = 1; step <= 4; ++step) {
    trace.begin_step(step);
    CHECK(trace.recording() == (step == 2 || step == 3));
    TraceSpan span(&trace, TraceEvent::step);
  }
  CHECK(trace.is_last_step(3));
  CHECK_FALSE(trace.is_last_step(4));
  CHECK(trace.event_count() == 2);
  const nlohmann::json parsed = nlohmann::json::parse(trace.chrome_trace_json(0, "n1"));
  const auto events = complete_events(parsed);
  REQUIRE(events.size() == 2);
  CHECK(events[0].at("name") == "step 2");
  CHECK(events[0].at("args").at("step") == 2);
  CHECK(events[1].at("name") == "step 3");
  CHECK(parsed.at("otherData").at("first_step") == 2);
  CHECK(parsed.at("otherData").at("last_step") == 3);
}

TEST_CASE("a null recorder records nothing and a span started outside the window stays out") {
  { TraceSpan nothing(nullptr, TraceEvent::forward); }
  TraceRecorder trace(TraceWindow{1, 1}, 4);
  TraceSpan before(&trace, TraceEvent::data_wait);  // not recording yet
  trace.begin_step(1);
  before.finish();
  CHECK(trace.event_count() == 0);
}

TEST_CASE("a trace is Chrome trace JSON: named process and threads, events ordered and nested") {
  TraceRecorder trace(TraceWindow{1, 10}, 8);
  trace.begin_step(1);
  const Clock::time_point t0 = Clock::now();
  const auto at = [t0](int microseconds) { return t0 + std::chrono::microseconds(microseconds); };
  // Recorded out of order, as two threads would: the file is ordered by start, enclosing first.
  trace.record(TraceEvent::allreduce, TraceThread::communication, at(150), at(400), 1);
  trace.record(TraceEvent::backward, TraceThread::main, at(100), at(300));
  trace.record(TraceEvent::forward, TraceThread::main, at(0), at(100));
  trace.record(TraceEvent::step, TraceThread::main, at(0), at(500));
  trace.record(TraceEvent::gradient_wait, TraceThread::main, at(300), at(400));
  trace.record(TraceEvent::optimizer_update, TraceThread::main, at(400), at(500));

  const nlohmann::json parsed = nlohmann::json::parse(trace.chrome_trace_json(3, "node-a"));
  REQUIRE(parsed.contains("traceEvents"));
  std::map<std::string, nlohmann::json> metadata;
  for (const auto& e : parsed.at("traceEvents")) {
    if (e.at("ph") != "M") continue;
    CHECK(e.at("pid") == 3);
    metadata[e.at("name").get<std::string>() + "/" + std::to_string(e.at("tid").get<int>())] = e.at("args");
  }
  CHECK(metadata.at("process_name/0").at("name") == "rank 3 on node-a");
  CHECK(metadata.at("thread_name/1").at("name") == "main");
  CHECK(metadata.at("thread_name/2").at("name") == "communication");

  const auto events = complete_events(parsed);
  REQUIRE(events.size() == 6);
  const std::vector<std::string> names = {"step 1",        "forward",         "backward", "allreduce bucket 1",
                                          "gradient wait", "optimizer update"};
  for (std::size_t i = 0; i < events.size(); ++i) {
    INFO(events[i].dump());
    CHECK(events[i].at("name") == names[i]);
    CHECK(events[i].at("pid") == 3);
    if (i > 0) CHECK(events[i].at("ts").get<double>() >= events[i - 1].at("ts").get<double>());
  }
  CHECK(events[0].at("cat") == "step");
  CHECK(events[3].at("tid") == 2);
  CHECK(events[3].at("args").at("bucket") == 1);
  CHECK(events[3].at("cat") == "communication");
  CHECK(events[1].at("tid") == 1);
  // Microseconds: starts whole, durations to the exact end.
  CHECK(events[0].at("ts").is_number_integer());
  CHECK(events[0].at("dur").get<double>() == Approx(500).margin(1));
  CHECK(events[3].at("dur").get<double>() == Approx(250).margin(1));
  CHECK(events[3].at("ts").get<double>() - events[0].at("ts").get<double>() == Approx(150).margin(1));
  // On the Unix epoch's scale (after 2020), so ranks' files can be merged into one timeline.
  CHECK(events[0].at("ts").get<double>() > 1.5e15);
  CHECK(parsed.at("otherData").at("rank") == 3);
  CHECK(parsed.at("otherData").at("node") == "node-a");
  CHECK(parsed.at("otherData").at("events_dropped") == 0);
}

TEST_CASE("a trace's buffer never grows: events beyond the window's share are counted as dropped") {
  TraceRecorder trace(TraceWindow{1, 2}, 3);  // room for 6
  trace.begin_step(1);
  const Clock::time_point t = Clock::now();
  for (int i = 0; i < 10; ++i) trace.record(TraceEvent::allreduce, TraceThread::communication, t, t, i);
  CHECK(trace.event_count() == 6);
  CHECK(trace.dropped() == 4);
  const nlohmann::json parsed = nlohmann::json::parse(trace.chrome_trace_json(0, "n"));
  CHECK(parsed.at("otherData").at("events_dropped") == 4);
  CHECK(complete_events(parsed).size() == 6);
}

TEST_CASE("threads record into one trace at once") {
  TraceRecorder trace(TraceWindow{1, 1}, 2000);
  trace.begin_step(1);
  std::thread other([&] {
    for (int i = 0; i < 1000; ++i) TraceSpan span(&trace, TraceEvent::allreduce, TraceThread::communication, i);
  });
  for (int i = 0; i < 1000; ++i) TraceSpan span(&trace, TraceEvent::backward);
  other.join();
  CHECK(trace.event_count() == 2000);
  const auto events = complete_events(nlohmann::json::parse(trace.chrome_trace_json(0, "n")));
  REQUIRE(events.size() == 2000);
  for (std::size_t i = 1; i < events.size(); ++i) {
    CHECK(events[i].at("ts").get<double>() >= events[i - 1].at("ts").get<double>());
  }
}

TEST_CASE("node names that are not UTF-8 still give valid JSON") {
  TraceRecorder trace(TraceWindow{1, 1}, 1);
  const nlohmann::json parsed = nlohmann::json::parse(trace.chrome_trace_json(0, "caf\xe9"));
  CHECK(parsed.at("otherData").at("node") == "caf\xef\xbf\xbd");
}
