// dptrain preflight: before a long job trains, every rank measures what a slow node would slow down
// (a GEMM on its device; on a GPU the host-to-device copy; the allreduce among the ranks of its node,
// and among one rank per node), and rank 0 compares each figure with the other ranks' and nodes':
// a node below --min-fraction of the median is named, written to --failure-report, and the command
// exits with kPreflightSlowNode, so slurm/train.sbatch can leave it behind before training starts.
#include <array>
#include <chrono>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "backend_options.hpp"
#include "cluster_profile.hpp"
#include "commands.hpp"
#include "distributed_options.hpp"
#include "dptrain/core/error.hpp"
#include "dptrain/core/exit_codes.hpp"
#include "dptrain/core/json_line.hpp"
#include "dptrain/train/stragglers.hpp"
#include "link_measurement.hpp"
#include "option_checks.hpp"

namespace dptrain::app {
namespace {
// The exit code when a node was named (train.sbatch: DPTRAIN_PREFLIGHT=exclude leaves it behind).
constexpr int kPreflightSlowNode = exit_code::slow_node;

struct PreflightOptions {
  distributed::JobOptions dist;
  BackendOptions device;
  LinkOptions links;  // given: the partition's expected link figures, to compare with
  double min_fraction = 0.8;
  double measure_mb = 64;
  std::string json;
};

// What one rank measured; -1: not measured (no GPU, one rank a node, not a node's first rank).
struct RankFigures {
  double gemm_gflops = -1, host_to_device_gbps = -1, intra_gbps = -1, inter_gbps = -1;
};

// The host-to-device copy of `mib` MiB from pageable memory (as a batch goes), best of 5, in GB/s.
double measure_host_to_device(Backend& backend, double mib) {
  const auto count = static_cast<std::int64_t>(mib * (1 << 20) / sizeof(float));
  Tensor host = Tensor::zeros(Shape{count});
  Tensor device = backend.allocate(Shape{count});
  auto finish = [&backend] {
    if (auto fence = backend.fence()) fence->wait();
  };
  backend.copy_from_host(host, device);  // warm-up: first touch, mappings
  finish();
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    backend.copy_from_host(host, device);
    finish();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, static_cast<double>(count) * sizeof(float) / seconds / 1e9);
  }
  return best;
}

std::string number(double v, int precision = 1) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(precision) << v;
  return out.str();
}

// A figure that fell short: which, where, how much.
struct Shortfall {
  std::string node;
  int rank = -1;  // -1: the node's figure
  std::string figure, unit;
  double value = 0, median = 0;
};

// Rank 0: compares the ranks' figures (GEMM, host-to-device) and the nodes' (allreduce in the node)
// with their medians, printing each; returns what fell below min_fraction of its median.
std::vector<Shortfall> compare(const distributed::Topology& t, const std::vector<RankFigures>& all, double min_fraction,
                               std::ostream& out) {
  std::vector<Shortfall> slow;
  auto per_rank = [&](const char* name, const char* unit, double RankFigures::*field) {
    std::vector<double> values;
    std::vector<int> ranks;
    for (std::size_t r = 0; r < all.size(); ++r) {
      if (all[r].*field < 0) continue;
      values.push_back(all[r].*field);
      ranks.push_back(static_cast<int>(r));
    }
    if (values.empty()) return;
    const double middle = median(values);
    const auto low = std::min_element(values.begin(), values.end()) - values.begin();
    const int lowest = ranks[static_cast<std::size_t>(low)];
    out << "  " << std::left << std::setw(26) << name << std::right << " median " << number(middle) << " " << unit
        << ", lowest " << number(values[static_cast<std::size_t>(low)]) << " (rank " << lowest << " on "
        << t.ranks[static_cast<std::size_t>(lowest)].node << "), " << values.size() << " rank(s)\n";
    for (int i : find_below_median(values, min_fraction)) {
      const int r = ranks[static_cast<std::size_t>(i)];
      slow.push_back(
          {t.ranks[static_cast<std::size_t>(r)].node, r, name, unit, values[static_cast<std::size_t>(i)], middle});
    }
  };
  per_rank("GEMM (fp32)", "GFLOP/s", &RankFigures::gemm_gflops);
  per_rank("host-to-device copy", "GB/s", &RankFigures::host_to_device_gbps);
  // The allreduce in a node: one figure a node (its ranks measured it together).
  std::vector<double> values;
  std::vector<std::string> nodes;
  for (std::size_t r = 0; r < all.size(); ++r) {
    const auto& place = t.ranks[r];
    if (place.local_rank != 0 || all[r].intra_gbps < 0) continue;
    values.push_back(all[r].intra_gbps);
    nodes.push_back(place.node);
  }
  if (!values.empty()) {
    const double middle = median(values);
    const auto low = std::min_element(values.begin(), values.end()) - values.begin();
    out << "  " << std::left << std::setw(26) << "allreduce in a node" << std::right << " median " << number(middle, 2)
        << " GB/s, lowest " << number(values[static_cast<std::size_t>(low)], 2) << " ("
        << nodes[static_cast<std::size_t>(low)] << "), " << values.size() << " node(s)\n";
    for (int i : find_below_median(values, min_fraction)) {
      slow.push_back({nodes[static_cast<std::size_t>(i)], -1, "allreduce in a node", "GB/s",
                      values[static_cast<std::size_t>(i)], middle});
    }
  }
  return slow;
}

