#include "datasets/imagenet.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "datasets/imagenet_layout.hpp"
#include "datasets/mpi_world.hpp"
#include "datasets/parallel.hpp"
#include "datasets/previous_manifest.hpp"
#include "datasets/progress.hpp"
#include "datasets/shard_plan.hpp"
#include "dptrain/core/error.hpp"
#include "dptrain/data/jpeg.hpp"
#include "dptrain/data/manifest.hpp"
#include "dptrain/data/shard.hpp"

namespace dptrain::datasets {
namespace {
namespace fs = std::filesystem;
constexpr int kChannels = 3;  // grey and CMYK sources are stored as RGB like the rest

std::vector<std::uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  DPTRAIN_CHECK(in.good(), path, ": cannot open for reading (", std::strerror(errno), ")");
  const std::streamsize size = in.tellg();
  DPTRAIN_CHECK(size >= 0, path, ": cannot tell its size");
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(bytes.data()), size);
  DPTRAIN_CHECK(in.good(), path, ": reading failed");
  return bytes;
}

// Per-channel sums of pixel values and of their squares. Integers, so the totals are exact and the
// same whatever the order in which threads and ranks add them up (a restarted or differently
// parallelised conversion writes the same manifest). ImageNet's train split stays below 2^53.
struct PixelSums {
  std::array<std::uint64_t, kChannels> sum{}, squares{};
  std::uint64_t pixels = 0;

  void add(const std::uint8_t* hwc, std::size_t pixel_count) {
    for (std::size_t p = 0; p < pixel_count; ++p) {
      for (int c = 0; c < kChannels; ++c) {
        const std::uint64_t v = hwc[p * kChannels + static_cast<std::size_t>(c)];
        sum[static_cast<std::size_t>(c)] += v;
        squares[static_cast<std::size_t>(c)] += v * v;
      }
    }
    pixels += pixel_count;
  }
};

struct SplitPlan {
  std::string name;                               // "train" or "validation"
  bool statistics = false;                        // mean and std come from this split
  std::vector<SourceImage> images;                // the readable ones, in (label, path) order
  std::vector<std::vector<std::int64_t>> shards;  // plan_shards: indices into `images`
  std::vector<std::int64_t> first_sample;
};

struct ShardOutcome {
  bool reused = false;
  PixelSums sums;
  std::uint32_t crc = 0;
};

std::uint32_t parse_crc(const std::string& checksum, const std::string& path) {
  DPTRAIN_CHECK(checksum.rfind("crc32:", 0) == 0 && checksum.size() == 14, path, ": unexpected checksum '", checksum,
                "'");
  return static_cast<std::uint32_t>(std::stoul(checksum.substr(6), nullptr, 16));
}

std::string format_crc(std::uint32_t crc) {
  char text[16];
  std::snprintf(text, sizeof text, "crc32:%08x", crc);
  return text;
}

class Converter {
 public:
  Converter(const ImagenetOptions& options, const MpiWorld& world, std::ostream& out, std::ostream& warnings)
      : o_(options), world_(world), out_(out), warnings_(warnings) {
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    jobs_ = o_.jobs > 0 ? o_.jobs : std::max(1, cores / std::max(1, world_.local_size()));
  }

  ImagenetReport run();

 private:
  bool leader() const { return world_.rank() == 0; }
  void warn(const std::string& line) {
    const std::lock_guard lock(warnings_mutex_);
    warnings_ << line << '\n' << std::flush;
  }
  void prepare_output();
  SplitPlan plan_split(std::string name, std::vector<SourceImage> images, int requested_shards, bool statistics,
                       std::uint64_t stream, std::vector<std::string>& skipped);
  std::vector<std::int64_t> find_unreadable(const std::vector<SourceImage>& images, const std::string& split);
  data::ShardHeader header(const SplitPlan& split, int shard) const;
  std::string shard_path(const SplitPlan& split, int shard) const;
  std::vector<std::int32_t> planned_labels(const SplitPlan& split, int shard) const;
  ShardOutcome convert_shard(const SplitPlan& split, int shard, Progress& progress);
  std::optional<ShardOutcome> reuse_shard(const SplitPlan& split, int shard);
  data::Image prepare(const std::string& path) const;
  void warn_about_stale_shards(const data::Manifest& manifest);

  const ImagenetOptions& o_;
  const MpiWorld& world_;
  std::ostream& out_;
  std::ostream& warnings_;
  int jobs_ = 1;
  int classes_ = 0;
  std::mutex warnings_mutex_;
  std::map<std::string, std::string> previous_checksums_;  // shard file -> its checksum in the earlier manifest
  // HDF5 is only thread-safe when built so (Debian's is, Spack's default is not): one shard file at a
  // time goes through the library, while the other threads decode and resize.
  std::mutex hdf5_mutex_;
};

