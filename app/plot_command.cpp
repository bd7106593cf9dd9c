// dptrain plot: the curves of one or more training runs (their --metrics files) on one PNG, drawn by
// gnuplot: loss, accuracy and validation top-1, images/sec, and each rank's time a step; with --trace,
// the timeline of a run's --trace files instead.
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "commands.hpp"
#include "dptrain/core/error.hpp"
#include "gnuplot.hpp"
#include "metrics_plot.hpp"
#include "metrics_runs.hpp"
#include "option_checks.hpp"
#include "trace_plot.hpp"
#include "trace_timeline.hpp"

namespace dptrain::app {
namespace {
struct PlotOptions {
  std::vector<std::string> inputs;
  std::vector<std::string> labels;
  std::string x = "step";
  std::string size;  // "": 1200x900, with --trace 1200 wide and as high as its lanes need
  bool join = false;
  bool trace = false;
  std::string steps;  // --trace's FIRST:LAST; "": every step
  PlotSettings settings;
};

// "WIDTHxHEIGHT" in pixels, each from 200 to 10000.
void parse_size(const std::string& text, PlotSettings& s) {
  const std::size_t x = text.find('x');
  bool ok = x != std::string::npos && x > 0 && x + 1 < text.size() &&
            text.find_first_not_of("0123456789x") == std::string::npos && text.find('x', x + 1) == std::string::npos &&
            x <= 5 && text.size() - x - 1 <= 5;
  if (ok) {
    s.width = std::stoi(text.substr(0, x));
    s.height = std::stoi(text.substr(x + 1));
    ok = s.width >= 200 && s.width <= 10000 && s.height >= 200 && s.height <= 10000;
  }
  DPTRAIN_CHECK(ok, "--size '", printable_name(text), "' is not WIDTHxHEIGHT in pixels (each from 200 to 10000)");
}

std::vector<MetricsRun> read_runs(const PlotOptions& o) {
  // A directory is one run in pieces (a requeued job's run directory); with --join, so is everything.
  std::vector<MetricsRun> runs;
  std::vector<MetricsRun> all_pieces;
  for (const std::string& input : o.inputs) {
    std::vector<MetricsRun> pieces;
    const bool directory = std::filesystem::is_directory(input);
    if (directory) {
      for (const std::string& file : metrics_files_in(input)) pieces.push_back(read_metrics_file(file));
    } else {
      pieces.push_back(read_metrics_file(input));
    }
    if (o.join) {
      for (auto& p : pieces) all_pieces.push_back(std::move(p));
      continue;
    }
    const std::string name = directory ? std::filesystem::path(input).lexically_normal().filename().string()
                                       : std::filesystem::path(input).stem().string();
    runs.push_back(join_pieces(std::move(pieces), name.empty() ? input : name));
  }
  if (o.join) runs.push_back(join_pieces(std::move(all_pieces), "run"));
  if (!o.labels.empty()) {
    DPTRAIN_CHECK(o.labels.size() == runs.size(), "--label was given ", o.labels.size(), " time(s) for ", runs.size(),
                  " run(s): give one label a run, in the order of the inputs");
    for (std::size_t k = 0; k < runs.size(); ++k) runs[k].label = o.labels[k];
  }
  return runs;
}

// Where the chart and its table went.
void report_chart(const PlotSettings& s) {
  std::cout << "chart: " << s.png << " (gnuplot script: " << s.png << ".gp)\n";
  if (!s.table.empty()) std::cout << "table: " << s.table << "\n";
}

int run_trace_plot(PlotOptions o) {
  // The options first, then the files: a typo costs no reading.
  const std::optional<TraceWindow> steps =
      o.steps.empty() ? std::nullopt : std::optional<TraceWindow>(parse_step_range(o.steps));
  if (!o.size.empty()) parse_size(o.size, o.settings);
  const TraceTimeline timeline = read_trace_timeline(o.inputs, steps);
  if (o.size.empty()) o.settings.height = trace_plot_height(timeline.lanes.size());
  draw_with_gnuplot(trace_plot_script(timeline, o.settings), o.settings.png, "dptrain plot --trace");
  std::cout << "trace: " << timeline.files << " file(s), " << timeline.lanes.size() << " lane(s), "
            << timeline.boxes.size() << " event(s)";
  if (timeline.first_step >= 0) std::cout << " of steps " << timeline.first_step << " to " << timeline.last_step;
  std::cout << ", " << timeline.end_ms << " ms\n";
  report_chart(o.settings);
  return 0;
}

int run_plot(PlotOptions o) {
  if (o.trace) return run_trace_plot(std::move(o));
  parse_size(o.size.empty() ? "1200x900" : o.size, o.settings);
  o.settings.against_time = o.x == "time";
  const std::vector<MetricsRun> runs = read_runs(o);
  draw_with_gnuplot(metrics_plot_script(runs, o.settings), o.settings.png, "dptrain plot");
  for (const auto& run : runs) {
    std::cout << printable_name(run.label) << ": " << run.steps.size() << " step line(s), " << run.evals.size()
              << " evaluation(s)";
    if (run.pieces > 1) std::cout << ", joined from " << run.pieces << " pieces";
    std::cout << "\n";
  }
  report_chart(o.settings);
  return 0;
}
}  // namespace

Command add_plot_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("plot",
                                 "Draw training runs' curves from their 'dptrain train --metrics' files into a PNG: "
                                 "loss, accuracy and validation top-1, images/sec, and each rank's time a step; "
                                 "or, with --trace, a timeline of their 'dptrain train --trace' files");
  auto o = std::make_shared<PlotOptions>();
  cmd->add_option("inputs", o->inputs,
                  "Metrics files (each a run) or run directories (every *.jsonl in it: one run in pieces, as "
                  "slurm/train.sbatch writes a requeued job's); with --trace, trace files or --trace "
                  "directories (every trace-rank-R.json in it)")
      ->required()
      ->check(CLI::ExistingPath);
  cmd->add_option("-o,--output", o->settings.png, "The PNG to write (its gnuplot script goes beside it, as PNG.gp)")
      ->check(output_file())
      ->required();
  auto* trace = cmd->add_flag("--trace", o->trace,
                              "Draw the inputs as traces: a lane for each rank's thread, each event a box along "
                              "the time (ms from the first event), coloured by what it is");
  cmd->add_option("--steps", o->steps,
                  "With --trace, only these steps, FIRST:LAST (the log's step numbers; default: every step "
                  "the traces hold)")
      ->needs(trace);
  auto* join = cmd->add_flag("--join", o->join, "Take all the inputs as the pieces of one run");
  auto* label =
      cmd->add_option("--label", o->labels, "A run's name in the legend; once per run, in the order of the inputs");
  auto* x = cmd->add_option("--x", o->x, "The x axis: step, or time (the training time, pieces joined end to end)")
                ->check(CLI::IsMember({"step", "time"}))
                ->capture_default_str();
  for (CLI::Option* metrics_only : {join, label, x}) metrics_only->excludes(trace);
  cmd->add_option("--size", o->size,
                  "The image's size in pixels, WIDTHxHEIGHT (default 1200x900; with --trace 1200 wide and 50 "
                  "pixels a lane plus 190 high)");
  cmd->add_option("--table", o->settings.table,
                  "Also write every series as gnuplot read it to this text file (to check or reuse the data); "
                  "with --trace, every box: its lane, start, length and kind");
  cmd->footer(
      "A run's pieces are ordered by the step each started from (its first line); the steps a piece logged after "
      "the checkpoint the next piece resumed from are dropped, since they were trained again. The rank panel shows "
      "the last run's mean time a step per rank over the run: compute (until its last gradient was ready), data "
      "wait, communication wait (the allreduce not hidden behind the backward pass) and the rest. With --trace, "
      "a box inside another (forward in its step) is drawn thinner, on top, and the top axis marks where each "
      "step starts. Needs gnuplot (Debian: gnuplot-nox).");
  return [o] { return run_plot(*o); };
}

}  // namespace dptrain::app
