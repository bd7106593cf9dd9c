// Batched transposes through a shared-memory tile: a block reads a 32 x 32 tile of one matrix with
// consecutive threads on consecutive columns (coalesced) and writes its transpose with consecutive
// threads on consecutive rows of the source (coalesced in the destination). The tile holds floats,
// so the type conversion happens once per element, on the store.
#include <algorithm>

#include "dptrain/backend/cuda/element.cuh"
#include "dptrain/backend/cuda/launch.cuh"
#include "dptrain/backend/cuda/layout_kernels.hpp"

namespace dptrain::cuda::kernels {
namespace {
constexpr int kTile = 32;
constexpr int kRowsPerPass = 8;  // a block of 32 x 8 threads covers its tile in four passes

// blockIdx.x: a tile of columns; blockIdx.y: a tile of rows (strided past gridDim.y); blockIdx.z: a
// sample (strided past gridDim.z).
template <typename From, typename To>
__global__ void transpose_kernel(const From* src, To* dst, std::int64_t samples, std::int64_t rows, std::int64_t cols) {
  __shared__ float tile[kTile][kTile + 1];  // +1: the column reads of the write phase hit 32 banks
  const std::int64_t per_sample = rows * cols;
  const std::int64_t col0 = static_cast<std::int64_t>(blockIdx.x) * kTile;
  for (std::int64_t n = blockIdx.z; n < samples; n += gridDim.z) {
    const From* a = src + n * per_sample;
    To* b = dst + n * per_sample;
    for (std::int64_t row0 = static_cast<std::int64_t>(blockIdx.y) * kTile; row0 < rows;
         row0 += static_cast<std::int64_t>(gridDim.y) * kTile) {
      for (int r = threadIdx.y; r < kTile; r += kRowsPerPass) {
        const std::int64_t row = row0 + r, col = col0 + threadIdx.x;
        if (row < rows && col < cols) tile[r][threadIdx.x] = to_float(a[row * cols + col]);
      }
      __syncthreads();
      // Thread (x, y) now writes source row row0 + x of destination row (source column) col0 + y.
      for (int c = threadIdx.y; c < kTile; c += kRowsPerPass) {
        const std::int64_t col = col0 + c, row = row0 + threadIdx.x;
        if (row < rows && col < cols) b[col * rows + row] = from_float<To>(tile[threadIdx.x][c]);
      }
      __syncthreads();  // the tile is read before the next row tile overwrites it
    }
  }
}

template <typename From, typename To>
void launch_transpose(const void* src, void* dst, std::int64_t samples, std::int64_t rows, std::int64_t cols,
                      cudaStream_t stream) {
  const std::int64_t col_tiles = (cols + kTile - 1) / kTile, row_tiles = (rows + kTile - 1) / kTile;
  if (col_tiles > 2147483647) throw Error("transpose_samples: " + std::to_string(cols) + " columns are too many");
  const dim3 grid(static_cast<unsigned>(col_tiles), static_cast<unsigned>(std::min<std::int64_t>(row_tiles, 65535)),
                  static_cast<unsigned>(std::min<std::int64_t>(samples, 65535)));
  transpose_kernel<From, To><<<grid, dim3(kTile, kRowsPerPass), 0, stream>>>(
      static_cast<const From*>(src), static_cast<To*>(dst), samples, rows, cols);
  DPTRAIN_CHECK_LAUNCH();
}
}  // namespace

void transpose_samples(const void* src, DType src_type, void* dst, DType dst_type, std::int64_t samples,
                       std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  if (samples < 0 || rows < 0 || cols < 0) {
    throw Error("transpose_samples: " + std::to_string(samples) + " x " + std::to_string(rows) + " x " +
                std::to_string(cols) + " elements");
  }
  if (samples == 0 || rows == 0 || cols == 0) return;
  with_element_type(src_type, "transpose_samples", [&](auto from) {
    with_element_type(dst_type, "transpose_samples", [&](auto to) {
      launch_transpose<decltype(from), decltype(to)>(src, dst, samples, rows, cols, stream);
    });
  });
}

}  // namespace dptrain::cuda::kernels
