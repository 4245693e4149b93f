// The rebalancer in the simulator (SimulationOptions::rebalance, the huygens+rebalance column):
// moves carried out through the scheduler cache so later pods see them, opt-outs, balancing,
// the affinity figures, and the rebalancer example under sim/testdata/rebalance.
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/report.h"
#include "sim/simulator.h"

namespace huygens::sim {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;

SimulationOptions CheckedOptions(std::optional<RebalanceSettings> rebalance) {
  SimulationOptions o;
  auto now = std::make_shared<int64_t>(0);
  o.clock_ns = [now] { return *now += 1000; };  // deterministic: 1 µs per reading
  o.check_every_event = true;  // NodeState::Validate and the ledger after every event and tick
  o.rebalance = rebalance;
  return o;
}

// One node of 2 NUMA nodes x 4 cores x 2 threads (8 CPUs each, no system CPU), packing.
ClusterSpec OneNode() {
  auto spec = ParseClusterSpec(R"(nodeGroups:
  - {name: n, count: 1, topology: {synthetic: "package:1 numa:2 core:4 pu:2"}, systemCpuCount: 0}
)",
                               "cluster.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  return *spec;
}

// On OneNode(): member a of group g and a filler fill NUMA node 0 at t = 0; member b arrives
// at 10 s and lands on NUMA node 1; the filler leaves at 100 s; at 130 s a pod of 8 CPUs
// needs a whole NUMA node (single-numa-node). `a_extra` / `b_extra` are added to a's and b's
// templates.
std::vector<PodArrival> SplitPair(const std::string& a_extra = "",
                                  const std::string& b_extra = "") {
  const std::string yaml = R"(pods:
  - name: a
    affinityGroup: g
)" + a_extra + R"(    containers: [{name: c, limits: {cpu: 4, memory: 1Gi}}]
  - name: filler
    lifetime: {distribution: fixed, value: 100s}
    containers: [{name: c, limits: {cpu: 4, memory: 1Gi}}]
  - name: b
    startAt: 10s
    affinityGroup: g
)" + b_extra + R"(    containers: [{name: c, limits: {cpu: 4, memory: 1Gi}}]
  - name: big
    startAt: 130s
    containers: [{name: c, limits: {cpu: 8, memory: 1Gi}}]
)";
  auto spec = ParseWorkloadSpec(yaml, "workload.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  return GenerateArrivals(*spec, 1);
}

RebalanceSettings Every(int seconds, bool balance = false) {
  RebalanceSettings s;
  s.interval_us = int64_t{seconds} * 1000000;
  s.planner.balance = balance;
  return s;
}

// The samples of `run` count a and b apart until `joined_at` seconds and together after it.
void ExpectJoinedAt(const RunReport& run, double joined_at) {
  ASSERT_FALSE(run.timeline.empty());
  for (const TimelineSample& s : run.timeline) {
    if (s.seconds > 10.5 && s.seconds < joined_at) {
      EXPECT_EQ(s.group_members_colocated, 2) << s.seconds;
      EXPECT_EQ(s.group_members_aligned, 0) << s.seconds;
    } else if (s.seconds > joined_at) {
      EXPECT_EQ(s.group_members_aligned, 2) << s.seconds;
    }
  }
}

TEST(SimulatorRebalanceTest, AMoveJoinsTheGroupAndTheNextPodSeesTheFreedNumaNode) {
  auto report = Simulate(OneNode(), SplitPair(), CheckedOptions(Every(60)),
                         /*with_baseline=*/false);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->has_rebalance);
  const RunReport& plain = report->huygens;
  const RunReport& moved = report->huygens_rebalance;
  EXPECT_EQ(moved.scheduler, "huygens+rebalance");
  // Without the rebalancer a and b stay apart and no NUMA node is ever free for big.
  EXPECT_EQ(plain.rebalance_moves, 0);
  EXPECT_EQ(plain.unschedulable, 1);
  EXPECT_EQ(plain.group_aligned_share, 0.0);
  // With it, the tick at 60 s moves a (4 CPUs) beside b on NUMA node 1 (NUMA node 0 is full);
  // once the filler leaves, big takes NUMA node 0.
  EXPECT_EQ(moved.rebalance_moves, 1);
  EXPECT_EQ(moved.rebalance_moved_cpus, 4);
  EXPECT_EQ(moved.unschedulable, 0);
  ASSERT_TRUE(moved.group_aligned_share.has_value());
  EXPECT_GT(*moved.group_aligned_share, 0.0);
  ExpectJoinedAt(moved, 60);
}

