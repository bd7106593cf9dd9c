#include "dptrain/data/loader.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "dptrain/core/error.hpp"
#include "dptrain/core/input_format.hpp"
#include "dptrain/data/augment.hpp"
#include "dptrain/data/buffer_pool.hpp"
#include "dptrain/data/jpeg.hpp"
#include "dptrain/data/manifest.hpp"
#include "dptrain/data/sampler.hpp"
#include "dptrain/data/shard.hpp"
#include "support/error_testing.hpp"
#include "support/temp_dir.hpp"

using namespace dptrain;
using namespace dptrain::data;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {
constexpr int kClasses = 3;

// A fresh directory per test, removed at the end.
struct TempDir : testing::TempDir {
  TempDir() : testing::TempDir("dptrain_loader_test") {}
};

// The stored pixels: every (sample, row, column, channel) of an 8x8 image has its own value, so a
// wrong offset, flip or sample shows up as a wrong number.
std::uint8_t pixel(std::int64_t sample, int y, int x, int c) {
  return static_cast<std::uint8_t>((sample * 67 + c * 85 + y * 8 + x) % 256);
}
std::int32_t label_of(std::int64_t sample) { return static_cast<std::int32_t>((sample * 7 + 1) % kClasses); }

std::vector<std::uint8_t> image_of(std::int64_t sample, int h, int w, int c) {
  std::vector<std::uint8_t> v;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int ch = 0; ch < c; ++ch) v.push_back(pixel(sample, y, x, ch));
  return v;
}

ShardHeader header_for(int index, int count, std::int64_t first, std::int64_t samples, int h, int w, int c,
                       const std::string& encoding) {
  ShardHeader header;
  header.split = "train";
  header.shard_index = index;
  header.shard_count = count;
  header.first_sample = first;
  header.samples = samples;
  header.height = h;
  header.width = w;
  header.channels = c;
  header.encoding = encoding;
  header.classes = kClasses;
  return header;
}

void write_shard(const std::string& path, const ShardHeader& header) {
  std::vector<std::uint8_t> pixels;
  std::vector<std::int32_t> labels;
  std::vector<std::vector<std::uint8_t>> jpegs;
  for (std::int64_t i = 0; i < header.samples; ++i) {
    const std::int64_t sample = header.first_sample + i;
    auto img = image_of(sample, static_cast<int>(header.height), static_cast<int>(header.width),
                        static_cast<int>(header.channels));
    if (header.encoding == "jpeg") {
      Image image{static_cast<int>(header.height), static_cast<int>(header.width), static_cast<int>(header.channels),
                  img};
      jpegs.push_back(encode_jpeg(image, 95));
    } else {
      pixels.insert(pixels.end(), img.begin(), img.end());
    }
    labels.push_back(label_of(sample));
  }
  if (header.encoding == "jpeg") {
    write_jpeg_shard(path, header, jpegs, labels.data());
  } else {
    write_raw_shard(path, header, pixels.data(), labels.data());
  }
}

// Three shards of 7, 5 and 9 samples in split "train", mean 0 and std 1 (outputs are the pixels).
Manifest write_dataset(const fs::path& dir, int h, int w, int c, const std::string& encoding = "raw",
                       const std::vector<std::int64_t>& sizes = {7, 5, 9}) {
  Manifest m;
  m.name = "loader-test";
  for (int k = 0; k < kClasses; ++k) m.classes.push_back(ClassInfo{k, std::to_string(k), "class " + std::to_string(k)});
  m.height = h;
  m.width = w;
  m.channels = c;
  m.encoding = encoding;
  m.mean.assign(static_cast<std::size_t>(c), 0.0);
  m.stddev.assign(static_cast<std::size_t>(c), 1.0);
  SplitInfo split;
  const int count = static_cast<int>(sizes.size());
  for (int i = 0; i < count; ++i) {
    const std::string file = shard_file_name("train", i, count);
    const std::string path = (dir / file).string();
    write_shard(path, header_for(i, count, split.samples, sizes[static_cast<std::size_t>(i)], h, w, c, encoding));
    split.shards.push_back(ShardInfo{file, sizes[static_cast<std::size_t>(i)], split.samples, file_checksum(path)});
    split.samples += sizes[static_cast<std::size_t>(i)];
  }
  m.splits["train"] = split;
  m.write(dir.string());
  return m;
}

std::string shard_path(const fs::path& dir, int index) { return (dir / shard_file_name("train", index, 3)).string(); }

float at(const Batch& b, int n, int c, int y, int x) {
  const auto& s = b.images.shape();
  return b.images.data<float>()[((n * s[1] + c) * s[2] + y) * s[3] + x];
}

// What a training sample must look like, computed here from the definition (pad, crop, flip) and
// the stored pixel formula, independently of the Augmenter's loops. Mean 0, std 1.
float expected_pixel(std::int64_t sample, const CropDraw& d, int crop, int pad, int h, int w, int c, int y, int x) {
  const int sy = d.y + y - pad;
  const int column_in_crop = d.flip ? crop - 1 - x : x;
  const int sx = d.x + column_in_crop - pad;
  if (sy < 0 || sy >= h || sx < 0 || sx >= w) return 0.f;
  return static_cast<float>(pixel(sample, sy, sx, c));
}

