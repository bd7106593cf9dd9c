#include <catch2/catch.hpp>

#include "dptrain/core/check_dnnl.hpp"
#include "dptrain/core/check_hdf5.hpp"

using namespace dptrain;

TEST_CASE("DPTRAIN_DNNL_CHECK turns a oneDNN failure into an Error naming the call", "[core][errors]") {
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  // A 2-D source with a 4-D filter cannot make a convolution.
  auto bad = [] {
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    return DPTRAIN_DNNL_CHECK(dnnl::convolution_forward::desc(
        dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
        dnnl::memory::desc({2, 3}, dt::f32, tag::ab), dnnl::memory::desc({4, 3, 3, 3}, dt::f32, tag::abcd),
        dnnl::memory::desc({2, 4}, dt::f32, tag::ab), {1, 1}, {0, 0}, {0, 0}));
  };
  try {
    bad();
    FAIL("no exception");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK_THAT(what, Catch::StartsWith("oneDNN call failed: dnnl::convolution_forward::desc("));
    CHECK_THAT(what, Catch::Contains("checks_test.cpp:"));
  }
  CHECK(DPTRAIN_DNNL_CHECK(dnnl_success) == dnnl_success);
  CHECK_THROWS_WITH(DPTRAIN_DNNL_CHECK(dnnl_invalid_arguments), Catch::Contains("invalid arguments"));
}

TEST_CASE("DPTRAIN_H5_CHECK turns a negative HDF5 result into an Error with HDF5's reason", "[core][errors]") {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // no HDF5 stack dump on stderr
  try {
    DPTRAIN_H5_CHECK(H5Fopen("/nonexistent/dptrain-test.h5", H5F_ACC_RDONLY, H5P_DEFAULT));
    FAIL("no exception");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK_THAT(what, Catch::StartsWith("HDF5 call failed: H5Fopen(\"/nonexistent/dptrain-test.h5\""));
    CHECK_THAT(what, Catch::Contains("checks_test.cpp:"));
    CHECK_THAT(what, !Catch::EndsWith(": HDF5 reported an error"));
  }
  // Success passes the value through.
  const hid_t space = DPTRAIN_H5_CHECK(H5Screate(H5S_SCALAR));
  CHECK(space >= 0);
  CHECK(DPTRAIN_H5_CHECK(H5Sclose(space)) >= 0);
}

TEST_CASE("DPTRAIN_H5_CHECK keeps the operating system's cause from the innermost frame", "[core][errors][hostile]") {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  // Paths whose open fails in the sec2 driver with an errno made here: missing, a name too long.
  const std::string too_long = "/tmp/" + std::string(300, 'x') + ".h5";
  const std::pair<std::string, const char*> cases[] = {
      {"/nonexistent/dptrain-test.h5", "No such file or directory"},
      {too_long, "File name too long"},
  };
  for (const auto& [path, cause] : cases) {
    INFO(path);
    CHECK_THROWS_WITH(DPTRAIN_H5_CHECK(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT)), Catch::Contains(cause));
  }
}

TEST_CASE("DPTRAIN_CHECK streams its message", "[core][errors]") {
  auto failing = [] { DPTRAIN_CHECK(1 + 1 == 3, "expected ", 3, " got ", 2); };
  auto passing = [] { DPTRAIN_CHECK(true, "never"); };
  CHECK_THROWS_WITH(failing(), "expected 3 got 2");
  CHECK_NOTHROW(passing());
}
