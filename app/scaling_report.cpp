#include "scaling_report.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "dptrain/core/error.hpp"

namespace dptrain::app {
namespace {
using nlohmann::json;

// A sample from one JSON object, or nothing for lines that are not results (metrics steps, evals).
std::optional<ScalingSample> sample_from(const json& j, const std::string& where) {
  DPTRAIN_CHECK(j.is_object(), where, ": expected a JSON object (a 'dptrain bench --json' result or a metrics line)");
  std::string rate_key = "images_per_sec";
  if (j.contains("type")) {
    if (j["type"] != "summary") return std::nullopt;
    rate_key = "images_per_sec_overall";
  }
  auto need = [&](const char* key) -> const json& {
    DPTRAIN_CHECK(j.contains(key) && !j[key].is_null(), where, ": the field '", key, "' is missing");
    return j[key];
  };
  ScalingSample s;
  s.source = where;
  const json& model = need("model");
  DPTRAIN_CHECK(model.is_string(), where, ": the field 'model' is not a string");
  s.model = model.get<std::string>();
  const json& gpus = j.contains("gpus") ? j["gpus"] : need("world_size");
  DPTRAIN_CHECK(gpus.is_number_integer() && gpus.get<int>() > 0, where,
                ": the field 'world_size' is not a positive integer");
  s.gpus = gpus.get<int>();
  const json& rate = need(rate_key.c_str());
  DPTRAIN_CHECK(rate.is_number() && rate.get<double>() > 0 && std::isfinite(rate.get<double>()), where, ": the field '",
                rate_key, "' is not a positive number");
  s.images_per_sec = rate.get<double>();
  return s;
}
}  // namespace

std::vector<ScalingSample> read_scaling_samples(const std::string& path) {
  std::ifstream in(path);
  DPTRAIN_CHECK(in.good(), "cannot read '", path, "'");
  std::stringstream text;
  text << in.rdbuf();
  std::vector<ScalingSample> samples;
  auto add = [&](const json& j, const std::string& where) {
    if (auto s = sample_from(j, where)) samples.push_back(*s);
  };
  // A whole-file JSON value first (a bench result, possibly pretty-printed, or an array of them)...
  const json whole = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (!whole.is_discarded()) {
    if (whole.is_array()) {
      for (std::size_t i = 0; i < whole.size(); ++i) add(whole[i], path + " [" + std::to_string(i) + "]");
    } else {
      add(whole, path);
    }
  } else {
    // ...else JSON lines (a metrics file).
    std::string line;
    int number = 0;
    text.clear();
    text.seekg(0);
    while (std::getline(text, line)) {
      ++number;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      const std::string where = path + ":" + std::to_string(number);
      const json j = json::parse(line, nullptr, false);
      DPTRAIN_CHECK(!j.is_discarded(), where, ": not JSON (expected a 'dptrain bench --json' result or metrics lines)");
      add(j, where);
    }
  }
  DPTRAIN_CHECK(!samples.empty(), "'", path,
                "' holds no result: expected 'dptrain bench --json' output or a metrics file with a summary line");
  return samples;
}

std::vector<ScalingRow> scaling_table(const std::vector<ScalingSample>& samples) {
  std::vector<std::string> models;
  std::map<std::string, std::map<int, std::vector<double>>> rates;
  for (const auto& s : samples) {
    if (!rates.contains(s.model)) models.push_back(s.model);
    rates[s.model][s.gpus].push_back(s.images_per_sec);
  }
  std::vector<ScalingRow> rows;
  for (const auto& model : models) {
    const auto& by_gpus = rates[model];  // ordered by GPU count
    double base_per_gpu = 0;
    for (const auto& [gpus, values] : by_gpus) {
      ScalingRow r;
      r.model = model;
      r.gpus = gpus;
      r.runs = static_cast<int>(values.size());
      for (double v : values) r.images_per_sec += v / r.runs;
      if (base_per_gpu == 0) base_per_gpu = r.images_per_sec / gpus;
      r.speedup = r.images_per_sec / base_per_gpu;
      r.efficiency = r.speedup / gpus;
      rows.push_back(r);
    }
  }
  return rows;
}

void print_scaling_table(std::ostream& out, const std::vector<ScalingRow>& rows) {
  std::size_t width = 5;
  for (const auto& r : rows) width = std::max(width, r.model.size());
  out << std::left << std::setw(static_cast<int>(width)) << "model" << std::right << std::setw(6) << "GPUs"
      << std::setw(14) << "images/sec" << std::setw(10) << "speedup" << std::setw(12) << "efficiency" << std::setw(6)
      << "runs"
      << "\n";
  for (const auto& r : rows) {
    out << std::left << std::setw(static_cast<int>(width)) << r.model << std::right << std::setw(6) << r.gpus
        << std::fixed << std::setprecision(2) << std::setw(14) << r.images_per_sec << std::setw(10) << r.speedup
        << std::setprecision(1) << std::setw(11) << 100.0 * r.efficiency << "%" << std::setw(6) << r.runs << "\n";
  }
}

void write_scaling_csv(std::ostream& out, const std::vector<ScalingRow>& rows) {
  out << "model,gpus,images_per_sec,speedup,efficiency,runs\n";
  for (const auto& r : rows) {
    out << r.model << "," << r.gpus << "," << std::setprecision(10) << r.images_per_sec << "," << r.speedup << ","
        << r.efficiency << "," << r.runs << "\n";
  }
}

std::string scaling_plot_script(const std::vector<ScalingRow>& rows, const std::string& png_path) {
  auto quoted = [](const std::string& s) {  // a gnuplot double-quoted string
    std::string q = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') q += '\\';
      q += c;
    }
    return q + "\"";
  };
  int max_gpus = 1;
  std::vector<std::string> models;
  for (const auto& r : rows) {
    max_gpus = std::max(max_gpus, r.gpus);
    if (std::find(models.begin(), models.end(), r.model) == models.end()) models.push_back(r.model);
  }
  std::ostringstream g;
  g << "# Drawn by dptrain report: speedup over the smallest GPU count, per model, and the ideal line.\n"
    << "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {\n"
    << "  set terminal pngcairo size 900,600 noenhanced font \"sans,11\"\n"
    << "} else {\n"
    << "  set terminal png size 900,600 noenhanced\n"
    << "}\n"
    << "set output " << quoted(png_path) << "\n"
    << "set title \"Training speedup (images/sec) against GPUs\"\n"
    << "set xlabel \"GPUs\"\nset ylabel \"speedup\"\n"
    << "set key top left\nset grid\n"
    << "set xrange [0:" << max_gpus + 1 << "]\nset yrange [0:" << max_gpus + 1 << "]\n";
  for (std::size_t m = 0; m < models.size(); ++m) {
    g << "$model" << m << " << EOD\n";
    for (const auto& r : rows) {
      if (r.model == models[m]) g << r.gpus << " " << std::setprecision(10) << r.speedup << "\n";
    }
    g << "EOD\n";
  }
  g << "plot x title \"ideal\" with lines dashtype 2 linecolor rgb \"gray40\"";
  for (std::size_t m = 0; m < models.size(); ++m) {
    g << ", \\\n     $model" << m << " using 1:2 title " << quoted(models[m])
      << " with linespoints linewidth 2 pointtype 7";
  }
  g << "\n";
  return g.str();
}

}  // namespace dptrain::app
