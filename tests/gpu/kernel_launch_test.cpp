// The host side of our kernels' launch shapes (needs the CUDA headers, not a GPU): the bias
// gradient's channel sums and batch norm's reductions are cut into groups so that few channels still
// fill the GPU, and batch norm reads whole vectors where the plane allows.
#include <catch2/catch.hpp>

#include "dptrain/backend/cuda/batch_norm_kernels.hpp"
#include "dptrain/backend/cuda/kernels.hpp"
#include "dptrain/core/error.hpp"

using dptrain::cuda::kernels::channel_sum_splits;

TEST_CASE("channel sums: about 1024 blocks, never more groups than samples, one group when it cannot help") {
  // NCHW planes (plane > 1): one block per channel and group.
  CHECK(channel_sum_splits(256, 64, 112 * 112) == 16);  // GoogLeNet's conv1: 64 x 16 = 1024 blocks
  CHECK(channel_sum_splits(256, 1000, 49) == 2);        // 2000 blocks
  CHECK(channel_sum_splits(256, 2048, 49) == 1);        // channels enough on their own
  CHECK(channel_sum_splits(5, 300, 4) == 4);            // 4 groups of 2, 2, 1 and no samples
  CHECK(channel_sum_splits(3, 8, 4) == 3);              // capped by the samples
  CHECK(channel_sum_splits(1, 8, 4) == 1);
  CHECK(channel_sum_splits(0, 8, 4) == 1);
  CHECK(channel_sum_splits(256, 0, 4) == 1);
  CHECK(channel_sum_splits(1'000'000, 1, 4) == 1024);  // gridDim.y's 65535 is never near
  // Rows (plane 1: a linear layer's [N, O], an NHWC convolution's [N*H*W, C]): blocks of 32 channels,
  // groups of at least 8 rows.
  CHECK(channel_sum_splits(256, 1000, 1) == 32);             // 32 tiles x 32 groups of 8 rows
  CHECK(channel_sum_splits(256 * 112 * 112, 64, 1) == 512);  // GoogLeNet's conv1 in NHWC: 2 x 512
  CHECK(channel_sum_splits(256 * 7 * 7, 2048, 1) == 16);     // 64 tiles x 16
  CHECK(channel_sum_splits(20, 3, 1) == 3);                  // capped at ceil(20 / 8) groups
  CHECK(channel_sum_splits(1, 3, 1) == 1);
  CHECK(channel_sum_splits(100'000'000, 1, 1) == 1024);
}

TEST_CASE("batch norm: 16 or 8 bytes a load where the plane allows, else one element") {
  using dptrain::DType;
  using dptrain::cuda::kernels::batch_norm_vector_width;
  using Shape = dptrain::cuda::kernels::BatchNormShape;
  CHECK(batch_norm_vector_width(Shape{64, 64, 112 * 112}, DType::bf16) == 8);
  CHECK(batch_norm_vector_width(Shape{64, 64, 112 * 112}, DType::f16) == 8);
  CHECK(batch_norm_vector_width(Shape{64, 64, 112 * 112}, DType::f32) == 4);
  CHECK(batch_norm_vector_width(Shape{64, 1024, 14 * 14}, DType::bf16) == 4);  // 196 = 4 x 49: 8 bytes
  CHECK(batch_norm_vector_width(Shape{64, 1024, 14 * 14}, DType::f32) == 4);
  CHECK(batch_norm_vector_width(Shape{64, 2048, 7 * 7}, DType::bf16) == 1);
  CHECK(batch_norm_vector_width(Shape{2, 3, 1 * 7}, DType::f32) == 1);
  CHECK(batch_norm_vector_width(Shape{2, 3, 6}, DType::f32) == 2);
  CHECK(batch_norm_vector_width(Shape{2, 3, 6}, DType::bf16) == 1);
  CHECK_THROWS_AS(batch_norm_vector_width(Shape{2, 3, 8}, DType::i32), dptrain::Error);
}

TEST_CASE("batch norm: about 1024 blocks, no group under 512 vectors, none empty") {
  using dptrain::DType;
  using dptrain::cuda::kernels::batch_norm_groups;
  using dptrain::cuda::kernels::batch_norm_workspace_floats;
  using Shape = dptrain::cuda::kernels::BatchNormShape;
  // ResNet-50's conv1 at batch 64: 100352 vectors of 8 per channel, 64 x 16 blocks.
  CHECK(batch_norm_groups(Shape{64, 64, 112 * 112}, DType::bf16) == 16);
  CHECK(batch_norm_workspace_floats(Shape{64, 64, 112 * 112}, DType::bf16) == 64 * (2 * 16 + 3));
  // 3136 vectors per channel: 64 groups would be under 512 vectors; 6 of 523 (the last 521).
  CHECK(batch_norm_groups(Shape{8, 16, 56 * 56}, DType::bf16) == 6);
  CHECK(batch_norm_groups(Shape{256, 2048, 7 * 7}, DType::bf16) == 1);  // channels enough on their own
  CHECK(batch_norm_groups(Shape{2, 3, 7}, DType::f32) == 1);
  CHECK(batch_norm_groups(Shape{0, 3, 7}, DType::f32) == 1);
  CHECK(batch_norm_groups(Shape{4, 0, 7}, DType::f32) == 1);
  CHECK(batch_norm_groups(Shape{1'000'000, 1, 1}, DType::f32) == 1024);
  // At least 512 vectors a group: 1030 vectors make 2 groups of 515.
  CHECK(batch_norm_groups(Shape{1030, 1, 1}, DType::f32) == 2);
}
