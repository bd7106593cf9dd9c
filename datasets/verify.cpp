#include "datasets/verify.hpp"

#include <filesystem>
#include <map>
#include <sstream>

#include "dptrain/core/error.hpp"
#include "dptrain/core/progress_line.hpp"
#include "dptrain/data/jpeg_crop.hpp"
#include "dptrain/data/manifest.hpp"
#include "dptrain/data/shard.hpp"

namespace dptrain::datasets {
namespace {
// Decodes every JPEG entry of `reader` whole, at full size, checking the header's geometry against the
// manifest before decoding; the first bad entry is an Error naming the shard and the sample.
void decode_every_entry(const data::ShardReader& reader, const data::Manifest& manifest) {
  data::JpegCropDecoder decoder;
  data::Image image;
  std::vector<std::uint8_t> bytes;
  const data::PixelWindow whole{0, 0, manifest.height, manifest.width};
  for (std::int64_t i = 0; i < reader.header().samples; ++i) {
    reader.read_jpeg(i, bytes);
    const std::string what = detail::concat(reader.path(), " (sample ", i, ")");
    decoder.decode(bytes.data(), bytes.size(), manifest.channels, data::JpegScale{}, whole, what, image,
                   manifest.height, manifest.width);
  }
}
}  // namespace

VerifyReport verify_dataset(const std::string& directory, bool quick, std::ostream* progress) {
  namespace fs = std::filesystem;
  const data::Manifest manifest = data::Manifest::read(directory);
  VerifyReport report;
  std::map<std::string, int> read_paths;  // how the loader will read each shard, and how many take that way
  std::ostringstream summary;
  summary << "dataset '" << manifest.name << "' in " << directory << ": " << manifest.class_count() << " classes, "
          << manifest.height << "x" << manifest.width << "x" << manifest.channels << " " << manifest.encoding;
  std::int64_t shards = 0;
  for (const auto& [name, split] : manifest.splits) shards += static_cast<std::int64_t>(split.shards.size());
  ProgressLine line(progress, "verify", shards, "shards");
  for (const auto& [name, split] : manifest.splits) {
    for (std::size_t i = 0; i < split.shards.size(); ++i) {
      line.update(report.shards);
      const data::ShardInfo& info = split.shards[i];
      const std::string path = (fs::path(directory) / info.file).string();
      ++report.shards;
      if (!fs::exists(path)) {
        report.problems.push_back(path + ": the shard is missing (the manifest lists it in split '" + name + "')");
        continue;
      }
      const data::ShardHeader expected = data::expected_shard_header(manifest, name, i);
      try {
        // The checksum first: a damaged file is named without HDF5 ever parsing it.
        const std::string checksum = data::file_checksum(path);
        DPTRAIN_CHECK(checksum == info.checksum, path, ": checksum ", checksum, " does not match the manifest's ",
                      info.checksum, " (the file changed after conversion or is damaged; convert again)");
        // Validates every attribute and dataset size, and that each label is in [0, classes).
        const data::ShardReader reader(path, expected);
        ++read_paths[reader.read_path()];
        if (manifest.encoding == "jpeg" && !quick) decode_every_entry(reader, manifest);
        report.samples += info.samples;
      } catch (const Error& e) {
        // Library-level failures (an HDF5 call) do not know the file; every problem must name it.
        const std::string message = e.what();
        report.problems.push_back(message.find(path) == std::string::npos ? path + ": " + message : message);
      }
    }
    summary << "; " << name << " " << split.samples << " samples in " << split.shards.size()
            << (split.shards.size() == 1 ? " shard" : " shards");
  }
  if (manifest.encoding == "jpeg") {
    summary << (quick ? "\nJPEG entries: not decoded (--quick)" : "\nJPEG entries: every one decoded");
  }
  for (const auto& [how, count] : read_paths) {
    summary << "\nread path: " << how << " (" << count << (count == 1 ? " shard)" : " shards)");
  }
  report.summary = summary.str();
  return report;
}

}  // namespace dptrain::datasets
