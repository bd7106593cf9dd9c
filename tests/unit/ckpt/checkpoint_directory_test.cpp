// The directory protocol: names, `latest`, retention, and the fall-back of `--resume auto` past
// damaged newest files.
#include "dptrain/ckpt/checkpoint_directory.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <limits>

#include "ckpt_testing.hpp"
#include "dptrain/ckpt/checkpoint_file.hpp"
#include "dptrain/ckpt/checkpoint_writer.hpp"
#include "dptrain/io/durable_io.hpp"

using namespace dptrain;
using namespace dptrain::testing;
namespace fs = std::filesystem;

namespace {
std::vector<std::int64_t> steps_in(const std::string& dir) {
  std::vector<std::int64_t> steps;
  for (const auto& e : ckpt::list_checkpoints(dir)) steps.push_back(e.step);
  return steps;
}

void write_steps(const std::string& dir, std::initializer_list<std::int64_t> steps) {
  for (std::int64_t s : steps) ckpt::write_checkpoint(dir, synthetic_state(s));
}
}  // namespace

TEST_CASE("checkpoint names sort like their steps", "[ckpt]") {
  CHECK(ckpt::checkpoint_file_name(500) == "ckpt-000000500.h5");
  CHECK(ckpt::checkpoint_step("ckpt-000000500.h5") == 500);
  CHECK(ckpt::checkpoint_step("ckpt-1234567890.h5") == 1234567890);
  CHECK_FALSE(ckpt::checkpoint_step("ckpt-000000500.h5.tmp"));
  CHECK_FALSE(ckpt::checkpoint_step("ckpt-.h5"));
  CHECK_FALSE(ckpt::checkpoint_step("ckpt-12a.h5"));
  CHECK_FALSE(ckpt::checkpoint_step("latest"));
  // Only the names dptrain writes: retention deletes by name, so nothing else may look like one.
  CHECK_FALSE(ckpt::checkpoint_step("ckpt-5.h5"));
  CHECK_FALSE(ckpt::checkpoint_step("ckpt-0000000005.h5"));
  CHECK(ckpt::is_temporary_name("ckpt-000000500.h5.tmp"));
  CHECK(ckpt::is_temporary_name("latest.tmp"));
  CHECK(ckpt::is_temporary_name("dptrain-write-check.tmp"));
  CHECK_FALSE(ckpt::is_temporary_name("ckpt-notes.tmp"));
  CHECK_FALSE(ckpt::is_temporary_name("ckpt-5.h5.tmp"));
  CHECK_FALSE(ckpt::is_temporary_name("mine.tmp"));
  CHECK_THROWS_WITH(ckpt::checkpoint_file_name(-1), Catch::Contains("negative"));
}

TEST_CASE("writing leaves the checkpoint, `latest` naming it and no temporary file", "[ckpt]") {
  ScratchDirectory dir("ckpt-dir");
  const std::string sub = dir.file("run/checkpoints");  // created on the way
  write_steps(sub, {100, 200});
  CHECK(ckpt::read_latest(sub) == "ckpt-000000200.h5");
  CHECK(read_bytes(sub + "/latest") ==
        std::vector<char>{'c', 'k', 'p', 't', '-', '0', '0', '0', '0', '0', '0', '2', '0', '0', '.', 'h', '5', '\n'});
  CHECK(steps_in(sub) == std::vector<std::int64_t>{100, 200});
  for (const auto& e : fs::directory_iterator(sub)) CHECK(e.path().extension() != ".tmp");
  CHECK(ckpt::resolve_checkpoint_path(sub) == sub + "/ckpt-000000200.h5");
  CHECK(ckpt::resolve_checkpoint_path(sub + "/ckpt-000000100.h5") == sub + "/ckpt-000000100.h5");
}

TEST_CASE("`latest` is replaced atomically, even over a stale latest.tmp", "[ckpt]") {
  ScratchDirectory dir("ckpt-latest");
  write_steps(dir.path(), {1});
  // A writer killed between writing latest.tmp and the rename left this behind; it must not matter.
  write_bytes(dir.file("latest.tmp"), std::vector<char>(100000, 'z'));
  CHECK(ckpt::read_latest(dir.path()) == "ckpt-000000001.h5");
  write_steps(dir.path(), {2});
  CHECK(ckpt::read_latest(dir.path()) == "ckpt-000000002.h5");
  CHECK_FALSE(fs::exists(dir.file("latest.tmp")));
  io::replace_file_atomically(dir.path(), "latest", "../elsewhere.h5\n");
  CHECK_THROWS_WITH(ckpt::read_latest(dir.path()), Catch::Contains("should name a checkpoint file in its directory"));
}

