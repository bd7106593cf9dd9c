// The safetensors reader and writer against the published format: the exact bytes written, a round
// trip, the conversions to f32, and every malformed file the format forbids refused with its reason.
#include "dptrain/interop/safetensors.hpp"

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "support/temp_dir.hpp"

namespace dptrain::interop {
namespace {
std::string file_bytes(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const std::uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

std::string floats(std::initializer_list<float> values) {
  std::string out(values.size() * 4, '\0');
  std::memcpy(out.data(), values.begin(), out.size());
  return out;
}

std::string parse_error(const std::string& header, const std::string& data) {
  try {
    SafetensorsFile::parse(file_bytes(header, data), "f.safetensors");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("safetensors files are written exactly as the format says and read back", "[interop]") {
  testing::TempDir dir("dptrain-st");
  Tensor w = Tensor::empty(Shape{2, 3});
  for (int i = 0; i < 6; ++i) w.data<float>()[i] = 0.5f * static_cast<float>(i) - 1.f;
  SafetensorsFile file;
  file.add("conv/weight", w);
  const std::int64_t seven = 7;
  file.add_bytes("bn.num_batches_tracked", "I64", {}, std::string(reinterpret_cast<const char*>(&seven), 8));
  file.metadata["model"] = "lenet";
  const std::string path = (dir.path / "w.safetensors").string();
  file.write(path);

  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  CHECK((8 + n) % 8 == 0);  // the tensors start aligned
  const std::string header = bytes.substr(8, n);
  CHECK(header.rfind(R"({"__metadata__":{"model":"lenet"},"conv/weight":{"dtype":"F32","shape":[2,3],)"
                     R"("data_offsets":[0,24]},"bn.num_batches_tracked":{"dtype":"I64","shape":[],)"
                     R"("data_offsets":[24,32]}})",
                     0) == 0);
  CHECK(bytes.size() == 8 + n + 32);
  CHECK(std::memcmp(bytes.data() + 8 + n, w.raw(), 24) == 0);
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));

  const SafetensorsFile back = SafetensorsFile::read(path);
  CHECK(back.metadata == file.metadata);
  REQUIRE(back.tensors().size() == 2);
  const StoredTensor* t = back.find("conv/weight");
  REQUIRE(t);
  CHECK(t->shape == std::vector<std::int64_t>{2, 3});
  const Tensor f = to_f32(*t, path);
  CHECK(std::memcmp(f.raw(), w.raw(), 24) == 0);
  CHECK(back.find("bn.num_batches_tracked")->shape.empty());
  CHECK_THROWS_WITH(to_f32(*back.find("bn.num_batches_tracked"), path), Catch::Contains("has dtype I64"));
}

TEST_CASE("safetensors half, bfloat16 and double tensors convert to f32", "[interop]") {
  // 1.0, -2.0, 65504 (largest half), 2^-24 (smallest subnormal half), inf
  const std::uint16_t half[] = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x7c00};
  const std::uint16_t bf16[] = {0x3f80, 0xc000, 0x4049};  // 1, -2, 3.140625
  const double f64[] = {0.25, -1e-3};
  std::string data(reinterpret_cast<const char*>(half), sizeof half);
  data += std::string(reinterpret_cast<const char*>(bf16), sizeof bf16);
  data += std::string(reinterpret_cast<const char*>(f64), sizeof f64);
  std::string header = R"({"h":{"dtype":"F16","shape":[5],"data_offsets":[0,10]},)"
                       R"("b":{"dtype":"BF16","shape":[3],"data_offsets":[10,16]},)"
                       R"("d":{"dtype":"F64","shape":[2],"data_offsets":[16,32]}})";
  const SafetensorsFile file = SafetensorsFile::parse(file_bytes(header, data), "x");
  const Tensor h = to_f32(*file.find("h"), "x");
  CHECK(h.data<float>()[0] == 1.f);
  CHECK(h.data<float>()[1] == -2.f);
  CHECK(h.data<float>()[2] == 65504.f);
  CHECK(h.data<float>()[3] == std::ldexp(1.f, -24));
  CHECK(std::isinf(h.data<float>()[4]));
  const Tensor b = to_f32(*file.find("b"), "x");
  CHECK(b.data<float>()[2] == 3.140625f);
  const Tensor d = to_f32(*file.find("d"), "x");
  CHECK(d.data<float>()[0] == 0.25f);
  CHECK(d.data<float>()[1] == static_cast<float>(-1e-3));
}

TEST_CASE("malformed safetensors files are refused with the reason", "[interop]") {
  const std::string two = floats({1.f, 2.f});
  const std::string ok = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  CHECK(parse_error(ok, two) == "(no error)");
  CHECK_THAT(parse_error(ok + "   ", two), Catch::Contains("(no error)"));  // padding is allowed
  CHECK_THROWS_WITH(SafetensorsFile::parse("abc", "f"), Catch::Contains("too short"));
  std::string huge(8, '\xff');
  CHECK_THROWS_WITH(SafetensorsFile::parse(huge + "{}", "f"), Catch::Contains("does not fit"));
  CHECK_THAT(parse_error("[1,2]", ""), Catch::Contains("does not start with '{'"));
  CHECK_THAT(parse_error("{\"a\":", ""), Catch::Contains("not valid JSON"));
  CHECK_THAT(parse_error(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                         R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                         two),
             Catch::Contains("names 'a' twice"));
  CHECK_THAT(parse_error(R"({"a":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}})", two),
             Catch::Contains("unknown dtype 'Q7'"));
  CHECK_THAT(parse_error(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", two),
             Catch::Contains("need 3 x 4"));
  CHECK_THAT(parse_error(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", two),
             Catch::Contains("non-negative integers"));
  CHECK_THAT(parse_error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", two),
             Catch::Contains("end before they begin"));
  CHECK_THAT(parse_error(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                         R"("b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                         two),
             Catch::Contains("overlap or leave a gap"));
  CHECK_THAT(parse_error(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", two),
             Catch::Contains("overlap or leave a gap"));
  CHECK_THAT(parse_error(ok, two + "xx"), Catch::Contains("the file has 10 after its header"));
  CHECK_THAT(parse_error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}})", two),
             Catch::Contains("need 2 x 4"));
  CHECK_THAT(parse_error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", two),
             Catch::Contains("exactly the keys"));
  CHECK_THAT(parse_error(R"({"__metadata__":{"k":3},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", two),
             Catch::Contains("'k' is not a string"));
  CHECK_THAT(parse_error(R"({"":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", two),
             Catch::Contains("empty name"));
  CHECK_THAT(parse_error(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],)"
                         R"("data_offsets":[0,8]}})",
                         two),
             Catch::Contains("overflows"));
  // nlohmann stops at a NUL: the text after one must not be taken for padding.
  CHECK_THAT(parse_error(ok + std::string(1, '\0') + R"( {"b": not json)", two), Catch::Contains("holds a NUL byte"));
  // Deep nesting is refused as it is read (a tree of nested containers costs many times its bytes).
  const std::string deep = R"({"__metadata__":{"k":)" + std::string(4000, '[') + std::string(4000, ']') + "}}";
  CHECK_THAT(parse_error(deep, ""), Catch::Contains("nests deeper than a safetensors header"));
}