bool same_batch(const Batch& a, const Batch& b) {
  return a.epoch == b.epoch && a.position == b.position && a.first_sample == b.first_sample && a.valid == b.valid &&
         a.end == b.end && a.images.shape() == b.images.shape() &&
         std::memcmp(a.images.raw(), b.images.raw(), a.images.bytes()) == 0 &&
         std::memcmp(a.labels.raw(), b.labels.raw(), a.labels.bytes()) == 0;
}

std::vector<Batch> read_batches(Loader& loader, int count) {
  std::vector<Batch> batches;
  for (int i = 0; i < count; ++i) batches.push_back(loader.next());
  return batches;
}

LoaderConfig evaluation_config(int batch, int crop) {
  LoaderConfig c;
  c.training = false;
  c.batch = batch;
  c.crop = crop;
  return c;
}

LoaderConfig training_config(int batch, int crop, int pad, std::uint64_t seed) {
  LoaderConfig c;
  c.training = true;
  c.batch = batch;
  c.crop = crop;
  c.pad = pad;
  c.flip = true;
  c.seed = seed;
  return c;
}

using testing::error_of;
}  // namespace

TEST_CASE("augmentation crops, flips, pads and normalises as drawn", "[data][augment]") {
  // 3 x 4 x 2: value 10*y + x + 100*c.
  std::vector<std::uint8_t> image;
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 4; ++x)
      for (int c = 0; c < 2; ++c) image.push_back(static_cast<std::uint8_t>(10 * y + x + 100 * c));
  AugmentConfig config;
  config.crop = 2;
  config.random = true;
  config.mean = {10, 20};
  config.stddev = {2, 4};
  const Augmenter crop2(config, 3, 4, 2);
  REQUIRE(crop2.output_size() == 8);
  std::vector<float> out(8);
  crop2.apply(image.data(), CropDraw{1, 1, false}, out.data());
  CHECK(out == std::vector<float>{0.5f, 1.f, 5.5f, 6.f, 22.75f, 23.f, 25.25f, 25.5f});
  crop2.apply(image.data(), CropDraw{1, 1, true}, out.data());
  CHECK(out == std::vector<float>{1.f, 0.5f, 6.f, 5.5f, 23.f, 22.75f, 25.5f, 25.25f});

  // Zero padding is pixel value 0 before normalisation: (0 - 10) / 2 = -5 in channel 0.
  config.crop = 3;
  config.pad = 1;
  const Augmenter padded(config, 3, 4, 2);
  std::vector<float> out3(18);
  padded.apply(image.data(), CropDraw{0, 0, false}, out3.data());
  const std::vector<float> channel0(out3.begin(), out3.begin() + 9);
  CHECK(channel0 == std::vector<float>{-5.f, -5.f, -5.f, -5.f, -5.f, -4.5f, -5.f, 0.f, 0.5f});
  CHECK(out3[9] == -5.f);  // channel 1 padding: (0 - 20) / 4

  // Evaluation: the centred window, never flipped, whatever the epoch and sample.
  config.random = false;
  config.crop = 2;
  const Augmenter centre(config, 3, 4, 2);
  for (std::int64_t sample : {0, 1, 99}) {
    const CropDraw d = centre.draw(3, sample);
    CHECK(d.y == 0);
    CHECK(d.x == 1);
    CHECK_FALSE(d.flip);
  }

  config.crop = 5;
  CHECK_THROWS_WITH(Augmenter(config, 3, 4, 2), Contains("does not fit"));
  config.crop = 2;
  config.mean = {10};
  CHECK_THROWS_AS(Augmenter(config, 3, 4, 2), Error);
}

TEST_CASE("augmentation reads only the pixels of its window", "[data][augment]") {
  AugmentConfig config;
  config.crop = 5;
  config.pad = 2;
  config.random = true;
  config.mean = {1, 2, 3};
  config.stddev = {2, 3, 4};
  config.seed = 9;
  const Augmenter augmenter(config, 7, 9, 3);
  const auto image = image_of(4, 7, 9, 3);
  std::vector<float> want(static_cast<std::size_t>(augmenter.output_size())), got(want.size());
  for (std::int64_t sample = 0; sample < 200; ++sample) {
    const CropDraw d = augmenter.draw(0, sample);
    const PixelWindow w = augmenter.window(d);
    CHECK(w.top == std::max(0, d.y - 2));
    CHECK(w.left == std::max(0, d.x - 2));
    CHECK(w.top + w.height == std::min(7, d.y - 2 + 5));
    CHECK(w.left + w.width == std::min(9, d.x - 2 + 5));
    // Everything outside the window overwritten: the output must not change.
    auto scribbled = image;
    for (int y = 0; y < 7; ++y)
      for (int x = 0; x < 9; ++x)
        if (y < w.top || y >= w.top + w.height || x < w.left || x >= w.left + w.width)
          for (int c = 0; c < 3; ++c) scribbled[static_cast<std::size_t>((y * 9 + x) * 3 + c)] = 0xEE;
    augmenter.apply(image.data(), d, want.data());
    augmenter.apply(scribbled.data(), d, got.data());
    CHECK(want == got);
  }
}

