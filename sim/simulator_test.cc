#include "sim/simulator.h"

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/example.h"
#include "sched/scheduler.h"
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
    for (const RunReport* r : {&report->huygens, &report->nrt, &report->baseline}) {
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
  // The NRT peer's zone-level filter sees the split too.
  EXPECT_LT(report->nrt.admission_rejected, b.admission_rejected);

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

// The share of the pods that fit one NUMA node that are on one has no bound of 100% once as many
// pods must run as the peers run: 3-, 3- and 2-CPU pods on a node with two NUMA nodes of 4 user
// CPUs each fit one NUMA node, but no placement keeps all three on one (3 + 3 > 4, 3 + 2 > 4),
// so whichever scheduler places the last of them spans it, in any arrival order: the best share
// is 2/3 (docs/simulate.md, "fits one NUMA node").
TEST(SimulatorTest, NoSchedulerKeepsPodsOnOneNumaNodeThatNoPlacementCanKeepThere) {
  const ClusterSpec cluster = Cluster(R"(nodeGroups:
  - {name: n, count: 1, topology: {synthetic: "package:1 numa:2 core:5 pu:1"}, systemCpus: "0,5", topologyPolicy: best-effort}
)");
  const WorkloadSpec workload = Workload(R"(pods:
  - name: three
    count: 2
    arrivalsPerSecond: 1
    containers: [{name: a, requests: {cpu: 3, memory: 1Gi}, limits: {cpu: 3, memory: 1Gi}}]
  - name: two
    count: 1
    arrivalsPerSecond: 1
    containers: [{name: a, requests: {cpu: 2, memory: 1Gi}, limits: {cpu: 2, memory: 1Gi}}]
)");
  for (uint64_t seed : {1, 2, 3, 4}) {
    auto report = Simulate(cluster, GenerateArrivals(workload, seed), FakeClockOptions());
    ASSERT_TRUE(report.ok()) << report.status();
    for (const RunReport* run : {&report->huygens, &report->nrt, &report->baseline}) {
      EXPECT_EQ(run->scheduled, 3) << "seed " << seed;
      EXPECT_EQ(run->fits_one_numa_pods, 3) << "seed " << seed;
      EXPECT_NEAR(run->fits_one_numa_single_ratio, 2.0 / 3.0, 1e-9) << "seed " << seed;
    }
  }
}

// Nor can "no more SMT-shared cores and no more fragmented CPUs than either peer" hold on every
// workload: the two figures can conflict, and the peers can take opposite sides. Node a (one NUMA
// node, user cores {1,4} {2,5}) runs a 3-CPU pod, so its only free CPU is the sibling of one of
// that pod's threads; node b (one NUMA node, user cores of 8 CPUs, most of its memory taken) runs
// a 4-CPU pod. A 1-CPU pod then either shares a's core (one SMT-shared core, no stranded CPU
// after) or goes to b (no shared core, b's 3 free CPUs and a's 1 stranded). a has one free CPU
// and b one NUMA node, so there is no third outcome; pinning the pod measures each. Unpinned, the
// stock scheduler (node-level LeastAllocated: a's memory is almost free) takes the first and the
// NRT peer (its default strategy, zone-level) the second, so every scheduler is worse than one
// peer on one figure (docs/simulate.md, "The figures").
TEST(SimulatorTest, NoSchedulerMatchesBothPeersWhenTheyTakeOppositeSidesOfATrade) {
  const ClusterSpec cluster = Cluster(R"(nodeGroups:
  - {name: a, topology: {synthetic: "package:1 numa:1 core:3 pu:2"}, systemCpus: "0,3", memory: 1000Gi, labels: {role: a}}
  - {name: b, topology: {synthetic: "package:1 numa:1 core:5 pu:2"}, systemCpus: "0,5", memory: 8Gi, labels: {role: b}}
)");
  auto workload = [](const std::string& one_selector) {
    return Workload(R"(pods:
  - name: three
    nodeSelector: {role: a}
    containers: [{name: c, requests: {cpu: 3, memory: 1Gi}, limits: {cpu: 3, memory: 1Gi}}]
  - name: four
    nodeSelector: {role: b}
    containers: [{name: c, requests: {cpu: 4, memory: 6Gi}, limits: {cpu: 4, memory: 6Gi}}]
  - name: one
    startAt: 10s
    lifetime: {distribution: fixed, value: 50s}
)" + one_selector + R"(
    containers: [{name: c, requests: {cpu: 1, memory: 1Gi}, limits: {cpu: 1, memory: 1Gi}}]
)");
  };
  struct Outcome {
    int shared_cores_peak, fragmented_peak;
    bool operator==(const Outcome&) const = default;
  };
  auto outcome = [](const RunReport& run) {
    EXPECT_EQ(run.scheduled, 3) << run.scheduler;
    return Outcome{run.shared_sibling_cores, run.fragmented_cpus_peak};
  };
  auto run = [&](const std::string& one_selector) {
    auto report = Simulate(cluster, GenerateArrivals(workload(one_selector), 1), FakeClockOptions());
    EXPECT_TRUE(report.ok()) << report.status();
    return *report;
  };
  const Outcome on_a = outcome(run("    nodeSelector: {role: a}").huygens);
  const Outcome on_b = outcome(run("    nodeSelector: {role: b}").huygens);
  EXPECT_EQ(on_a, (Outcome{1, 1}));
  EXPECT_EQ(on_b, (Outcome{0, 4}));

  const Report free = run("");
  EXPECT_EQ(outcome(free.baseline), on_a);  // better than on_b on fragmented CPUs
  EXPECT_EQ(outcome(free.nrt), on_b);       // better than on_a on SMT-shared cores
  // Huygens's rule, fewer shared cores first (alloc/waste.h), takes b's side.
  EXPECT_EQ(outcome(free.huygens), on_b);
}

// Pods across sockets: a best-effort node of 2 sockets x 2 NUMA nodes of 4 CPUs (CPU 0
// reserved). A 3-CPU pod fills NUMA node 0; a 6-CPU pod then needs two NUMA nodes. Kubelet takes
// the narrowest, lowest mask, {1, 2}, which crosses the sockets; Huygens takes the nearest pair,
// {2, 3}, in one socket. Both count 1.5 NUMA nodes per pod; only this figure tells them apart.
TEST(SimulatorTest, PodsAcrossSocketsCountsThePodsWhoseCpusLieInMoreThanOneSocket) {
  const ClusterSpec cluster = Cluster(R"(nodeGroups:
  - {name: n, topology: {synthetic: "package:2 numa:2 core:4 pu:1"}, systemCpus: "0", topologyPolicy: best-effort}
)");
  const WorkloadSpec workload = Workload(R"(pods:
  - name: three
    containers: [{name: c, requests: {cpu: 3, memory: 1Gi}, limits: {cpu: 3, memory: 1Gi}}]
  - name: six
    startAt: 10s
    containers: [{name: c, requests: {cpu: 6, memory: 1Gi}, limits: {cpu: 6, memory: 1Gi}}]
)");
  auto report = Simulate(cluster, GenerateArrivals(workload, 1), FakeClockOptions());
  ASSERT_TRUE(report.ok()) << report.status();
  for (const RunReport* run : {&report->huygens, &report->nrt, &report->baseline}) {
    EXPECT_EQ(run->exclusive_pods, 2) << run->scheduler;
    EXPECT_DOUBLE_EQ(run->mean_numa_nodes_per_pod, 1.5) << run->scheduler;
  }
  EXPECT_EQ(report->huygens.multi_socket_pods, 0);
  EXPECT_EQ(report->nrt.multi_socket_pods, 1);
  EXPECT_EQ(report->baseline.multi_socket_pods, 1);
  EXPECT_EQ(ReportToJson(*report, false)["baseline"]["multiSocketPods"], 1);
}

// The NRT peer reads each node's NodeResourceTopology, republished from kubelet's state after
// every admission and departure. Nodes of 2 NUMA nodes with 4 and 5 user CPUs (CPU 0 reserved):
// two 3-CPU pods fill them NUMA-wise while NodeResourcesFit still sees 3 free CPUs, so the
// stock scheduler sends a third pod that kubelet rejects; the NRT filter sees no zone with 3
// free CPUs and holds it until a pod leaves, then places it.
TEST(SimulatorTest, TheNrtPeerFollowsEachNodesKubeletStateAndAvoidsAdmissionRejections) {
  const ClusterSpec cluster = Cluster(R"(nodeGroups:
  - {name: n, count: 2, topology: {synthetic: "package:1 numa:2 core:5 pu:1"}, systemCpus: "0", topologyPolicy: single-numa-node}
)");
  const WorkloadSpec workload = Workload(R"(pods:
  - name: p
    count: 8
    lifetime: {distribution: fixed, value: 10s}
    containers: [{name: a, requests: {cpu: 3, memory: 1Gi}, limits: {cpu: 3, memory: 1Gi}}]
)");
  for (sched::NrtScoring scoring :
       {sched::NrtScoring::kLeastAllocated, sched::NrtScoring::kMostAllocated,
        sched::NrtScoring::kBalancedAllocation, sched::NrtScoring::kLeastNumaNodes}) {
    SCOPED_TRACE(sched::ToString(scoring));
    SimulationOptions options = FakeClockOptions();
    options.nrt_scoring = scoring;
    options.check_every_event = true;
    auto report = Simulate(cluster, GenerateArrivals(workload, 1), options);
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_EQ(report->nrt_scoring, sched::ToString(scoring));
    const RunReport& nrt = report->nrt;
    EXPECT_EQ(nrt.scheduler, "nrt");
    EXPECT_GT(report->baseline.admission_rejected, 0);
    EXPECT_EQ(nrt.admission_rejected, 0);
    EXPECT_EQ(nrt.scheduled, 8);  // the last four after the first four left
    EXPECT_DOUBLE_EQ(nrt.single_numa_ratio, 1.0);
    EXPECT_GT(nrt.attempts, 8);  // the filter held the last four back while the zones were full
  }
}

// SimulationOptions::nrt_scoring reaches the plugin. Two best-effort nodes: a (2 NUMA nodes of
// 4 and 5 user CPUs) and b (one NUMA node of 7). NodeResourcesFit prefers the larger a; with
// LeastAllocated NodeResourceTopologyMatch scores 0 off single-numa-node, so a 6-CPU pod goes
// to a and kubelet spreads it over both NUMA nodes; LeastNUMANodes prefers b's single zone.
TEST(SimulatorTest, TheNrtScoringOptionChoosesTheStrategy) {
  const ClusterSpec cluster = Cluster(R"(nodeGroups:
  - {name: a, topology: {synthetic: "package:1 numa:2 core:5 pu:1"}, systemCpus: "0", topologyPolicy: best-effort}
  - {name: b, topology: {synthetic: "package:1 numa:1 core:8 pu:1"}, systemCpus: "0", topologyPolicy: best-effort}
)");
  const WorkloadSpec workload = Workload(R"(pods:
  - name: p
    containers: [{name: a, requests: {cpu: 6, memory: 1Gi}, limits: {cpu: 6, memory: 1Gi}}]
)");
  SimulationOptions options = FakeClockOptions();
  auto least_allocated = Simulate(cluster, GenerateArrivals(workload, 1), options);
  ASSERT_TRUE(least_allocated.ok()) << least_allocated.status();
  EXPECT_EQ(least_allocated->nrt.exclusive_pods, 1);
  EXPECT_DOUBLE_EQ(least_allocated->nrt.single_numa_ratio, 0.0);
  options.nrt_scoring = sched::NrtScoring::kLeastNumaNodes;
  auto least_numa = Simulate(cluster, GenerateArrivals(workload, 1), options);
  ASSERT_TRUE(least_numa.ok()) << least_numa.status();
  EXPECT_DOUBLE_EQ(least_numa->nrt.single_numa_ratio, 1.0);
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

// Issue 12 item 1 (kubelet#132187's kind): 2 NUMA nodes of 4 CPUs, CPUs 0 and 4 reserved,
// restricted. 4 CPUs fit one NUMA node by online CPUs but only two by user-pool CPUs: the NUMA
// filter and Reserve once sized the preferred set differently and the pod was retried forever.
// Huygens sizes by the user pool (both NUMA nodes are preferred, the pod runs at once); the
// baseline keeps kubelet's sizing by online CPUs, so kubelet refuses the 2-node hint.
TEST(SimulatorTest, ReservedCpusSizeTheNumaSetTheSameWayInTheFilterAndAtReserve) {
  const ClusterSpec cluster = Cluster(R"(nodeGroups:
  - name: n
    topology: {synthetic: "package:2 numa:1 core:4 pu:1"}
    systemCpus: "0,4"
    topologyPolicy: restricted
)");
  const WorkloadSpec workload = Workload(R"(pods:
  - name: big
    containers:
      - {name: app, requests: {cpu: 4, memory: 1Gi}, limits: {cpu: 4, memory: 1Gi}}
)");
  SimulationOptions options = FakeClockOptions();
  options.check_every_event = true;
  // A regression that loops is stopped by max_scheduling_errors_per_pod (an error, not a hang).
  auto report = Simulate(cluster, GenerateArrivals(workload, 1), options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->huygens.scheduled, 1);
  EXPECT_EQ(report->huygens.attempts, 1);
  EXPECT_EQ(report->huygens.scheduling_errors, 0);
  EXPECT_DOUBLE_EQ(report->huygens.mean_numa_nodes_per_pod, 2.0);
  EXPECT_EQ(report->baseline.scheduled, 0);
  EXPECT_EQ(report->baseline.admission_failed_pods, 1);
  EXPECT_EQ(report->baseline.admission_rejected_reasons.at("TopologyAffinityError"),
            1 + SimulationOptions().max_admission_retries);
  // Every pod arrives at 0 and never leaves, so the workload spans no time: the timeline stays
  // bounded however long the retries run (it once took a sample every simulated microsecond).
  for (const RunReport* r : {&report->huygens, &report->baseline}) {
    EXPECT_LE(r->timeline.size(), 2u * static_cast<size_t>(options.timeline_samples));
  }
}

// Issue 12 item 3 (kubelet#123816): on 2 NUMA nodes of 8 CPUs, after a 7-CPU pod on NUMA node
// 0, a pod with a 1-CPU init container and an 8-CPU app container runs on NUMA node 1 and its
// init container reuses one of the app's CPUs, so the pod holds 8 CPUs (kubelet's pod-level
// count), not 9, and the last free CPU of NUMA node 0 takes a 1-CPU pod at once.
TEST(SimulatorTest, AnInitContainersCpuIsReusedSoAOneCpuPodFitsAtOnce) {
  const ClusterSpec cluster = Cluster(R"(nodeGroups:
  - {name: n, topology: {synthetic: "package:2 numa:1 core:8 pu:1"}, systemCpuCount: 0, topologyPolicy: single-numa-node, bindPolicy: packed}
)");
  const WorkloadSpec workload = Workload(R"(pods:
  - name: seven
    containers: [{name: a, requests: {cpu: 7, memory: 1Gi}, limits: {cpu: 7, memory: 1Gi}}]
  - name: withinit
    startAt: 1s
    containers:
      - {name: init, init: true, requests: {cpu: 1, memory: 1Gi}, limits: {cpu: 1, memory: 1Gi}}
      - {name: app, requests: {cpu: 8, memory: 1Gi}, limits: {cpu: 8, memory: 1Gi}}
  - name: one
    startAt: 2s
    containers: [{name: a, requests: {cpu: 1, memory: 1Gi}, limits: {cpu: 1, memory: 1Gi}}]
)");
  SimulationOptions options = FakeClockOptions();
  options.check_every_event = true;
  auto report = Simulate(cluster, GenerateArrivals(workload, 1), options, /*with_baseline=*/false);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->huygens.scheduled, 3);
  EXPECT_EQ(report->huygens.unschedulable, 0);
  EXPECT_EQ(report->huygens.attempts, 3);  // the 1-CPU pod never waits
}

// In-place resizes (issue 12 item 7): pod "a" (4 CPUs on NUMA node 0, which has 7 user CPUs)
// grows to 6 on its NUMA node, cannot grow to 9 under single-numa-node (refused, it keeps its
// 6), then shrinks to 2, which lets the 5-CPU pod that has waited since 2.5 s run at 3 s.
// Kubelet v1.35 refuses every resize of an exclusive container (Infeasible), so in the baseline
// "late" never fits.
TEST(SimulatorTest, ResizesGrowShrinkOrAreRefusedAndFreedCpusAreReused) {
  const ClusterSpec cluster = Cluster(R"(nodeGroups:
  - {name: n, topology: {synthetic: "package:2 numa:1 core:8 pu:1"}, systemCpus: "0", topologyPolicy: single-numa-node, bindPolicy: packed}
)");
  const WorkloadSpec workload = Workload(R"(pods:
  - name: a
    containers: [{name: app, requests: {cpu: 4, memory: 1Gi}, limits: {cpu: 4, memory: 1Gi}}]
    resizes:
      - {after: 1s, container: app, cpu: 6}
      - {after: 2s, container: app, cpu: 9}
      - {after: 3s, container: app, cpu: 2}
  - name: b
    containers: [{name: app, requests: {cpu: 8, memory: 1Gi}, limits: {cpu: 8, memory: 1Gi}}]
  - name: late
    startAt: 2500ms
    containers: [{name: app, requests: {cpu: 5, memory: 1Gi}, limits: {cpu: 5, memory: 1Gi}}]
)");
  SimulationOptions options = FakeClockOptions();
  options.check_every_event = true;
  auto report = Simulate(cluster, GenerateArrivals(workload, 1), options);
  ASSERT_TRUE(report.ok()) << report.status();
  const RunReport& h = report->huygens;
  EXPECT_EQ(h.resizes, 3);
  EXPECT_EQ(h.resizes_refused, 1);
  EXPECT_EQ(h.resize_refused_reasons.at("RESOURCE_EXHAUSTED"), 1);
  EXPECT_EQ(h.scheduled, 3);
  EXPECT_EQ(h.unschedulable, 0);
  const RunReport& b = report->baseline;
  EXPECT_EQ(b.resizes, 3);
  EXPECT_EQ(b.resizes_refused, 3);
  EXPECT_EQ(b.scheduled, 2);
  EXPECT_EQ(b.unschedulable, 1);
}

// A binder that fails its first `failures` binds, then binds in the cache.
class FlakyBind final : public sched::BindPlugin {
 public:
  FlakyBind(sched::ClusterCache* cache, int failures) : cache_(cache), failures_(failures) {}
  std::string_view Name() const override { return "FlakyBind"; }
  sched::Status Bind(const sched::ReservedPod& reserved) override {
    if (failures_-- > 0) return sched::Status::Error("API said no");
    absl::Status s = cache_->AddPod(reserved.pod, reserved.node, reserved.allocation);
    return s.ok() ? sched::Status::Success() : sched::Status::Error(std::string(s.message()));
  }

 private:
  sched::ClusterCache* cache_;
  int failures_;
};

// A pod whose attempts keep ending in an error would be retried after every backoff for ever:
// the run stops after max_scheduling_errors_per_pod of them and names the pod and the error.
// (Without the bound the flaky binder gives in after 1000 failures and the pod is scheduled.)
TEST(SimulatorTest, APodThatKeepsFailingWithAnErrorStopsTheRunWithTheReason) {
  const ClusterSpec cluster = Cluster(R"(nodeGroups:
  - {name: n, topology: {synthetic: "package:2 numa:1 core:4 pu:1"}, systemCpus: "0"}
)");
  const WorkloadSpec workload = Workload(R"(pods:
  - name: p
    containers: [{name: app, requests: {cpu: 2, memory: 1Gi}, limits: {cpu: 2, memory: 1Gi}}]
)");
  SimulationOptions options = FakeClockOptions();
  options.huygens_binder = [](sched::ClusterCache* cache) {
    return std::make_unique<FlakyBind>(cache, 1000);
  };
  auto report = Simulate(cluster, GenerateArrivals(workload, 1), options, /*with_baseline=*/false);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(report.status().message()),
              ::testing::AllOf(::testing::HasSubstr("pod p-0: 20 scheduling attempts ended in an error"),
                               ::testing::HasSubstr("API said no")));
  // A few failures are retried after backoff and the pod runs.
  options.huygens_binder = [](sched::ClusterCache* cache) {
    return std::make_unique<FlakyBind>(cache, 3);
  };
  report = Simulate(cluster, GenerateArrivals(workload, 1), options, /*with_baseline=*/false);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->huygens.scheduled, 1);
  EXPECT_EQ(report->huygens.scheduling_errors, 3);
}

