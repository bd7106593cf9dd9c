#pragma once
// dptrain eval --images IN --logits OUT: a checkpoint's logits on a given batch (eval_images.cpp).
#include <string>

#include "dptrain/distributed/job.hpp"
#include "dptrain/train/compute_options.hpp"

namespace dptrain::app {

struct EvalImagesOptions {
  std::string checkpoint, images, logits;
  int batch = 64;  // images per forward pass
  BackendOptions device;
};

int run_eval_images(const EvalImagesOptions& options, distributed::Job& job);

}  // namespace dptrain::app
