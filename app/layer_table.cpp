#include "layer_table.hpp"

#include <cstdio>
#include <string>

#include "dptrain/core/byte_size.hpp"

namespace dptrain::app {
namespace {
// printf into a std::string: fixed-width tables read best with column alignment done once.
template <typename... Args>
std::string format(const char* pattern, Args... args) {
  const int size = std::snprintf(nullptr, 0, pattern, args...);
  std::string text(static_cast<std::size_t>(std::max(size, 0)) + 1, '\0');
  std::snprintf(text.data(), text.size(), pattern, args...);
  text.pop_back();
  return text;
}

double share(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

// "12.345" or "-" where cuDNN had no such algorithm.
std::string milliseconds(double ms) { return ms < 0 ? std::string("-") : format("%.3f", ms); }
}  // namespace

void print_layer_tables(std::ostream& out, const LayerProfile& p, const std::string& clock) {
  out << "time per layer kind (mean of " << p.steps << " profiled step" << (p.steps == 1 ? "" : "s")
      << " after the timed ones, milliseconds per step, " << clock << "):\n";
  out << format("  %-22s %6s %10s %10s %10s %7s\n", "kind", "layers", "forward", "backward", "total", "share");
  for (const LayerKindTime& k : p.by_kind()) {
    out << format("  %-22s %6d %10.3f %10.3f %10.3f %6.1f%%\n", k.kind.c_str(), k.layers, k.forward_ms, k.backward_ms,
                  k.total_ms(), share(k.total_ms(), p.step_ms));
  }
  out << format("  %-40s %10.3f %6.1f%%\n", "all layers", p.layers_ms(), share(p.layers_ms(), p.step_ms));
  out << format("  %-40s %10.3f %6.1f%%\n", "after backward (gradient sum, update)", p.after_backward_ms,
                share(p.after_backward_ms, p.step_ms));
  const double rest = p.step_ms - p.layers_ms() - p.after_backward_ms;
  out << format("  %-40s %10.3f %6.1f%%\n", "between layers (launch gaps, other)", rest, share(rest, p.step_ms));
  out << format("  %-40s %10.3f %6.1f%%\n", "step", p.step_ms, 100.0);
  out << "time per layer (milliseconds per step):\n";
  out << format("  %-34s %-22s %-20s %10s %10s\n", "layer", "kind", "output", "forward", "backward");
  for (const LayerTime& t : p.layers) {
    out << format("  %-34s %-22s %-20s %10.3f %10.3f\n", t.name.c_str(), t.kind.c_str(), t.output.to_string().c_str(),
                  t.forward_ms, t.backward_ms);
  }
}

void print_convolution_searches(std::ostream& out, const std::vector<ConvolutionSearch>& searches) {
  if (searches.empty()) return;
  double chosen = 0, fastest = 0, deterministic = 0;
  bool all_deterministic = true;
  out << "convolution algorithms (cuDNN's own timing of each candidate in its search, milliseconds; one row per "
         "shape and pass, `layers` run it):\n";
  out << format("  %-40s %6s %-28s %-28s %-28s %8s %-10s %10s\n", "first layer / pass", "layers", "chosen",
                "fastest (any)", "fastest deterministic", "det/any", "math", "workspace");
  for (const ConvolutionSearch& s : searches) {
    const std::string pass = s.key.substr(0, s.key.find(' '));
    const std::string who = s.layer + " " + pass;
    const std::string ratio = s.fastest_ms > 0 && s.fastest_deterministic_ms > 0
                                  ? format("%.2fx", s.fastest_deterministic_ms / s.fastest_ms)
                                  : std::string("-");
    out << format("  %-40s %6d %-28s %-28s %-28s %8s %-10s %10s\n", who.c_str(), s.layers,
                  (s.chosen_algorithm + " " + milliseconds(s.chosen_ms)).c_str(),
                  (s.fastest_algorithm + " " + milliseconds(s.fastest_ms)).c_str(),
                  (s.fastest_deterministic_algorithm + " " + milliseconds(s.fastest_deterministic_ms)).c_str(),
                  ratio.c_str(), s.math.c_str(), format_bytes(static_cast<double>(s.workspace_bytes)).c_str());
    if (s.chosen_ms > 0) chosen += s.layers * s.chosen_ms;
    if (s.fastest_ms > 0) fastest += s.layers * s.fastest_ms;
    if (s.fastest_deterministic_ms > 0) {
      deterministic += s.layers * s.fastest_deterministic_ms;
    } else {
      all_deterministic = false;
    }
  }
  out << format(
      "  sum over the layers: chosen %.3f ms, fastest %.3f ms, fastest deterministic %s ms (%s of the "
      "fastest); workspace cap %s\n",
      chosen, fastest, all_deterministic ? format("%.3f", deterministic).c_str() : "-",
      all_deterministic && fastest > 0 ? format("%.2fx", deterministic / fastest).c_str() : "-",
      format_bytes(static_cast<double>(searches.front().workspace_cap_bytes)).c_str());
}

}  // namespace dptrain::app
