#pragma once
// The scaling table of `dptrain report` (the whitepaper's Figure 6): images/sec per model and GPU
// count, read from `dptrain bench --json` results and `dptrain train --metrics` summary lines, with
// the speedup over the smallest count and the parallel efficiency.
#include <ostream>
#include <string>
#include <vector>

#include "dptrain/distributed/scaling_model.hpp"
#include "gnuplot.hpp"  // printable_name

namespace dptrain::app {

// One measured run: a model on `gpus` ranks at `images_per_sec` over all of them.
struct ScalingSample {
  std::string model;
  int gpus = 0;
  double images_per_sec = 0;
  double batch = 0;    // per GPU, where the result says (bench batch_size, metrics batch_size); 0: unknown
  int image_size = 0;  // where the result says; 0: the model's own
  int classes = 0;     // where the result says; 0: 1000
  std::string source;  // the file it came from, for messages
};

struct ScalingRow {
  std::string model;
  int gpus = 0;
  int runs = 0;               // samples averaged into this row
  double images_per_sec = 0;  // mean over the runs
  double speedup = 0;         // over the smallest GPU count of the model, per GPU (see scaling_table)
  double efficiency = 0;      // speedup / gpus
  double batch = 0;           // per GPU, of the first run (0: unknown)
  int image_size = 0, classes = 0;
  // The scaling model's figures for this row (add_predictions); 0: none.
  double predicted_images_per_sec = 0;
  double predicted_speedup = 0;
};

// Reads one file: a JSON object (a bench result), an array of them, or JSON lines (a metrics file,
// whose "summary" lines count and whose "step"/"eval" lines are skipped). Throws dptrain::Error naming
// the file, the line and the field when something is missing or malformed.
std::vector<ScalingSample> read_scaling_samples(const std::string& path);

// Rows per model (models in first-seen order), sorted by GPUs; runs with the same model and GPU count
// are averaged. The speedup of n GPUs is ips(n) / (ips(b) / b) with b the model's smallest count, so
// it is the plain ratio over one GPU when b = 1, and assumes ideal scaling up to b otherwise.
std::vector<ScalingRow> scaling_table(const std::vector<ScalingSample>& samples);

// Adds the scaling model's prediction (distributed/scaling_model.hpp) to each row of a model that has
// a 1-GPU row with a batch: that run's rate as the one-GPU compute rate, the zoo model's gradient
// buckets of `bucket_mb`, and `cluster`'s links. Returns a note for each model it cannot predict.
std::vector<std::string> add_predictions(std::vector<ScalingRow>& rows, const distributed::ClusterModel& cluster,
                                         double bucket_mb);

void print_scaling_table(std::ostream& out, const std::vector<ScalingRow>& rows);
// The CSV keeps each name exactly, quoted as RFC 4180 says where it holds a comma, quote or line break.
void write_scaling_csv(std::ostream& out, const std::vector<ScalingRow>& rows);
// A gnuplot script that draws speedup against GPUs per model, with the ideal line, into png_path. Every
// string in it (the path, the model names) is a single-quoted gnuplot string, which gnuplot takes
// literally (no backquoted command, no macro, no escape); throws when png_path holds a control character.
std::string scaling_plot_script(const std::vector<ScalingRow>& rows, const std::string& png_path);

}  // namespace dptrain::app
