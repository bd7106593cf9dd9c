#pragma once
// Turns a hung collective into an error that names the late ranks.
//
// Each rank counts the collectives it starts and tells rank 0 the count with a tiny non-blocking
// message on a communicator of its own (so it never matches the job's traffic). Every wait polls its
// request; when one has waited longer than the timeout, rank 0 names the ranks whose count is behind
// its own and aborts the job. The other ranks wait a grace period longer, so that rank 0 reports
// first, and then abort, saying so (if rank 0 is the late one, nobody else can name it).
#include <mpi.h>

#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

namespace dptrain::dist {

class StallWatch {
 public:
  StallWatch(MPI_Comm world, double timeout_seconds);
  ~StallWatch();
  StallWatch(const StallWatch&) = delete;
  StallWatch& operator=(const StallWatch&) = delete;

  // A collective starts: counts it and tells rank 0. `what` names it in a report.
  void started(const char* what);
  // Polls `request` until it completes; aborts the job when it stalls past the timeout.
  void wait(MPI_Request& request);

  std::int64_t count() const { return count_; }
  double timeout_seconds() const { return timeout_; }

 private:
  void drain_heartbeats();  // rank 0: record every count that has arrived
  void clean_sends();       // completed heartbeat sends
  [[noreturn]] void report_stall(double waited);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  double timeout_;
  std::int64_t count_ = 0;
  const char* what_ = "";
  double started_at_ = 0;
  std::vector<std::int64_t> seen_;  // rank 0: the latest count of every rank
  struct Send {
    std::int64_t value;
    MPI_Request request;
  };
  std::deque<Send> sends_;
};

}  // namespace dptrain::dist