TEST_CASE("bytes cropped for a device and normalised there are the floats the host writes", "[data][augment]") {
  // The GPU hand-over: apply_bytes() + normalise_planes() must reproduce apply() bit for bit, for
  // padding, flips, odd channel counts and a mean/std whose division does not round trivially.
  for (int channels : {1, 2, 3}) {
    INFO(channels << " channels");
    AugmentConfig config;
    config.crop = 6;
    config.pad = 2;
    config.random = true;
    config.seed = 11;
    for (int c = 0; c < channels; ++c) {
      config.mean.push_back(123.675 - 7.3 * c);
      config.stddev.push_back(58.395 + 0.7 * c);
    }
    const Augmenter augmenter(config, 7, 9, channels);
    const auto image = image_of(5, 7, 9, channels);
    const auto n = static_cast<std::size_t>(augmenter.output_size());
    std::vector<float> host(n), device(n);
    std::vector<std::uint8_t> bytes(n);
    int flipped = 0, padded = 0;
    for (std::int64_t sample = 0; sample < 300; ++sample) {
      const CropDraw d = augmenter.draw(3, sample);
      flipped += d.flip;
      padded += d.y < 2 || d.x < 2 || d.y + 6 > 9 || d.x + 6 > 11;
      augmenter.apply(image.data(), d, host.data());
      augmenter.apply_bytes(image.data(), d, bytes.data());
      normalise_planes(bytes.data(), device.data(), 1, 36, augmenter.normalisation());
      REQUIRE(std::memcmp(host.data(), device.data(), n * sizeof(float)) == 0);
      // The bytes themselves are the crop of the stored image (padding 0), as the definition says.
      for (int c = 0; c < channels; ++c)
        for (int y = 0; y < 6; ++y)
          for (int x = 0; x < 6; ++x) {
            const int sy = d.y + y - 2, sx = d.x + (d.flip ? 5 - x : x) - 2;
            const bool inside = sy >= 0 && sy < 7 && sx >= 0 && sx < 9;
            REQUIRE(bytes[static_cast<std::size_t>((c * 6 + y) * 6 + x)] == (inside ? pixel(5, sy, sx, c) : 0));
          }
    }
    CHECK(flipped > 100);
    CHECK(padded > 100);
  }
}

TEST_CASE("crops whose rows are whole 32-byte lines, streamed out, are the crops of the definition",
          "[data][augment]") {
  // Rows of 16 floats (64 bytes) and of 32 bytes take the streamed write into a 32-byte aligned
  // buffer; the same buffer misaligned by 4 bytes takes the direct one. Both must be the definition,
  // bit for bit, with padding and flips.
  for (const int crop : {16, 32}) {
    INFO("crop " << crop);
    AugmentConfig config;
    config.crop = crop;
    config.pad = 3;
    config.random = true;
    config.seed = 5;
    config.mean = {123.675, 116.28, 103.53};
    config.stddev = {58.395, 57.12, 57.375};
    const int h = crop + 4, w = crop + 1;
    const Augmenter augmenter(config, h, w, 3);
    const auto image = image_of(6, h, w, 3);
    const auto n = static_cast<std::size_t>(augmenter.output_size());
    std::shared_ptr<void> memory(std::aligned_alloc(64, (n + 16) * sizeof(float)), std::free);
    float* aligned = static_cast<float*>(memory.get());
    std::vector<float> want(n);
    std::vector<std::uint8_t> want_bytes(n);
    int flipped = 0, padded = 0;
    for (std::int64_t sample = 0; sample < 100; ++sample) {
      const CropDraw d = augmenter.draw(1, sample);
      flipped += d.flip;
      padded += d.y < 3 || d.x < 3 || d.y + crop > h + 3 || d.x + crop > w + 3;
      for (int c = 0; c < 3; ++c)
        for (int y = 0; y < crop; ++y)
          for (int x = 0; x < crop; ++x) {
            const std::size_t i = (static_cast<std::size_t>(c) * crop + y) * crop + x;
            const float v = expected_pixel(6, d, crop, 3, h, w, c, y, x);
            want[i] = (v - static_cast<float>(config.mean[c])) / static_cast<float>(config.stddev[c]);
            want_bytes[i] = static_cast<std::uint8_t>(v);
          }
      for (float* out : {aligned, aligned + 1}) {
        augmenter.apply(image.data(), d, out);
        REQUIRE(std::memcmp(out, want.data(), n * sizeof(float)) == 0);
        auto* bytes = reinterpret_cast<std::uint8_t*>(out);
        augmenter.apply_bytes(image.data(), d, bytes);
        REQUIRE(std::memcmp(bytes, want_bytes.data(), n) == 0);
      }
    }
    CHECK(flipped > 20);
    CHECK(padded > 20);
  }
}