void Converter::prepare_output() {
  const fs::path output(o_.output);
  // What an earlier conversion listed, read by every rank before the leader sets it aside: a shard
  // kept from it must still have its checksum (reuse_shard).
  previous_checksums_ = previous_checksums(o_.output);
  world_.barrier();
  if (leader()) {
    std::error_code error;
    fs::create_directories(output, error);
    DPTRAIN_CHECK(!error && fs::is_directory(output), o_.output, ": cannot create the output folder (",
                  error ? error.message() : "a file is in the way", ")");
    // Until this conversion writes it again, the directory is incomplete; no stale manifest may say
    // otherwise.
    set_aside_manifest(o_.output);
  }
  world_.barrier();
}

std::vector<std::int64_t> Converter::find_unreadable(const std::vector<SourceImage>& images, const std::string& split) {
  // Rank r checks images r, r + ranks, ...: no file is read twice, and the lists are gathered after.
  const auto count = static_cast<std::int64_t>(images.size());
  const std::int64_t mine = (count - world_.rank() + world_.size() - 1) / world_.size();
  Progress progress("checking " + split + " images", mine, o_.progress && leader());
  std::vector<std::int64_t> unreadable;
  std::mutex mutex;
  parallel_for(mine, jobs_, [&](std::int64_t k) {
    const std::int64_t i = world_.rank() + k * world_.size();
    const std::string& path = images[static_cast<std::size_t>(i)].path;
    const std::vector<std::uint8_t> bytes = read_file(path);  // an I/O failure stops the conversion
    try {
      data::check_jpeg(bytes.data(), bytes.size(), path);
    } catch (const Error& e) {
      warn(std::string("warning: skipping ") + e.what());
      const std::lock_guard lock(mutex);
      unreadable.push_back(i);
    }
    progress.add(1);
  });
  progress.finish();
  std::vector<std::int64_t> all = world_.all_gather(unreadable);
  std::sort(all.begin(), all.end());
  return all;
}

SplitPlan Converter::plan_split(std::string name, std::vector<SourceImage> images, int requested_shards,
                                bool statistics, std::uint64_t stream, std::vector<std::string>& skipped) {
  const std::vector<std::int64_t> unreadable = find_unreadable(images, name);
  SplitPlan split;
  split.name = std::move(name);
  split.statistics = statistics;
  std::vector<std::int64_t> readable_per_class(static_cast<std::size_t>(classes_), 0);
  std::size_t next_bad = 0;
  for (std::size_t i = 0; i < images.size(); ++i) {
    if (next_bad < unreadable.size() && unreadable[next_bad] == static_cast<std::int64_t>(i)) {
      skipped.push_back(images[i].path);
      ++next_bad;
      continue;
    }
    ++readable_per_class[static_cast<std::size_t>(images[i].label)];
    split.images.push_back(std::move(images[i]));
  }
  if (statistics) {
    // A class that lost every image would be a class the network can never see.
    for (int c = 0; c < classes_; ++c) {
      DPTRAIN_CHECK(readable_per_class[static_cast<std::size_t>(c)] > 0, (fs::path(o_.source) / "train").string(),
                    ": class ", c, " holds no readable image (all of its files were skipped)");
    }
  }
  const auto count = static_cast<std::int64_t>(split.images.size());
  DPTRAIN_CHECK(count > 0, o_.source, ": the ", split.name, " split holds no readable image");
  int shards = requested_shards;
  if (shards > count) {
    shards = static_cast<int>(count);
    if (leader()) {
      out_ << "note: " << split.name << " has " << count << " images, so it gets " << shards << " shards instead of "
           << requested_shards << " (a shard holds at least one image)\n";
    }
  }
  std::vector<std::int32_t> labels;
  labels.reserve(split.images.size());
  for (const SourceImage& image : split.images) labels.push_back(image.label);
  split.shards = plan_shards(labels, shards, o_.seed, stream);
  std::int64_t first = 0;
  for (const auto& shard : split.shards) {
    split.first_sample.push_back(first);
    first += static_cast<std::int64_t>(shard.size());
  }
  return split;
}

data::ShardHeader Converter::header(const SplitPlan& split, int shard) const {
  data::ShardHeader h;
  h.split = split.name;
  h.shard_index = shard;
  h.shard_count = static_cast<std::int64_t>(split.shards.size());
  h.first_sample = split.first_sample[static_cast<std::size_t>(shard)];
  h.samples = static_cast<std::int64_t>(split.shards[static_cast<std::size_t>(shard)].size());
  h.height = h.width = o_.size;
  h.channels = kChannels;
  h.encoding = o_.encoding;
  h.classes = classes_;
  return h;
}

