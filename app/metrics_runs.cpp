#include "metrics_runs.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "dptrain/core/error.hpp"
#include "json_counts.hpp"

namespace dptrain::app {
namespace {
using nlohmann::json;

constexpr std::int64_t kMaxStep = std::numeric_limits<std::int64_t>::max() / 2;

// A number field: nullopt-like -1 default when absent; an error naming the field when it is not a
// finite number (a NaN loss was written as null by older runs: that point is left out, not drawn).
double number(const json& j, const char* key, const std::string& where, double absent) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return absent;
  DPTRAIN_CHECK(it->is_number(), where, ": the field '", key, "' must be a number, not ", it->dump());
  return it->get<double>();
}

std::vector<double> numbers(const json& j, const char* key, const std::string& where) {
  std::vector<double> values;
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return values;
  DPTRAIN_CHECK(it->is_array(), where, ": the field '", key, "' must be an array of numbers");
  for (const auto& v : *it) {
    DPTRAIN_CHECK(v.is_number(), where, ": the field '", key, "' must be an array of numbers, not holding ", v.dump());
    values.push_back(v.get<double>());
  }
  return values;
}

std::vector<RankTimes> rank_times(const json& j, const std::string& where) {
  const std::vector<double> step = numbers(j, "step_seconds_per_rank", where);
  const std::vector<double> compute = numbers(j, "compute_seconds_per_rank", where);
  const std::vector<double> data = numbers(j, "data_wait_seconds_per_rank", where);
  const std::vector<double> comm = numbers(j, "communication_wait_seconds_per_rank", where);
  if (compute.empty()) return {};  // written before the per-rank split
  DPTRAIN_CHECK(step.size() == compute.size() && data.size() == compute.size() && comm.size() == compute.size(), where,
                ": the per-rank fields have different lengths");
  std::vector<RankTimes> ranks(compute.size());
  for (std::size_t r = 0; r < ranks.size(); ++r) ranks[r] = {step[r], compute[r], data[r], comm[r]};
  return ranks;
}

// The last step a piece's records may have before the next piece takes over: the step the next one
// resumed from (its start line), else (older files) the step before its first record.
std::int64_t last_kept_step(const MetricsRun& next) {
  if (next.start_step >= 0) return next.start_step;
  std::int64_t first = kMaxStep;
  if (!next.steps.empty()) first = std::min(first, next.steps.front().step);
  if (!next.evals.empty()) first = std::min(first, next.evals.front().step);
  return first - 1;
}
}  // namespace

MetricsRun read_metrics_file(const std::string& path) {
  std::ifstream in(path);
  DPTRAIN_CHECK(in.good(), "cannot read '", path, "': ", std::strerror(errno));
  MetricsRun run;
  run.label = std::filesystem::path(path).stem().string();
  run.pieces = 1;
  std::string line;
  int number_of_line = 0;
  while (std::getline(in, line)) {
    ++number_of_line;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(number_of_line);
    const json j = json::parse(line, nullptr, false);
    DPTRAIN_CHECK(!j.is_discarded() && j.is_object(), where,
                  ": not a JSON object (expected the lines of a 'dptrain train --metrics' file)");
    const auto type = j.find("type");
    if (type == j.end() || !type->is_string()) continue;  // not ours: left alone
    if (*type == "start") {
      run.start_step = json_count(j, "step", where, 0, kMaxStep).value_or(-1);
      const auto nodes = j.find("nodes");
      run.nodes.clear();
      if (nodes != j.end() && nodes->is_array()) {
        for (const auto& n : *nodes) run.nodes.push_back(n.is_string() ? n.get<std::string>() : "?");
      }
      continue;
    }
    if (*type != "step" && *type != "eval") continue;
    const std::int64_t step = json_count(j, "step", where, 0, kMaxStep).value_or(-1);
    DPTRAIN_CHECK(step >= 0, where, ": a '", type->get<std::string>(), "' line without its step");
    if (*type == "step") {
      StepPoint p;
      p.step = step;
      p.elapsed = number(j, "elapsed_seconds", where, -1);
      p.loss = number(j, "loss", where, std::nan(""));
      p.accuracy = number(j, "accuracy", where, std::nan(""));
      p.images_per_sec = number(j, "images_per_sec", where, std::nan(""));
      p.ranks = rank_times(j, where);
      run.steps.push_back(std::move(p));
    } else {
      EvalPoint p;
      p.step = step;
      p.elapsed = number(j, "elapsed_seconds", where, -1);
      p.loss = number(j, "loss", where, std::nan(""));
      p.top1 = number(j, "top1", where, std::nan(""));
      run.evals.push_back(p);
    }
  }
  DPTRAIN_CHECK(!run.steps.empty() || !run.evals.empty(), "'", path,
                "' holds no step or evaluation line: expected a 'dptrain train --metrics' file");
  return run;
}

MetricsRun join_pieces(std::vector<MetricsRun> pieces, std::string label) {
  DPTRAIN_CHECK(!pieces.empty(), "no metrics to join");
  // Pieces in the order they ran: by the step each started from.
  std::vector<std::int64_t> starts;
  for (const auto& p : pieces) starts.push_back(last_kept_step(p));
  std::vector<std::size_t> order(pieces.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return starts[a] < starts[b]; });
  MetricsRun run;
  run.label = std::move(label);
  double offset = 0;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const MetricsRun& piece = pieces[order[k]];
    // What this piece logged after the checkpoint the next piece resumed from was done again there.
    const std::int64_t keep_until = k + 1 < order.size() ? starts[order[k + 1]] : kMaxStep;
    double last = 0;
    for (StepPoint p : piece.steps) {
      if (p.step > keep_until) break;
      if (p.elapsed >= 0) {
        last = std::max(last, p.elapsed);
        p.elapsed += offset;
      }
      run.steps.push_back(std::move(p));
    }
    for (EvalPoint p : piece.evals) {
      if (p.step > keep_until) break;
      if (p.elapsed >= 0) {
        last = std::max(last, p.elapsed);
        p.elapsed += offset;
      }
      run.evals.push_back(p);
    }
    offset += last;
    if (!piece.nodes.empty()) run.nodes = piece.nodes;
    if (k == 0) run.start_step = piece.start_step;
    ++run.pieces;
  }
  return run;
}

std::vector<std::string> metrics_files_in(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (entry.is_regular_file() && entry.path().extension() == ".jsonl") files.push_back(entry.path().string());
  }
  DPTRAIN_CHECK(!error, "cannot list '", dir, "': ", error.message());
  DPTRAIN_CHECK(!files.empty(), "'", dir, "' holds no metrics file (*.jsonl)");
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<RankTimes> mean_rank_times(const MetricsRun& run) {
  std::size_t ranks = 0;
  for (auto it = run.steps.rbegin(); it != run.steps.rend() && ranks == 0; ++it) ranks = it->ranks.size();
  std::vector<RankTimes> mean(ranks);
  int windows = 0;
  for (const StepPoint& p : run.steps) {
    if (ranks == 0 || p.ranks.size() != ranks) continue;
    for (std::size_t r = 0; r < ranks; ++r) {
      mean[r].step += p.ranks[r].step;
      mean[r].compute += p.ranks[r].compute;
      mean[r].data_wait += p.ranks[r].data_wait;
      mean[r].communication_wait += p.ranks[r].communication_wait;
    }
    ++windows;
  }
  for (RankTimes& t : mean) {
    t.step /= windows;
    t.compute /= windows;
    t.data_wait /= windows;
    t.communication_wait /= windows;
  }
  return mean;
}

}  // namespace dptrain::app
