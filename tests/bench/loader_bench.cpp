// How fast data::Loader feeds a rank, next to how fast the same shard files can merely be read.
//
//   loader_bench            writes a synthetic dataset (4096 images of 64x64x3, raw and JPEG) to a
//                           temporary directory, measures, and removes it
//   loader_bench DIR        the same, writing into DIR/raw and DIR/jpeg (kept)
//   loader_bench DATASET    when DATASET/manifest.json exists: measures that dataset's training split
//
// For each dataset it prints the loader's images/sec (training mode: shuffled, random crop, flip) with
// 1 and 2 worker threads, after one warm-up epoch (which opens and indexes every shard once, as the
// first of many epochs does), the sequential read bandwidth of its shard files (std::ifstream,
// measured in the same run, so from the same page cache) as images/sec, and the ratio of the two.
// For JPEG it also prints the rate at which one thread merely decodes the same images (TurboJPEG, one
// handle, at the loader's decode scale, from memory), and the loader's ratio to that: JPEG loading
// is bounded by decoding, so that ratio says what the rest of the loader costs. Both are best rates
// (of passes, of windows), over three alternating rounds.
// Last, the 1-thread loader again handing over u8 crops (what a GPU rank asks for: the device
// normalises), against the f32 loader.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "dptrain/core/error.hpp"
#include "dptrain/core/philox.hpp"
#include "dptrain/data/jpeg.hpp"
#include "dptrain/data/loader.hpp"
#include "dptrain/data/manifest.hpp"
#include "dptrain/data/shard.hpp"

using namespace dptrain;
using namespace dptrain::data;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {
constexpr int kImages = 4096, kSide = 64, kChannels = 3, kShards = 8, kClasses = 10;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Smooth gradients with some noise: compresses like a photograph rather than like noise or a flat field.
std::vector<std::uint8_t> synthetic_image(std::int64_t sample) {
  const CounterRng rng(1234, static_cast<std::uint64_t>(sample));
  const float fx = 0.05f + 0.2f * rng.uniform(0), fy = 0.05f + 0.2f * rng.uniform(1), phase = 6.f * rng.uniform(2);
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(kSide * kSide * kChannels));
  for (int y = 0; y < kSide; ++y)
    for (int x = 0; x < kSide; ++x) {
      // One Philox block gives the noise of a pixel's channels (a byte each).
      const std::uint32_t noise = rng.block(static_cast<std::uint64_t>(1 + y * kSide + x))[0];
      for (int c = 0; c < kChannels; ++c) {
        const float v = 128.f + 60.f * std::sin(fx * static_cast<float>(x) + phase + static_cast<float>(c)) +
                        40.f * std::cos(fy * static_cast<float>(y)) + static_cast<float>((noise >> (8 * c)) & 31u) -
                        16.f;
        pixels[static_cast<std::size_t>((y * kSide + x) * kChannels + c)] =
            static_cast<std::uint8_t>(std::clamp(v, 0.f, 255.f));
      }
    }
  return pixels;
}

Manifest write_dataset(const fs::path& dir, const std::string& encoding) {
  fs::create_directories(dir);
  Manifest m;
  m.name = "loader-bench-" + encoding;
  for (int k = 0; k < kClasses; ++k) m.classes.push_back(ClassInfo{k, std::to_string(k), "class " + std::to_string(k)});
  m.height = m.width = kSide;
  m.channels = kChannels;
  m.encoding = encoding;
  m.mean = {125.0, 123.0, 114.0};
  m.stddev = {58.0, 57.0, 57.0};
  SplitInfo split;
  const std::int64_t per_shard = kImages / kShards;
  for (int s = 0; s < kShards; ++s) {
    ShardHeader h;
    h.split = "train";
    h.shard_index = s;
    h.shard_count = kShards;
    h.first_sample = s * per_shard;
    h.samples = per_shard;
    h.height = h.width = kSide;
    h.channels = kChannels;
    h.encoding = encoding;
    h.classes = kClasses;
    std::vector<std::uint8_t> raw;
    std::vector<std::vector<std::uint8_t>> jpegs;
    std::vector<std::int32_t> labels;
    for (std::int64_t i = 0; i < per_shard; ++i) {
      const std::int64_t sample = h.first_sample + i;
      auto pixels = synthetic_image(sample);
      labels.push_back(static_cast<std::int32_t>(sample % kClasses));
      if (encoding == "jpeg") {
        jpegs.push_back(encode_jpeg(Image{kSide, kSide, kChannels, std::move(pixels)}, 90));
      } else {
        raw.insert(raw.end(), pixels.begin(), pixels.end());
      }
    }
    const std::string file = shard_file_name("train", s, kShards);
    const std::string path = (dir / file).string();
    if (encoding == "jpeg") {
      write_jpeg_shard(path, h, jpegs, labels.data());
    } else {
      write_raw_shard(path, h, raw.data(), labels.data());
    }
    split.shards.push_back(ShardInfo{file, per_shard, h.first_sample, file_checksum(path)});
    split.samples += per_shard;
  }
  m.splits["train"] = split;
  m.write(dir.string());
  return m;
}

