#pragma once
// `dptrain data verify DIR`: checks a dataset directory the way training would read it, before a
// long job finds out. For every shard of every split in manifest.json: the file exists, its header
// and dataset sizes match the manifest (ShardReader's validation), its labels are in range, and its
// CRC-32 matches the manifest's checksum; for JPEG datasets every entry is decoded too (unless
// `quick`), so a damaged or foreign image is named before training meets it. It also says how the
// loader will read the samples (pread, or H5Dread under the HDF5 lock and why).
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace dptrain::datasets {

struct VerifyReport {
  std::vector<std::string> problems;  // one sentence each, naming the file
  std::string summary;                // what was checked, then a "read path: ..." line per way the loader reads shards
  std::int64_t shards = 0, samples = 0;
  bool ok() const { return problems.empty(); }
};

// An unreadable or invalid manifest is an Error; problems with shards are collected, so one run
// lists every bad file. `progress`: where a line at least every ten seconds says how many shards are
// checked (core/progress_line.hpp); null: none.
VerifyReport verify_dataset(const std::string& directory, bool quick = false, std::ostream* progress = nullptr);

}  // namespace dptrain::datasets
