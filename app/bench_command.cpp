// dptrain bench: training throughput of a model on synthetic data, with the machine's measured peak
// from the same run, so efficiency is a ratio of two numbers measured together. Under srun or
// mpiexec every rank trains its own batch and the gradients are averaged as in `dptrain train`; the
// rate is global (all ranks' images over the slowest rank's step time), which is what the scaling
// study divides by the one-GPU rate.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>

#include "backend_options.hpp"
#include "bench_result.hpp"
#include "commands.hpp"
#include "distributed_options.hpp"
#include "dptrain/core/byte_size.hpp"
#include "dptrain/core/json_line.hpp"
#include "dptrain/core/record_json.hpp"
#include "dptrain/net/memory_estimate.hpp"
#include "dptrain/train/layer_profile.hpp"
#include "dptrain/train/statistics.hpp"
#include "dptrain/train/synthetic.hpp"
#include "dptrain/train/training_stack.hpp"
#include "layer_table.hpp"
#include "option_checks.hpp"

namespace dptrain::app {
namespace {
// Steps `--layers` profiles after the timed ones (the table gives their mean).
constexpr int kProfiledSteps = 3;

struct BenchOptions {
  std::string model;
  int batch = 16;
  int steps = 20;
  int warmup = 3;
  int image_size = 0;
  int classes = 1000;
  std::uint64_t seed = 1;
  std::string json;
  bool layers = false;
  distributed::JobOptions dist;
  BackendOptions device;
};

// The most memory this process used: the GPU allocator's peak on CUDA (`gpu_mib`, from
// peak_device_mib), the peak resident set on the CPU (where gpu_mib is negative).
std::size_t peak_memory_bytes(double gpu_mib) {
  if (gpu_mib >= 0) return static_cast<std::size_t>(gpu_mib * (1 << 20));
  rusage usage{};
  DPTRAIN_CHECK(getrusage(RUSAGE_SELF, &usage) == 0, "getrusage failed");
  return static_cast<std::size_t>(usage.ru_maxrss) * 1024;  // Linux reports kilobytes
}

int run_bench(const BenchOptions& o) {
  distributed::Job job(o.dist, visible_devices(o.device));
  distributed::Communicator& comm = job.communicator();
  const int ranks = job.size(), global_batch = o.batch * ranks;
  std::ostream discard(nullptr);  // the other ranks print nothing
  std::ostream& out = job.is_root() ? std::cout : discard;
  if (job.is_root()) std::cerr << distributed::describe(job.launch_warnings());  // stdout: the results
  ModelConfig config;
  config.batch = o.batch;
  config.image_size = o.image_size;
  config.classes = o.classes;
  TrainingStack stack(job, o.device, o.model, config, o.seed);
  Backend& backend = stack.backend();
  Net& net = stack.net();
  TrainerConfig trainer_config;
  trainer_config.seed = o.seed;
  trainer_config.schedule.kind = ScheduleKind::constant;
  trainer_config.schedule.lr_per_256 = 0.01;
  trainer_config.schedule.global_batch = global_batch;
  trainer_config.loss_scale = loss_scale_config(o.device);
  Trainer& trainer = stack.start_training(trainer_config);
  const distributed::GradientReducer& reducer = stack.reducer();
  // One synthetic batch per rank, reused: the benchmark measures compute, not data generation.
  fill_synthetic_batch(backend, o.seed, static_cast<std::int64_t>(job.rank()) * o.batch, o.classes, net.images(),
                       net.labels());

  const int size = static_cast<int>(net.image_shape()[2]);
  out << "dptrain bench: " << o.model << ", " << ranks << " rank" << (ranks == 1 ? "" : "s") << " x batch " << o.batch
      << ", " << size << "x" << size << ", " << backend.name() << ", " << o.device.precision << ", " << o.warmup
      << " warm-up + " << o.steps << " timed steps\n";
  if (ranks > 1)
    out << "gradients: " << reducer.communicator().name() << ", " << reducer.bucket_count() << " buckets\n";
  std::vector<double> step_seconds;
  double compute_sum = 0;  // this rank's compute before it waited for gradients, over the timed steps
  distributed::ReducerStats before;
  // Each step's score is read once the next step is queued, as `dptrain train` reads it, so the device
  // is never idle while the host reads; a step's time runs from the read of the one before it to its
  // own read. The first step (which measures the algorithms) is read at once.
  struct Queued {
    QueuedStep step;
    int index = 0;
    std::chrono::steady_clock::time_point start;
    double gradients_ready_at = 0;
  };
  std::optional<Queued> unread;
  const bool late_reads = trainer.late_reads_pay(ranks);  // else each step is read at once
  std::chrono::steady_clock::time_point last_read{};
  const auto read = [&](Queued& q) {
    const StepResult r = q.step.result();
    const auto now = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(now - std::max(q.start, last_read)).count();
    last_read = now;
    if (q.index >= o.warmup) {
      step_seconds.push_back(seconds);
      compute_sum += TrainingStack::compute_seconds(q.gradients_ready_at, q.start, seconds);
    }
    out << "  step " << std::setw(3) << q.index + 1 << (q.index < o.warmup ? " (warm-up)" : "          ") << "  loss "
        << std::fixed << std::setprecision(4) << r.loss << "  " << std::setprecision(2) << global_batch / seconds
        << " img/s\n";
  };
  for (int s = 0; s < o.warmup + o.steps; ++s) {
    if (s == o.warmup) before = reducer.stats();
    const auto start = std::chrono::steady_clock::now();
    Queued queued{trainer.queue_step(0, 0), s, start, stack.gradients_ready_at()};
    if (unread) read(*unread);
    unread = std::move(queued);
    if (s == 0 || !late_reads) {
      read(*unread);
      unread.reset();
    }
  }
  if (unread) read(*unread);
  unread.reset();
  // Where the time goes, after the timed steps so that the marks do not slow them.
  LayerProfile layer_profile;
  if (o.layers) {
    LayerProfiler profiler(net);
    for (int s = 0; s < kProfiledSteps; ++s) {
      (void)trainer.step(0, 0);
      profiler.step_finished();
    }
    layer_profile = profiler.profile();
  }
  // The slowest rank's mean compute a step: what the scaling model (dptrain predict) starts from.
  double compute_per_step = compute_sum / std::max(1, o.steps);
  comm.allreduce(&compute_per_step, 1, distributed::ElementType::f64, distributed::ReduceOp::max);
  // A step ends for the job when its slowest rank ends it.
  comm.allreduce(step_seconds.data(), step_seconds.size(), distributed::ElementType::f64, distributed::ReduceOp::max);
  std::vector<double> rates;
  for (double seconds : step_seconds) rates.push_back(global_batch / seconds);
  const Summary rate = summarize(rates);
  const distributed::ReducerStats after = reducer.stats();
  const double comm_seconds = after.communication_seconds - before.communication_seconds;
  const double hidden =
      comm_seconds > 0 ? std::max(0.0, 1.0 - (after.exposed_seconds - before.exposed_seconds) / comm_seconds) : 0.0;
  const double memory_mib = peak_device_mib(backend);
  // What `dptrain inspect` plans for this run, beside what it used (the GPU allocator's peak does not
  // include the CUDA context; the resident set includes the program and its libraries).
  MemoryEstimateOptions estimate_options;
  estimate_options.precision = parse_precision(o.device.precision);
  estimate_options.cuda = !backend.device().is_cpu();
  estimate_options.ranks = ranks;
  const std::vector<ConvolutionSearch> searches = backend.convolution_searches();
  if (!searches.empty()) estimate_options.workspace_cap = searches.front().workspace_cap_bytes;
  const MemoryEstimate estimate = estimate_memory(net, estimate_options);
  const std::size_t planned_bytes =
      (o.device.memory_plan ? estimate.total() : estimate.total_unplanned()) - estimate.reserved;
  const std::size_t peak_bytes = peak_memory_bytes(memory_mib);
  const AlgorithmSearchStats search = backend.algorithm_search();
  // A training step costs about three forward passes (forward, backward-data, backward-weights).
  const double flops_per_image = 3.0 * net.flops_per_sample();
  const double achieved = rate.mean * flops_per_image / 1e9;
  const double peak = backend.measure_peak_gflops() * ranks;  // every rank measures its own device
  if (!job.is_root()) return 0;
  if (ranks > 1) {
    out << std::setprecision(0) << "communication: " << 100.0 * hidden << "% hidden behind the backward pass ("
        << std::setprecision(3) << comm_seconds / o.steps << " s per step)\n";
  }
  out << std::setprecision(2) << "images/sec: " << rate.mean << " +/- " << rate.stderr_of_mean << " (min " << rate.min
      << ", max " << rate.max << ")\n"
      << "GFLOP/s:    " << achieved << " achieved (3 x " << std::setprecision(3) << net.flops_per_sample() / 1e9
      << " GFLOP forward per image), " << std::setprecision(2) << peak
      << " peak (sgemm, same run): " << std::setprecision(1) << 100.0 * achieved / peak << "% of peak\n";
  if (trainer.loss_scaler().enabled()) {
    out << "loss scale: " << trainer.loss_scaler().scale() << " (" << trainer.loss_scaler().skipped_steps()
        << " steps skipped on overflow)\n";
  }
  if (memory_mib > 0) std::cout << "GPU memory: " << std::setprecision(0) << memory_mib << " MiB peak in use\n";
  out << "peak memory: " << format_bytes(static_cast<double>(peak_bytes))
      << (memory_mib >= 0 ? " (GPU allocator)" : " resident") << ", planned "
      << format_bytes(static_cast<double>(planned_bytes)) << " (ratio " << std::setprecision(2)
      << static_cast<double>(peak_bytes) / static_cast<double>(planned_bytes) << ")"
      << (o.device.memory_plan ? "" : ", one buffer per tensor (--no-memory-plan)") << "\n";
  if (search.searches > 0) {
    out << "cuDNN algorithm search: " << std::setprecision(2) << search.seconds << " s in the first step, "
        << search.searches << " searches (" << search.reused << " reused by another layer of the same shape), "
        << (o.device.deterministic ? "deterministic algorithms" : "any algorithm (--nondeterministic)");
    if (search.nondeterministic_fallbacks > 0) {
      out << ", " << search.nondeterministic_fallbacks << " with no deterministic one that ran";
    }
    out << "\n";
  }
  if (o.layers) {
    print_layer_tables(out, layer_profile,
                       backend.device().is_cpu() ? "host clock" : "CUDA events on the compute stream");
    print_convolution_searches(out, searches);
  }
  if (!o.json.empty()) {
    BenchResult result;
    result.model = o.model;
    result.backend = backend.name();
    result.precision = o.device.precision;
    result.batch_size = o.batch;
    result.image_size = size;
    result.world_size = ranks;
    result.global_batch = global_batch;
    result.steps = o.steps;
    result.warmup = o.warmup;
    result.allreduce = reducer.communicator().name();
    result.communication_hidden_fraction = hidden;
    result.images_per_sec = rate.mean;
    result.images_per_sec_stderr = rate.stderr_of_mean;
    result.images_per_sec_min = rate.min;
    result.images_per_sec_max = rate.max;
    result.gflops_achieved = achieved;
    result.gflops_peak = peak;
    result.efficiency = achieved / peak;
    result.gpu_memory_peak_mib = memory_mib;
    result.peak_memory_bytes = static_cast<std::int64_t>(peak_bytes);
    result.planned_memory_bytes = static_cast<std::int64_t>(planned_bytes);
    result.memory_planned = o.device.memory_plan;
    result.cudnn_search_seconds = search.seconds;
    result.cudnn_searches = search.searches;
    result.cudnn_search_reused = search.reused;
    result.cudnn_nondeterministic_fallbacks = search.nondeterministic_fallbacks;
    result.deterministic = o.device.deterministic;
    result.forward_gflops_per_image = net.flops_per_sample() / 1e9;
    result.parameters = net.parameter_count();
    // What `dptrain report --profile` and `dptrain predict` need beside the rate.
    result.classes = o.classes;
    result.gradient_bytes = static_cast<std::int64_t>(net.parameter_count() * 4);
    result.compute_seconds_per_step = compute_per_step;
    std::ofstream file(o.json);
    DPTRAIN_CHECK(file.good(), "cannot write the benchmark result to '", o.json, "'");
    file << json_line(record_json<nlohmann::ordered_json>(result)) << "\n";
    file.close();
    DPTRAIN_CHECK(file.good(), "writing the benchmark result to '", o.json, "' failed");
  }
  return 0;
}
}  // namespace

Command add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench",
                                 "Measure training images/sec of a model on synthetic data, next to the "
                                 "machine's measured fp32 peak");
  auto o = std::make_shared<BenchOptions>();
  cmd->add_option("--model", o->model, "Model name (see 'dptrain inspect --list')")->required();
  cmd->add_option("--batch-size", o->batch, "Images per step on each rank")->check(at_least(1))->capture_default_str();
  cmd->add_option("--steps", o->steps, "Timed steps")->check(at_least(1))->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "Untimed steps first")->check(at_least(0))->capture_default_str();
  cmd->add_option("--image-size", o->image_size, "Input height and width (default: the model's own)")
      ->check(at_least(1));
  cmd->add_option("--classes", o->classes, "Number of classes")->check(in_range(2, 1 << 20))->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the weights and the synthetic data")->capture_default_str();
  cmd->add_option("--json", o->json, "Also write the result as JSON to this file (rank 0)")->check(output_file());
  cmd->add_flag("--layers", o->layers,
                "Also time every layer's forward and backward pass (3 more steps after the timed ones) and print "
                "where the time goes per layer kind and per layer, and cuDNN's best against its best deterministic "
                "algorithm for every convolution");
  add_distributed_options(cmd, o->dist);
  add_backend_options(cmd, o->device, true);
  return [o] { return run_bench(*o); };
}

}  // namespace dptrain::app
