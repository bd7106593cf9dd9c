// dptrain predict: the images/sec, speedup and efficiency a model should reach on 1..N GPUs, from one
// GPU's compute time, the model's gradient buckets and a cluster's links (distributed/scaling_model.hpp).
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "cluster_profile.hpp"
#include "commands.hpp"
#include "dptrain/backend/backend.hpp"
#include "dptrain/core/error.hpp"
#include "dptrain/core/json_line.hpp"
#include "dptrain/distributed/scaling_model.hpp"
#include "dptrain/net/models/registry.hpp"
#include "dptrain/train/gradient_timing.hpp"
#include "json_counts.hpp"
#include "link_measurement.hpp"
#include "option_checks.hpp"

namespace dptrain::app {
namespace {
using distributed::AllreduceShape;
using distributed::ClusterModel;
using distributed::StepPrediction;

struct PredictOptions {
  std::string model;
  std::vector<int> gpus{1, 2, 4, 8, 16};
  std::vector<double> batch{32};     // per GPU (weak scaling): one value, or one per --gpus entry
  std::vector<double> global_batch;  // strong scaling instead: one value, or one per --gpus entry
  double images_per_second = 0;      // one GPU's training rate (taken as the same at every batch)
  std::string bench;                 // or a `dptrain bench --json` result of one rank
  LinkOptions links;                 // the cluster: a profile and overrides
  std::string allreduce = "auto";
  double bucket_mb = 25;
  bool no_overlap = false;
  int image_size = 0, classes = 1000;
  bool no_aux = false;
  std::string json, csv;
  bool measure = false;         // measure the links in this job (srun, mpiexec)
  double measure_mb = 64;       // the large message
  distributed::JobOptions job;  // --ranks-per-node
};

ClusterModel cluster_of(const PredictOptions& o, const std::optional<MeasuredLinks>& measured) {
  LinkOptions links = o.links;
  if (measured) {
    // What the job measured wins over the profile; a level it cannot measure (one rank a node, or one
    // node) keeps the given figures, or, with none given, is taken to be as fast as the other.
    const auto set = [](double& gbps, double& latency_us, const distributed::LinkModel& link) {
      gbps = link.bus_bytes_per_second / 1e9;
      latency_us = link.latency_seconds * 1e6;
    };
    if (measured->intra) set(links.intra_gbps, links.intra_latency_us, *measured->intra);
    if (measured->inter) set(links.inter_gbps, links.inter_latency_us, *measured->inter);
    if (links.gpus_per_node <= 0) links.gpus_per_node = measured->ranks_per_node;
    const bool profile_has_links = !links.profile.empty();
    if (!measured->intra && links.intra_gbps < 0 && !profile_has_links)
      set(links.intra_gbps, links.intra_latency_us, *measured->inter);
    if (!measured->inter && links.inter_gbps < 0 && !profile_has_links)
      set(links.inter_gbps, links.inter_latency_us, *measured->intra);
  }
  return cluster_from(links);
}

// One GPU's seconds per image of training (forward and backward), from --images-per-second or a bench.
double seconds_per_image(const PredictOptions& o) {
  if (!o.bench.empty()) {
    std::ifstream in(o.bench);
    DPTRAIN_CHECK(in.good(), "cannot read the bench result '", o.bench, "': ", std::strerror(errno));
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    DPTRAIN_CHECK(j.is_object() && j.contains("images_per_sec") && j["images_per_sec"].is_number() &&
                      j.contains("world_size") && j["world_size"].is_number_integer(),
                  "'", o.bench, "' is not a `dptrain bench --json` result (images_per_sec, world_size)");
    const std::int64_t world_size = json_count(j, "world_size", "'" + o.bench + "'", 1, kMaxResultGpus).value();
    // A bench of several ranks says how long its slowest rank computed a step before it waited for
    // gradients; its rate alone would include their communication.
    // (On GPUs that figure can include waiting for the others' first buckets, so only a CPU bench of
    // several ranks, or a bench of one, is taken.)
    const bool cpu =
        j.contains("backend") && j["backend"].is_string() && j["backend"].get<std::string>().rfind("cpu", 0) == 0;
    if ((cpu || world_size == 1) && j.contains("compute_seconds_per_step") &&
        j["compute_seconds_per_step"].is_number() && j.contains("batch_size") && j["batch_size"].is_number() &&
        j["batch_size"].get<double>() > 0) {
      const double compute = j["compute_seconds_per_step"].get<double>();
      DPTRAIN_CHECK(std::isfinite(compute) && compute > 0, "'", o.bench,
                    "': compute_seconds_per_step must be positive");
      if (j.contains("model") && j["model"].is_string()) {
        DPTRAIN_CHECK(j["model"].get<std::string>() == o.model, "'", o.bench, "' benchmarks ",
                      j["model"].get<std::string>(), ", not ", o.model);
      }
      return compute / j["batch_size"].get<double>();
    }
    DPTRAIN_CHECK(world_size == 1, "'", o.bench, "' was measured on ", world_size,
                  " ranks (on GPUs, or without compute_seconds_per_step): its rate includes their communication; "
                  "give a 1-rank bench");
    if (j.contains("model") && j["model"].is_string()) {
      DPTRAIN_CHECK(j["model"].get<std::string>() == o.model, "'", o.bench, "' benchmarks ",
                    j["model"].get<std::string>(), ", not ", o.model);
    }
    const double rate = j["images_per_sec"].get<double>();
    DPTRAIN_CHECK(std::isfinite(rate) && rate > 0, "'", o.bench, "': images_per_sec must be positive");
    return 1 / rate;
  }
  DPTRAIN_CHECK(o.images_per_second > 0, "give one GPU's training rate: --images-per-second R, or --bench FILE");
  return 1 / o.images_per_second;
}

double pick(const std::vector<double>& values, std::size_t i, const char* what) {
  DPTRAIN_CHECK(!values.empty(), what, " needs a value");
  return values.size() == 1 ? values[0] : values[i];
}

// A batch as users write it: 144, or 21.3 for a global batch that does not divide evenly.
std::string batch_text(double batch) {
  std::ostringstream out;
  if (batch == std::floor(batch)) {
    out << static_cast<long long>(batch);
  } else {
    out << std::fixed << std::setprecision(1) << batch;
  }
  return out.str();
}

void print_table(const std::vector<StepPrediction>& rows, double reference, std::ostream& out) {
  out << std::left << std::setw(6) << "GPUs" << std::setw(7) << "nodes" << std::setw(11) << "batch/GPU" << std::right
      << std::setw(11) << "compute ms" << std::setw(13) << "allreduce ms" << std::setw(12) << "exposed ms"
      << std::setw(9) << "data ms" << std::setw(9) << "step ms" << std::setw(11) << "images/s" << std::setw(9)
      << "speedup" << std::setw(12) << "efficiency"
      << "  bound\n";
  for (const StepPrediction& r : rows) {
    const double speedup = r.images_per_second / reference;
    out << std::left << std::setw(6) << r.gpus << std::setw(7) << r.nodes << std::setw(11)
        << batch_text(r.batch_per_gpu) << std::right << std::fixed << std::setprecision(1) << std::setw(11)
        << r.compute_seconds * 1e3 << std::setw(13) << r.allreduce_seconds * 1e3 << std::setw(12)
        << r.exposed_seconds * 1e3 << std::setw(9) << r.data_seconds * 1e3 << std::setw(9) << r.step_seconds * 1e3
        << std::setw(11) << std::setprecision(0) << r.images_per_second << std::setw(8) << std::setprecision(2)
        << speedup << "x" << std::setw(11) << std::setprecision(1) << 100 * speedup / r.gpus << "%"
        << "  " << r.bound << "\n";
    out.unsetf(std::ios::fixed);
  }
}

nlohmann::json row_json(const StepPrediction& r, double reference) {
  return {{"gpus", r.gpus},
          {"nodes", r.nodes},
          {"batch_per_gpu", r.batch_per_gpu},
          {"compute_seconds", r.compute_seconds},
          {"allreduce_seconds", r.allreduce_seconds},
          {"exposed_seconds", r.exposed_seconds},
          {"data_seconds", r.data_seconds},
          {"step_seconds", r.step_seconds},
          {"images_per_sec", r.images_per_second},
          {"speedup", r.images_per_second / reference},
          {"efficiency", r.images_per_second / reference / r.gpus},
          {"bound", r.bound}};
}

std::string describe_link(const std::optional<distributed::LinkModel>& link) {
  if (!link) return "not measured";
  std::ostringstream out;
  out << std::fixed << std::setprecision(2) << link->bus_bytes_per_second / 1e9 << " GB/s + " << std::setprecision(1)
      << link->latency_seconds * 1e6 << " us";
  return out.str();
}

int run_predict(const PredictOptions& o) {
  // What the prediction needs from the options is checked first, on every rank, before any measurement.
  const double per_image = seconds_per_image(o);
  auto backend = make_cpu_backend();
  ModelConfig config;
  config.image_size = o.image_size;
  config.classes = o.classes;
  config.aux_heads = !o.no_aux;
  config.memory.allocate = false;  // shapes only
  auto net = build_model(o.model, *backend, config);
  DPTRAIN_CHECK(o.bucket_mb > 0, "--bucket-mb must be positive");
  const auto buckets = gradient_timing(*net, static_cast<std::size_t>(o.bucket_mb * (1 << 20)));
  double gradient_bytes = 0;
  for (const auto& b : buckets) gradient_bytes += b.bytes;

  const bool strong = !o.global_batch.empty();
  const std::vector<double>& batches = strong ? o.global_batch : o.batch;
  DPTRAIN_CHECK(batches.size() == 1 || batches.size() == o.gpus.size(), strong ? "--global-batch" : "--batch-size",
                " takes one value or one per --gpus entry (", o.gpus.size(), ")");
  std::optional<MeasuredLinks> measured;
  std::unique_ptr<distributed::Job> job;
  if (o.measure) {
    DPTRAIN_CHECK(o.measure_mb > 0, "--measure-mb must be positive");
    job = std::make_unique<distributed::Job>(o.job);
    measured = measure_links(*job, o.measure_mb * (1 << 20));
    if (!job->is_root()) return 0;
    std::cout << "measured in this job (MPI allreduce of host buffers, " << o.measure_mb << " MB): in a node ("
              << measured->ranks_per_node << " ranks) " << describe_link(measured->intra) << "; between nodes ("
              << measured->nodes << ") " << describe_link(measured->inter) << "\n";
  }
  const ClusterModel cluster = cluster_of(o, measured);
  std::vector<StepPrediction> rows;
  for (std::size_t i = 0; i < o.gpus.size(); ++i) {
    const int gpus = o.gpus[i];
    DPTRAIN_CHECK(gpus >= 1, "--gpus: every entry must be at least 1");
    const double batch = strong ? pick(batches, i, "--global-batch") / gpus : pick(batches, i, "--batch-size");
    DPTRAIN_CHECK(batch > 0, "the batch per GPU must be positive");
    const int per_node = std::min(gpus, cluster.gpus_per_node);
    const int nodes = (gpus + per_node - 1) / per_node;
    AllreduceShape shape = AllreduceShape::flat;
    if (o.allreduce == "hierarchical" || (o.allreduce == "auto" && nodes > 1 && per_node > 1)) {
      shape = AllreduceShape::hierarchical;
    }
    // The compute time scales with the batch (a GPU's rate taken as constant: optimistic for batches
    // much smaller than the measured one).
    rows.push_back(distributed::predict_step(gpus, batch, batch * per_image, buckets, cluster, shape, !o.no_overlap));
  }
  // Speedup against one GPU at the first row's batch per GPU (the rate that is measured).
  const StepPrediction one =
      distributed::predict_step(1, rows.front().batch_per_gpu, rows.front().batch_per_gpu * per_image, buckets, cluster,
                                AllreduceShape::flat, !o.no_overlap);
  const double reference = one.images_per_second;

  std::cout << "dptrain predict: " << o.model << ", " << buckets.size() << " gradient bucket"
            << (buckets.size() == 1 ? "" : "s") << " (" << std::fixed << std::setprecision(1) << gradient_bytes / 1e6
            << " MB), one GPU " << std::setprecision(1) << 1 / per_image << " images/s; links: in a node "
            << cluster.intra.bus_bytes_per_second / 1e9 << " GB/s + " << cluster.intra.latency_seconds * 1e6
            << " us, between nodes " << cluster.inter.bus_bytes_per_second / 1e9 << " GB/s + "
            << cluster.inter.latency_seconds * 1e6 << " us; " << cluster.gpus_per_node << " GPUs a node; "
            << (strong ? "strong" : "weak") << " scaling\n";
  std::cout.unsetf(std::ios::fixed);
  print_table(rows, reference, std::cout);

  if (!o.json.empty()) {
    nlohmann::json j{
        {"model", o.model},          {"scaling", strong ? "strong" : "weak"},   {"gradient_bytes", gradient_bytes},
        {"buckets", buckets.size()}, {"one_gpu_images_per_sec", 1 / per_image}, {"rows", nlohmann::json::array()}};
    j["links"] = {{"intra_bus_gbps", cluster.intra.bus_bytes_per_second / 1e9},
                  {"intra_latency_us", cluster.intra.latency_seconds * 1e6},
                  {"inter_bus_gbps", cluster.inter.bus_bytes_per_second / 1e9},
                  {"inter_latency_us", cluster.inter.latency_seconds * 1e6},
                  {"gpus_per_node", cluster.gpus_per_node},
                  {"measured", measured.has_value()}};
    for (const auto& r : rows) j["rows"].push_back(row_json(r, reference));
    std::ofstream out(o.json);
    out << json_text(j, 2) << "\n";
    DPTRAIN_CHECK(out.good(), "cannot write '", o.json, "'");
  }
  if (!o.csv.empty()) {
    std::ofstream out(o.csv);
    out << "gpus,nodes,batch_per_gpu,compute_seconds,allreduce_seconds,exposed_seconds,data_seconds,step_seconds,"
           "images_per_sec,speedup,efficiency,bound\n";
    for (const auto& r : rows) {
      const nlohmann::json j = row_json(r, reference);
      out << r.gpus << "," << r.nodes << "," << r.batch_per_gpu << "," << r.compute_seconds << ","
          << r.allreduce_seconds << "," << r.exposed_seconds << "," << r.data_seconds << "," << r.step_seconds << ","
          << r.images_per_second << "," << j["speedup"].get<double>() << "," << j["efficiency"].get<double>() << ","
          << r.bound << "\n";
    }
    DPTRAIN_CHECK(out.good(), "cannot write '", o.csv, "'");
  }
  return 0;
}
}  // namespace

Command add_predict_command(CLI::App& app) {
  auto o = std::make_shared<PredictOptions>();
  CLI::App* cmd = app.add_subcommand(
      "predict",
      "Predict images/sec, speedup and efficiency on 1..N GPUs from one GPU's rate, the model's gradient "
      "buckets and the cluster's links (compute, exposed communication and data time per step)");
  cmd->add_option("--model", o->model, "Model name (see 'dptrain inspect --list')")->required();
  cmd->add_option("--gpus", o->gpus, "GPU counts to predict")
      ->delimiter(',')
      ->check(in_range(1, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--batch-size", o->batch,
                  "Images per step on each GPU (weak scaling): one value, or one per --gpus entry")
      ->delimiter(',')
      ->check(above_zero())
      ->capture_default_str();
  cmd->add_option("--global-batch", o->global_batch,
                  "Strong scaling instead: the images of a step over all GPUs, one value or one per --gpus entry")
      ->delimiter(',')
      ->check(above_zero());
  cmd->add_option("--images-per-second", o->images_per_second,
                  "One GPU's training rate (forward and backward, no communication), images/s")
      ->check(above_zero());
  cmd->add_option("--bench", o->bench, "Or the result of a 1-rank 'dptrain bench --json' of the model");
  add_link_options(cmd, o->links);
  cmd->add_option("--allreduce", o->allreduce,
                  "auto (hierarchical on several nodes of several GPUs), flat or hierarchical")
      ->check(CLI::IsMember({"auto", "flat", "hierarchical"}))
      ->capture_default_str();
  cmd->add_option("--bucket-mb", o->bucket_mb, "Gradient bucket size, MB (as dptrain train)")
      ->check(above_zero())
      ->capture_default_str();
  cmd->add_flag("--no-overlap", o->no_overlap, "Reduce every bucket after the backward pass");
  cmd->add_option("--image-size", o->image_size, "Input height and width (default: the model's own)")
      ->check(in_range(1, 1 << 16));
  cmd->add_option("--classes", o->classes, "Number of classes")->check(in_range(2, 1 << 20))->capture_default_str();
  cmd->add_flag("--no-aux", o->no_aux, "Without the auxiliary classifiers");
  cmd->add_flag("--measure", o->measure,
                "Measure the links in this job instead (under srun or mpiexec: an MPI allreduce among the ranks of a "
                "node, then among one rank a node), and predict with them; GPUs a node = ranks a node");
  cmd->add_option("--measure-mb", o->measure_mb, "The large message of --measure, MB")
      ->check(above_zero())
      ->capture_default_str();
  cmd->add_option("--ranks-per-node", o->job.ranks_per_node,
                  "Treat each block of K consecutive ranks as one node (--measure; default: nodes from "
                  "SLURMD_NODENAME or the host name)")
      ->check(at_least(0));
  cmd->add_option("--json", o->json, "Also write the prediction as JSON to this file")->check(output_file());
  cmd->add_option("--csv", o->csv, "Also write the table as CSV to this file")->check(output_file());
  return [o] { return run_predict(*o); };
}

}  // namespace dptrain::app
