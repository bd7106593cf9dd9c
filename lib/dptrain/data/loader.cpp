#include "dptrain/data/loader.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <filesystem>
#include <list>

#include "dptrain/core/error.hpp"
#include "dptrain/data/buffer_pool.hpp"
#include "dptrain/data/jpeg.hpp"
#include "dptrain/data/jpeg_crop.hpp"
#include "dptrain/data/shard.hpp"
#include "dptrain/hdf5/lock.hpp"

namespace dptrain::data {

// One global batch of this rank being prepared: workers fill its samples in any order and count them.
struct Loader::Slot {
  Batch batch;
  std::vector<std::int64_t> samples;  // B sample indices; the padding of a short batch repeats real ones
  int done = 0;
};

// The shards opened so far. Every member is touched only under h5::global_mutex(). A direct reader
// (pread at its offsets) stays once opened: it holds only its offsets and labels (12 bytes a
// sample) and, while it is among the most recently used, a descriptor. An HDF5 reader holds HDF5
// ids and is dropped when it falls off the most-recently-used list. A worker reading outside the
// lock holds its own reference (to the reader, or to the descriptor), so an eviction meanwhile does
// not close what it reads; whoever drops the last reference to a reader closes it under the lock.
struct Loader::ShardCache {
  std::vector<std::shared_ptr<ShardReader>> readers;    // by shard index; null: not open
  std::list<std::size_t> open;                          // shards holding a file, most recently used first
  std::vector<std::list<std::size_t>::iterator> where;  // each listed shard's place in `open`
  std::vector<char> listed;
  std::vector<std::string> read_paths;  // each way of reading met so far, in order
  ~ShardCache() {
    h5::Lock lock(h5::global_mutex());
    readers.clear();
  }
};

namespace {
// Prefixes `path` to an error that does not name it already (an DPTRAIN_H5_CHECK failure names the call).
[[noreturn]] void rethrow_naming(const std::string& path, const std::string& doing, const Error& e) {
  const std::string message = e.what();
  if (message.find(path) != std::string::npos) throw e;
  throw Error(detail::concat(path, ": ", doing, " failed: ", message));
}

// A quarter of the descriptors the process may open (each open shard holds one), at least 64: with
// the usual limits (1024 to 1M) a shuffled epoch over 1024 shards reopens none or few of them.
int default_open_shard_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 4096;
  return static_cast<int>(std::clamp<rlim_t>(limit.rlim_cur / 4, 64, 4096));
}

// Closes a reader's HDF5 ids under the HDF5 lock, whichever thread drops the last reference.
void close_under_lock(const ShardReader* reader) {
  h5::Lock lock(h5::global_mutex());
  delete reader;
}
}  // namespace

