#include "dptrain/train/trace_file.hpp"

#include <filesystem>
#include <system_error>

#include "dptrain/core/error.hpp"
#include "dptrain/io/durable_io.hpp"

namespace dptrain {
namespace {
std::string trace_file_name(int rank) { return "trace-rank-" + std::to_string(rank) + ".json"; }
}  // namespace

TraceWindow trace_window(const std::string& steps, std::int64_t first_step) {
  if (!steps.empty()) return parse_trace_window(steps);
  return TraceWindow{first_step + 5, first_step + 24};
}

void prepare_trace_directory(const std::string& directory) {
  DPTRAIN_CHECK(!directory.empty(), "--trace: give a directory for the trace files");
  std::error_code error;
  // false with no error when it exists already (another rank may just have made it).
  std::filesystem::create_directories(directory, error);
  DPTRAIN_CHECK(!error, "--trace ", directory, ": cannot create the directory (", error.message(),
                "); give a directory this job can write");
  DPTRAIN_CHECK(std::filesystem::is_directory(directory, error), "--trace ", directory,
                ": is not a directory; give a directory for the trace files");
}

std::string trace_file_path(const std::string& directory, int rank) {
  return (std::filesystem::path(directory) / trace_file_name(rank)).string();
}

void write_trace_file(const std::string& directory, int rank, const std::string& json) {
  io::replace_file_atomically(directory, trace_file_name(rank), json);
}

}  // namespace dptrain
