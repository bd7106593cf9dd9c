// dptrain report: the scaling table (GPUs, images/sec, speedup, efficiency per model) of benchmark and
// training results, as text, CSV and a PNG chart drawn by gnuplot (the whitepaper's Figure 6).
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cluster_profile.hpp"
#include "commands.hpp"
#include "dptrain/core/error.hpp"
#include "option_checks.hpp"
#include "scaling_report.hpp"

extern char** environ;

namespace dptrain::app {
namespace {
struct ReportOptions {
  std::vector<std::string> files;
  std::string csv;
  std::string plot;
  LinkOptions links;  // given: a predicted column (dptrain predict's model)
  double bucket_mb = 25;
};

// The gnuplot to run: $GNUPLOT, else the first `gnuplot` on PATH.
std::string find_gnuplot() {
  if (const char* g = std::getenv("GNUPLOT"); g != nullptr && *g != '\0') return g;
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::filesystem::path candidate = std::filesystem::path(dirs.substr(start, end - start)) / "gnuplot";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    start = end + 1;
  }
  return {};
}

void draw_plot(const std::vector<ScalingRow>& rows, const std::string& png) {
  const std::string gnuplot = find_gnuplot();
  DPTRAIN_CHECK(!gnuplot.empty(),
                "--plot needs gnuplot, which is not installed (Debian: apt-get install gnuplot-nox; "
                "or set GNUPLOT to its path); the table and the CSV do not need it");
  // The script is kept next to the chart, so it can be edited and re-run.
  const std::string script = png + ".gp";
  {
    std::ofstream out(script);
    DPTRAIN_CHECK(out.good(), "cannot write the gnuplot script '", script, "'");
    out << scaling_plot_script(rows, png);
    DPTRAIN_CHECK(out.good(), "writing the gnuplot script '", script, "' failed");
  }
  std::filesystem::remove(png);
  // gnuplot is run without a shell, with the script as its one argument; a relative path starting with
  // '-' would read as an option, so it is given as ./PATH.
  const std::string script_argument = script.front() == '-' ? "./" + script : script;
  std::vector<char*> argv{const_cast<char*>(gnuplot.c_str()), const_cast<char*>(script_argument.c_str()), nullptr};
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, gnuplot.c_str(), nullptr, nullptr, argv.data(), environ);
  DPTRAIN_CHECK(rc == 0, "cannot run '", gnuplot, "': ", std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    DPTRAIN_CHECK(errno == EINTR, "waiting for gnuplot failed: ", std::strerror(errno));
  }
  DPTRAIN_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "gnuplot failed on '", script,
                "' (its message is above)");
  DPTRAIN_CHECK(std::filesystem::exists(png) && std::filesystem::file_size(png) > 0, "gnuplot wrote no chart to '", png,
                "'");
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
  cmd->add_option("--csv", o->csv, "Also write the table as CSV to this file");
  cmd->add_option("--plot", o->plot, "Also draw speedup against GPUs into this PNG file (needs gnuplot)");
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
