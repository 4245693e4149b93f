// The huygens-scheduler binary's own flags (--version): run as a process, no API server.
#include <string>
#include <vector>

#include "base/version.h"
#include "gtest/gtest.h"
#include "kube/testing/process.h"

namespace huygens::scheduler {
namespace {

struct Ran {
  int exit_code;
  std::string output;  // stdout and stderr
};

Ran RunScheduler(const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {HUYGENS_SCHEDULER_BIN};
  argv.insert(argv.end(), flags.begin(), flags.end());
  kube::testing::Process process(argv, ::testing::TempDir() + "/huygens-scheduler-main.log");
  const int exit_code = process.Wait();
  return {exit_code, kube::testing::Slurp(process.log())};
}

TEST(SchedulerMain, VersionPrintsTheProgramAndItsVersion) {
  const Ran r = RunScheduler({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "huygens-scheduler " + std::string(Version()) + "\n");
}

}  // namespace
}  // namespace huygens::scheduler