// --explain: each attempt of the named pod lists every node (refused ones with the filter that
// refused them, feasible ones with a score per plugin), the node it went to is the one with the
// highest total, and the cpusets are those it got.
TEST(SimulatorTest, ExplainPodShowsEveryNodesVerdictScoresAndTheChoice) {
  const ClusterSpec cluster = Cluster(R"(nodeGroups:
  - {name: small, count: 1, topology: {synthetic: "package:1 numa:1 core:2 pu:2"}, systemCpus: "0", topologyPolicy: single-numa-node}
  - {name: big, count: 2, topology: {preset: xeon-6230-2s-snc2}, systemCpus: "0,40", topologyPolicy: single-numa-node}
)");
  const WorkloadSpec workload = Workload(R"(pods:
  - name: p
    count: 2
    containers:
      - {name: app, requests: {cpu: 6, memory: 1Gi}, limits: {cpu: 6, memory: 1Gi}}
      - {name: proxy, requests: {cpu: 1, memory: 1Gi}, limits: {cpu: 1, memory: 1Gi}}
)");
  SimulationOptions options = FakeClockOptions();
  options.explain_pod = "p-1";
  auto report = Simulate(cluster, GenerateArrivals(workload, 1), options);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->huygens.explanations.size(), 1u);
  const PodExplanation& e = report->huygens.explanations[0];
  EXPECT_EQ(e.pod, "p-1");
  ASSERT_EQ(e.nodes.size(), 3u);
  const PodExplanation::NodeVerdict& refused = e.nodes.back();
  EXPECT_EQ(refused.node, "small-0");
  EXPECT_FALSE(refused.filter.empty());
  EXPECT_FALSE(refused.reason.empty());
  for (size_t i = 0; i + 1 < e.nodes.size(); ++i) {
    EXPECT_TRUE(e.nodes[i].filter.empty());
    EXPECT_EQ(e.nodes[i].scores.size(), e.score_plugins.size());
  }
  EXPECT_GE(e.nodes[0].total, e.nodes[1].total);
  EXPECT_EQ(e.outcome, "scheduled");
  EXPECT_EQ(e.node, e.nodes[0].node);
  ASSERT_EQ(e.numa_nodes.size(), 1u);  // app and proxy on one NUMA node
  ASSERT_EQ(e.cpusets.size(), 2u);
  EXPECT_EQ(e.cpusets[0].first, "app");
  EXPECT_EQ(CpuSet::Parse(e.cpusets[0].second)->Size(), 6);
  const std::string text = ExplanationToText(e);
  EXPECT_THAT(text, testing::HasSubstr("refused by " + refused.filter));
  EXPECT_THAT(text, testing::HasSubstr("-> scheduled on " + e.node));
  // Other pods and the other runs are not explained.
  EXPECT_TRUE(report->baseline.explanations.empty());
}

