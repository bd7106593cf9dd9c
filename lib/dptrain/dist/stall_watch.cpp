#include "dptrain/dist/stall_watch.hpp"

#include <chrono>
#include <sstream>
#include <thread>

#include "dptrain/core/check_mpi.hpp"
#include "dptrain/dist/launcher.hpp"

namespace dptrain::dist {
namespace {
constexpr int kHeartbeatTag = 7301;
// Non-root ranks give rank 0 this long to name the late ranks before they abort themselves.
constexpr double kGraceSeconds = 5;
}  // namespace

StallWatch::StallWatch(MPI_Comm world, double timeout_seconds) : timeout_(timeout_seconds) {
  MPI_CHECK(MPI_Comm_dup(world, &comm_));
  MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  MPI_CHECK(MPI_Comm_size(comm_, &size_));
  if (rank_ == 0) seen_.assign(static_cast<std::size_t>(size_), 0);
}

StallWatch::~StallWatch() {
  // Heartbeats still in flight at the end of the job are cancelled; nobody will read them.
  for (Send& s : sends_) {
    MPI_Cancel(&s.request);
    MPI_Request_free(&s.request);
  }
  if (rank_ == 0) drain_heartbeats();
  MPI_Comm_free(&comm_);
}

void StallWatch::started(const char* what) {
  ++count_;
  what_ = what;
  started_at_ = MPI_Wtime();
  if (rank_ == 0) {
    seen_[0] = count_;
    drain_heartbeats();
    return;
  }
  clean_sends();
  sends_.push_back({count_, MPI_REQUEST_NULL});
  MPI_CHECK(MPI_Isend(&sends_.back().value, 1, MPI_INT64_T, 0, kHeartbeatTag, comm_, &sends_.back().request));
}

void StallWatch::clean_sends() {
  while (!sends_.empty()) {
    int done = 0;
    MPI_CHECK(MPI_Test(&sends_.front().request, &done, MPI_STATUS_IGNORE));
    if (!done) break;
    sends_.pop_front();
  }
}

void StallWatch::drain_heartbeats() {
  for (;;) {
    int waiting = 0;
    MPI_Status status;
    MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, kHeartbeatTag, comm_, &waiting, &status));
    if (!waiting) return;
    std::int64_t value = 0;
    MPI_CHECK(MPI_Recv(&value, 1, MPI_INT64_T, status.MPI_SOURCE, kHeartbeatTag, comm_, MPI_STATUS_IGNORE));
    auto& seen = seen_[static_cast<std::size_t>(status.MPI_SOURCE)];
    seen = std::max(seen, value);
  }
}

void StallWatch::wait(MPI_Request& request) {
  // Spin briefly (small buckets finish in microseconds), then sleep in growing steps so the polling
  // thread leaves the cores to the backward pass while a large bucket is on the wire.
  auto pause = std::chrono::microseconds(1);
  int spins = 0;
  for (;;) {
    int done = 0;
    MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    if (rank_ == 0) drain_heartbeats();
    const double waited = MPI_Wtime() - started_at_;
    if (waited > timeout_ + (rank_ == 0 ? 0 : kGraceSeconds)) report_stall(waited);
    if (++spins < 64) continue;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(200));
  }
}

void StallWatch::report_stall(double waited) {
  std::ostringstream out;
  out << "collective #" << count_ << " (" << what_ << ") has waited " << static_cast<int>(waited)
      << " s, longer than --stall-timeout " << timeout_ << " s; ";
  if (rank_ == 0) {
    std::vector<int> late;
    for (int r = 0; r < size_; ++r) {
      if (seen_[static_cast<std::size_t>(r)] < count_) late.push_back(r);
    }
    out << "late ranks:";
    for (int r : late) out << " " << r << " (at collective #" << seen_[static_cast<std::size_t>(r)] << ")";
    if (late.empty()) out << " none (all have started it; the network or a GPU is stuck)";
  } else {
    out << "rank 0 did not report the late ranks, so rank 0 itself is probably late";
  }
  out << "; aborting the job";
  abort_job(out.str(), 1);
}

}  // namespace dptrain::dist
