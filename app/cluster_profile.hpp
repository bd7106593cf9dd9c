#pragma once
// The scaling model's cluster (links, GPUs a node, the loader) from a partition profile's
// DPTRAIN_PREDICT_* defaults and the command line: shared by `dptrain predict` and `dptrain report`.
#include <CLI/CLI.hpp>
#include <string>

#include "dptrain/distributed/scaling_model.hpp"

namespace dptrain::app {

struct LinkOptions {
  std::string profile;                                                                    // slurm/partitions/*.env
  double intra_gbps = -1, intra_latency_us = -1, inter_gbps = -1, inter_latency_us = -1;  // -1: the profile's
  double loader_rate = -1;
  int loader_threads = 0;
  int gpus_per_node = 0;  // 0: the profile's, else 4
  bool given() const { return !profile.empty() || intra_gbps >= 0 || inter_gbps >= 0; }
};

void add_link_options(CLI::App* cmd, LinkOptions& o);

// The profile's figures, overridden by the options given. Throws naming the profile and the variable
// when one is missing or not a non-negative number, and when no bandwidth is known.
distributed::ClusterModel cluster_from(const LinkOptions& o);

}  // namespace dptrain::app
