// The huygens-agent binary's own flags (--version, --help): run as a process, no API server.
#include <string>
#include <vector>

#include "base/version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/testing/process.h"
#include "agent/config.h"

namespace huygens::agent {
namespace {

using ::testing::HasSubstr;

struct Ran {
  int exit_code;
  std::string output;  // stdout and stderr
};

Ran RunAgent(const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {HUYGENS_AGENT_BIN};
  argv.insert(argv.end(), flags.begin(), flags.end());
  // One log per test: ctest runs the tests of this file in parallel processes.
  kube::testing::Process process(
      argv, ::testing::TempDir() + "/huygens-agent-main-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".log");
  const int exit_code = process.Wait();
  return {exit_code, kube::testing::Slurp(process.log())};
}

TEST(AgentMain, VersionPrintsTheProgramAndItsVersion) {
  const Ran r = RunAgent({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "huygens-agent " + std::string(Version()) + "\n");
}

TEST(AgentMain, HelpExplainsEveryFlagAndListsEveryConfigurationField) {
  const Ran r = RunAgent({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* flag : {"--config", "--kubeconfig", "--node-name", "--bind-address", "--once", "--log-level", "--version"}) {
    // Each flag is listed with a description after it.
    EXPECT_THAT(r.output, ::testing::ContainsRegex(std::string(flag) + "[^\n]* [A-Za-z]")) << flag;
  }
  EXPECT_THAT(r.output, HasSubstr(kAgentConfigReference)) << "the configuration reference is the footer";
}

TEST(AgentMain, ABindAddressThatIsNotAnIpExitsTwoNamingIt) {
  const Ran r = RunAgent({"--bind-address", "$(POD_IP)", "--node-name", "n1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("bind address \"$(POD_IP)\" is not an IPv4 or IPv6 address"));
}

}  // namespace
}  // namespace huygens::agent
