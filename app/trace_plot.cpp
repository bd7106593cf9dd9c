#include "trace_plot.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <sstream>

#include "dptrain/core/error.hpp"
#include "gnuplot.hpp"

namespace dptrain::app {
namespace {

// The colours of the events dptrain records, so that every chart reads alike (the order is the
// legend's), then the colours of other kinds in the order they come.
const std::map<std::string, std::uint32_t>& known_kinds() {
  static const std::map<std::string, std::uint32_t> colours = {{"step", 0xd9d9d9},
                                                               {"data wait", 0x8c564b},
                                                               {"forward", 0x1f77b4},
                                                               {"backward", 0x2ca02c},
                                                               {"allreduce bucket", 0xff7f0e},
                                                               {"gradient wait", 0xd62728},
                                                               {"optimizer update", 0x9467bd},
                                                               {"evaluation", 0x17becf},
                                                               {"checkpoint", 0x7f7f7f}};
  return colours;
}
const char* const kKnownOrder[] = {"step",          "data wait",        "forward",    "backward",  "allreduce bucket",
                                   "gradient wait", "optimizer update", "evaluation", "checkpoint"};
constexpr std::uint32_t kOtherColours[] = {0xe377c2, 0xbcbd22, 0xaec7e8, 0xffbb78, 0x98df8a, 0xff9896,
                                           0xc5b0d5, 0xc49c94, 0xf7b6d2, 0xdbdb8d, 0x9edae5, 0x393b79,
                                           0x637939, 0x8c6d31, 0x843c39, 0x7b4173};

std::string rgb(std::uint32_t colour) {
  static const char* const hex = "0123456789abcdef";
  std::string text = "#";
  for (int shift = 20; shift >= 0; shift -= 4) text += hex[(colour >> shift) & 0xf];
  return text;
}

// A name from the file as a label: printable, and at most `most` bytes (cut at a character's start).
std::string label(const std::string& name, std::size_t most) {
  std::string text = printable_name(name);
  if (text.size() <= most) return text;
  std::size_t cut = most - 3;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;
  return text.substr(0, cut) + "...";
}

// Half a box's height in lanes: an enclosing box stays visible around the boxes inside it.
double half_height(int depth) { return std::max(0.16, 0.4 - 0.1 * depth); }

}  // namespace

int trace_plot_height(std::size_t lanes) {
  return static_cast<int>(std::clamp<std::size_t>(190 + 50 * lanes, 300, 10000));
}

std::string trace_plot_script(const TraceTimeline& t, const PlotSettings& s) {
  DPTRAIN_CHECK(!t.boxes.empty() && !t.lanes.empty(), "nothing to draw");
  // The legend's order, and a colour for each kind.
  std::vector<std::size_t> legend;
  std::vector<std::uint32_t> colour(t.kinds.size());
  for (const char* known : kKnownOrder) {
    const auto it = std::find(t.kinds.begin(), t.kinds.end(), known);
    if (it != t.kinds.end()) legend.push_back(static_cast<std::size_t>(it - t.kinds.begin()));
  }
  std::size_t others = 0;
  for (std::size_t k = 0; k < t.kinds.size(); ++k) {
    const auto known = known_kinds().find(t.kinds[k]);
    if (known != known_kinds().end()) {
      colour[k] = known->second;
      continue;
    }
    colour[k] = kOtherColours[others++ % std::size(kOtherColours)];
    legend.push_back(k);
  }

  std::ostringstream g;
  g << "# Drawn by dptrain plot --trace: each complete event of the trace a box on its rank's thread.\n"
    << gnuplot_png_output(s.png, s.width, s.height);
  // A box a row: start and end (ms), lane, half its height, colour, kind.
  g << "$boxes << EOD\n";
  for (const TraceBox& b : t.boxes) {
    g << gnuplot_number(b.start_ms) << " " << gnuplot_number(b.end_ms) << " " << b.lane << " " << half_height(b.depth)
      << " " << colour[b.kind] << " " << b.kind << "\n";
  }
  g << "EOD\n$lanes << EOD\n";
  for (std::size_t l = 0; l < t.lanes.size(); ++l) g << l << " " << t.lanes[l].pid << " " << t.lanes[l].tid << "\n";
  g << "EOD\n";

  std::string title = "trace";
  if (t.first_step >= 0) {
    title += t.first_step == t.last_step
                 ? ": step " + std::to_string(t.first_step)
                 : ": steps " + std::to_string(t.first_step) + " to " + std::to_string(t.last_step);
  }
  const double margin = std::max(t.end_ms, 1e-3) / 100;  // so the first and last boxes clear the frame
  g << "set title " << gnuplot_single_quoted(title) << "\n"
    << "set xlabel 'time (ms) from the first event'\nset xrange [" << gnuplot_number(-margin) << ":"
    << gnuplot_number(t.end_ms + margin) << "]\nset yrange ["
    << gnuplot_number(static_cast<double>(t.lanes.size()) - 0.5) << ":-0.5]\nset ytics nomirror (";
  for (std::size_t l = 0; l < t.lanes.size(); ++l) {
    g << (l > 0 ? ", " : "") << gnuplot_single_quoted(label(t.lanes[l].name, 40)) << " " << l;
  }
  g << ")\nset xtics nomirror\nset grid xtics\n"
    << "set key outside below horizontal Left reverse\n"
    << "set style fill solid 1.0 border lc rgb '#404040'\n";
  if (!t.steps.empty()) {
    // Where each step starts on the top lane that has steps: the top axis, with a line down the chart.
    const std::size_t every = (t.steps.size() + 39) / 40;
    g << "set link x2\nset x2label 'step (its start on the top lane)'\nset x2tics (";
    for (std::size_t i = 0; i < t.steps.size(); i += every) {
      g << (i > 0 ? ", " : "") << "'" << t.steps[i].step << "' " << gnuplot_number(t.steps[i].start_ms);
    }
    g << ")\nset grid x2tics\n";
  }
  g << "plot $boxes using (($1+$2)/2):3:1:2:($3-$4):($3+$4):5 with boxxyerror lc rgb variable notitle";
  for (std::size_t k : legend) {
    g << ", \\\n     NaN with boxes lc rgb '" << rgb(colour[k]) << "' title "
      << gnuplot_single_quoted(label(t.kinds[k], 32));
  }
  g << "\n";

  if (!s.table.empty()) {
    g << gnuplot_print_to(s.table) << gnuplot_table_section("lanes: lane, pid, tid", "$lanes", "1:2:3")
      << gnuplot_table_section("boxes: lane, start (ms), length (ms), kind", "$boxes", "3:1:($2-$1):6")
      << "print '# lane names: lane, name'\n";
    for (std::size_t l = 0; l < t.lanes.size(); ++l) {
      g << "print " << gnuplot_single_quoted(std::to_string(l) + " " + printable_name(t.lanes[l].name)) << "\n";
    }
    g << "print '# kinds: kind, name'\n";
    for (std::size_t k = 0; k < t.kinds.size(); ++k) {
      g << "print " << gnuplot_single_quoted(std::to_string(k) + " " + printable_name(t.kinds[k])) << "\n";
    }
    g << "unset print\n";
  }
  return g.str();
}

}  // namespace dptrain::app
