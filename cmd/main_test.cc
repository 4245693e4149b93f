// The `huygens` command's own flags (HUYGENS_BIN): --version, also after a subcommand.
#include <string>

#include "base/version.h"
#include "cmd/run_huygens.h"
#include "gtest/gtest.h"

namespace {

using huygens::cmd::testing::RunHuygens;

TEST(HuygensMain, VersionPrintsTheProgramAndItsVersion) {
  const auto r = RunHuygens("--version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "huygens " + std::string(huygens::Version()) + "\n");
}

TEST(HuygensMain, EveryCommandAnswersVersion) {
  for (const char* command : {"simulate", "allocate", "bench", "discover", "checkpoint", "status"}) {
    const auto r = RunHuygens(std::string(command) + " --version", /*merge_stderr=*/true);
    EXPECT_EQ(r.exit_code, 0) << command << ": " << r.out;
    EXPECT_EQ(r.out, "huygens " + std::string(huygens::Version()) + "\n") << command;
  }
}

}  // namespace