// On 100 nodes or more the scheduler visits only NumFeasibleNodesToFind of them (kube-
// scheduler's percentageOfNodesToScore, adaptive): the explanation still judges every node,
// marks the ones the attempt did not visit, and the chosen node is the best of those visited.
TEST(SimulatorTest, ExplainPodMarksTheNodesTheSampledAttemptDidNotVisit) {
  const ClusterSpec cluster = Cluster(R"(nodeGroups:
  - {name: n, count: 120, topology: {synthetic: "package:1 numa:1 core:2 pu:2"}, systemCpus: "0"}
)");
  const WorkloadSpec workload = Workload(R"(pods:
  - name: p
    count: 1
    containers:
      - {name: app, requests: {cpu: 2, memory: 1Gi}, limits: {cpu: 2, memory: 1Gi}}
)");
  SimulationOptions options = FakeClockOptions();
  options.explain_pod = "p-0";
  auto report = Simulate(cluster, GenerateArrivals(workload, 1), options, /*with_baseline=*/false);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->huygens.explanations.size(), 1u);
  const PodExplanation& e = report->huygens.explanations[0];
  ASSERT_EQ(e.nodes.size(), 120u);
  EXPECT_EQ(e.visited_nodes, sched::NumFeasibleNodesToFind(120, 0));
  ASSERT_LT(e.visited_nodes, 120);
  int visited = 0;
  int64_t best_visited = -1;
  const PodExplanation::NodeVerdict* chosen = nullptr;
  for (const PodExplanation::NodeVerdict& n : e.nodes) {
    ASSERT_TRUE(n.filter.empty()) << n.node;  // every node fits the pod
    if (!n.visited) continue;
    ++visited;
    best_visited = std::max(best_visited, n.total);
    if (n.node == e.node) chosen = &n;
  }
  EXPECT_EQ(visited, e.visited_nodes);
  ASSERT_NE(chosen, nullptr) << "the chosen node " << e.node << " is marked not visited";
  EXPECT_EQ(chosen->total, best_visited);
  // The nodes the choice compared come first, the best of them on top.
  for (int i = 0; i < e.visited_nodes; ++i) EXPECT_TRUE(e.nodes[static_cast<size_t>(i)].visited);
  EXPECT_EQ(e.nodes[0].total, best_visited);
  const std::string text = ExplanationToText(e);
  EXPECT_THAT(text, testing::HasSubstr(fmt::format("the scheduler visited {} of them",
                                                   e.visited_nodes)));
  EXPECT_THAT(text, testing::HasSubstr("(not visited)"));
  // The nodes are alike and empty: every visited one ties with the chosen one.
  EXPECT_THAT(text, testing::HasSubstr(fmt::format("{} visited nodes tied at {}; the first "
                                                   "visited wins",
                                                   e.visited_nodes, best_visited)));
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
  absl::StatusOr<Report> report =
      Simulate(cluster, GenerateArrivals(workload, 1), FakeClockOptions());
  ASSERT_TRUE(report.ok()) << report.status();
  const nlohmann::json j = ReportToJson(*report, true);
  EXPECT_EQ(j["nrtScoring"], "LeastAllocated");
  for (const char* run : {"huygens", "nrt", "baseline"}) {
    for (const char* key : {"scheduled", "unschedulable", "admissionRejected", "singleNumaRatio",
                            "meanNumaNodesPerPod", "sharedSiblingCores", "attemptsPerSecond"}) {
      EXPECT_TRUE(j[run].contains(key)) << run << "." << key;
    }
    EXPECT_EQ(j[run]["scheduled"], 4);
  }
  // The HTML page is self-contained: no external reference.
  const std::string html = ReportToHtml(*report);
  EXPECT_THAT(html, ::testing::HasSubstr("<svg"));
  EXPECT_THAT(html, ::testing::Not(::testing::HasSubstr("http")));
  EXPECT_THAT(html, ::testing::HasSubstr("<th>huygens</th><th>nrt</th><th>baseline</th>"));
  EXPECT_THAT(html, ::testing::HasSubstr("<polyline class=\"nrt\""));
  EXPECT_THAT(ReportToTable(*report), ::testing::ContainsRegex("huygens +nrt +baseline\n"));

  // Huygens alone: the peers' columns are empty and null.
  report = Simulate(cluster, GenerateArrivals(workload, 1), FakeClockOptions(),
                    /*with_baseline=*/false);
  ASSERT_TRUE(report.ok()) << report.status();
  const nlohmann::json alone = ReportToJson(*report, true);
  EXPECT_TRUE(alone["nrt"].is_null());
  EXPECT_TRUE(alone["nrtScoring"].is_null());
  EXPECT_TRUE(alone["baseline"].is_null());
  EXPECT_THAT(ReportToTable(*report), ::testing::ContainsRegex("\nscheduled +4 +- +-\n"));
}

