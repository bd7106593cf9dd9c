#include "dptrain/backend/cuda/input_stager.hpp"

#include <cstring>
#include <memory>

#include "dptrain/backend/cuda/layout_kernels.hpp"
#include "dptrain/backend/cuda/precision_kernels.hpp"
#include "dptrain/backend/cuda/streams.hpp"

namespace dptrain::cuda {
namespace {
class CudaInputStager final : public InputStager {
 public:
  CudaInputStager(CudaContextPtr ctx, const Shape& shape, InputFormat format)
      : ctx_(std::move(ctx)), shape_(shape), format_(std::move(format)), staging_(ctx_->allocate(shape, format_.host)) {
    check_input_format(format_, shape_, "input stager");
    if (format_.host == DType::u8) {
      DPTRAIN_CHECK(shape_[1] <= kernels::kMaxNormalisedChannels, "input stager: u8 batches of at most ",
                    kernels::kMaxNormalisedChannels, " channels, not ", shape_[1]);
    }
    // Nothing has used the staging buffer yet: the first stage() must not wait for a consumer.
    consumed_.record(ctx_->stream());
  }
  ~CudaInputStager() override { cudaStreamSynchronize(copy_stream_.get()); }

  void stage(const Tensor& host_images) override {
    DPTRAIN_CHECK(!staged_, "input stager: stage() twice without finish()");
    DPTRAIN_CHECK(
        host_images.device().is_cpu() && host_images.layout() == Layout::plain && host_images.dtype() == format_.host,
        "input stager: the batch must be a plain ", name_of(format_.host), " host tensor, not ",
        name_of(host_images.dtype()));
    check_shape(host_images, shape_, "input stager", "batch");
    // The previous transfer must be over before its source is overwritten or given back; it was queued
    // a whole step ago, so this wait is normally already satisfied.
    copied_.synchronize();
    in_flight_ = Tensor();  // the previous batch's buffer may go back to the loader now
    const void* source = host_images.raw();
    if (is_page_locked(source)) {
      // The loader filled page-locked memory (Backend::batch_memory): the copy stream reads it
      // directly, and the batch is held (its buffer not reused) until the copy is over.
      in_flight_ = host_images;
    } else {
      if (!pinned_) pinned_ = std::make_unique<PinnedBuffer>(host_images.bytes());
      std::memcpy(pinned_->data(), source, host_images.bytes());
      source = pinned_->data();
    }
    // The compute stream must have finished reading the staging buffer of the previous batch.
    consumed_.make_wait(copy_stream_.get());
    DPTRAIN_CUDA_CHECK(
        cudaMemcpyAsync(staging_.raw(), source, host_images.bytes(), cudaMemcpyHostToDevice, copy_stream_.get()));
    copied_.record(copy_stream_.get());
    staged_ = true;
  }

  void finish(Tensor& images) override {
    DPTRAIN_CHECK(staged_, "input stager: finish() without a staged batch");
    DPTRAIN_CHECK(
        images.device() == Device::cuda(ctx_->device()) && images.numel() == shape_.numel() &&
            (images.layout() == Layout::plain || (images.layout() == Layout::nhwc && images.shape() == shape_)),
        "input stager: the input tensor ", images.shape().to_string(), " (", layout_name(images.layout()), ") on ",
        images.device().to_string(), " does not take a batch of ", shape_.to_string());
    // NHWC images (the activation layout of 16-bit runs) are written transposed by the same pass.
    const bool nhwc = images.layout() == Layout::nhwc;
    copied_.make_wait(ctx_->stream());
    if (format_.host == DType::u8) {
      // The loader cropped and flipped; the normalisation (and the rounding to the activation type)
      // happens here, on a quarter of the bytes a host-normalised f32 batch would have crossed PCIe in.
      const InputNormalisation& n = format_.normalisation;
      kernels::normalise_bytes(staging_.data<std::uint8_t>(), images.raw(), images.dtype(), images.numel(),
                               shape_[2] * shape_[3], static_cast<int>(shape_[1]), n.mean.data(), n.stddev.data(), nhwc,
                               ctx_->stream());
    } else if (nhwc) {
      kernels::transpose_samples(staging_.raw(), DType::f32, images.raw(), images.dtype(), shape_[0], shape_[1],
                                 shape_[2] * shape_[3], ctx_->stream());
    } else {
      kernels::convert(staging_.raw(), DType::f32, images.raw(), images.dtype(), images.numel(), ctx_->stream());
    }
    consumed_.record(ctx_->stream());
    staged_ = false;
  }

 private:
  CudaContextPtr ctx_;
  Shape shape_;
  InputFormat format_;
  Stream copy_stream_;
  std::unique_ptr<PinnedBuffer> pinned_;  // for pageable batches only: made at the first one
  Tensor staging_;
  Tensor in_flight_;  // a page-locked batch the copy stream may still read
  Event copied_, consumed_;
  bool staged_ = false;
};
}  // namespace

std::unique_ptr<InputStager> make_input_stager(const CudaContextPtr& ctx, const Shape& shape,
                                               const InputFormat& format) {
  return std::make_unique<CudaInputStager>(ctx, shape, format);
}

}  // namespace dptrain::cuda
