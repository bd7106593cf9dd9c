// What the writer refuses: a diverged state (NaN or infinity in the weights or the optimizer state),
// and writing through anything planted at its temporary names; and the start-up checks of a directory
// (stale temporaries, writability).
#include <sys/mount.h>
#include <sys/resource.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <limits>

#include "ckpt_testing.hpp"
#include "dptrain/ckpt/checkpoint_directory.hpp"
#include "dptrain/ckpt/checkpoint_file.hpp"
#include "dptrain/ckpt/checkpoint_writer.hpp"
#include "dptrain/ckpt/finite_state.hpp"
#include "dptrain/io/durable_io.hpp"
#include "dptrain/io/exclusive_file.hpp"

using namespace dptrain;
using namespace dptrain::testing;
namespace fs = std::filesystem;

namespace {
bool has_temporary(const std::string& dir) {
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".tmp") return true;
  }
  return false;
}
}  // namespace

TEST_CASE("a state that is not finite is never written, and `latest` keeps the last good one", "[ckpt]") {
  ScratchDirectory dir("ckpt-diverged");
  ckpt::write_checkpoint(dir.path(), synthetic_state(2));
  ckpt::TrainingState diverged = synthetic_state(3);
  SECTION("a NaN in a parameter") {
    diverged.parameters[1].value.data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
    diverged.parameters[1].value.data<float>()[9] = std::numeric_limits<float>::quiet_NaN();
    CHECK_THROWS_WITH(ckpt::write_checkpoint(dir.path(), diverged),
                      Catch::Contains("step 3: not writing a checkpoint in " + dir.path()) &&
                          Catch::Contains("parameter layer1/weight holds 2 values that are not finite (the first, "
                                          "nan, at index 5)") &&
                          Catch::Contains(dir.file("latest") + " still names ckpt-000000002.h5"));
  }
  SECTION("an infinity in a momentum buffer") {
    diverged.optimizer.momentum[0].value.data<float>()[0] = std::numeric_limits<float>::infinity();
    CHECK_THROWS_WITH(ckpt::write_checkpoint(dir.path(), diverged),
                      Catch::Contains("the momentum buffer of layer0/weight holds 1 value that is not finite"));
  }
  SECTION("a NaN in a batch-norm buffer") {
    diverged.buffers[0].value.data<float>()[3] = -std::numeric_limits<float>::quiet_NaN();
    CHECK_THROWS_WITH(ckpt::write_checkpoint(dir.path(), diverged), Catch::Contains("buffer bn/running_mean"));
  }
  CHECK(ckpt::read_latest(dir.path()) == "ckpt-000000002.h5");
  CHECK_FALSE(fs::exists(dir.file("ckpt-000000003.h5")));
  CHECK_FALSE(has_temporary(dir.path()));
  CHECK_FALSE(ckpt::find_non_finite(synthetic_state(4)));
}

TEST_CASE("a symlink planted at a temporary name is never written through", "[ckpt]") {
  ScratchDirectory dir("ckpt-planted");
  ScratchDirectory elsewhere("ckpt-victim");
  const std::vector<char> precious{'p', 'r', 'e', 'c', 'i', 'o', 'u', 's'};
  write_bytes(elsewhere.file("victim"), precious);
  ckpt::write_checkpoint(dir.path(), synthetic_state(1));
  SECTION("at the checkpoint's temporary name") {
    fs::create_symlink(elsewhere.file("victim"), dir.file("ckpt-000000002.h5.tmp"));
    CHECK_THROWS_WITH(ckpt::write_checkpoint(dir.path(), synthetic_state(2)),
                      Catch::Contains(dir.file("ckpt-000000002.h5.tmp") + " is a symbolic link"));
    CHECK(fs::is_symlink(dir.file("ckpt-000000002.h5.tmp")));  // left for its owner to look at
    CHECK_FALSE(fs::exists(dir.file("ckpt-000000002.h5")));
    CHECK(ckpt::read_latest(dir.path()) == "ckpt-000000001.h5");
  }
  SECTION("at latest.tmp") {
    fs::create_symlink(elsewhere.file("victim"), dir.file("latest.tmp"));
    CHECK_THROWS_WITH(ckpt::write_checkpoint(dir.path(), synthetic_state(2)),
                      Catch::Contains(dir.file("latest.tmp") + " is a symbolic link"));
    CHECK(fs::is_symlink(dir.file("latest.tmp")));
    CHECK(ckpt::read_latest(dir.path()) == "ckpt-000000001.h5");
  }
  SECTION("a dangling symlink, which O_CREAT alone would create its target through") {
    fs::create_symlink(elsewhere.file("created"), dir.file("ckpt-000000002.h5.tmp"));
    CHECK_THROWS(ckpt::write_checkpoint(dir.path(), synthetic_state(2)));
    CHECK_FALSE(fs::exists(elsewhere.file("created")));
  }
  CHECK(read_bytes(elsewhere.file("victim")) == precious);
}

