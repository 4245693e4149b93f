#include "sim/workload.h"

#include <cmath>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace huygens::sim {
namespace {

using ::testing::HasSubstr;

constexpr char kWorkload[] = R"(seed: 42
pods:
  - name: db
    count: 4
    arrivalsPerSecond: 2
    startAt: 10s
    lifetime: {distribution: fixed, value: 1m}
    topologyPolicy: single-numa-node
    bindPolicy: full-cores
    affinityGroup: g1
    priority: 10
    nodeSelector: {disk: ssd}
    tolerations: [{key: dedicated, operator: Equal, value: db, effect: NoSchedule}]
    containers:
      - {name: init, init: true, requests: {cpu: 2, memory: 1Gi}, limits: {cpu: 2, memory: 1Gi}}
      - {name: app, limits: {cpu: 8, memory: 16Gi}}
  - name: web
    count: 3
    containers:
      - {name: app, requests: {cpu: 500m}}
)";

TEST(WorkloadSpecTest, TemplatesAreParsedWithKubernetesDefaults) {
  auto spec = ParseWorkloadSpec(kWorkload, "w.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->seed, 42u);
  ASSERT_EQ(spec->templates.size(), 2u);
  const PodTemplate& db = spec->templates[0];
  EXPECT_EQ(db.count, 4);
  EXPECT_EQ(db.arrivals_per_second, 2);
  EXPECT_EQ(db.start_us, 10000000);
  EXPECT_EQ(db.lifetime.kind, Lifetime::Kind::kFixed);
  EXPECT_EQ(db.lifetime.a_us, 60000000);
  EXPECT_EQ(db.pod.spec.topology_policy, TopologyPolicy::kSingleNumaNode);
  EXPECT_EQ(db.pod.spec.bind_policy, BindPolicy::kFullCores);
  EXPECT_EQ(db.pod.spec.affinity_group, "g1");
  EXPECT_EQ(db.pod.priority, 10);
  EXPECT_EQ(db.pod.node_selector.at("disk"), "ssd");
  ASSERT_EQ(db.pod.tolerations.size(), 1u);
  ASSERT_EQ(db.pod.spec.init_containers.size(), 1u);
  ASSERT_EQ(db.pod.spec.containers.size(), 1u);
  // A missing request defaults to the limit, so the pod is Guaranteed and exclusive.
  EXPECT_EQ(db.pod.spec.containers[0].cpu_request_milli, 8000);
  EXPECT_EQ(db.pod.spec.containers[0].memory_request_bytes, int64_t{16} << 30);
  EXPECT_EQ(QosOf(db.pod.spec), QosClass::kGuaranteed);
  EXPECT_EQ(QosOf(spec->templates[1].pod.spec), QosClass::kBurstable);
  EXPECT_EQ(spec->templates[1].lifetime.kind, Lifetime::Kind::kForever);
}

TEST(WorkloadSpecTest, HugepagesAreRequestedByTheirLimits) {
  auto spec = ParseWorkloadSpec(R"(pods:
  - name: dpdk
    containers:
      - {name: a, requests: {cpu: 2, memory: 1Gi}, limits: {cpu: 2, memory: 1Gi, hugepages-1Gi: 2Gi}}
      - {name: b, requests: {hugepages-2Mi: 64Mi}, limits: {hugepages-2Mi: 64Mi}}
)",
                                "w.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  const auto& containers = spec->templates[0].pod.spec.containers;
  ASSERT_EQ(containers.size(), 2u);
  EXPECT_EQ(containers[0].hugepages_request_bytes,
            (std::map<std::string, int64_t>{{"hugepages-1Gi", int64_t{2} << 30}}));
  EXPECT_EQ(containers[1].hugepages_request_bytes,
            (std::map<std::string, int64_t>{{"hugepages-2Mi", int64_t{64} << 20}}));
}

TEST(WorkloadSpecTest, DevicesAreRequestedPerContainerAndSummedForThePod) {
  auto spec = ParseWorkloadSpec(R"(pods:
  - name: train
    containers:
      - {name: a, requests: {cpu: 2, memory: 1Gi}, limits: {cpu: 2, memory: 1Gi}, devices: {example.com/gpu: 2}}
      - {name: b, requests: {cpu: 1, memory: 1Gi}, limits: {cpu: 1, memory: 1Gi}, devices: {example.com/gpu: 1}}
)",
                                "w.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  const sched::Pod& pod = spec->templates[0].pod;
  EXPECT_EQ(pod.spec.containers[0].extended_requests,
            (std::map<std::string, int64_t>{{"example.com/gpu", 2}}));
  EXPECT_EQ(pod.extended_requests, (std::map<std::string, int64_t>{{"example.com/gpu", 3}}));

  auto bad = ParseWorkloadSpec(R"(pods:
  - name: train
    containers: [{name: a, devices: {gpu: 1}}]
)",
                               "w.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              ::testing::HasSubstr("pods[0].containers[0].devices.gpu: a device-plugin resource "
                                   "name has a domain"));
}

