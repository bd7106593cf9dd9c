#include "scaling_report.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "dptrain/backend/backend.hpp"
#include "dptrain/core/error.hpp"
#include "dptrain/net/models/registry.hpp"
#include "dptrain/train/gradient_timing.hpp"
#include "gnuplot.hpp"
#include "json_counts.hpp"

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
  // The GPU count as the result names it: "gpus", else "world_size"; 64-bit and bounded, never cut.
  const std::string gpus_key = j.contains("gpus") ? "gpus" : "world_size";
  need(gpus_key.c_str());
  s.gpus = static_cast<int>(json_count(j, gpus_key, where, 1, kMaxResultGpus).value());
  const json& rate = need(rate_key.c_str());
  DPTRAIN_CHECK(rate.is_number() && rate.get<double>() > 0 && std::isfinite(rate.get<double>()), where, ": the field '",
                rate_key, "' is not a positive number");
  s.images_per_sec = rate.get<double>();
  // What a prediction needs, where the result has it.
  const auto optional_number = [&](const char* key) {
    return j.contains(key) && j[key].is_number() && j[key].get<double>() > 0 ? j[key].get<double>() : 0.0;
  };
  s.batch = optional_number("batch_size");
  DPTRAIN_CHECK(s.batch <= static_cast<double>(std::numeric_limits<int>::max()), where,
                ": the field 'batch_size' must be at most ", std::numeric_limits<int>::max(), ", not ", s.batch);
  // Sizes a prediction builds a net of: bounded before any shape is made; absent means the model's own.
  s.image_size = static_cast<int>(json_count(j, "image_size", where, 1, kMaxResultImageSize).value_or(0));
  s.classes = static_cast<int>(json_count(j, "classes", where, 2, kMaxResultClasses).value_or(0));
  return s;
}

// A CSV field (RFC 4180): quoted, with quotes doubled, when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string q = "\"";
  for (char c : text) {
    q += c;
    if (c == '"') q += '"';
  }
  return q + "\"";
}
}  // namespace

std::vector<ScalingSample> read_scaling_samples(const std::string& path) {
  std::ifstream in(path);
  DPTRAIN_CHECK(in.good(), "cannot read '", path, "': ", std::strerror(errno));
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
  std::map<std::string, std::map<int, const ScalingSample*>> first;
  for (const auto& s : samples) {
    if (!rates.contains(s.model)) models.push_back(s.model);
    rates[s.model][s.gpus].push_back(s.images_per_sec);
    first[s.model].emplace(s.gpus, &s);
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
      const ScalingSample& f = *first[model][gpus];
      r.batch = f.batch;
      r.image_size = f.image_size;
      r.classes = f.classes;
      for (double v : values) r.images_per_sec += v / r.runs;
      if (base_per_gpu == 0) base_per_gpu = r.images_per_sec / gpus;
      r.speedup = r.images_per_sec / base_per_gpu;
      r.efficiency = r.speedup / gpus;
      rows.push_back(r);
    }
  }
  return rows;
}

std::vector<std::string> add_predictions(std::vector<ScalingRow>& rows, const distributed::ClusterModel& cluster,
                                         double bucket_mb) {
  std::vector<std::string> notes;
  std::vector<std::string> models;
  for (const auto& r : rows) {
    if (std::find(models.begin(), models.end(), r.model) == models.end()) models.push_back(r.model);
  }
  auto backend = make_cpu_backend();
  for (const auto& model : models) {
    const auto one =
        std::find_if(rows.begin(), rows.end(), [&](const ScalingRow& r) { return r.model == model && r.gpus == 1; });
    if (one == rows.end() || one->batch <= 0) {
      notes.push_back("no prediction for " + printable_name(model) + ": it needs a 1-GPU run that says its batch size");
      continue;
    }
    const auto& zoo = model_zoo();
    if (std::none_of(zoo.begin(), zoo.end(), [&](const ModelInfo& m) { return m.name == model; })) {
      notes.push_back("no prediction for " + printable_name(model) + ": not a model of the zoo");
      continue;
    }
    ModelConfig config;
    config.image_size = one->image_size;
    config.classes = one->classes > 0 ? one->classes : 1000;
    config.memory.allocate = false;
    const auto net = build_model(model, *backend, config);
    const auto buckets = gradient_timing(*net, static_cast<std::size_t>(bucket_mb * (1 << 20)));
    const double per_image = 1 / one->images_per_sec;
    for (auto& r : rows) {
      if (r.model != model) continue;
      const double batch = r.batch > 0 ? r.batch : one->batch;
      const int per_node = std::min(r.gpus, cluster.gpus_per_node);
      const bool several_nodes = r.gpus > per_node;
      const auto shape =
          several_nodes && per_node > 1 ? distributed::AllreduceShape::hierarchical : distributed::AllreduceShape::flat;
      const auto p = distributed::predict_step(r.gpus, batch, batch * per_image, buckets, cluster, shape);
      r.predicted_images_per_sec = p.images_per_second;
    }
    const double base = one->predicted_images_per_sec;
    for (auto& r : rows) {
      if (r.model == model) r.predicted_speedup = r.predicted_images_per_sec / base;
    }
  }
  return notes;
}