// Bytes per second of reading every shard file front to back; the best of three passes (the first
// may still be pulling pages in).
double sequential_bytes_per_second(const fs::path& dir, const SplitInfo& split, std::int64_t& total_bytes) {
  std::vector<char> buffer(1 << 20);
  double best = 0;
  for (int pass = 0; pass < 3; ++pass) {
    total_bytes = 0;
    const auto start = Clock::now();
    for (const ShardInfo& shard : split.shards) {
      const std::string path = (dir / shard.file).string();
      std::ifstream in(path, std::ios::binary);
      DPTRAIN_CHECK(in.good(), path, ": cannot open the shard to time a sequential read");
      while (in) {
        in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
        total_bytes += in.gcount();
      }
      DPTRAIN_CHECK(in.eof(), path, ": reading the shard failed");
    }
    best = std::max(best, static_cast<double>(total_bytes) / seconds_since(start));
  }
  return best;
}

// Images per second the loader hands out in training mode, after a warm-up: the best window of at
// least five and at least 1.5 s, as the decode-only rate is the best of its passes, so that both
// sides of their ratio are measured the same way and a burst of other load on a shared machine
// lowers neither (a mean over the whole time let one busy second move the JPEG ratio by 0.08).
// A window is an epoch, or 64 batches of a larger split; the warm-up is an epoch too, or as many
// batches as the split has shards (64 draws per shard on average: every shard opened, as the first
// epoch of a run does). In steady state the consumer only waits, so the prefetch queue is empty at
// each window's start and a window's time is the workers' time for its images.
// `element_type`: f32 (the CPU backend's batches) or u8 (the GPU's: cropped and flipped, normalised there).
double loader_images_per_second(const Manifest& m, const fs::path& dir, int threads, int crop,
                                DType element_type = DType::f32) {
  LoaderConfig config;
  config.images = element_type;
  config.split = "train";
  config.batch = 64;
  config.training = true;
  config.crop = crop;
  config.flip = true;
  config.threads = threads;
  config.seed = 1;
  Loader loader(m, dir.string(), config);
  const std::int64_t steps = loader.steps_per_epoch();
  const auto shards = static_cast<std::int64_t>(m.split("train").shards.size());
  const std::int64_t warm_up = std::min(steps, std::max<std::int64_t>(64, shards));
  const std::int64_t window = std::min<std::int64_t>(steps, 64);
  for (std::int64_t s = 0; s < warm_up; ++s) (void)loader.next();
  double best = 0, spent = 0;
  for (int w = 0; w < 1000 && (w < 5 || spent < 1.5); ++w) {
    std::int64_t images = 0;
    const auto start = Clock::now();
    for (std::int64_t s = 0; s < window; ++s) images += loader.next().valid;
    const double seconds = seconds_since(start);
    spent += seconds;
    best = std::max(best, static_cast<double>(images) / seconds);
  }
  return best;
}

