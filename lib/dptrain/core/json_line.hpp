#pragma once
// JSON lines (the metrics, bench and eval files): one object per line, written by nlohmann-json (the
// one JSON library of the tree), with its keys in the order given and ": " and ", " between them, so
// a person reading the file and a `grep '"top1": '` both see what they expect. NaN and infinities
// are written as null; names that are not UTF-8 are written with U+FFFD (json_text).
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>

namespace dptrain {

// The JSON text of `value` as every dptrain writer writes it: a string that is not valid UTF-8 (a
// POSIX path or folder name is bytes, say Latin-1) has each invalid byte replaced by U+FFFD instead
// of throwing type_error.316 after the work is done. `indent` as nlohmann's dump (-1: one line).
template <class Json>
std::string json_text(const Json& value, int indent = -1) {
  return value.dump(indent, ' ', false, Json::error_handler_t::replace);
}

// Whether `text` is valid UTF-8 (what a JSON string must hold to be kept byte for byte).
bool is_valid_utf8(std::string_view text);
// `text` for a message: printable ASCII as is, every other byte as \xNN ("caf\xe9").
std::string escaped_name(std::string_view text);

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
