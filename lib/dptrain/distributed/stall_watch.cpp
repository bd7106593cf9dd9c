#include "dptrain/distributed/stall_watch.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "dptrain/core/check_mpi.hpp"
#include "dptrain/distributed/launcher.hpp"
#include "dptrain/distributed/mpi_lock.hpp"

namespace dptrain::distributed {
namespace {
constexpr int kHeartbeatTag = 7301;
// Non-root ranks give rank 0 this long to name the ranks to blame before they abort themselves.
constexpr double kGraceSeconds = 5;
// How often the heartbeat thread looks at the clock and at the messages that have arrived.
constexpr auto kWatchPeriod = std::chrono::milliseconds(100);
// Sends not yet completed beyond this many (a peer that reads nothing) are not added to.
constexpr std::size_t kMaxPendingSends = 256;

std::string seconds_text(double seconds) {
  std::ostringstream out;
  out.precision(seconds < 10 ? 1 : 0);
  out << std::fixed << seconds << " s";
  return out.str();
}
}  // namespace

StallWatch::StallWatch(MPI_Comm world, StallWatchOptions options) : options_(std::move(options)) {
  {
    MpiLock lock;
    DPTRAIN_MPI_CHECK(MPI_Comm_dup(world, &comm_));
    DPTRAIN_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    DPTRAIN_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    DPTRAIN_MPI_CHECK(MPI_Comm_size(comm_, &size_));
    seen_.assign(static_cast<std::size_t>(size_), 0);
    lost_.assign(static_cast<std::size_t>(size_), 0);
    heard_at_.assign(static_cast<std::size_t>(size_), MPI_Wtime());
  }
  if (options_.nodes.size() != static_cast<std::size_t>(size_))
    options_.nodes.assign(static_cast<std::size_t>(size_), "");
  if (options_.heartbeat_thread) heartbeats_ = std::thread([this] { run_heartbeats(); });
}

StallWatch::~StallWatch() {
  if (heartbeats_.joinable()) {
    {
      std::lock_guard lock(stop_mutex_);
      stopping_ = true;
    }
    stop_signal_.notify_all();
    heartbeats_.join();
  }
  // While an error unwinds on this rank, the others may be blocked in a collective: leave at once.
  const bool together = std::uncaught_exceptions() == 0 && leave_together();
  MpiLock lock;
  // Heartbeats still in flight at the end of the job are cancelled; nobody will read them.
  for (Send& s : sends_) {
    if (s.request == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&s.request);
    MPI_Request_free(&s.request);
  }
  drain_heartbeats();
  // Freeing a communicator with a collective still pending on it is erroneous: without the barrier's
  // completion the communicator is left to MPI_Finalize.
  if (together) MPI_Comm_free(&comm_);
}

bool StallWatch::leave_together() {
  // A rank that has finished must not close its connections (MPI_Finalize does, before its own
  // barrier) while another rank still sends it heartbeats: over UCX those sends fail ("Endpoint
  // timeout"). Every rank stops its heartbeats first, then waits here for the others to have done so.
  // A rank that never arrives (the job is failing) is waited for up to the stall timeout only.
  MPI_Request barrier = MPI_REQUEST_NULL;
  {
    MpiLock lock;
    if (MPI_Ibarrier(comm_, &barrier) != MPI_SUCCESS) return false;
  }
  const double deadline = MPI_Wtime() + options_.timeout_seconds;
  for (;;) {
    {
      MpiLock lock;
      int done = 0;
      if (MPI_Test(&barrier, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
      if (done) return true;
      drain_heartbeats();
    }
    if (MPI_Wtime() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void StallWatch::run_heartbeats() {
  std::unique_lock lock(stop_mutex_);
  while (!stop_signal_.wait_for(lock, kWatchPeriod, [this] { return stopping_; })) {
    try {
      {
        MpiLock mpi;
        beat();
      }
      check_clock({});
    } catch (const std::exception& e) {
      // The heartbeats only name whom to blame for a stall; losing them must not end a healthy job.
      std::cerr << "dptrain: rank " << rank_ << ": warning: stall watch heartbeats stopped: " << e.what() << std::endl;
      return;
    }
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
  const bool longer = why != nullptr && long_limit_ > options_.timeout_seconds;
  MpiLock lock;
  // The start time first, then the limit: a reader that reads them the other way round can pair a
  // new start with the previous (longer or equal) limit, never a long-past start with a new, shorter
  // limit (which would report a stall that is not one).
  started_at_ = MPI_Wtime();
  limit_ = longer ? long_limit_.load() : options_.timeout_seconds;
  limit_option_ = longer ? option_.load() : "--stall-timeout";
  limit_why_ = why;
  running_ = true;
  seen_[static_cast<std::size_t>(rank_)] = count;
  heard_at_[static_cast<std::size_t>(rank_)] = started_at_;
  if (rank_ != 0) send(0, count);
}

void StallWatch::finished() { running_ = false; }

void StallWatch::send(int to, std::int64_t value) {
  clean_sends();
  if (sends_.size() >= kMaxPendingSends || lost_[static_cast<std::size_t>(to)]) return;
  sends_.push_back({value, to, MPI_REQUEST_NULL});  // a deque keeps the earlier elements in place
  Send& s = sends_.back();
  if (MPI_Isend(&s.value, 1, MPI_INT64_T, to, kHeartbeatTag, comm_, &s.request) != MPI_SUCCESS) {
    lost_connection(to);
    sends_.pop_back();
  }
}

void StallWatch::clean_sends() {
  while (!sends_.empty()) {
    Send& s = sends_.front();
    int done = 0;
    if (MPI_Test(&s.request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
      lost_connection(s.to);  // the request completed, with an error
    } else if (!done) {
      break;
    }
    sends_.pop_front();
  }
}

void StallWatch::lost_connection(int rank) {
  // A heartbeat that cannot be sent is not an error of the job: the peer may just have finished a
  // moment earlier, and if it is lost, the collective that waits for it is reported, naming it, by
  // check_clock(). No more heartbeats go to it; silence is what a lost rank shows.
  lost_[static_cast<std::size_t>(rank)] = 1;
}

void StallWatch::beat() {
  drain_heartbeats();
  const double now = MPI_Wtime();
  if (now - last_beat_ < options_.heartbeat_seconds) return;
  last_beat_ = now;
  heard_at_[static_cast<std::size_t>(rank_)] = now;
  const std::int64_t count = count_;
  if (rank_ != 0) {
    send(0, count);
  } else {
    for (int r = 1; r < size_; ++r) send(r, count);
  }
}

void StallWatch::drain_heartbeats() {
  for (;;) {
    int waiting = 0;
    MPI_Status status;
    // A failed probe or receive (a peer's connection broke) ends this round: what was heard stands.
    if (MPI_Iprobe(MPI_ANY_SOURCE, kHeartbeatTag, comm_, &waiting, &status) != MPI_SUCCESS || !waiting) return;
    std::int64_t value = 0;
    if (MPI_Recv(&value, 1, MPI_INT64_T, status.MPI_SOURCE, kHeartbeatTag, comm_, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return;
    const auto from = static_cast<std::size_t>(status.MPI_SOURCE);
    seen_[from] = std::max(seen_[from], value);
    heard_at_[from] = MPI_Wtime();
  }
}

void StallWatch::check_clock(const std::function<void()>& before_abort) {
  if (!running_) return;
  const double limit = limit_;  // before the start time (see started())
  const double waited = MPI_Wtime() - started_at_;
  if (waited > limit + (rank_ == 0 ? 0 : kGraceSeconds)) report_stall(waited, before_abort);
}

void StallWatch::wait(MPI_Request& request) {
  // Spin briefly (small buckets finish in microseconds), then sleep in short steps so the polling
  // thread leaves the cores to the backward pass while a large bucket is on the wire. The lock is
  // released between tests, so the heartbeat thread and other callers get their turn.
  auto pause = std::chrono::microseconds(1);
  int spins = 0;
  for (;;) {
    int done = 0;
    {
      MpiLock lock;
      DPTRAIN_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
      if (!done && !heartbeats_.joinable()) beat();
    }
    if (done) return;
    check_clock({});
    if (++spins < 64) {
      std::this_thread::yield();
      continue;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(20));
  }
}

void StallWatch::wait_until(const std::function<bool()>& done, const std::function<void()>& before_abort) {
  while (!done()) {
    if (!heartbeats_.joinable()) {
      MpiLock lock;
      beat();
    }
    check_clock(before_abort);
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

std::string StallWatch::describe_rank(int rank) const {
  const std::string& node = options_.nodes[static_cast<std::size_t>(rank)];
  return std::to_string(rank) + (node.empty() ? "" : " on " + node);
}

std::string StallWatch::write_failure_report(const std::vector<int>& ranks,
                                             const std::function<double(int)>& silent_for) const {
  if (options_.failure_report.empty()) return "";
  // Written whole beside the report and renamed over it: a reader never sees half a file.
  const std::string temporary = options_.failure_report + ".tmp" + std::to_string(rank_);
  {
    std::ofstream file(temporary, std::ios::trunc);
    for (int r : ranks) {
      file << "node=" << options_.nodes[static_cast<std::size_t>(r)] << " rank=" << r
           << " silent_seconds=" << static_cast<long>(std::lround(silent_for(r))) << "\n";
    }
    file.flush();
    if (file.good() && std::rename(temporary.c_str(), options_.failure_report.c_str()) == 0) return "";
  }
  std::remove(temporary.c_str());
  return " (could not write --failure-report " + options_.failure_report + ")";
}

void StallWatch::report_stall(double waited, const std::function<void()>& before_abort) {
  // One report per rank: the heartbeat thread and the waiting caller may both find the deadline past.
  if (reporting_.exchange(true)) {
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  std::ostringstream out;
  const std::int64_t count = count_;
  const char* why = limit_why_;
  out << "collective #" << count << " (" << what_.load() << (why ? ", " : "") << (why ? why : "") << ") has waited "
      << static_cast<int>(waited) << " s, longer than " << limit_option_.load() << " " << limit_.load() << " s; ";
  int code = 1;
  {
    MpiLock lock;
    drain_heartbeats();
    const double now = MPI_Wtime();
    auto silent_for = [&](int r) { return r == rank_ ? 0.0 : now - heard_at_[static_cast<std::size_t>(r)]; };
    if (rank_ == 0) {
      std::vector<int> silent, late;
      for (int r = 1; r < size_; ++r) {
        if (silent_for(r) > options_.silent_after_seconds) {
          silent.push_back(r);
        } else if (seen_[static_cast<std::size_t>(r)] < count) {
          late.push_back(r);
        }
      }
      if (!silent.empty()) {
        out << "ranks that stopped answering (frozen, killed, or their node is lost):";
        for (int r : silent) {
          out << " " << describe_rank(r) << " (silent for " << seconds_text(silent_for(r)) << ", at collective #"
              << seen_[static_cast<std::size_t>(r)] << (lost_[static_cast<std::size_t>(r)] ? ", connection lost" : "")
              << ")";
        }
        out << "; ";
        code = kExitRanksLost;
        out << write_failure_report(silent, silent_for);
      }
      out << "late ranks:";
      for (int r : late)
        out << " " << describe_rank(r) << " (at collective #" << seen_[static_cast<std::size_t>(r)] << ")";
      if (late.empty() && silent.empty()) {
        out << " none (every rank is alive and has started it: the network or a GPU is stuck)";
      } else if (late.empty()) {
        out << " none";
      }
    } else if (silent_for(0) > options_.silent_after_seconds) {
      out << "rank " << describe_rank(0) << " stopped answering (silent for " << seconds_text(silent_for(0))
          << ": frozen, killed, or its node is lost)";
      code = kExitRanksLost;
      out << write_failure_report({0}, silent_for);
    } else {
      out << "rank 0 did not report the late ranks, so rank 0 itself is probably late";
    }
  }
  out << "; aborting the job";
  if (before_abort) before_abort();
  abort_job(out.str(), code);
}

}  // namespace dptrain::distributed