TEST_CASE("augmentation draws depend only on the seed, the epoch and the sample", "[data][augment]") {
  AugmentConfig config;
  config.crop = 6;
  config.random = true;
  config.mean = {0};
  config.stddev = {1};
  config.seed = 5;
  const Augmenter a(config, 8, 8, 1), b(config, 8, 8, 1);
  config.seed = 6;
  const Augmenter other_seed(config, 8, 8, 1);
  int flips = 0, same_across_epochs = 0, same_across_seeds = 0;
  std::map<int, int> ys, xs;
  for (std::int64_t sample = 0; sample < 2000; ++sample) {
    const CropDraw d = a.draw(0, sample), again = b.draw(0, sample), next_epoch = a.draw(1, sample);
    CHECK((d.y == again.y && d.x == again.x && d.flip == again.flip));
    const CropDraw o = other_seed.draw(0, sample);
    same_across_epochs += d.y == next_epoch.y && d.x == next_epoch.x && d.flip == next_epoch.flip;
    same_across_seeds += d.y == o.y && d.x == o.x && d.flip == o.flip;
    flips += d.flip;
    ys[d.y]++;
    xs[d.x]++;
  }
  // 3 x 3 offsets x 2 flips: a draw repeats by chance 1 time in 18 (about 111 of 2000).
  CHECK(same_across_epochs < 200);
  CHECK(same_across_seeds < 200);
  CHECK(flips > 900);
  CHECK(flips < 1100);
  CHECK(ys.size() == 3u);  // offsets 0, 1, 2 of an 8 - 6 + 1 range
  CHECK(xs.size() == 3u);
  for (const auto& [offset, count] : ys) CHECK(count > 550);
  config.flip = false;
  const Augmenter no_flip(config, 8, 8, 1);
  for (std::int64_t sample = 0; sample < 200; ++sample) CHECK_FALSE(no_flip.draw(0, sample).flip);
}

// Memory that records what it hands out and gets back, in place of a GPU's page-locked memory.
struct CountedMemory {
  std::mutex mutex;
  std::set<void*> live;
  int allocations = 0, releases = 0, foreign_releases = 0;
  std::size_t largest = 0;

  HostMemory host_memory() {
    HostMemory plain = pageable_host_memory();
    HostMemory memory;
    memory.allocate = [this, plain](std::size_t bytes) {
      void* buffer = plain.allocate(bytes);
      std::lock_guard lock(mutex);
      live.insert(buffer);
      ++allocations;
      largest = std::max(largest, bytes);
      return buffer;
    };
    memory.release = [this, plain](void* buffer) {
      {
        std::lock_guard lock(mutex);
        // Only what it handed out, once (counted, not asserted: a loader thread may release).
        if (live.erase(buffer) != 1) ++foreign_releases;
        ++releases;
      }
      plain.release(buffer);
    };
    memory.kind = "counted";
    return memory;
  }
  bool holds(const void* p) {
    std::lock_guard lock(mutex);
    return live.contains(const_cast<void*>(p));
  }
};

TEST_CASE("the loader fills its batches in the memory it is given, and gives all of it back", "[data][loader]") {
  TempDir dir;
  const Manifest m = write_dataset(dir.path, 8, 8, 3);
  CountedMemory memory;
  {
    LoaderConfig config = training_config(4, 6, 0, 3);
    config.images = DType::u8;
    config.image_memory = memory.host_memory();
    config.prefetch = 1;
    Loader loader(m, dir.path.string(), config);
    CHECK(memory.allocations == 4);  // prefetch + 3, up front on this thread
    Batch kept;
    for (int step = 0; step < 12; ++step) {
      Batch b = loader.next();
      INFO("step " << step);
      CHECK(memory.holds(b.images.raw()));
      if (step == 3) kept = b;  // a batch may outlive its step, and the loader
    }
    CHECK(memory.largest == std::size_t{4} * 3 * 6 * 6);  // one u8 batch of 4 crops 6x6x3
    // Recycled: a handful of buffers for 12 batches (prefetched, held, staged next).
    CHECK(memory.allocations >= 2);
    CHECK(memory.allocations <= 6);
    CHECK(memory.releases < memory.allocations);
  }
  CHECK(memory.releases == memory.allocations);
  CHECK(memory.foreign_releases == 0);
  CHECK(memory.live.empty());
}

TEST_CASE("a buffer pool gives back to its memory what it does not keep", "[data][loader]") {
  {
    CountedMemory reserved;
    auto pool = BufferPool::create(64, 3, reserved.host_memory());
    pool->reserve(2);
    CHECK(reserved.allocations == 2);
    const std::shared_ptr<void> a = pool->take(), b = pool->take();
    CHECK(reserved.allocations == 2);  // both came from the reserve
    CHECK(a.get() != b.get());
  }
  CountedMemory memory;
  auto pool = BufferPool::create(100, 1, memory.host_memory());
  {
    std::shared_ptr<void> a = pool->take(), b = pool->take(), c = pool->take();
    CHECK(memory.allocations == 3);
    CHECK(memory.holds(a.get()));
  }
  CHECK(memory.releases == 2);  // one kept for reuse
  pool->reserve(5);             // up to `keep` (1): nothing to allocate
  CHECK(memory.allocations == 3);
  std::shared_ptr<void> again = pool->take();
  CHECK(memory.allocations == 3);
  pool.reset();
  CHECK(memory.releases == 2);  // `again` still holds the pool
  again.reset();
  CHECK(memory.releases == 3);
  CHECK(memory.foreign_releases == 0);
  CHECK_THROWS_WITH(BufferPool::create(100, 1, HostMemory{}), Contains("needs memory to allocate and release"));
}

