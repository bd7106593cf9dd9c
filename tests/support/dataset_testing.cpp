#include "support/dataset_testing.hpp"

#include <filesystem>
#include <vector>

#include "dptrain/core/philox.hpp"
#include "dptrain/data/shard.hpp"

namespace dptrain::testing {
namespace {
data::SplitInfo write_split(const std::string& directory, const std::string& split, std::int64_t samples,
                            std::int64_t sample_offset, int shards, const TinyDataset& spec) {
  data::SplitInfo info;
  const std::int64_t per_shard = (samples + shards - 1) / shards;
  for (int s = 0; s < shards; ++s) {
    data::ShardHeader h;
    h.split = split;
    h.shard_index = s;
    h.shard_count = shards;
    h.first_sample = info.samples;
    h.samples = std::min(per_shard, samples - info.samples);
    h.height = h.width = spec.size;
    h.channels = 1;
    h.classes = spec.classes;
    std::vector<std::uint8_t> pixels;
    std::vector<std::int32_t> labels;
    for (std::int64_t i = 0; i < h.samples; ++i) {
      const std::int64_t sample = sample_offset + h.first_sample + i;
      const int label = static_cast<int>((sample * 5 + 3) % spec.classes);
      labels.push_back(label);
      const int bar = (label * spec.size) / spec.classes;
      const CounterRng rng(7, static_cast<std::uint64_t>(sample));
      for (int y = 0; y < spec.size; ++y) {
        for (int x = 0; x < spec.size; ++x) {
          const auto noise = static_cast<int>(rng.uniform(static_cast<std::uint64_t>(y * spec.size + x)) * 60);
          const bool on = y >= bar && y < bar + spec.size / spec.classes;
          pixels.push_back(static_cast<std::uint8_t>((on ? 180 : 20) + noise));
        }
      }
    }
    const std::string file = data::shard_file_name(split, s, shards);
    const std::string path = (std::filesystem::path(directory) / file).string();
    data::write_raw_shard(path, h, pixels.data(), labels.data());
    info.shards.push_back(data::ShardInfo{file, h.samples, h.first_sample, data::file_checksum(path)});
    info.samples += h.samples;
  }
  return info;
}
}  // namespace

data::Manifest write_tiny_dataset(const std::string& directory, const TinyDataset& spec) {
  std::filesystem::create_directories(directory);
  data::Manifest m;
  m.name = "tiny";
  for (int k = 0; k < spec.classes; ++k)
    m.classes.push_back(data::ClassInfo{k, std::to_string(k), "bar " + std::to_string(k)});
  m.height = m.width = spec.size;
  m.channels = 1;
  m.encoding = "raw";
  m.mean = {60.0};
  m.stddev = {60.0};
  m.splits["train"] = write_split(directory, "train", spec.train, 0, 2, spec);
  if (spec.validation > 0)
    m.splits["validation"] = write_split(directory, "validation", spec.validation, spec.train, 1, spec);
  m.write(directory);
  return m;
}

data::Manifest write_sharded_dataset(
    const std::string& directory, const ShardedDataset& spec,
    const std::function<void(const std::string&, const data::ShardHeader&)>& write_shard) {
  data::Manifest m;
  m.name = spec.name;
  for (int k = 0; k < spec.classes; ++k) {
    m.classes.push_back(data::ClassInfo{k, std::to_string(k), "class " + std::to_string(k)});
  }
  m.height = spec.height;
  m.width = spec.width;
  m.channels = spec.channels;
  m.encoding = spec.encoding;
  m.mean = spec.mean.empty() ? std::vector<double>(static_cast<std::size_t>(spec.channels), 0.0) : spec.mean;
  m.stddev = spec.stddev.empty() ? std::vector<double>(static_cast<std::size_t>(spec.channels), 1.0) : spec.stddev;
  data::SplitInfo split;
  const int count = static_cast<int>(spec.sizes.size());
  for (int s = 0; s < count; ++s) {
    data::ShardHeader h;
    h.split = "train";
    h.shard_index = s;
    h.shard_count = count;
    h.first_sample = split.samples;
    h.samples = spec.sizes[static_cast<std::size_t>(s)];
    h.height = spec.height;
    h.width = spec.width;
    h.channels = spec.channels;
    h.encoding = spec.encoding;
    h.classes = spec.classes;
    const std::string file = data::shard_file_name("train", s, count);
    const std::string path = (std::filesystem::path(directory) / file).string();
    write_shard(path, h);
    split.shards.push_back(data::ShardInfo{file, h.samples, h.first_sample, data::file_checksum(path)});
    split.samples += h.samples;
  }
  m.splits["train"] = split;
  m.write(directory);
  return m;
}

std::vector<std::vector<std::uint8_t>> batch_bytes(const data::Manifest& manifest, const std::string& directory,
                                                   const data::LoaderConfig& config, std::string* read_path) {
  data::Loader loader(manifest, directory, config);
  std::vector<std::vector<std::uint8_t>> out;
  for (std::int64_t s = 0; s < 2 * loader.steps_per_epoch() + 1; ++s) {
    const data::Batch b = loader.next();
    const auto* images = static_cast<const std::uint8_t*>(b.images.raw());
    const auto* labels = static_cast<const std::uint8_t*>(b.labels.raw());
    std::vector<std::uint8_t> bytes(images, images + b.images.bytes());
    bytes.insert(bytes.end(), labels, labels + b.labels.bytes());
    out.push_back(std::move(bytes));
  }
  if (read_path) *read_path = loader.read_path();
  return out;
}

}  // namespace dptrain::testing
