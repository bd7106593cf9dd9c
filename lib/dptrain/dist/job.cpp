#include "dptrain/dist/job.hpp"

#include "dptrain/core/duration.hpp"
#include "dptrain/core/error.hpp"
#include "dptrain/dist/compute_threads.hpp"

namespace dptrain::dist {

Job::Job(const JobOptions& options, int visible_devices) : options_(options) {
  DPTRAIN_CHECK(options_.bucket_mb > 0, "--bucket-mb must be positive, not ", options_.bucket_mb);
  CommunicatorOptions comm;
  comm.kind = parse_allreduce_kind(options_.allreduce);
  comm.stall_timeout_seconds = parse_duration_seconds(options_.stall_timeout, "--stall-timeout");
  topology_ = discover_topology(session_.active() ? MPI_COMM_WORLD : MPI_COMM_NULL, options_.ranks_per_node,
                                visible_devices, nullptr);
  communicator_ = make_communicator(topology_, comm);
  if (topology_.size() > 1) compute_threads_ = set_compute_threads(topology_);
  if (!session_.threads_ok() && options_.overlap) {
    // The reducer's thread would call MPI while the main thread also may; without "serialized"
    // support that is undefined, so the reduction runs after the backward pass instead.
    options_.overlap = false;
  }
}

Job::~Job() = default;

ReducerConfig Job::reducer_config() const {
  ReducerConfig c;
  c.bucket_bytes = static_cast<std::size_t>(options_.bucket_mb * (1 << 20));
  c.overlap = options_.overlap;
  return c;
}

}  // namespace dptrain::dist
