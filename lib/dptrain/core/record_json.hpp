#pragma once
// A record (core/fields.hpp) as a flat JSON object and back: one key per field, enums as their text.
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <utility>

#include "dptrain/core/error.hpp"
#include "dptrain/core/fields.hpp"
#include "dptrain/core/json_line.hpp"

namespace dptrain {

// `Json` nlohmann::ordered_json keeps the table's order (for json_line); nlohmann::json sorts the keys.
template <class Json = nlohmann::json, class Record>
Json record_json(const Record& record) {
  Json j = Json::object();
  for_each_field(record, [&](Field f, const auto& member) {
    using T = std::remove_cvref_t<decltype(member)>;
    if constexpr (std::is_enum_v<T>) {
      j[f.name] = std::string(field_text(member));
    } else {
      j[f.name] = member;
    }
  });
  return j;
}

enum class MissingFields { error, keep_defaults };

// Fills `record` from `j`. A required key that is missing (unless `missing` keeps defaults), or a
// value of the wrong kind, is an Error naming `where` and the key; an optional key that is missing
// keeps the record's value. Keys the table does not list are ignored (a newer writer's fields).
template <class Record>
void read_record_json(const nlohmann::json& j, Record& record, const std::string& where,
                      MissingFields missing = MissingFields::error) {
  DPTRAIN_CHECK(j.is_object(), where, ": expected a JSON object");
  for_each_field(record, [&](Field f, auto& member) {
    using T = std::remove_cvref_t<decltype(member)>;
    const auto it = j.find(f.name);
    if (it == j.end()) {
      DPTRAIN_CHECK(f.presence == Field::optional || missing == MissingFields::keep_defaults, where, ": '", f.name,
                    "' is missing");
      return;
    }
    const nlohmann::json& v = *it;
    bool fits = false;
    if constexpr (std::is_same_v<T, bool>) {
      fits = v.is_boolean();
    } else if constexpr (std::is_enum_v<T>) {
      fits = v.is_string();
    } else if constexpr (std::is_integral_v<T>) {
      // In the member's range: nlohmann's get<int> would wrap a 2^40 silently.
      fits = v.is_number_unsigned() ? std::in_range<T>(v.get<std::uint64_t>())
                                    : v.is_number_integer() && std::in_range<T>(v.get<std::int64_t>());
    } else if constexpr (std::is_floating_point_v<T>) {
      fits = v.is_number();
    } else if constexpr (std::is_same_v<T, std::string>) {
      fits = v.is_string();
    } else {
      fits = v.is_array();
    }
    DPTRAIN_CHECK(fits, where, ": '", f.name, "' has the wrong type (", json_text(v), ")");
    try {
      if constexpr (std::is_enum_v<T>) {
        parse_field_text(v.get<std::string>(), member);
      } else {
        member = v.get<T>();
      }
    } catch (const nlohmann::json::exception& e) {
      throw Error(where + ": '" + f.name + "': " + e.what());
    }
  });
}

}  // namespace dptrain
