#include "dptrain/interop/tensor_names.hpp"

#include <map>

#include "dptrain/core/error.hpp"

namespace dptrain::interop {
namespace {
std::vector<std::string> split(const std::string& name) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t slash = name.find('/'); slash != std::string::npos; slash = name.find('/', start)) {
    parts.push_back(name.substr(start, slash - start));
    start = slash + 1;
  }
  parts.push_back(name.substr(start));
  return parts;
}

std::string join(const std::vector<std::string>& parts, std::size_t count) {
  std::string out;
  for (std::size_t i = 0; i < count; ++i) out += (i ? "." : "") + parts[i];
  return out;
}

// Our tensor kinds and torchvision's: batch norm's scale and shift are its weight and bias.
std::string torch_kind(const std::string& ours) {
  static const std::map<std::string, std::string> kinds = {{"weight", "weight"},
                                                           {"bias", "bias"},
                                                           {"scale", "weight"},
                                                           {"shift", "bias"},
                                                           {"running_mean", "running_mean"},
                                                           {"running_variance", "running_var"}};
  const auto it = kinds.find(ours);
  return it == kinds.end() ? std::string() : it->second;
}

struct Parsed {
  std::vector<std::string> layer;  // the layer's name, split at '/' (without "bn")
  bool batch_norm = false;         // the tensor belongs to the batch norm after the layer
  std::string kind;                // torchvision's: weight, bias, running_mean, running_var
};

Parsed parse(const std::string& model, const std::string& ours) {
  std::vector<std::string> parts = split(ours);
  Parsed p;
  p.kind = parts.size() >= 2 ? torch_kind(parts.back()) : std::string();
  DPTRAIN_CHECK(!p.kind.empty(), "model ", model, " has no tensor '", ours, "' with a torchvision name");
  parts.pop_back();
  p.batch_norm = parts.size() >= 2 && parts.back() == "bn";
  if (p.batch_norm) parts.pop_back();
  p.layer = std::move(parts);
  return p;
}

[[noreturn]] void unknown(const std::string& model, const std::string& ours) {
  throw Error(detail::concat("model ", model, " has no tensor '", ours, "' with a torchvision name"));
}

// torchvision.models.resnet50: conv1/bn1 at the stem, layerS.B.convN/bnN in a bottleneck, its
// shortcut a Sequential (downsample.0 the convolution, downsample.1 the batch norm), fc.
std::string resnet50_name(const std::string& ours) {
  const Parsed p = parse("resnet50", ours);
  const auto& l = p.layer;
  if (l.size() == 1 && l[0] == "conv1") return (p.batch_norm ? "bn1." : "conv1.") + p.kind;
  if (l.size() == 1 && l[0] == "fc" && !p.batch_norm) return "fc." + p.kind;
  if (l.size() == 2 && l[0].starts_with("layer")) {
    if (l[1] == "downsample") return l[0] + ".downsample." + (p.batch_norm ? "1." : "0.") + p.kind;
    if (l[1].size() == 5 && l[1].starts_with("conv"))
      return l[0] + "." + (p.batch_norm ? "bn" : "conv") + l[1].substr(4) + "." + p.kind;
  }
  unknown("resnet50", ours);
}

// torchvision.models.inception_v3: every convolution is a BasicConv2d (X.conv, X.bn); the classifiers
// are fc and AuxLogits.fc.
std::string inception_v3_name(const std::string& ours) {
  const Parsed p = parse("inception-v3", ours);
  const std::string layer = join(p.layer, p.layer.size());
  if (p.layer.back() == "fc") {
    if (p.batch_norm) unknown("inception-v3", ours);
    return layer + "." + p.kind;
  }
  return layer + (p.batch_norm ? ".bn." : ".conv.") + p.kind;
}

// torchvision.models.alexnet: the convolutions are features[0, 3, 6, 8, 10], the linear layers
// classifier[1, 4, 6] (between them sit ReLU, pooling and dropout modules, which hold no tensors).
std::string alexnet_name(const std::string& ours) {
  static const std::map<std::string, std::string> layers = {
      {"conv1", "features.0"},  {"conv2", "features.3"}, {"conv3", "features.6"}, {"conv4", "features.8"},
      {"conv5", "features.10"}, {"fc6", "classifier.1"}, {"fc7", "classifier.4"}, {"fc8", "classifier.6"}};
  const Parsed p = parse("alexnet", ours);
  if (p.layer.size() != 1 || p.batch_norm) unknown("alexnet", ours);
  const auto it = layers.find(p.layer[0]);
  if (it == layers.end()) unknown("alexnet", ours);
  return it->second + "." + p.kind;
}
}  // namespace

NameStyle parse_name_style(const std::string& text) {
  if (text == "dptrain") return NameStyle::dptrain;
  if (text == "torchvision") return NameStyle::torchvision;
  throw Error(detail::concat("unknown tensor names '", text, "': give dptrain or torchvision"));
}

const char* to_string(NameStyle style) { return style == NameStyle::dptrain ? "dptrain" : "torchvision"; }

std::vector<std::string> torchvision_models() { return {"alexnet", "inception-v3", "resnet50"}; }

bool has_torchvision_names(const std::string& model) {
  return model == "alexnet" || model == "inception-v3" || model == "resnet50";
}

std::string external_name(const std::string& model, NameStyle style, const std::string& ours) {
  if (style == NameStyle::dptrain) return ours;
  if (model == "resnet50") return resnet50_name(ours);
  if (model == "inception-v3") return inception_v3_name(ours);
  if (model == "alexnet") return alexnet_name(ours);
  throw Error(detail::concat("model ", model,
                             " has no torchvision counterpart of the same structure (those are alexnet, "
                             "inception-v3 and resnet50); use --names dptrain"));
}

std::optional<std::string> batch_count_name(const std::string& model, NameStyle style, const std::string& ours) {
  constexpr std::string_view suffix = "/running_mean";
  if (style != NameStyle::torchvision || !ours.ends_with(suffix)) return std::nullopt;
  std::string name = external_name(model, style, ours);
  return name.substr(0, name.size() - std::string_view("running_mean").size()) + "num_batches_tracked";
}

}  // namespace dptrain::interop