TEST_CASE("a killed writer's temporary file is replaced; a failed write leaves none", "[ckpt]") {
  ScratchDirectory dir("ckpt-exclusive");
  write_bytes(dir.file("ckpt-000000004.h5.tmp"), std::vector<char>(1000, 'z'));
  ckpt::write_checkpoint(dir.path(), synthetic_state(4));
  CHECK(ckpt::read_latest(dir.path()) == "ckpt-000000004.h5");
  CHECK_FALSE(has_temporary(dir.path()));
  {
    io::ExclusiveFile file(dir.file("latest.tmp"));
    file.write("half");
    // Never renamed: its destructor removes it, as after a failed write.
  }
  CHECK_FALSE(fs::exists(dir.file("latest.tmp")));
  CHECK(ckpt::read_latest(dir.path()) == "ckpt-000000004.h5");
}

TEST_CASE("start-up removes stale temporaries, refuses planted ones, and checks the directory is writable", "[ckpt]") {
  ScratchDirectory dir("ckpt-start");
  write_bytes(dir.file("ckpt-000000008.h5.tmp"), {'x'});
  write_bytes(dir.file("latest.tmp"), {'y'});
  write_bytes(dir.file("mine.tmp"), {'m'});  // not a dptrain name: left alone
  const auto removed = ckpt::remove_stale_temporaries(dir.path());
  CHECK(removed.size() == 2);
  CHECK_FALSE(fs::exists(dir.file("ckpt-000000008.h5.tmp")));
  CHECK_FALSE(fs::exists(dir.file("latest.tmp")));
  CHECK(fs::exists(dir.file("mine.tmp")));
  fs::create_symlink("/etc/hostname", dir.file("ckpt-000000009.h5.tmp"));
  CHECK_THROWS_WITH(ckpt::remove_stale_temporaries(dir.path()),
                    Catch::Contains(dir.file("ckpt-000000009.h5.tmp") + " is a symbolic link"));
  CHECK(fs::is_symlink(dir.file("ckpt-000000009.h5.tmp")));

  ckpt::write_check(dir.path());
  CHECK_FALSE(fs::exists(dir.file(ckpt::kWriteCheckName)));
  // /proc: a directory that even root cannot create files in.
  CHECK_THROWS_WITH(ckpt::write_check("/proc"), Catch::Contains("the checkpoint directory /proc is not writable"));
  if (::geteuid() != 0) {  // root writes through any mode bits
    ScratchDirectory read_only("ckpt-read-only");
    fs::permissions(read_only.path(), fs::perms::owner_read | fs::perms::owner_exec);
    CHECK_THROWS_WITH(ckpt::write_check(read_only.path()), Catch::Contains("is not writable"));
    fs::permissions(read_only.path(), fs::perms::owner_all);
  }
}

