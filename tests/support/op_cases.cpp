// all_op_cases: the case lists of op_cases.hpp, one per op of DPTRAIN_BACKEND_OPS, and add's.
#include "support/op_cases.hpp"

namespace dptrain::testing {

std::vector<OpCase> all_op_cases() {
  std::vector<OpCase> cases;
  auto append = [&cases](std::vector<OpCase> more) {
    for (OpCase& c : more) cases.push_back(std::move(c));
  };
#define DPTRAIN_APPEND_OP_CASES(name, Plan, params, args) append(name##_cases());
  DPTRAIN_BACKEND_OPS(DPTRAIN_APPEND_OP_CASES)
#undef DPTRAIN_APPEND_OP_CASES
  append(add_cases());
  return cases;
}

}  // namespace dptrain::testing
