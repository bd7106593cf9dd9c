#include "distributed_options.hpp"

#include "option_checks.hpp"

namespace dptrain::app {

void add_loader_threads_option(CLI::App* cmd, int& threads) {
  cmd->add_option("--loader-threads,--threads", threads,
                  "Data loading threads per rank (default: the cores of the rank's CPU set that its compute "
                  "threads leave free, at least 1)")
      ->check(at_least(0));
}

void add_job_control_options(CLI::App* cmd, distributed::JobOptions& o) {
  const char* group = "Distributed (under srun or mpiexec)";
  cmd->add_option("--ranks-per-node", o.ranks_per_node,
                  "Treat each block of K consecutive ranks as one node (default: nodes from SLURMD_NODENAME or the "
                  "host name)")
      ->check(at_least(0))
      ->group(group);
  cmd->add_option("--stall-timeout", o.stall_timeout,
                  "Abort the job when a collective waits longer than this (300s, 5m, 1h), naming the ranks that "
                  "stopped answering (exit code 76) or else the late ones")
      ->check(positive_duration("--stall-timeout"))
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--failure-report", o.failure_report,
                  "When ranks stop answering, rank 0 writes their nodes here before the job ends (one line "
                  "'node=N rank=R silent_seconds=S' each); slurm/train.sbatch continues without those nodes. "
                  "A rank that crashes writes 'rank=R host=H signal=S' to PATH.crashed.R; slurm/train.sbatch "
                  "starts the step again")
      ->check(output_file())
      ->group(group);
}

void add_distributed_options(CLI::App* cmd, distributed::JobOptions& o) {
  const char* group = "Distributed (under srun or mpiexec)";
  cmd->add_option("--allreduce", o.allreduce,
                  "Gradient allreduce: auto (hierarchical on several nodes of several ranks), flat, or hierarchical "
                  "(reduce-scatter in the node, allreduce between nodes, allgather in the node)")
      ->check(CLI::IsMember({"auto", "flat", "hierarchical"}))
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--bucket-mb", o.bucket_mb, "Gradients reduced together, in MB (reverse layer order)")
      ->check(above_zero())
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--overlap", o.overlap,
                  "Reduce gradient buckets while the backward pass runs: on, off, or auto (on, unless a rank's "
                  "CPU set has no core beyond its compute threads, where the waiting would slow the backward pass)")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str()
      ->group(group);
  add_job_control_options(cmd, o);
}

}  // namespace dptrain::app
