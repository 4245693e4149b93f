// `huygens checkpoint inspect` end to end (HUYGENS_BIN) on the real kubelet checkpoints in
// ../shared/fixtures/kubelet: the CPU map, the violations it must find, and its exit status
// (0 clean, 1 violations, 2 unreadable).
#include <fstream>
#include <string>

#include "cmd/run_huygens.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace {

using ::huygens::cmd::testing::RunHuygens;
using ::testing::HasSubstr;

const std::string kDir = std::string(HUYGENS_FIXTURES) + "/kubelet/";

TEST(HuygensCheckpointInspect, MapsAKubeletCheckpointOnTwoNumaNodesAndFindsNothingWrong) {
  auto r = RunHuygens("checkpoint inspect " + kDir +
                          "cpu_manager_state.volcano-numa-docs.32cpu-2numa.json "
                          "--synthetic 'package:2 numa:1 core:16 pu:1'",
                      true);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("exclusive:   1-9,16-24"));
  EXPECT_THAT(r.out, HasSubstr("shared pool: 0,10-15,25-31"));
  // One container per NUMA node, as the Volcano guide shows.
  EXPECT_THAT(r.out, HasSubstr("NUMA node 0 [0-15]: .bbbbbbbbb......"));
  EXPECT_THAT(r.out, HasSubstr("NUMA node 1 [16-31]: aaaaaaaaa......."));
  EXPECT_THAT(r.out, HasSubstr("no violations"));
}

TEST(HuygensCheckpointInspect, ReportsAReservedCpuHandedToAPodWithExitStatusOne) {
  // The EKS node pins a container to CPU 1; with 0-1 reserved that is a violation.
  auto r = RunHuygens("checkpoint inspect " + kDir +
                          "cpu_manager_state.eks-outposts.192cpu.json "
                          "--synthetic 'package:2 core:48 pu:2' --reserved-cpus 0-1",
                      true);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("cpus 1 are in the system pool"));
}

TEST(HuygensCheckpointInspect, ReportsAChecksumThatKubeletWouldRefuse) {
  // The talos unit-test file carries a dummy checksum of 1.
  auto r = RunHuygens(
      "checkpoint inspect " + kDir + "memory_manager_state.talos-unittest.static-64GiB.json", true);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("checksum: file says 1"));
}

TEST(HuygensCheckpointInspect, AcceptsEveryRealKubeletFileChecksum) {
  for (const char* name :
       {"cpu_manager_state.k8s-issue-118657.64cpu.json", "cpu_manager_state.eks-outposts.192cpu.json",
        "cpu_manager_state.blog.16cpu.json", "cpu_manager_state.blog.28cpu.json",
        "cpu_manager_state.blog.none-policy.json",
        "memory_manager_state.blog.16cpu.none-policy.json"}) {
    auto r = RunHuygens("checkpoint inspect " + kDir + name, true);
    EXPECT_THAT(r.out, ::testing::Not(HasSubstr("checksum:"))) << name;
    EXPECT_NE(r.exit_code, 2) << name << "\n" << r.out;
  }
}

// A crafted machine (CPUs 0-3 online, 4 offline) and crafted files, checked as kubelet and the
// runtime would: an offline CPU anywhere in the file, and an online CPU in neither the default
// set nor an entry, also in a static file without entries.
TEST(HuygensCheckpointInspect, ReportsOfflineCpusAndOnlineCpusTheFileLeavesOut) {
  const std::string dir = ::testing::TempDir();
  const std::string machine = dir + "inspect-machine.json";
  std::ofstream(machine)
      << R"({"cpus":[{"id":0,"core":0,"socket":0,"numa":0},{"id":1,"core":1,"socket":0,"numa":0},)"
      << R"({"id":2,"core":2,"socket":0,"numa":0},{"id":3,"core":3,"socket":0,"numa":0},)"
      << R"({"id":4,"online":false}]})";
  struct Case {
    const char* name;
    const char* text;
    const char* violation;
  };
  for (const Case& c : {
           Case{"offline-default", R"({"policyName":"static","defaultCpuSet":"0-4","checksum":0})",
                "defaultCpuSet: cpus 4 are offline"},
           Case{"offline-entry",
                R"({"policyName":"static","defaultCpuSet":"0-1","entries":{"p":{"c":"2-4"}},"checksum":0})",
                "cpus 4 are offline"},
           Case{"left-out", R"({"policyName":"static","defaultCpuSet":"0-2","checksum":0})",
                "online cpus 3 are neither in defaultCpuSet nor assigned"},
       }) {
    const std::string file = dir + "inspect-" + c.name + ".json";
    std::ofstream(file) << c.text;
    auto r = RunHuygens("checkpoint inspect " + file + " --topology " + machine, true);
    EXPECT_EQ(r.exit_code, 1) << c.name << "\n" << r.out;
    EXPECT_THAT(r.out, HasSubstr(c.violation)) << c.name;
  }
  const std::string clean = dir + "inspect-clean.json";
  std::ofstream(clean) << R"({"policyName":"static","defaultCpuSet":"0-3","checksum":0})";
  auto r = RunHuygens("checkpoint inspect " + clean + " --topology " + machine, true);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("no violations"));
}

TEST(HuygensCheckpointInspect, ExitsTwoNamingTheFileWhenItIsNotACheckpoint) {
  const std::string path = ::testing::TempDir() + "not-a-checkpoint.json";
  std::ofstream(path) << "garbage\n";
  auto r = RunHuygens("checkpoint inspect " + path, true);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("huygens checkpoint inspect: " + path + ": "));
  r = RunHuygens("checkpoint inspect /nonexistent/cpu_manager_state", true);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("/nonexistent/cpu_manager_state"));
}

}  // namespace
