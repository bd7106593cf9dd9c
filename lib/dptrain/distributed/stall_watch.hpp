#pragma once
// Turns a hung collective into an error that names the late ranks.
//
// Each rank counts the collectives it starts and tells rank 0 the count with a tiny non-blocking
// message on a communicator of its own (so it never matches the job's traffic). When a collective
// has run longer than the timeout, rank 0 names the ranks whose count is behind its own and aborts
// the job. The other ranks wait a grace period longer, so that rank 0 reports first, and then
// abort, saying so (if rank 0 is the late one, nobody else can name it).
//
// Two ways to watch: with MPI_THREAD_MULTIPLE a watchdog thread checks the clock and drains the
// counts while the caller sits in a blocking collective (the fast path: Open MPI's blocking
// allreduce is ~1.4x faster than its non-blocking one); without it, the caller starts non-blocking
// collectives and polls them through wait(), checking the clock itself.
//
// A long wait (begin_long_wait) is a stretch of the job in which collectives may legitimately wait
// much longer than the stall timeout: the ranks wait while rank 0 alone writes a checkpoint or reads
// and validates the candidates at resume, which on a busy parallel file system takes minutes. Every
// rank enters it together; until it ends, the watchdog gives each collective the long wait's own
// limit (when longer) and names it and its option in a report.
#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace dptrain::distributed {

class StallWatch {
 public:
  // `watchdog`: run the watchdog thread (requires MPI_THREAD_MULTIPLE).
  StallWatch(MPI_Comm world, double timeout_seconds, bool watchdog);
  ~StallWatch();
  StallWatch(const StallWatch&) = delete;
  StallWatch& operator=(const StallWatch&) = delete;

  // True: collectives may block; the watchdog thread guards them. False: use wait().
  bool guards_blocking_calls() const { return watchdog_.joinable(); }
  // A collective starts (counts it and tells rank 0) / has finished. `what` names it in a report.
  void started(const char* what);
  void finished();
  // Polls `request` until it completes, aborting the job when it stalls past the timeout.
  void wait(MPI_Request& request);
  // Collectives started from now until end_long_wait() wait up to `seconds` (or the stall timeout, if
  // longer); `why` and `option` ("--checkpoint-timeout") name the wait in a report. String literals.
  void begin_long_wait(const char* why, const char* option, double seconds);
  void end_long_wait();

  double timeout_seconds() const { return timeout_; }

 private:
  void drain_heartbeats();  // rank 0: record every count that has arrived
  void clean_sends();       // completed heartbeat sends
  void check_clock();       // aborts when the running collective is past the deadline
  void run_watchdog();
  [[noreturn]] void report_stall(double waited);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  double timeout_;
  // The long wait in force (why_ null: none); read by the watchdog thread.
  std::atomic<const char*> why_{nullptr}, option_{"--stall-timeout"};
  std::atomic<double> long_limit_{0};
  std::atomic<std::int64_t> count_{0};
  std::atomic<const char*> what_{""};
  std::atomic<double> started_at_{0};
  std::atomic<double> limit_{0};  // of the running collective
  std::atomic<const char*> limit_option_{"--stall-timeout"}, limit_why_{nullptr};
  std::atomic<bool> running_{false};  // a collective is in progress

  std::mutex seen_mutex_;
  std::vector<std::int64_t> seen_;  // rank 0: the latest count of every rank
  struct Send {
    std::int64_t value;
    MPI_Request request;
  };
  std::deque<Send> sends_;  // touched only by the thread calling collectives

  std::thread watchdog_;
  std::mutex stop_mutex_;
  std::condition_variable stop_signal_;
  bool stopping_ = false;
};

}  // namespace dptrain::distributed
