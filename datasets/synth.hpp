#pragma once
// `dptrain data synth OUT`: a small, learnable image tree in the ImageNet layout, as real JPEG files,
// to try `dptrain data convert imagenet` and training end to end without ImageNet:
//
//   OUT/train/<wnid>/<wnid>_<i>.JPEG
//   OUT/val/<wnid>/ILSVRC2012_val_<n>.JPEG   (n counts from 1, classes interleaved)
//   OUT/LOC_synset_mapping.txt
//
// Class c (wnid n00000000 + c) is a hue of its own with stripes at an angle and frequency of its own;
// every image has a random stripe phase and Philox noise, so classes are easy but not trivial to tell
// apart. Images are `size` pixels on the shorter side and square, landscape (4:3) or portrait (3:4) in
// turn, so the converter's resize and centre crop have work to do. Same options, same bytes.
#include <cstdint>
#include <string>

namespace dptrain::datasets {

struct SynthOptions {
  std::string output;
  int classes = 10;
  int per_class = 100;
  int size = 64;
  int val_per_class = 10;
  std::uint64_t seed = 1;
  int jobs = 0;  // threads; 0: all cores
};

struct SynthReport {
  std::int64_t train_images = 0, validation_images = 0;
};

SynthReport write_synthetic_tree(const SynthOptions& options);

// "n00000000" + c: the synthetic classes' wnids (real wnids start at n00001740).
std::string synthetic_wnid(int c);

}  // namespace dptrain::datasets
