// NodeResourceTopologyMatch (scheduler-plugins' plugin at commit
// 903da7df82cb8794dda8f2d510ba1156111662dd), case by case: its Filter under each topology policy
// and scope, and each scoring strategy.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sched/cache.h"
#include "sched/framework.h"
#include "sched/plugins.h"
#include "sched/profile.h"
#include "sched/test_util.h"

namespace huygens::sched {
namespace {

using testing::Share;

constexpr int64_t kGi = int64_t{1} << 30;

// A zone's available cpu (whole CPUs) and memory (GiB).
struct ZoneSpec {
  int cpus = 0;
  int64_t memory_gib = 16;
};

// Costs of a two-socket machine with two NUMA nodes per socket: 10 local, 12 same socket, 32
// other socket (zones 0, 1 on socket 0; 2, 3 on socket 1).
int TwoSocketCost(size_t a, size_t b) {
  if (a == b) return 10;
  return a / 2 == b / 2 ? 12 : 32;
}

std::shared_ptr<const NodeTopology> Nrt(TopologyPolicy policy, TopologyScope scope,
                                        const std::vector<ZoneSpec>& zones) {
  auto nrt = std::make_shared<NodeTopology>();
  nrt->policy = policy;
  nrt->scope = scope;
  for (size_t i = 0; i < zones.size(); ++i) {
    nrt->zones.push_back(
        {static_cast<int>(i), int64_t{zones[i].cpus} * 1000, zones[i].memory_gib * kGi});
  }
  for (size_t i = 0; i < zones.size(); ++i) {
    for (size_t j = 0; j < zones.size(); ++j) nrt->costs.push_back(TwoSocketCost(i, j));
  }
  return nrt;
}

ContainerSpec Guaranteed(std::string name, int64_t cpu_milli, int64_t memory_gib = 1) {
  ContainerSpec c;
  c.name = std::move(name);
  c.cpu_request_milli = c.cpu_limit_milli = cpu_milli;
  c.memory_request_bytes = c.memory_limit_bytes = memory_gib * kGi;
  return c;
}

// A pod of `containers` (init containers marked init).
Pod PodOf(std::vector<ContainerSpec> containers) {
  Pod pod;
  pod.spec.uid = pod.spec.name = "p";
  pod.spec.namespace_name = "default";
  for (ContainerSpec& c : containers) {
    (c.init ? pod.spec.init_containers : pod.spec.containers).push_back(std::move(c));
  }
  return pod;
}

ContainerSpec Init(ContainerSpec c, bool sidecar = false) {
  c.init = true;
  c.restartable = sidecar;
  return c;
}

// Runs the plugin on the only node of a cache holding a node with `nrt` (nullptr: none).
class Harness {
 public:
  Harness(std::shared_ptr<const NodeTopology> nrt, NrtScoring scoring = NrtScoring::kLeastAllocated)
      : plugin_(NewNodeResourceTopologyMatch(scoring)) {
    Node node = testing::PlainNode("n", 64000);
    node.nrt = std::move(nrt);
    EXPECT_TRUE(cache_.AddNode(std::move(node)).ok());
  }
  Status Filter(const Pod& pod) {
    Start(pod);
    return dynamic_cast<FilterPlugin&>(*plugin_).Filter(state_, *cache_.Nodes().front());
  }
  int64_t Score(const Pod& pod) {
    Start(pod);
    return dynamic_cast<ScorePlugin&>(*plugin_).Score(state_, *cache_.Nodes().front());
  }

