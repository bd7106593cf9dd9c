// Our allreduce next to plain MPI_Allreduce on the same buffer, in the same run, and the share of the
// gradient communication that the backward pass hides.
//
//   mpiexec -n 4 allreduce_bench [--ranks-per-node K] [--model googlenet] [--batch 4] [--steps 4]
//
// For buffers of 1 to 256 MB it times MPI_Allreduce (the reference), our flat allreduce (MPI_Iallreduce
// waited for by polling, as the gradient reducer runs it) and, with several simulated nodes, our
// hierarchical one, and prints each one's bus bandwidth (bytes x 2(N-1)/N / time, the figure NCCL's
// tests print, comparable across rank counts) and the ratio to the reference. The calls alternate, so
// a change in the machine's load hits all of them alike; each figure is the median of the repetitions.
// Then it trains MODEL for a few steps with the overlapping gradient reducer and prints how much of
// the communication time was hidden behind the backward pass (1 - exposed / total).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "dptrain/core/check_mpi.hpp"
#include "dptrain/distributed/gradient_reducer.hpp"
#include "dptrain/distributed/job.hpp"
#include "dptrain/distributed/mpi_lock.hpp"
#include "dptrain/net/models/registry.hpp"
#include "dptrain/train/synthetic.hpp"
#include "dptrain/train/trainer.hpp"

using namespace dptrain;
using namespace dptrain::distributed;

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The same time on every rank: the slowest rank's.
double slowest(double seconds) {
  MpiLock lock;  // the job's heartbeat thread calls MPI too (mpi_lock.hpp)
  DPTRAIN_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
  return seconds;
}

template <typename Call>
double time_once(Call&& call) {
  {
    MpiLock lock;
    DPTRAIN_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
  }
  const double start = MPI_Wtime();
  call();
  return slowest(MPI_Wtime() - start);
}

void bandwidth_table(Job& job, Communicator* hierarchical) {
  const int n = job.size();
  const double bus_factor = 2.0 * (n - 1) / n;
  if (job.is_root()) {
    std::printf("%d ranks; bus bandwidth in GB/s (median), ratio to MPI_Allreduce on the same buffer\n", n);
    std::printf("%8s  %14s  %14s  %7s", "size MB", "MPI_Allreduce", "ours, flat", "ratio");
    if (hierarchical) std::printf("  %14s  %7s", "ours, hier.", "ratio");
    std::printf("\n");
  }
  for (int mb : {1, 4, 16, 64, 256}) {
    const std::size_t count = static_cast<std::size_t>(mb) << 18;  // floats
    std::vector<float> buffer(count, 1.f);
    const int reps = mb >= 64 ? 5 : 10;
    std::vector<double> reference, flat, hier;
    for (int r = 0; r < reps + 1; ++r) {  // the first round warms up the buffers and connections
      const double a = time_once([&] {
        MpiLock lock;
        DPTRAIN_MPI_CHECK(
            MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
      });
      const double b = time_once([&] { job.communicator().allreduce_sum(buffer.data(), count); });
      const double c = hierarchical ? time_once([&] { hierarchical->allreduce_sum(buffer.data(), count); }) : 0;
      if (r == 0) continue;
      reference.push_back(a);
      flat.push_back(b);
      hier.push_back(c);
      std::fill(buffer.begin(), buffer.end(), 1.f);  // keep the values finite
    }
    const double bytes = static_cast<double>(count) * sizeof(float) * bus_factor;
    const double ref_bw = bytes / median(reference) / 1e9, flat_bw = bytes / median(flat) / 1e9;
    if (job.is_root()) {
      std::printf("%8d  %14.2f  %14.2f  %7.2f", mb, ref_bw, flat_bw, flat_bw / ref_bw);
      if (hierarchical) {
        const double hier_bw = bytes / median(hier) / 1e9;
        std::printf("  %14.2f  %7.2f", hier_bw, hier_bw / ref_bw);
      }
      std::printf("\n");
    }
  }
}

void overlap_report(Job& job, const std::string& model_name, int batch, int steps) {
  auto backend = make_cpu_backend();
  ModelConfig model;
  model.batch = batch;
  auto net = build_model(model_name, *backend, model);
  net->initialize(1);
  TrainerConfig tc;
  tc.schedule.kind = ScheduleKind::constant;
  tc.schedule.lr_per_256 = 0.01;
  tc.schedule.global_batch = batch * job.size();
  Trainer trainer(*net, tc);
  GradientReducer reducer(*backend, job.communicator(), net->parameters(), job.reducer_config());
  reducer.attach(*net);
  fill_synthetic_batch(*backend, 1, job.rank() * batch, model.classes, net->images(), net->labels());
  trainer.step(0, 0);  // warm-up: plans, first touches
  const ReducerStats before = reducer.stats();
  const double start = MPI_Wtime();
  for (int s = 0; s < steps; ++s) trainer.step(0, 0);
  const double seconds = MPI_Wtime() - start;
  const ReducerStats after = reducer.stats();
  double comm = after.communication_seconds - before.communication_seconds;
  double exposed = after.exposed_seconds - before.exposed_seconds;
  MpiLock lock;
  DPTRAIN_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &comm, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
  DPTRAIN_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &exposed, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
  if (job.is_root()) {
    std::printf(
        "%s, batch %d per rank, %d steps, %zu buckets of up to %.0f MB (%.1f MB of gradients), overlap %s:\n"
        "  step %.3f s, communication %.3f s per step, exposed %.3f s per step: %.0f%% hidden behind the "
        "backward pass\n",
        model_name.c_str(), batch, steps, reducer.bucket_count(), job.options().bucket_mb,
        static_cast<double>(after.bytes) / (1 << 20), job.reducer_config().overlap ? "on" : "off", seconds / steps,
        comm / job.size() / steps, exposed / job.size() / steps,
        comm > 0 ? 100.0 * std::max(0.0, 1.0 - exposed / comm) : 0.0);
  }
}
}  // namespace

int main(int argc, char** argv) {
  JobOptions options;
  std::string model = "googlenet";
  int batch = 4, steps = 4;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--ranks-per-node")
      options.ranks_per_node = std::stoi(value);
    else if (flag == "--model")
      model = value;
    else if (flag == "--batch")
      batch = std::stoi(value);
    else if (flag == "--steps")
      steps = std::stoi(value);
    else if (flag == "--bucket-mb")
      options.bucket_mb = std::stod(value);
    else if (flag == "--overlap")
      options.overlap = value;
    else {
      std::fprintf(stderr,
                   "usage: mpiexec -n N allreduce_bench [--ranks-per-node K] [--model M] [--batch B] "
                   "[--steps S] [--bucket-mb MB] [--overlap auto|on|off]\n");
      return 2;
    }
  }
  options.allreduce = "flat";
  Job job(options);
  if (job.size() < 2) {
    std::fprintf(stderr, "allreduce_bench: run it under mpiexec with 2 or more ranks\n");
    return 2;
  }
  std::unique_ptr<Communicator> hierarchical;
  if (job.topology().node_count > 1 && job.topology().uniform) {
    hierarchical = make_communicator(job.topology(), {AllreduceKind::hierarchical, 600, ""});
  }
  bandwidth_table(job, hierarchical.get());
  overlap_report(job, model, batch, steps);
  return 0;
}