TEST_CASE("retention keeps the K newest and the one `latest` names, and removes stray temporaries", "[ckpt]") {
  ScratchDirectory dir("ckpt-prune");
  write_steps(dir.path(), {10, 20, 30, 40, 50});
  write_bytes(dir.file("ckpt-000000060.h5.tmp"), {'x'});  // a killed writer's
  write_bytes(dir.file("notes.txt"), {'n'});              // not ours: never touched
  SECTION("K newest") {
    const auto removed = ckpt::prune_checkpoints(dir.path(), 2);
    CHECK(removed.size() == 4);
    CHECK(steps_in(dir.path()) == std::vector<std::int64_t>{40, 50});
    CHECK_FALSE(fs::exists(dir.file("ckpt-000000060.h5.tmp")));
    CHECK(fs::exists(dir.file("notes.txt")));
  }
  SECTION("never the one latest names, even when it is old") {
    io::replace_file_atomically(dir.path(), "latest", "ckpt-000000020.h5\n");
    ckpt::prune_checkpoints(dir.path(), 2);
    CHECK(steps_in(dir.path()) == std::vector<std::int64_t>{20, 40, 50});
  }
  SECTION("keep 0 keeps all") {
    ckpt::prune_checkpoints(dir.path(), 0);
    CHECK(steps_in(dir.path()) == std::vector<std::int64_t>{10, 20, 30, 40, 50});
  }
  CHECK_THROWS_WITH(ckpt::prune_checkpoints(dir.path(), -1), Catch::Contains("cannot be negative"));
}

TEST_CASE("retention never touches what dptrain did not write", "[ckpt]") {
  ScratchDirectory dir("ckpt-prune-foreign");
  ScratchDirectory elsewhere("ckpt-prune-target");
  write_steps(dir.path(), {30, 40, 50});
  const std::vector<char> precious{'k', 'e', 'e', 'p'};
  write_bytes(elsewhere.file("precious"), precious);
  // Names close to ours, and our names on things that are not regular files.
  write_bytes(dir.file("ckpt-5.h5"), {'a'});
  write_bytes(dir.file("ckpt-0000000007.h5"), {'b'});
  write_bytes(dir.file("ckpt-notes.tmp"), {'c'});
  fs::create_symlink(elsewhere.file("precious"), dir.file("ckpt-000000001.h5"));
  fs::create_symlink(elsewhere.file("precious"), dir.file("ckpt-000000060.h5.tmp"));
  fs::create_directory(dir.file("ckpt-000000002.h5"));
  const auto removed = ckpt::prune_checkpoints(dir.path(), 1);
  CHECK(removed == std::vector<std::string>{dir.file("ckpt-000000030.h5"), dir.file("ckpt-000000040.h5")});
  for (const char* name : {"ckpt-5.h5", "ckpt-0000000007.h5", "ckpt-notes.tmp", "ckpt-000000050.h5"}) {
    CHECK(fs::is_regular_file(dir.file(name)));
  }
  CHECK(fs::is_symlink(dir.file("ckpt-000000001.h5")));
  CHECK(fs::is_symlink(dir.file("ckpt-000000060.h5.tmp")));
  CHECK(fs::is_directory(dir.file("ckpt-000000002.h5")));
  CHECK(read_bytes(elsewhere.file("precious")) == precious);
}

