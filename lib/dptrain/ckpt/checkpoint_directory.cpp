#include "dptrain/ckpt/checkpoint_directory.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "dptrain/ckpt/checkpoint_file.hpp"

namespace dptrain::ckpt {
namespace fs = std::filesystem;

namespace {
constexpr std::string_view kPrefix = "ckpt-";
constexpr std::string_view kSuffix = ".h5";

std::vector<fs::path> directory_entries(const std::string& directory) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(directory, ec)) return out;
  fs::directory_iterator it(directory, ec);
  DPTRAIN_CHECK(!ec, "cannot list the checkpoint directory ", directory, ": ", ec.message());
  for (const fs::directory_entry& entry : it) out.push_back(entry.path());
  return out;
}

void remove_file(const fs::path& path, std::vector<std::string>& removed) {
  std::error_code ec;
  if (fs::remove(path, ec)) removed.push_back(path.string());
  DPTRAIN_CHECK(!ec, "cannot delete ", path.string(), ": ", ec.message());
}
}  // namespace

std::string checkpoint_file_name(std::int64_t step) {
  DPTRAIN_CHECK(step >= 0, "a checkpoint's step cannot be negative (", step, ")");
  char name[48];
  std::snprintf(name, sizeof name, "ckpt-%09lld.h5", static_cast<long long>(step));
  return name;
}

std::optional<std::int64_t> checkpoint_step(const std::string& file_name) {
  if (!file_name.starts_with(kPrefix) || !file_name.ends_with(kSuffix)) return std::nullopt;
  const std::string digits = file_name.substr(kPrefix.size(), file_name.size() - kPrefix.size() - kSuffix.size());
  if (digits.empty() || digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c) != 0; }))
    return std::nullopt;
  return std::stoll(digits);
}

std::vector<CheckpointEntry> list_checkpoints(const std::string& directory) {
  std::vector<CheckpointEntry> out;
  for (const fs::path& path : directory_entries(directory)) {
    if (const auto step = checkpoint_step(path.filename().string())) out.push_back({*step, path.string()});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
  return out;
}

std::optional<std::string> read_latest(const std::string& directory) {
  const fs::path path = fs::path(directory) / kLatestName;
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  std::ifstream in(path);
  DPTRAIN_CHECK(in.good(), "cannot read ", path.string());
  std::string name;
  in >> name;  // the first word: the trailing newline and any stray whitespace go
  DPTRAIN_CHECK(!name.empty() && name.find('/') == std::string::npos && name != "." && name != "..", path.string(),
                " should name a checkpoint file in its directory but holds '", name, "'");
  return name;
}

std::vector<std::string> prune_checkpoints(const std::string& directory, int keep) {
  DPTRAIN_CHECK(keep >= 0, "the number of checkpoints to keep cannot be negative (", keep, ")");
  std::vector<std::string> removed;
  for (const fs::path& path : directory_entries(directory)) {
    const std::string name = path.filename().string();
    if (name.starts_with(kPrefix) && name.ends_with(".tmp")) remove_file(path, removed);
  }
  if (keep == 0) return removed;
  const std::vector<CheckpointEntry> all = list_checkpoints(directory);
  const std::optional<std::string> latest = read_latest(directory);
  const std::size_t excess = all.size() > static_cast<std::size_t>(keep) ? all.size() - keep : 0;
  for (std::size_t i = 0; i < excess; ++i) {
    if (latest && fs::path(all[i].path).filename() == *latest) continue;
    remove_file(all[i].path, removed);
  }
  return removed;
}

std::optional<ResumePoint> find_resume_checkpoint(const std::string& directory, std::vector<std::string>& warnings) {
  std::vector<std::string> candidates;
  std::optional<std::string> latest;
  try {
    latest = read_latest(directory);
  } catch (const Error& e) {
    warnings.push_back(e.what());
  }
  if (latest) {
    const std::string path = (fs::path(directory) / *latest).string();
    if (fs::exists(path)) {
      candidates.push_back(path);
    } else {
      warnings.push_back(detail::concat((fs::path(directory) / kLatestName).string(), " names ", *latest,
                                        ", which does not exist; looking for an older checkpoint"));
    }
  }
  const std::vector<CheckpointEntry> all = list_checkpoints(directory);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (candidates.empty() || it->path != candidates.front()) candidates.push_back(it->path);
  }
  for (const std::string& path : candidates) {
    try {
      return ResumePoint{path, read_checkpoint(path)};
    } catch (const Error& e) {
      warnings.push_back(detail::concat("skipping ", path, ": ", e.what()));
    }
  }
  return std::nullopt;
}

std::optional<ResumePoint> find_resume_checkpoint(const std::string& directory) {
  std::vector<std::string> warnings;
  std::optional<ResumePoint> found = find_resume_checkpoint(directory, warnings);
  for (const std::string& w : warnings) std::cerr << "dptrain: warning: " << w << "\n";
  return found;
}

std::string resolve_checkpoint_path(const std::string& file_or_directory) {
  std::error_code ec;
  if (!fs::is_directory(file_or_directory, ec)) return file_or_directory;
  if (const std::optional<std::string> latest = read_latest(file_or_directory)) {
    return (fs::path(file_or_directory) / *latest).string();
  }
  const std::vector<CheckpointEntry> all = list_checkpoints(file_or_directory);
  DPTRAIN_CHECK(!all.empty(), file_or_directory, " holds no checkpoint (no 'latest' and no ckpt-*.h5)");
  return all.back().path;
}

}  // namespace dptrain::ckpt
