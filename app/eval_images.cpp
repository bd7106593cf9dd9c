// dptrain eval --images: the logits of a checkpoint's model on a batch of images given as a tensor
// (already cropped and normalised), written as a safetensors file. What an inference user runs on
// their own preprocessing, and how the interop tests compare our forward pass with torchvision's.
#include "eval_images.hpp"

#include <algorithm>
#include <iostream>

#include "dptrain/ckpt/checkpoint_directory.hpp"
#include "dptrain/ckpt/checkpoint_file.hpp"
#include "dptrain/ckpt/finite_state.hpp"
#include "dptrain/interop/safetensors.hpp"
#include "dptrain/interop/weights.hpp"
#include "dptrain/io/durable_io.hpp"
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
  DPTRAIN_CHECK(o.batch > 0, "eval --images: --batch-size must be positive, not ", o.batch);
  io::check_new_file(o.logits, "dptrain eval --images");
  const std::string path = ckpt::resolve_checkpoint_path(o.checkpoint);
  const ckpt::TrainingState state = ckpt::read_checkpoint(path);
  ckpt::require_finite(state, path);
  const TrainingRunConfig stored = parse_stored_configuration(state.configuration, state.source + " configuration");
  const Tensor images = read_images(o.images);
  const std::int64_t count = images.shape()[0];

  // Steps of --batch-size images (the last one padded with zeros, whose logits are dropped: in
  // inference every image's logits are its own), so memory does not grow with the file.
  auto backend = make_backend(o.device, job);
  ModelConfig config;
  config.batch = static_cast<int>(std::min<std::int64_t>(count, o.batch));
  config.channels = static_cast<int>(images.shape()[1]);
  config.image_size = static_cast<int>(images.shape()[2]);
  config.classes = interop::checkpoint_classes(state);
  config.aux_heads = stored.aux_heads;
  config.memory = memory_options(o.device, NetPurpose::inference);
  auto net = build_model(state.model, *backend, config);
  Trainer trainer(*net, TrainerConfig{});
  try {
    ckpt::apply_state(state, state.model, *net, trainer.optimizer());
  } catch (const Error& e) {
    throw Error(detail::concat(
        e.what(), " (the model built for ", o.images, "'s ", config.channels, "-channel images of ", config.image_size,
        "x", config.image_size,
        stored.crop > 0 ? detail::concat("; the checkpoint was trained on crops of ", stored.crop) : std::string(),
        ")"));
  }

  const std::int64_t per_image = images.numel() / count;
  Tensor step_images = Tensor::zeros(Shape{config.batch, config.channels, config.image_size, config.image_size});
  Tensor logits = Tensor::empty(Shape{count, config.classes});
  PassContext pass;
  pass.training = false;
  for (std::int64_t first = 0; first < count; first += config.batch) {
    const std::int64_t n = std::min<std::int64_t>(config.batch, count - first);
    float* to = step_images.data<float>();
    std::copy_n(images.data<float>() + first * per_image, n * per_image, to);
    std::fill(to + n * per_image, to + config.batch * per_image, 0.f);
    backend->copy_from_host(step_images, net->images());
    net->run_forward(pass);
    const Tensor step_logits = backend->to_host(net->logits());
    std::copy_n(step_logits.data<float>(), n * config.classes, logits.data<float>() + first * config.classes);
  }

  interop::SafetensorsFile out;
  out.add("logits", logits);
  out.metadata["checkpoint"] = state.source;
  out.metadata["model"] = state.model;
  out.write(o.logits);
  std::cout << "logits of " << state.model << " (" << state.source << ", step " << state.progress.global_step << ") on "
            << count << " images of " << config.image_size << "x" << config.image_size << "x" << config.channels
            << " from " << o.images << " in steps of " << config.batch << ": " << logits.shape().to_string() << " to "
            << o.logits << "\n";
  return 0;
}

}  // namespace dptrain::app