int run_preflight(const PreflightOptions& o) {
  distributed::Job job(o.dist, visible_devices(o.device));
  const distributed::Topology& t = job.topology();
  std::ostream discard(nullptr);
  std::ostream& out = job.is_root() ? std::cout : discard;
  if (job.is_root()) std::cerr << distributed::describe(job.launch_warnings());
  auto backend = make_backend(o.device, job);
  out << "preflight: " << t.size() << " rank(s) on " << t.node_count << " node(s), " << backend->name()
      << " backend; every rank measures at once\n"
      << std::flush;
  const auto started = std::chrono::steady_clock::now();

  RankFigures mine;
  mine.gemm_gflops = backend->measure_peak_gflops();
  if (!backend->device().is_cpu()) mine.host_to_device_gbps = measure_host_to_device(*backend, 256);
  if (t.size() > 1) {
    const MeasuredLinks links = measure_links(job, o.measure_mb * (1 << 20));
    if (links.intra) mine.intra_gbps = links.intra->bus_bytes_per_second / 1e9;
    if (links.inter) mine.inter_gbps = links.inter->bus_bytes_per_second / 1e9;
  }
  std::vector<RankFigures> all(static_cast<std::size_t>(t.size()));
  job.communicator().allgather(&mine, all.data(), sizeof mine);

  int verdict = 0;
  if (job.is_root()) {
    std::vector<Shortfall> slow = compare(t, all, o.min_fraction, out);
    const double inter = all[0].inter_gbps;  // rank 0 is the first rank of the first node
    std::string inter_note;
    if (inter >= 0) {
      out << "  " << std::left << std::setw(26) << "allreduce between nodes" << std::right << " " << number(inter, 2)
          << " GB/s (one rank a node)";
      if (o.links.given()) {
        const double expected = cluster_from(o.links).inter.bus_bytes_per_second / 1e9;
        out << ", " << number(100 * inter / expected, 0) << "% of the profile's " << number(expected, 2) << " GB/s";
        if (inter < o.min_fraction * expected) {
          inter_note = "dptrain: warning: the network between the nodes reaches " + number(inter, 2) + " GB/s, " +
                       number(100 * inter / expected, 0) +
                       "% of the profile's; the job is slow on every node alike (no node is to blame)";
        }
      }
      out << "\n";
    }
    if (!inter_note.empty()) std::cerr << inter_note << "\n";
    // One line a node to blame, with every figure that fell short there.
    std::map<std::string, std::vector<const Shortfall*>> by_node;
    for (const auto& s : slow) by_node[s.node].push_back(&s);
    for (const auto& [node, shortfalls] : by_node) {
      std::cerr << "dptrain: preflight: node " << node << " is slow:";
      for (const Shortfall* s : shortfalls) {
        std::cerr << " " << s->figure << " " << number(s->value, 2) << " " << s->unit
                  << (s->rank >= 0 ? " on rank " + std::to_string(s->rank) : "") << ", "
                  << number(100 * s->value / s->median, 0) << "% of the median " << number(s->median, 2) << ";";
      }
      std::cerr << " below " << number(100 * o.min_fraction, 0) << "% (--min-fraction); look at its clocks, "
                << "temperature and what else runs there, or leave it out (sbatch --exclude=" << node << ")\n";
    }
    if (!o.dist.failure_report.empty()) {
      // Written whole, then renamed: train.sbatch reads the nodes from the first field of each line.
      const std::string temporary = o.dist.failure_report + ".tmp";
      std::ofstream file(temporary, std::ios::trunc);
      for (const auto& s : slow) {
        file << "node=" << s.node << " rank=" << s.rank << " figure=" << std::quoted(s.figure) << " value=" << s.value
             << " median=" << s.median << " unit=" << s.unit << "\n";
      }
      file.close();
      DPTRAIN_CHECK(file.good() && std::rename(temporary.c_str(), o.dist.failure_report.c_str()) == 0,
                    "cannot write the failure report '", o.dist.failure_report, "'");
    }
    if (!o.json.empty()) {
      std::ofstream file(o.json);
      DPTRAIN_CHECK(file.good(), "cannot write '", o.json, "'");
      for (std::size_t r = 0; r < all.size(); ++r) {
        JsonLine j(file);
        j.field("type", "rank").field("rank", static_cast<std::int64_t>(r)).field("node", t.ranks[r].node);
        if (all[r].gemm_gflops >= 0) j.field("gemm_gflops", all[r].gemm_gflops);
        if (all[r].host_to_device_gbps >= 0) j.field("host_to_device_gbps", all[r].host_to_device_gbps);
        if (all[r].intra_gbps >= 0) j.field("allreduce_in_node_gbps", all[r].intra_gbps);
        if (all[r].inter_gbps >= 0) j.field("allreduce_between_nodes_gbps", all[r].inter_gbps);
        j.close();
      }
      for (const auto& s : slow) {
        JsonLine j(file);
        j.field("type", "slow").field("node", s.node).field("rank", static_cast<std::int64_t>(s.rank));
        j.field("figure", s.figure).field("value", s.value).field("median", s.median).field("unit", s.unit);
        j.close();
      }
      DPTRAIN_CHECK(file.good(), "writing '", o.json, "' failed");
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (by_node.empty()) {
      out << "preflight: passed in " << number(seconds) << " s: no node below " << number(100 * o.min_fraction, 0)
          << "% of the median\n";
    } else {
      out << "preflight: " << by_node.size() << " node(s) below " << number(100 * o.min_fraction, 0)
          << "% of the median, in " << number(seconds) << " s; exit code " << kPreflightSlowNode << "\n";
      verdict = kPreflightSlowNode;
    }
  }
  job.communicator().broadcast(&verdict, sizeof verdict, 0);
  return verdict;
}
}  // namespace