// Simulates the example under sim/testdata/<name> (cluster.yaml, workload.yaml with its seed),
// checking every invariant after every event.
absl::StatusOr<Report> SimulateExample(const std::string& name) {
  const std::string dir = std::string(HUYGENS_SOURCE_DIR) + "/sim/testdata/" + name + "/";
  absl::StatusOr<ClusterSpec> cluster = LoadClusterSpec(dir + "cluster.yaml");
  if (!cluster.ok()) return cluster.status();
  absl::StatusOr<WorkloadSpec> workload = LoadWorkloadSpec(dir + "workload.yaml");
  if (!workload.ok()) return workload.status();
  SimulationOptions options = FakeClockOptions();
  options.check_every_event = true;
  return Simulate(*cluster, GenerateArrivals(*workload, workload->seed.value_or(1)), options);
}

// Every run scheduled `pods` pods and kubelet rejected none.
void ExpectAllScheduledWithoutRejection(const Report& report, int pods) {
  for (const RunReport* run : {&report.huygens, &report.nrt, &report.baseline}) {
    SCOPED_TRACE(run->scheduler);
    EXPECT_EQ(run->scheduled, pods);
    EXPECT_EQ(run->admission_rejected, 0);
  }
}

// Two NUMA nodes of 32Gi (1Gi reserved on each, 4 x 1Gi hugepages on each: 27Gi of memory
// left per NUMA node), kubelet's memory manager `policy`, topology manager `tm`.
ClusterSpec MemoryCluster(const std::string& policy, const std::string& tm) {
  return Cluster(R"(nodeGroups:
  - name: m
    count: 1
    topology: {synthetic: "package:1 numa:2 core:8 pu:2"}
    systemCpuCount: 2
    topologyPolicy: )" + tm + R"(
    memory: 64Gi
    memoryManager:
      policy: )" + policy + R"(
      hugepages: {1Gi: 4}
      reservedMemory:
        - {numaNode: 0, limits: {memory: 1Gi}}
        - {numaNode: 1, limits: {memory: 1Gi}}
)");
}