Loader::Loader(const Manifest& manifest, std::string directory, LoaderConfig config)
    : config_(std::move(config)),
      directory_(std::move(directory)),
      split_name_(config_.split),
      split_(manifest.split(config_.split)),
      height_(manifest.height),
      width_(manifest.width),
      channels_(manifest.channels),
      classes_(manifest.class_count()),
      encoding_(manifest.encoding),
      decode_scale_(encoding_ == "jpeg" ? jpeg_scale_for(manifest.height, manifest.width, config_.crop) : JpegScale{}),
      sampler_(split_.samples, config_.seed, config_.training),
      augmenter_(AugmentConfig{config_.crop, config_.pad, config_.training, config_.flip, manifest.mean,
                               manifest.stddev, config_.seed},
                 decode_scale_.scaled(manifest.height), decode_scale_.scaled(manifest.width), manifest.channels),
      shards_(std::make_unique<ShardCache>()) {
  const LoaderConfig& c = config_;
  DPTRAIN_CHECK(c.batch > 0, "the per-rank batch size must be positive, not ", c.batch);
  DPTRAIN_CHECK(c.world_size > 0 && c.rank >= 0 && c.rank < c.world_size, "rank ", c.rank,
                " is not one of the world's ", c.world_size, " ranks");
  DPTRAIN_CHECK(c.threads > 0 && c.prefetch > 0 && c.max_open_shards >= 0, "the loader needs at least one thread (",
                c.threads, "), one batch of prefetch (", c.prefetch, ") and one open shard (", c.max_open_shards, ")");
  DPTRAIN_CHECK(encoding_ == "raw" || encoding_ == "jpeg", directory_, ": dataset encoding '", encoding_,
                "' is neither 'raw' nor 'jpeg'");
  DPTRAIN_CHECK(split_.samples > 0, directory_, ": split '", split_name_, "' holds no samples");
  DPTRAIN_CHECK(!c.training || !drop_last() || split_.samples >= global_batch(), directory_, ": split '", split_name_,
                "' has ", split_.samples, " samples, fewer than one global batch of ", global_batch(), " (", c.batch,
                " per rank x ", c.world_size, " ranks); use a smaller batch");
  for (std::size_t s = 0; s < split_.shards.size(); ++s) {
    shard_firsts_.push_back(split_.shards[s].first_sample);
    expected_.push_back(expected_shard_header(manifest, split_name_, s));
  }
  shards_->readers.resize(split_.shards.size());
  shards_->where.resize(split_.shards.size());
  shards_->listed.assign(split_.shards.size(), 0);
  max_open_ = c.max_open_shards > 0 ? c.max_open_shards : default_open_shard_limit();
  // The batches being prepared, the one the trainer holds and the one it stages next come back.
  DPTRAIN_CHECK(c.images == DType::f32 || c.images == DType::u8, "the loader writes f32 or u8 images, not ",
                name_of(c.images));
  image_buffers_ = BufferPool::create(
      static_cast<std::size_t>(augmenter_.output_size()) * size_of(c.images) * static_cast<std::size_t>(c.batch),
      static_cast<std::size_t>(c.prefetch) + 3, c.image_memory);
  image_buffers_->reserve(static_cast<std::size_t>(c.prefetch) + 3);  // up front: BufferPool::reserve
  next_item_ = c.batch;                                               // no batch being handed out yet
}

Loader::~Loader() { stop_workers(); }

bool Loader::drop_last() const { return config_.drop_last.value_or(config_.training); }

std::int64_t Loader::global_batch() const { return static_cast<std::int64_t>(config_.batch) * config_.world_size; }

std::int64_t Loader::steps_per_epoch() const {
  return Sampler::steps_per_epoch(split_.samples, global_batch(), drop_last());
}

bool Loader::cursor_has_batch() {
  const std::int64_t size = split_.samples;
  const bool fits = drop_last() ? cursor_position_ + global_batch() <= size : cursor_position_ < size;
  if (fits) return true;
  if (!config_.training) return false;  // evaluation: one pass
  ++cursor_epoch_;                      // training runs on forever; the constructor made sure an epoch holds a batch
  cursor_position_ = 0;
  return true;
}

bool Loader::has_work() {
  if (error_) return false;
  if (!slots_.empty() && next_item_ < config_.batch) return true;
  return static_cast<int>(slots_.size()) < config_.prefetch && cursor_has_batch();
}

void Loader::create_slot() {
  const int b = config_.batch;
  auto slot = std::make_unique<Slot>();
  Batch& batch = slot->batch;
  batch.epoch = cursor_epoch_;
  batch.position = cursor_position_;
  batch.first_sample = cursor_position_ + static_cast<std::int64_t>(config_.rank) * b;
  slot->samples = sampler_.rank_slice(cursor_epoch_, cursor_position_, b, config_.rank);
  batch.valid = static_cast<int>(slot->samples.size());
  if (slot->samples.empty()) {
    // This rank has nothing left in the epoch's last global batch but must still run the step.
    slot->samples.push_back(sampler_.sample_at(cursor_epoch_, split_.samples - 1));
  }
  const std::size_t real = slot->samples.size();
  for (std::size_t j = real; j < static_cast<std::size_t>(b); ++j) slot->samples.push_back(slot->samples[j % real]);
  const int s = augmenter_.crop();
  batch.images = Tensor::adopt(image_buffers_->take(), Shape{b, channels_, s, s}, config_.images, Device::cpu());
  batch.labels = Tensor::empty(Shape{b}, DType::i32);
  cursor_position_ += global_batch();
  slots_.push_back(std::move(slot));
  next_item_ = 0;
}

std::string Loader::read_path() const {
  h5::Lock lock(h5::global_mutex());
  std::string joined;
  for (const std::string& p : shards_->read_paths) joined += (joined.empty() ? "" : "; ") + p;
  return joined;
}

