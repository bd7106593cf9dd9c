#pragma once
// Makes every rank start from rank 0's parameters and batch-norm statistics. Every rank initialises
// the same weights from the seed anyway; the broadcast is what makes a resume (read on rank 0 only)
// and any non-deterministic initialisation safe.
#include "dptrain/distributed/communicator.hpp"
#include "dptrain/net/net.hpp"
#include "dptrain/optim/sgd.hpp"

namespace dptrain::distributed {

void broadcast_parameters(Net& net, Communicator& comm, int root = 0);
// The parameters, the batch-norm statistics and the optimizer's momentum: what a resume restores.
void broadcast_training_state(Net& net, Sgd& sgd, Communicator& comm, int root = 0);

}  // namespace dptrain::distributed
