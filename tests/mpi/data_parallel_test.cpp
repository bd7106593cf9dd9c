// Data parallelism is exact: LeNet (no batch norm) trained for 20 steps on N ranks with batch b per
// rank ends with the parameters of one process trained with batch N*b on the same samples; the
// hierarchical allreduce gives what the flat one gives, and overlapping the reduction with the
// backward pass changes nothing at all.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "dptrain/distributed/communicator.hpp"
#include "dptrain/distributed/gradient_reducer.hpp"
#include "dptrain/distributed/launcher.hpp"
#include "dptrain/distributed/parameter_sync.hpp"
#include "dptrain/net/models/registry.hpp"
#include "dptrain/train/synthetic.hpp"
#include "dptrain/train/trainer.hpp"
#include "mpi_testing.hpp"

using namespace dptrain;
using namespace dptrain::distributed;

namespace {
testing::MpiVerdict verdict;
constexpr int kSteps = 20, kPerRank = 4, kClasses = 10;
constexpr std::uint64_t kSeed = 7;

struct Run {
  std::vector<std::vector<float>> parameters;  // host copies, in build order
  std::vector<std::string> names;
  ReducerStats stats;
};

// Trains LeNet for kSteps; this process holds samples [first, first + batch) of each global batch of
// `global` samples. `comm` null: alone, no reduction.
Run train(int batch, std::int64_t offset_in_step, int global, Communicator* comm, ReducerConfig reducer_config,
          int steps = kSteps) {
  auto backend = make_cpu_backend();
  ModelConfig model;
  model.batch = batch;
  model.channels = 1;
  model.image_size = 28;
  model.classes = kClasses;
  auto net = build_model("lenet", *backend, model);
  net->initialize(kSeed);
  TrainerConfig tc;
  tc.seed = kSeed;
  tc.schedule.kind = ScheduleKind::constant;
  tc.schedule.lr_per_256 = 0.05;
  tc.schedule.global_batch = global;
  tc.schedule.total_steps = kSteps;
  Trainer trainer(*net, tc);
  std::unique_ptr<GradientReducer> reducer;
  if (comm) {
    broadcast_parameters(*net, *comm);
    reducer = std::make_unique<GradientReducer>(*backend, *comm, net->parameters(), reducer_config);
    reducer->attach(*net);
  }
  for (int step = 0; step < steps; ++step) {
    const std::int64_t first = static_cast<std::int64_t>(step) * global + offset_in_step;
    fill_synthetic_batch(*backend, kSeed, first, kClasses, net->images(), net->labels());
    trainer.step(0, first);
  }
  Run run;
  for (Parameter* p : net->parameters()) {
    const Tensor host = backend->to_host(p->value);
    run.parameters.emplace_back(host.data<float>(), host.data<float>() + host.numel());
    run.names.push_back(p->name);
  }
  if (reducer) run.stats = reducer->stats();
  return run;
}

// The largest, over the parameters, of |a - b| / |b| (L2 norms).
double relative_difference(const Run& a, const Run& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.parameters.size(); ++i) {
    double diff = 0, norm = 0;
    for (std::size_t k = 0; k < a.parameters[i].size(); ++k) {
      const double d = static_cast<double>(a.parameters[i][k]) - b.parameters[i][k];
      diff += d * d;
      norm += static_cast<double>(b.parameters[i][k]) * b.parameters[i][k];
    }
    worst = std::max(worst, std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30));
  }
  return worst;
}

bool identical(const Run& a, const Run& b) {
  for (std::size_t i = 0; i < a.parameters.size(); ++i) {
    if (std::memcmp(a.parameters[i].data(), b.parameters[i].data(), a.parameters[i].size() * sizeof(float)) != 0) {
      return false;
    }
  }
  return true;
}
}  // namespace

int main() {
  MpiSession session;
  MPI_Comm world = session.active() ? MPI_COMM_WORLD : MPI_COMM_NULL;
  const Topology natural = discover_topology(world, 0, 0, nullptr);
  const int size = natural.size(), rank = natural.rank;
  const int global = size * kPerRank;
  ReducerConfig small_buckets;
  small_buckets.bucket_bytes = 64 << 10;  // LeNet's 1.7 MB in several buckets

  const Run reference = train(global, 0, global, nullptr, small_buckets);
  // The comparison means something only if training moved the weights well beyond the tolerance.
  const double moved = relative_difference(train(global, 0, global, nullptr, small_buckets, 0), reference);
  verdict.expect(moved > 1e-3, "20 steps changed the parameters by " + std::to_string(moved));

  auto flat = make_communicator(natural, {AllreduceKind::flat, 120, ""});
  const Run overlapped = train(kPerRank, rank * kPerRank, global, flat.get(), small_buckets);
  // One step differs by ~5e-7 (the sums run in another order); a learning rate far above LeNet's
  // stable range (0.1 per 256) would amplify that into chaos, so the test stays below it.
  const double flat_error = relative_difference(overlapped, reference);
  verdict.expect(flat_error < 1e-5, std::to_string(size) + " ranks x batch " + std::to_string(kPerRank) +
                                        " vs 1 x batch " + std::to_string(global) + ": relative difference " +
                                        std::to_string(flat_error));

  ReducerConfig no_overlap = small_buckets;
  no_overlap.overlap = false;
  const Run sequential = train(kPerRank, rank * kPerRank, global, flat.get(), no_overlap);
  verdict.expect(identical(sequential, overlapped), "overlap on and off give identical parameters");

  ReducerConfig one_bucket;
  const Run whole = train(kPerRank, rank * kPerRank, global, flat.get(), one_bucket);
  verdict.expect(relative_difference(whole, overlapped) < 1e-6, "one 25 MB bucket and many small ones agree");

  if (size >= 2) {
    const Topology nodes = discover_topology(world, size >= 4 ? 2 : 1, 0, nullptr);
    auto hierarchical = make_communicator(nodes, {AllreduceKind::hierarchical, 120, ""});
    const Run hier = train(kPerRank, rank * kPerRank, global, hierarchical.get(), small_buckets);
    const double hier_error = relative_difference(hier, overlapped);
    verdict.expect(hier_error < 1e-5,
                   hierarchical->name() + " vs flat: relative difference " + std::to_string(hier_error));
    // Every rank must hold the same parameters.
    double mine = 0;
    for (const auto& p : hier.parameters) {
      for (float v : p) mine += v;
    }
    std::vector<double> sums(static_cast<std::size_t>(size));
    flat->allgather(&mine, sums.data(), sizeof mine);
    verdict.expect(std::all_of(sums.begin(), sums.end(), [&](double s) { return s == sums[0]; }),
                   "all ranks hold identical parameters");
    verdict.expect(overlapped.stats.steps == kSteps && overlapped.stats.bytes == 431080 * 4,
                   "the reducer counted " + std::to_string(overlapped.stats.steps) + " steps of " +
                       std::to_string(overlapped.stats.bytes) + " bytes");
  }
  if (rank == 0) {
    std::printf("%d ranks: vs one process %.2e (weights moved %.2e); overlap hid %.0f%% of %.3f s of communication\n",
                size, flat_error, moved, 100 * overlapped.stats.hidden_fraction(),
                overlapped.stats.communication_seconds);
  }
  return verdict.finish("data_parallel");
}