// Simulates `count` Guaranteed pods "big" of 2 CPUs and `memory` each (all arriving at once,
// never leaving), then the pods of `more` (workload YAML list items), on MemoryCluster(policy,
// tm), checking every invariant after every event; `retries` re-creations after a rejection.
absl::StatusOr<Report> SimulateBigPods(const std::string& policy, const std::string& tm,
                                       int count, const std::string& memory, int retries = 3,
                                       const std::string& more = "") {
  const WorkloadSpec workload = Workload(fmt::format(R"(pods:
  - name: big
    count: {}
    containers: [{{name: a, requests: {{cpu: 2, memory: {}}}, limits: {{cpu: 2, memory: {}}}}}]
{})",
                                                     count, memory, memory, more));
  SimulationOptions options = FakeClockOptions();
  options.check_every_event = true;
  options.max_admission_retries = retries;
  return Simulate(MemoryCluster(policy, tm), GenerateArrivals(workload, 1), options);
}

TEST(SimulatorMemoryTest, KubeletsStaticMemoryManagerRejectsWhatNoNumaNodeHoldsAndHuygensWaits) {
  // Three pods of 18Gi: the node has 54Gi of memory but each NUMA node only 27Gi, so the
  // third fits the node and no NUMA node. The NUMA-blind scheduler binds it and kubelet rejects
  // it for memory; Huygens keeps it pending, and so does the NRT peer, whose zones publish the
  // memory manager's free memory per NUMA node (as NFD's topology-updater does). kubelet's
  // reason: no NUMA set qualifies, so the memory manager gives no hint (an empty map: "no
  // preference"), the topology manager admits on the CPU hint, and the memory manager's
  // Allocate then fails (UnexpectedAdmissionError).
  auto report = SimulateBigPods("Static", "single-numa-node", 3, "18Gi", /*retries=*/1);
  ASSERT_TRUE(report.ok()) << report.status();
  for (const RunReport* run : {&report->huygens, &report->nrt}) {
    SCOPED_TRACE(run->scheduler);
    EXPECT_EQ(run->scheduled, 2);
    EXPECT_EQ(run->unschedulable, 1);
    EXPECT_EQ(run->admission_rejected, 0);
    EXPECT_EQ(run->remote_memory_pods, 0);
  }
  const RunReport& baseline = report->baseline;
  EXPECT_EQ(baseline.scheduled, 2);
  EXPECT_EQ(baseline.admission_rejected, 2) << "the pod and its one re-creation";
  EXPECT_EQ(baseline.memory_admission_rejected, 2);
  EXPECT_EQ(baseline.admission_rejected_reasons.at("UnexpectedAdmissionError"), 2);
  EXPECT_EQ(baseline.remote_memory_pods, 0) << "single-numa-node keeps what it admits aligned";
}

