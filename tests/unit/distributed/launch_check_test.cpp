// The launch linter on made-up launches: each wrong launch gives one warning that names the figures
// and the fix; a right launch gives none.
#include "dptrain/distributed/launch_check.hpp"

#include <catch2/catch.hpp>

using namespace dptrain::distributed;

namespace {
// `per_node` ranks on each of `nodes` nodes, rank r bound to CPU set `cpu_sets[r]` (or all "0-7").
Topology topology(int nodes, int per_node, std::vector<std::string> cpu_sets = {}) {
  std::vector<std::string> names;
  for (int n = 0; n < nodes; ++n) {
    for (int l = 0; l < per_node; ++l) names.push_back("gpu" + std::to_string(n + 1));
  }
  if (cpu_sets.empty()) cpu_sets.assign(names.size(), "0-7");
  return place_ranks(0, names, cpu_sets, {}, 0, 0);
}

std::vector<RankLaunch> launches(int ranks, int visible_gpus, int node_gpus, const std::string& cuda_visible,
                                 int step_tasks) {
  RankLaunch l;
  l.visible_gpus = visible_gpus;
  l.node_gpus = node_gpus;
  l.cuda_visible = cuda_visible;
  l.slurm_step_tasks = step_tasks;
  return std::vector<RankLaunch>(static_cast<std::size_t>(ranks), l);
}

bool says(const LaunchWarning& w, const std::string& problem, const std::string& fix) {
  return w.problem.find(problem) != std::string::npos && w.fix.find(fix) != std::string::npos;
}
}  // namespace

TEST_CASE("launches as meant give no warning", "[distributed][launch]") {
  // 2 nodes x 4 ranks, each seeing the node's 4 GPUs, each bound to its own cores.
  const Topology bound = topology(2, 4, {"0-6", "7-13", "14-20", "21-27", "0-6", "7-13", "14-20", "21-27"});
  CHECK(check_launch(bound, launches(8, 4, 4, "0,1,2,3", 8)).empty());
  // CPU runs: no GPUs; ranks sharing one unbound CPU set (the job divides it among their threads).
  CHECK(check_launch(topology(1, 2), launches(2, 0, -1, "", 0)).empty());
  // One process outside srun, or a 1-task srun step.
  CHECK(check_launch(topology(1, 1), launches(1, 0, -1, "", 0)).empty());
  CHECK(check_launch(topology(1, 1), launches(1, 1, 1, "0", 1)).empty());
  CHECK(describe(check_launch(topology(1, 1), launches(1, 0, -1, "", 0))).empty());
}

TEST_CASE("srun without an MPI plugin starts singletons: named, with --mpi=pmix as the fix", "[distributed][launch]") {
  const auto warnings = check_launch(topology(1, 1), launches(1, 0, -1, "", 4));
  REQUIRE(warnings.size() == 1);
  CHECK(says(warnings[0], "srun started 4 tasks, but this one runs as a job of 1 rank", "srun --mpi=pmix"));
  CHECK(describe(warnings).find("warning: srun started 4 tasks") == 0);
  CHECK(describe(warnings).find("\n  fix: launch with srun --mpi=pmix") != std::string::npos);
}

TEST_CASE("one GPU per task of several on the node (--gpus-per-task): named, with --gpus-per-node as the fix",
          "[distributed][launch]") {
  const auto warnings = check_launch(topology(2, 4), launches(8, 1, 4, "2", 8));
  REQUIRE(warnings.size() == 2);  // one per node
  CHECK(says(warnings[0], "each rank on gpu1 sees 1 GPU (CUDA_VISIBLE_DEVICES=2) of the 4", "--gpus-per-node=4"));
  CHECK(says(warnings[1], "each rank on gpu2 sees 1 GPU", "--gpu-bind=none"));
}

TEST_CASE("fewer ranks than GPUs on a node: the idle GPUs counted, with --ntasks-per-node as the fix",
          "[distributed][launch]") {
  const auto warnings = check_launch(topology(1, 2), launches(2, 4, 4, "0,1,2,3", 2));
  REQUIRE(warnings.size() == 1);
  CHECK(says(warnings[0], "gpu1 has 4 visible GPUs but 2 ranks: 2 GPUs stay idle", "--ntasks-per-node=4"));
}

TEST_CASE("ranks of a node bound to overlapping CPU sets: named with their sets", "[distributed][launch]") {
  const auto warnings = check_launch(topology(1, 3, {"0-3", "4-7", "2-5"}), launches(3, 0, -1, "", 3));
  REQUIRE(warnings.size() == 1);
  CHECK(says(warnings[0], "ranks 0 and 2 on gpu1 are bound to overlapping CPU sets (0-3 and 2-5)", "--cpu-bind=cores"));
  // The same sets on different nodes do not compete.
  CHECK(check_launch(topology(3, 1, {"0-3", "4-7", "2-5"}), launches(3, 0, -1, "", 3)).empty());
  // Sets written with single CPUs and ranges.
  const auto single = check_launch(topology(1, 2, {"0,2,4", "1,3-4"}), launches(2, 0, -1, "", 2));
  REQUIRE(single.size() == 1);
  CHECK(says(single[0], "(0,2,4 and 1,3-4)", "mpiexec --map-by"));
}

TEST_CASE("several wrong at once: every one reported", "[distributed][launch]") {
  // One node, 2 ranks on overlapping cores, each seeing 1 of 4 GPUs.
  const auto warnings = check_launch(topology(1, 2, {"0-4", "4-8"}), launches(2, 1, 4, "0", 2));
  CHECK(warnings.size() == 2);
}
