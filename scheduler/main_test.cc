// The huygens-scheduler binary's own flags (--version, --help): run as a process, no API server.
#include <string>
#include <vector>

#include "base/version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/testing/process.h"
#include "scheduler/config.h"

namespace huygens::scheduler {
namespace {

using ::testing::HasSubstr;

struct Ran {
  int exit_code;
  std::string output;  // stdout and stderr
};

Ran RunScheduler(const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {HUYGENS_SCHEDULER_BIN};
  argv.insert(argv.end(), flags.begin(), flags.end());
  // One log per test: ctest runs the tests of this file in parallel processes.
  kube::testing::Process process(
      argv, ::testing::TempDir() + "/huygens-scheduler-main-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".log");
  const int exit_code = process.Wait();
  return {exit_code, kube::testing::Slurp(process.log())};
}

TEST(SchedulerMain, VersionPrintsTheProgramAndItsVersion) {
  const Ran r = RunScheduler({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "huygens-scheduler " + std::string(Version()) + "\n");
}

TEST(SchedulerMain, HelpExplainsEveryFlagAndListsEveryConfigurationField) {
  const Ran r = RunScheduler({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* flag : {"--config", "--kubeconfig", "--context", "--master", "--identity", "--metrics-address", "--bind-address", "--no-leader-elect", "--log-level", "--version"}) {
    // Each flag is listed with a description after it.
    EXPECT_THAT(r.output, ::testing::ContainsRegex(std::string(flag) + "[^\n]* [A-Za-z]")) << flag;
  }
  EXPECT_THAT(r.output, HasSubstr(kSchedulerConfigReference)) << "the configuration reference is the footer";
}

TEST(SchedulerMain, ABindAddressThatIsNotAnIpExitsOneNamingIt) {
  const Ran r = RunScheduler({"--bind-address", "$(POD_IP)", "--master", "http://127.0.0.1:1"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("bind address \"$(POD_IP)\" is not an IPv4 or IPv6 address"));
}

}  // namespace
}  // namespace huygens::scheduler