TEST(WorkloadSpecTest, ResizesAreParsedAndCopiedToEveryPodOfTheTemplate) {
  auto spec = ParseWorkloadSpec(R"(pods:
  - name: a
    count: 2
    containers: [{name: app, requests: {cpu: 4, memory: 1Gi}, limits: {cpu: 4, memory: 1Gi}}]
    resizes:
      - {after: 30s, container: app, cpu: 6}
      - {after: 1m, container: app, cpu: 2}
)",
                                "w.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  const std::vector<PodArrival> arrivals = GenerateArrivals(*spec, 1);
  ASSERT_EQ(arrivals.size(), 2u);
  for (const PodArrival& a : arrivals) {
    ASSERT_EQ(a.resizes.size(), 2u);
    EXPECT_EQ(a.resizes[0].after_us, 30000000);
    EXPECT_EQ(a.resizes[0].container, "app");
    EXPECT_EQ(a.resizes[0].cpus, 6);
    EXPECT_EQ(a.resizes[1].after_us, 60000000);
    EXPECT_EQ(a.resizes[1].cpus, 2);
  }
}

TEST(WorkloadSpecTest, AffinityGroupsPolicyAndTheRebalanceBlockAreParsed) {
  auto spec = ParseWorkloadSpec(R"(rebalance: {interval: 30s, maxMoves: 3, balance: true}
pods:
  - name: cache
    count: 5
    affinityGroup: cache
    affinityGroups: 2
    affinityPolicy: nearest
    rebalance: false
    containers: [{name: c, limits: {cpu: 2, memory: 1Gi}}]
  - name: web
    containers: [{name: c, limits: {cpu: 2, memory: 1Gi}}]
)",
                                "w.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_TRUE(spec->rebalance.has_value());
  EXPECT_EQ(spec->rebalance->interval_us, 30000000);
  EXPECT_EQ(spec->rebalance->planner.max_moves, 3);
  EXPECT_TRUE(spec->rebalance->planner.balance);
  const PodTemplate& cache = spec->templates[0];
  EXPECT_EQ(cache.affinity_groups, 2);
  EXPECT_EQ(cache.affinity_policy, rebalance::GroupPolicy::kNearest);
  EXPECT_FALSE(cache.pod.rebalance);
  const PodTemplate& web = spec->templates[1];
  EXPECT_EQ(web.affinity_groups, 1);
  EXPECT_EQ(web.affinity_policy, rebalance::GroupPolicy::kSameNuma);
  EXPECT_TRUE(web.pod.rebalance);
  // Without the block, no rebalancer; its defaults are huygens-scheduler's: 30 s and 1 move.
  auto plain = ParseWorkloadSpec("pods:\n  - name: a\n    containers: [{name: c}]\n", "w.yaml");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(plain->rebalance.has_value());
  EXPECT_EQ(RebalanceSettings().interval_us, 30000000);
  EXPECT_EQ(RebalanceSettings().planner.max_moves, 1);
}