TEST(SimulatorRebalanceTest, APodThatOptsOutIsNeverMovedAndItsPartnerComesToIt) {
  // a pinned: b waits for room on a's NUMA node (the filler leaves at 100 s) and moves there
  // at 120 s; big then gets NUMA node 1.
  auto report = Simulate(OneNode(), SplitPair("    rebalance: false\n", ""),
                         CheckedOptions(Every(60)), /*with_baseline=*/false);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->huygens_rebalance.rebalance_moves, 1);
  EXPECT_EQ(report->huygens_rebalance.unschedulable, 0);
  ExpectJoinedAt(report->huygens_rebalance, 120);
  // Both pinned: nothing moves, and big never fits.
  report = Simulate(OneNode(),
                    SplitPair("    rebalance: false\n", "    rebalance: false\n"),
                    CheckedOptions(Every(60)), /*with_baseline=*/false);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->huygens_rebalance.rebalance_moves, 0);
  EXPECT_EQ(report->huygens_rebalance.unschedulable, 1);
}

TEST(SimulatorRebalanceTest, SpreadGroupsAreLeftOutOfTheAlignedShare) {
  auto report = Simulate(OneNode(),
                         SplitPair("    affinityPolicy: spread\n", "    affinityPolicy: spread\n"),
                         CheckedOptions(Every(60)), /*with_baseline=*/false);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->huygens.group_aligned_share.has_value());
  EXPECT_EQ(report->huygens.group_members_colocated_mean, 0);
  // They are already apart: nothing to do.
  EXPECT_EQ(report->huygens_rebalance.rebalance_moves, 0);
}

TEST(SimulatorRebalanceTest, BalancingEvensTheNumaLoadOfPackedPods) {
  // Two 4-CPU pods pack onto NUMA node 0 (spread 8); balancing moves one to NUMA node 1.
  auto spec = ParseWorkloadSpec(R"(pods:
  - name: p
    count: 2
    lifetime: {distribution: fixed, value: 300s}
    containers: [{name: c, limits: {cpu: 4, memory: 1Gi}}]
)",
                                "workload.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto report = Simulate(OneNode(), GenerateArrivals(*spec, 1),
                         CheckedOptions(Every(60, /*balance=*/true)), /*with_baseline=*/false);
  ASSERT_TRUE(report.ok()) << report.status();
  for (const TimelineSample& s : report->huygens.timeline) {
    if (s.seconds > 1 && s.seconds < 300) {
      EXPECT_EQ(s.numa_load_spread, 8) << s.seconds;
    }
  }
  EXPECT_EQ(report->huygens_rebalance.rebalance_moves, 1);
  EXPECT_LT(report->huygens_rebalance.numa_load_spread_mean, report->huygens.numa_load_spread_mean);
  for (const TimelineSample& s : report->huygens_rebalance.timeline) {
    if (s.seconds > 60 && s.seconds < 300) {
      EXPECT_EQ(s.numa_load_spread, 0) << s.seconds;
    }
  }
  // No group anywhere, but the rebalancer ran: the figures are shown.
  EXPECT_TRUE(report->affinity_figures);
}

