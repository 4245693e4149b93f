#include "sim/simulator.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/example.h"
#include "sim/report.h"

namespace huygens::sim {
namespace {

// A deterministic stand-in for the monotonic clock: every reading is 1 µs after the last.
SimulationOptions FakeClockOptions() {
  SimulationOptions o;
  auto now = std::make_shared<int64_t>(0);
  o.clock_ns = [now] { return *now += 1000; };
  return o;
}

ClusterSpec Cluster(const std::string& yaml) {
  auto spec = ParseClusterSpec(yaml, "test-cluster.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  return *spec;
}

WorkloadSpec Workload(const std::string& yaml) {
  auto spec = ParseWorkloadSpec(yaml, "test-workload.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  return *spec;
}

TEST(ExampleTest, TheBuiltInSpecsParse) {
  auto cluster = ExampleCluster();
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  EXPECT_EQ(cluster->groups.size(), 5u);
  auto workload = ExampleWorkload();
  ASSERT_TRUE(workload.ok()) << workload.status();
  int pods = 0;
  for (const PodTemplate& t : workload->templates) pods += t.count;
  EXPECT_EQ(pods, 3000);
}

TEST(SimulatorTest, TheSameInputGivesTheSameReport) {
  auto cluster = ExampleCluster();
  auto workload = ExampleWorkload();
  ASSERT_TRUE(cluster.ok() && workload.ok());
  workload->templates.resize(6);  // keep the test quick
  const auto arrivals = GenerateArrivals(*workload, 3);
  auto a = Simulate(*cluster, arrivals, FakeClockOptions());
  auto b = Simulate(*cluster, arrivals, FakeClockOptions());
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(ReportToJson(*a, true).dump(), ReportToJson(*b, true).dump());
  EXPECT_GT(a->huygens.scheduled, 0);
  EXPECT_GT(a->baseline.scheduled, 0);
}

// Randomized small simulations: after every event, no two pods hold one exclusive CPU (the
// simulator's own ledger and NodeState::Validate / kubelet's state), and every placement
// satisfies its policy (CPU count, single-numa-node, full-cores). Any breach fails the run.
TEST(SimulatorTest, RandomSmallSimulationsKeepEveryInvariantAfterEveryEvent) {
  const ClusterSpec cluster = Cluster(R"(nodeGroups:
  - {name: snc, count: 2, topology: {preset: xeon-6230-2s-snc2}, systemCpuCount: 2, topologyPolicy: single-numa-node}
  - {name: small, count: 2, topology: {synthetic: "package:2 numa:2 core:4 pu:2"}, systemCpuCount: 1, topologyPolicy: restricted, topologyScope: pod}
  - {name: kp, count: 1, topology: {preset: kunpeng-920-2s}, systemCpuCount: 1, topologyPolicy: best-effort, bindPolicy: full-cores}
)");
  const WorkloadSpec workload = Workload(R"(pods:
  - name: g2
    count: 40
    arrivalsPerSecond: 2
    lifetime: {distribution: exponential, mean: 20s}
    containers: [{name: a, requests: {cpu: 2, memory: 1Gi}, limits: {cpu: 2, memory: 1Gi}}]
  - name: g3
    count: 30
    arrivalsPerSecond: 1
    lifetime: {distribution: uniform, min: 5s, max: 40s}
    containers: [{name: a, requests: {cpu: 3, memory: 1Gi}, limits: {cpu: 3, memory: 1Gi}}]
  - name: g7-two
    count: 20
    arrivalsPerSecond: 0.5
    lifetime: {distribution: exponential, mean: 30s}
    containers:
      - {name: init, init: true, requests: {cpu: 4, memory: 1Gi}, limits: {cpu: 4, memory: 1Gi}}
      - {name: a, requests: {cpu: 5, memory: 1Gi}, limits: {cpu: 5, memory: 1Gi}}
      - {name: b, requests: {cpu: 2, memory: 1Gi}, limits: {cpu: 2, memory: 1Gi}}
  - name: full
    count: 15
    arrivalsPerSecond: 0.5
    bindPolicy: full-cores
    lifetime: {distribution: fixed, value: 25s}
    containers: [{name: a, requests: {cpu: 4, memory: 1Gi}, limits: {cpu: 4, memory: 1Gi}}]
  - name: shared
    count: 30
    arrivalsPerSecond: 1
    lifetime: {distribution: exponential, mean: 30s}
    containers: [{name: a, requests: {cpu: 1500m, memory: 1Gi}}]
)");
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE(seed);
    SimulationOptions options = FakeClockOptions();
    options.check_every_event = true;
    auto report = Simulate(cluster, GenerateArrivals(workload, seed), options);
    ASSERT_TRUE(report.ok()) << report.status();
    for (const RunReport* r : {&report->huygens, &report->baseline}) {
      EXPECT_EQ(r->pods, 135);
      EXPECT_GT(r->scheduled, 0);
      EXPECT_EQ(r->scheduled + r->unschedulable + r->admission_failed_pods, r->pods);
    }
  }
}

// Kubelet's single-numa-node policy rejects a pod (TopologyAffinityError) when the NUMA-blind
// scheduler sends it to a node whose free CPUs are split over NUMA nodes; Huygens only picks
// nodes where the pod fits on one NUMA node.
TEST(SimulatorTest, HuygensBeatsTheBaselineWhereKubeletWouldRejectPods) {
  // 2 NUMA nodes of 10 user CPUs each (20 per NUMA node minus none: system CPU 0 and 40 hold
  // the reservation).
  const ClusterSpec cluster = Cluster(R"(nodeGroups:
  - {name: n, count: 4, topology: {preset: xeon-6230-2s-snc2}, systemCpus: "0,40", topologyPolicy: single-numa-node}
)");
  // 12-CPU pods: two fit a 20-CPU NUMA node only once each (12 + 12 > 20), so after the first
  // wave every NUMA node has 8 (or 6) free CPUs: a node has 30+ free CPUs in total, which the
  // NUMA-blind scheduler counts, but no NUMA node can take another 12.
  const WorkloadSpec workload = Workload(R"(pods:
  - name: big
    count: 24
    arrivalsPerSecond: 4
    containers: [{name: a, requests: {cpu: 12, memory: 1Gi}, limits: {cpu: 12, memory: 1Gi}}]
  - name: small
    count: 12
    arrivalsPerSecond: 2
    containers: [{name: a, requests: {cpu: 6, memory: 1Gi}, limits: {cpu: 6, memory: 1Gi}}]
)");
  auto report = Simulate(cluster, GenerateArrivals(workload, 5), FakeClockOptions());
  ASSERT_TRUE(report.ok()) << report.status();
  const RunReport& h = report->huygens;
  const RunReport& b = report->baseline;
  EXPECT_EQ(h.admission_rejected, 0);
  EXPECT_GT(b.admission_rejected, 0);
  EXPECT_GT(b.admission_rejected_reasons.count("TopologyAffinityError"), 0u);
  EXPECT_GE(h.single_numa_ratio, b.single_numa_ratio);
  EXPECT_DOUBLE_EQ(h.single_numa_ratio, 1.0);  // single-numa-node is honoured by construction
  EXPECT_GE(h.scheduled, b.scheduled);

  // Under best-effort kubelet admits the pods the NUMA-blind scheduler sends it and spreads
  // them over NUMA nodes; Huygens keeps choosing nodes where one NUMA node fits.
  const ClusterSpec best_effort = Cluster(R"(nodeGroups:
  - {name: n, count: 4, topology: {preset: xeon-6230-2s-snc2}, systemCpus: "0,40", topologyPolicy: best-effort}
)");
  report = Simulate(best_effort, GenerateArrivals(workload, 5), FakeClockOptions());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->baseline.admission_rejected, 0);
  EXPECT_LT(report->baseline.single_numa_ratio, 1.0);
  EXPECT_GT(report->baseline.mean_numa_nodes_per_pod, 1.0);
  EXPECT_GE(report->huygens.single_numa_ratio, report->baseline.single_numa_ratio);
}

TEST(SimulatorTest, ABaselineNodeWithoutSystemCpusIsRefusedWithTheReason) {
  const ClusterSpec cluster = Cluster(R"(nodeGroups:
  - {name: bare, topology: {preset: xeon-8480-2s}, systemCpuCount: 0}
)");
  auto report = Simulate(cluster, {}, FakeClockOptions());
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(std::string(report.status().message()), ::testing::HasSubstr("node group bare"));
  // Huygens alone runs it.
  EXPECT_TRUE(Simulate(cluster, {}, FakeClockOptions(), /*with_baseline=*/false).ok());
}

TEST(SimulatorTest, PodsThatNeverFitAreCountedByReason) {
  const ClusterSpec cluster = Cluster(R"(nodeGroups:
  - {name: n, count: 2, topology: {preset: xeon-6230-2s-snc2}, systemCpuCount: 2}
)");
  const WorkloadSpec workload = Workload(R"(pods:
  - name: huge
    count: 3
    containers: [{name: a, requests: {cpu: 200, memory: 1Gi}, limits: {cpu: 200, memory: 1Gi}}]
)");
  auto report = Simulate(cluster, GenerateArrivals(workload, 1), FakeClockOptions());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->huygens.unschedulable, 3);
  EXPECT_EQ(report->baseline.unschedulable, 3);
  EXPECT_EQ(report->huygens.unschedulable_reasons.at("Insufficient cpu"), 3);
}

TEST(ReportTest, TheJsonKeepsItsStableKeys) {
  const ClusterSpec cluster = Cluster(R"(nodeGroups:
  - {name: n, count: 1, topology: {preset: xeon-6230-2s-snc2}, systemCpuCount: 2}
)");
  const WorkloadSpec workload = Workload(R"(pods:
  - name: p
    count: 4
    containers: [{name: a, requests: {cpu: 4, memory: 1Gi}, limits: {cpu: 4, memory: 1Gi}}]
)");
  auto report = Simulate(cluster, GenerateArrivals(workload, 1), FakeClockOptions());
  ASSERT_TRUE(report.ok()) << report.status();
  const nlohmann::json j = ReportToJson(*report, true);
  for (const char* run : {"huygens", "baseline"}) {
    for (const char* key : {"scheduled", "unschedulable", "admissionRejected", "singleNumaRatio",
                            "meanNumaNodesPerPod", "sharedSiblingCores", "podsPerSecond"}) {
      EXPECT_TRUE(j[run].contains(key)) << run << "." << key;
    }
    EXPECT_EQ(j[run]["scheduled"], 4);
  }
  // The HTML page is self-contained: no external reference.
  const std::string html = ReportToHtml(*report);
  EXPECT_THAT(html, ::testing::HasSubstr("<svg"));
  EXPECT_THAT(html, ::testing::Not(::testing::HasSubstr("http")));
}

}  // namespace
}  // namespace huygens::sim