namespace {
bool any_prediction(const std::vector<ScalingRow>& rows) {
  return std::any_of(rows.begin(), rows.end(), [](const ScalingRow& r) { return r.predicted_images_per_sec > 0; });
}
}  // namespace

void print_scaling_table(std::ostream& out, const std::vector<ScalingRow>& rows) {
  const bool predicted = any_prediction(rows);
  std::size_t width = 5;
  for (const auto& r : rows) width = std::max(width, printable_name(r.model).size());
  out << std::left << std::setw(static_cast<int>(width)) << "model" << std::right << std::setw(6) << "GPUs"
      << std::setw(14) << "images/sec" << std::setw(10) << "speedup" << std::setw(12) << "efficiency" << std::setw(6)
      << "runs";
  if (predicted) out << std::setw(12) << "predicted" << std::setw(12) << "(images/s)";
  out << "\n";
  for (const auto& r : rows) {
    out << std::left << std::setw(static_cast<int>(width)) << printable_name(r.model) << std::right << std::setw(6)
        << r.gpus << std::fixed << std::setprecision(2) << std::setw(14) << r.images_per_sec << std::setw(10)
        << r.speedup << std::setprecision(1) << std::setw(11) << 100.0 * r.efficiency << "%" << std::setw(6) << r.runs;
    if (predicted && r.predicted_images_per_sec > 0) {
      out << std::setprecision(2) << std::setw(11) << r.predicted_speedup << "x" << std::setprecision(1)
          << std::setw(12) << r.predicted_images_per_sec;
    }
    out << "\n";
  }
  out.unsetf(std::ios::fixed);
}

void write_scaling_csv(std::ostream& out, const std::vector<ScalingRow>& rows) {
  const bool predicted = any_prediction(rows);
  out << "model,gpus,images_per_sec,speedup,efficiency,runs"
      << (predicted ? ",predicted_images_per_sec,predicted_speedup" : "") << "\n";
  for (const auto& r : rows) {
    out << csv_field(r.model) << "," << r.gpus << "," << std::setprecision(10) << r.images_per_sec << "," << r.speedup
        << "," << r.efficiency << "," << r.runs;
    if (predicted) {
      out << ",";
      if (r.predicted_images_per_sec > 0)
        out << r.predicted_images_per_sec << "," << r.predicted_speedup;
      else
        out << ",";
    }
    out << "\n";
  }
}

std::string scaling_plot_script(const std::vector<ScalingRow>& rows, const std::string& png_path) {
  // Every string the JSON files or the command line gave goes in single quotes (gnuplot_single_quoted):
  // gnuplot would run a backquoted command in a double-quoted model name. Model names are shown with
  // their control characters escaped.
  int max_gpus = 1;
  std::vector<std::string> models;
  for (const auto& r : rows) {
    max_gpus = std::max(max_gpus, r.gpus);
    if (std::find(models.begin(), models.end(), r.model) == models.end()) models.push_back(r.model);
  }
  std::ostringstream g;
  g << "# Drawn by dptrain report: speedup over the smallest GPU count, per model, and the ideal line.\n"
    << gnuplot_png_output(png_path, 900, 600) << "set title \"Training speedup (images/sec) against GPUs\"\n"
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
  // The prediction (dptrain report --profile) as a line beside each model's measured points.
  std::vector<bool> predicted(models.size(), false);
  for (std::size_t m = 0; m < models.size(); ++m) {
    for (const auto& r : rows) predicted[m] = predicted[m] || (r.model == models[m] && r.predicted_speedup > 0);
    if (!predicted[m]) continue;
    g << "$predicted" << m << " << EOD\n";
    for (const auto& r : rows) {
      if (r.model == models[m] && r.predicted_speedup > 0)
        g << r.gpus << " " << std::setprecision(10) << r.predicted_speedup << "\n";
    }
    g << "EOD\n";
  }
  g << "plot x title \"ideal\" with lines dashtype 2 linecolor rgb \"gray40\"";
  for (std::size_t m = 0; m < models.size(); ++m) {
    g << ", \\\n     $model" << m << " using 1:2 title " << gnuplot_single_quoted(printable_name(models[m]))
      << " with linespoints linewidth 2 pointtype 7 linecolor " << m + 1;
    if (predicted[m]) {
      g << ", \\\n     $predicted" << m << " using 1:2 title "
        << gnuplot_single_quoted(printable_name(models[m]) + " (predicted)")
        << " with lines dashtype 3 linewidth 2 linecolor " << m + 1;
    }
  }
  g << "\n";
  return g.str();
}

}  // namespace dptrain::app
