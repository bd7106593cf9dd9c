#include "dptrain/distributed/parameter_sync.hpp"

namespace dptrain::distributed {
namespace {
void broadcast_tensor(Backend& backend, Tensor& t, Communicator& comm, int root) {
  Tensor host = backend.to_host(t);
  comm.broadcast(host.raw(), host.bytes(), root);
  backend.copy_from_host(host, t);
}
}  // namespace

void broadcast_parameters(Net& net, Communicator& comm, int root) {
  if (comm.size() == 1) return;
  for (Parameter* p : net.parameters()) broadcast_tensor(net.backend(), p->value, comm, root);
  for (Buffer* b : net.buffers()) broadcast_tensor(net.backend(), b->value, comm, root);
}

void broadcast_training_state(Net& net, Sgd& sgd, Communicator& comm, int root) {
  if (comm.size() == 1) return;
  broadcast_parameters(net, comm, root);
  for (Buffer& v : sgd.momentum_buffers()) broadcast_tensor(net.backend(), v.value, comm, root);
}

}  // namespace dptrain::distributed