std::shared_ptr<ShardReader> Loader::open_shard(std::size_t shard) {
  ShardCache& cache = *shards_;
  std::shared_ptr<ShardReader>& slot = cache.readers[shard];
  if (!slot) {
    const ShardInfo& info = split_.shards[shard];
    const std::string path = (std::filesystem::path(directory_) / info.file).string();
    try {
      // No chunk cache: every image is one chunk read once per epoch, so caching only costs memory
      // (up to the cache size per open shard); without it HDF5 reads a chunk straight into our buffer.
      slot = std::shared_ptr<ShardReader>(new ShardReader(path, expected_[shard], 0), close_under_lock);
    } catch (const Error& e) {
      rethrow_naming(path, "opening the shard", e);
    }
    auto& paths = cache.read_paths;
    if (std::find(paths.begin(), paths.end(), slot->read_path()) == paths.end()) paths.push_back(slot->read_path());
  }
  std::shared_ptr<ShardReader> reader = slot;  // before an eviction below could drop the slot's
  if (cache.listed[shard]) {
    cache.open.splice(cache.open.begin(), cache.open, cache.where[shard]);
    return reader;
  }
  cache.open.push_front(shard);
  cache.where[shard] = cache.open.begin();
  cache.listed[shard] = 1;
  if (static_cast<int>(cache.open.size()) > max_open_) {
    const std::size_t victim = cache.open.back();  // never `shard`: that is at the front
    cache.open.pop_back();
    cache.listed[victim] = 0;
    if (cache.readers[victim]->reads_directly()) {
      cache.readers[victim]->close_file();
    } else {
      cache.readers[victim].reset();
    }
  }
  return reader;
}

void Loader::augment(const std::uint8_t* hwc, const CropDraw& draw, void* image) const {
  if (config_.images == DType::u8) {
    augmenter_.apply_bytes(hwc, draw, static_cast<std::uint8_t*>(image));
  } else {
    augmenter_.apply(hwc, draw, static_cast<float*>(image));
  }
}

void Loader::produce(std::int64_t epoch, std::int64_t sample, void* image, std::int32_t* label) {
  const auto shard = static_cast<std::size_t>(std::upper_bound(shard_firsts_.begin(), shard_firsts_.end(), sample) -
                                              shard_firsts_.begin() - 1);
  const std::int64_t local = sample - split_.shards[shard].first_sample;
  const bool raw = encoding_ == "raw";
  // Per thread, so a sample costs no allocation once the buffers have grown.
  thread_local std::vector<std::uint8_t> pixels;
  thread_local std::vector<std::uint8_t> encoded;
  if (raw) {
    pixels.resize(static_cast<std::size_t>(height_) * static_cast<std::size_t>(width_) *
                  static_cast<std::size_t>(channels_));
  }
  std::shared_ptr<ShardReader> reader;
  DirectRead direct;
  {
    h5::Lock lock(h5::global_mutex());
    reader = open_shard(shard);
    *label = reader->labels()[static_cast<std::size_t>(local)];
    try {
      if (reader->reads_directly()) {
        direct = reader->direct_read(local);  // read below, without the lock
      } else if (raw) {
        reader->read_image(local, pixels.data());  // H5Dread: only under the lock
      } else {
        reader->read_jpeg(local, encoded);
      }
    } catch (const Error& e) {
      rethrow_naming(reader->path(), detail::concat("reading sample ", local), e);
    }
  }
  // Outside the lock: pread of the pixels, decoding and augmentation overlap across threads.
  const std::string& path = reader->path();
  if (direct.file) {
    try {
      if (!raw) encoded.resize(direct.bytes);  // at most max_jpeg_bytes(): checked when the shard opened
      direct.read(raw ? pixels.data() : encoded.data());
    } catch (const Error& e) {
      rethrow_naming(path, detail::concat("reading sample ", local), e);
    }
  }
  if (raw) {
    augment(pixels.data(), augmenter_.draw(epoch, sample), image);
    return;
  }
  // One libjpeg decompressor and one pixel buffer per worker thread, made once. Only the pixels the
  // crop reads are decoded (JpegCropDecoder), the same bytes a full decode gives them.
  thread_local JpegCropDecoder decoder;
  thread_local Image decoded;
  const CropDraw draw = augmenter_.draw(epoch, sample);
  // The geometry at the decode scale: the decoder refuses a header that gives another before decoding.
  const int h = decode_scale_.scaled(height_), w = decode_scale_.scaled(width_);
  try {
    decoder.decode(encoded.data(), encoded.size(), channels_, decode_scale_, augmenter_.window(draw), path, decoded, h,
                   w);
  } catch (const Error& e) {
    // The decoder names the file; the sample is added here, so that a sample costs no message.
    const std::string message = e.what();
    const bool named = message.compare(0, path.size(), path) == 0;
    throw Error(detail::concat(path, " (sample ", local, ")", named ? message.substr(path.size()) : ": " + message));
  }
  DPTRAIN_CHECK(
      decoded.height == h && decoded.width == w && decoded.channels == channels_, path, ": sample ", local,
      " decodes to ", decoded.height, "x", decoded.width, "x", decoded.channels, " but the manifest says ", height_,
      "x", width_, "x", channels_,
      decode_scale_ == JpegScale{} ? std::string() : detail::concat(" (", h, "x", w, " at the decode scale)"));
  augment(decoded.pixels.data(), draw, image);
}