// Images per second one thread decodes the split's JPEG bytes (read into memory first) at `scale`,
// the best of passes over at least a second.
double decode_images_per_second(const Manifest& m, const fs::path& dir, JpegScale scale) {
  const SplitInfo& split = m.split("train");
  std::vector<std::vector<std::uint8_t>> encoded;
  for (std::size_t s = 0; s < split.shards.size(); ++s) {
    const ShardReader reader((dir / split.shards[s].file).string(), expected_shard_header(m, "train", s));
    for (std::int64_t i = 0; i < reader.header().samples; ++i) encoded.push_back(reader.read_jpeg(i));
  }
  JpegDecoder decoder;
  Image image;
  double best = 0, spent = 0;
  for (int pass = 0; pass < 3 || spent < 1.0; ++pass) {
    const auto start = Clock::now();
    for (const auto& bytes : encoded) decoder.decode(bytes.data(), bytes.size(), m.channels, scale, "decode", image);
    const double seconds = seconds_since(start);
    spent += seconds;
    best = std::max(best, static_cast<double>(encoded.size()) / seconds);
  }
  return best;
}

void bench(const fs::path& dir, const Manifest& m) {
  const SplitInfo& split = m.split("train");
  std::int64_t bytes = 0;
  const double bandwidth = sequential_bytes_per_second(dir, split, bytes);
  const double sequential_images = bandwidth / (static_cast<double>(bytes) / static_cast<double>(split.samples));
  const int crop = std::min(m.height, m.width) * 7 / 8;
  std::printf("%s: %lld images %dx%dx%d %s, %.1f MB in %zu shards; loader crop %d, batch 64\n", dir.string().c_str(),
              static_cast<long long>(split.samples), m.height, m.width, m.channels, m.encoding.c_str(),
              static_cast<double>(bytes) / 1e6, split.shards.size(), crop);
  std::printf("  sequential read (ifstream): %9.0f MB/s = %9.0f images/s\n", bandwidth / 1e6, sequential_images);
  const bool jpeg = m.encoding == "jpeg";
  const JpegScale scale = jpeg_scale_for(m.height, m.width, crop);
  // For JPEG the decode-only rate and the 1-thread loader are measured in three alternating rounds and
  // each keeps its best: on a shared host the speed drifts over seconds, and a slow spell during one
  // of the two would otherwise set their ratio.
  double decode = 0, one = 0;
  for (int round = 0; round < (jpeg ? 3 : 1); ++round) {
    if (jpeg) decode = std::max(decode, decode_images_per_second(m, dir, scale));
    one = std::max(one, loader_images_per_second(m, dir, 1, crop));
  }
  if (jpeg) {
    std::printf("  decode only (TurboJPEG, 1 thread, scale %d/%d): %9.0f images/s\n", scale.num, scale.denom, decode);
  }
  for (int threads : {1, 2}) {
    const double rate = threads == 1 ? one : loader_images_per_second(m, dir, threads, crop);
    std::printf("  loader, %d thread%s:        %9.0f images/s  = %.3f x sequential read", threads,
                threads == 1 ? " " : "s", rate, rate / sequential_images);
    if (jpeg) std::printf(", %.2f x decode only", rate / decode);
    if (threads > 1) std::printf(", %.2f x 1 thread", rate / one);
    std::printf("\n");
  }
  // What a GPU rank's loader does: the same crops handed over as bytes, normalised on the device.
  const double bytes_rate = loader_images_per_second(m, dir, 1, crop, DType::u8);
  std::printf("  loader, 1 thread, u8 (GPU):%9.0f images/s  = %.2f x the f32 loader\n", bytes_rate, bytes_rate / one);
}
}  // namespace

int main(int argc, char** argv) {
  try {
    const bool given = argc > 1;
    const fs::path base = given ? fs::path(argv[1]) : fs::temp_directory_path() / "dptrain_loader_bench";
    if (given && fs::exists(base / "manifest.json")) {
      bench(base, Manifest::read(base.string()));
      return 0;
    }
    const auto start = Clock::now();
    const Manifest raw = write_dataset(base / "raw", "raw");
    const Manifest jpeg = write_dataset(base / "jpeg", "jpeg");
    std::printf("wrote %d synthetic images, raw and jpeg, in %.1f s\n", kImages, seconds_since(start));
    bench(base / "raw", raw);
    bench(base / "jpeg", jpeg);
    if (!given) fs::remove_all(base);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loader_bench: %s\n", e.what());
    return 1;
  }
}