TEST(SimulatorRebalanceTest, TheColumnAndTheFiguresAppearInEveryRendering) {
  auto report = Simulate(OneNode(), SplitPair(), CheckedOptions(Every(60)),
                         /*with_baseline=*/false);
  ASSERT_TRUE(report.ok()) << report.status();
  const nlohmann::json j = ReportToJson(*report, true);
  EXPECT_EQ(j["rebalance"]["intervalSeconds"], 60);
  EXPECT_EQ(j["rebalance"]["maxMoves"], 1);
  EXPECT_EQ(j["huygensRebalance"]["rebalanceMoves"], 1);
  EXPECT_TRUE(j["nrt"].is_null());
  for (const char* run : {"huygens", "huygensRebalance"}) {
    for (const char* key : {"groupAlignedShare", "groupMembersColocatedMean",
                            "numaLoadSpreadMean", "rebalanceMoves", "rebalanceMovedCpus",
                            "rebalanceIntervals"}) {
      EXPECT_TRUE(j[run].contains(key)) << run << "." << key;
    }
    EXPECT_TRUE(j[run]["timeline"][0].contains("groupMembersAligned")) << run;
  }
  const std::string table = ReportToTable(*report);
  EXPECT_THAT(table, ContainsRegex("huygens +huygens\\+rebalance +nrt +baseline\n"));
  EXPECT_THAT(table, ContainsRegex("\nrebalancer moves / CPUs moved +0 / 0 +1 / 4 +- +-\n"));
  const std::string html = ReportToHtml(*report);
  EXPECT_THAT(html, HasSubstr("<th>huygens</th><th>huygens+rebalance</th><th>nrt</th>"));
  EXPECT_THAT(html, HasSubstr("<polyline class=\"huygens-rebalance\""));
  EXPECT_THAT(html, HasSubstr("Group members aligned on one NUMA node"));
  EXPECT_THAT(html, HasSubstr("NUMA load spread"));

  // Neither groups nor the rebalancer: no column, no figures.
  auto spec = ParseWorkloadSpec(
      "pods:\n  - name: p\n    containers: [{name: c, limits: {cpu: 4, memory: 1Gi}}]\n",
      "workload.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  report = Simulate(OneNode(), GenerateArrivals(*spec, 1), CheckedOptions(std::nullopt),
                    /*with_baseline=*/false);
  ASSERT_TRUE(report.ok()) << report.status();
  const nlohmann::json plain = ReportToJson(*report, true);
  EXPECT_FALSE(plain.contains("huygensRebalance"));
  EXPECT_FALSE(plain["huygens"].contains("groupAlignedShare"));
  EXPECT_THAT(ReportToTable(*report), ::testing::Not(HasSubstr("rebalance")));
}

// The rebalancer example (docs/simulate.md): with the rebalancer, strictly more group members
// share a NUMA node with their group, and every node stays valid after every interval.
TEST(SimulatorRebalanceTest, OnTheRebalanceExampleTheRebalancerAlignsMoreGroupMembers) {
  const std::string dir = std::string(HUYGENS_SOURCE_DIR) + "/sim/testdata/rebalance/";
  auto cluster = LoadClusterSpec(dir + "cluster.yaml");
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto workload = LoadWorkloadSpec(dir + "workload.yaml");
  ASSERT_TRUE(workload.ok()) << workload.status();
  ASSERT_TRUE(workload->rebalance.has_value());
  auto report = Simulate(*cluster, GenerateArrivals(*workload, *workload->seed),
                         CheckedOptions(workload->rebalance));
  ASSERT_TRUE(report.ok()) << report.status();
  const RunReport& plain = report->huygens;
  const RunReport& moved = report->huygens_rebalance;
  ASSERT_TRUE(plain.group_aligned_share.has_value());
  ASSERT_TRUE(moved.group_aligned_share.has_value());
  EXPECT_GT(*moved.group_aligned_share, *plain.group_aligned_share);
  EXPECT_GT(moved.rebalance_moves, 0);
  EXPECT_GT(moved.rebalance_intervals, 0);
  EXPECT_EQ(moved.scheduled, plain.scheduled);
  EXPECT_EQ(moved.unschedulable, 0);
  std::cerr << ReportToTable(*report);
}

}  // namespace
}  // namespace huygens::sim
