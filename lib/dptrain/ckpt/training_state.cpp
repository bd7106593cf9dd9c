#include "dptrain/ckpt/training_state.hpp"

#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "dptrain/net/net.hpp"

#ifndef DPTRAIN_VERSION
#define DPTRAIN_VERSION "unknown"
#endif

namespace dptrain::ckpt {
namespace {
constexpr std::string_view kMomentumSuffix = "/momentum";

// A tensor of the live net or optimizer that a saved tensor is copied into.
struct Target {
  std::string name;
  Tensor* value;
};

struct Assignment {
  const Tensor* saved;
  Tensor* target;
};

std::string where(const TrainingState& state) {
  return state.source.empty() ? std::string("the captured state") : "checkpoint " + state.source;
}

// Pairs every target with the saved tensor of its name, or throws naming the first tensor that is
// missing, extra or of another shape. Reads only, so a failure leaves the net untouched.
std::vector<Assignment> match(const std::vector<NamedTensor>& saved, const std::vector<Target>& targets,
                              const char* what, const TrainingState& state, const std::string& model,
                              const std::set<std::string>& keep_fresh) {
  std::unordered_map<std::string, const NamedTensor*> by_name;
  for (const NamedTensor& t : saved) {
    DPTRAIN_CHECK(by_name.emplace(t.name, &t).second, where(state), " holds ", what, " ", t.name, " twice");
  }
  std::vector<Assignment> out;
  std::unordered_set<std::string> used;
  for (const Target& target : targets) {
    if (keep_fresh.contains(target.name)) continue;
    const auto it = by_name.find(target.name);
    DPTRAIN_CHECK(it != by_name.end(), where(state), " has no ", what, " ", target.name, ", which model ", model,
                  " has; it was written for another version of the model");
    const Tensor& value = it->second->value;
    DPTRAIN_CHECK(value.dtype() == DType::f32 && value.device().is_cpu() && value.layout() == Layout::plain,
                  where(state), ": ", what, " ", target.name, " is not a plain f32 host tensor");
    DPTRAIN_CHECK(value.shape() == target.value->shape(), what, " ", target.name, " has shape ",
                  value.shape().to_string(), " in ", where(state), " but ", target.value->shape().to_string(),
                  " in this model");
    used.insert(target.name);
    out.push_back({&value, target.value});
  }
  for (const NamedTensor& t : saved) {
    DPTRAIN_CHECK(used.contains(t.name) || keep_fresh.contains(t.name), where(state), " has ", what, " ", t.name,
                  ", which model ", model, " does not have; it was written for another version of the model");
  }
  return out;
}

std::vector<NamedTensor> host_copies(Backend& backend, const std::vector<Target>& targets) {
  std::vector<NamedTensor> out;
  out.reserve(targets.size());
  for (const Target& t : targets) out.push_back({t.name, backend.to_host(*t.value)});
  return out;
}

std::vector<Target> parameter_targets(Net& net) {
  std::vector<Target> out;
  for (Parameter* p : net.parameters()) out.push_back({p->name, &p->value});
  return out;
}

std::vector<Target> buffer_targets(Net& net) {
  std::vector<Target> out;
  for (Buffer* b : net.buffers()) out.push_back({b->name, &b->value});
  return out;
}

std::vector<Target> momentum_targets(Sgd& sgd) {
  std::vector<Target> out;
  for (Buffer& b : sgd.momentum_buffers()) out.push_back({momentum_parameter_name(b.name), &b.value});
  return out;
}
}  // namespace

std::string momentum_parameter_name(const std::string& buffer_name) {
  if (buffer_name.ends_with(kMomentumSuffix)) return buffer_name.substr(0, buffer_name.size() - kMomentumSuffix.size());
  return buffer_name;
}

TrainingState capture_state(Net& net, Sgd& sgd, const std::string& model, const Progress& progress,
                            std::string configuration) {
  Backend& backend = net.backend();
  TrainingState state;
  state.model = model;
  state.parameters = host_copies(backend, parameter_targets(net));
  state.buffers = host_copies(backend, buffer_targets(net));
  state.optimizer.sgd = sgd.config();
  state.optimizer.momentum = host_copies(backend, momentum_targets(sgd));
  state.progress = progress;
  if (state.progress.base_lr == 0) {  // the linear scaling rule, as LearningRateSchedule::base()
    const ScheduleConfig& s = progress.schedule;
    state.progress.base_lr = s.lr_per_256 * static_cast<double>(s.global_batch) / 256.0;
  }
  state.configuration = std::move(configuration);
  state.dptrain_version = DPTRAIN_VERSION;
  return state;
}

void apply_state(const TrainingState& state, const std::string& model, Net& net, Sgd& sgd,
                 const std::set<std::string>& keep_fresh) {
  DPTRAIN_CHECK(state.model == model, where(state), " was written for model ", state.model, ", not ", model);
  DPTRAIN_CHECK(state.optimizer.type == "sgd", where(state), " holds the state of optimizer '", state.optimizer.type,
                "', but this run uses sgd");
  // Every check before the first copy: a failed resume must leave the fresh net as it was.
  std::vector<Assignment> all = match(state.parameters, parameter_targets(net), "parameter", state, model, keep_fresh);
  const std::vector<Assignment> buffers = match(state.buffers, buffer_targets(net), "buffer", state, model, {});
  // Weights imported from elsewhere (`dptrain import`) come at step 0 without momentum: it starts at 0
  // as in a fresh run. A checkpoint of a run that has stepped must have all of it.
  const bool fresh_optimizer = state.optimizer.momentum.empty() && state.progress.global_step == 0;
  const std::vector<Assignment> momentum = fresh_optimizer
                                               ? std::vector<Assignment>{}
                                               : match(state.optimizer.momentum, momentum_targets(sgd),
                                                       "momentum buffer of parameter", state, model, keep_fresh);
  all.insert(all.end(), buffers.begin(), buffers.end());
  all.insert(all.end(), momentum.begin(), momentum.end());
  Backend& backend = net.backend();
  for (const Assignment& a : all) backend.copy_from_host(*a.saved, *a.target);
}

}  // namespace dptrain::ckpt
