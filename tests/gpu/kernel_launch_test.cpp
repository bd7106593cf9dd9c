// The host side of our kernels' launch shapes (needs the CUDA headers, not a GPU): the bias
// gradient's channel sums and batch norm's reductions are cut into groups so that few channels still
// fill the GPU, and batch norm reads whole vectors where the plane (NCHW) or the channels (NHWC) allow.
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

TEST_CASE("batch norm channels last: vectors along the channels, tiles of them filling the GPU") {
  using dptrain::DType;
  using dptrain::cuda::kernels::batch_norm_groups;
  using dptrain::cuda::kernels::batch_norm_vector_width;
  using dptrain::cuda::kernels::batch_norm_workspace_floats;
  using Shape = dptrain::cuda::kernels::BatchNormShape;
  constexpr bool kNhwc = true;
  // 16 bytes where C allows, else 8, else one element: the plane no longer matters.
  CHECK(batch_norm_vector_width(Shape{256, 64, 112 * 112, kNhwc}, DType::bf16) == 8);
  CHECK(batch_norm_vector_width(Shape{256, 64, 112 * 112, kNhwc}, DType::f32) == 4);
  CHECK(batch_norm_vector_width(Shape{256, 2048, 7 * 7, kNhwc}, DType::bf16) == 8);  // 1 in NCHW
  CHECK(batch_norm_vector_width(Shape{3, 12, 9 * 9, kNhwc}, DType::f16) == 4);
  CHECK(batch_norm_vector_width(Shape{5, 6, 4 * 4, kNhwc}, DType::f32) == 2);
  CHECK(batch_norm_vector_width(Shape{5, 6, 4 * 4, kNhwc}, DType::bf16) == 1);
  CHECK(batch_norm_vector_width(Shape{4, 3, 8 * 8, kNhwc}, DType::bf16) == 1);  // 8 in NCHW
  CHECK(batch_norm_vector_width(Shape{16, 7, 1, kNhwc}, DType::f32) == 1);
  // ResNet-50 at batch 256, bf16: about 1024 blocks of (tile of channel vectors, group of rows).
  // conv1: 8 vectors a row, one tile; 1024 groups of 3136 rows.
  CHECK(batch_norm_groups(Shape{256, 64, 112 * 112, kNhwc}, DType::bf16) == 1024);
  CHECK(batch_norm_workspace_floats(Shape{256, 64, 112 * 112, kNhwc}, DType::bf16) == 64 * (2 * 1024 + 3));
  CHECK(batch_norm_groups(Shape{256, 256, 56 * 56, kNhwc}, DType::bf16) == 1024);
  CHECK(batch_norm_groups(Shape{256, 512, 28 * 28, kNhwc}, DType::bf16) == 512);   // 2 tiles
  CHECK(batch_norm_groups(Shape{256, 1024, 14 * 14, kNhwc}, DType::bf16) == 256);  // 4 tiles
  CHECK(batch_norm_groups(Shape{256, 2048, 7 * 7, kNhwc}, DType::bf16) == 128);    // 8 tiles, 98 rows each
  CHECK(batch_norm_groups(Shape{256, 2048, 7 * 7, kNhwc}, DType::f32) == 64);      // 16 tiles
  // At least 8 rows a thread: 2 vectors a row make tiles of 2 columns and 128 lanes, groups of at
  // least 1024 rows: 25088 rows make 24 groups.
  CHECK(batch_norm_groups(Shape{8, 16, 56 * 56, kNhwc}, DType::bf16) == 24);
  CHECK(batch_norm_groups(Shape{2, 3, 7, kNhwc}, DType::f32) == 1);
  CHECK(batch_norm_groups(Shape{0, 3, 7, kNhwc}, DType::f32) == 1);
  CHECK(batch_norm_groups(Shape{4, 0, 7, kNhwc}, DType::f32) == 1);
  CHECK(batch_norm_groups(Shape{1'000'000, 1, 1, kNhwc}, DType::f32) == 488);
  CHECK_THROWS_AS(batch_norm_groups(Shape{2, 3, 8, kNhwc}, DType::i32), dptrain::Error);
}
