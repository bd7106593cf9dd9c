#pragma once
// How a batch of images travels from the loader to the net's input.
//   f32: the loader crops, flips and normalises on the host (the CPU backend: the compute reads the
//        host batch directly, so nothing is gained by deferring the arithmetic);
//   u8:  the loader crops and flips into bytes and the device normalises (the GPU backend: a quarter
//        of the bytes cross PCIe and no host core spends time on float conversion).
// Both give the same floats, bit for bit: normalise_planes() is the arithmetic of data::Augmenter,
// and the GPU kernel repeats it (an IEEE float subtraction and division, no fused or fast-math ops).
#include <cstdint>
#include <vector>

#include "dptrain/core/dtype.hpp"
#include "dptrain/core/shape.hpp"

namespace dptrain {

// (x - mean[c]) / stddev[c] per channel, x on the 0-255 scale, in float.
struct InputNormalisation {
  std::vector<float> mean, stddev;
};

struct InputFormat {
  DType host = DType::f32;           // f32 (normalised) or u8 (normalised by the stager)
  InputNormalisation normalisation;  // used when host == u8
};

// out = (in - mean[c]) / stddev[c] for `images` images of `channels` planes of `plane` bytes each
// (u8 [N, C, H, W] -> f32 [N, C, H, W]); channels = normalisation.mean.size().
void normalise_planes(const std::uint8_t* in, float* out, std::int64_t images, std::int64_t plane,
                      const InputNormalisation& normalisation);

// Checks that batches of `batch` ([N, C, H, W]) in `format` can be staged: f32, or u8 with one
// positive std per channel.
void check_input_format(const InputFormat& format, const Shape& batch, const char* who);

}  // namespace dptrain