TEST_CASE("a file the user named is written only where nothing exists, even something made meanwhile", "[ckpt]") {
  ScratchDirectory dir("ckpt-new");
  const std::string path = dir.file("imported.h5");
  ckpt::write_new_checkpoint(path, synthetic_state(0));
  CHECK(ckpt::read_checkpoint(path).progress.global_step == 0);
  CHECK_FALSE(has_temporary(dir.path()));
  // Whatever is at the name by the time of the rename stays: a second write fails and leaves no
  // temporary behind.
  CHECK_THROWS_WITH(ckpt::write_new_checkpoint(path, synthetic_state(5)),
                    Catch::Contains("imported.h5 already exists: not replacing it"));
  CHECK(ckpt::read_checkpoint(path).progress.global_step == 0);
  CHECK_FALSE(has_temporary(dir.path()));
  {
    io::ExclusiveFile file(dir.file("other.tmp"));
    file.write("bytes");
    write_bytes(dir.file("other"), std::vector<char>(3, 'u'));  // appears while the file is written
    CHECK_THROWS_WITH(file.rename_to_new(dir.file("other")), Catch::Contains("already exists"));
  }
  CHECK(fs::file_size(dir.file("other")) == 3);
  // The replacing write of a checkpoint directory's own files is unchanged.
  ckpt::write_checkpoint_as(path, synthetic_state(6));
  CHECK(ckpt::read_checkpoint(path).progress.global_step == 6);
}

namespace {
// A file-size limit for this process while it lives (the soft limit only, so it can be restored), with
// SIGXFSZ ignored as dptrain's main ignores it: the write that crosses it fails with EFBIG.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved_) == 0);
    previous_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit limited = saved_;
    limited.rlim_cur = bytes;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &limited) == 0);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, previous_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit saved_{};
  void (*previous_)(int) = SIG_DFL;
};

// The previous checkpoint is still the one `latest` names, whole and readable, and no temporary is left.
void expect_untouched(const std::string& dir, const ckpt::TrainingState& before) {
  CHECK_FALSE(has_temporary(dir));
  const auto latest = ckpt::read_latest(dir);
  REQUIRE(latest);
  CHECK(*latest == ckpt::checkpoint_file_name(before.progress.global_step));
  const ckpt::TrainingState read = ckpt::read_checkpoint((fs::path(dir) / *latest).string());
  CHECK(read.progress.global_step == before.progress.global_step);
}
}  // namespace

TEST_CASE("a file-size limit fails a checkpoint write naming the file and the cause, and loses nothing",
          "[ckpt][hostile]") {
  ScratchDirectory dir("ckpt-efbig");
  const ckpt::TrainingState first = synthetic_state(1, 3, 1000);
  ckpt::write_checkpoint(dir.path(), first);
  const auto first_bytes = fs::file_size(fs::path(dir.path()) / ckpt::checkpoint_file_name(1));
  // Limits at several places through the file: the superblock, the middle of a tensor, the end.
  for (const rlim_t limit : {rlim_t{512}, rlim_t{first_bytes / 2}, rlim_t{first_bytes - 8}}) {
    INFO("limit " << limit << " bytes");
    {
      FileSizeLimit small(limit);
      CHECK_THROWS_WITH(ckpt::write_checkpoint(dir.path(), synthetic_state(2, 3, 1000)),
                        Catch::Contains(ckpt::checkpoint_file_name(2) + ".tmp") && Catch::Contains("File too large"));
    }
    expect_untouched(dir.path(), first);
  }
}

TEST_CASE("a full file system fails a checkpoint write naming the file and the cause, and loses nothing",
          "[ckpt][hostile]") {
  ScratchDirectory dir("ckpt-enospc");
  const std::string mounted = dir.path() + "/small";
  fs::create_directories(mounted);
  // A 64 KiB tmpfs (root only; skipped where mounting is not allowed).
  if (::mount("tmpfs", mounted.c_str(), "tmpfs", 0, "size=64k") != 0) {
    WARN("cannot mount a small tmpfs here (" << std::strerror(errno) << "): skipped");
    return;
  }
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount(path.c_str()); }
  } unmount{mounted};
  const ckpt::TrainingState first = synthetic_state(1, 2, 1000);  // about 17 KB
  ckpt::write_checkpoint(mounted, first);
  CHECK_THROWS_WITH(
      ckpt::write_checkpoint(mounted, synthetic_state(2, 3, 20000)),
      Catch::Contains(ckpt::checkpoint_file_name(2) + ".tmp") && Catch::Contains("No space left on device"));
  expect_untouched(mounted, first);
}
