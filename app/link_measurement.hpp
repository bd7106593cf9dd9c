#pragma once
// `dptrain predict --measure`: the link figures of the scaling model, measured in the current job
// with MPI allreduces on host buffers (the path dptrain's gradients take between nodes): among the
// ranks of each node, then among one rank per node. A small message gives the latency of a ring
// step, a large one the bus bandwidth: t = 2(n-1)/n * B / busbw + 2(n-1) * latency.
#include <optional>

#include "dptrain/distributed/job.hpp"
#include "dptrain/distributed/scaling_model.hpp"

namespace dptrain::app {

struct MeasuredLinks {
  std::optional<distributed::LinkModel> intra;  // none: one rank a node
  std::optional<distributed::LinkModel> inter;  // none: one node
  int ranks_per_node = 1, nodes = 1;
};

// Collective over the job. `bytes`: the large message.
MeasuredLinks measure_links(distributed::Job& job, double bytes);

}  // namespace dptrain::app
