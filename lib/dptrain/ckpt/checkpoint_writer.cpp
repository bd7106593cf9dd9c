#include "dptrain/ckpt/checkpoint_writer.hpp"

#include <chrono>
#include <filesystem>

#include "dptrain/ckpt/checkpoint_directory.hpp"
#include "dptrain/ckpt/checkpoint_file.hpp"
#include "dptrain/ckpt/durable_io.hpp"

namespace dptrain::ckpt {

WriteReport write_checkpoint(const std::string& directory, const TrainingState& state) {
  namespace fs = std::filesystem;
  const auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  fs::create_directories(directory, ec);
  DPTRAIN_CHECK(!ec, "cannot create the checkpoint directory ", directory, ": ", ec.message());
  const std::string name = checkpoint_file_name(state.progress.global_step);
  const std::string final_path = (fs::path(directory) / name).string();
  const std::string temporary = final_path + ".tmp";
  write_checkpoint_file(temporary, state);
  fsync_file(temporary);  // the data before the name: a crash must not leave a renamed empty file
  rename_file(temporary, final_path);
  fsync_directory(directory);
  replace_file_atomically(directory, kLatestName, name + "\n");
  WriteReport report;
  report.path = final_path;
  report.bytes = fs::file_size(final_path, ec);
  DPTRAIN_CHECK(!ec, "cannot stat the checkpoint just written, ", final_path, ": ", ec.message());
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace dptrain::ckpt