TEST(GenerateArrivalsTest, PodsAreDealtRoundRobinIntoTheTemplatesGroups) {
  auto spec = ParseWorkloadSpec(R"(pods:
  - name: cache
    count: 5
    arrivalsPerSecond: 1
    affinityGroup: cache
    affinityGroups: 2
    affinityPolicy: spread
    rebalance: false
    containers: [{name: c, limits: {cpu: 2, memory: 1Gi}}]
  - name: db
    count: 2
    affinityGroup: db
    containers: [{name: c, limits: {cpu: 2, memory: 1Gi}}]
)",
                                "w.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  std::map<std::string, std::string> group_of;
  for (const PodArrival& a : GenerateArrivals(*spec, 1)) {
    group_of[a.pod.spec.name] = a.pod.spec.affinity_group;
    const bool cache = a.pod.spec.name.starts_with("cache");
    EXPECT_EQ(a.affinity_policy,
              cache ? rebalance::GroupPolicy::kSpread : rebalance::GroupPolicy::kSameNuma);
    EXPECT_EQ(a.pod.rebalance, !cache);
  }
  EXPECT_EQ(group_of, (std::map<std::string, std::string>{{"cache-0", "cache-0"},
                                                          {"cache-1", "cache-1"},
                                                          {"cache-2", "cache-0"},
                                                          {"cache-3", "cache-1"},
                                                          {"cache-4", "cache-0"},
                                                          {"db-0", "db"},
                                                          {"db-1", "db"}}));
}

