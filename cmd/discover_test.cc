// `huygens discover` end to end: runs the built binary (HUYGENS_BIN) on fixture machines and
// checks exit codes, the one-line errors, the picture's summary and that JSON/NRT parse.
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "cmd/run_huygens.h"

namespace {

using ::testing::HasSubstr;

const std::string kDir = std::string(HUYGENS_FIXTURES) + "/topologies/";

using Result = huygens::cmd::testing::RunResult;

Result RunDiscover(const std::string& args, bool merge_stderr = false) {
  return huygens::cmd::testing::RunHuygens("discover " + args, merge_stderr);
}

TEST(HuygensDiscover, PicturesTheLiveMachine) {
  Result r = RunDiscover("");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("socket 0\n"));
  EXPECT_THAT(r.out, HasSubstr("NUMA node 0"));
  EXPECT_THAT(r.out, HasSubstr("summary: "));
}

TEST(HuygensDiscover, PicturesATarballWithCpuLessNodesAndDistances) {
  Result r = RunDiscover("--fsroot " + kDir + "nvidiagpunumanodes.tar.bz2");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("NUMA nodes without online CPUs\n  NUMA node 250"));
  EXPECT_THAT(r.out, HasSubstr("core 0    cpus 0,1,2,3\n"));
  EXPECT_THAT(r.out, HasSubstr("NUMA distances\n"));
  EXPECT_THAT(r.out, HasSubstr("summary: 2 sockets, 8 NUMA nodes (2 with CPUs), 4 L3 groups, 8 "
                               "cores, 32 CPUs online, 0 offline, 0 isolated\n"));
}

TEST(HuygensDiscover, MarksOfflineCpus) {
  Result r = RunDiscover("--fsroot " + kDir + "offline-cpu0-node0.tar.bz2");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("offline cpus: 0-3,21-23\n"));
}

TEST(HuygensDiscover, JsonOfAnXmlMachineParsesWithEveryCpuAndNode) {
  Result r = RunDiscover("--xml " + kDir + "192em64t-24n8c2t.hwloc2.xml --output json");
  ASSERT_EQ(r.exit_code, 0);
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["version"], 1);
  EXPECT_EQ(doc["cpus"].size(), 384u);
  EXPECT_EQ(doc["numaNodes"].size(), 24u);
}

TEST(HuygensDiscover, JsonIsTheSameFromTheSameInputTwice) {
  const std::string args = "--synthetic 'package:2 numa:2 l3cache:2 core:4 pu:2' --output json";
  Result a = RunDiscover(args), b = RunDiscover(args);
  ASSERT_EQ(a.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(a.out), nlohmann::json::parse(b.out));
}

TEST(HuygensDiscover, NumaSplitAndAdjacentNumberingReachTheOutput) {
  Result r = RunDiscover("--xml " + kDir + "AMD-19h-Zen4-2xEpyc-9654.hwloc2.xml --numa-split per-socket:4 "
                 "--output json");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(r.out)["numaNodes"].size(), 8u);
  Result s = RunDiscover("--synthetic 'package:1 core:2 pu:2' --numbering adjacent");
  ASSERT_EQ(s.exit_code, 0);
  EXPECT_THAT(s.out, HasSubstr("core 0    cpus 0,1\n"));
}

TEST(HuygensDiscover, NrtHasOneZonePerNumaNodeAndTheTopologyAnnotation) {
  Result r = RunDiscover("--fsroot " + kDir + "fakememinitiators-1np2c+1npp+gi.tar.bz2 --output nrt "
                 "--node-name worker-1 --reserved-cpus 0-1");
  ASSERT_EQ(r.exit_code, 0);
  nlohmann::json nrt = nlohmann::json::parse(r.out);
  EXPECT_EQ(nrt["kind"], "NodeResourceTopology");
  EXPECT_EQ(nrt["metadata"]["name"], "worker-1");
  EXPECT_EQ(nrt["zones"].size(), 11u);
  EXPECT_TRUE(nrt["metadata"]["annotations"].contains("huygens.io/cpu-topology"));
}

struct BadCase {
  std::string args;
  std::string message_part;
};

class HuygensDiscoverBadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(HuygensDiscoverBadInput, ExitsTwoWithOneLineNamingTheProblem) {
  Result r = RunDiscover(GetParam().args, /*merge_stderr=*/true);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr(GetParam().message_part));
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, HuygensDiscoverBadInput,
    ::testing::Values(
        BadCase{"--fsroot /nonexistent/dump", "huygens discover: /nonexistent/dump: no such file"},
        BadCase{"--xml /nonexistent.xml", "huygens discover: /nonexistent.xml: no such file"},
        BadCase{"--fsroot " + kDir + "README.md", "README.md: not a readable .tar.bz2"},
        BadCase{"--xml " + kDir + "memorysidecaches.console",
                "memorysidecaches.console: not an hwloc XML topology"},
        BadCase{"--xml " + kDir + "192em64t-24n8c2t.xml", "use the *.hwloc2.xml copy"},
        BadCase{"--synthetic 'package:2 widget:3'", "unknown object type \"widget\""},
        BadCase{"--synthetic 'package:1 core:1 pu:1' --numa-split per-socket:2",
                "socket 0 has only 1 cores"},
        BadCase{"--xml " + kDir + "64amd64-4p2n4ca2co.hwloc2.xml --numa-split nps4",
                "NUMA split \"nps4\""}));

TEST(HuygensDiscover, UsageErrorsExitTwo) {
  EXPECT_EQ(RunDiscover("--output yaml").exit_code, 2);
  EXPECT_EQ(RunDiscover("--xml a.xml --synthetic 'pu:1'").exit_code, 2);
}

}  // namespace
