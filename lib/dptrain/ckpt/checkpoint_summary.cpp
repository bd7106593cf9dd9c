#include "dptrain/ckpt/checkpoint_summary.hpp"

#include <cstdio>
#include <cstdlib>

#include "dptrain/ckpt/progress_attributes.hpp"
#include "dptrain/ckpt/tensor_statistics.hpp"
#include "dptrain/core/record_json.hpp"

namespace dptrain::ckpt {
namespace {
nlohmann::json tensor_rows(const std::vector<NamedTensor>& tensors) {
  nlohmann::json rows = nlohmann::json::array();
  for (const NamedTensor& t : tensors) {
    const TensorStatistics s = tensor_statistics(t.value);
    rows.push_back({{"name", t.name},
                    {"shape", t.value.shape().dims()},
                    {"count", s.count},
                    {"mean", s.mean},
                    {"std", s.std},
                    {"min", s.min},
                    {"max", s.max},
                    {"l2_norm", s.l2_norm}});
  }
  return rows;
}

// Hyper-parameters are stored as float: 0.9f printed as a double is 0.8999999761581421. Seven
// significant digits are what a float holds, and give back the number the user typed.
double typed_value(float value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.7g", static_cast<double>(value));
  return std::strtod(text, nullptr);
}
}  // namespace

nlohmann::json checkpoint_summary(const TrainingState& state, std::uintmax_t bytes) {
  const Progress& p = state.progress;
  const OptimizerState& o = state.optimizer;
  // The configuration is embedded as JSON when it parses, else kept as the string it is.
  nlohmann::json configuration = nlohmann::json::parse(state.configuration, nullptr, false);
  if (configuration.is_discarded()) configuration = state.configuration;
  return {{"path", state.source},
          {"bytes", bytes},
          {"model", state.model},
          {"step", p.global_step},
          {"epoch", p.epoch},
          {"samples_in_epoch", p.samples_in_epoch},
          {"world_size", p.world_size},
          {"global_batch", p.global_batch},
          {"seed", p.seed},
          {"loss_scale", p.loss_scale},
          {"learning_rate",
           {{"schedule", schedule_name(p.schedule.kind)},
            {"base", p.base_lr},
            {"per_256", p.schedule.lr_per_256},
            {"total_steps", p.schedule.total_steps},
            {"warmup_steps", p.schedule.warmup_steps},
            {"milestones", p.schedule.milestones}}},
          {"optimizer",
           {{"type", o.type},
            {"momentum", typed_value(o.sgd.momentum)},
            {"weight_decay", typed_value(o.sgd.weight_decay)},
            {"nesterov", o.sgd.nesterov},
            {"decay_all", o.sgd.decay_all}}},
          {"progress", record_json(p)},
          {"dptrain_version", state.dptrain_version},
          {"configuration", configuration},
          {"parameters", tensor_rows(state.parameters)},
          {"buffers", tensor_rows(state.buffers)},
          {"momentum", tensor_rows(o.momentum)}};
}

}  // namespace dptrain::ckpt