std::string Converter::shard_path(const SplitPlan& split, int shard) const {
  return (fs::path(o_.output) / data::shard_file_name(split.name, shard, static_cast<int>(split.shards.size())))
      .string();
}

std::vector<std::int32_t> Converter::planned_labels(const SplitPlan& split, int shard) const {
  std::vector<std::int32_t> labels;
  for (const std::int64_t i : split.shards[static_cast<std::size_t>(shard)]) {
    labels.push_back(split.images[static_cast<std::size_t>(i)].label);
  }
  return labels;
}

data::Image Converter::prepare(const std::string& path) const {
  const std::vector<std::uint8_t> bytes = read_file(path);
  data::Image image = data::decode_jpeg(bytes.data(), bytes.size(), kChannels, path);
  return data::center_crop(data::resize_shorter_side(image, o_.size), o_.size, o_.size);
}

ShardOutcome Converter::convert_shard(const SplitPlan& split, int shard, Progress& progress) {
  const data::ShardHeader h = header(split, shard);
  const std::string path = shard_path(split, shard);
  const std::vector<std::int32_t> labels = planned_labels(split, shard);
  const auto& members = split.shards[static_cast<std::size_t>(shard)];
  const std::size_t image_bytes = static_cast<std::size_t>(o_.size) * static_cast<std::size_t>(o_.size) * kChannels;
  const std::size_t image_pixels = image_bytes / kChannels;
  ShardOutcome outcome;
  if (o_.encoding == "raw") {
    std::vector<std::uint8_t> pixels(members.size() * image_bytes);
    for (std::size_t k = 0; k < members.size(); ++k) {
      const data::Image image = prepare(split.images[static_cast<std::size_t>(members[k])].path);
      std::memcpy(&pixels[k * image_bytes], image.pixels.data(), image_bytes);
      progress.add(1);
    }
    {
      const std::lock_guard lock(hdf5_mutex_);
      data::write_raw_shard(path, h, pixels.data(), labels.data());
    }
    if (split.statistics) outcome.sums.add(pixels.data(), members.size() * image_pixels);
  } else {
    std::vector<std::vector<std::uint8_t>> jpegs(members.size());
    for (std::size_t k = 0; k < members.size(); ++k) {
      jpegs[k] = data::encode_jpeg(prepare(split.images[static_cast<std::size_t>(members[k])].path), o_.jpeg_quality);
      progress.add(1);
    }
    {
      const std::lock_guard lock(hdf5_mutex_);
      data::write_jpeg_shard(path, h, jpegs, labels.data());
    }
    // The statistics of what the loader will see, the decoded stored JPEGs; a reused shard's are
    // computed the same way, so a restart does not change the manifest.
    if (split.statistics) {
      for (const auto& jpeg : jpegs) {
        const data::Image decoded = data::decode_jpeg(jpeg.data(), jpeg.size(), kChannels, path);
        outcome.sums.add(decoded.pixels.data(), image_pixels);
      }
    }
  }
  outcome.crc = parse_crc(data::file_checksum(path), path);
  return outcome;
}

std::optional<ShardOutcome> Converter::reuse_shard(const SplitPlan& split, int shard) {
  const std::string path = shard_path(split, shard);
  if (!fs::exists(path)) return std::nullopt;
  const std::size_t image_pixels = static_cast<std::size_t>(o_.size) * static_cast<std::size_t>(o_.size);
  ShardOutcome outcome;
  outcome.reused = true;
  try {
    // First its bytes against the earlier manifest: a shard damaged since it was listed is written
    // again, not adopted with its new checksum (nor counted in the statistics).
    outcome.crc = parse_crc(data::file_checksum(path), path);
    const auto listed = previous_checksums_.find(fs::path(path).filename().string());
    DPTRAIN_CHECK(listed == previous_checksums_.end() || listed->second == format_crc(outcome.crc), "its checksum ",
                  format_crc(outcome.crc), " is not the ", listed == previous_checksums_.end() ? "" : listed->second,
                  " the earlier conversion listed (damaged since?)");
    std::vector<std::vector<std::uint8_t>> jpegs;
    {
      const std::lock_guard lock(hdf5_mutex_);
      // Checks every attribute against this conversion's plan (geometry, encoding, counts, classes).
      const data::ShardReader reader(path, header(split, shard));
      DPTRAIN_CHECK(reader.labels() == planned_labels(split, shard), path,
                    ": holds other labels than this conversion plans (was the source tree changed?)");
      if (split.statistics) {
        std::vector<std::uint8_t> image(image_pixels * kChannels);
        for (std::int64_t i = 0; i < reader.header().samples; ++i) {
          if (o_.encoding == "raw") {
            reader.read_image(i, image.data());
            outcome.sums.add(image.data(), image_pixels);
          } else {
            jpegs.push_back(reader.read_jpeg(i));
          }
        }
      }
    }
    for (const auto& jpeg : jpegs) {
      const data::Image decoded = data::decode_jpeg(jpeg.data(), jpeg.size(), kChannels, path);
      outcome.sums.add(decoded.pixels.data(), image_pixels);
    }
  } catch (const Error& e) {
    warn(std::string("note: writing ") + path + " again: " + e.what());
    return std::nullopt;
  }
  return outcome;
}