Command add_preflight_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "preflight",
      "Check every node before training (under srun or mpiexec, launched as the job is): a GEMM on each rank's "
      "device, the host-to-device copy on GPUs, the allreduce in each node and between nodes; name the nodes below "
      "a fraction of the median");
  auto o = std::make_shared<PreflightOptions>();
  add_device_options(cmd, o->device);
  add_job_control_options(cmd, o->dist);
  cmd->add_option("--profile", o->links.profile,
                  "Partition profile whose link figures (DPTRAIN_PREDICT_INTER_GBPS) the allreduce between nodes is "
                  "compared with (slurm/partitions/c4130-g.env)");
  cmd->add_option("--min-fraction", o->min_fraction,
                  "A rank or node below this fraction of the median figure is named (and the exit code is 77)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--measure-mb", o->measure_mb, "The allreduce's message, MB")
      ->check(above_zero())
      ->capture_default_str();
  cmd->add_option("--json", o->json, "Also write every rank's figures and the shortfalls as JSON lines to this file")
      ->check(output_file());
  cmd->footer(
      "Exit codes: 0 when no node fell short, 77 when one did (its nodes are named on stderr and, with "
      "--failure-report, written one a line as 'node=N rank=R figure=... value=... median=...'; slurm/train.sbatch "
      "--preflight exclude leaves them behind). The GEMM is the device's fp32 peak as 'dptrain bench' measures it; "
      "the allreduces are MPI on host memory, the path gradients take between nodes. A few seconds on a healthy job.");
  return [o] { return run_preflight(*o); };
}

}  // namespace dptrain::app
