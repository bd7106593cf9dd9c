#pragma once
// `dptrain train --metrics` files read back as runs for `dptrain plot`. A requeued Slurm job writes
// one file a start (slurm/train.sbatch: metrics-r0.jsonl, metrics-r1.jsonl, ...); joined, its pieces
// are one run: ordered by the step each started from, the steps a piece did after the checkpoint the
// next one resumed from are dropped (they were done again), and each piece's clock continues where
// the previous piece's kept records ended.
#include <cstdint>
#include <string>
#include <vector>

namespace dptrain::app {

// One rank's mean time a step over a log window, split as `dptrain train` measures it.
struct RankTimes {
  double step = 0, compute = 0, data_wait = 0, communication_wait = 0;
};

struct StepPoint {
  std::int64_t step = 0;
  double elapsed = -1;  // seconds since the piece started; -1 when the file has none
  double loss = 0, accuracy = 0, images_per_sec = 0;
  std::vector<RankTimes> ranks;  // empty when the file predates per-rank metrics
};

struct EvalPoint {
  std::int64_t step = 0;
  double elapsed = -1;
  double loss = 0, top1 = 0;
};

struct MetricsRun {
  std::string label;
  std::vector<StepPoint> steps;
  std::vector<EvalPoint> evals;
  std::vector<std::string> nodes;  // by rank, from the last piece's start line; may be empty
  std::int64_t start_step = -1;    // the step it started (resumed) from, by its start line; -1: unknown
  int pieces = 0;
};

// One metrics file as a run of one piece. Throws naming the file and line for a line that is not
// JSON or a field of the wrong type, and when the file holds no step or evaluation line.
MetricsRun read_metrics_file(const std::string& path);

// The pieces of one run, joined as described above, under `label`.
MetricsRun join_pieces(std::vector<MetricsRun> pieces, std::string label);

// The metrics files (*.jsonl) directly in `dir`, by name; throws when there is none.
std::vector<std::string> metrics_files_in(const std::string& dir);

// Each rank's mean over the run's windows (empty when no step line has per-rank times, or their rank
// counts differ: a run resumed on another number of ranks is averaged over its last piece's count).
std::vector<RankTimes> mean_rank_times(const MetricsRun& run);

}  // namespace dptrain::app
