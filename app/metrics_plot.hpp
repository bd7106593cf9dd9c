#pragma once
// The gnuplot script of `dptrain plot`: four panels on one PNG (training loss; training accuracy and
// validation top-1; images/sec, each against step or time with a line per run; and the last run's
// time a step by rank, split into compute, data wait, communication wait and the rest), with every
// series' data in the script itself, so the script can be edited and run again on its own.
#include <string>
#include <vector>

#include "metrics_runs.hpp"

namespace dptrain::app {

struct PlotSettings {
  std::string png;
  int width = 1200, height = 900;
  bool against_time = false;  // x: elapsed time instead of the step
  std::string table;          // given: gnuplot writes every series as it read it to this file
};

std::string metrics_plot_script(const std::vector<MetricsRun>& runs, const PlotSettings& settings);

}  // namespace dptrain::app
