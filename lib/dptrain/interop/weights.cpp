#include "dptrain/interop/weights.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "dptrain/backend/backend.hpp"
#include "dptrain/core/json_line.hpp"
#include "dptrain/net/models/registry.hpp"
#include "dptrain/train/run_config.hpp"

namespace dptrain::interop {
namespace {
constexpr int kProbeClasses = 2;  // any count: the probe only needs the names and the other dimensions
constexpr const char* kWeightsFormat = "dptrain weights";  // metadata "format" of our exports

// The model's tensors (parameters, then buffers) without running anything: a net whose activations
// are planned but not allocated, on the CPU.
struct ModelTensors {
  std::vector<std::pair<std::string, Shape>> parameters, buffers;
  std::set<std::string> classifier;  // the parameters whose first dimension is the class count
};

// The input's shape matters to some tensors: the first convolution's input channels, and a linear
// layer on a spatial map (alexnet's fc6) depends on the image size (0: the model's own).
struct InputShape {
  int channels = 3, image_size = 0;
};

ModelTensors model_tensors(const std::string& model, int classes, bool aux_heads, InputShape input = {}) {
  auto backend = make_cpu_backend();
  ModelConfig config;
  config.classes = classes;
  config.aux_heads = aux_heads;
  config.channels = input.channels;
  config.image_size = input.image_size;
  config.memory.allocate = false;
  std::unique_ptr<Net> net;
  try {
    net = build_model(model, *backend, config);
  } catch (const Error& e) {
    throw Error(detail::concat("model ", model, " cannot take ", input.channels, "-channel images",
                               input.image_size ? " of " + std::to_string(input.image_size) + " pixels" : "",
                               " as the weights imply: ", e.what()));
  }
  ModelTensors out;
  for (Parameter* p : net->parameters()) out.parameters.emplace_back(p->name, p->value.shape());
  for (Buffer* b : net->buffers()) out.buffers.emplace_back(b->name, b->value.shape());
  for (Parameter* p : net->classifier_parameters()) out.classifier.insert(p->name);
  return out;
}

std::string main_classifier_weight(const ModelTensors& t) {
  for (const auto& [name, shape] : t.parameters) {
    if (t.classifier.contains(name) && shape.rank() == 2) return name;  // the first built is the main one
  }
  throw Error("the model has no linear classifier");
}

std::string json_array(const auto& values) { return json_text(nlohmann::json(values)); }

constexpr int kMaxClasses = 1 << 20;
constexpr int kMaxImageSize = 8192;  // what `dptrain data convert` stores at most

// Our own keys are read only from a file dptrain wrote: another tool's metadata (PyTorch's
// {"format": "pt"}, a model card's fields) may use the same names for other things.
const std::string* our_metadata(const SafetensorsFile& file, const char* key) {
  const auto format = file.metadata.find("format");
  if (format == file.metadata.end() || format->second != kWeightsFormat) return nullptr;
  const auto it = file.metadata.find(key);
  return it == file.metadata.end() ? nullptr : &it->second;
}

std::optional<int> metadata_int(const SafetensorsFile& file, const char* key, int max, const std::string& where) {
  const std::string* text = our_metadata(file, key);
  if (!text) return std::nullopt;
  try {
    std::size_t used = 0;
    const long value = std::stol(*text, &used);
    if (used == text->size() && value > 0 && value <= max) return static_cast<int>(value);
  } catch (const std::exception&) {
  }
  throw Error(detail::concat(where, ": metadata ", key, " is '", *text, "', not a count from 1 to ", max));
}

// The class count: the rows of the file's classifier, which must otherwise have the model's shape,
// checked before a model is built for it (a net for a count the file does not back would be built
// for nothing, and a huge one would exhaust memory); --classes and the metadata must agree with it.
int choose_classes(const SafetensorsFile& file, const std::string& where, const ImportOptions& o,
                   const ModelTensors& probe, NameStyle names) {
  const std::string weight = main_classifier_weight(probe);
  const std::string name = external_name(o.model, names, weight);
  const Shape& expected = std::find_if(probe.parameters.begin(), probe.parameters.end(), [&](const auto& p) {
                            return p.first == weight;
                          })->second;
  const std::optional<int> stated = o.classes ? o.classes : metadata_int(file, "classes", kMaxClasses, where);
  const StoredTensor* stored = file.find(name);
  if (!stored) {
    DPTRAIN_CHECK(stated, where, " has no tensor '", name, "' (the classifier) to take the class count from");
    return *stated;  // the missing tensor is reported with the others
  }
  const std::vector<std::int64_t>& dims = stored->shape;
  bool fits = dims.size() == static_cast<std::size_t>(expected.rank()) && !dims.empty() && dims[0] > 0 &&
              dims[0] <= kMaxClasses;
  for (std::size_t d = 1; fits && d < dims.size(); ++d) fits = dims[d] == expected[static_cast<int>(d)];
  DPTRAIN_CHECK(fits, where, ": tensor '", name, "' (the classifier) has shape ", Shape(dims).to_string(),
                ", but model ", o.model, "'s is [classes", expected.to_string().substr(2), " with 1 to ", kMaxClasses,
                " classes");
  const int rows = static_cast<int>(dims[0]);
  DPTRAIN_CHECK(!stated || *stated == rows, where, ": ", o.classes ? "--classes" : "metadata classes", " says ",
                stated.value_or(0), " classes, but tensor '", name, "' (the classifier) has ", rows, " rows");
  return rows;
}

NameStyle choose_names(const SafetensorsFile& file, const std::string& where, const ImportOptions& o,
                       const ModelTensors& probe) {
  if (o.names) return *o.names;
  if (const std::string* names = our_metadata(file, "names")) {
    try {
      return parse_name_style(*names);
    } catch (const Error& e) {
      throw Error(detail::concat(where, ": metadata names: ", e.what()));
    }
  }
  const std::string& first = probe.parameters.front().first;
  if (has_torchvision_names(o.model) && file.find(external_name(o.model, NameStyle::torchvision, first)))
    return NameStyle::torchvision;
  return NameStyle::dptrain;
}

// The tensor of `shape` named `ours` in the model, taken from the file and checked.
Tensor take(const SafetensorsFile& file, const std::string& where, const std::string& model, NameStyle style,
            const std::string& ours, const Shape& shape, int classes) {
  const std::string name = external_name(model, style, ours);
  const StoredTensor* stored = file.find(name);
  DPTRAIN_CHECK(stored, where, " has no tensor '", name, "'", name == ours ? "" : " (our " + ours + ")",
                ", which model ", model, " has (with ", to_string(style), " names)");
  const Shape theirs(stored->shape);
  DPTRAIN_CHECK(theirs == shape, where, ": tensor '", name, "' has shape ", theirs.to_string(), ", but model ", model,
                " with ", classes, " classes has ", shape.to_string(), " there");
  Tensor value = to_f32(*stored, where);
  const float* v = value.data<float>();
  for (std::int64_t i = 0; i < value.numel(); ++i) {
    DPTRAIN_CHECK(std::isfinite(v[i]), where, ": tensor '", name, "' holds ", v[i], " at index ", i,
                  ", which is not finite");
  }
  return value;
}
}  // namespace

int checkpoint_classes(const ckpt::TrainingState& state) {
  const std::string weight = main_classifier_weight(model_tensors(state.model, kProbeClasses, true));
  for (const ckpt::NamedTensor& t : state.parameters) {
    if (t.name == weight) return static_cast<int>(t.value.shape()[0]);
  }
  throw Error(detail::concat(state.source, " has no classifier weight ", weight));
}

SafetensorsFile export_weights(const ckpt::TrainingState& state, NameStyle style, const ExportMetadata& meta) {
  SafetensorsFile file;
  for (const ckpt::NamedTensor& t : state.parameters) file.add(external_name(state.model, style, t.name), t.value);
  const std::int64_t steps = state.progress.global_step;
  for (const ckpt::NamedTensor& t : state.buffers) {
    file.add(external_name(state.model, style, t.name), t.value);
    if (const auto counter = batch_count_name(state.model, style, t.name)) {
      std::string bytes(sizeof steps, '\0');
      std::memcpy(bytes.data(), &steps, sizeof steps);
      file.add_bytes(*counter, "I64", {}, std::move(bytes));
    }
  }
  auto& m = file.metadata;
  m["format"] = kWeightsFormat;
  m["model"] = state.model;
  m["names"] = to_string(style);
  m["classes"] = std::to_string(checkpoint_classes(state));
  m["step"] = std::to_string(steps);
  m["dptrain_version"] = state.dptrain_version;
  if (meta.image_size > 0) m["image_size"] = std::to_string(meta.image_size);
  if (!meta.mean.empty()) {
    m["mean"] = json_array(meta.mean);
    m["std"] = json_array(meta.stddev);
    // One mean per channel: a greyscale dataset (Fashion-MNIST) is not RGB.
    const std::size_t channels = meta.mean.size();
    const std::string colour = channels == 1   ? std::string("greyscale (1 channel)")
                               : channels == 3 ? std::string("RGB")
                                               : std::to_string(channels) + " channels";
    m["channels"] = std::to_string(channels);
    m["input"] = colour + ", NCHW, float32: (pixel - mean) / std with pixels on the 0-255 scale";
  }
  if (!meta.dataset.empty()) m["dataset"] = meta.dataset;
  if (!meta.class_keys.empty()) m["class_keys"] = json_array(meta.class_keys);
  if (!meta.class_names.empty()) m["class_names"] = json_array(meta.class_names);
  return file;
}

ImportedWeights import_weights(const SafetensorsFile& file, const std::string& where, const ImportOptions& o) {
  find_model(o.model);  // an unknown model is an error listing the known ones
  if (const std::string* model = our_metadata(file, "model")) {
    DPTRAIN_CHECK(*model == o.model, where, " holds the weights of model ", *model, " (its metadata says), not of ",
                  o.model);
  }
  const ModelTensors probe = model_tensors(o.model, kProbeClasses, true);
  ImportedWeights out;
  out.names = choose_names(file, where, o, probe);

  // The input channels from the first convolution's weight [out, in, kh, kw] (Fashion-MNIST's models
  // take 1), the image size from the metadata (else the model's own).
  InputShape input;
  const StoredTensor* first = file.find(external_name(o.model, out.names, probe.parameters.front().first));
  if (first && first->shape.size() == 4 && first->shape[1] > 0 && first->shape[1] <= 4)
    input.channels = static_cast<int>(first->shape[1]);
  if (const auto size = metadata_int(file, "image_size", kMaxImageSize, where)) input.image_size = *size;
  out.classes = choose_classes(file, where, o, model_tensors(o.model, kProbeClasses, true, input), out.names);

  // Without any tensor of the auxiliary classifiers, the model is built without them.
  ModelTensors tensors = model_tensors(o.model, out.classes, true, input);
  const ModelTensors without = model_tensors(o.model, out.classes, false, input);
  if (without.parameters.size() != tensors.parameters.size()) {
    std::set<std::string> main;
    for (const auto& [name, shape] : without.parameters) main.insert(name);
    const bool any_aux = std::any_of(tensors.parameters.begin(), tensors.parameters.end(), [&](const auto& p) {
      return !main.contains(p.first) && file.find(external_name(o.model, out.names, p.first));
    });
    if (!any_aux) {
      tensors = without;
      out.aux_heads = false;
    }
  }

  std::set<std::string> used;
  ckpt::TrainingState& s = out.state;
  s.model = o.model;
  for (const auto& [name, shape] : tensors.parameters) {
    s.parameters.push_back({name, take(file, where, o.model, out.names, name, shape, out.classes)});
    used.insert(external_name(o.model, out.names, name));
  }
  std::set<std::string> counters;
  for (const auto& [name, shape] : tensors.buffers) {
    s.buffers.push_back({name, take(file, where, o.model, out.names, name, shape, out.classes)});
    used.insert(external_name(o.model, out.names, name));
    if (const auto counter = batch_count_name(o.model, out.names, name)) counters.insert(*counter);
  }
  for (const StoredTensor& t : file.tensors()) {
    if (used.contains(t.name)) continue;
    DPTRAIN_CHECK(counters.contains(t.name), where, " holds tensor '", t.name, "', which model ", o.model,
                  out.aux_heads ? "" : " (without auxiliary classifiers)", " does not have (with ",
                  to_string(out.names), " names)");
    ++out.ignored;
  }

  TrainingRunConfig config;  // what eval and a resume read: the model's shape, nothing of a run
  config.model = o.model;
  config.aux_heads = out.aux_heads;
  config.crop = input.image_size;
  s.configuration = stored_configuration(config);
  s.progress.global_batch = 0;  // no run yet: a resume takes the batch it is given
  s.dptrain_version = DPTRAIN_VERSION;
  return out;
}

}  // namespace dptrain::interop
