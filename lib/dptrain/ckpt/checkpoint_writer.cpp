#include "dptrain/ckpt/checkpoint_writer.hpp"

#include <chrono>
#include <filesystem>

#include "dptrain/ckpt/checkpoint_directory.hpp"
#include "dptrain/ckpt/checkpoint_file.hpp"
#include "dptrain/ckpt/finite_state.hpp"
#include "dptrain/io/durable_io.hpp"
#include "dptrain/io/exclusive_file.hpp"

namespace dptrain::ckpt {
namespace {
// Refuses a diverged state before anything is created: `latest` keeps naming the last good checkpoint.
void check_finite(const std::string& directory, const TrainingState& state) {
  const std::optional<std::string> bad = find_non_finite(state);
  if (!bad) return;
  std::optional<std::string> latest;
  try {
    latest = read_latest(directory);
  } catch (const Error&) {
    // The refusal matters more than naming the previous checkpoint.
  }
  throw Error(detail::concat("step ", state.progress.global_step, ": not writing a checkpoint in ", directory,
                             ", because its ", *bad, ": the training has diverged; ",
                             latest ? detail::concat((std::filesystem::path(directory) / kLatestName).string(),
                                                     " still names ", *latest, ", the last checkpoint written")
                                    : std::string("no earlier checkpoint exists")));
}

void write_checkpoint_file_durably(const std::string& path, const TrainingState& state, bool replace) {
  // Built in memory first: a full disk or a file-size limit is then the errno of our write(2), named
  // with the temporary's path ("No space left on device", "File too large"), and the temporary is
  // removed by ExclusiveFile; nothing on disk has changed but that temporary.
  std::string image;
  try {
    image = checkpoint_file_image(state);
  } catch (const Error& e) {
    throw Error(detail::concat("writing checkpoint ", path, ": ", e.what()));
  }
  {
    io::ExclusiveFile temporary(replace ? path + ".tmp" : io::temporary_name_for(path));
    temporary.write(image);
    temporary.sync();  // the data before the name: a crash must not leave a renamed empty file
    if (replace) {
      temporary.rename_to(path);
    } else {
      temporary.rename_to_new(path);
    }
  }
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  io::fsync_directory(parent.empty() ? "." : parent.string());
}
}  // namespace

void write_checkpoint_as(const std::string& path, const TrainingState& state) {
  write_checkpoint_file_durably(path, state, true);
}

void write_new_checkpoint(const std::string& path, const TrainingState& state) {
  write_checkpoint_file_durably(path, state, false);
}

WriteReport write_checkpoint(const std::string& directory, const TrainingState& state) {
  namespace fs = std::filesystem;
  const auto start = std::chrono::steady_clock::now();
  check_finite(directory, state);
  std::error_code ec;
  fs::create_directories(directory, ec);
  DPTRAIN_CHECK(!ec, "cannot create the checkpoint directory ", directory, ": ", ec.message());
  const std::string name = checkpoint_file_name(state.progress.global_step);
  const std::string final_path = (fs::path(directory) / name).string();
  write_checkpoint_as(final_path, state);
  io::replace_file_atomically(directory, kLatestName, name + "\n");
  WriteReport report;
  report.path = final_path;
  report.bytes = fs::file_size(final_path, ec);
  DPTRAIN_CHECK(!ec, "cannot stat the checkpoint just written, ", final_path, ": ", ec.message());
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace dptrain::ckpt
