// dptrain eval --images: the logits of a checkpoint's model on a batch of images given as a tensor
// (already cropped and normalised), written as a safetensors file. What an inference user runs on
// their own preprocessing, and how the interop tests compare our forward pass with torchvision's.
#include "eval_images.hpp"

#include <iostream>

#include "dptrain/ckpt/checkpoint_directory.hpp"
#include "dptrain/ckpt/checkpoint_file.hpp"
#include "dptrain/interop/safetensors.hpp"
#include "dptrain/interop/weights.hpp"
#include "dptrain/net/models/registry.hpp"
#include "dptrain/train/run_config.hpp"
#include "dptrain/train/trainer.hpp"

namespace dptrain::app {
namespace {
// The file's "images" tensor, or its only tensor: [N, C, H, W] with H == W.
Tensor read_images(const std::string& path) {
  const interop::SafetensorsFile file = interop::SafetensorsFile::read(path);
  const interop::StoredTensor* images = file.find("images");
  if (!images && file.tensors().size() == 1) images = &file.tensors().front();
  DPTRAIN_CHECK(images, path, " has no tensor named 'images' (and more than one tensor)");
  const Shape shape(images->shape);
  DPTRAIN_CHECK(shape.rank() == 4 && shape[0] > 0 && shape[1] > 0 && shape[2] == shape[3] && shape[2] > 0, path,
                ": tensor '", images->name, "' has shape ", shape.to_string(), ", not [N, C, H, W] with square images");
  return interop::to_f32(*images, path);
}
}  // namespace

int run_eval_images(const EvalImagesOptions& o, distributed::Job& job) {
  DPTRAIN_CHECK(job.size() == 1, "eval --images runs on one process, not ", job.size());
  const ckpt::TrainingState state = ckpt::read_checkpoint(ckpt::resolve_checkpoint_path(o.checkpoint));
  const TrainingRunConfig stored = parse_stored_configuration(state.configuration, state.source + " configuration");
  const Tensor images = read_images(o.images);

  auto backend = make_backend(o.device, job);
  ModelConfig config;
  config.batch = static_cast<int>(images.shape()[0]);
  config.channels = static_cast<int>(images.shape()[1]);
  config.image_size = static_cast<int>(images.shape()[2]);
  config.classes = interop::checkpoint_classes(state);
  config.aux_heads = stored.aux_heads;
  config.memory = memory_options(o.device, NetPurpose::inference);
  auto net = build_model(state.model, *backend, config);
  Trainer trainer(*net, TrainerConfig{});
  ckpt::apply_state(state, state.model, *net, trainer.optimizer());

  backend->copy_from_host(images, net->images());
  PassContext pass;
  pass.training = false;
  net->run_forward(pass);
  const Tensor logits = backend->to_host(net->logits());

  interop::SafetensorsFile out;
  out.add("logits", logits);
  out.metadata["checkpoint"] = state.source;
  out.metadata["model"] = state.model;
  out.write(o.logits);
  std::cout << "logits of " << state.model << " (" << state.source << ", step " << state.progress.global_step << ") on "
            << config.batch << " images of " << config.image_size << "x" << config.image_size << "x" << config.channels
            << " from " << o.images << ": " << logits.shape().to_string() << " to " << o.logits << "\n";
  return 0;
}

}  // namespace dptrain::app
