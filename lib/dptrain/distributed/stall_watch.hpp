#pragma once
// Turns a hung collective into an error that names the rank to blame, and its node.
//
// Two kinds of evidence, both tiny non-blocking messages on a communicator of the watch's own (so
// they never match the job's traffic):
// - counts: each rank counts the collectives it starts and tells rank 0 the count at each start;
//   a rank whose count is behind rank 0's has not reached the collective yet ("late");
// - heartbeats: a thread of the watch sends the count to rank 0 every second, also while its rank
//   waits inside a collective, and rank 0 sends one to every rank; a rank that has gone silent for
//   several seconds is frozen (SIGSTOP, a hung driver call holding every thread), killed, or on a lost
//   node, which tells it apart from a rank that is merely slow and from a slow network.
// When a collective has run longer than its limit, rank 0 names the silent ranks, else the late ones,
// else says that every rank is alive and inside the collective (the network or a GPU is stuck), and
// aborts the job; silent ranks end it with exit code kExitRanksLost, after their nodes are written to
// the failure report (for slurm/train.sbatch, which continues without those nodes). The other ranks
// wait a grace period longer, so that rank 0 reports first, then abort naming rank 0 if it is silent.
//
// Every MPI call is made under the MPI lock and none blocks (mpi_lock.hpp): collectives are started
// non-blocking and polled through wait(), which releases the lock between tests.
//
// A long wait (begin_long_wait) is a stretch of the job in which collectives may legitimately wait
// much longer than the stall timeout: the ranks wait while rank 0 alone writes a checkpoint or reads
// and validates the candidates at resume, which on a busy parallel file system takes minutes. Every
// rank enters it together; until it ends, each collective gets the long wait's own limit (when
// longer), and a report names it and its option. Rank 0's heartbeats go on during its work, so a
// rank 0 that froze while writing is still named as silent.
#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dptrain/core/exit_codes.hpp"

namespace dptrain::distributed {

// The exit code of a job that ended because ranks stopped answering (their nodes are named): a batch
// script may go on without those nodes. Documented in slurm/README.md.
constexpr int kExitRanksLost = exit_code::ranks_lost;

struct StallWatchOptions {
  double timeout_seconds = 300;     // --stall-timeout
  std::vector<std::string> nodes;   // each rank's node name, for reports (empty: unnamed)
  bool heartbeat_thread = true;     // false: MPI allows only the main thread (no overlap either)
  std::string failure_report;       // --failure-report: rank 0 writes the silent ranks' nodes here
  double heartbeat_seconds = 1;     // how often each rank says it is alive
  double silent_after_seconds = 5;  // a rank unheard of for this long is silent
};

class StallWatch {
 public:
  StallWatch(MPI_Comm world, StallWatchOptions options);
  ~StallWatch();
  StallWatch(const StallWatch&) = delete;
  StallWatch& operator=(const StallWatch&) = delete;

  // A collective starts (counts it and tells rank 0) / has finished. `what` names it in a report.
  void started(const char* what);
  void finished();
  // Polls `request` (under the MPI lock) until it completes; the job is aborted when the running
  // collective is past its limit.
  void wait(MPI_Request& request);
  // The same for work MPI does not see (a NCCL collective on a stream): polls `done` until it is true;
  // `before_abort` runs before the job is aborted (to abort the NCCL communicator).
  void wait_until(const std::function<bool()>& done, const std::function<void()>& before_abort);
  // Collectives started from now until end_long_wait() wait up to `seconds` (or the stall timeout, if
  // longer); `why` and `option` ("--checkpoint-timeout") name the wait in a report. String literals.
  void begin_long_wait(const char* why, const char* option, double seconds);
  void end_long_wait();

  double timeout_seconds() const { return options_.timeout_seconds; }

 private:
  void beat();              // under the MPI lock: drain heartbeats, send this period's (when due)
  void drain_heartbeats();  // record every count and heartbeat that has arrived
  void send(int to, std::int64_t value);
  void clean_sends();              // completed heartbeat sends
  void lost_connection(int rank);  // under the MPI lock: a heartbeat to `rank` failed
  bool leave_together();           // the end-of-job barrier; false: not every rank arrived in time
  void check_clock(const std::function<void()>& before_abort);
  void run_heartbeats();
  [[noreturn]] void report_stall(double waited, const std::function<void()>& before_abort);
  std::string describe_rank(int rank) const;
  // Writes the --failure-report (one "node=N rank=R silent_seconds=S" line a rank); returns "" or
  // a note for the report that it could not be written.
  std::string write_failure_report(const std::vector<int>& ranks, const std::function<double(int)>& silent_for) const;

  StallWatchOptions options_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  // The long wait in force (why_ null: none).
  std::atomic<const char*> why_{nullptr}, option_{"--stall-timeout"};
  std::atomic<double> long_limit_{0};
  std::atomic<std::int64_t> count_{0};
  std::atomic<const char*> what_{""};
  std::atomic<double> started_at_{0};
  std::atomic<double> limit_{0};  // of the running collective
  std::atomic<const char*> limit_option_{"--stall-timeout"}, limit_why_{nullptr};
  std::atomic<bool> running_{false};  // a collective is in progress
  std::atomic<bool> reporting_{false};

  // Under the MPI lock: what was heard of each rank (rank 0: every rank; others: rank 0 only).
  std::vector<std::int64_t> seen_;  // the latest count
  std::vector<double> heard_at_;    // MPI_Wtime of the latest message
  std::vector<char> lost_;          // a heartbeat to this rank failed: none are sent to it any more
  double last_beat_ = 0;
  struct Send {
    std::int64_t value;
    int to;
    MPI_Request request;
  };
  std::deque<Send> sends_;

  std::thread heartbeats_;
  std::mutex stop_mutex_;
  std::condition_variable stop_signal_;
  bool stopping_ = false;
};

}  // namespace dptrain::distributed
