#pragma once
// One field table per record. A record lists its fields once, in a static member template
//
//   template <class Self, class Visit> static void fields(Self& self, Visit&& visit) {
//     visit(Field{"epoch"}, self.epoch);
//     visit(Field{"loss_scale_clean_steps", Field::optional}, self.loss_scale_clean_steps);
//   }
//
// (Self is the record or the const record), and every place that stores, sends or shows the record
// walks that list: HDF5 attributes (hdf5/record_attributes.hpp), JSON (core/record_json.hpp), the
// bytes a rank broadcasts (core/record_bytes.hpp), `dptrain inspect`, and the round-trip test. Adding
// a field is one line in the table.
//
// A field's type is one of the kinds below; an enum is a string through the two functions
// `field_text(E)` and `parse_field_text(const std::string&, E&)` that its namespace provides.
#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace dptrain {

struct Field {
  // optional: a file written before the field existed may lack it; reading keeps the record's default.
  enum Presence { required, optional };
  const char* name;
  Presence presence = required;
};

// Applies `visit(field, member)` to every field of `record`, in the table's order.
template <class Record, class Visit>
void for_each_field(Record& record, Visit&& visit) {
  std::remove_const_t<Record>::fields(record, visit);
}

// What a field holds, for code that treats every record alike (tests, `inspect`): integers of any
// width and sign are int64 (an unsigned 64-bit seed keeps its bits), floats are doubles, enums text.
using FieldValue =
    std::variant<std::int64_t, double, bool, std::string, std::vector<std::int64_t>, std::vector<double>>;

template <class T>
FieldValue field_value(const T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value;
  } else if constexpr (std::is_enum_v<T>) {
    return std::string(field_text(value));
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<std::int64_t>(value);
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<double>(value);
  } else if constexpr (std::is_same_v<T, std::vector<double>>) {
    return value;
  } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
    return value;
  } else {
    static_assert(std::is_same_v<T, std::string>,
                  "a field is an integer, a float, a bool, an enum, a string or "
                  "a vector of int64 or double");
    return value;
  }
}

struct NamedFieldValue {
  std::string name;
  FieldValue value;
  bool operator==(const NamedFieldValue&) const = default;
};

// The record's fields by name, in the table's order.
template <class Record>
std::vector<NamedFieldValue> field_values(const Record& record) {
  std::vector<NamedFieldValue> values;
  for_each_field(record, [&](Field f, const auto& member) { values.push_back({f.name, field_value(member)}); });
  return values;
}

// One line per field for people ("name = value"; vectors as [a, b]).
std::string field_value_text(const FieldValue& value);

}  // namespace dptrain
