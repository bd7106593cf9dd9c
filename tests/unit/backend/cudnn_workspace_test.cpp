// DPTRAIN_CUDNN_WORKSPACE_MB: a whole number of MiB, or an error naming the variable (never a typo
// read as another size).
#include "dptrain/backend/cudnn_workspace.hpp"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "dptrain/core/error.hpp"

namespace {
// Sets the variable for one scope and restores the absence after it.
struct WorkspaceVariable {
  explicit WorkspaceVariable(const char* value) { REQUIRE(::setenv("DPTRAIN_CUDNN_WORKSPACE_MB", value, 1) == 0); }
  ~WorkspaceVariable() { ::unsetenv("DPTRAIN_CUDNN_WORKSPACE_MB"); }
};
}  // namespace

TEST_CASE("the cuDNN workspace cap is 512 MiB unless DPTRAIN_CUDNN_WORKSPACE_MB gives a whole number") {
  ::unsetenv("DPTRAIN_CUDNN_WORKSPACE_MB");
  CHECK(dptrain::cudnn_workspace_cap_bytes() == std::size_t{512} << 20);
  {
    WorkspaceVariable empty("");
    CHECK(dptrain::cudnn_workspace_cap_bytes() == std::size_t{512} << 20);
  }
  {
    WorkspaceVariable set("2048");
    CHECK(dptrain::cudnn_workspace_cap_bytes() == std::size_t{2048} << 20);
  }
  {
    WorkspaceVariable none("0");  // no workspace: only algorithms that need none
    CHECK(dptrain::cudnn_workspace_cap_bytes() == 0);
  }
}

TEST_CASE("a DPTRAIN_CUDNN_WORKSPACE_MB that is not a whole number of MiB is an error naming it") {
  for (const char* bad :
       {"1G", "512MB", "512 ", " 512x", "-1", "+5", "abc", "1.5", "99999999999999999999999", "1048577"}) {
    WorkspaceVariable set(bad);
    INFO(bad);
    try {
      (void)dptrain::cudnn_workspace_cap_bytes();
      FAIL("accepted");
    } catch (const dptrain::Error& e) {
      CHECK(std::string(e.what()).find("DPTRAIN_CUDNN_WORKSPACE_MB") != std::string::npos);
      CHECK(std::string(e.what()).find(bad) != std::string::npos);
    }
  }
}

TEST_CASE("the cuDNN workspace cap follows the device's free memory: a quarter, bounded") {
  ::unsetenv("DPTRAIN_CUDNN_WORKSPACE_MB");
  constexpr std::size_t MiB = std::size_t{1} << 20, GiB = std::size_t{1} << 30;
  CHECK(dptrain::cudnn_workspace_cap_bytes(120 * GiB) == 4 * GiB);    // an H200 after ResNet-50: the ceiling
  CHECK(dptrain::cudnn_workspace_cap_bytes(8 * GiB) == 2 * GiB);      // a quarter
  CHECK(dptrain::cudnn_workspace_cap_bytes(1 * GiB) == 512 * MiB);    // the floor of 512 MiB
  CHECK(dptrain::cudnn_workspace_cap_bytes(600 * MiB) == 256 * MiB);  // never over half of it: 300, down to 2^28
  CHECK(dptrain::cudnn_workspace_cap_bytes(12 * GiB) == 2 * GiB);     // 3 GiB: a power of two, so that ranks agree
  CHECK(dptrain::cudnn_workspace_cap_bytes(12 * GiB + 7 * MiB) == dptrain::cudnn_workspace_cap_bytes(13 * GiB));
  CHECK(dptrain::cudnn_workspace_cap_bytes(0) == 0);
  CHECK(dptrain::cudnn_workspace_cap_bytes() == 512 * MiB);  // no device known: the floor
  WorkspaceVariable set("64");                               // the override wins over the device's memory
  CHECK(dptrain::cudnn_workspace_cap_bytes(120 * GiB) == 64 * MiB);
  CHECK(dptrain::cudnn_workspace_cap_bytes(0) == 64 * MiB);
}
