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

void Sgd::step(float learning_rate) {
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    Parameter& p = *parameters_[i];
    const float decay = (p.decay || config_.decay_all) ? config_.weight_decay : 0.f;
    backend_.sgd_update(p.value, p.grad, velocity_[i].value,
                        SgdHyper{learning_rate, config_.momentum, decay, config_.nesterov});
  }
}

}  // namespace dptrain
