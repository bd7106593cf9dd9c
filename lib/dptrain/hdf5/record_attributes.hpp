#pragma once
// A record (core/fields.hpp) as attributes of an HDF5 object, one per field, readable with h5dump:
// integers (an unsigned seed keeps its bits) and bools as int64, floats as double, strings and enums
// as strings, vectors as one-dimensional int64 or double attributes.
#include <bit>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "dptrain/core/error.hpp"
#include "dptrain/core/fields.hpp"
#include "dptrain/hdf5/handle.hpp"

namespace dptrain::h5 {

template <class Record>
void write_record_attributes(hid_t object, const Record& record) {
  for_each_field(record, [&](Field f, const auto& member) {
    using T = std::remove_cvref_t<decltype(member)>;
    if constexpr (std::is_enum_v<T>) {
      write_attribute(object, f.name, std::string(field_text(member)));
    } else if constexpr (std::is_same_v<T, bool>) {
      write_attribute(object, f.name, std::int64_t{member});
    } else if constexpr (std::is_same_v<T, std::uint64_t>) {
      write_attribute(object, f.name, std::bit_cast<std::int64_t>(member));
    } else if constexpr (std::is_integral_v<T>) {
      write_attribute(object, f.name, static_cast<std::int64_t>(member));
    } else if constexpr (std::is_floating_point_v<T>) {
      write_double_attribute(object, f.name, static_cast<double>(member));
    } else if constexpr (std::is_same_v<T, std::string>) {
      write_attribute(object, f.name, member);
    } else if constexpr (std::is_same_v<T, std::vector<double>>) {
      write_double_array_attribute(object, f.name, member);
    } else {
      static_assert(std::is_same_v<T, std::vector<std::int64_t>>, "no HDF5 attribute form for this field type");
      write_int_array_attribute(object, f.name, member);
    }
  });
}

// Fills `record` from the attributes; a missing required one is an Error naming `where` and the
// attribute; a missing optional one keeps the record's value.
template <class Record>
void read_record_attributes(hid_t object, Record& record, const std::string& where) {
  for_each_field(record, [&](Field f, auto& member) {
    using T = std::remove_cvref_t<decltype(member)>;
    if (f.presence == Field::optional && !has_attribute(object, f.name)) return;
    if constexpr (std::is_enum_v<T>) {
      parse_field_text(read_string_attribute(object, f.name, where), member);
    } else if constexpr (std::is_same_v<T, bool>) {
      member = read_int_attribute(object, f.name, where) != 0;
    } else if constexpr (std::is_same_v<T, std::uint64_t>) {
      member = std::bit_cast<std::uint64_t>(read_int_attribute(object, f.name, where));
    } else if constexpr (std::is_integral_v<T>) {
      const std::int64_t value = read_int_attribute(object, f.name, where);
      DPTRAIN_CHECK(std::in_range<T>(value), where, ": attribute '", f.name, "' = ", value, " is out of range");
      member = static_cast<T>(value);
    } else if constexpr (std::is_floating_point_v<T>) {
      member = static_cast<T>(read_double_attribute(object, f.name, where));
    } else if constexpr (std::is_same_v<T, std::string>) {
      member = read_string_attribute(object, f.name, where);
    } else if constexpr (std::is_same_v<T, std::vector<double>>) {
      member = read_double_array_attribute(object, f.name, where);
    } else {
      member = read_int_array_attribute(object, f.name, where);
    }
  });
}

}  // namespace dptrain::h5