void Converter::warn_about_stale_shards(const data::Manifest& manifest) {
  // Shards of an earlier conversion with other shard counts are not overwritten by name; say so
  // rather than leave the user to wonder which files belong to the dataset.
  std::set<std::string> listed;
  for (const auto& [name, split] : manifest.splits)
    for (const data::ShardInfo& shard : split.shards) listed.insert(shard.file);
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(o_.output, error)) {
    const std::string file = entry.path().filename().string();
    const bool shard_name = (file.rfind("train-", 0) == 0 || file.rfind("validation-", 0) == 0) &&
                            file.find("-of-") != std::string::npos && entry.path().extension() == ".h5";
    if (shard_name && !listed.count(file)) {
      warn("warning: " + entry.path().string() +
           " is not part of this conversion (an earlier one with other "
           "shard counts?); the manifest ignores it, delete it to save space");
    }
  }
}

ImagenetReport Converter::run() {
  DPTRAIN_CHECK(o_.size >= 1 && o_.size <= 8192, "--size must be between 1 and 8192, not ", o_.size);
  DPTRAIN_CHECK(o_.train_shards >= 1 && o_.validation_shards >= 1, "--shards and --val-shards must be positive");
  DPTRAIN_CHECK(o_.encoding == "raw" || o_.encoding == "jpeg", "--encoding must be 'raw' or 'jpeg', not '", o_.encoding,
                "'");

  std::ostringstream unused;  // every rank scans, one warns
  ImagenetTree tree = scan_imagenet_tree(o_.source, leader() ? warnings_ : unused);
  classes_ = static_cast<int>(tree.classes.size());
  if (leader()) {
    out_ << "dptrain data convert imagenet: " << classes_ << " classes, " << tree.train.size() << " train and "
         << tree.validation.size() << " validation images in " << o_.source << "; " << world_.size() << " rank"
         << (world_.size() > 1 ? "s" : "") << " x " << jobs_ << " threads\n";
  }
  prepare_output();

  ImagenetReport report;
  std::vector<SplitPlan> splits;
  splits.push_back(plan_split("train", std::move(tree.train), o_.train_shards, true, 1, report.skipped));
  splits.push_back(
      plan_split("validation", std::move(tree.validation), o_.validation_shards, false, 2, report.skipped));

  // Shard g (train shards first, then validation) belongs to rank g % ranks.
  struct Job {
    int split, shard;
    std::size_t global;
  };
  std::vector<Job> mine;
  std::size_t total_shards = 0;
  std::int64_t my_images = 0;
  for (int s = 0; s < static_cast<int>(splits.size()); ++s) {
    for (int i = 0; i < static_cast<int>(splits[static_cast<std::size_t>(s)].shards.size()); ++i, ++total_shards) {
      if (total_shards % static_cast<std::size_t>(world_.size()) != static_cast<std::size_t>(world_.rank())) continue;
      mine.push_back({s, i, total_shards});
      my_images +=
          static_cast<std::int64_t>(splits[static_cast<std::size_t>(s)].shards[static_cast<std::size_t>(i)].size());
    }
  }

  std::vector<std::uint32_t> crcs(total_shards, 0);
  std::vector<PixelSums> sums(mine.size());
  std::vector<std::uint64_t> counts(2, 0);  // shards written, shards reused
  {
    Progress progress(world_.size() > 1 ? "converting (rank 0's shards)" : "converting", my_images,
                      o_.progress && leader());
    std::mutex mutex;
    parallel_for(static_cast<std::int64_t>(mine.size()), jobs_, [&](std::int64_t j) {
      const Job& job = mine[static_cast<std::size_t>(j)];
      const SplitPlan& split = splits[static_cast<std::size_t>(job.split)];
      std::optional<ShardOutcome> outcome = reuse_shard(split, job.shard);
      if (outcome) {
        progress.add(static_cast<std::int64_t>(split.shards[static_cast<std::size_t>(job.shard)].size()));
      } else {
        outcome = convert_shard(split, job.shard, progress);
      }
      crcs[job.global] = outcome->crc;
      sums[static_cast<std::size_t>(j)] = outcome->sums;
      const std::lock_guard lock(mutex);
      ++counts[outcome->reused ? 1 : 0];
    });
    progress.finish();
  }

  // Everyone's checksums and statistics; the collectives also mean every shard is written.
  world_.bitwise_or(crcs);
  std::vector<std::uint64_t> totals(2 * kChannels + 1, 0);
  for (const PixelSums& s : sums) {
    for (int c = 0; c < kChannels; ++c) {
      totals[static_cast<std::size_t>(c)] += s.sum[static_cast<std::size_t>(c)];
      totals[static_cast<std::size_t>(kChannels + c)] += s.squares[static_cast<std::size_t>(c)];
    }
    totals[2 * kChannels] += s.pixels;
  }
  world_.sum(totals);
  world_.sum(counts);
  world_.barrier();

  data::Manifest manifest;
  manifest.name = "imagenet";
  manifest.classes = tree.classes;
  manifest.height = manifest.width = o_.size;
  manifest.channels = kChannels;
  manifest.encoding = o_.encoding;
  const auto pixels = static_cast<double>(totals[2 * kChannels]);
  for (int c = 0; c < kChannels; ++c) {
    const double mean = static_cast<double>(totals[static_cast<std::size_t>(c)]) / pixels;
    const double variance = static_cast<double>(totals[static_cast<std::size_t>(kChannels + c)]) / pixels - mean * mean;
    manifest.mean.push_back(mean);
    // A constant channel has no spread; 1 keeps normalisation a plain shift instead of a division by 0.
    manifest.stddev.push_back(variance > 0 ? std::sqrt(variance) : 1.0);
  }
  std::size_t global = 0;
  for (const SplitPlan& split : splits) {
    data::SplitInfo info;
    for (int i = 0; i < static_cast<int>(split.shards.size()); ++i, ++global) {
      info.shards.push_back({data::shard_file_name(split.name, i, static_cast<int>(split.shards.size())),
                             static_cast<std::int64_t>(split.shards[static_cast<std::size_t>(i)].size()),
                             split.first_sample[static_cast<std::size_t>(i)], format_crc(crcs[global])});
    }
    info.samples = static_cast<std::int64_t>(split.images.size());
    manifest.splits[split.name] = std::move(info);
  }
  if (leader()) {
    manifest.write(o_.output);
    forget_previous_manifest(o_.output);
    warn_about_stale_shards(manifest);
  }

  report.classes = classes_;
  report.train_samples = static_cast<std::int64_t>(splits[0].images.size());
  report.validation_samples = static_cast<std::int64_t>(splits[1].images.size());
  report.train_shards = static_cast<int>(splits[0].shards.size());
  report.validation_shards = static_cast<int>(splits[1].shards.size());
  report.shards_written = static_cast<int>(counts[0]);
  report.shards_reused = static_cast<int>(counts[1]);
  if (leader()) {
    out_ << "wrote " << o_.output << ": train " << report.train_samples << " images in " << report.train_shards
         << " shards, validation " << report.validation_samples << " in " << report.validation_shards << " ("
         << o_.encoding << " " << o_.size << "x" << o_.size << "x" << kChannels << "; " << report.shards_written
         << " shards written, " << report.shards_reused << " kept from an earlier run)\n"
         << std::fixed << std::setprecision(2) << "mean " << manifest.mean[0] << " " << manifest.mean[1] << " "
         << manifest.mean[2] << ", std " << manifest.stddev[0] << " " << manifest.stddev[1] << " " << manifest.stddev[2]
         << " (0-255, train split)\n";
    if (!report.skipped.empty()) {
      out_ << "skipped " << report.skipped.size() << " unreadable image" << (report.skipped.size() > 1 ? "s" : "")
           << " (named in the warnings above)\n";
    }
  }
  return report;
}
}  // namespace

ImagenetReport convert_imagenet(const ImagenetOptions& options, std::ostream& out, std::ostream& warnings) {
  MpiWorld world;
  try {
    return Converter(options, world, out, warnings).run();
  } catch (const std::exception& e) {
    if (world.size() > 1) {
      // The other ranks may be waiting in a collective for this one: end them all.
      warnings << "dptrain: error on rank " << world.rank() << ": " << e.what() << std::endl;
      world.abort(1);
    }
    throw;
  }
}

}  // namespace dptrain::datasets