TEST(WorkloadSpecTest, BadInputIsReportedWithFileLineAndField) {
  struct Case {
    const char* what;
    const char* yaml;
    const char* expected;
  };
  const Case cases[] = {
      {"an unknown template field",
       "pods:\n  - name: a\n    replicas: 2\n    containers: [{name: c}]\n",
       "w.yaml:3:5: pods[0].replicas: unknown field"},
      {"a negative count", "pods:\n  - name: a\n    count: -1\n    containers: [{name: c}]\n",
       "w.yaml:3:12: pods[0].count: -1 is out of range"},
      {"a negative rate",
       "pods:\n  - name: a\n    arrivalsPerSecond: -3\n    containers: [{name: c}]\n",
       "w.yaml:3:24: pods[0].arrivalsPerSecond: -3 is below the minimum"},
      {"a cpu request in a wrong unit",
       "pods:\n  - name: a\n    containers:\n      - {name: c, requests: {cpu: 2Gi}}\n",
       "w.yaml:4:35: pods[0].containers[0].requests.cpu: \"2Gi\" is not a CPU quantity"},
      {"a limit below the request",
       "pods:\n  - name: a\n    containers:\n      - {name: c, requests: {cpu: 4}, limits: {cpu: 2}}\n",
       "w.yaml:4:53: pods[0].containers[0].limits.cpu: below the cpu request"},
      {"an unknown lifetime distribution",
       "pods:\n  - name: a\n    lifetime: {distribution: normal}\n    containers: [{name: c}]\n",
       "w.yaml:3:30: pods[0].lifetime.distribution: unknown distribution \"normal\""},
      {"a parameter of another distribution",
       "pods:\n  - name: a\n    lifetime: {distribution: fixed, value: 1s, mean: 2s}\n    containers: [{name: c}]\n",
       "w.yaml:3:54: pods[0].lifetime.mean: not a parameter of distribution fixed"},
      {"a lifetime in a wrong unit",
       "pods:\n  - name: a\n    lifetime: {distribution: fixed, value: 3 weeks}\n    containers: [{name: c}]\n",
       "w.yaml:3:44: pods[0].lifetime.value: \"3 weeks\" is not a duration"},
      {"an unknown bind policy",
       "pods:\n  - name: a\n    bindPolicy: scattered\n    containers: [{name: c}]\n",
       "w.yaml:3:17: pods[0].bindPolicy: unknown value \"scattered\""},
      {"no app container", "pods:\n  - name: a\n    containers: [{name: i, init: true}]\n",
       "w.yaml:3:17: pods[0].containers: needs at least one app container"},
      {"a duplicate container", "pods:\n  - name: a\n    containers: [{name: c}, {name: c}]\n",
       "w.yaml:3:36: pods[0].containers[1].name: duplicate container name"},
      {"no pods key", "seed: 1\n", "w.yaml:1:1: pods: required"},
      {"a hugepages request without a limit",
       "pods:\n  - name: a\n    containers:\n      - {name: c, requests: {hugepages-2Mi: 2Mi}}\n",
       "w.yaml:4:45: pods[0].containers[0].requests.hugepages-2Mi: hugepages need an equal limit"},
      {"a hugepages limit other than the request",
       "pods:\n  - name: a\n    containers:\n      - {name: c, requests: {hugepages-1Gi: 1Gi}, limits: {hugepages-1Gi: 2Gi}}\n",
       "pods[0].containers[0].limits.hugepages-1Gi: must equal the hugepages request"},
      {"hugepages in a wrong unit",
       "pods:\n  - name: a\n    containers:\n      - {name: c, limits: {hugepages-1Gi: 2}}\n",
       "pods[0].containers[0].limits.hugepages-1Gi: 2 bytes is not a whole number of pages"},
      {"a hugepage size the spec does not know",
       "pods:\n  - name: a\n    containers:\n      - {name: c, limits: {hugepages-4Mi: 4Mi}}\n",
       "pods[0].containers[0].limits.hugepages-4Mi: unknown field"},
      {"a resize of an init container",
       "pods:\n  - name: a\n    containers: [{name: i, init: true}, {name: c}]\n"
       "    resizes: [{after: 1s, container: i, cpu: 2}]\n",
       "pods[0].resizes[0].container: \"i\" is not an app container of this pod"},
      {"a resize to no CPU",
       "pods:\n  - name: a\n    containers: [{name: c}]\n"
       "    resizes: [{after: 1s, container: c, cpu: 0}]\n",
       "pods[0].resizes[0].cpu: 0 is out of range"},
      {"a resize without a time",
       "pods:\n  - name: a\n    containers: [{name: c}]\n    resizes: [{container: c, cpu: 2}]\n",
       "pods[0].resizes[0].after: required"},
      {"affinity groups without a group name",
       "pods:\n  - name: a\n    affinityGroups: 3\n    containers: [{name: c}]\n",
       "w.yaml:3:21: pods[0].affinityGroups: needs affinityGroup"},
      {"no affinity group at all",
       "pods:\n  - name: a\n    affinityGroup: g\n    affinityGroups: 0\n    containers: [{name: c}]\n",
       "w.yaml:4:21: pods[0].affinityGroups: 0 is out of range"},
      {"an unknown group policy",
       "pods:\n  - name: a\n    affinityGroup: g\n    affinityPolicy: together\n"
       "    containers: [{name: c}]\n",
       "w.yaml:4:21: pods[0].affinityPolicy: unknown value \"together\" (same-numa, nearest, spread)"},
      {"two policies for one group",
       "pods:\n  - name: a\n    affinityGroup: g\n    containers: [{name: c}]\n"
       "  - name: b\n    affinityGroup: g\n    affinityPolicy: spread\n    containers: [{name: c}]\n",
       "w.yaml:7:21: pods[1].affinityPolicy: group \"g\" has policy same-numa in template \"a\", here "
       "spread"},
      {"two policies for a group one template deals pods into",
       "pods:\n  - name: a\n    count: 4\n    affinityGroup: g\n    affinityGroups: 4\n"
       "    containers: [{name: c}]\n"
       "  - name: b\n    affinityGroup: g-3\n    affinityPolicy: nearest\n    containers: [{name: c}]\n",
       "pods[1].affinityPolicy: group \"g-3\" has policy same-numa in template \"a\", here nearest"},
      {"a rebalance flag that is not a boolean",
       "pods:\n  - name: a\n    rebalance: sometimes\n    containers: [{name: c}]\n",
       "w.yaml:3:16: pods[0].rebalance:"},
      {"a rebalance interval of zero",
       "rebalance: {interval: 0s}\npods:\n  - name: a\n    containers: [{name: c}]\n",
       "w.yaml:1:23: rebalance.interval: must be positive"},
      {"an unknown rebalance field",
       "rebalance: {every: 10s}\npods:\n  - name: a\n    containers: [{name: c}]\n",
       "rebalance.every: unknown field"},
      {"a negative move budget",
       "rebalance: {maxMoves: -1}\npods:\n  - name: a\n    containers: [{name: c}]\n",
       "rebalance.maxMoves: -1 is out of range"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    auto spec = ParseWorkloadSpec(c.yaml, "w.yaml");
    ASSERT_FALSE(spec.ok());
    EXPECT_THAT(std::string(spec.status().message()), HasSubstr(c.expected));
  }
}

TEST(GenerateArrivalsTest, TheSameSeedGivesTheSameArrivals) {
  auto spec = ParseWorkloadSpec(kWorkload, "w.yaml");
  ASSERT_TRUE(spec.ok());
  const auto a = GenerateArrivals(*spec, 7);
  const auto b = GenerateArrivals(*spec, 7);
  const auto c = GenerateArrivals(*spec, 8);
  ASSERT_EQ(a.size(), 7u);
  bool differs = false;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].arrival_us, b[i].arrival_us);
    EXPECT_EQ(a[i].pod.spec.uid, b[i].pod.spec.uid);
    EXPECT_EQ(a[i].pod.creation_index, static_cast<int64_t>(i));
    differs = differs || a[i].arrival_us != c[i].arrival_us;
    if (i > 0) {
      EXPECT_LE(a[i - 1].arrival_us, a[i].arrival_us);
    }
  }
  EXPECT_TRUE(differs);
  // Templates without a rate arrive at their start; the others after their start.
  for (const PodArrival& x : a) {
    if (x.source == 1) {
      EXPECT_EQ(x.arrival_us, 0);
    }
    if (x.source == 0) {
      EXPECT_GT(x.arrival_us, 10000000);
      EXPECT_EQ(x.lifetime_us, 60000000);
    }
    if (x.source == 1) {
      EXPECT_EQ(x.lifetime_us, -1);
    }
  }
}