TEST_CASE("safetensors writes never replace a file and survive metadata that is not UTF-8", "[interop]") {
  testing::TempDir dir("dptrain-st");
  SafetensorsFile file;
  file.add("w", Tensor::zeros(Shape{2}));
  file.metadata["checkpoint"] = "caf\xe9.h5";  // a Latin-1 file name
  const std::string path = (dir.path / "w.safetensors").string();
  {
    std::ofstream mine(path + ".tmp");  // the user's own file, not a leftover of ours
    mine << "mine";
  }
  file.write(path);
  CHECK(SafetensorsFile::read(path).metadata.at("checkpoint") == "caf\xef\xbf\xbd.h5");  // U+FFFD
  std::ifstream tmp(path + ".tmp");
  std::string kept;
  tmp >> kept;
  CHECK(kept == "mine");
  CHECK_THROWS_WITH(file.write(path), Catch::Contains("w.safetensors already exists: not replacing it"));
  CHECK(SafetensorsFile::read(path).tensors().size() == 1);
  // Only regular files are read: a directory or a device is refused, not read without end.
  CHECK_THROWS_WITH(SafetensorsFile::read(dir.path.string()), Catch::Contains("is not a regular file"));
  CHECK_THROWS_WITH(SafetensorsFile::read("/dev/zero"), Catch::Contains("/dev/zero is not a regular file"));
}

TEST_CASE("a safetensors file is read header first, and a tensor larger than the machine is named", "[interop]") {
  // A sparse file of 1 TiB of data whose header is valid: the reader must check the header against the
  // file's size and refuse the tensor by name before allocating it (it once read the whole file first,
  // ending in "unexpected: std::bad_alloc").
  testing::TempDir dir("dptrain_safetensors");
  const std::string path = (dir.path / "huge.safetensors").string();
  const std::uint64_t huge = std::uint64_t{1} << 40;
  std::string header = R"({"w":{"dtype":"U8","shape":[)" + std::to_string(huge) + R"(],"data_offsets":[0,)" +
                       std::to_string(huge) + "]}}";
  header.append((8 - header.size() % 8) % 8, ' ');
  {
    std::ofstream out(path, std::ios::binary);
    out << file_bytes(header, "");
  }
  std::error_code ec;
  std::filesystem::resize_file(path, 8 + header.size() + huge, ec);
  REQUIRE_FALSE(ec);  // a sparse file: no blocks are written
  try {
    SafetensorsFile::read(path);
    FAIL("a 1 TiB tensor was read");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains(path) && Catch::Contains("tensor 'w' takes 1099511627776 bytes"));
  }
  // A file whose header claims more than the file holds is refused from its first bytes.
  std::filesystem::resize_file(path, 8 + header.size() + 16, ec);
  REQUIRE_FALSE(ec);
  try {
    SafetensorsFile::read(path);
    FAIL("a header beyond the file was accepted");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains(path) && Catch::Contains("the file has 16 after its header"));
  }
}

}  // namespace dptrain::interop
