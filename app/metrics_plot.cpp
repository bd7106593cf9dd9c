#include "metrics_plot.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "dptrain/core/error.hpp"
#include "gnuplot.hpp"

namespace dptrain::app {
namespace {

// The time axis' unit, from the longest run: seconds, minutes or hours.
struct TimeUnit {
  double seconds;
  const char* name;
};
TimeUnit time_unit(const std::vector<MetricsRun>& runs) {
  double longest = 0;
  for (const auto& run : runs) {
    for (const auto& p : run.steps) longest = std::max(longest, p.elapsed);
    for (const auto& p : run.evals) longest = std::max(longest, p.elapsed);
  }
  if (longest <= 600) return {1, "s"};
  if (longest <= 36000) return {60, "min"};
  return {3600, "h"};
}

// A rank's name on the x axis: "0@node7", characters outside [A-Za-z0-9._-] as '_' (a node name is
// data, and a data block's label must be one plain word).
std::string rank_label(std::size_t rank, const std::vector<std::string>& nodes) {
  std::string label = std::to_string(rank);
  if (rank < nodes.size() && !nodes[rank].empty()) {
    label += "@";
    for (char c : nodes[rank]) {
      const bool plain = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
      label += plain ? c : '_';
    }
  }
  return label;
}

std::string title_of(const MetricsRun& run) { return printable_name(run.label); }

// Whether a run has a point to draw in a data block's column (gnuplot fails on a series of NaN only):
// $steps 2 loss, 3 accuracy, 4 images/sec; $evals 2 top-1.
bool has_points(const MetricsRun& run, const std::string& block, int column) {
  if (block == "$evals") {
    return std::any_of(run.evals.begin(), run.evals.end(), [](const EvalPoint& p) { return std::isfinite(p.top1); });
  }
  return std::any_of(run.steps.begin(), run.steps.end(), [column](const StepPoint& p) {
    return std::isfinite(column == 2 ? p.loss : column == 3 ? p.accuracy : p.images_per_sec);
  });
}

}  // namespace

std::string metrics_plot_script(const std::vector<MetricsRun>& runs, const PlotSettings& s) {
  DPTRAIN_CHECK(!runs.empty(), "nothing to plot");
  const TimeUnit unit = time_unit(runs);
  auto x_of = [&](std::int64_t step, double elapsed, const MetricsRun& run) {
    if (!s.against_time) return gnuplot_number(static_cast<double>(step));
    DPTRAIN_CHECK(elapsed >= 0, "the metrics of '", title_of(run),
                  "' have no elapsed_seconds (written by an older dptrain): plot them against steps");
    return gnuplot_number(elapsed / unit.seconds);
  };
  std::ostringstream g;
  g << "# Drawn by dptrain plot: training loss, accuracy, images/sec and time a step by rank.\n"
    << gnuplot_png_output(s.png, s.width, s.height);
  // The data: a block of step lines and one of evaluations per run, and the last run's ranks.
  for (std::size_t k = 0; k < runs.size(); ++k) {
    g << "$steps" << k << " << EOD\n";
    for (const auto& p : runs[k].steps) {
      g << x_of(p.step, p.elapsed, runs[k]) << " " << gnuplot_number(p.loss) << " " << gnuplot_number(p.accuracy) << " "
        << gnuplot_number(p.images_per_sec) << "\n";
    }
    g << "EOD\n$evals" << k << " << EOD\n";
    for (const auto& p : runs[k].evals) {
      g << x_of(p.step, p.elapsed, runs[k]) << " " << gnuplot_number(p.top1) << " " << gnuplot_number(p.loss) << "\n";
    }
    g << "EOD\n";
  }
  const MetricsRun& last = runs.back();
  const std::vector<RankTimes> ranks = mean_rank_times(last);
  g << "$ranks << EOD\n";
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const RankTimes& t = ranks[r];
    const double other = std::max(0.0, t.step - t.compute - t.data_wait - t.communication_wait);
    g << rank_label(r, last.nodes) << " " << gnuplot_number(1e3 * t.compute) << " " << gnuplot_number(1e3 * t.data_wait)
      << " " << gnuplot_number(1e3 * t.communication_wait) << " " << gnuplot_number(1e3 * other) << "\n";
  }
  g << "EOD\n";

