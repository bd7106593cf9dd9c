#include "dptrain/distributed/stall_watch.hpp"

#include <chrono>
#include <sstream>

#include "dptrain/core/check_mpi.hpp"
#include "dptrain/distributed/launcher.hpp"

namespace dptrain::distributed {
namespace {
constexpr int kHeartbeatTag = 7301;
// Non-root ranks give rank 0 this long to name the late ranks before they abort themselves.
constexpr double kGraceSeconds = 5;
// How often the watchdog looks at the clock and drains the counts.
constexpr auto kWatchdogPeriod = std::chrono::milliseconds(100);
}  // namespace

StallWatch::StallWatch(MPI_Comm world, double timeout_seconds, bool watchdog) : timeout_(timeout_seconds) {
  DPTRAIN_MPI_CHECK(MPI_Comm_dup(world, &comm_));
  DPTRAIN_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  DPTRAIN_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  DPTRAIN_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  if (rank_ == 0) seen_.assign(static_cast<std::size_t>(size_), 0);
  if (watchdog) watchdog_ = std::thread([this] { run_watchdog(); });
}

StallWatch::~StallWatch() {
  if (watchdog_.joinable()) {
    {
      std::lock_guard lock(stop_mutex_);
      stopping_ = true;
    }
    stop_signal_.notify_all();
    watchdog_.join();
  }
  // Heartbeats still in flight at the end of the job are cancelled; nobody will read them.
  for (Send& s : sends_) {
    MPI_Cancel(&s.request);
    MPI_Request_free(&s.request);
  }
  if (rank_ == 0) drain_heartbeats();
  MPI_Comm_free(&comm_);
}

void StallWatch::run_watchdog() {
  std::unique_lock lock(stop_mutex_);
  while (!stop_signal_.wait_for(lock, kWatchdogPeriod, [this] { return stopping_; })) {
    if (rank_ == 0) drain_heartbeats();
    check_clock();
  }
}

void StallWatch::begin_long_wait(const char* why, const char* option, double seconds) {
  option_ = option;
  long_limit_ = seconds;
  why_ = why;
}

void StallWatch::end_long_wait() { why_ = nullptr; }

void StallWatch::started(const char* what) {
  const std::int64_t count = ++count_;
  what_ = what;
  const char* why = why_;
  const bool longer = why != nullptr && long_limit_ > timeout_;
  // The start time first, then the limit: the watchdog reads them the other way round, so it can
  // pair a new start with the previous (longer or equal) limit, never a long-past start with a new,
  // shorter limit (which would report a stall that is not one).
  started_at_ = MPI_Wtime();
  limit_ = longer ? long_limit_.load() : timeout_;
  limit_option_ = longer ? option_.load() : "--stall-timeout";
  limit_why_ = why;
  running_ = true;
  if (rank_ == 0) {
    std::lock_guard lock(seen_mutex_);
    seen_[0] = count;
    return;
  }
  clean_sends();
  sends_.push_back({count, MPI_REQUEST_NULL});
  DPTRAIN_MPI_CHECK(MPI_Isend(&sends_.back().value, 1, MPI_INT64_T, 0, kHeartbeatTag, comm_, &sends_.back().request));
}

void StallWatch::finished() { running_ = false; }

void StallWatch::clean_sends() {
  while (!sends_.empty()) {
    int done = 0;
    DPTRAIN_MPI_CHECK(MPI_Test(&sends_.front().request, &done, MPI_STATUS_IGNORE));
    if (!done) break;
    sends_.pop_front();
  }
}

void StallWatch::drain_heartbeats() {
  std::lock_guard lock(seen_mutex_);
  for (;;) {
    int waiting = 0;
    MPI_Status status;
    DPTRAIN_MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, kHeartbeatTag, comm_, &waiting, &status));
    if (!waiting) return;
    std::int64_t value = 0;
    DPTRAIN_MPI_CHECK(MPI_Recv(&value, 1, MPI_INT64_T, status.MPI_SOURCE, kHeartbeatTag, comm_, MPI_STATUS_IGNORE));
    auto& seen = seen_[static_cast<std::size_t>(status.MPI_SOURCE)];
    seen = std::max(seen, value);
  }
}

void StallWatch::check_clock() {
  if (!running_) return;
  const double limit = limit_;  // before the start time (see started())
  const double waited = MPI_Wtime() - started_at_;
  if (waited > limit + (rank_ == 0 ? 0 : kGraceSeconds)) report_stall(waited);
}

void StallWatch::wait(MPI_Request& request) {
  // Spin briefly (small buckets finish in microseconds), then sleep in short steps so the polling
  // thread leaves the cores to the backward pass while a large bucket is on the wire.
  auto pause = std::chrono::microseconds(1);
  int spins = 0;
  for (;;) {
    int done = 0;
    DPTRAIN_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    if (rank_ == 0) drain_heartbeats();
    check_clock();
    if (++spins < 64) continue;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(20));
  }
}

void StallWatch::report_stall(double waited) {
  std::ostringstream out;
  const std::int64_t count = count_;
  const char* why = limit_why_;
  out << "collective #" << count << " (" << what_.load() << (why ? ", " : "") << (why ? why : "") << ") has waited "
      << static_cast<int>(waited) << " s, longer than " << limit_option_.load() << " " << limit_.load() << " s; ";
  if (rank_ == 0) {
    std::vector<int> late;
    std::lock_guard lock(seen_mutex_);
    for (int r = 0; r < size_; ++r) {
      if (seen_[static_cast<std::size_t>(r)] < count) late.push_back(r);
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

}  // namespace dptrain::distributed
