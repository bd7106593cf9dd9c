// The host clock as a backend's time mark: right where every op has finished when it returns (the
// CPU backend), so the time between two marks is the time of the work between them.
#include <chrono>

#include "dptrain/backend/backend.hpp"

namespace dptrain {
namespace {
class HostTimeMark final : public TimeMark {
 public:
  HostTimeMark() : at_(std::chrono::steady_clock::now()) {}
  double milliseconds_since(const TimeMark& earlier) override {
    const auto& start = dynamic_cast<const HostTimeMark&>(earlier);
    return std::chrono::duration<double, std::milli>(at_ - start.at_).count();
  }

 private:
  std::chrono::steady_clock::time_point at_;
};
}  // namespace

std::unique_ptr<TimeMark> Backend::time_mark() { return std::make_unique<HostTimeMark>(); }

}  // namespace dptrain
