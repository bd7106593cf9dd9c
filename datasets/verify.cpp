#include "datasets/verify.hpp"

#include <filesystem>
#include <map>
#include <sstream>

#include "dptrain/core/error.hpp"
#include "dptrain/data/manifest.hpp"
#include "dptrain/data/shard.hpp"

namespace dptrain::datasets {

VerifyReport verify_dataset(const std::string& directory) {
  namespace fs = std::filesystem;
  const data::Manifest manifest = data::Manifest::read(directory);
  VerifyReport report;
  std::map<std::string, int> read_paths;  // how the loader will read each shard, and how many take that way
  std::ostringstream summary;
  summary << "dataset '" << manifest.name << "' in " << directory << ": " << manifest.class_count() << " classes, "
          << manifest.height << "x" << manifest.width << "x" << manifest.channels << " " << manifest.encoding;
  for (const auto& [name, split] : manifest.splits) {
    for (std::size_t i = 0; i < split.shards.size(); ++i) {
      const data::ShardInfo& info = split.shards[i];
      const std::string path = (fs::path(directory) / info.file).string();
      ++report.shards;
      if (!fs::exists(path)) {
        report.problems.push_back(path + ": the shard is missing (the manifest lists it in split '" + name + "')");
        continue;
      }
      const data::ShardHeader expected = data::expected_shard_header(manifest, name, i);
      try {
        // Validates every attribute and dataset size, and that each label is in [0, classes).
        const data::ShardReader reader(path, expected);
        ++read_paths[reader.read_path()];
        const std::string checksum = data::file_checksum(path);
        DPTRAIN_CHECK(checksum == info.checksum, path, ": checksum ", checksum, " does not match the manifest's ",
                      info.checksum, " (the file changed after conversion or is damaged; convert again)");
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
  for (const auto& [how, count] : read_paths) {
    summary << "\nread path: " << how << " (" << count << (count == 1 ? " shard)" : " shards)");
  }
  report.summary = summary.str();
  return report;
}

}  // namespace dptrain::datasets
