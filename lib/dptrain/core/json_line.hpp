#pragma once
// JSON lines (the metrics, bench and eval files): one object per line, written by nlohmann-json (the
// one JSON library of the tree), with its keys in the order given and ": " and ", " between them, so
// a person reading the file and a `grep '"top1": '` both see what they expect. NaN and infinities
// are written as null.
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

namespace dptrain {

std::string json_line(const nlohmann::ordered_json& object);

// Builds one line field by field: JsonLine(out).field("type", "step").field("loss", 0.5).close().
class JsonLine {
 public:
  explicit JsonLine(std::ostream& out) : out_(out) {}
  template <class T>
  JsonLine& field(const std::string& key, const T& value) {
    object_[key] = value;
    return *this;
  }
  void close() { out_ << json_line(object_) << "\n"; }

 private:
  std::ostream& out_;
  nlohmann::ordered_json object_ = nlohmann::ordered_json::object();
};

}  // namespace dptrain