TEST_CASE("evaluation reads every sample back bit-exactly, in order, then ends", "[data][loader]") {
  for (int channels : {3, 1}) {
    INFO(channels << " channels");
    TempDir dir;
    const Manifest m = write_dataset(dir.path, 8, 8, channels);
    LoaderConfig config = evaluation_config(4, 8);
    Loader loader(m, dir.path.string(), config);
    CHECK(loader.steps_per_epoch() == 6);  // 21 samples, 4 a batch, the last one partial
    std::int64_t sample = 0;
    for (int step = 0; step < 6; ++step) {
      const Batch b = loader.next();
      REQUIRE(b.images.shape() == Shape{4, channels, 8, 8});
      REQUIRE(b.labels.shape() == Shape{4});
      CHECK(b.epoch == 0);
      CHECK(b.position == step * 4);
      CHECK(b.first_sample == step * 4);
      CHECK_FALSE(b.end);
      CHECK(b.valid == (step < 5 ? 4 : 1));
      for (int n = 0; n < 4; ++n) {
        // The padding of the last batch repeats its real sample (20).
        const std::int64_t s = n < b.valid ? sample + n : 20;
        CHECK(b.labels.data<std::int32_t>()[n] == label_of(s));
        int wrong = 0;
        for (int c = 0; c < channels; ++c)
          for (int y = 0; y < 8; ++y)
            for (int x = 0; x < 8; ++x) wrong += at(b, n, c, y, x) != static_cast<float>(pixel(s, y, x, c));
        CHECK(wrong == 0);
      }
      sample += b.valid;
    }
    CHECK(sample == 21);
    const Batch end = loader.next();
    CHECK(end.end);
    CHECK(end.valid == 0);
    CHECK(end.images.numel() == 0);
    CHECK(loader.next().end);  // and it stays over
  }
}

TEST_CASE("evaluation on several ranks scores every sample once; a rank past the end gets padding", "[data][loader]") {
  TempDir dir;
  const Manifest m = write_dataset(dir.path, 8, 8, 3);
  // 3 ranks x 6 = 18 a step: step 0 reads 0..17, step 1 has 18..20 for rank 0 and nothing for 1 and 2.
  std::multiset<std::int32_t> seen;
  std::vector<int> valid_in_last(3);
  for (int rank = 0; rank < 3; ++rank) {
    LoaderConfig config = evaluation_config(6, 8);
    config.rank = rank;
    config.world_size = 3;
    Loader loader(m, dir.path.string(), config);
    CHECK(loader.steps_per_epoch() == 2);
    for (int step = 0; step < 2; ++step) {
      const Batch b = loader.next();
      CHECK(b.position == step * 18);
      CHECK(b.first_sample == step * 18 + rank * 6);
      for (int n = 0; n < b.valid; ++n) {
        const std::int64_t s = b.first_sample + n;
        CHECK(at(b, n, 0, 0, 0) == static_cast<float>(pixel(s, 0, 0, 0)));
        CHECK(b.labels.data<std::int32_t>()[n] == label_of(s));
        seen.insert(static_cast<std::int32_t>(s));
      }
      if (step == 1) {
        valid_in_last[static_cast<std::size_t>(rank)] = b.valid;
        // A rank with nothing left repeats the epoch's last sample so it can run the step.
        if (b.valid == 0) CHECK(at(b, 5, 0, 0, 0) == static_cast<float>(pixel(20, 0, 0, 0)));
      }
    }
    CHECK(loader.next().end);
  }
  CHECK(valid_in_last == std::vector<int>{3, 0, 0});
  CHECK(seen.size() == 21u);
  CHECK(std::set<std::int32_t>(seen.begin(), seen.end()).size() == 21u);
}

