// dptrain export / dptrain import: a checkpoint's weights as safetensors for other frameworks, and
// safetensors weights as a checkpoint to fine-tune (train --resume) or score (eval).
#include <filesystem>
#include <iostream>

#include "commands.hpp"
#include "dptrain/ckpt/checkpoint_directory.hpp"
#include "dptrain/ckpt/checkpoint_file.hpp"
#include "dptrain/ckpt/checkpoint_writer.hpp"
#include "dptrain/data/manifest.hpp"
#include "dptrain/interop/weights.hpp"
#include "dptrain/io/durable_io.hpp"
#include "dptrain/train/run_config.hpp"
#include "option_checks.hpp"

namespace dptrain::app {
namespace {
struct ExportOptions {
  std::string checkpoint, output, names = "torchvision", data;
  bool names_given = false;
};

struct ImportOptions {
  std::string input, model, output, names;
  int classes = 0;
};

// The dataset the checkpoint was trained on (its manifest gives the input size, the normalisation
// and the class names), when it can still be read; a warning otherwise, since the weights are what
// matters.
interop::ExportMetadata describe_input(const ckpt::TrainingState& state, const std::string& data_option) {
  const TrainingRunConfig c = parse_stored_configuration(state.configuration, state.source + " configuration");
  interop::ExportMetadata meta;
  meta.image_size = c.crop;
  const std::string data = data_option.empty() ? c.data : data_option;
  if (data.empty()) {
    std::cerr << "warning: " << state.source
              << " names no dataset: the export's metadata has no mean, std or class names (give --data)\n";
    return meta;
  }
  try {
    const data::Manifest manifest = data::Manifest::read(data);
    if (meta.image_size == 0) meta.image_size = std::min(manifest.height, manifest.width);
    meta.mean = manifest.mean;
    meta.stddev = manifest.stddev;
    meta.dataset = manifest.name;
    for (const data::ClassInfo& k : manifest.classes) {
      meta.class_keys.push_back(k.key);
      meta.class_names.push_back(k.name);
    }
  } catch (const Error& e) {
    if (!data_option.empty()) throw;
    std::cerr << "warning: the dataset the checkpoint was trained on cannot be read (" << e.what()
              << "): the export's metadata has no mean, std or class names (give --data)\n";
  }
  return meta;
}

int run_export(const ExportOptions& o) {
  // Export and import write only new files, so neither can replace a checkpoint, its own input included.
  io::check_new_file(o.output, "dptrain export");
  const ckpt::TrainingState state = ckpt::read_checkpoint(ckpt::resolve_checkpoint_path(o.checkpoint));
  // torchvision names by default where torchvision has the model, our own names elsewhere.
  interop::NameStyle style = interop::parse_name_style(o.names);
  if (!o.names_given && !interop::has_torchvision_names(state.model)) style = interop::NameStyle::dptrain;
  const interop::SafetensorsFile file = interop::export_weights(state, style, describe_input(state, o.data));
  file.write(o.output);
  std::cout << "exported " << state.model << " at step " << state.progress.global_step << " from " << state.source
            << ": " << file.tensors().size() << " tensors with " << interop::to_string(style) << " names, "
            << file.metadata.at("classes") << " classes, to " << o.output << "\n";
  return 0;
}

int run_import(const ImportOptions& o) {
  io::check_new_file(o.output, "dptrain import");
  const interop::SafetensorsFile file = interop::SafetensorsFile::read(o.input);
  interop::ImportOptions options;
  options.model = o.model;
  if (!o.names.empty()) options.names = interop::parse_name_style(o.names);
  if (o.classes > 0) options.classes = o.classes;
  interop::ImportedWeights w = interop::import_weights(file, o.input, options);
  ckpt::write_new_checkpoint(o.output, w.state);
  std::cout << "imported " << o.model << " (" << w.classes << " classes"
            << (w.aux_heads ? "" : ", without auxiliary classifiers") << ") from " << o.input << ": "
            << w.state.parameters.size() << " parameters and " << w.state.buffers.size() << " buffers with "
            << interop::to_string(w.names) << " names"
            << (w.ignored ? ", " + std::to_string(w.ignored) + " num_batches_tracked counters ignored" : "") << ", to "
            << o.output << " (step 0, no optimizer state)\n";
  return 0;
}
}  // namespace

Command add_export_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "export",
      "Write a checkpoint's weights and batch-norm statistics as a safetensors file for PyTorch and other "
      "frameworks (torchvision's names and layouts for alexnet, inception-v3 and resnet50)");
  auto o = std::make_shared<ExportOptions>();
  cmd->add_option("checkpoint", o->checkpoint, "A checkpoint (ckpt-*.h5) or checkpoint directory (its latest)")
      ->required();
  cmd->add_option("output", o->output, "The safetensors file to write (atomically; it must not exist)")
      ->check(output_file())
      ->required();
  cmd->add_option("--names", o->names,
                  "Tensor names: torchvision (its state_dict keys; the default for the models it has) or "
                  "dptrain (ours, for every model)")
      ->check(CLI::IsMember({"torchvision", "dptrain"}))
      ->each([o](const std::string&) { o->names_given = true; });
  cmd->add_option("--data", o->data,
                  "The dataset directory whose normalisation and class names go into the metadata (default: "
                  "the one the checkpoint was trained on)")
      ->check(CLI::ExistingDirectory);
  return [o] { return run_export(*o); };
}

Command add_import_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("import",
                         "Make a checkpoint (step 0, no optimizer state) from a safetensors file of weights, for train "
                         "--resume (fine-tuning; --reset-classifier for another class count) and eval");
  auto o = std::make_shared<ImportOptions>();
  cmd->add_option("input", o->input, "The safetensors file")->required()->check(CLI::ExistingFile);
  cmd->add_option("--model", o->model, "The model the weights are for (dptrain inspect --list)")->required();
  cmd->add_option("output", o->output, "The checkpoint file to write (it must not exist)")
      ->check(output_file())
      ->required();
  cmd->add_option("--classes", o->classes,
                  "The class count of the weights (default: the file's metadata, else its classifier's rows)")
      ->check(in_range(2, 1 << 20));
  cmd->add_option("--names", o->names,
                  "The file's tensor names: torchvision or dptrain (default: its metadata, else whichever "
                  "the file uses)")
      ->check(CLI::IsMember({"torchvision", "dptrain"}));
  return [o] { return run_import(*o); };
}

}  // namespace dptrain::app
