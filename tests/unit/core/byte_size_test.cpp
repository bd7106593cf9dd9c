#include "dptrain/core/byte_size.hpp"

#include <catch2/catch.hpp>

using namespace dptrain;

TEST_CASE("memory sizes take binary and decimal units and nothing else", "[core][byte_size]") {
  CHECK(byte_size("16GiB") == std::size_t{16} << 30);
  CHECK(byte_size("16G") == std::size_t{16} << 30);  // as Slurm's --mem
  CHECK(byte_size("16GB") == std::size_t{16000000000});
  CHECK(byte_size("512MiB") == std::size_t{512} << 20);
  CHECK(byte_size("1.5TiB") == std::size_t{3} << 39);
  CHECK(byte_size("141GiB") == std::size_t{141} << 30);
  CHECK(byte_size("80kB") == 80000u);
  for (const char* bad : {"", "16", "G", "16 GiB", "-1G", "16g", "16Gib", "1e3G", "0G", "0.0000001K", "16GiBx",
                          "99999999999999999999999G", "1.2.3G", "inf G"}) {
    INFO(bad);
    CHECK_FALSE(byte_size(bad).has_value());
  }
  CHECK_THROWS_WITH(parse_byte_size("16", "--memory-limit"),
                    Catch::Contains("--memory-limit: '16' is not a memory size") && Catch::Contains("16GiB"));
}

TEST_CASE("sizes print in binary units", "[core][byte_size]") {
  CHECK(format_bytes(12) == "12 B");
  CHECK(format_bytes(1536) == "1.5 KiB");
  CHECK(format_bytes(double(std::size_t{16} << 30)) == "16.0 GiB");
}