TEST_CASE("training batches follow the global permutation and the drawn crop and flip", "[data][loader]") {
  TempDir dir;
  const Manifest m = write_dataset(dir.path, 8, 8, 3);
  const LoaderConfig config = training_config(4, 6, 1, 11);
  Loader loader(m, dir.path.string(), config);
  CHECK(loader.steps_per_epoch() == 5);  // 21 / 4, the last sample of each epoch dropped
  const Sampler sampler(21, 11, true);
  AugmentConfig augment{6, 1, true, true, {0, 0, 0}, {1, 1, 1}, 11};
  const Augmenter augmenter(augment, 8, 8, 3);
  std::map<std::int64_t, std::vector<float>> epoch0, epoch1;
  int flipped = 0;
  for (int step = 0; step < 10; ++step) {
    const Batch b = loader.next();
    CHECK(b.epoch == step / 5);  // epochs roll over; training never ends
    CHECK(b.position == (step % 5) * 4);
    CHECK(b.valid == 4);
    REQUIRE(b.images.shape() == Shape{4, 3, 6, 6});
    const auto samples = sampler.rank_slice(b.epoch, b.position, 4, 0);
    REQUIRE(samples.size() == 4u);
    for (int n = 0; n < 4; ++n) {
      const std::int64_t s = samples[static_cast<std::size_t>(n)];
      CHECK(b.labels.data<std::int32_t>()[n] == label_of(s));
      const CropDraw d = augmenter.draw(b.epoch, s);
      flipped += d.flip;
      int wrong = 0;
      std::vector<float> values;
      for (int c = 0; c < 3; ++c)
        for (int y = 0; y < 6; ++y)
          for (int x = 0; x < 6; ++x) {
            values.push_back(at(b, n, c, y, x));
            wrong += at(b, n, c, y, x) != expected_pixel(s, d, 6, 1, 8, 8, c, y, x);
          }
      CHECK(wrong == 0);
      (b.epoch == 0 ? epoch0 : epoch1)[s] = values;
    }
  }
  CHECK(flipped > 0);
  CHECK(flipped < 40);
  // The same sample is augmented differently in the next epoch (9 crops x 2 flips: rarely the same).
  int differ = 0, common = 0;
  for (const auto& [s, values] : epoch0) {
    if (auto it = epoch1.find(s); it != epoch1.end()) {
      ++common;
      differ += it->second != values;
    }
  }
  CHECK(common >= 19);
  CHECK(differ >= common - 4);

  // A second loader with the same seed produces the same bytes.
  Loader again(m, dir.path.string(), config);
  Loader reference(m, dir.path.string(), config);
  for (int step = 0; step < 6; ++step) CHECK(same_batch(again.next(), reference.next()));
}

TEST_CASE("batches are identical for any number of threads and any prefetch depth", "[data][loader]") {
  TempDir dir;
  const Manifest m = write_dataset(dir.path, 8, 8, 3);
  LoaderConfig config = training_config(4, 6, 1, 3);
  config.threads = 1;
  config.prefetch = 1;
  Loader single(m, dir.path.string(), config);
  const auto expected = read_batches(single, 12);  // crosses two epoch boundaries
  for (auto [threads, prefetch] : {std::pair{2, 2}, std::pair{2, 1}, std::pair{3, 4}}) {
    INFO(threads << " threads, prefetch " << prefetch);
    config.threads = threads;
    config.prefetch = prefetch;
    Loader loader(m, dir.path.string(), config);
    for (const Batch& e : expected) CHECK(same_batch(loader.next(), e));
  }
}

TEST_CASE("seek restarts at a global position and reproduces the batches from there", "[data][loader]") {
  TempDir dir;
  const Manifest m = write_dataset(dir.path, 8, 8, 3);
  const LoaderConfig config = training_config(4, 6, 1, 8);
  Loader reference(m, dir.path.string(), config);
  const auto expected = read_batches(reference, 12);

  Loader loader(m, dir.path.string(), config);
  (void)read_batches(loader, 3);  // with batches in flight
  loader.seek(expected[7].epoch, expected[7].position);
  for (std::size_t i = 7; i < 12; ++i) CHECK(same_batch(loader.next(), expected[i]));
  loader.seek(0, 0);
  CHECK(same_batch(loader.next(), expected[0]));

  // A position that is not a multiple of the global batch (a job resumed on another number of ranks):
  // the batches start there, and the epoch ends when no full global batch is left.
  Loader resumed(m, dir.path.string(), config);
  resumed.seek(1, 6);
  const Sampler sampler(21, 8, true);
  const Augmenter augmenter(AugmentConfig{6, 1, true, true, {0, 0, 0}, {1, 1, 1}, 8}, 8, 8, 3);
  for (std::int64_t position : {6, 10, 14}) {
    const Batch b = resumed.next();
    CHECK(b.epoch == 1);
    CHECK(b.position == position);
    const auto samples = sampler.rank_slice(1, position, 4, 0);
    for (int n = 0; n < 4; ++n) {
      const std::int64_t s = samples[static_cast<std::size_t>(n)];
      const CropDraw d = augmenter.draw(1, s);
      CHECK(at(b, n, 2, 3, 4) == expected_pixel(s, d, 6, 1, 8, 8, 2, 3, 4));
      CHECK(b.labels.data<std::int32_t>()[n] == label_of(s));
    }
  }
  const Batch rolled = resumed.next();  // 18 + 4 > 21
  CHECK(rolled.epoch == 2);
  CHECK(rolled.position == 0);
  CHECK_THROWS_AS(resumed.seek(-1, 0), Error);
}

