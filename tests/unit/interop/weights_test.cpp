// Export and import of weights: torchvision's names for every tensor of its three models (unique,
// and the known keys), a lossless round trip, the metadata, and every mismatch refused naming the
// tensor. The comparison with torchvision itself is tests/interop (it needs PyTorch).
#include "dptrain/interop/weights.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "dptrain/backend/backend.hpp"
#include "dptrain/net/models/registry.hpp"
#include "dptrain/optim/sgd.hpp"
#include "dptrain/train/run_config.hpp"

namespace dptrain::interop {
namespace {
std::unique_ptr<Net> dry_model(Backend& backend, const std::string& model, int classes = 1000) {
  ModelConfig c;
  c.classes = classes;
  c.memory.allocate = false;
  return build_model(model, backend, c);
}

ckpt::TrainingState lenet_state(int classes = 10) {
  auto backend = make_cpu_backend();
  ModelConfig c;
  c.channels = 1;
  c.image_size = 28;
  c.classes = classes;
  auto net = build_model("lenet", *backend, c);
  net->initialize(5);
  Sgd sgd(*backend, net->parameters(), SgdConfig{});
  ckpt::Progress progress;
  progress.global_step = 12;
  TrainingRunConfig config;
  config.model = "lenet";
  ckpt::TrainingState s = ckpt::capture_state(*net, sgd, "lenet", progress, stored_configuration(config));
  s.source = "test.h5";
  return s;
}

// A file of the state's tensors, with one changed by `edit` (name, dtype, shape, bytes).
SafetensorsFile exported(const ckpt::TrainingState& s) { return export_weights(s, NameStyle::dptrain, {}); }

SafetensorsFile copy_except(const SafetensorsFile& file, const std::string& skip) {
  SafetensorsFile out;
  for (const StoredTensor& t : file.tensors()) {
    if (t.name != skip) out.add_bytes(t.name, t.dtype, t.shape, std::string(t.bytes));
  }
  return out;
}

std::string import_error(const SafetensorsFile& file, ImportOptions o = {"lenet", std::nullopt, std::nullopt}) {
  try {
    import_weights(file, "w.safetensors", o);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("every tensor of torchvision's three models has its state_dict key", "[interop]") {
  auto backend = make_cpu_backend();
  struct Expect {
    std::string model;
    std::size_t keys;  // parameters and buffers in torchvision's state_dict, without num_batches_tracked
    std::vector<std::pair<std::string, std::string>> samples;
  };
  const std::vector<Expect> cases = {
      {"resnet50",
       267,  // 320 with the 53 counters
       {{"conv1/weight", "conv1.weight"},
        {"conv1/bn/scale", "bn1.weight"},
        {"layer1.0/conv2/bn/running_variance", "layer1.0.bn2.running_var"},
        {"layer2.0/downsample/weight", "layer2.0.downsample.0.weight"},
        {"layer4.2/conv3/bn/shift", "layer4.2.bn3.bias"},
        {"layer3.0/downsample/bn/running_mean", "layer3.0.downsample.1.running_mean"},
        {"fc/bias", "fc.bias"}}},
      {"inception-v3",
       484,  // 580 with the 96 counters
       {{"Conv2d_1a_3x3/weight", "Conv2d_1a_3x3.conv.weight"},
        {"Mixed_7c/branch3x3dbl_3b/bn/running_mean", "Mixed_7c.branch3x3dbl_3b.bn.running_mean"},
        {"AuxLogits/conv1/bn/scale", "AuxLogits.conv1.bn.weight"},
        {"AuxLogits/fc/weight", "AuxLogits.fc.weight"},
        {"fc/weight", "fc.weight"}}},
      {"alexnet",
       16,
       {{"conv1/weight", "features.0.weight"},
        {"conv5/bias", "features.10.bias"},
        {"fc6/weight", "classifier.1.weight"},
        {"fc8/bias", "classifier.6.bias"}}},
  };
  for (const Expect& e : cases) {
    INFO(e.model);
    auto net = dry_model(*backend, e.model);
    std::set<std::string> names;
    for (Parameter* p : net->parameters()) names.insert(external_name(e.model, NameStyle::torchvision, p->name));
    std::size_t counters = 0;
    for (Buffer* b : net->buffers()) {
      names.insert(external_name(e.model, NameStyle::torchvision, b->name));
      if (batch_count_name(e.model, NameStyle::torchvision, b->name)) ++counters;
    }
    CHECK(names.size() == e.keys);  // no two of our tensors share a name
    CHECK(names.size() == net->parameters().size() + net->buffers().size());
    CHECK(counters == net->buffers().size() / 2);  // one per batch norm
    for (const auto& [ours, theirs] : e.samples) CHECK(external_name(e.model, NameStyle::torchvision, ours) == theirs);
  }
  CHECK(*batch_count_name("resnet50", NameStyle::torchvision, "layer1.0/conv1/bn/running_mean") ==
        "layer1.0.bn1.num_batches_tracked");
  CHECK_FALSE(batch_count_name("resnet50", NameStyle::dptrain, "conv1/bn/running_mean"));
  CHECK_THROWS_WITH(external_name("googlenet", NameStyle::torchvision, "conv1/weight"),
                    Catch::Contains("no torchvision counterpart"));
  CHECK_THROWS_WITH(external_name("resnet50", NameStyle::torchvision, "layer1.0/conv9x/weight"),
                    Catch::Contains("no tensor 'layer1.0/conv9x/weight'"));
  CHECK_THROWS_WITH(parse_name_style("keras"), Catch::Contains("give dptrain or torchvision"));
}

TEST_CASE("weights exported and imported come back bit for bit, with their metadata", "[interop]") {
  const ckpt::TrainingState s = lenet_state(10);
  ExportMetadata meta;
  meta.image_size = 28;
  meta.mean = {72.94};
  meta.stddev = {90.02};
  meta.dataset = "fashion-mnist";
  meta.class_keys = {"0", "1"};
  meta.class_names = {"T-shirt/top", "Trouser"};
  const SafetensorsFile file = export_weights(s, NameStyle::dptrain, meta);
  CHECK(file.metadata.at("model") == "lenet");
  CHECK(file.metadata.at("classes") == "10");
  CHECK(file.metadata.at("names") == "dptrain");
  CHECK(file.metadata.at("step") == "12");
  CHECK(file.metadata.at("image_size") == "28");
  CHECK(file.metadata.at("mean") == "[72.94]");
  // One channel is greyscale, not RGB; three are RGB; the count is given as well.
  CHECK(file.metadata.at("channels") == "1");
  CHECK(file.metadata.at("input").rfind("greyscale (1 channel), NCHW", 0) == 0);
  ExportMetadata rgb = meta;
  rgb.mean = {123.7, 116.3, 103.5};
  rgb.stddev = {58.4, 57.1, 57.4};
  const SafetensorsFile colour = export_weights(s, NameStyle::dptrain, rgb);
  CHECK(colour.metadata.at("channels") == "3");
  CHECK(colour.metadata.at("input").rfind("RGB, NCHW", 0) == 0);
  CHECK(export_weights(s, NameStyle::dptrain, {}).metadata.count("input") == 0);  // no dataset: no rule
  CHECK(file.metadata.at("class_names") == R"(["T-shirt/top","Trouser"])");
  CHECK(file.tensors().size() == s.parameters.size() + s.buffers.size());
  CHECK_THROWS_WITH(export_weights(s, NameStyle::torchvision, {}), Catch::Contains("no torchvision counterpart"));

  const ImportedWeights w = import_weights(file, "w.safetensors", {"lenet", std::nullopt, std::nullopt});
  CHECK(w.classes == 10);
  CHECK(w.names == NameStyle::dptrain);
  CHECK(w.state.progress.global_step == 0);
  CHECK(w.state.progress.global_batch == 0);
  CHECK(w.state.optimizer.momentum.empty());
  REQUIRE(w.state.parameters.size() == s.parameters.size());
  for (std::size_t i = 0; i < s.parameters.size(); ++i) {
    INFO(s.parameters[i].name);
    CHECK(w.state.parameters[i].name == s.parameters[i].name);
    CHECK(std::memcmp(w.state.parameters[i].value.raw(), s.parameters[i].value.raw(), s.parameters[i].value.bytes()) ==
          0);
  }
  const TrainingRunConfig c = parse_stored_configuration(w.state.configuration, "imported");
  CHECK(c.model == "lenet");
  CHECK(c.crop == 28);
  CHECK(checkpoint_classes(w.state) == 10);

  // The class count from the classifier's rows when the metadata has none.
  SafetensorsFile bare = copy_except(file, "");
  CHECK(import_weights(bare, "w", {"lenet", std::nullopt, std::nullopt}).classes == 10);
}

TEST_CASE("an import names the tensor that is missing, extra, mis-shaped, not floating-point or not finite",
          "[interop]") {
  const ckpt::TrainingState s = lenet_state(10);
  const SafetensorsFile file = exported(s);
  const std::string weight = s.parameters.front().name;

  CHECK_THAT(import_error(copy_except(file, weight)), Catch::Contains("has no tensor '" + weight + "'"));

  SafetensorsFile extra = copy_except(file, "");
  extra.add_bytes("stray/weight", "F32", {1}, std::string(4, '\0'));
  CHECK_THAT(import_error(extra), Catch::Contains("holds tensor 'stray/weight', which model lenet does not have"));

  SafetensorsFile reshaped;
  SafetensorsFile as_ints;
  SafetensorsFile with_nan;
  for (const StoredTensor& t : file.tensors()) {
    std::vector<std::int64_t> shape = t.shape;
    std::string bytes(t.bytes);
    if (t.name == weight) {
      reshaped.add_bytes(t.name, t.dtype, {static_cast<std::int64_t>(bytes.size() / 4)}, bytes);
      as_ints.add_bytes(t.name, "I32", shape, bytes);
      const float nan = std::nanf("");
      std::memcpy(bytes.data() + 8, &nan, 4);
      with_nan.add_bytes(t.name, t.dtype, shape, bytes);
    } else {
      reshaped.add_bytes(t.name, t.dtype, shape, bytes);
      as_ints.add_bytes(t.name, t.dtype, shape, bytes);
      with_nan.add_bytes(t.name, t.dtype, shape, bytes);
    }
  }
  CHECK_THAT(import_error(reshaped), Catch::Contains("tensor '" + weight + "' has shape [") &&
                                         Catch::Contains("but model lenet with 10 classes has"));
  CHECK_THAT(import_error(as_ints), Catch::Contains("'" + weight + "' has dtype I32"));
  CHECK_THAT(import_error(with_nan), Catch::Contains("'" + weight + "' holds nan at index 2"));

  // Another class count than the file's: the classifier's shape says which tensor.
  CHECK_THAT(import_error(file, {"lenet", std::nullopt, 7}),
             Catch::Contains("--classes says 7 classes, but tensor 'ip2/weight' (the classifier) has 10 rows"));
  // A classifier whose other dimensions are not the model's is refused before a model is built for
  // its row count (a [4294967295, 0] tensor costs no bytes in the file).
  SafetensorsFile huge_classifier;
  for (const StoredTensor& t : file.tensors()) {
    if (t.name == "ip2/weight") {
      huge_classifier.add_bytes(t.name, t.dtype, {4294967295, 0}, "");
    } else {
      huge_classifier.add_bytes(t.name, t.dtype, t.shape, std::string(t.bytes));
    }
  }
  CHECK_THAT(import_error(huge_classifier),
             Catch::Contains("tensor 'ip2/weight' (the classifier) has shape [4294967295,0], but model lenet's is "
                             "[classes,500] with 1 to 1048576 classes"));
  CHECK_THAT(import_error(file, {"resnet51", std::nullopt, std::nullopt}), Catch::Contains("resnet51"));
  CHECK_THAT(import_error(file, {"alexnet", std::nullopt, std::nullopt}),
             Catch::Contains("holds the weights of model lenet (its metadata says), not of alexnet"));
  CHECK_THAT(import_error(file, {"lenet", NameStyle::torchvision, std::nullopt}),
             Catch::Contains("no torchvision counterpart"));
  SafetensorsFile bad_meta = copy_except(file, "");
  bad_meta.metadata["format"] = "dptrain weights";
  bad_meta.metadata["classes"] = "ten";
  CHECK_THAT(import_error(bad_meta), Catch::Contains("metadata classes is 'ten'"));
  bad_meta.metadata["classes"] = "10";
  bad_meta.metadata["image_size"] = "1048576";  // would overflow oneDNN's dimensions
  CHECK_THAT(import_error(bad_meta), Catch::Contains("metadata image_size is '1048576', not a count from 1 to 8192"));
  bad_meta.metadata.erase("image_size");
  bad_meta.metadata["classes"] = "11";
  CHECK_THAT(import_error(bad_meta), Catch::Contains("metadata classes says 11 classes, but tensor 'ip2/weight'"));
  // Another tool's metadata is not ours to read: the same keys from PyTorch's writer are ignored.
  SafetensorsFile from_pytorch = copy_except(file, "");
  from_pytorch.metadata = {{"format", "pt"}, {"model", "LeNet5"}, {"classes", "ten"}, {"names", "theirs"}};
  CHECK(import_weights(from_pytorch, "w", {"lenet", std::nullopt, std::nullopt}).classes == 10);
}

}  // namespace dptrain::interop