TEST(GenerateArrivalsTest, PoissonArrivalsAndExponentialLifetimesHaveTheirMeans) {
  WorkloadSpec spec;
  PodTemplate t;
  t.name = std::string("p");  // not from a char*: gcc 12 -O2 misreports its inlined copy (bug 105651)
  t.count = 20000;
  t.arrivals_per_second = 4;
  t.lifetime = {Lifetime::Kind::kExponential, 30000000, 0};
  t.pod.spec.containers.push_back({.name = "c"});
  spec.templates.push_back(t);
  const auto a = GenerateArrivals(spec, 1);
  const double span_s = static_cast<double>(a.back().arrival_us) / 1e6;
  EXPECT_NEAR(20000 / span_s, 4.0, 0.15);
  double life = 0;
  for (const PodArrival& x : a) life += static_cast<double>(x.lifetime_us) / 1e6;
  EXPECT_NEAR(life / 20000, 30.0, 1.0);
}

TEST(TraceTest, RowsBecomePodsAsDocumented) {
  const char* csv =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
      "deletion_time,scheduled_time\n"
      "ls-whole,4000,1024,1,1000,,LS,Running,100,700,100\n"
      "ls-frac,3152,1024,1,1000,,LS,Running,50,60,50\n"
      "be,8000,2048,0,0,,BE,Running,0,,0\n"
      "g,2000,512,0,0,,Guaranteed,Running,10,5,10\n";
  auto pods = ParseTrace(csv, "t.csv", {});
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 4u);
  // Sorted by creation time.
  EXPECT_EQ((*pods)[0].pod.spec.name, "be");
  EXPECT_EQ((*pods)[1].pod.spec.name, "g");
  EXPECT_EQ((*pods)[2].pod.spec.name, "ls-frac");
  EXPECT_EQ((*pods)[3].pod.spec.name, "ls-whole");
  // BE: shared, never leaves (no deletion time).
  EXPECT_EQ(QosOf((*pods)[0].pod.spec), QosClass::kBurstable);
  EXPECT_EQ((*pods)[0].lifetime_us, -1);
  // Guaranteed whole CPUs: exclusive; a deletion before creation means it never leaves.
  EXPECT_EQ(EffectiveCpuPolicy((*pods)[1].pod.spec), CpuPolicy::kExclusive);
  EXPECT_EQ((*pods)[1].lifetime_us, -1);
  // LS fractional: shared by default.
  EXPECT_EQ(EffectiveCpuPolicy((*pods)[2].pod.spec), CpuPolicy::kShared);
  EXPECT_EQ((*pods)[2].lifetime_us, 10000000);
  // LS whole: exclusive, lives deletion - creation.
  EXPECT_EQ(EffectiveCpuPolicy((*pods)[3].pod.spec), CpuPolicy::kExclusive);
  EXPECT_EQ((*pods)[3].arrival_us, 100000000);
  EXPECT_EQ((*pods)[3].lifetime_us, 600000000);

  TraceOptions round_up;
  round_up.round_up_exclusive = true;
  round_up.time_compression = 10;
  pods = ParseTrace(csv, "t.csv", round_up);
  ASSERT_TRUE(pods.ok());
  EXPECT_EQ(EffectiveCpuPolicy((*pods)[2].pod.spec), CpuPolicy::kExclusive);
  EXPECT_EQ((*pods)[2].pod.spec.containers[0].cpu_request_milli, 4000);
  EXPECT_EQ((*pods)[3].arrival_us, 10000000);
}

