#include "dptrain/train/training_log.hpp"

#include <algorithm>
#include <array>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <vector>

#include "dptrain/core/error.hpp"
#include "dptrain/core/json_line.hpp"
#include "dptrain/train/stragglers.hpp"

namespace dptrain {

TrainingLog::TrainingLog(distributed::Communicator& comm, std::ostream& out, const std::string& metrics_path,
                         std::int64_t total_steps, int global_batch)
    : comm_(comm), root_(comm.rank() == 0), out_(out), total_steps_(total_steps), global_batch_(global_batch) {
  if (root_ && !metrics_path.empty()) {
    metrics_.open(metrics_path);
    DPTRAIN_CHECK(metrics_.good(), metrics_path, ": cannot write the metrics file");
    // Every line reaches the file when written: a job killed at its time limit or with its node keeps
    // the lines of the steps it did (dptrain plot joins them with the requeued run's).
    metrics_ << std::unitbuf;
  }
}

double TrainingLog::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

void TrainingLog::set_run_info(std::string backend, std::string precision) {
  backend_ = std::move(backend);
  precision_ = std::move(precision);
}

void TrainingLog::report_start(std::int64_t first_step, const std::string& model) {
  started_ = std::chrono::steady_clock::now();
  if (!metrics_.is_open()) return;
  JsonLine j(metrics_);
  j.field("type", "start").field("step", first_step).field("total_steps", total_steps_).field("model", model);
  j.field("world_size", comm_.size()).field("global_batch", global_batch_).field("nodes", nodes_);
  j.close();
}

void TrainingLog::record_step(const StepResult& r, int batch, double seconds, double data_wait, double compute) {
  if (images_ > 0) {  // the first step also starts everything up
    straggler_compute_ += compute;
    ++straggler_steps_;
    total_compute_ += compute;
    total_seconds_ += seconds;
    ++total_steps_recorded_;
  }
  loss_sum_ += r.loss;
  correct_ += static_cast<double>(r.top1);
  samples_ += batch;
  seconds_ += seconds;
  wait_ += data_wait;
  compute_ += std::max(0.0, compute - data_wait);  // the window's split: compute without the data wait
  total_wait_ += data_wait;
  if (images_ > 0) {  // the run's first step also starts the loader: not a sign of a slow pipeline
    epoch_seconds_ += seconds;
    epoch_wait_ += data_wait;
  }
  ++steps_;
  images_ += global_batch_;
}

void TrainingLog::report_window(std::int64_t epoch, std::int64_t step, double learning_rate,
                                const distributed::ReducerStats& comm_stats) {
  // Sums over the ranks: loss of each rank's mean, correct, samples, data wait.
  double sums[4] = {loss_sum_, correct_, samples_, wait_};
  comm_.allreduce_sum(sums, 4);
  // Each rank's window, a step: its time, its compute, its data wait and its communication wait.
  const double window_steps = static_cast<double>(std::max<std::int64_t>(steps_, 1));
  const double exposed = comm_stats.exposed_seconds - exposed_before_;
  const std::array<double, 4> mine{seconds_ / window_steps, compute_ / window_steps, wait_ / window_steps,
                                   exposed / window_steps};
  std::vector<std::array<double, 4>> per_rank(static_cast<std::size_t>(comm_.size()));
  comm_.allgather(mine.data(), per_rank.data(), sizeof mine);
  auto column = [&per_rank](std::size_t c) {
    std::vector<double> values;
    for (const auto& r : per_rank) values.push_back(r[c]);
    return values;
  };
  const std::vector<double> step_seconds = column(0);
  const int ranks = comm_.size();
  const double loss = sums[0] / static_cast<double>(ranks * steps_);
  const double accuracy = sums[1] / sums[2];
  const double rate = sums[2] / std::max(seconds_, 1e-12);  // global images over this rank's wall time
  const double wait_fraction = sums[3] / static_cast<double>(ranks) / std::max(seconds_, 1e-12);
  const double eta = static_cast<double>(total_steps_ - step) * global_batch_ / std::max(rate, 1e-12);
  const auto slowest = std::max_element(step_seconds.begin(), step_seconds.end()) - step_seconds.begin();
  double mean_step = 0;
  for (double s : step_seconds) mean_step += s / ranks;

  double memory_mib = device_memory_ ? device_memory_() : -1;
  if (device_memory_) comm_.allreduce(&memory_mib, 1, distributed::ElementType::f64, distributed::ReduceOp::max);

  std::ostream& o = out_;
  o << "epoch " << epoch + 1 << "  step " << step << "/" << total_steps_ << "  loss " << std::fixed
    << std::setprecision(4) << loss << "  acc " << std::setprecision(3) << accuracy << "  " << std::setprecision(1)
    << rate << " img/s  data wait " << 100.0 * wait_fraction << "%";
  if (ranks > 1) {
    o << "  comm wait " << std::setprecision(1) << 100.0 * exposed / std::max(seconds_, 1e-12) << "%  slowest rank "
      << slowest << " (+" << std::setprecision(0)
      << 100.0 * (step_seconds[static_cast<std::size_t>(slowest)] / mean_step - 1) << "%)";
  }
  if (scaler_ && scaler_->enabled()) {
    o << "  loss scale " << std::setprecision(0) << scaler_->scale() << " (" << scaler_->skipped_steps() << " skipped)";
  }
  if (memory_mib >= 0) o << "  GPU " << std::setprecision(0) << memory_mib << " MiB";
  o << "  lr " << std::setprecision(5) << learning_rate << "  eta " << std::setprecision(0) << eta << " s\n";
  if (metrics_.is_open()) {
    JsonLine j(metrics_);
    j.field("type", "step").field("epoch", epoch).field("step", step).field("loss", loss);
    j.field("accuracy", accuracy).field("images_per_sec", rate).field("data_wait_fraction", wait_fraction);
    j.field("communication_wait_fraction", exposed / std::max(seconds_, 1e-12)).field("learning_rate", learning_rate);
    j.field("world_size", ranks).field("slowest_rank", static_cast<std::int64_t>(slowest));
    j.field("elapsed_seconds", elapsed_seconds());
    j.field("step_seconds_per_rank", step_seconds).field("compute_seconds_per_rank", column(1));
    j.field("data_wait_seconds_per_rank", column(2)).field("communication_wait_seconds_per_rank", column(3));
    if (scaler_ && scaler_->enabled()) {
      j.field("loss_scale", static_cast<double>(scaler_->scale())).field("skipped_steps", scaler_->skipped_steps());
    }
    if (memory_mib >= 0) j.field("gpu_memory_peak_mib", memory_mib);
    j.close();
  }
  loss_sum_ = correct_ = samples_ = seconds_ = wait_ = compute_ = 0;
  steps_ = 0;
  exposed_before_ = comm_stats.exposed_seconds;
  check_stragglers(step);
}

void TrainingLog::check_stragglers(std::int64_t step) {
  // Every rank has recorded the same steps, so all decide alike whether to compare now.
  if (comm_.size() < 2 || straggler_steps_ < kStragglerWindowSteps) return;
  std::vector<double> compute(static_cast<std::size_t>(comm_.size()));
  const double mine = straggler_compute_ / static_cast<double>(straggler_steps_);
  comm_.allgather(&mine, compute.data(), sizeof mine);
  const std::int64_t window = straggler_steps_;
  straggler_compute_ = 0;
  straggler_steps_ = 0;
  if (!root_) return;
  const double middle = median(compute);
  for (const int r : find_stragglers(compute)) {
    const std::string node = static_cast<std::size_t>(r) < nodes_.size() ? nodes_[static_cast<std::size_t>(r)] : "?";
    const double c = compute[static_cast<std::size_t>(r)];
    // Built whole, then written in one piece: written piece by piece, stderr (unbuffered, tied to the
    // log's stdout) interleaved it with the step lines in a log that takes both.
    std::ostringstream warning;
    warning << "dptrain: warning: rank " << r << " (node " << node << ") computed " << std::fixed
            << std::setprecision(0) << 100.0 * (c / middle - 1) << "% longer than the median rank over the last "
            << window << " steps (" << std::setprecision(1) << 1e3 * c << " ms against " << 1e3 * middle
            << " ms a step, before waiting for gradients): every rank waits for it at every allreduce; look at "
            << "that node's GPU clocks and temperature (nvidia-smi -q -d PERFORMANCE) and at what else runs there\n";
    std::cerr << warning.str() << std::flush;
    if (metrics_.is_open()) {
      JsonLine j(metrics_);
      j.field("type", "straggler").field("step", step).field("rank", static_cast<std::int64_t>(r)).field("node", node);
      j.field("compute_seconds", c).field("median_compute_seconds", middle).field("window_steps", window);
      j.close();
    }
  }
}

void TrainingLog::report_evaluation(std::int64_t epoch, std::int64_t step, const Evaluation& e) {
  out_ << "validation after epoch " << epoch + 1 << ": loss " << std::setprecision(4) << e.loss << "  top-1 "
       << std::setprecision(4) << e.top1 << "  top-5 " << e.top5 << "  (" << e.samples << " images, "
       << std::setprecision(1) << e.seconds << " s)\n";
  if (metrics_.is_open()) {
    JsonLine j(metrics_);
    j.field("type", "eval").field("epoch", epoch).field("step", step).field("loss", e.loss);
    j.field("top1", e.top1)
        .field("top5", e.top5)
        .field("samples", e.samples)
        .field("elapsed_seconds", elapsed_seconds());
    j.close();
  }
  // Evaluation time is not training throughput: the window restarts after it.
  seconds_ = 0;
}

void TrainingLog::report_epoch_end(std::int64_t epoch, int loader_threads) {
  double sums[2] = {epoch_wait_, epoch_seconds_};
  comm_.allreduce_sum(sums, 2);
  epoch_wait_ = epoch_seconds_ = 0;
  const double share = sums[0] / std::max(sums[1], 1e-12);
  if (!root_ || share <= 0.10) return;
  std::cerr << "dptrain: warning: epoch " << epoch + 1 << " waited for data " << std::fixed << std::setprecision(0)
            << 100.0 * share << "% of its step time (more than 10%): the input pipeline limits this run; give the "
            << "loader more threads (--loader-threads, now " << loader_threads << " per rank), store the dataset "
            << "raw instead of JPEG (dptrain data convert --encoding raw), or put it on faster storage\n"
            << std::defaultfloat;
}

void TrainingLog::report_summary(const std::string& model, const std::string& dataset, int batch, std::int64_t steps,
                                 double seconds, const Evaluation* last_eval,
                                 const distributed::ReducerStats& comm_stats) {
  // Each rank's mean compute a step, and the rest of its step (waiting for data and for the others).
  const std::size_t ranks = static_cast<std::size_t>(comm_.size());
  std::vector<double> compute(ranks), waiting(ranks);
  const double steps_recorded = static_cast<double>(std::max<std::int64_t>(total_steps_recorded_, 1));
  const double my_compute = total_compute_ / steps_recorded;
  const double my_waiting = std::max(0.0, total_seconds_ / steps_recorded - my_compute);
  comm_.allgather(&my_compute, compute.data(), sizeof my_compute);
  comm_.allgather(&my_waiting, waiting.data(), sizeof my_waiting);
  double wait = total_wait_;
  comm_.allreduce_sum(&wait, 1);
  wait /= comm_.size();
  std::ostream& o = out_;
  o << std::setprecision(1) << "trained " << steps << " steps in " << seconds << " s ("
    << static_cast<double>(images_) / seconds << " img/s on " << comm_.size() << " rank"
    << (comm_.size() == 1 ? "" : "s") << "); ";
  if (last_eval) o << "validation top-1 " << std::setprecision(4) << last_eval->top1 << "; ";
  o << "data wait " << std::setprecision(1) << wait << " s";
  if (comm_.size() > 1) {
    o << "; communication " << comm_stats.communication_seconds << " s, " << std::setprecision(0)
      << 100.0 * comm_stats.hidden_fraction() << "% hidden behind the backward pass";
  }
  o << "\n";
  if (metrics_.is_open()) {
    JsonLine j(metrics_);
    j.field("type", "summary").field("model", model).field("dataset", dataset).field("batch_size", batch);
    j.field("global_batch", global_batch_).field("world_size", comm_.size()).field("steps", steps);
    j.field("backend", backend_).field("precision", precision_);
    if (scaler_ && scaler_->enabled()) j.field("skipped_steps", scaler_->skipped_steps());
    j.field("seconds", seconds).field("images_per_sec_overall", static_cast<double>(images_) / seconds);
    j.field("communication_seconds", comm_stats.communication_seconds);
    j.field("communication_hidden_fraction", comm_stats.hidden_fraction());
    if (last_eval) j.field("validation_top1", last_eval->top1).field("validation_top5", last_eval->top5);
    if (ranks > 1) j.field("compute_seconds_per_rank", compute).field("wait_seconds_per_rank", waiting);
    j.close();
  }
}

}  // namespace dptrain
