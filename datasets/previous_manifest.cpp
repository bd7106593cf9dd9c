#include "datasets/previous_manifest.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "dptrain/core/error.hpp"
#include "dptrain/data/manifest.hpp"

namespace dptrain::datasets {
namespace {
namespace fs = std::filesystem;
constexpr const char* kPrevious = ".manifest-previous.json";
}  // namespace

std::map<std::string, std::string> previous_checksums(const std::string& directory) {
  std::map<std::string, std::string> listed;
  for (const char* name : {"manifest.json", kPrevious}) {
    const fs::path path = fs::path(directory) / name;
    std::ifstream in(path);
    if (!in) continue;
    std::ostringstream text;
    text << in.rdbuf();
    try {
      const data::Manifest manifest = data::Manifest::parse(text.str(), path.string());
      for (const auto& [split_name, split] : manifest.splits) {
        for (const data::ShardInfo& shard : split.shards) listed[shard.file] = shard.checksum;
      }
      return listed;
    } catch (const Error&) {
      continue;  // a damaged list proves nothing: the shards are then checked as a first run checks them
    }
  }
  return listed;
}

void set_aside_manifest(const std::string& directory) {
  const fs::path manifest = fs::path(directory) / "manifest.json";
  std::error_code error;
  if (!fs::exists(manifest, error)) return;
  fs::rename(manifest, fs::path(directory) / kPrevious, error);
  DPTRAIN_CHECK(!error, manifest.string(), ": cannot set the old manifest aside (", error.message(), ")");
}

void forget_previous_manifest(const std::string& directory) {
  std::error_code error;
  fs::remove(fs::path(directory) / kPrevious, error);  // best effort: a leftover is only read, and checked
}

}  // namespace dptrain::datasets
