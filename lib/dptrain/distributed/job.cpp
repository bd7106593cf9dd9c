#include "dptrain/distributed/job.hpp"

#include "dptrain/core/crash_report.hpp"
#include "dptrain/core/duration.hpp"
#include "dptrain/core/error.hpp"
#include "dptrain/distributed/compute_threads.hpp"
#include "dptrain/distributed/cpu_load_check.hpp"

namespace dptrain::distributed {
namespace {
// A rank that dies of a signal leaves a record beside the --failure-report (slurm/train.sbatch starts
// such a step again). Set before MPI_Init (session_), which connects the ranks and can crash.
const JobOptions& recording_crashes(const JobOptions& options) {
  if (!options.failure_report.empty()) record_crashes_in(options.failure_report + ".crashed");
  return options;
}
}  // namespace

Job::Job(const JobOptions& options, int visible_devices) : options_(recording_crashes(options)) {
  DPTRAIN_CHECK(options_.bucket_mb > 0, "--bucket-mb must be positive, not ", options_.bucket_mb);
  CommunicatorOptions comm;
  comm.kind = parse_allreduce_kind(options_.allreduce);
  // Checked on one rank too, so that a job script's typo fails on a laptop before it reaches a cluster.
  comm.stall_timeout_seconds = parse_positive_duration_seconds(options_.stall_timeout, "--stall-timeout");
  comm.failure_report = options_.failure_report;
  const MPI_Comm world = session_.active() ? MPI_COMM_WORLD : MPI_COMM_NULL;
  topology_ = discover_topology(world, options_.ranks_per_node, visible_devices, nullptr);
  launch_warnings_ = check_launch(topology_, gather_launches(world, local_launch(visible_devices)));
  // On the CPU backend: OpenMP threads that would spin on an already busy machine.
  if (visible_devices == 0) {
    if (auto busy = check_cpu_load(topology_, local_cpu_load())) launch_warnings_.push_back(*busy);
  }
  communicator_options_ = comm;
  communicator_ = make_communicator(topology_, comm);
  if (topology_.size() > 1) compute_threads_ = set_compute_threads(topology_);
  DPTRAIN_CHECK(options_.overlap == "auto" || options_.overlap == "on" || options_.overlap == "off",
                "--overlap must be auto, on or off, not '", options_.overlap, "'");
  if (options_.overlap == "auto") {
    // The reducer's thread waits for the other ranks by spinning inside MPI. On a rank whose CPU set
    // holds no core beyond its compute threads (mpiexec --bind-to core, srun --cpu-bind=cores with
    // OMP_NUM_THREADS = cpus-per-task) it would take that time from the backward pass: measured on
    // googlenet, 2 ranks bound to one core each ran at 2.4 img/s with overlap and 8.6 without.
    const int cpus = cpu_count(topology_.self().cpu_set);
    overlap_ = visible_devices > 0 || cpus == 0 || cpus > std::max(compute_threads_, 1);
  } else {
    overlap_ = options_.overlap == "on";
  }
  // Without at least "serialized" thread support a second thread must not call MPI at all.
  if (!session_.threads_ok()) overlap_ = false;
}

Job::~Job() = default;

ReducerConfig Job::reducer_config() const {
  ReducerConfig c;
  c.bucket_bytes = static_cast<std::size_t>(options_.bucket_mb * (1 << 20));
  c.overlap = overlap_;
  return c;
}

}  // namespace dptrain::distributed
