// The run's checkpoint policy on one rank: the directory is checked and locked at start, a diverged
// state is refused with the previous checkpoint left `latest`, and `--resume auto` starts afresh only
// from a directory without checkpoints.
#include "dptrain/train/run_checkpoints.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <limits>
#include <sstream>

#include "dptrain/ckpt/checkpoint_directory.hpp"
#include "dptrain/ckpt/checkpoint_file.hpp"
#include "dptrain/ckpt/checkpoint_writer.hpp"
#include "dptrain/ckpt/directory_lock.hpp"
#include "dptrain/core/exit_codes.hpp"
#include "dptrain/net/net.hpp"
#include "unit/ckpt/ckpt_testing.hpp"

namespace dptrain {
namespace {
namespace fs = std::filesystem;
using testing::ScratchDirectory;

CheckpointOptions options_for(const std::string& directory, const std::string& resume = "auto") {
  CheckpointOptions o;
  o.directory = directory;
  o.every = std::string(1, '0');  // moved in: GCC 12 warns (-Wrestrict, a false positive) on = "0"
  o.resume = resume;
  return o;
}

// Sets every element of the net's first parameter to `value` (through the backend, whatever the layout).
void poison_first_parameter(testing::TrainedModel& m, float value) {
  Parameter& p = *m.net->parameters().front();
  Tensor host = m.backend->to_host(p.value);
  for (std::int64_t i = 0; i < host.numel(); ++i) host.elements<float>()[i] = value;
  m.backend->copy_from_host(host, p.value);
}

TEST_CASE("a run checks and locks its checkpoint directory when it starts", "[train][ckpt]") {
  ScratchDirectory dir("run-ckpt-lock");
  distributed::LocalCommunicator comm;
  std::ostringstream log;
  SECTION("a second run on the directory is refused while the first holds it") {
    std::optional<RunCheckpoints> first;
    first.emplace(options_for(dir.path()), comm, log);
    CHECK(fs::is_regular_file(dir.file(ckpt::kLockName)));
    CHECK_THROWS_WITH(
        RunCheckpoints(options_for(dir.path()), comm, log),
        Catch::Contains("is in use by another run") && Catch::Contains("pid " + std::to_string(::getpid())));
    first.reset();
    RunCheckpoints next(options_for(dir.path()), comm, log);
    CHECK(log.str().find("taking over") == std::string::npos);  // the first one ended cleanly
  }
  SECTION("the lock file of a run that died is taken over, saying so") {
    const std::string dead = "host n1, pid 4242, Slurm job 77, started 2024-05-01T12:00:00Z";
    testing::write_bytes(dir.file(ckpt::kLockName), std::vector<char>(dead.begin(), dead.end()));
    testing::write_bytes(dir.file("ckpt-000000010.h5.tmp"), {'x'});  // it was writing
    RunCheckpoints run(options_for(dir.path()), comm, log);
    CHECK_THAT(log.str(), Catch::Contains("taking over " + dir.file(ckpt::kLockName)) && Catch::Contains(dead) &&
                              Catch::Contains("removed 1 temporary file a killed writer left"));
    CHECK_FALSE(fs::exists(dir.file("ckpt-000000010.h5.tmp")));
  }
  SECTION("a directory that cannot be written is refused at start, not at the first checkpoint") {
    CHECK_THROWS_WITH(RunCheckpoints(options_for("/proc"), comm, log),
                      Catch::Contains("the checkpoint directory /proc is not writable"));
    testing::write_bytes(dir.file("a-file"), {'f'});
    CHECK_THROWS_WITH(RunCheckpoints(options_for(dir.file("a-file")), comm, log),
                      Catch::Contains("cannot create the checkpoint directory " + dir.file("a-file")));
    // Both are a refused --checkpoint-dir: exit code 105, as for every other output.
    for (const std::string& bad : {std::string("/proc"), dir.file("a-file"), std::string("/proc/self/ckpt")}) {
      INFO(bad);
      try {
        RunCheckpoints refused(options_for(bad), comm, log);
        FAIL("accepted");
      } catch (const OptionError& e) {
        CHECK(e.code() == exit_code::option_value);
      }
    }
  }
  SECTION("a --checkpoint-timeout that is not a positive duration is refused") {
    for (const char* bad : {"0", "soon", "-5m"}) {
      CheckpointOptions o = options_for(dir.path());
      o.timeout = bad;
      CHECK_THROWS_WITH(RunCheckpoints(o, comm, log), Catch::Contains("--checkpoint-timeout"));
    }
  }
  SECTION("a symlink planted at a temporary name stops the start") {
    fs::create_symlink("/etc/hostname", dir.file("latest.tmp"));
    CHECK_THROWS_WITH(RunCheckpoints(options_for(dir.path()), comm, log),
                      Catch::Contains(dir.file("latest.tmp") + " is a symbolic link"));
  }
}

TEST_CASE("weights that are not finite are never checkpointed; the previous one stays latest", "[train][ckpt]") {
  ScratchDirectory dir("run-ckpt-diverged");
  distributed::LocalCommunicator comm;
  std::ostringstream log;
  testing::TrainedModel m = testing::trained_model("lenet", 10, 3, 2);
  RunCheckpoints run(options_for(dir.path()), comm, log);
  ckpt::Progress progress;
  progress.global_step = 2;
  progress.global_batch = 4;
  run.write("lenet", *m.net, m.trainer->optimizer(), progress, "{}");
  CHECK(ckpt::read_latest(dir.path()) == "ckpt-000000002.h5");
  poison_first_parameter(m, std::numeric_limits<float>::infinity());
  progress.global_step = 3;
  CHECK_THROWS_WITH(run.write("lenet", *m.net, m.trainer->optimizer(), progress, "{}"),
                    Catch::Contains("step 3: not writing a checkpoint") &&
                        Catch::Contains("parameter " + m.net->parameters().front()->name + " holds") &&
                        Catch::Contains("still names ckpt-000000002.h5"));
  CHECK(ckpt::read_latest(dir.path()) == "ckpt-000000002.h5");
  CHECK_FALSE(fs::exists(dir.file("ckpt-000000003.h5")));
}

TEST_CASE("resume auto starts afresh only from a directory without checkpoints", "[train][ckpt]") {
  ScratchDirectory dir("run-ckpt-resume");
  distributed::LocalCommunicator comm;
  std::ostringstream log;
  SECTION("no checkpoint: a fresh start") {
    RunCheckpoints run(options_for(dir.path()), comm, log);
    CHECK_FALSE(run.locate());
  }
  SECTION("only damaged checkpoints: an error listing each, unless --resume none") {
    ckpt::write_checkpoint(dir.path(), testing::synthetic_state(5));
    ckpt::write_checkpoint(dir.path(), testing::synthetic_state(6));
    testing::write_bytes(dir.file("ckpt-000000006.h5"), {});
    fs::resize_file(dir.file("ckpt-000000005.h5"), 64);
    {
      RunCheckpoints run(options_for(dir.path()), comm, log);
      CHECK_THROWS_WITH(run.locate(), Catch::Contains("holds 2 checkpoints but none can be used") &&
                                          Catch::Contains(dir.file("ckpt-000000005.h5")) &&
                                          Catch::Contains(dir.file("ckpt-000000006.h5")));
    }
    RunCheckpoints fresh(options_for(dir.path(), "none"), comm, log);
    CHECK_FALSE(fresh.locate());
  }
  SECTION("an explicit checkpoint holding a NaN is refused") {
    ckpt::TrainingState diverged = testing::synthetic_state(7);
    diverged.parameters[0].value.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
    ckpt::write_checkpoint_file(dir.file("old.h5"), diverged);
    RunCheckpoints run(options_for("", dir.file("old.h5")), comm, log);
    CHECK_THROWS_WITH(run.locate(), Catch::Contains("checkpoint " + dir.file("old.h5") + " cannot be resumed") &&
                                        Catch::Contains("parameter layer0/weight holds 1 value that is not finite"));
  }
}

}  // namespace
}  // namespace dptrain
