// dptrain data: making and checking dataset directories. `convert imagenet` and `convert
// fashion-mnist` write HDF5 shards and a manifest, `synth` writes a small ImageNet-layout JPEG tree to
// try the pipeline without ImageNet, `verify` checks a directory before a long job relies on it.
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "datasets/fashion_mnist.hpp"
#include "datasets/imagenet.hpp"
#include "datasets/synth.hpp"
#include "datasets/verify.hpp"
#include "option_checks.hpp"

namespace dptrain::app {
namespace {
struct DataOptions {
  datasets::ImagenetOptions imagenet;
  std::vector<std::string> fashion_paths;  // [SRC] OUT
  datasets::FashionMnistOptions fashion;
  datasets::SynthOptions synth;
  std::string verify_directory;
  bool verify_quick = false;
};

int run_fashion_mnist(const DataOptions& o) {
  const bool has_source = o.fashion_paths.size() == 2;
  const std::string source = has_source ? o.fashion_paths[0] : datasets::kFashionMnistDefaultSource;
  const std::string& output = o.fashion_paths.back();
  const long samples = datasets::convert_fashion_mnist(source, output, o.fashion);
  std::cout << "dptrain data convert fashion-mnist: " << output << " holds " << samples << " samples\n";
  return 0;
}

int run_synth(const datasets::SynthOptions& o) {
  const datasets::SynthReport report = datasets::write_synthetic_tree(o);
  std::cout << "dptrain data synth: wrote " << report.train_images << " train and " << report.validation_images
            << " validation JPEG images of " << o.classes << " classes to " << o.output
            << " (convert them with 'dptrain data convert imagenet " << o.output << " OUT')\n";
  return 0;
}

int run_verify(const std::string& directory, bool quick) {
  const datasets::VerifyReport report = datasets::verify_dataset(directory, quick, &std::cout);
  std::cout << report.summary << "\n";
  for (const std::string& problem : report.problems) std::cerr << "dptrain: error: " << problem << "\n";
  if (!report.ok()) {
    std::cerr << "dptrain data verify: " << report.problems.size() << " of " << report.shards
              << " shards failed; the dataset is not usable as it is\n";
    return 1;
  }
  std::cout << "all " << report.shards << " shards and " << report.samples << " samples are good\n";
  return 0;
}
}  // namespace

Command add_data_command(CLI::App& app) {
  auto* data = app.add_subcommand("data", "Make and check dataset directories (HDF5 shards + manifest.json)");
  data->require_subcommand(1);
  auto o = std::make_shared<DataOptions>();

  auto* convert = data->add_subcommand("convert", "Convert a source dataset into HDF5 shards and a manifest");
  convert->require_subcommand(1);

  auto* imagenet = convert->add_subcommand(
      "imagenet",
      "Convert an ILSVRC2012 JPEG tree (train/<wnid>/*.JPEG; val/ in class folders, or flat with "
      "LOC_val_solution.csv or ILSVRC2012_validation_ground_truth.txt + synsets.txt) into OUT. Resizes the "
      "shorter side to --size and keeps the centre square. Run it under mpiexec/srun to spread the shards over "
      "ranks; run it again after an interruption to write only the missing shards.");
  auto& in = o->imagenet;
  imagenet->add_option("SRC", in.source, "The ImageNet folder holding train/ and val/")->required();
  imagenet->add_option("OUT", in.output, "The dataset directory to write")->check(output_directory())->required();
  imagenet->add_option("--size", in.size, "Stored height and width in pixels")
      ->check(in_range(1, 8192))
      ->capture_default_str();
  imagenet->add_option("--shards", in.train_shards, "Shards of the train split")
      ->check(at_least(1))
      ->capture_default_str();
  imagenet->add_option("--val-shards", in.validation_shards, "Shards of the validation split")
      ->check(at_least(1))
      ->capture_default_str();
  imagenet
      ->add_option("--encoding", in.encoding,
                   "raw: uint8 pixels (fastest to load); jpeg: re-encoded at quality 90 "
                   "(several times smaller)")
      ->check(CLI::IsMember({"raw", "jpeg"}))
      ->capture_default_str();
  imagenet->add_option("--jobs", in.jobs, "Threads per rank (default: the node's cores divided among its ranks)")
      ->check(at_least(0));

  auto* fashion = convert->add_subcommand(
      "fashion-mnist", std::string("Convert Fashion-MNIST's IDX files (default SRC: ") +
                           datasets::kFashionMnistDefaultSource + ", Debian's dataset-fashion-mnist) into OUT");
  fashion
      ->add_option("paths", o->fashion_paths,
                   "[SRC] OUT: the folder with the four IDX .gz files (optional), then the dataset directory")
      ->expected(1, 2)
      ->required();
  fashion->add_option("--shards", o->fashion.train_shards, "Shards of the train split")
      ->check(at_least(1))
      ->capture_default_str();
  fashion->add_option("--val-shards", o->fashion.validation_shards, "Shards of the validation (test) split")
      ->check(at_least(1))
      ->capture_default_str();

  auto* synth = data->add_subcommand(
      "synth",
      "Write a small learnable JPEG tree in the ImageNet layout (one colour and stripe pattern per class, "
      "plus noise) to try 'data convert imagenet' and training without ImageNet");
  auto& sy = o->synth;
  synth->add_option("OUT", sy.output, "The folder to write (train/, val/, LOC_synset_mapping.txt)")
      ->check(output_directory())
      ->required();
  synth->add_option("--classes", sy.classes, "Number of classes")->required()->check(in_range(2, 100000));
  synth->add_option("--per-class", sy.per_class, "Train images per class")->required()->check(at_least(1));
  synth->add_option("--size", sy.size, "Shorter side of the images in pixels")->required()->check(in_range(8, 4096));
  synth->add_option("--val-per-class", sy.val_per_class, "Validation images per class")
      ->check(at_least(1))
      ->capture_default_str();
  synth->add_option("--seed", sy.seed, "Seed of the patterns and noise")->capture_default_str();

  auto* verify = data->add_subcommand(
      "verify",
      "Check a dataset directory: every shard exists, matches the manifest (header, sizes, labels in "
      "range) and its checksum, and decodes every JPEG entry; exits non-zero naming each bad file");
  verify->add_option("DIR", o->verify_directory, "The dataset directory (with manifest.json)")->required();
  verify->add_flag("--quick", o->verify_quick,
                   "Skip decoding the JPEG entries (checks headers, sizes and checksums only)");

  return [o, imagenet, fashion, synth, verify] {
    if (imagenet->parsed()) {
      datasets::convert_imagenet(o->imagenet, std::cout, std::cerr);
      return 0;
    }
    if (fashion->parsed()) return run_fashion_mnist(*o);
    if (synth->parsed()) return run_synth(o->synth);
    if (verify->parsed()) return run_verify(o->verify_directory, o->verify_quick);
    return 1;
  };
}

}  // namespace dptrain::app
