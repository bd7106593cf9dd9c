#pragma once
// The per-rank input pipeline: the rank's slice of each global batch (Sampler), read from the HDF5
// shards that hold those samples (opened on first use, never all at start-up), decoded when the
// dataset is JPEG, augmented (Augmenter), and assembled into complete batches by prefetch threads
// while the trainer computes on the previous one.
//
// Threads split each batch by sample and work up to `prefetch` batches ahead. Every sample's pixels
// depend only on (seed, epoch, sample index), so the batches are identical for any number of threads,
// ranks, or after a seek. HDF5 calls are serialised by h5::global_mutex() (HDF5 is not thread safe);
// raw shards in the converter's layout are read with pread outside it (see ShardReader), and
// decoding and augmentation run outside it.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "dptrain/core/host_memory.hpp"
#include "dptrain/core/tensor.hpp"
#include "dptrain/data/augment.hpp"
#include "dptrain/data/jpeg.hpp"
#include "dptrain/data/manifest.hpp"
#include "dptrain/data/sampler.hpp"
#include "dptrain/data/shard.hpp"

namespace dptrain::data {

class BufferPool;

struct LoaderConfig {
  std::string split = "train";
  int batch = 32;  // per rank (B); the global batch is B * world_size
  int rank = 0, world_size = 1;
  bool training = true;  // shuffle, random crop and flip, endless epochs; off: stored order, centre crop, one pass
  int crop = 0;          // S; 0 = the stored size (the shorter side)
  int pad = 0;           // training: zero padding before the random crop (CIFAR: 4)
  bool flip = true;      // training: horizontal flip with p = 0.5
  int threads = 2;       // prefetch workers
  int prefetch = 2;      // batches prepared ahead of the one the trainer holds
  std::uint64_t seed = 0;
  // Drop the last incomplete global batch of an epoch. Unset: drop in training (every step has the
  // same size), keep in evaluation (every sample is scored once; the batch is padded, see Batch::valid).
  std::optional<bool> drop_last;
  // Shards kept open at once (least recently used closed first): a shuffled epoch touches every shard,
  // and each open shard holds a descriptor. 0: a quarter of the process's descriptor limit, 64 to 4096.
  // Shards read with pread keep their index when closed, so reopening one is a plain open().
  int max_open_shards = 0;
  // The element type of Batch::images: f32, normalised here (the CPU backend), or u8, cropped and
  // flipped but not normalised, for a device that normalises (input_format() says how).
  DType images = DType::f32;
  // Where the batches' images live: page-locked memory for a GPU (Backend::batch_memory), which the
  // input stager copies to the device from directly.
  HostMemory image_memory = pageable_host_memory();
};

struct Batch {
  Tensor images;  // host [B, C, S, S], plain: f32, or u8 when LoaderConfig::images says so
  Tensor labels;  // host int32 [B]
  std::int64_t epoch = 0;
  std::int64_t position = 0;      // global position (within the epoch) of this global batch's first sample
  std::int64_t first_sample = 0;  // global position of this rank's first sample (keys dropout)
  // Samples of this rank's batch that are real. The last global batch of an evaluation pass is padded
  // to B by repeating samples; the padding is not to be scored. A rank can get valid == 0 in that
  // batch while others still have samples (every rank runs the same number of steps).
  int valid = 0;
  bool end = false;  // no more data (evaluation only): valid == 0 and empty tensors
};

class Loader {
 public:
  // Reads nothing yet: shards are opened by the workers when a batch first needs them, and the
  // workers start at the first next() (so a seek() right after construction reads nothing twice).
  Loader(const Manifest& manifest, std::string directory, LoaderConfig config);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // The next batch of this rank; blocks until it is complete. A failure in a worker (a missing or
  // corrupt shard) is rethrown here, with its message, and again on every later call.
  Batch next();
  // Restarts at global `position` of `epoch` (a resume): the next batch starts there. Positions need
  // not be multiples of the global batch (a job resumed on another number of ranks).
  void seek(std::int64_t epoch, std::int64_t position);

  std::int64_t steps_per_epoch() const;
  std::int64_t samples() const { return sampler_.size(); }
  const LoaderConfig& config() const { return config_; }
  int crop() const { return augmenter_.crop(); }
  // What an InputStager needs to turn this loader's batches into the net's input.
  InputFormat input_format() const { return {config_.images, augmenter_.normalisation()}; }
  // How the shards opened so far are read (ShardReader::read_path(), each distinct one, "; " apart);
  // empty before the first batch.
  std::string read_path() const;

 private:
  struct Slot;
  struct ShardCache;

  bool drop_last() const;
  std::int64_t global_batch() const;
  // Moves the cursor to the next epoch when the current one has no batch left (training) and says
  // whether a batch starts at the cursor.
  bool cursor_has_batch();
  bool has_work();
  void create_slot();
  // The reader of shard `shard`, opened if needed; the caller holds h5::global_mutex().
  std::shared_ptr<ShardReader> open_shard(std::size_t shard);
  // Writes sample `sample` of `epoch` into `image` (C*S*S elements of config_.images).
  void produce(std::int64_t epoch, std::int64_t sample, void* image, std::int32_t* label);
  void augment(const std::uint8_t* hwc, const CropDraw& draw, void* image) const;
  void worker();
  void start_workers();
  void stop_workers();

  LoaderConfig config_;
  std::string directory_;
  std::string split_name_;
  SplitInfo split_;
  int height_, width_, channels_, classes_;
  std::string encoding_;
  // JPEG: images at least twice the crop are decoded at reduced size (jpeg_scale_for) and augmented
  // at that size; 1/1 otherwise and for raw shards.
  JpegScale decode_scale_;
  Sampler sampler_;
  Augmenter augmenter_;
  std::vector<std::int64_t> shard_firsts_;  // each shard's first global sample, ascending
  std::vector<ShardHeader> expected_;       // each shard's header as the manifest describes it
  std::unique_ptr<ShardCache> shards_;
  int max_open_ = 64;
  std::shared_ptr<BufferPool> image_buffers_;  // batch images, recycled

  mutable std::mutex mutex_;
  std::condition_variable work_ready_, batch_ready_;
  std::vector<std::thread> workers_;
  bool stopping_ = false;
  std::exception_ptr error_;
  // The schedule: the next global batch to hand to a worker starts at (cursor_epoch_, cursor_position_).
  std::int64_t cursor_epoch_ = 0, cursor_position_ = 0;
  std::deque<std::unique_ptr<Slot>> slots_;  // batches being prepared or ready, oldest first
  int next_item_ = 0;  // next sample of slots_.back() to give a worker; B when it has given them all
  int in_flight_ = 0;  // samples handed to workers and not finished
};

}  // namespace dptrain::data