TEST_CASE("resume auto: latest, or the next newest valid checkpoint with a warning", "[ckpt]") {
  ScratchDirectory dir("ckpt-resume");
  std::vector<std::string> warnings;
  SECTION("an empty or missing directory is a fresh start") {
    CHECK_FALSE(ckpt::find_resume_checkpoint(dir.file("none"), warnings));
    CHECK_FALSE(ckpt::find_resume_checkpoint(dir.path(), warnings));
    CHECK(warnings.empty());
  }
  SECTION("the one latest names") {
    write_steps(dir.path(), {1, 2, 3});
    io::replace_file_atomically(dir.path(), "latest", "ckpt-000000002.h5\n");
    const auto found = ckpt::find_resume_checkpoint(dir.path(), warnings);
    REQUIRE(found);
    CHECK(found->state.progress.global_step == 2);
    CHECK(warnings.empty());
  }
  SECTION("a zero-byte newest file") {
    write_steps(dir.path(), {1, 2});
    write_bytes(dir.file("ckpt-000000002.h5"), {});
    const auto found = ckpt::find_resume_checkpoint(dir.path(), warnings);
    REQUIRE(found);
    CHECK(found->path == dir.file("ckpt-000000001.h5"));
    REQUIRE(warnings.size() == 1);
    CHECK_THAT(warnings[0], Catch::Contains(dir.file("ckpt-000000002.h5")) && Catch::Contains("empty"));
  }
  SECTION("a newest file truncated to half its bytes") {
    write_steps(dir.path(), {1, 2});
    const std::string newest = dir.file("ckpt-000000002.h5");
    fs::resize_file(newest, fs::file_size(newest) / 2);
    const auto found = ckpt::find_resume_checkpoint(dir.path(), warnings);
    REQUIRE(found);
    CHECK(found->state.progress.global_step == 1);
    REQUIRE(warnings.size() == 1);
    CHECK_THAT(warnings[0], Catch::Contains(newest));
  }
  SECTION("latest naming a deleted file") {
    write_steps(dir.path(), {1, 2});
    fs::remove(dir.file("ckpt-000000002.h5"));
    const auto found = ckpt::find_resume_checkpoint(dir.path(), warnings);
    REQUIRE(found);
    CHECK(found->state.progress.global_step == 1);
    REQUIRE(warnings.size() == 1);
    CHECK_THAT(warnings[0], Catch::Contains("does not exist"));
  }
  SECTION("a newest checkpoint holding a NaN (a diverged run's) is skipped") {
    write_steps(dir.path(), {1});
    ckpt::TrainingState diverged = synthetic_state(2);
    diverged.optimizer.momentum[1].value.data<float>()[7] = std::numeric_limits<float>::quiet_NaN();
    // Written as an older dptrain would have: the file layer does not judge the values.
    ckpt::write_checkpoint_file(dir.file("ckpt-000000002.h5"), diverged);
    io::replace_file_atomically(dir.path(), "latest", "ckpt-000000002.h5\n");
    const auto found = ckpt::find_resume_checkpoint(dir.path(), warnings);
    REQUIRE(found);
    CHECK(found->state.progress.global_step == 1);
    REQUIRE(warnings.size() == 1);
    CHECK_THAT(warnings[0], Catch::Contains(dir.file("ckpt-000000002.h5")) &&
                                Catch::Contains("the momentum buffer of layer1/weight holds 1 value that is not "
                                                "finite (the first, nan, at index 7)"));
  }
  SECTION("checkpoints that all fail are an error listing each, not a fresh start") {
    write_steps(dir.path(), {1, 2});
    write_bytes(dir.file("ckpt-000000002.h5"), {});
    fs::resize_file(dir.file("ckpt-000000001.h5"), 100);
    fs::create_directory(dir.file("ckpt-000000003.h5"));  // unreadable as a file
    CHECK_THROWS_WITH(
        ckpt::find_resume_checkpoint(dir.path(), warnings),
        Catch::Contains("--resume auto: the checkpoint directory " + dir.path() + " holds 3 checkpoints but none") &&
            Catch::Contains(dir.file("ckpt-000000003.h5")) &&
            Catch::Contains(dir.file("ckpt-000000002.h5") + " is empty") &&
            Catch::Contains(dir.file("ckpt-000000001.h5") + " is not a readable HDF5 file") &&
            Catch::Contains("--resume none"));
  }
  SECTION("a `latest` whose checkpoint is gone is an error, not a fresh start") {
    io::replace_file_atomically(dir.path(), "latest", "ckpt-000000009.h5\n");
    CHECK_THROWS_WITH(ckpt::find_resume_checkpoint(dir.path(), warnings),
                      Catch::Contains("has a 'latest' but no checkpoint") && Catch::Contains("which does not exist"));
  }
  SECTION("stray temporaries and foreign files are no checkpoint: a fresh start") {
    write_bytes(dir.file("ckpt-000000005.h5.tmp"), {'x'});
    write_bytes(dir.file("notes.txt"), {'n'});
    CHECK_FALSE(ckpt::find_resume_checkpoint(dir.path(), warnings));
    CHECK(warnings.empty());
  }
}
