// 2-D max and average pooling with padding that may be larger after the image than before it (Caffe's
// ceil rounding), which cuDNN's symmetric pooling descriptor cannot express. The semantics are
// oneDNN's, as the CPU backend runs them: max ignores padded positions and routes the gradient to the
// first maximum; average divides by the whole window (include padding) or by the positions inside the
// image (exclude padding). The backward pass gathers per input element, so no atomics and the result
// is deterministic.
#include <cfloat>

#include "dptrain/backend/cuda/element.cuh"
#include "dptrain/backend/cuda/kernels.hpp"
#include "dptrain/backend/cuda/launch.cuh"

namespace dptrain::cuda::kernels {
namespace {
__device__ int window_start(int out, int stride, int pad) { return out * stride - pad; }

__device__ float average_divisor(const PoolGeometry& g, PoolKind kind, int oh, int ow) {
  if (kind == PoolKind::average_include_padding) return static_cast<float>(g.kernel_h * g.kernel_w);
  const int h0 = max(window_start(oh, g.stride_h, g.pad_h), 0);
  const int h1 = min(window_start(oh, g.stride_h, g.pad_h) + g.kernel_h, g.height);
  const int w0 = max(window_start(ow, g.stride_w, g.pad_w), 0);
  const int w1 = min(window_start(ow, g.stride_w, g.pad_w) + g.kernel_w, g.width);
  return static_cast<float>((h1 - h0) * (w1 - w0));
}

// Element i (in memory order) of a tensor of height x width pixels per plane: its pixel (row, column)
// and the offset of its plane's pixel 0, from which pixel p is `stride` * p further on (1 in NCHW, C in
// NHWC).
struct PixelOf {
  int row = 0, column = 0;
  std::int64_t plane_start = 0, stride = 1;
};

__device__ PixelOf pixel_of(std::int64_t i, const PoolGeometry& g, int height, int width) {
  PixelOf p;
  const std::int64_t pixels = static_cast<std::int64_t>(height) * width;
  if (g.channels_last) {
    const std::int64_t c = i % g.channels, rest = i / g.channels;
    const std::int64_t pixel = rest % pixels, n = rest / pixels;
    p.row = static_cast<int>(pixel / width);
    p.column = static_cast<int>(pixel % width);
    p.plane_start = n * pixels * g.channels + c;
    p.stride = g.channels;
  } else {
    const std::int64_t pixel = i % pixels;
    p.row = static_cast<int>(pixel / width);
    p.column = static_cast<int>(pixel % width);
    p.plane_start = i - pixel;
  }
  return p;
}

// Where the plane starting at `start` of a tensor of `from_pixels` pixels per plane starts in one of
// `to_pixels` (the same sample and channel): between a pooling's input and output.
__device__ std::int64_t same_plane_start(std::int64_t start, const PoolGeometry& g, std::int64_t from_pixels,
                                         std::int64_t to_pixels) {
  if (!g.channels_last) return start / from_pixels * to_pixels;
  const std::int64_t per_sample = from_pixels * g.channels;
  return start / per_sample * to_pixels * g.channels + start % per_sample;
}

template <typename T>
__global__ void pool_forward_kernel(const T* x, T* y, std::int32_t* argmax, PoolGeometry g, PoolKind kind) {
  const std::int64_t per_plane = static_cast<std::int64_t>(g.out_height) * g.out_width;
  DPTRAIN_GRID_STRIDE(i, g.planes * per_plane) {
    const PixelOf out = pixel_of(i, g, g.out_height, g.out_width);
    const int oh = out.row, ow = out.column;
    const T* in = x + same_plane_start(out.plane_start, g, per_plane, static_cast<std::int64_t>(g.height) * g.width);
    const std::int64_t step = out.stride;
    const int hs = window_start(oh, g.stride_h, g.pad_h), ws = window_start(ow, g.stride_w, g.pad_w);
    const int h0 = max(hs, 0), h1 = min(hs + g.kernel_h, g.height);
    const int w0 = max(ws, 0), w1 = min(ws + g.kernel_w, g.width);
    if (kind == PoolKind::max) {
      float best = -FLT_MAX;
      int where = -1;
      for (int h = h0; h < h1; ++h) {
        for (int w = w0; w < w1; ++w) {
          const float v = to_float(in[(h * g.width + w) * step]);
          if (where < 0 || v > best) {
            best = v;
            where = h * g.width + w;
          }
        }
      }
      y[i] = from_float<T>(best);
      argmax[i] = where;
    } else {
      float sum = 0.f;
      for (int h = h0; h < h1; ++h) {
        for (int w = w0; w < w1; ++w) sum += to_float(in[(h * g.width + w) * step]);
      }
      y[i] = from_float<T>(sum / average_divisor(g, kind, oh, ow));
    }
  }
}

template <typename T>
__global__ void pool_backward_kernel(const T* dy, const std::int32_t* argmax, T* dx, PoolGeometry g, PoolKind kind) {
  const std::int64_t per_plane = static_cast<std::int64_t>(g.height) * g.width;
  DPTRAIN_GRID_STRIDE(i, g.planes * per_plane) {
    const PixelOf in = pixel_of(i, g, g.height, g.width);
    const int h = in.row, w = in.column;
    // The outputs whose windows contain (h, w).
    const int oh0 = h + g.pad_h < g.kernel_h ? 0 : (h + g.pad_h - g.kernel_h) / g.stride_h + 1;
    const int oh1 = min((h + g.pad_h) / g.stride_h, g.out_height - 1);
    const int ow0 = w + g.pad_w < g.kernel_w ? 0 : (w + g.pad_w - g.kernel_w) / g.stride_w + 1;
    const int ow1 = min((w + g.pad_w) / g.stride_w, g.out_width - 1);
    const std::int64_t out_start =
        same_plane_start(in.plane_start, g, per_plane, static_cast<std::int64_t>(g.out_height) * g.out_width);
    const std::int64_t step = in.stride;
    const T* grad = dy + out_start;
    const std::int32_t* source = argmax ? argmax + out_start : nullptr;
    const int here = h * g.width + w;
    float sum = 0.f;
    for (int oh = oh0; oh <= oh1; ++oh) {
      for (int ow = ow0; ow <= ow1; ++ow) {
        const std::int64_t o = (static_cast<std::int64_t>(oh) * g.out_width + ow) * step;
        if (kind == PoolKind::max) {
          if (source[o] == here) sum += to_float(grad[o]);
        } else {
          sum += to_float(grad[o]) / average_divisor(g, kind, oh, ow);
        }
      }
    }
    dx[i] = from_float<T>(sum);
  }
}
}  // namespace

void pool_forward(const void* x, void* y, DType type, std::int32_t* argmax, const PoolGeometry& g, PoolKind kind,
                  cudaStream_t stream) {
  const std::int64_t n = g.planes * g.out_height * g.out_width;
  if (n == 0) return;
  with_element_type(type, "pool_forward", [&](auto element) {
    using T = decltype(element);
    pool_forward_kernel<T>
        <<<grid_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), argmax, g, kind);
  });
  DPTRAIN_CHECK_LAUNCH();
}

void pool_backward(const void* dy, const std::int32_t* argmax, void* dx, DType type, const PoolGeometry& g,
                   PoolKind kind, cudaStream_t stream) {
  const std::int64_t n = g.planes * g.height * g.width;
  if (n == 0) return;
  with_element_type(type, "pool_backward", [&](auto element) {
    using T = decltype(element);
    pool_backward_kernel<T>
        <<<grid_for(n), kThreads, 0, stream>>>(static_cast<const T*>(dy), argmax, static_cast<T*>(dx), g, kind);
  });
  DPTRAIN_CHECK_LAUNCH();
}

}  // namespace dptrain::cuda::kernels
