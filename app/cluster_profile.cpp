#include "cluster_profile.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>

#include "dptrain/core/error.hpp"
#include "option_checks.hpp"

namespace dptrain::app {
namespace {
// The `: "${NAME:=VALUE}"` defaults of a partition profile (the form every profile uses), by name.
std::map<std::string, std::string> read_profile(const std::string& path) {
  std::ifstream in(path);
  DPTRAIN_CHECK(in.good(), "cannot read the profile '", path, "': ", std::strerror(errno));
  static const std::regex line_form(R"re(^\s*:\s*"\$\{([A-Z0-9_]+):=([^}"]*)\}")re");
  std::map<std::string, std::string> values;
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, line_form)) values[m[1]] = m[2];
  }
  return values;
}

// A profile's figure: the environment's value when set (a profile's `:=` gives way to it, as the
// scripts that source the profile do), else the profile's default.
double profile_number(const std::map<std::string, std::string>& profile, const std::string& name,
                      const std::string& path) {
  const char* env = std::getenv(name.c_str());
  const auto it = profile.find(name);
  DPTRAIN_CHECK((env != nullptr && *env != '\0') || it != profile.end(), "the profile '", path, "' has no ", name,
                " (the scaling model's figures: see slurm/README.md, \"Predicted scaling\")");
  const std::string text = env != nullptr && *env != '\0' ? std::string(env) : it->second;
  const std::string where =
      env != nullptr && *env != '\0' ? std::string("the environment") : "the profile '" + path + "'";
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  DPTRAIN_CHECK(used == text.size() && std::isfinite(value) && value >= 0, where, ": ", name, "='", text,
                "' is not a non-negative number");
  return value;
}

}  // namespace

void add_link_options(CLI::App* cmd, LinkOptions& o) {
  cmd->add_option("--profile", o.profile,
                  "Partition profile with the link figures (slurm/partitions/c4130-g.env: DPTRAIN_PREDICT_*)");
  cmd->add_option("--gpus-per-node", o.gpus_per_node, "GPUs a node (default: the profile's, else 4)")
      ->check(in_range(1, 1 << 16));
  cmd->add_option("--intra-gbps", o.intra_gbps, "Bus bandwidth of an allreduce inside a node, GB/s")
      ->check(above_zero());
  cmd->add_option("--intra-latency-us", o.intra_latency_us, "Latency of a ring step inside a node, us")
      ->check(at_least(0));
  cmd->add_option("--inter-gbps", o.inter_gbps, "Bus bandwidth of an allreduce between nodes, GB/s")
      ->check(above_zero());
  cmd->add_option("--inter-latency-us", o.inter_latency_us, "Latency of a ring step between nodes, us")
      ->check(at_least(0));
  cmd->add_option("--loader-rate", o.loader_rate, "Images/s one loader thread delivers (0: never the bound)")
      ->check(at_least(0));
  cmd->add_option("--loader-threads", o.loader_threads, "Loader threads per GPU (default: the profile's cores - 1)")
      ->check(in_range(1, 1 << 16));
}

distributed::ClusterModel cluster_from(const LinkOptions& o) {
  distributed::ClusterModel c;
  c.gpus_per_node = 4;
  if (!o.profile.empty()) {
    const auto p = read_profile(o.profile);
    c.intra = {profile_number(p, "DPTRAIN_PREDICT_INTRA_LATENCY_US", o.profile) * 1e-6,
               profile_number(p, "DPTRAIN_PREDICT_INTRA_GBPS", o.profile) * 1e9};
    c.inter = {profile_number(p, "DPTRAIN_PREDICT_INTER_LATENCY_US", o.profile) * 1e-6,
               profile_number(p, "DPTRAIN_PREDICT_INTER_GBPS", o.profile) * 1e9};
    c.loader_images_per_thread = profile_number(p, "DPTRAIN_PREDICT_LOADER_RATE", o.profile);
    c.gpus_per_node = static_cast<int>(profile_number(p, "DPTRAIN_GPUS_PER_NODE", o.profile));
    // A rank's cores are its loader threads and the one that drives the GPU.
    c.loader_threads_per_gpu = std::max(1, static_cast<int>(profile_number(p, "DPTRAIN_CPUS_PER_TASK", o.profile)) - 1);
  }
  if (o.intra_gbps >= 0) c.intra.bus_bytes_per_second = o.intra_gbps * 1e9;
  if (o.intra_latency_us >= 0) c.intra.latency_seconds = o.intra_latency_us * 1e-6;
  if (o.inter_gbps >= 0) c.inter.bus_bytes_per_second = o.inter_gbps * 1e9;
  if (o.inter_latency_us >= 0) c.inter.latency_seconds = o.inter_latency_us * 1e-6;
  if (o.loader_rate >= 0) c.loader_images_per_thread = o.loader_rate;
  if (o.loader_threads > 0) c.loader_threads_per_gpu = o.loader_threads;
  if (o.gpus_per_node > 0) c.gpus_per_node = o.gpus_per_node;
  DPTRAIN_CHECK(c.intra.bus_bytes_per_second > 0 && c.inter.bus_bytes_per_second > 0,
                "give the links' bus bandwidths: --profile slurm/partitions/c4130-g.env, or --intra-gbps and "
                "--inter-gbps");
  DPTRAIN_CHECK(c.gpus_per_node >= 1, "--gpus-per-node must be at least 1");
  return c;
}

}  // namespace dptrain::app
