#include "dptrain/ckpt/checkpoint_directory.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "dptrain/ckpt/checkpoint_file.hpp"
#include "dptrain/ckpt/finite_state.hpp"
#include "dptrain/io/durable_io.hpp"
#include "dptrain/io/exclusive_file.hpp"

namespace dptrain::ckpt {
namespace fs = std::filesystem;

namespace {
constexpr std::string_view kPrefix = "ckpt-";
constexpr std::string_view kSuffix = ".h5";
constexpr std::string_view kTemporarySuffix = ".tmp";

std::vector<fs::path> directory_entries(const std::string& directory) {
  std::vector<fs::path> out;
  std::error_code ec;
  const fs::file_status status = fs::status(directory, ec);
  // Only a directory that is not there is empty; one that cannot be reached is an error, or a run
  // would start afresh beside checkpoints it could not see.
  if (status.type() == fs::file_type::not_found) return out;
  DPTRAIN_CHECK(!ec, "cannot reach the checkpoint directory ", directory, ": ", ec.message());
  DPTRAIN_CHECK(fs::is_directory(status), "the checkpoint directory ", directory, " is not a directory");
  fs::directory_iterator it(directory, ec);
  DPTRAIN_CHECK(!ec, "cannot list the checkpoint directory ", directory, ": ", ec.message());
  for (fs::directory_iterator end; it != end; it.increment(ec)) {
    out.push_back(it->path());
  }
  DPTRAIN_CHECK(!ec, "cannot list the checkpoint directory ", directory, ": ", ec.message());
  return out;
}

// What is at `path`, the name itself (a symlink is not followed); nullopt when nothing is.
std::optional<mode_t> entry_kind(const fs::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) return st.st_mode;
  if (errno == ENOENT) return std::nullopt;
  io::throw_posix_error("lstat", path.string());
}

bool is_plain_file(const fs::path& path) {
  const std::optional<mode_t> kind = entry_kind(path);
  return kind && S_ISREG(*kind);
}

void remove_file(const fs::path& path, std::vector<std::string>& removed) {
  if (::unlink(path.c_str()) == 0) {
    removed.push_back(path.string());
  } else if (errno != ENOENT) {
    io::throw_posix_error("unlink", path.string());
  }
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
  const std::int64_t step = std::stoll(digits);
  // Exactly the name dptrain writes for that step: retention deletes by these names.
  if (checkpoint_file_name(step) != file_name) return std::nullopt;
  return step;
}

bool is_temporary_name(const std::string& file_name) {
  if (!file_name.ends_with(kTemporarySuffix)) return false;
  const std::string stem = file_name.substr(0, file_name.size() - kTemporarySuffix.size());
  return checkpoint_step(stem).has_value() || stem == kLatestName || file_name == kWriteCheckName;
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
  const fs::file_status status = fs::status(path, ec);
  if (status.type() == fs::file_type::not_found) return std::nullopt;
  DPTRAIN_CHECK(!ec, "cannot read ", path.string(), ": ", ec.message());
  std::ifstream in(path);
  DPTRAIN_CHECK(in.good(), "cannot read ", path.string(), ": ", std::strerror(errno));
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
    if (is_temporary_name(path.filename().string()) && is_plain_file(path)) remove_file(path, removed);
  }
  if (keep == 0) return removed;
  std::vector<CheckpointEntry> ours = list_checkpoints(directory);
  std::erase_if(ours, [](const CheckpointEntry& e) { return !is_plain_file(e.path); });
  const std::optional<std::string> latest = read_latest(directory);
  const std::size_t excess = ours.size() > static_cast<std::size_t>(keep) ? ours.size() - keep : 0;
  for (std::size_t i = 0; i < excess; ++i) {
    if (latest && fs::path(ours[i].path).filename() == *latest) continue;
    remove_file(ours[i].path, removed);
  }
  return removed;
}

std::vector<std::string> remove_stale_temporaries(const std::string& directory) {
  std::vector<std::string> removed;
  for (const fs::path& path : directory_entries(directory)) {
    if (!is_temporary_name(path.filename().string())) continue;
    const std::optional<mode_t> kind = entry_kind(path);
    if (!kind) continue;  // gone meanwhile
    DPTRAIN_CHECK(S_ISREG(*kind), path.string(), " is ", S_ISLNK(*kind) ? "a symbolic link" : "not a regular file",
                  " at a name where dptrain writes its temporary files: dptrain did not make it and never writes "
                  "through it or deletes it; remove it (and check who put it there)");
    remove_file(path, removed);
  }
  return removed;
}

void write_check(const std::string& directory) {
  try {
    io::ExclusiveFile check((fs::path(directory) / kWriteCheckName).string());
    check.write("dptrain checks that it can write this directory\n");
    check.sync();
  } catch (const Error& e) {
    throw Error(detail::concat("the checkpoint directory ", directory, " is not writable (", e.what(),
                               "); fix its permissions or free space, or give another --checkpoint-dir"));
  }
}

std::optional<ResumePoint> find_resume_checkpoint(const std::string& directory, std::vector<std::string>& warnings) {
  // Every file tried and why it could not be used: warnings when an older one serves, the error when
  // none does.
  std::vector<std::string> problems;
  std::vector<std::string> candidates;
  const fs::path latest_path = fs::path(directory) / kLatestName;
  std::error_code ec;
  const bool has_latest = fs::symlink_status(latest_path, ec).type() != fs::file_type::not_found;
  std::optional<std::string> latest;
  try {
    latest = read_latest(directory);
  } catch (const Error& e) {
    problems.push_back(e.what());
  }
  if (latest) {
    const std::string path = (fs::path(directory) / *latest).string();
    if (fs::symlink_status(path, ec).type() != fs::file_type::not_found) {
      candidates.push_back(path);
    } else {
      problems.push_back(detail::concat(latest_path.string(), " names ", *latest, ", which does not exist"));
    }
  }
  const std::vector<CheckpointEntry> all = list_checkpoints(directory);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (candidates.empty() || it->path != candidates.front()) candidates.push_back(it->path);
  }
  // A fresh start only where there is nothing to lose: no checkpoint, and no `latest` saying there was.
  if (candidates.empty() && !has_latest) return std::nullopt;
  for (const std::string& path : candidates) {
    try {
      ResumePoint point{path, read_checkpoint(path)};
      require_finite(point.state, path);
      for (const std::string& p : problems) warnings.push_back(detail::concat("skipping: ", p));
      return point;
    } catch (const Error& e) {
      problems.push_back(e.what());
    }
  }
  std::ostringstream error;
  error << "--resume auto: the checkpoint directory " << directory
        << (candidates.empty() ? std::string(" has a 'latest' but no checkpoint")
                               : detail::concat(" holds ", candidates.size(), " checkpoint",
                                                candidates.size() == 1 ? "" : "s", " but none can be used"))
        << " (";
  for (std::size_t i = 0; i < problems.size(); ++i) error << (i ? "; " : "") << problems[i];
  error << "); repair or move them, or give --resume none to start afresh (its checkpoints then replace these)";
  throw Error(error.str());
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