TEST(SimulatorMemoryTest, MemoryOnlyTwoNumaNodesHoldIsATopologyAffinityErrorUnderSingleNumaNode) {
  // 40Gi: only NUMA nodes 0 and 1 together hold it, a hint that is not preferred, so the merge
  // with the memory hints is refused while the CPU hints alone would have been admitted.
  auto report = SimulateBigPods("Static", "single-numa-node", 1, "40Gi", /*retries=*/0);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->huygens.unschedulable, 1);
  EXPECT_EQ(report->huygens.admission_rejected, 0);
  EXPECT_EQ(report->baseline.admission_rejected_reasons,
            (std::map<std::string, int>{{"TopologyAffinityError", 1}}));
  EXPECT_EQ(report->baseline.memory_admission_rejected, 1);
}

TEST(SimulatorMemoryTest, KubeletGivesMemoryBackWhenAPodLeaves) {
  // The same pods one after the other: each leaves before the next arrives, so kubelet admits
  // all of them only if it frees the memory of the pods that left.
  const WorkloadSpec workload = Workload(R"(pods:
  - name: big
    count: 6
    arrivalsPerSecond: 0.1
    lifetime: {distribution: fixed, value: 1s}
    containers: [{name: a, requests: {cpu: 2, memory: 20Gi, hugepages-1Gi: 3Gi}, limits: {cpu: 2, memory: 20Gi, hugepages-1Gi: 3Gi}}]
)");
  SimulationOptions options = FakeClockOptions();
  options.check_every_event = true;
  auto report = Simulate(MemoryCluster("Static", "single-numa-node"),
                         GenerateArrivals(workload, 1), options);
  ASSERT_TRUE(report.ok()) << report.status();
  ExpectAllScheduledWithoutRejection(*report, 6);
}