TEST_CASE("a sample is the same read by one rank or as part of rank 1 of 2", "[data][loader]") {
  TempDir dir;
  const Manifest m = write_dataset(dir.path, 8, 8, 3);
  LoaderConfig one = training_config(8, 6, 1, 21);
  Loader single(m, dir.path.string(), one);
  LoaderConfig two = training_config(4, 6, 1, 21);
  two.world_size = 2;
  two.rank = 0;
  Loader rank0(m, dir.path.string(), two);
  two.rank = 1;
  Loader rank1(m, dir.path.string(), two);
  CHECK(rank1.steps_per_epoch() == single.steps_per_epoch());
  const std::size_t half = 4 * 3 * 6 * 6;
  for (int step = 0; step < 5; ++step) {
    const Batch whole = single.next(), first = rank0.next(), second = rank1.next();
    CHECK(first.position == whole.position);
    CHECK(second.position == whole.position);
    CHECK(second.first_sample == whole.position + 4);
    CHECK(second.epoch == whole.epoch);
    const float* w = whole.images.data<float>();
    CHECK(std::memcmp(first.images.raw(), w, half * sizeof(float)) == 0);
    CHECK(std::memcmp(second.images.raw(), w + half, half * sizeof(float)) == 0);
    CHECK(std::memcmp(second.labels.raw(), whole.labels.data<std::int32_t>() + 4, 4 * sizeof(std::int32_t)) == 0);
  }
}

TEST_CASE("jpeg shards are decoded to what libjpeg-turbo decodes", "[data][loader]") {
  TempDir dir;
  const Manifest m = write_dataset(dir.path, 8, 8, 3, "jpeg");
  Loader loader(m, dir.path.string(), evaluation_config(7, 8));
  std::int64_t sample = 0;
  for (Batch b = loader.next(); !b.end; b = loader.next()) {
    for (int n = 0; n < b.valid; ++n, ++sample) {
      const Image original{8, 8, 3, image_of(sample, 8, 8, 3)};
      const auto bytes = encode_jpeg(original, 95);  // the encoder is deterministic: the stored bytes
      const Image decoded = decode_jpeg(bytes.data(), bytes.size(), 3, "test");
      int wrong = 0, close = 0;
      for (int c = 0; c < 3; ++c)
        for (int y = 0; y < 8; ++y)
          for (int x = 0; x < 8; ++x) {
            const float v = at(b, n, c, y, x);
            wrong += v != static_cast<float>(decoded.pixels[static_cast<std::size_t>((y * 8 + x) * 3 + c)]);
            close += std::abs(v - static_cast<float>(pixel(sample, y, x, c))) <= 64.f;  // lossy, but the image
          }
      CHECK(wrong == 0);
      CHECK(close > 150);
      CHECK(b.labels.data<std::int32_t>()[n] == label_of(sample));
    }
  }
  CHECK(sample == 21);
}

TEST_CASE("u8 batches for a device normalise to the f32 batches, raw and JPEG", "[data][loader]") {
  for (const std::string encoding : {"raw", "jpeg"}) {
    INFO(encoding);
    TempDir dir;
    Manifest m = write_dataset(dir.path, 8, 8, 3, encoding);
    m.mean = {124.5, 116.25, 104.0};  // in memory only: the shards do not depend on it
    m.stddev = {58.4, 57.1, 57.4};
    LoaderConfig config = training_config(4, 6, 1, 5);
    Loader floats(m, dir.path.string(), config);
    config.images = DType::u8;
    Loader bytes(m, dir.path.string(), config);
    const InputFormat format = bytes.input_format();
    CHECK(format.host == DType::u8);
    CHECK(format.normalisation.mean == std::vector<float>{124.5f, 116.25f, 104.0f});
    CHECK(floats.input_format().host == DType::f32);
    for (int step = 0; step < 8; ++step) {  // crosses an epoch boundary
      const Batch f = floats.next(), b = bytes.next();
      REQUIRE(b.images.dtype() == DType::u8);
      REQUIRE(b.images.shape() == f.images.shape());
      CHECK(b.epoch == f.epoch);
      CHECK(b.position == f.position);
      CHECK(std::memcmp(b.labels.raw(), f.labels.raw(), f.labels.bytes()) == 0);
      std::vector<float> normalised(static_cast<std::size_t>(f.images.numel()));
      normalise_planes(b.images.data<std::uint8_t>(), normalised.data(), 4, 36, format.normalisation);
      CHECK(std::memcmp(normalised.data(), f.images.raw(), f.images.bytes()) == 0);
    }
  }
  LoaderConfig bad = training_config(4, 6, 1, 5);
  bad.images = DType::bf16;
  TempDir dir;
  const Manifest m = write_dataset(dir.path, 8, 8, 3);
  CHECK_THROWS_WITH(Loader(m, dir.path.string(), bad), Contains("f32 or u8"));
}

TEST_CASE("a dataset directory read back through its manifest.json loads the same batches", "[data][loader]") {
  TempDir dir;
  const Manifest written = write_dataset(dir.path, 8, 8, 3);
  const Manifest read = Manifest::read(dir.path.string());  // what a job does
  REQUIRE(read.split("train").samples == 21);
  REQUIRE(read.split("train").shards.size() == 3u);
  const LoaderConfig config = training_config(4, 6, 1, 2);
  Loader from_file(read, dir.path.string(), config), in_memory(written, dir.path.string(), config);
  for (int step = 0; step < 6; ++step) CHECK(same_batch(from_file.next(), in_memory.next()));
}

