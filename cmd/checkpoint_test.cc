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