  const std::string x_label = s.against_time ? std::string("time (") + unit.name + ")" : "step";
  g << "set multiplot layout 2,2\nset grid\nset key top right\n"
    << "set xlabel " << gnuplot_single_quoted(x_label) << "\n";
  auto lines = [&](const std::string& block, int column, const std::string& suffix, const char* style) {
    std::string out;
    for (std::size_t k = 0; k < runs.size(); ++k) {
      if (!has_points(runs[k], block, column)) continue;
      out += out.empty() ? "plot " : ", \\\n     ";
      out += block + std::to_string(k) + " using 1:" + std::to_string(column) + " title " +
             gnuplot_single_quoted(title_of(runs[k]) + suffix) + " with " + style + " linecolor " +
             std::to_string(k + 1);
    }
    return out;
  };
  // A panel without data still gets its frame (gnuplot refuses a plot of nothing).
  const std::string nothing = "plot [0:1][0:1] NaN notitle";
  auto or_nothing = [&](const std::string& plot) { return plot.empty() ? nothing : plot; };
  g << "set title 'training loss'\nset ylabel 'loss'\n"
    << or_nothing(lines("$steps", 2, "", "lines linewidth 2")) << "\n";
  std::string accuracy = lines("$steps", 3, " (training)", "lines dashtype 2");
  const std::string validation = lines("$evals", 2, " (validation)", "linespoints linewidth 2 pointtype 7");
  if (!validation.empty()) accuracy += accuracy.empty() ? validation : ", \\\n     " + validation.substr(5);
  g << "set title 'accuracy'\nset ylabel 'top-1'\nset yrange [0:1]\nset key bottom right\n"
    << or_nothing(accuracy) << "\nset autoscale y\nset key top right\n";
  g << "set title 'throughput'\nset ylabel 'images/sec'\nset yrange [0:*]\n"
    << or_nothing(lines("$steps", 4, "", "lines linewidth 2")) << "\nset autoscale y\n";
  g << "set title " << gnuplot_single_quoted("time a step by rank: " + title_of(last)) << "\n"
    << "set xlabel 'rank'\nset ylabel 'ms a step'\n";
  if (ranks.empty()) {
    g << "set label 1 'no per-rank times in these metrics' at graph 0.5,0.5 center\n"
      << "plot [0:1][0:1] NaN notitle\nunset label 1\n";
  } else {
    g << "set style data histograms\nset style histogram rowstacked\nset style fill solid 0.8 border -1\n"
      << "set boxwidth 0.7\nset key outside right top vertical\nset yrange [0:*]\n";
    if (ranks.size() > 8) g << "set xtics rotate by -45\n";
    g << "plot $ranks using 2:xtic(1) title 'compute', '' using 3 title 'data wait', "
      << "'' using 4 title 'communication wait', '' using 5 title 'other'\n";
  }
  g << "unset multiplot\n";

  if (!s.table.empty()) {
    // What gnuplot read, series by series: `set table` writes each point as gnuplot parsed it.
    g << gnuplot_print_to(s.table);
    auto table = [&](const std::string& name, const std::string& block, const char* columns) {
      g << gnuplot_table_section(name, block, columns);
    };
    for (std::size_t k = 0; k < runs.size(); ++k) {
      const std::string run = title_of(runs[k]);
      const std::string steps = "$steps" + std::to_string(k);
      if (has_points(runs[k], "$steps", 2)) table("loss " + run, steps, "1:2");
      if (has_points(runs[k], "$steps", 3)) table("accuracy " + run, steps, "1:3");
      if (has_points(runs[k], "$steps", 4)) table("images/sec " + run, steps, "1:4");
      if (has_points(runs[k], "$evals", 2)) table("validation top-1 " + run, "$evals" + std::to_string(k), "1:2");
    }
    if (!ranks.empty()) table("ms a step by rank: compute, data wait, communication wait, other", "$ranks", "2:3:4:5");
    g << "unset print\n";
  }
  return g.str();
}

}  // namespace dptrain::app
