#pragma once
#include <string>

namespace dptrain {

enum class DeviceKind { cpu, cuda };

// Where a tensor's memory lives. Host memory is device {cpu, 0}; GPUs are {cuda, ordinal}.
struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;

  static Device cpu() { return {}; }
  static Device cuda(int ordinal) { return {DeviceKind::cuda, ordinal}; }
  bool is_cpu() const { return kind == DeviceKind::cpu; }
  bool operator==(const Device&) const = default;
  std::string to_string() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }
};

}  // namespace dptrain
