#pragma once
// What `dptrain train` reports: a human line on rank 0 every --log-every steps and JSON lines in
// --metrics. Loss and accuracy are over the global batch, images/sec over all ranks, and every
// rank's step time, compute, data wait and communication wait are gathered into each window's line,
// so that one slow rank (a bad node, a throttled GPU, a slow disk) shows, over the whole run.
#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "dptrain/distributed/communicator.hpp"
#include "dptrain/distributed/gradient_reducer.hpp"
#include "dptrain/train/evaluation.hpp"
#include "dptrain/train/trainer.hpp"

namespace dptrain {

class TrainingLog {
 public:
  // `out`: rank 0's stdout, a sink on the other ranks (the caller's, so its own lines go there too).
  TrainingLog(distributed::Communicator& comm, std::ostream& out, const std::string& metrics_path,
              std::int64_t total_steps, int global_batch);

  // What the window lines add when given: the backend and precision (summary JSON), the device memory
  // at its peak (the largest over the ranks), and the loss scale with the steps it skipped.
  void set_run_info(std::string backend, std::string precision);
  void watch_device_memory(std::function<double()> peak_mib) { device_memory_ = std::move(peak_mib); }
  void watch_loss_scaler(const LossScaler* scaler) { scaler_ = scaler; }

  // Each rank's node, by rank: named with a straggler.
  void set_rank_nodes(std::vector<std::string> nodes) { nodes_ = std::move(nodes); }
  // Training starts (or resumes) at `first_step`: the metrics' first line, which `dptrain plot` uses to
  // join a requeued run's pieces; the elapsed time of the later lines counts from here.
  void report_start(std::int64_t first_step, const std::string& model);
  // This rank's step: `seconds` in all, `data_wait` of them waiting for the loader, `compute` from the
  // step's start (data wait included) until its last gradient was ready, before it waited for the other
  // ranks' gradients (on one rank, the whole step).
  void record_step(const StepResult& result, int batch, double seconds, double data_wait, double compute = 0);
  // Collective: every rank calls it at the same steps.
  void report_window(std::int64_t epoch, std::int64_t step, double learning_rate,
                     const distributed::ReducerStats& comm_stats);
  void report_evaluation(std::int64_t epoch, std::int64_t step, const Evaluation& e);
  // Collective, at the end of every epoch: warns (rank 0, stderr) when the ranks waited for data more
  // than 10% of the epoch's step time, with `loader_threads` in the advice.
  void report_epoch_end(std::int64_t epoch, int loader_threads);
  void report_summary(const std::string& model, const std::string& dataset, int batch, std::int64_t steps,
                      double seconds, const Evaluation* last_eval, const distributed::ReducerStats& comm_stats);

 private:
  distributed::Communicator& comm_;
  bool root_;
  std::ostream& out_;
  std::ofstream metrics_;
  // The metrics' time axis: seconds since this process's log began (a resumed run starts again at 0).
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  double elapsed_seconds() const;
  std::int64_t total_steps_;
  int global_batch_;
  // The window since the last report, this rank's share.
  double loss_sum_ = 0, correct_ = 0, samples_ = 0, seconds_ = 0, wait_ = 0, compute_ = 0;
  std::int64_t steps_ = 0;
  double exposed_before_ = 0;  // the reducer's exposed communication time at the window's start
  double total_wait_ = 0;
  double epoch_seconds_ = 0, epoch_wait_ = 0;  // this rank's, since the epoch began
  std::int64_t images_ = 0;                    // global, whole run
  // Stragglers: this rank's compute since the last comparison, and over the whole run.
  double straggler_compute_ = 0, total_compute_ = 0, total_seconds_ = 0;
  std::int64_t straggler_steps_ = 0, total_steps_recorded_ = 0;
  std::vector<std::string> nodes_;
  void check_stragglers(std::int64_t step);  // collective
  std::string backend_ = "cpu", precision_ = "fp32";
  std::function<double()> device_memory_;
  const LossScaler* scaler_ = nullptr;
};

}  // namespace dptrain