void Loader::worker() {
  std::unique_lock lock(mutex_);
  for (;;) {
    work_ready_.wait(lock, [&] { return stopping_ || has_work(); });
    if (stopping_) return;
    bool assigned = false;
    try {
      if (next_item_ == config_.batch) create_slot();
      Slot* slot = slots_.back().get();  // stays put: it cannot be handed out before done == B
      const int j = next_item_++;
      ++in_flight_;
      assigned = true;
      const std::int64_t per_sample = augmenter_.output_size();
      void* image = static_cast<std::uint8_t*>(slot->batch.images.raw()) +
                    static_cast<std::size_t>(j * per_sample) * size_of(config_.images);
      std::int32_t* label = slot->batch.labels.data<std::int32_t>() + j;
      const std::int64_t epoch = slot->batch.epoch, sample = slot->samples[static_cast<std::size_t>(j)];
      lock.unlock();
      produce(epoch, sample, image, label);
      lock.lock();
      --in_flight_;
      assigned = false;
      // After a failure next() waits for the samples in flight, to hand out the batches they complete.
      if (++slot->done == config_.batch || error_) batch_ready_.notify_all();
    } catch (...) {
      if (!lock.owns_lock()) lock.lock();
      if (assigned) --in_flight_;
      if (!error_) error_ = std::current_exception();  // the first failure is the one to report
      batch_ready_.notify_all();
    }
  }
}

void Loader::start_workers() {
  for (int t = 0; t < config_.threads; ++t) workers_.emplace_back([this] { worker(); });
}

void Loader::stop_workers() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
  std::lock_guard lock(mutex_);
  stopping_ = false;
}

Batch Loader::next() {
  std::unique_lock lock(mutex_);
  if (workers_.empty()) start_workers();  // they wait for the lock we hold
  // Batches completed before a failure are still handed out, in order, so an error surfaces at the
  // batch that needs the bad shard, whatever the number of threads.
  const auto front_ready = [&] { return !slots_.empty() && slots_.front()->done == config_.batch; };
  batch_ready_.wait(lock, [&] {
    return front_ready() || (error_ && in_flight_ == 0) || (!error_ && slots_.empty() && !cursor_has_batch());
  });
  if (!front_ready() && error_) std::rethrow_exception(error_);
  if (slots_.empty()) {  // evaluation is over
    Batch end;
    const int s = augmenter_.crop();
    end.images = Tensor::empty(Shape{0, channels_, s, s}, config_.images);
    end.labels = Tensor::empty(Shape{0}, DType::i32);
    end.epoch = cursor_epoch_;
    end.position = end.first_sample = split_.samples;
    end.end = true;
    return end;
  }
  std::unique_ptr<Slot> slot = std::move(slots_.front());
  slots_.pop_front();
  work_ready_.notify_all();  // room for one more batch ahead
  return std::move(slot->batch);
}

void Loader::seek(std::int64_t epoch, std::int64_t position) {
  DPTRAIN_CHECK(epoch >= 0 && position >= 0, "cannot seek to epoch ", epoch, ", position ", position);
  stop_workers();  // nothing is half-written into a batch once they are gone
  std::lock_guard lock(mutex_);
  slots_.clear();
  next_item_ = config_.batch;
  in_flight_ = 0;
  cursor_epoch_ = epoch;
  cursor_position_ = position;
  error_ = nullptr;
}

}  // namespace dptrain::data
