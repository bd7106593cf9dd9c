// dptrain inspect --model NAME: the layers of a model, their output shapes and parameter counts, the
// total parameter count, the forward FLOPs per image, and the memory a rank needs to train it at a
// batch size (planned, and with one buffer per tensor as before the planner), with the largest batch
// that fits a memory limit. dptrain inspect CKPT: a checkpoint (inspect_checkpoint.cpp).
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "dptrain/core/byte_size.hpp"
#include "dptrain/core/json_line.hpp"
#include "dptrain/data/manifest.hpp"
#include "dptrain/net/models/registry.hpp"
#include "inspect_checkpoint.hpp"
#include "memory_report.hpp"
#include "option_checks.hpp"

namespace dptrain::app {
namespace {
struct InspectOptions {
  std::string checkpoint;
  std::string model;
  int image_size = 0;
  int classes = 1000;
  std::string data;  // a dataset whose classes, channels and image size the model takes
  bool no_aux = false;
  bool json = false;
  bool list = false;
  MemoryQuery memory;
};

std::int64_t layer_parameters(Layer& layer) {
  std::int64_t n = 0;
  for (Parameter& p : layer.parameters()) n += p.value.numel();
  return n;
}

int run_inspect(const InspectOptions& o) {
  if (!o.checkpoint.empty()) return inspect_checkpoint(o.checkpoint, o.json);
  if (o.list || o.model.empty()) {
    for (const ModelInfo& m : model_zoo()) {
      std::cout << std::left << std::setw(16) << m.name << std::setw(5) << m.default_image_size << m.description
                << "\n";
    }
    if (!o.list) std::cout << "(give --model NAME to see one model's layers)\n";
    return 0;
  }
  auto backend = make_cpu_backend();
  ModelConfig config;
  config.image_size = o.image_size;
  config.classes = o.classes;
  if (!o.data.empty()) {
    // As `dptrain train --data` builds it: the dataset's classes and channels, and its image size
    // unless --image-size (train's --crop) is given.
    const data::Manifest manifest = data::Manifest::read(o.data);
    config.classes = manifest.class_count();
    config.channels = manifest.channels;
    if (o.image_size == 0) config.image_size = std::min(manifest.height, manifest.width);
  }
  config.aux_heads = !o.no_aux;
  config.memory.allocate = false;  // shapes and plans only
  auto net = build_model(o.model, *backend, config);
  const Shape& input = net->image_shape();
  const MemoryReport memory = memory_report(o.model, config, o.memory);
  if (o.json) {
    nlohmann::json j{{"model", o.model},
                     {"image_size", input[2]},
                     {"classes", config.classes},
                     {"channels", input[1]},
                     {"aux_heads", static_cast<int>(config.aux_heads)},
                     {"layers", static_cast<std::int64_t>(net->nodes().size() - 2)},
                     {"parameters", net->parameter_count()},
                     {"forward_flops_per_image", net->flops_per_sample()},
                     {"memory", to_json(memory)}};
    std::cout << json_text(j) << "\n";
    return 0;
  }
  std::cout << o.model << ": input " << input.to_string() << ", " << config.classes << " classes"
            << (o.data.empty() ? "" : " (from " + o.data + ")") << "\n";
  std::cout << std::left << std::setw(44) << "layer" << std::setw(22) << "kind" << std::setw(20) << "output"
            << std::right << std::setw(12) << "parameters" << std::setw(14) << "MFLOP"
            << "\n";
  for (const auto& node : net->nodes()) {
    if (!node.layer) continue;
    std::cout << std::left << std::setw(44) << node.layer->name() << std::setw(22) << node.layer->kind()
              << std::setw(20) << node.shape.to_string() << std::right << std::setw(12) << layer_parameters(*node.layer)
              << std::setw(14) << std::fixed << std::setprecision(1) << node.layer->flops_per_sample() / 1e6
              << (node.training_only ? "  (training only)" : "") << "\n";
  }
  std::cout << "parameters: " << net->parameter_count() << "\nforward GFLOP per image: " << std::setprecision(3)
            << net->flops_per_sample() / 1e9 << " (multiply-add = 2 FLOPs)\n\n";
  print_memory_report(std::cout, memory);
  return 0;
}
}  // namespace

Command add_inspect_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "inspect", "Show a model's layers, output shapes, parameter count and FLOPs, or what a checkpoint holds");
  auto o = std::make_shared<InspectOptions>();
  auto* checkpoint = cmd->add_option(
      "checkpoint", o->checkpoint,
      "A checkpoint (ckpt-*.h5) or checkpoint directory (its latest): model, progress, configuration and "
      "per-tensor statistics");
  auto* model = cmd->add_option("--model", o->model, "Model name");
  auto* list = cmd->add_flag("--list", o->list, "List the models");
  checkpoint->excludes(model)->excludes(list);
  cmd->add_option("--image-size", o->image_size, "Input height and width (default: the model's own)")
      ->check(at_least(1));
  auto* classes =
      cmd->add_option("--classes", o->classes, "Number of classes")->check(in_range(2, 1 << 20))->capture_default_str();
  auto* data = cmd->add_option("--data", o->data,
                               "A dataset directory: the model takes its classes, channels and image size "
                               "(as train --data does; --image-size still overrides the size)")
                   ->check(CLI::ExistingDirectory);
  data->excludes(classes)->excludes(checkpoint)->excludes(list);
  cmd->add_flag("--no-aux", o->no_aux, "Leave out the auxiliary classifiers (GoogLeNet, Inception-V3)");
  cmd->add_flag("--json", o->json, "Print a JSON summary instead of the table (of the model or the checkpoint)");
  for (CLI::Option* option : add_memory_query_options(cmd, o->memory)) {
    checkpoint->excludes(option);
    list->excludes(option);
  }
  return [o] { return run_inspect(*o); };
}

}  // namespace dptrain::app
