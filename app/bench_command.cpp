// dptrain bench: training throughput of a model on synthetic data, with the machine's measured peak
// from the same run, so efficiency is a ratio of two numbers measured together. Launched as several
// MPI ranks (srun, mpiexec), every rank trains on its own batch, the gradients are averaged with
// MPI_Allreduce after the backward pass of each layer, and rank 0 reports the throughput of all ranks.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "commands.hpp"
#include "datasets/mpi_world.hpp"
#include "dptrain/core/check_mpi.hpp"
#include "dptrain/net/models/registry.hpp"
#include "dptrain/train/statistics.hpp"
#include "dptrain/train/synthetic.hpp"
#include "dptrain/train/trainer.hpp"
#include "json_writer.hpp"

namespace dptrain::app {
namespace {
struct BenchOptions {
  std::string model;
  int batch = 16;
  int steps = 20;
  int warmup = 3;
  int image_size = 0;
  int classes = 1000;
  std::uint64_t seed = 1;
  std::string json;
};

// One value reduced over the ranks with `op` (MPI_MAX: the slowest rank's step time sets the pace).
double reduce_over_ranks(const datasets::MpiWorld& mpi, double value, MPI_Op op) {
  if (mpi.size() > 1) MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, op, MPI_COMM_WORLD));
  return value;
}

int bench(const BenchOptions& o, const datasets::MpiWorld& mpi) {
  auto backend = make_cpu_backend();
  ModelConfig config;
  config.batch = o.batch;
  config.image_size = o.image_size;
  config.classes = o.classes;
  auto net = build_model(o.model, *backend, config);
  net->initialize(o.seed);
  TrainerConfig trainer_config;
  trainer_config.seed = o.seed;
  trainer_config.schedule.kind = ScheduleKind::constant;
  trainer_config.schedule.lr_per_256 = 0.01;
  trainer_config.schedule.global_batch = o.batch * mpi.size();
  Trainer trainer(*net, trainer_config);
  if (mpi.size() > 1) {
    // Data parallelism, plainly: each parameter's gradient is averaged as soon as it is final.
    const float scale = 1.0F / static_cast<float>(mpi.size());
    net->on_gradient_ready([scale](Parameter& p) {
      DPTRAIN_CHECK(p.grad.dtype() == DType::f32, "bench: the gradient of ", p.name, " is not fp32");
      float* g = p.grad.data<float>();
      MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, g, static_cast<int>(p.grad.numel()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
      std::transform(g, g + p.grad.numel(), g, [scale](float v) { return v * scale; });
    });
  }
  // One synthetic batch, reused: the benchmark measures compute, not data generation.
  fill_synthetic_batch(*backend, o.seed, 0, o.classes, net->images(), net->labels());

  const int size = static_cast<int>(net->image_shape()[2]);
  const int world = mpi.size();
  const bool root = mpi.rank() == 0;
  // Only rank 0 speaks; the others write to a stream that is never flushed anywhere.
  std::ostringstream silent;
  std::ostream& log = root ? std::cout : silent;
  log << "dptrain bench: " << o.model << ", batch " << o.batch << (world > 1 ? " per rank x " + std::to_string(world) + " ranks" : "")
      << ", " << size << "x" << size << ", " << backend->name() << ", " << o.warmup << " warm-up + " << o.steps
      << " timed steps\n";
  const int global_batch = o.batch * world;
  std::vector<double> rates;
  for (int s = 0; s < o.warmup + o.steps; ++s) {
    const auto start = std::chrono::steady_clock::now();
    const StepResult r = trainer.step(0, static_cast<std::int64_t>(mpi.rank()) * o.batch);
    const double seconds = reduce_over_ranks(
        mpi, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), MPI_MAX);
    if (s >= o.warmup) rates.push_back(global_batch / seconds);
    log << "  step " << std::setw(3) << s + 1 << (s < o.warmup ? " (warm-up)" : "          ") << "  loss "
        << std::fixed << std::setprecision(4) << r.loss << "  " << std::setprecision(2) << global_batch / seconds
        << " img/s\n";
  }
  const Summary rate = summarize(rates);
  // A training step costs about three forward passes (forward, backward-data, backward-weights).
  const double flops_per_image = 3.0 * net->flops_per_sample();
  const double achieved = rate.mean * flops_per_image / 1e9;
  // Every rank measures its device's peak at the same time; the job's peak is their sum.
  const double peak = reduce_over_ranks(mpi, backend->measure_peak_gflops(), MPI_SUM);
  if (!root) return 0;
  std::cout << std::setprecision(2) << "images/sec: " << rate.mean << " +/- " << rate.stderr_of_mean
            << " (min " << rate.min << ", max " << rate.max << ")\n"
            << "GFLOP/s:    " << achieved << " achieved (3 x " << std::setprecision(3)
            << net->flops_per_sample() / 1e9 << " GFLOP forward per image), " << std::setprecision(2) << peak
            << " peak (sgemm, same run): " << std::setprecision(1) << 100.0 * achieved / peak << "% of peak\n";
  if (!o.json.empty()) {
    std::ofstream out(o.json);
    DPTRAIN_CHECK(out.good(), "cannot write the benchmark result to '", o.json, "'");
    JsonWriter j(out);
    j.field("model", o.model).field("backend", backend->name()).field("batch_size", o.batch);
    j.field("image_size", size).field("world_size", world).field("steps", o.steps).field("warmup", o.warmup);
    j.field("images_per_sec", rate.mean).field("images_per_sec_stderr", rate.stderr_of_mean);
    j.field("images_per_sec_min", rate.min).field("images_per_sec_max", rate.max);
    j.field("gflops_achieved", achieved).field("gflops_peak", peak).field("efficiency", achieved / peak);
    j.field("forward_gflops_per_image", net->flops_per_sample() / 1e9).field("parameters", net->parameter_count());
    j.field("gradient_exchange", world > 1 ? "mpi_allreduce" : "none");
    j.close();
    DPTRAIN_CHECK(out.good(), "writing the benchmark result to '", o.json, "' failed");
  }
  return 0;
}

int run_bench(const BenchOptions& o) {
  // MPI only when a launcher (srun, mpiexec) started several ranks; a plain start stays one process.
  const datasets::MpiWorld mpi;
  try {
    return bench(o, mpi);
  } catch (const std::exception& e) {
    if (mpi.size() == 1) throw;
    // A failing rank ends the whole job instead of leaving the others waiting in an allreduce.
    std::cerr << "dptrain: error on rank " << mpi.rank() << ": " << e.what() << std::endl;
    mpi.abort(1);
  }
}
}  // namespace

Command add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Measure training images/sec of a model on synthetic data, next to the "
                                          "machine's measured fp32 peak");
  auto o = std::make_shared<BenchOptions>();
  cmd->add_option("--model", o->model, "Model name (see 'dptrain inspect --list')")->required();
  cmd->add_option("--batch-size", o->batch, "Images per step")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--steps", o->steps, "Timed steps")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "Untimed steps first")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--image-size", o->image_size, "Input height and width (default: the model's own)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--classes", o->classes, "Number of classes")->check(CLI::Range(2, 1 << 20))->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the weights and the synthetic data")->capture_default_str();
  cmd->add_option("--json", o->json, "Also write the result as JSON to this file");
  return [o] { return run_bench(*o); };
}

}  // namespace dptrain::app