TEST(SimulatorMemoryTest, KubeletWithoutTopologyAlignmentPutsMemoryAwayFromTheCpus) {
  // Topology manager none: kubelet packs the CPUs on NUMA node 0 and gives each pod's memory
  // to the first NUMA node that holds it, so the second 20Gi pod gets NUMA node 1's memory
  // beside NUMA node 0's CPUs. Huygens puts the CPUs where the memory goes.
  auto report = SimulateBigPods("Static", "none", 2, "20Gi");
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->huygens.scheduled, 2);
  EXPECT_EQ(report->huygens.remote_memory_pods, 0);
  EXPECT_EQ(report->baseline.scheduled, 2);
  EXPECT_EQ(report->baseline.admission_rejected, 0);
  EXPECT_EQ(report->baseline.remote_memory_pods, 1);
}

TEST(SimulatorMemoryTest, UnderTheNonePolicyKubeletPinsNoMemoryAndHuygensPinsItLocally) {
  auto report = SimulateBigPods("None", "none", 2, "20Gi", 3, R"(  - name: shared
    containers: [{name: a, requests: {cpu: 500m, memory: 1Gi}}]
)");
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->huygens.scheduled, 3);
  EXPECT_EQ(report->huygens.remote_memory_pods, 0);
  EXPECT_EQ(report->huygens.memory_unpinned_pods, 0);
  EXPECT_EQ(report->baseline.scheduled, 3);
  EXPECT_EQ(report->baseline.memory_unpinned_pods, 2) << "the exclusive pods only";
  EXPECT_EQ(report->baseline.remote_memory_pods, 0);
}

TEST(SimulatorMemoryTest, TheMemoryFiguresAppearOnlyWhenAGroupModelsMemory) {
  auto report = SimulateBigPods("Static", "single-numa-node", 3, "18Gi");
  ASSERT_TRUE(report.ok()) << report.status();
  const nlohmann::json j = ReportToJson(*report, false);
  EXPECT_EQ(j["baseline"]["memoryAdmissionRejected"], 4);
  EXPECT_EQ(j["huygens"]["remoteMemoryPods"], 0);
  EXPECT_EQ(j["nrt"]["memoryUnpinnedPods"], 0);
  EXPECT_EQ(j["cluster"]["groups"][0]["memoryManager"], "Static");
  EXPECT_THAT(ReportToTable(*report), ::testing::ContainsRegex("\nrejected for memory +0 +0 +4\n"));
  EXPECT_THAT(ReportToTable(*report), ::testing::ContainsRegex("\nremote-memory pods +0 +0 +0\n"));
  EXPECT_THAT(ReportToHtml(*report), ::testing::HasSubstr("<td>rejected for memory</td><td>0</td>"));

  const ClusterSpec plain = Cluster(R"(nodeGroups:
  - {name: n, count: 1, topology: {synthetic: "package:1 numa:2 core:8 pu:2"}, systemCpuCount: 2}
)");
  const WorkloadSpec workload = Workload(R"(pods:
  - name: big
    containers: [{name: a, requests: {cpu: 2, memory: 1Gi}, limits: {cpu: 2, memory: 1Gi}}]
)");
  report = Simulate(plain, GenerateArrivals(workload, 1), FakeClockOptions());
  ASSERT_TRUE(report.ok()) << report.status();
  const nlohmann::json p = ReportToJson(*report, false);
  EXPECT_FALSE(p["huygens"].contains("remoteMemoryPods"));
  EXPECT_FALSE(p["cluster"]["groups"][0].contains("memoryManager"));
  EXPECT_THAT(ReportToTable(*report), ::testing::Not(::testing::HasSubstr("remote-memory")));
}

// The memory example under sim/testdata/memory (docs/simulate.md): memory-heavy, hugepage and
// CPU pods on Static-policy nodes under single-numa-node and none.
TEST(SimulatorMemoryTest, OnTheMemoryExampleHuygensHasNoRejectionAndNoRemoteMemory) {
  auto report = SimulateExample("memory");
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->huygens.admission_rejected, 0);
  EXPECT_EQ(report->huygens.remote_memory_pods, 0);
  EXPECT_EQ(report->huygens.memory_unpinned_pods, 0);
  EXPECT_GT(report->baseline.memory_admission_rejected, 0);
  EXPECT_GT(report->baseline.remote_memory_pods, 0);
  EXPECT_GE(report->huygens.scheduled, report->baseline.scheduled);
  std::cerr << ReportToTable(*report);
}

// One node of 2 NUMA nodes x 8 cores x 2 threads with one GPU on NUMA node 0, topology
// manager `tm`.
ClusterSpec GpuCluster(const std::string& tm) {
  return Cluster(R"(nodeGroups:
  - name: g
    count: 1
    topology: {synthetic: "package:1 numa:2 core:8 pu:2"}
    systemCpuCount: 2
    topologyPolicy: )" + tm + R"(
    devices: {example.com/gpu: {0: 1}}
)");
}

// A 12-CPU pod fills NUMA node 0 (14 user CPUs; kubelet packs from NUMA node 0 on), then a
// 4-CPU pod with the GPU arrives.
const char kGpuAfterCpus[] = R"(pods:
  - name: cpu
    containers: [{name: a, requests: {cpu: 12, memory: 1Gi}, limits: {cpu: 12, memory: 1Gi}}]
  - name: gpu
    startAt: 1s
    containers:
      - {name: a, requests: {cpu: 4, memory: 1Gi}, limits: {cpu: 4, memory: 1Gi}, devices: {example.com/gpu: 1}}
)";

