#pragma once
// A checkpoint's weights as a safetensors file for other frameworks (`dptrain export`), and a
// safetensors file of weights as a checkpoint to fine-tune or evaluate (`dptrain import`).
//
// Exported: every parameter and batch-norm statistic, named in our style or torchvision's, and with
// torchvision names each batch norm's num_batches_tracked (int64, the checkpoint's step), so
// `load_state_dict` takes the file strictly. Not exported: momentum and progress, which only a
// dptrain resume can use. The metadata says how to feed the model (see ExportMetadata).
#include <optional>
#include <string>
#include <vector>

#include "dptrain/ckpt/training_state.hpp"
#include "dptrain/interop/safetensors.hpp"
#include "dptrain/interop/tensor_names.hpp"

namespace dptrain::interop {

// What an inference user needs beside the tensors, from the checkpoint and its dataset's manifest
// (when the manifest can be read). Written as string entries of __metadata__: model, classes,
// image_size, names, step, dptrain_version, and when known mean and std (JSON arrays, per channel on
// the 0-255 pixel scale: input = (pixel - mean) / std, NCHW; with channels and the colour in input),
// dataset, class_keys (the wnids)
// and class_names (JSON arrays in label order).
struct ExportMetadata {
  int image_size = 0;  // 0: unknown
  std::vector<double> mean, stddev;
  std::string dataset;
  std::vector<std::string> class_keys, class_names;
};

// The class count of a checkpoint's model: the rows of its classifier.
int checkpoint_classes(const ckpt::TrainingState& state);

SafetensorsFile export_weights(const ckpt::TrainingState& state, NameStyle style, const ExportMetadata& meta);

struct ImportOptions {
  std::string model;
  std::optional<NameStyle> names;  // default: the file's "names" metadata, else whichever style matches
  std::optional<int> classes;      // default: the file's "classes" metadata, else its classifier's rows
};

struct ImportedWeights {
  ckpt::TrainingState state;  // step 0, no momentum: what `train --resume` fine-tunes from and `eval` scores
  NameStyle names = NameStyle::dptrain;
  int classes = 0;
  bool aux_heads = true;  // false when the file has no auxiliary classifier (the model is built without)
  int ignored = 0;        // torchvision's num_batches_tracked counters, which have no counterpart here
};

// Matches every tensor of the model (built for the class count) with one of the file's: an error
// names the first tensor that is missing, extra, of another shape, not floating-point or not finite.
// `where` names the file in errors.
ImportedWeights import_weights(const SafetensorsFile& file, const std::string& where, const ImportOptions& options);

}  // namespace dptrain::interop
