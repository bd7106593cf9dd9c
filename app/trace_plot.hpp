#pragma once
// The gnuplot script of `dptrain plot --trace`: a timeline of the trace's lanes (a rank's thread
// each, top to bottom), time in milliseconds from the window's first event along x, each complete
// event a box coloured by its kind with a legend, a box inside another (forward in its step) drawn
// thinner on top of it, and where each step starts marked on the top axis. The data is in the script,
// so it can be edited and run again on its own.
#include <cstddef>
#include <string>

#include "metrics_plot.hpp"
#include "trace_timeline.hpp"

namespace dptrain::app {

// The chart's height in pixels when --size is not given: room for the title, the axis and the
// legend, and 50 pixels a lane.
int trace_plot_height(std::size_t lanes);

// `settings`: the PNG, its size and the --table file (against_time is not used).
std::string trace_plot_script(const TraceTimeline& timeline, const PlotSettings& settings);

}  // namespace dptrain::app
