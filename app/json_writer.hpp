#pragma once
// A minimal writer for flat JSON objects (what the bench and metrics files are).
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <ostream>
#include <string>
#include <vector>

namespace dptrain::app {

class JsonWriter {
 public:
  explicit JsonWriter(std::ostream& out) : out_(out) { out_ << "{"; }
  JsonWriter& field(const std::string& key, const std::string& value) {
    key_(key);
    quoted(value);
    return *this;
  }
  JsonWriter& field(const std::string& key, const char* value) { return field(key, std::string(value)); }
  JsonWriter& field(const std::string& key, double value) {
    key_(key);
    number(value);
    return *this;
  }
  JsonWriter& field(const std::string& key, std::int64_t value) {
    key_(key);
    out_ << value;
    return *this;
  }
  JsonWriter& field(const std::string& key, int value) { return field(key, static_cast<std::int64_t>(value)); }
  JsonWriter& field(const std::string& key, bool value) {
    key_(key);
    out_ << (value ? "true" : "false");
    return *this;
  }
  JsonWriter& field(const std::string& key, const std::vector<double>& values) {
    key_(key);
    out_ << "[";
    for (std::size_t i = 0; i < values.size(); ++i) {
      out_ << (i ? ", " : "");
      number(values[i]);
    }
    out_ << "]";
    return *this;
  }
  void close() { out_ << "}\n"; }

 private:
  void number(double value) {
    if (std::isfinite(value)) {
      out_ << std::setprecision(10) << value;
    } else {
      out_ << "null";
    }
  }
  void key_(const std::string& key) {
    out_ << (first_ ? "" : ", ");
    first_ = false;
    quoted(key);
    out_ << ": ";
  }
  void quoted(const std::string& s) {
    out_ << '"';
    for (char c : s) {
      if (c == '"' || c == '\\') {
        out_ << '\\' << c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        out_ << "\\u" << std::hex << std::setw(4) << std::setfill('0') << static_cast<int>(c) << std::dec
             << std::setfill(' ');
      } else {
        out_ << c;
      }
    }
    out_ << '"';
  }
  std::ostream& out_;
  bool first_ = true;
};

}  // namespace dptrain::app
