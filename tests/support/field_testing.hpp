#pragma once
// Checks for records with a field table (core/fields.hpp): every field gets a value unlike its
// default, and must come back unchanged through each form the tree stores or sends it in.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>

#include "dptrain/core/fields.hpp"
#include "dptrain/core/record_bytes.hpp"
#include "dptrain/core/record_json.hpp"
#include "dptrain/hdf5/record_attributes.hpp"

namespace dptrain::testing {

// Gives field i a value that no default has (and that stresses its form: a seed above 2^63, an
// enum's other value, negative and 2^40 array entries).
template <class Record>
void fill_distinct(Record& record) {
  int i = 0;
  for_each_field(record, [&](Field, auto& member) {
    using T = std::remove_cvref_t<decltype(member)>;
    ++i;
    if constexpr (std::is_same_v<T, bool>) {
      member = !member;
    } else if constexpr (std::is_enum_v<T>) {
      member = static_cast<T>(static_cast<int>(member) == 0 ? 1 : 0);
    } else if constexpr (std::is_same_v<T, std::uint64_t>) {
      member = (std::uint64_t{1} << 63) + static_cast<std::uint64_t>(i);
    } else if constexpr (std::is_integral_v<T>) {
      member = static_cast<T>(1000 + 7 * i);
    } else if constexpr (std::is_floating_point_v<T>) {
      member = static_cast<T>(i + 0.375);
    } else if constexpr (std::is_same_v<T, std::string>) {
      member = "value-" + std::to_string(i);
    } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
      member = {i, -i - 1, std::int64_t{1} << 40};
    } else {
      member = {i + 0.5, 2.25};
    }
  });
}

template <class Record>
void check_fields_differ_from_defaults(const Record& filled) {
  const auto defaults = field_values(Record{}), values = field_values(filled);
  REQUIRE(defaults.size() == values.size());
  std::set<std::string> names;
  for (std::size_t i = 0; i < values.size(); ++i) {
    INFO("field " << values[i].name);
    CHECK(values[i].value != defaults[i].value);
    CHECK(names.insert(values[i].name).second);  // every name once
  }
}

// Bytes (what ranks broadcast), JSON and HDF5 attributes: each must give back every field.
template <class Record>
void check_round_trips(const Record& filled) {
  const auto expected = field_values(filled);
  {
    Record back{};
    read_record_bytes(record_bytes(filled), back);
    CHECK(field_values(back) == expected);
  }
  {
    Record back{};
    read_record_json(nlohmann::json::parse(record_json(filled).dump()), back, "test");
    CHECK(field_values(back) == expected);
  }
  {
    const std::string path =
        (std::filesystem::temp_directory_path() / ("dptrain-fields-" + std::to_string(::getpid()) + ".h5")).string();
    {
      h5::Handle file = h5::create_file(path);
      h5::write_record_attributes(file.id(), filled);
      file.close();
    }
    Record back{};
    {
      h5::Handle file = h5::open_file(path);
      h5::read_record_attributes(file.id(), back, path);
    }
    std::filesystem::remove(path);
    CHECK(field_values(back) == expected);
  }
}

// Every field's name appears in `doc` as `name` (the format tables of the documentation).
template <class Record>
void check_documented(const Record& record, const std::filesystem::path& doc) {
  std::ifstream in(doc);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  for (const NamedFieldValue& f : field_values(record)) {
    INFO(doc.string() << " does not name field " << f.name);
    CHECK(text.str().find("`" + f.name + "`") != std::string::npos);
  }
}

// All of the above for a record of type Record, documented in `doc`.
template <class Record>
void check_field_table(const std::filesystem::path& doc) {
  Record record{};
  fill_distinct(record);
  check_fields_differ_from_defaults(record);
  check_round_trips(record);
  check_documented(record, doc);
}

}  // namespace dptrain::testing