TEST_CASE("shards are opened only when a batch needs them", "[data][loader]") {
  TempDir dir;
  const Manifest m = write_dataset(dir.path, 8, 8, 3);
  fs::remove(shard_path(dir.path, 1));
  fs::remove(shard_path(dir.path, 2));
  // Constructing opens nothing; the first batch needs shard 0 only (samples 0..6).
  Loader loader(m, dir.path.string(), evaluation_config(7, 8));
  const Batch b = loader.next();
  CHECK(b.valid == 7);
  CHECK(at(b, 6, 0, 0, 0) == static_cast<float>(pixel(6, 0, 0, 0)));
}

TEST_CASE("a missing shard fails at the batch that needs it, naming the file", "[data][loader]") {
  TempDir dir;
  const Manifest m = write_dataset(dir.path, 8, 8, 3);
  const std::string missing = shard_path(dir.path, 1);
  fs::remove(missing);
  for (int threads : {1, 2}) {
    LoaderConfig config = evaluation_config(4, 8);
    config.threads = threads;
    Loader loader(m, dir.path.string(), config);
    CHECK(loader.next().valid == 4);  // samples 0..3, shard 0: handed out despite the failure behind it
    const std::string message = error_of([&] { loader.next(); });  // sample 7 is in shard 1
    CHECK_THAT(message, Contains(missing) && Contains("not found"));
    CHECK_THAT(error_of([&] { loader.next(); }), Contains(missing));  // and stays failed
  }
  // Training touches shards in shuffled order; whichever comes first, the error names it.
  Loader training(m, dir.path.string(), training_config(4, 8, 0, 1));
  std::string message;
  for (int step = 0; step < 10 && message.empty(); ++step) message = error_of([&] { training.next(); });
  CHECK_THAT(message, Contains(missing));
}

TEST_CASE("a truncated shard fails naming the file", "[data][loader]") {
  TempDir dir;
  const Manifest m = write_dataset(dir.path, 8, 8, 3);
  const std::string victim = shard_path(dir.path, 2);
  {
    // Copy the shard, cut in half, back under its name.
    std::ifstream in(victim, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    REQUIRE(bytes.size() > 1000);
    in.close();
    std::ofstream out(victim, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
  }
  Loader loader(m, dir.path.string(), evaluation_config(4, 8));
  for (int step = 0; step < 3; ++step) CHECK(loader.next().valid == 4);  // samples 0..11: shards 0 and 1
  CHECK_THAT(error_of([&] { loader.next(); }), Contains(victim));
}

TEST_CASE("a shard that disagrees with the manifest fails naming the file and the field", "[data][loader]") {
  TempDir dir;
  const Manifest m = write_dataset(dir.path, 8, 8, 3);
  const std::string victim = shard_path(dir.path, 1);
  SECTION("sample count") {
    write_shard(victim, header_for(1, 3, 7, 6, 8, 8, 3, "raw"));  // the manifest says 5
    Loader loader(m, dir.path.string(), evaluation_config(21, 8));
    const std::string message = error_of([&] { loader.next(); });
    CHECK_THAT(message, Contains(victim) && Contains("'samples' is 6 but the manifest says 5"));
  }
  SECTION("geometry") {
    write_shard(victim, header_for(1, 3, 7, 5, 7, 8, 3, "raw"));  // 7 rows, the manifest says 8
    Loader loader(m, dir.path.string(), evaluation_config(21, 8));
    const std::string message = error_of([&] { loader.next(); });
    CHECK_THAT(message, Contains(victim) && Contains("'height' is 7 but the manifest says 8"));
  }
  SECTION("channels") {
    write_shard(victim, header_for(1, 3, 7, 5, 8, 8, 1, "raw"));
    Loader loader(m, dir.path.string(), evaluation_config(21, 8));
    CHECK_THAT(error_of([&] { loader.next(); }), Contains(victim) && Contains("'channels'"));
  }
}

TEST_CASE("the loader rejects a configuration it cannot serve", "[data][loader]") {
  TempDir dir;
  const Manifest m = write_dataset(dir.path, 8, 8, 3);
  const std::string d = dir.path.string();
  LoaderConfig config = evaluation_config(4, 8);
  config.rank = 2;
  config.world_size = 2;
  CHECK_THROWS_WITH(Loader(m, d, config), Contains("rank 2"));
  CHECK_THROWS_WITH(Loader(m, d, evaluation_config(4, 9)), Contains("does not fit"));
  CHECK_THROWS_WITH(Loader(m, d, training_config(32, 8, 0, 1)), Contains("fewer than one global batch"));
  config = evaluation_config(4, 8);
  config.split = "validation";
  CHECK_THROWS_WITH(Loader(m, d, config), Contains("no split 'validation'"));
  config.split = "train";
  config.threads = 0;
  CHECK_THROWS_AS(Loader(m, d, config), Error);
}
