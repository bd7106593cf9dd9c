// Every op case of support/op_cases on the CPU backend: a TEST_CASE per op of DPTRAIN_BACKEND_OPS
// (generated from that list, so a new op gets one and must define its <op>_cases() to link), and one
// for add. Each case is a section: run one with -c "<its name>".
//
// "[.timing]" prints the milliseconds of every case's forward and backward pass; hidden, so that only
// `unit_layers_ops "[.timing]"` runs it.
#include "support/op_cases.hpp"

#include <catch2/catch.hpp>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "dptrain/backend/backend.hpp"

namespace dptrain {
namespace {

Backend& cpu() {
  static const std::unique_ptr<Backend> backend = make_cpu_backend();
  return *backend;
}

void check_cases(const std::vector<testing::OpCase>& cases) {
  REQUIRE_FALSE(cases.empty());  // an op's empty list would pass with nothing checked
  // Catch2 runs a section once per name: a repeated name would skip its case.
  std::set<std::string> names;
  for (const testing::OpCase& c : cases) REQUIRE(names.insert(c.name).second);
  for (const testing::OpCase& c : cases) {
    DYNAMIC_SECTION(c.name) { testing::check_op_case(c, cpu()); }
  }
}

#define DPTRAIN_OP_CASES_TEST(name, Plan, params, args)                                               \
  TEST_CASE(#name " matches its reference and finite differences", "[layers][op_cases][" #name "]") { \
    check_cases(testing::name##_cases());                                                             \
  }
DPTRAIN_BACKEND_OPS(DPTRAIN_OP_CASES_TEST)
#undef DPTRAIN_OP_CASES_TEST

TEST_CASE("add matches its reference and finite differences", "[layers][op_cases][add]") {
  check_cases(testing::add_cases());
}

TEST_CASE("op timing: milliseconds per forward and backward pass of every case", "[.timing]") {
  for (const testing::OpCase& c : testing::all_op_cases()) testing::time_op_case(c, cpu(), 20);
}

}  // namespace
}  // namespace dptrain
