#pragma once
// The distributed side of one dptrain run: the MPI session, where every rank sits, and the
// communicator its gradients and metrics go through. Made once by a command, passed down.
#include <memory>
#include <string>

#include "dptrain/distributed/communicator.hpp"
#include "dptrain/distributed/gradient_reducer.hpp"
#include "dptrain/distributed/launch_check.hpp"
#include "dptrain/distributed/launcher.hpp"
#include "dptrain/distributed/topology.hpp"

namespace dptrain::distributed {

struct JobOptions {
  std::string allreduce = "auto";    // --allreduce auto|flat|hierarchical
  int ranks_per_node = 0;            // --ranks-per-node (0: from Slurm or the host name)
  double bucket_mb = 25;             // --bucket-mb
  std::string overlap = "auto";      // --overlap auto|on|off
  std::string stall_timeout = "5m";  // --stall-timeout
  std::string failure_report;        // --failure-report
};

class Job {
 public:
  // `visible_devices`: GPUs this process sees (0 on the CPU backend).
  Job(const JobOptions& options, int visible_devices = 0);
  ~Job();

  int rank() const { return topology_.rank; }
  int size() const { return topology_.size(); }
  bool is_root() const { return topology_.rank == 0; }
  const Topology& topology() const { return topology_; }
  Communicator& communicator() { return *communicator_; }
  ReducerConfig reducer_config() const;
  // How the job's collectives are made (kind, stall timeout): for the GPU gradient communicator.
  const CommunicatorOptions& communicator_options() const { return communicator_options_; }
  const JobOptions& options() const { return options_; }
  int compute_threads() const { return compute_threads_; }  // 0: not set by the job (one rank)
  // Launches that run but not as meant (launch_check.hpp), the same on every rank; rank 0 prints them.
  const std::vector<LaunchWarning>& launch_warnings() const { return launch_warnings_; }

 private:
  JobOptions options_;
  MpiSession session_;
  Topology topology_;
  CommunicatorOptions communicator_options_;
  std::unique_ptr<Communicator> communicator_;
  int compute_threads_ = 0;
  bool overlap_ = true;
  std::vector<LaunchWarning> launch_warnings_;
};

}  // namespace dptrain::distributed