TEST(SimulatorDeviceTest, KubeletRejectsAGpuPodWhoseGpuNumaNodeLacksCpusAndHuygensAvoidsIt) {
  SimulationOptions options = FakeClockOptions();
  options.check_every_event = true;
  options.max_admission_retries = 0;
  auto report = Simulate(GpuCluster("single-numa-node"),
                         GenerateArrivals(Workload(kGpuAfterCpus), 1), options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->huygens.scheduled, 2) << "the CPU pod keeps off the GPU's NUMA node";
  EXPECT_EQ(report->huygens.admission_rejected, 0);
  EXPECT_EQ(report->huygens.device_pods, 1);
  EXPECT_EQ(report->huygens.device_misaligned_pods, 0);
  // The NUMA-blind scheduler binds it and kubelet refuses it.
  EXPECT_EQ(report->baseline.scheduled, 1);
  EXPECT_EQ(report->baseline.admission_rejected_reasons,
            (std::map<std::string, int>{{"TopologyAffinityError", 1}}));
  EXPECT_EQ(report->baseline.device_admission_rejected, 1);
  // The NRT peer sees the GPU's zone lack the CPUs and keeps it pending.
  EXPECT_EQ(report->nrt.scheduled, 1);
  EXPECT_EQ(report->nrt.unschedulable, 1);
  EXPECT_EQ(report->nrt.admission_rejected, 0);
}

TEST(SimulatorDeviceTest, UnderBestEffortKubeletGivesTheGpuApartFromTheCpus) {
  SimulationOptions options = FakeClockOptions();
  options.check_every_event = true;
  auto report =
      Simulate(GpuCluster("best-effort"), GenerateArrivals(Workload(kGpuAfterCpus), 1), options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->huygens.scheduled, 2);
  EXPECT_EQ(report->huygens.device_misaligned_pods, 0);
  EXPECT_EQ(report->baseline.scheduled, 2);
  EXPECT_EQ(report->baseline.device_pods, 1);
  EXPECT_EQ(report->baseline.device_misaligned_pods, 1);

  const nlohmann::json j = ReportToJson(*report, false);
  EXPECT_EQ(j["baseline"]["deviceMisalignedPods"], 1);
  EXPECT_EQ(j["huygens"]["deviceAdmissionRejected"], 0);
  EXPECT_THAT(ReportToTable(*report),
              ::testing::ContainsRegex("\ndevice-misaligned / with devices +0 / 1 +[0-9] / 1 +1 / 1\n"));
}

TEST(SimulatorDeviceTest, KubeletGivesDevicesBackWhenAPodLeaves) {
  const WorkloadSpec workload = Workload(R"(pods:
  - name: gpu
    count: 4
    arrivalsPerSecond: 0.1
    lifetime: {distribution: fixed, value: 1s}
    containers:
      - {name: a, requests: {cpu: 2, memory: 1Gi}, limits: {cpu: 2, memory: 1Gi}, devices: {example.com/gpu: 1}}
)");
  SimulationOptions options = FakeClockOptions();
  options.check_every_event = true;
  auto report = Simulate(GpuCluster("single-numa-node"), GenerateArrivals(workload, 1), options);
  ASSERT_TRUE(report.ok()) << report.status();
  ExpectAllScheduledWithoutRejection(*report, 4);
}

// The device example under sim/testdata/devices (docs/simulate.md): GPU and CPU pods on GPU
// servers under single-numa-node and best-effort.
TEST(SimulatorDeviceTest, OnTheDeviceExampleHuygensHasNoRejectionAndNoMisalignedDevice) {
  auto report = SimulateExample("devices");
  ASSERT_TRUE(report.ok()) << report.status();
  std::cerr << ReportToTable(*report);
  EXPECT_EQ(report->huygens.admission_rejected, 0);
  EXPECT_EQ(report->huygens.device_misaligned_pods, 0);
  EXPECT_GT(report->baseline.device_admission_rejected + report->baseline.device_misaligned_pods,
            0);
  EXPECT_GE(report->huygens.scheduled, report->baseline.scheduled);
  EXPECT_GE(report->huygens.scheduled, report->nrt.scheduled);
}

// Memory-heavy, hugepage and GPU pods together (issue 18, "done when"): Huygens has no kubelet
// rejection and no remote-memory pod; its one device-misaligned pod (gpu-11) had no aligned
// node left (`--explain gpu-11`: the strict nodes refuse it, the best-effort node with a free
// GPU has no CPUs beside it); the stock baseline meets kubelet's rejections for memory and for
// devices, the NRT peer for memory.
TEST(SimulatorDeviceTest, OnTheMemoryAndDeviceExampleHuygensHasNoRejectionAndNoRemoteMemory) {
  auto report = SimulateExample("numa-resources");
  ASSERT_TRUE(report.ok()) << report.status();
  std::cerr << ReportToTable(*report);
  EXPECT_EQ(report->huygens.admission_rejected, 0);
  EXPECT_EQ(report->huygens.remote_memory_pods, 0);
  EXPECT_LE(report->huygens.device_misaligned_pods, report->baseline.device_misaligned_pods);
  EXPECT_GT(report->baseline.memory_admission_rejected, 0);
  EXPECT_GT(report->baseline.device_admission_rejected, 0);
  // The NRT peer's zones list the GPUs and the memory manager's free memory and hugepages, yet
  // it cannot tell which NUMA node kubelet's memory manager will pick.
  EXPECT_GT(report->nrt.memory_admission_rejected, 0);
  for (const RunReport* peer : {&report->baseline, &report->nrt}) {
    SCOPED_TRACE(peer->scheduler);
    EXPECT_GE(report->huygens.scheduled, peer->scheduled);
  }
}

}  // namespace
}  // namespace huygens::sim