TEST(TraceTest, BadRowsAreNamedByLineAndColumn) {
  const std::string header =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
      "deletion_time,scheduled_time\n";
  struct Case {
    std::string row;
    const char* expected;
  };
  const Case cases[] = {
      {"p,-5,1,0,0,,LS,Running,0,1,0\n", "t.csv:2: column cpu_milli: negative"},
      {"p,4x,1,0,0,,LS,Running,0,1,0\n", "t.csv:2: column cpu_milli: expected an integer"},
      {"p,4000,1,0,0,,XX,Running,0,1,0\n", "t.csv:2: column qos: unknown class \"XX\""},
      {"p,4000,1,0,0,,LS,Running,,1,0\n", "t.csv:2: column creation_time: empty"},
      {"p,4000,1,0,0,,LS\n", "t.csv:2: 7 fields, but the header has 11"},
      // Numbers whose conversion to bytes or microseconds would overflow, or that are no
      // integer at all, are refused by column (the fuzzer's UBSan found the cast of these).
      {"p,1e30,1,0,0,,LS,Running,0,1,0\n", "t.csv:2: column cpu_milli: 1e30 is beyond"},
      {"p,nan,1,0,0,,LS,Running,0,1,0\n", "t.csv:2: column cpu_milli: expected an integer"},
      {"p,inf,1,0,0,,LS,Running,0,1,0\n", "t.csv:2: column cpu_milli: expected an integer"},
      {"p,4000,1099511627777,0,0,,LS,Running,0,1,0\n",
       "t.csv:2: column memory_mib: 1099511627777 is beyond 1099511627776"},
      {"p,4000,1,0,0,,LS,Running,9223372036854,1,0\n",
       "t.csv:2: column creation_time: 9223372036854 is beyond 1000000000000"},
      {"p,4000,1,0,0,,LS,Running,0,1e300,0\n", "t.csv:2: column deletion_time: 1e300 is beyond"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.row);
    auto pods = ParseTrace(header + c.row, "t.csv", {});
    ASSERT_FALSE(pods.ok());
    EXPECT_THAT(std::string(pods.status().message()), HasSubstr(c.expected));
  }
  auto pods = ParseTrace("name,cpu_milli\np,1\n", "t.csv", {});
  ASSERT_FALSE(pods.ok());
  EXPECT_THAT(std::string(pods.status().message()), HasSubstr("t.csv:1: missing column"));
}

TEST(TraceTest, TheRealTraceLoads) {
  auto pods = LoadTrace(std::string(HUYGENS_FIXTURES) + "/traces/openb_pod_list_default.csv", {});
  ASSERT_TRUE(pods.ok()) << pods.status();
  EXPECT_EQ(pods->size(), 8152u);
  int exclusive = 0;
  for (const PodArrival& p : *pods) exclusive += EffectiveCpuPolicy(p.pod.spec) == CpuPolicy::kExclusive;
  // The README counts 942 LS pods with whole-CPU requests, plus the 7 Guaranteed ones
  // (all of which request whole CPUs).
  EXPECT_EQ(exclusive, 942 + 7);
}

}  // namespace
}  // namespace huygens::sim
