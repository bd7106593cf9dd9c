#pragma once
// A record (core/fields.hpp) as bytes and back, for sending it between ranks of the same build:
// every field in the table's order, fixed-size values as they are in memory, strings and vectors
// after their length.
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "dptrain/core/error.hpp"
#include "dptrain/core/fields.hpp"

namespace dptrain {

template <class Record>
std::vector<char> record_bytes(const Record& record) {
  std::vector<char> bytes;
  auto append = [&](const void* data, std::size_t size) {
    const char* p = static_cast<const char*>(data);
    bytes.insert(bytes.end(), p, p + size);
  };
  for_each_field(record, [&](Field, const auto& member) {
    using T = std::remove_cvref_t<decltype(member)>;
    if constexpr (std::is_trivially_copyable_v<T>) {
      append(&member, sizeof member);
    } else {
      const std::size_t count = member.size();
      append(&count, sizeof count);
      append(member.data(), count * sizeof(typename T::value_type));
    }
  });
  return bytes;
}

// The inverse of record_bytes; bytes of another length (another record, another build) are an Error.
template <class Record>
void read_record_bytes(const std::vector<char>& bytes, Record& record) {
  std::size_t at = 0;
  auto take = [&](void* data, std::size_t size) {
    DPTRAIN_CHECK(size <= bytes.size() - at, "a record of ", bytes.size(), " bytes ends before its fields do");
    if (size > 0) std::memcpy(data, bytes.data() + at, size);
    at += size;
  };
  for_each_field(record, [&](Field, auto& member) {
    using T = std::remove_cvref_t<decltype(member)>;
    if constexpr (std::is_trivially_copyable_v<T>) {
      take(&member, sizeof member);
    } else {
      std::size_t count = 0;
      take(&count, sizeof count);
      DPTRAIN_CHECK(count <= bytes.size() - at, "a record field claims ", count, " elements beyond its bytes");
      member.resize(count);
      take(member.data(), count * sizeof(typename T::value_type));
    }
  });
  DPTRAIN_CHECK(at == bytes.size(), "a record of ", bytes.size(), " bytes has ", bytes.size() - at,
                " bytes beyond its fields");
}

}  // namespace dptrain
