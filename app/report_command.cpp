// dptrain report: the scaling table (GPUs, images/sec, speedup, efficiency per model) of benchmark and
// training results, as text, CSV and a PNG chart drawn by gnuplot (the whitepaper's Figure 6).
#include <fstream>
#include <iostream>

#include "cluster_profile.hpp"
#include "commands.hpp"
#include "dptrain/core/error.hpp"
#include "gnuplot.hpp"
#include "option_checks.hpp"
#include "scaling_report.hpp"

namespace dptrain::app {
namespace {
struct ReportOptions {
  std::vector<std::string> files;
  std::string csv;
  std::string plot;
  LinkOptions links;  // given: a predicted column (dptrain predict's model)
  double bucket_mb = 25;
};

void draw_plot(const std::vector<ScalingRow>& rows, const std::string& png) {
  draw_with_gnuplot(scaling_plot_script(rows, png), png, "--plot (the table and the CSV do not need it)");
}

int run_report(const ReportOptions& o) {
  std::vector<ScalingSample> samples;
  for (const auto& file : o.files) {
    auto more = read_scaling_samples(file);
    samples.insert(samples.end(), more.begin(), more.end());
  }
  std::vector<ScalingRow> rows = scaling_table(samples);
  if (o.links.given()) {
    DPTRAIN_CHECK(o.bucket_mb > 0, "--bucket-mb must be positive");
    for (const std::string& note : add_predictions(rows, cluster_from(o.links), o.bucket_mb)) {
      std::cout << note << "\n";
    }
  }
  print_scaling_table(std::cout, rows);
  if (!o.csv.empty()) {
    std::ofstream out(o.csv);
    DPTRAIN_CHECK(out.good(), "cannot write the CSV file '", o.csv, "'");
    write_scaling_csv(out, rows);
    DPTRAIN_CHECK(out.good(), "writing the CSV file '", o.csv, "' failed");
    std::cout << "CSV: " << o.csv << "\n";
  }
  if (!o.plot.empty()) {
    draw_plot(rows, o.plot);
    std::cout << "chart: " << o.plot << " (gnuplot script: " << o.plot << ".gp)\n";
  }
  return 0;
}
}  // namespace

Command add_report_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "report",
      "Scaling table (GPUs, images/sec, speedup, efficiency per model) of 'dptrain bench --json' results "
      "and 'dptrain train --metrics' files, as text, CSV and a PNG chart");
  auto o = std::make_shared<ReportOptions>();
  cmd->add_option("files", o->files, "Result files: bench JSON, or metrics JSON lines (their summary lines count)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--csv", o->csv, "Also write the table as CSV to this file")->check(output_file());
  cmd->add_option("--plot", o->plot, "Also draw speedup against GPUs into this PNG file (needs gnuplot)")
      ->check(output_file());
  add_link_options(cmd, o->links);
  cmd->add_option("--bucket-mb", o->bucket_mb, "Gradient bucket size of the prediction, MB")
      ->check(above_zero())
      ->capture_default_str();
  cmd->footer(
      "The speedup of n GPUs is images/sec(n) over the per-GPU images/sec of the model's smallest GPU count (the plain "
      "ratio over 1 GPU when a 1-GPU run is given); efficiency is speedup / n. Runs with the same model and GPU count "
      "are averaged. With --profile (or --intra-gbps and --inter-gbps) a predicted speedup and images/sec stand "
      "beside each row of a model with a 1-GPU run (dptrain predict's model, that run's rate and batch), and the "
      "chart draws them as dashed lines.");
  return [o] { return run_report(*o); };
}

}  // namespace dptrain::app
