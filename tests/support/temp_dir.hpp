#pragma once
// A fresh, empty directory per object under the system's temporary directory, removed (best effort:
// a leftover is not a test failure) when the object goes. The name holds `prefix`, the pid and a
// counter, so tests running at once under CTest -j never share one.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace dptrain::testing {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "dptrain_test") {
    static std::atomic<int> counter{0};
    path = std::filesystem::temp_directory_path() /
           (prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::filesystem::path path;
};

// A file's whole text ("" for a file that cannot be read).
inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace dptrain::testing
