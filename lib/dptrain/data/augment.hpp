#pragma once
// One stored image (uint8, H x W x C) to the network's input (float, C x S x S):
//   training:   zero padding of `pad` pixels, a random S x S crop, a horizontal flip with p = 0.5;
//   evaluation: the centred S x S crop;
// then (x - mean[c]) / std[c] with mean and std on the 0-255 scale (the manifest's). Padding is pixel
// value 0 before normalisation, as torchvision's RandomCrop(padding=4) does in the CIFAR recipe.
// The random choices are a pure function of (seed, epoch, sample index) (Philox), never of the thread
// or the rank that happens to prepare the sample, so any number of ranks sees the same inputs.
#include <cstdint>
#include <vector>

#include "dptrain/core/input_format.hpp"
#include "dptrain/data/pixel_window.hpp"

namespace dptrain::data {

struct AugmentConfig {
  int crop = 0;                      // S; 0 = the stored size (the shorter side when the image is not square)
  int pad = 0;                       // training only: zero pixels added on every side before cropping
  bool random = false;               // training: random crop and flip; evaluation: centre crop, no flip
  bool flip = true;                  // training only: horizontal flip with p = 0.5
  std::vector<double> mean, stddev;  // per channel, 0-255 scale
  std::uint64_t seed = 0;
};

// Where the crop window starts in the padded image, and whether the sample is flipped.
struct CropDraw {
  int y = 0, x = 0;
  bool flip = false;
};

class Augmenter {
 public:
  // Checks the configuration against the stored geometry; a crop larger than the (padded) image or a
  // mean/std of the wrong length is an Error.
  Augmenter(const AugmentConfig& config, int height, int width, int channels);

  int crop() const { return crop_; }
  int channels() const { return channels_; }
  // Floats one output sample takes: C * S * S.
  std::int64_t output_size() const { return static_cast<std::int64_t>(channels_) * crop_ * crop_; }

  // The crop and flip of one sample in one epoch (the centre and no flip in evaluation).
  CropDraw draw(std::int64_t epoch, std::int64_t sample) const;
  // The stored pixels that apply() reads for `draw` (inside the image; empty when the crop shows
  // padding only). Pixels outside it may hold anything: a JPEG decode need produce only these.
  PixelWindow window(const CropDraw& draw) const;
  // Crops, flips and normalises `hwc` (H*W*C bytes) into `chw` (C*S*S floats).
  void apply(const std::uint8_t* hwc, const CropDraw& draw, float* chw) const;
  void operator()(const std::uint8_t* hwc, std::int64_t epoch, std::int64_t sample, float* chw) const {
    apply(hwc, draw(epoch, sample), chw);
  }
  // Crops and flips `hwc` into `chw` (C*S*S bytes, padding 0) without normalising: the bytes a device
  // normalises with normalisation() (normalise_planes) into exactly the floats apply() writes.
  void apply_bytes(const std::uint8_t* hwc, const CropDraw& draw, std::uint8_t* chw) const;
  // The mean and std apply() uses, as floats.
  InputNormalisation normalisation() const { return {mean_, stddev_}; }

 private:
  int height_, width_, channels_, crop_, pad_;
  bool random_, flip_;
  std::uint64_t seed_;
  std::vector<float> mean_, stddev_;        // per channel, as the float arithmetic uses them
  std::vector<float> padding_;              // per channel: the normalised value of a zero pixel
  std::vector<std::uint8_t> byte_padding_;  // per channel: 0, apply_bytes()'s padding
};

}  // namespace dptrain::data
