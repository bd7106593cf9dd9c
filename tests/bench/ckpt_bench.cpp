// How fast a checkpoint is written, next to how fast the same bytes are written by plain write() and
// fsync() into the same directory, measured in the same run (the ratio is the number to watch: the
// cost of HDF5, the checksums and the durable protocol over the disk's own speed).
//
//   ckpt_bench DIR [REPEATS]    googlenet and inception-v3 (batch 1), REPEATS (default 3) of each
//
// For each model: the parameter and momentum bytes, the time to copy the state to the host
// (capture), then per repeat the checkpoint write (HDF5 write, flush, fsync, rename, fsync dir,
// latest) and the plain write of as many bytes; the median of each and their ratio. Files are removed.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "dptrain/ckpt/checkpoint_writer.hpp"
#include "dptrain/ckpt/training_state.hpp"
#include "dptrain/net/models/registry.hpp"

using namespace dptrain;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {
double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void check_posix(bool ok, const char* call, const std::string& path) {
  if (!ok) throw Error(detail::concat(call, "(", path, ") failed: ", std::strerror(errno)));
}

// The reference: create, write `bytes` in 4 MiB pieces, fsync, close. Returns seconds.
double plain_write(const std::string& path, std::uint64_t bytes) {
  std::vector<char> block(4 << 20, '\x5a');
  const auto start = Clock::now();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  check_posix(fd >= 0, "open", path);
  for (std::uint64_t done = 0; done < bytes;) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(block.size(), bytes - done));
    const ssize_t written = ::write(fd, block.data(), n);
    check_posix(written > 0, "write", path);
    done += static_cast<std::uint64_t>(written);
  }
  check_posix(::fsync(fd) == 0, "fsync", path);
  check_posix(::close(fd) == 0, "close", path);
  return seconds_since(start);
}

void bench_model(const std::string& name, const std::string& dir, int repeats) {
  auto backend = make_cpu_backend();
  ModelConfig config;
  config.batch = 1;
  auto net = build_model(name, *backend, config);
  net->initialize(1);
  Sgd sgd(*backend, net->parameters(), SgdConfig{});
  ckpt::Progress progress;
  auto start = Clock::now();
  const ckpt::TrainingState state = ckpt::capture_state(*net, sgd, name, progress, "{}");
  const double capture = seconds_since(start);
  std::vector<double> checkpoint_s, plain_s;
  std::uint64_t bytes = 0;
  const std::string model_dir = (fs::path(dir) / ("ckpt-bench-" + name)).string();
  for (int r = 0; r < repeats; ++r) {
    const ckpt::WriteReport report = ckpt::write_checkpoint(model_dir, state);
    bytes = report.bytes;
    checkpoint_s.push_back(report.seconds);
    fs::remove(report.path);
    const std::string plain = (fs::path(dir) / ("ckpt-bench-plain-" + name)).string();
    plain_s.push_back(plain_write(plain, bytes));
    fs::remove(plain);
  }
  fs::remove_all(model_dir);
  const double mb = static_cast<double>(bytes) / 1e6;
  const double ckpt_rate = mb / median(checkpoint_s), plain_rate = mb / median(plain_s);
  std::printf(
      "%-13s %9.1f MB  capture %6.3f s   checkpoint %7.3f s %8.1f MB/s   plain write+fsync %7.3f s %8.1f MB/s"
      "   ratio %.2f\n",
      name.c_str(), mb, capture, median(checkpoint_s), ckpt_rate, median(plain_s), plain_rate, ckpt_rate / plain_rate);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: ckpt_bench DIR [REPEATS]\n");
    return 2;
  }
  const int repeats = argc == 3 ? std::max(1, std::atoi(argv[2])) : 3;
  try {
    fs::create_directories(argv[1]);
    std::printf("checkpoint write vs plain write()+fsync() of the same bytes into %s (median of %d)\n", argv[1],
                repeats);
    for (const char* model : {"googlenet", "inception-v3"}) bench_model(model, argv[1], repeats);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ckpt_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