 private:
  void Start(const Pod& pod) {
    state_.Reset(Share(pod));
    ComputePodFacts(pod, state_.mutable_facts());
  }
  ClusterCache cache_;
  std::unique_ptr<Plugin> plugin_;
  CycleState state_;
};

// ---- Filter -----------------------------------------------------------------------------------

TEST(NrtFilterDevices, ADeviceAZoneListsMustBeAvailableInTheZoneOfTheCpus) {
  // Zone 0 has the CPUs but no free GPU; zone 1 has a free GPU but 2 CPUs.
  auto nrt = std::make_shared<NodeTopology>(
      *Nrt(TopologyPolicy::kSingleNumaNode, TopologyScope::kContainer, {{8}, {2}}));
  nrt->zones[0].extended_available["example.com/gpu"] = 0;
  nrt->zones[1].extended_available["example.com/gpu"] = 1;
  ContainerSpec gpu = Guaranteed("a", 4000);
  gpu.extended_requests["example.com/gpu"] = 1;
  Harness h(nrt);
  const Status s = h.Filter(PodOf({gpu}));
  EXPECT_EQ(s.code(), Code::kUnschedulable);
  EXPECT_EQ(s.Message(), "cannot align container");
  // Two CPUs fit zone 1 beside its GPU.
  gpu.cpu_request_milli = gpu.cpu_limit_milli = 2000;
  EXPECT_TRUE(h.Filter(PodOf({gpu})).ok());
  // A resource no zone lists is node-level: the zones do not judge it.
  ContainerSpec nic = Guaranteed("b", 4000);
  nic.extended_requests["example.com/nic"] = 1;
  EXPECT_TRUE(h.Filter(PodOf({nic})).ok());
  // Scope pod: the pod's devices and CPUs together.
  auto pod_scope = std::make_shared<NodeTopology>(*nrt);
  pod_scope->scope = TopologyScope::kPod;
  Harness p(pod_scope);
  gpu.cpu_request_milli = gpu.cpu_limit_milli = 4000;
  EXPECT_EQ(p.Filter(PodOf({gpu})).Message(), "cannot align pod");
}

TEST(NrtFilterHugepages, HugepagesAZoneListsMustBeAvailableInTheZoneOfTheCpus) {
  // As NFD lists them under kubelet's memory manager Static: zone 0 has 1Gi of free 1Gi pages,
  // zone 1 has 2Gi; both have the CPUs.
  auto nrt = std::make_shared<NodeTopology>(
      *Nrt(TopologyPolicy::kSingleNumaNode, TopologyScope::kContainer, {{8}, {8}}));
  nrt->zones[0].extended_available["hugepages-1Gi"] = int64_t{1} << 30;
  nrt->zones[1].extended_available["hugepages-1Gi"] = int64_t{2} << 30;
  ContainerSpec dpdk = Guaranteed("a", 2000);
  dpdk.hugepages_request_bytes["hugepages-1Gi"] = int64_t{2} << 30;
  Harness h(nrt);
  EXPECT_TRUE(h.Filter(PodOf({dpdk})).ok()) << "zone 1 holds its pages";
  // Two such containers: the first takes zone 1's pages, the second fits no zone.
  ContainerSpec second = dpdk;
  second.name = "b";
  EXPECT_EQ(h.Filter(PodOf({dpdk, second})).Message(), "cannot align container");
  // Scope pod: the pod's pages together (4Gi) fit no zone.
  auto pod_scope = std::make_shared<NodeTopology>(*nrt);
  pod_scope->scope = TopologyScope::kPod;
  Harness p(pod_scope);
  EXPECT_EQ(p.Filter(PodOf({dpdk, second})).Message(), "cannot align pod");
}

struct FilterCase {
  std::string name;
  TopologyPolicy policy;
  TopologyScope scope;
  std::vector<ZoneSpec> zones;
  std::vector<ContainerSpec> containers;
  std::string reason;  // "" = the node passes
};

class NrtFilter : public ::testing::TestWithParam<FilterCase> {};

TEST_P(NrtFilter, AlignsAsSchedulerPluginsDoes) {
  const FilterCase& c = GetParam();
  Harness h(Nrt(c.policy, c.scope, c.zones));
  const Status s = h.Filter(PodOf(c.containers));
  if (c.reason.empty()) {
    EXPECT_TRUE(s.ok()) << s.Message();
  } else {
    EXPECT_EQ(s.code(), Code::kUnschedulable);
    EXPECT_EQ(s.Message(), c.reason);
  }
}

constexpr auto kSingle = TopologyPolicy::kSingleNumaNode;
constexpr auto kContainer = TopologyScope::kContainer;
constexpr auto kPod = TopologyScope::kPod;

ContainerSpec Burstable(std::string name, int64_t cpu_milli) {
  ContainerSpec c;
  c.name = std::move(name);
  c.cpu_request_milli = cpu_milli;
  return c;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, NrtFilter,
    ::testing::Values(
        FilterCase{"a Guaranteed container that fits one zone passes", kSingle, kContainer,
                   {{2}, {4}}, {Guaranteed("a", 4000)}, ""},
        FilterCase{"a Guaranteed container larger than every zone is rejected", kSingle,
                   kContainer, {{4}, {4}}, {Guaranteed("a", 5000)}, "cannot align container"},
        FilterCase{"not enough cpu in any one zone though the node has enough is rejected",
                   kSingle, kContainer, {{3}, {3}, {3}}, {Guaranteed("a", 6000)},
                   "cannot align container"},
        FilterCase{"memory must fit the same zone as the cpu", kSingle, kContainer,
                   {{8, 2}, {8, 2}}, {Guaranteed("a", 2000, 4)}, "cannot align container"},
        FilterCase{"app containers are taken from the lowest zone that fits, in turn", kSingle,
                   kContainer, {{4}, {4}}, {Guaranteed("a", 3000), Guaranteed("b", 3000)}, ""},
        FilterCase{"a container that no zone fits after the earlier ones is rejected", kSingle,
                   kContainer, {{4}, {2}}, {Guaranteed("a", 3000), Guaranteed("b", 3000)},
                   "cannot align container"},
        FilterCase{"an init container larger than every zone is rejected", kSingle, kContainer,
                   {{4}, {4}}, {Init(Guaranteed("i", 6000)), Guaranteed("a", 1000)},
                   "cannot align init container"},
        FilterCase{"a sidecar larger than every zone is rejected as a sidecar", kSingle,
                   kContainer, {{4}, {4}},
                   {Init(Guaranteed("s", 6000), true), Guaranteed("a", 1000)},
                   "cannot align sidecar container"},
        FilterCase{"init containers are not taken from the zones", kSingle, kContainer, {{4}},
                   {Init(Guaranteed("i", 4000)), Guaranteed("a", 4000)}, ""},
        FilterCase{"pod scope: containers that fit one zone each but not together are rejected",
                   kSingle, kPod, {{4}, {4}}, {Guaranteed("a", 3000), Guaranteed("b", 3000)},
                   "cannot align pod"},
        FilterCase{"pod scope: the containers' sum fitting one zone passes", kSingle, kPod,
                   {{4}, {6}}, {Guaranteed("a", 3000), Guaranteed("b", 3000)}, ""},
        FilterCase{"pod scope: an init container larger than the app containers' sum counts",
                   kSingle, kPod, {{4}, {4}}, {Init(Guaranteed("i", 5000)), Guaranteed("a", 1000)},
                   "cannot align pod"},
        FilterCase{"restricted nodes pass a pod no zone fits", TopologyPolicy::kRestricted,
                   kContainer, {{2}, {2}}, {Guaranteed("a", 4000)}, ""},
        FilterCase{"best-effort nodes pass a pod no zone fits", TopologyPolicy::kBestEffort,
                   kContainer, {{2}, {2}}, {Guaranteed("a", 4000)}, ""},
        FilterCase{"nodes with policy none pass a pod no zone fits", TopologyPolicy::kNone, kPod,
                   {{2}, {2}}, {Guaranteed("a", 4000)}, ""},
        FilterCase{"a Burstable pod fits any zone", kSingle, kContainer, {{2}, {2}},
                   {Burstable("a", 4000)}, ""},
        FilterCase{"a BestEffort pod passes", kSingle, kContainer, {{0}}, {ContainerSpec{"a"}},
                   ""}),
    testing::SentenceName<FilterCase>);

TEST(NrtFilterTest, ANodeWithoutNrtPassesEveryPod) {
  Harness h(nullptr);
  EXPECT_TRUE(h.Filter(PodOf({Guaranteed("a", 64000)})).ok());
}

// ---- Score ------------------------------------------------------------------------------------

struct ScoreCase {
  std::string name;
  NrtScoring scoring;
  TopologyPolicy policy;
  TopologyScope scope;
  std::vector<ZoneSpec> zones;
  std::vector<ContainerSpec> containers;
  int64_t score;
};

class NrtScore : public ::testing::TestWithParam<ScoreCase> {};

TEST_P(NrtScore, ScoresAsSchedulerPluginsDoes) {
  const ScoreCase& c = GetParam();
  Harness h(Nrt(c.policy, c.scope, c.zones), c.scoring);
  EXPECT_EQ(h.Score(PodOf(c.containers)), c.score);
}

constexpr auto kLeast = NrtScoring::kLeastAllocated;
constexpr auto kMost = NrtScoring::kMostAllocated;
constexpr auto kBalanced = NrtScoring::kBalancedAllocation;
constexpr auto kNuma = NrtScoring::kLeastNumaNodes;

INSTANTIATE_TEST_SUITE_P(
    Cases, NrtScore,
    ::testing::Values(
        // cpu (8-2)/8 = 75, memory (16-4)/16 = 75 on zone 0; cpu (4-2)/4 = 50 on zone 1: 62.
        ScoreCase{"LeastAllocated scores the zone with the least left", kLeast, kSingle,
                  kContainer, {{8}, {4}}, {Guaranteed("a", 2000, 4)}, 62},
        // Zone 0: cpu does not fit (0), memory 75: 37; zone 1: 75.
        ScoreCase{"LeastAllocated: a zone too small for the cpu still scores its memory",
                  kLeast, kSingle, kContainer, {{1}, {8}}, {Guaranteed("a", 2000, 4)}, 37},
        // 1500m counts as 2 CPUs: cpu (4-2)/4 = 50, memory 75.
        ScoreCase{"LeastAllocated divides whole CPUs, rounded up", kLeast, kSingle, kContainer,
                  {{4}}, {Guaranteed("a", 1500, 4)}, 62},
        // Containers: 75 and (cpu 50 + memory 75) / 2 = 62; mean 68.5.
        ScoreCase{"container scope averages the containers' scores, truncated", kLeast,
                  kSingle, kContainer, {{8}}, {Guaranteed("a", 2000, 4), Guaranteed("b", 4000, 4)},
                  68},
        // The pod: cpu 6 of 8 (25), memory 8 of 16 (50).
        ScoreCase{"pod scope scores the pod's effective request", kLeast, kSingle, kPod, {{8}},
                  {Guaranteed("a", 2000, 4), Guaranteed("b", 4000, 4)}, 37},
        ScoreCase{"LeastAllocated scores 0 on a restricted node", kLeast,
                  TopologyPolicy::kRestricted, kContainer, {{8}}, {Guaranteed("a", 2000, 4)}, 0},
        // Zone 0: 25 and 25; zone 1: 50 and 25 (37).
        ScoreCase{"MostAllocated scores the zone it fills least", kMost, kSingle, kContainer,
                  {{8}, {4}}, {Guaranteed("a", 2000, 4)}, 25},
        ScoreCase{"MostAllocated scores 0 on a best-effort node", kMost,
                  TopologyPolicy::kBestEffort, kContainer, {{8}}, {Guaranteed("a", 2000, 4)}, 0},
        // Zone 0: shares .25, .25 (100); zone 1: .5, .25, sample variance .03125 (96).
        ScoreCase{"BalancedAllocation scores the least balanced zone", kBalanced, kSingle,
                  kContainer, {{8}, {4}}, {Guaranteed("a", 2000, 4)}, 96},
        // Zone 0: a share above 1 scores 0; zone 1: 100.
        ScoreCase{"BalancedAllocation skips a zone the request overflows", kBalanced, kSingle,
                  kContainer, {{1}, {8}}, {Guaranteed("a", 2000, 4)}, 100},
        // One zone, the least distance: 100 - 12 + 6.
        ScoreCase{"LeastNUMANodes: one zone scores 94", kNuma, kSingle, kContainer,
                  {{4}, {4}, {4}, {4}}, {Guaranteed("a", 4000)}, 94},
        // Two zones on one socket: 100 - 24 + 6.
        ScoreCase{"LeastNUMANodes: two nearest zones score 82", kNuma, kSingle, kContainer,
                  {{4}, {4}, {4}, {4}}, {Guaranteed("a", 6000)}, 82},
        // Only zones 0 and 2 (different sockets) fit together: 100 - 24.
        ScoreCase{"LeastNUMANodes: two zones farther apart than the nearest pair score 76",
                  kNuma, kSingle, kContainer, {{4}, {1}, {4}, {1}}, {Guaranteed("a", 6000)}, 76},
        ScoreCase{"LeastNUMANodes scores on every policy", kNuma, TopologyPolicy::kNone,
                  kContainer, {{4}, {4}}, {Guaranteed("a", 4000)}, 94},
        ScoreCase{"LeastNUMANodes: a pod no set of zones fits scores 0", kNuma,
                  TopologyPolicy::kRestricted, kContainer, {{4}, {4}}, {Guaranteed("a", 9000)},
                  0},
        // a takes 3 of zone 0; b (3) then fits zone 1 alone.
        ScoreCase{"LeastNUMANodes container scope takes each container from the zones", kNuma,
                  kSingle, kContainer, {{4}, {4}}, {Guaranteed("a", 3000), Guaranteed("b", 3000)},
                  94},
        // a takes 3 of zone 0; b (5) needs zones 0 and 1.
        ScoreCase{"LeastNUMANodes container scope counts the widest container", kNuma, kSingle,
                  kContainer, {{4}, {4}}, {Guaranteed("a", 3000), Guaranteed("b", 5000)}, 82},
        ScoreCase{"LeastNUMANodes pod scope counts the pod's effective request", kNuma, kSingle,
                  kPod, {{4}, {4}}, {Guaranteed("a", 3000), Guaranteed("b", 3000)}, 82}),
    testing::SentenceName<ScoreCase>);

TEST(NrtScoreTest, APodThatIsNotGuaranteedScoresTheMaximumOnEveryStrategy) {
  for (NrtScoring s : {kLeast, kMost, kBalanced, kNuma}) {
    Harness h(Nrt(kSingle, kContainer, {{1}}), s);
    EXPECT_EQ(h.Score(PodOf({Burstable("a", 4000)})), kMaxNodeScore) << ToString(s);
  }
}

TEST(NrtScoreTest, ANodeWithoutNrtScoresZero) {
  Harness h(nullptr, kNuma);
  EXPECT_EQ(h.Score(PodOf({Guaranteed("a", 1000)})), 0);
}

TEST(NrtProfileTest, AddsThePluginToTheDefaultProfileAsFilterAndScore) {
  const Profile p = NrtProfile(NrtScoring::kLeastNumaNodes);
  Profile want = DefaultProfile();
  want.filters.push_back("NodeResourceTopologyMatch");
  want.scores.push_back({"NodeResourceTopologyMatch", 1});
  EXPECT_EQ(p.filters, want.filters);
  EXPECT_EQ(p.scores, want.scores);
  EXPECT_EQ(p.nrt_scoring, NrtScoring::kLeastNumaNodes);
  EXPECT_EQ(p.scheduler_name, "topo-aware-scheduler");
  EXPECT_EQ(Profile{}.nrt_scoring, NrtScoring::kLeastAllocated);  // scheduler-plugins' default
}

TEST(NrtProfileTest, StrategyNamesRoundTrip) {
  for (NrtScoring s : {kLeast, kMost, kBalanced, kNuma}) {
    EXPECT_EQ(ParseNrtScoring(ToString(s)), s);
  }
  EXPECT_EQ(ToString(kNuma), std::string("LeastNUMANodes"));
  EXPECT_EQ(ParseNrtScoring("leastnumanodes"), std::nullopt);
}

}  // namespace
}  // namespace huygens::sched
