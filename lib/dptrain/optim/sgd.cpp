#include "dptrain/optim/sgd.hpp"

namespace dptrain {

Sgd::Sgd(Backend& backend, std::vector<Parameter*> parameters, SgdConfig config)
    : backend_(backend), parameters_(std::move(parameters)), config_(config) {
  for (Parameter* p : parameters_) {
    Tensor v = backend.allocate(p->value.shape());
    backend.fill(v, 0.f);
    velocity_.push_back({p->name + "/momentum", std::move(v)});
  }
}

// The list is made again every step (a few hundred entries): the momentum buffers are handed out by
// reference (a checkpoint load replaces them), so their addresses are read as they are now.
void Sgd::step(float learning_rate) {
  updates_.clear();
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    Parameter& p = *parameters_[i];
    const float decay = (p.decay || config_.decay_all) ? config_.weight_decay : 0.f;
    updates_.push_back({&p.value, &p.grad, &velocity_[i].value, decay});
  }
  backend_.sgd_update_all(updates_, SgdHyper{learning_rate, config_.momentum, config_.nesterov});
}

}  // namespace dptrain
