#include "dptrain/distributed/topology.hpp"

#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <sstream>

#include "dptrain/core/check_mpi.hpp"
#include "dptrain/core/error.hpp"
#include "dptrain/distributed/mpi_lock.hpp"

namespace dptrain::distributed {

int choose_device(int local_rank, int visible_devices) {
  if (visible_devices <= 0) return -1;
  if (visible_devices == 1) return 0;
  return local_rank % visible_devices;
}

Topology place_ranks(int self, const std::vector<std::string>& node_names, const std::vector<std::string>& cpu_sets,
                     const std::vector<std::string>& device_ids, int visible_devices, int ranks_per_node) {
  const int size = static_cast<int>(node_names.size());
  DPTRAIN_CHECK(size > 0 && cpu_sets.size() == node_names.size(), "place_ranks: one entry per rank is needed");
  DPTRAIN_CHECK(ranks_per_node >= 0, "--ranks-per-node must be positive, not ", ranks_per_node);
  Topology t;
  t.rank = self;
  t.ranks.resize(static_cast<std::size_t>(size));
  std::map<std::string, int> node_index;  // node name -> index, in order of the lowest rank
  std::vector<int> node_sizes;
  for (int r = 0; r < size; ++r) {
    RankPlace& p = t.ranks[static_cast<std::size_t>(r)];
    p.rank = r;
    p.cpu_set = cpu_sets[static_cast<std::size_t>(r)];
    p.node = ranks_per_node > 0 ? "node" + std::to_string(r / ranks_per_node) : node_names[static_cast<std::size_t>(r)];
    auto [it, added] = node_index.emplace(p.node, static_cast<int>(node_sizes.size()));
    if (added) node_sizes.push_back(0);
    p.node_index = it->second;
    p.local_rank = node_sizes[static_cast<std::size_t>(p.node_index)]++;
  }
  t.node_count = static_cast<int>(node_sizes.size());
  for (RankPlace& p : t.ranks) {
    p.local_size = node_sizes[static_cast<std::size_t>(p.node_index)];
    t.uniform = t.uniform && p.local_size == node_sizes[0];
    p.device = choose_device(p.local_rank, visible_devices);
    if (p.device >= 0 && static_cast<std::size_t>(p.rank) < device_ids.size()) {
      p.device_id = device_ids[static_cast<std::size_t>(p.rank)];
    }
  }
  // Two ranks driving one GPU would halve its speed and may run it out of memory: refuse. The check
  // uses the GPU's identity, not its ordinal, since with one visible GPU per rank every rank sees "0".
  std::map<std::pair<int, std::string>, int> owner;
  for (const RankPlace& p : t.ranks) {
    if (p.device < 0) continue;
    const std::string id = p.device_id.empty() ? "ordinal " + std::to_string(p.device) : p.device_id;
    auto [it, added] = owner.emplace(std::make_pair(p.node_index, id), p.rank);
    DPTRAIN_CHECK(added, "ranks ", it->second, " and ", p.rank, " on node ", p.node, " would share GPU ", p.device,
                  " (", id, "); start one rank per GPU (--ntasks-per-node equal to --gpus-per-node)");
  }
  return t;
}

std::string local_node_name() {
  if (const char* slurm = std::getenv("SLURMD_NODENAME"); slurm && *slurm) return slurm;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) return "localhost";
  return host;
}

std::string local_cpu_set() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return "?";
  std::ostringstream out;
  int cpu = 0;
  bool first = true;
  while (cpu < CPU_SETSIZE) {
    if (!CPU_ISSET(cpu, &set)) {
      ++cpu;
      continue;
    }
    int last = cpu;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set)) ++last;
    out << (first ? "" : ",") << cpu;
    if (last > cpu) out << "-" << last;
    first = false;
    cpu = last + 1;
  }
  return out.str();
}

namespace {
// Every rank's string, in rank order (fixed-size records: names are short).
std::vector<std::string> gather_strings(MPI_Comm comm, const std::string& mine) {
  constexpr int kWidth = 256;
  int size = 1;
  MpiLock lock;  // at start-up, before the job's threads: blocking is fine (mpi_lock.hpp)
  DPTRAIN_MPI_CHECK(MPI_Comm_size(comm, &size));
  std::string record = mine.substr(0, kWidth - 1);
  record.resize(kWidth, '\0');
  std::string all(static_cast<std::size_t>(size) * kWidth, '\0');
  DPTRAIN_MPI_CHECK(MPI_Allgather(record.data(), kWidth, MPI_CHAR, all.data(), kWidth, MPI_CHAR, comm));
  std::vector<std::string> out;
  for (int r = 0; r < size; ++r) out.emplace_back(all.c_str() + static_cast<std::size_t>(r) * kWidth);
  return out;
}
}  // namespace

Topology discover_topology(MPI_Comm comm, int ranks_per_node, int visible_devices,
                           std::string (*device_id_of)(int ordinal)) {
  const std::string node = local_node_name(), cpus = local_cpu_set();
  if (comm == MPI_COMM_NULL) {
    const int device = choose_device(0, visible_devices);
    const std::string id = device >= 0 && device_id_of ? device_id_of(device) : "";
    return place_ranks(0, {node}, {cpus}, {id}, visible_devices, ranks_per_node);
  }
  int rank = 0;
  {
    MpiLock lock;
    DPTRAIN_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  }
  // The device a rank takes depends on its local rank, known only after the names are gathered.
  Topology first = place_ranks(rank, gather_strings(comm, node), gather_strings(comm, cpus), {}, 0, ranks_per_node);
  const int device = choose_device(first.self().local_rank, visible_devices);
  const std::string id = device >= 0 && device_id_of ? device_id_of(device) : "";
  std::vector<std::string> names, sets;
  for (const RankPlace& p : first.ranks) {
    names.push_back(p.node);
    sets.push_back(p.cpu_set);
  }
  return place_ranks(rank, names, sets, gather_strings(comm, id), visible_devices, 0);
}

std::string describe(const Topology& t) {
  std::ostringstream out;
  out << t.size() << " rank" << (t.size() == 1 ? "" : "s") << " on " << t.node_count << " node"
      << (t.node_count == 1 ? "" : "s") << "\n";
  out << "rank  node                  local  device  cpus\n";
  for (const RankPlace& p : t.ranks) {
    std::string device = p.device < 0 ? "cpu" : "gpu" + std::to_string(p.device);
    out << std::left;
    out.width(6);
    out << p.rank;
    out.width(22);
    out << p.node;
    out.width(7);
    out << (std::to_string(p.local_rank) + "/" + std::to_string(p.local_size));
    out.width(8);
    out << device << p.cpu_set << "\n";
  }
  return out.str();
}

}  // namespace dptrain::distributed
