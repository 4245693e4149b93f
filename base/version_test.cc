#include "base/version.h"

#include <regex>
#include <string>

#include "gtest/gtest.h"

namespace huygens {
namespace {

// HUYGENS_PROJECT_VERSION and HUYGENS_GIT_DESCRIBE: what CMake found at configure time
// (base/CMakeLists.txt defines them for this test as for version.cc).
TEST(VersionTest, IsTheProjectVersionWithGitDescribeAsBuildMetadata) {
  const std::string describe = HUYGENS_GIT_DESCRIBE;
  const std::string expected =
      std::string(HUYGENS_PROJECT_VERSION) + (describe.empty() ? "" : "+" + describe);
  EXPECT_EQ(Version(), expected);
}

TEST(VersionTest, IsASemanticVersion) {
  const std::regex semver(R"(\d+\.\d+\.\d+(\+[0-9A-Za-z.-]+)?)");
  EXPECT_TRUE(std::regex_match(std::string(Version()), semver)) << Version();
}

TEST(VersionTest, LineNamesTheProgramThenTheVersion) {
  EXPECT_EQ(VersionLine("huygens-agent"), "huygens-agent " + std::string(Version()));
}

}  // namespace
}  // namespace huygens
