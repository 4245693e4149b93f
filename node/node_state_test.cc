#include "node/node_state.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "topology/testing/machines.h"

namespace huygens {

// Reaches into a NodeState to break it on purpose, so that Validate has something to find.
class NodeStateTestPeer {
 public:
  static void AddStrayExclusive(NodeState& s, const CpuSet& cpus) {
    s.exclusive_ = s.exclusive_.Union(cpus);
  }
  static void SetContainerCpus(NodeState& s, const std::string& uid, size_t index,
                               const CpuSet& cpus) {
    s.pods_.at(uid).containers.at(index).cpuset = cpus;
  }
  static void BumpFreeCpus(NodeState& s, size_t numa_index) {
    ++s.counters_.at(numa_index).free_cpus;
  }
};

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr int64_t kGi = int64_t{1} << 30;

ContainerSpec Guaranteed(std::string name, int cpus) {
  return ContainerSpec{.name = std::move(name),
                       .cpu_request_milli = cpus * 1000,
                       .cpu_limit_milli = cpus * 1000,
                       .memory_request_bytes = kGi,
                       .memory_limit_bytes = kGi};
}

ContainerSpec InitC(ContainerSpec c, bool restartable = false) {
  c.init = true;
  c.restartable = restartable;
  return c;
}

ContainerSpec Burstable(std::string name, int64_t milli) {
  return ContainerSpec{.name = std::move(name), .cpu_request_milli = milli};
}

PodSpec Pod(std::string uid, std::vector<ContainerSpec> containers,
            std::vector<ContainerSpec> init = {}) {
  PodSpec p;
  p.uid = uid;
  p.namespace_name = "default";
  p.name = "pod-" + uid;
  p.containers = std::move(containers);
  p.init_containers = std::move(init);
  return p;
}

// DualSocketHT: NUMA node 0 = CPUs 0-5,12-17, NUMA node 1 = 6-11,18-23; siblings n / n+12.
// System pool {0,12} (core 0), so NUMA node 0 offers 10 user CPUs (cores 1-5), node 1 offers
// 12 (cores 6-11).
std::shared_ptr<const CpuTopology> DualSocket() {
  static auto topo = std::make_shared<const CpuTopology>(testing::DualSocketHT());
  return topo;
}

NodeConfig Config(TopologyScope scope = TopologyScope::kContainer) {
  NodeConfig c;
  c.name = "n1";
  c.system_cpus = CpuSet{0, 12};
  c.topology_scope = scope;
  return c;
}

// 2 sockets = 2 NUMA nodes of `cores` cores, no SMT: NUMA node n holds CPUs n*cores ...
std::shared_ptr<const CpuTopology> TwoNumaNoSmt(int cores) {
  return std::make_shared<const CpuTopology>(
      testing::BuildMachine({.sockets = 2, .cores_per_numa = cores, .threads_per_core = 1}));
}

NodeState MakeNode(NodeConfig config = Config(),
                   std::shared_ptr<const CpuTopology> topology = DualSocket()) {
  auto s = NodeState::Create(std::move(topology), std::move(config));
  EXPECT_TRUE(s.ok()) << s.status();
  return *std::move(s);
}

// The observable state, to check that a failed mutation changed nothing.
struct Snapshot {
  CpuSet exclusive;
  std::map<std::string, PodAllocation> pods;
  std::vector<NumaCounters> counters;
  int64_t shared_milli;
  friend bool operator==(const Snapshot&, const Snapshot&) = default;
};
Snapshot Snap(const NodeState& s) {
  return {s.ExclusiveCpus(), s.Pods(), s.Counters(), s.SharedRequestedMilli()};
}

bool WholeCores(const CpuTopology& topo, const CpuSet& cpus) {
  for (int cpu : cpus) {
    if (!topo.SiblingsOf(cpu).IsSubsetOf(cpus)) return false;
  }
  return true;
}

TEST(NodeStateCreate, AllocatableModeUserPoolIsEveryOnlineCpuMinusTheSystemPool) {
  NodeState s = MakeNode();
  EXPECT_EQ(s.SystemPool(), (CpuSet{0, 12}));
  EXPECT_EQ(s.UserPool(), CpuSet::Range(1, 23).Difference(CpuSet{12}));
  EXPECT_EQ(s.SharedPool(), s.UserPool());
  EXPECT_TRUE(s.ExclusiveCpus().Empty());
  ASSERT_EQ(s.Counters().size(), 2u);
  // Node 0: 10 user CPUs = cores 1-5 whole; node 1: 12 = cores 6-11.
  EXPECT_EQ(s.Counters()[0], (NumaCounters{0, 10, 10, 5, {{0, 10}}}));
  EXPECT_EQ(s.Counters()[1], (NumaCounters{1, 12, 12, 6, {{1, 12}}}));
  EXPECT_THAT(s.Validate(), IsEmpty());
}

TEST(NodeStateCreate, IsolatedModeUserPoolIsTheKernelsIsolatedCpus) {
  // DualSocketHT with CPUs 6-11,18-23 (NUMA node 1) isolated.
  CpuTopology base = testing::DualSocketHT();
  std::vector<CpuInfo> cpus = base.Cpus();
  for (CpuInfo& c : cpus) c.isolated = c.numa == 1;
  auto topo = CpuTopology::Create(cpus, base.NumaNodes(), base.Machine());
  ASSERT_TRUE(topo.ok()) << topo.status();
  NodeConfig config = Config();
  config.mode = NodeMode::kIsolated;
  auto s = NodeState::Create(std::make_shared<const CpuTopology>(*topo), config);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->UserPool(), CpuSet::Range(6, 11).Union(CpuSet::Range(18, 23)));
  EXPECT_EQ(s->Counters()[0].user_cpus, 0);
  EXPECT_EQ(s->Counters()[1].free_cores, 6);

  // A pod asking for isolated CPUs gets them from the isolated set; a container without any
  // is kubelet's business and left out.
  PodSpec pod = Pod("iso", {ContainerSpec{.name = "app", .isolated_cpus = 4},
                            ContainerSpec{.name = "helper", .cpu_request_milli = 500}});
  auto a = s->AllocatePod(pod);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->containers.size(), 1u);
  EXPECT_EQ(a->containers[0].name, "app");
  EXPECT_EQ(a->containers[0].cpuset.Size(), 4);
  EXPECT_TRUE(a->containers[0].cpuset.IsSubsetOf(s->UserPool()));
  EXPECT_THAT(s->Validate(), IsEmpty());

  // A Guaranteed cpu-only pod is not Huygens' in isolated mode.
  auto b = s->AllocatePod(Pod("plain", {Guaranteed("app", 2)}));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_THAT(b->containers, IsEmpty());
  EXPECT_EQ(s->ExclusiveCpus().Size(), 4);
}

TEST(NodeStateCreate, RejectsBadConfigurations) {
  struct Case {
    const char* name;
    std::shared_ptr<const CpuTopology> topo;
    CpuSet system;
    const char* error;
  };
  const std::vector<Case> cases = {
      {"null topology", nullptr, {}, "topology: null"},
      {"unknown system cpu", DualSocket(), CpuSet{0, 99}, "cpus 99 are not in the topology"},
      {"offline system cpu",
       std::make_shared<const CpuTopology>(testing::DualSocketHTWithOffline()), CpuSet{5},
       "cpus 5 are offline"},
  };
  for (const Case& c : cases) {
    NodeConfig config = Config();
    config.system_cpus = c.system;
    auto s = NodeState::Create(c.topo, config);
    ASSERT_FALSE(s.ok()) << c.name;
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(c.error)) << c.name;
  }
}

TEST(NodeStateAllocate, GuaranteedPodGetsWholeCoresOnTheBestFittingNumaNode) {
  NodeState s = MakeNode();
  auto a = s.AllocatePod(Pod("p1", {Guaranteed("app", 4)}));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->containers.size(), 1u);
  const ContainerAllocation& c = a->containers[0];
  // most-allocated picks the node offering fewest CPUs that fits (node 0: 10 < 12); full-cores
  // takes the lowest free cores there (1 and 2).
  EXPECT_EQ(c.cpuset, (CpuSet{1, 2, 13, 14}));
  EXPECT_EQ(c.mems, CpuSet{0});
  EXPECT_TRUE(c.exclusive);
  EXPECT_THAT(a->numa_nodes, ElementsAre(0));
  EXPECT_EQ(a->node, "n1");
  EXPECT_EQ(s.ExclusiveCpus(), c.cpuset);
  EXPECT_EQ(s.Counters()[0].free_cpus, 6);
  EXPECT_EQ(s.Counters()[0].free_cores, 3);
  EXPECT_EQ(s.Counters()[0].free_cpus_per_l3.at(0), 6);
  EXPECT_EQ(s.Pods().at("p1"), *a);
  EXPECT_THAT(s.Validate(), IsEmpty());
}

TEST(NodeStateAllocate, SharedPodRunsInTheSharedPoolAndCountsItsRequest) {
  NodeState s = MakeNode();
  ASSERT_TRUE(s.AllocatePod(Pod("ex", {Guaranteed("app", 4)})).ok());
  auto a = s.AllocatePod(Pod("sh", {Burstable("web", 1500), Burstable("log", 250)}));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->containers.size(), 2u);
  for (const ContainerAllocation& c : a->containers) {
    EXPECT_FALSE(c.exclusive);
    EXPECT_EQ(c.cpuset, s.SharedPool());
    EXPECT_EQ(c.mems, (CpuSet{0, 1}));
  }
  EXPECT_EQ(s.SharedRequestedMilli(), 1750);
  EXPECT_EQ(s.SharedCpusNeeded(), 2);
  EXPECT_EQ(s.FreeForExclusive(), 18 - 2);
  EXPECT_TRUE(a->numa_nodes.empty());
  EXPECT_THAT(s.Validate(), IsEmpty());
}

TEST(NodeStateAllocate, CpuPolicyNoneLeavesThePodUnmanaged) {
  NodeState s = MakeNode();
  PodSpec pod = Pod("none", {Guaranteed("app", 2)});
  pod.cpu_policy = CpuPolicy::kNone;
  auto a = s.AllocatePod(pod);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(a->containers, IsEmpty());
  EXPECT_EQ(s.SharedRequestedMilli(), 0);
  EXPECT_TRUE(s.ExclusiveCpus().Empty());
}

TEST(NodeStateAllocate, FailuresChangeNothing) {
  struct Case {
    const char* name;
    PodSpec pod;
    absl::StatusCode code;
    const char* error;
  };
  PodSpec dup = Pod("dup", {Guaranteed("app", 2), Guaranteed("app", 2)});
  PodSpec too_big = Pod("big", {Guaranteed("app", 14)});
  PodSpec odd = Pod("odd", {Guaranteed("app", 3)});
  PodSpec existing = Pod("base", {Guaranteed("x", 2)});
  PodSpec second_too_big = Pod("two", {Guaranteed("a", 4), Guaranteed("b", 14)});
  const std::vector<Case> cases = {
      {"a repeated container name", dup, absl::StatusCode::kInvalidArgument, "appears twice"},
      {"more CPUs than any NUMA node has", too_big, absl::StatusCode::kResourceExhausted,
       "pod default/pod-big (big): container \"app\""},
      {"an odd count under full-cores", odd, absl::StatusCode::kResourceExhausted,
       "container \"app\""},
      {"a uid already on the node", existing, absl::StatusCode::kAlreadyExists,
       "already allocated"},
      {"a later container that does not fit (the earlier one is rolled back)", second_too_big,
       absl::StatusCode::kResourceExhausted, "container \"b\""},
  };
  for (const Case& c : cases) {
    NodeState s = MakeNode();
    ASSERT_TRUE(s.AllocatePod(Pod("base", {Guaranteed("app", 4)})).ok());
    ASSERT_TRUE(s.AllocatePod(Pod("web", {Burstable("web", 500)})).ok());
    const Snapshot before = Snap(s);
    auto a = s.AllocatePod(c.pod);
    ASSERT_FALSE(a.ok()) << c.name;
    EXPECT_EQ(a.status().code(), c.code) << c.name << ": " << a.status();
    EXPECT_THAT(std::string(a.status().message()), HasSubstr(c.error)) << c.name;
    EXPECT_EQ(Snap(s), before) << c.name;
    EXPECT_THAT(s.Validate(), IsEmpty()) << c.name;
  }
}

TEST(NodeStateAllocate, ExclusiveCpusNeverShrinkTheSharedPoolBelowSharedRequests) {
  NodeState s = MakeNode();
  // 22 user CPUs; shared containers ask for 10.5 CPUs, so 11 must stay shared.
  ASSERT_TRUE(s.AllocatePod(Pod("web", {Burstable("web", 10500)})).ok());
  EXPECT_EQ(s.FreeForExclusive(), 11);
  ASSERT_TRUE(s.AllocatePod(Pod("a", {Guaranteed("app", 10)})).ok());  // leaves 12
  const Snapshot before = Snap(s);
  auto b = s.AllocatePod(Pod("b", {Guaranteed("app", 2)}));  // would leave 10 < 11
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(b.status().message()),
              HasSubstr("would leave 10 cpus in the shared pool of node \"n1\", below the 11"));
  EXPECT_EQ(Snap(s), before);
  // A shared pod that would overcommit the pool is refused the same way.
  auto c = s.AllocatePod(Pod("more-web", {Burstable("web", 2000)}));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(Snap(s), before);
}

TEST(NodeStateAllocate, APodThatFitsOneNumaNodeLandsOnOneUnderEitherScope) {
  // Two 6-CPU containers (node 0 has 10 user CPUs, node 1 has 12). Each container alone would
  // fit node 0 best, and the second would then go to node 1; but the pod's 12 CPUs fit node 1,
  // so under scope container too both containers are placed there first.
  PodSpec pod = Pod("p", {Guaranteed("a", 6), Guaranteed("b", 6)});
  for (TopologyScope scope : {TopologyScope::kContainer, TopologyScope::kPod}) {
    NodeState s = MakeNode(Config(scope));
    auto a = s.AllocatePod(pod);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(a->containers[0].mems, CpuSet{1});
    EXPECT_EQ(a->containers[1].mems, CpuSet{1});
    EXPECT_THAT(a->numa_nodes, ElementsAre(1));
    EXPECT_FALSE(a->containers[0].cpuset.Intersects(a->containers[1].cpuset));
    EXPECT_THAT(s.Validate(), IsEmpty());
  }
}

TEST(NodeStateAllocate, PodScopeMakesOneNumaDecisionForThePod) {
  // 6 + 8 CPUs fit no single NUMA node. Scope container: each container is placed alone, 6 on
  // node 0 (best fit), 8 on node 1. Scope pod (single-numa-node): the pod is refused.
  PodSpec pod = Pod("p", {Guaranteed("a", 6), Guaranteed("b", 8)});
  {
    NodeState s = MakeNode(Config(TopologyScope::kContainer));
    auto a = s.AllocatePod(pod);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(a->containers[0].mems, CpuSet{0});
    EXPECT_EQ(a->containers[1].mems, CpuSet{1});
    EXPECT_THAT(a->numa_nodes, ElementsAre(0, 1));
    EXPECT_THAT(s.Validate(), IsEmpty());
  }
  {
    NodeState s = MakeNode(Config(TopologyScope::kPod));
    auto a = s.AllocatePod(pod);
    ASSERT_FALSE(a.ok());
    EXPECT_EQ(a.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_THAT(std::string(a.status().message()), HasSubstr("pod scope"));
  }
}

TEST(NodeStateAllocate, NearNumaNodesPullAnAffinityGroupTogether) {
  NodeState s = MakeNode();
  // Without a preference, 2 CPUs go to node 0 (best fit); near node 1 they go to node 1.
  auto a = s.AllocatePod(Pod("a", {Guaranteed("app", 2)}), {1});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(a->numa_nodes, ElementsAre(1));
}

// ---- Init containers and sidecars (kubelet's reuse rules) -----------------------------------

// Packed, scope container: the app's odd CPU leaves a half core; the proxy takes its sibling
// (kubelet's take fills a partly used core first) rather than a thread of a free core, which
// would leave a second half core for another pod to share.
TEST(NodeStateAllocate, ASecondContainerFillsTheHalfCoreTheFirstLeft) {
  NodeConfig config = Config();
  config.default_bind_policy = BindPolicy::kPacked;
  NodeState s = MakeNode(config);
  auto a = s.AllocatePod(Pod("p", {Guaranteed("app", 3), Guaranteed("proxy", 1)}));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->containers.size(), 2u);
  const CpuSet& app = a->containers[0].cpuset;
  const CpuSet& proxy = a->containers[1].cpuset;
  ASSERT_EQ(app.Size(), 3);
  ASSERT_EQ(proxy.Size(), 1);
  const CpuTopology& topo = *DualSocket();
  const CpuSet pod = app.Union(proxy);
  EXPECT_TRUE(WholeCores(topo, pod)) << "app " << app << ", proxy " << proxy;
  EXPECT_THAT(a->numa_nodes, ElementsAre(0));
  EXPECT_EQ(s.Counters()[0].free_cores, 3);  // cores 1-5 less the pod's two
  EXPECT_THAT(s.Validate(), IsEmpty());
}

TEST(NodeStateAllocate, AnOddCpuFillsTheThreadBesideTheSystemPoolAndTheCountersFollow) {
  NodeConfig config = Config();
  config.system_cpus = CpuSet{0};  // core 0's other thread, CPU 12, is a user CPU
  config.default_bind_policy = BindPolicy::kPacked;
  NodeState s = MakeNode(config);
  // NUMA node 0: cores 1-5 whole and CPU 12 alone beside the system pool; node 1: cores 6-11.
  EXPECT_EQ(s.Counters()[0], (NumaCounters{0, 11, 11, 5, {{0, 11}}, 1}));
  EXPECT_EQ(s.Counters()[1].unshared_threads, 0);
  auto a = s.AllocatePod(Pod("p1", {Guaranteed("app", 3)}));
  ASSERT_TRUE(a.ok()) << a.status();
  // One whole core and CPU 12 (kubelet's take fills that core first); a thread of core 2
  // would leave its sibling for the next odd CPU to share with p1.
  EXPECT_EQ(a->containers[0].cpuset, (CpuSet{1, 12, 13}));
  EXPECT_EQ(s.Counters()[0].unshared_threads, 0);
  EXPECT_EQ(s.Counters()[0].free_cores, 4);
  EXPECT_THAT(s.Validate(), IsEmpty());
  ASSERT_TRUE(s.ReleasePod("p1").ok());
  EXPECT_EQ(s.Counters()[0].unshared_threads, 1);
  EXPECT_THAT(s.Validate(), IsEmpty());
}

TEST(NodeStateInit, AppContainerReusesTheInitContainersCpus) {
  NodeState s = MakeNode();
  auto a = s.AllocatePod(Pod("p", {Guaranteed("app", 4)}, {InitC(Guaranteed("init", 4))}));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->containers.size(), 2u);
  EXPECT_TRUE(a->containers[0].init);
  EXPECT_EQ(a->containers[0].cpuset, a->containers[1].cpuset);
  EXPECT_EQ(s.ExclusiveCpus().Size(), 4);
  EXPECT_THAT(s.Validate(), IsEmpty());
}

TEST(NodeStateInit, LargerInitContainerReleasesOnlyWhatNoSiblingTookOver) {
  NodeState s = MakeNode();
  auto a = s.AllocatePod(Pod("p", {Guaranteed("app", 4)}, {InitC(Guaranteed("init", 6))}));
  ASSERT_TRUE(a.ok()) << a.status();
  const CpuSet init = a->containers[0].cpuset;
  const CpuSet app = a->containers[1].cpuset;
  EXPECT_EQ(init.Size(), 6);
  EXPECT_TRUE(app.IsSubsetOf(init));
  EXPECT_EQ(s.ExclusiveCpus(), init);
  // kubelet's RemoveContainer with getAssignedCPUsOfSiblings: the app keeps its four.
  ASSERT_TRUE(s.ReleaseContainer("p", "init").ok());
  EXPECT_EQ(s.ExclusiveCpus(), app);
  EXPECT_THAT(s.Validate(), IsEmpty());
}

TEST(NodeStateInit, SidecarKeepsItsCpusWhileTheAppStartsOnOthers) {
  NodeState s = MakeNode();
  PodSpec pod = Pod("p", {Guaranteed("app", 2)},
                    {InitC(Guaranteed("setup", 2)), InitC(Guaranteed("proxy", 2), true)});
  auto a = s.AllocatePod(pod);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->containers.size(), 3u);
  const ContainerAllocation& setup = a->containers[0];
  const ContainerAllocation& proxy = a->containers[1];
  const ContainerAllocation& app = a->containers[2];
  EXPECT_TRUE(proxy.restartable);
  // The sidecar may reuse the finished setup container's CPUs; the app may not reuse the
  // sidecar's (it runs alongside), so the pod holds kubelet's pod-level count: max(2, 2+2).
  EXPECT_EQ(proxy.cpuset, setup.cpuset);
  EXPECT_FALSE(app.cpuset.Intersects(proxy.cpuset));
  EXPECT_EQ(s.ExclusiveCpus().Size(), 4);
  EXPECT_EQ(CpuDemandOf(pod, NodeMode::kAllocatable).exclusive_cpus, 4);
  EXPECT_THAT(s.Validate(), IsEmpty());
}

TEST(NodeStateInit, InitContainerAfterASidecarDoesNotReuseTheSidecarsCpus) {
  NodeState s = MakeNode();
  PodSpec pod = Pod("p", {Guaranteed("app", 2)},
                    {InitC(Guaranteed("proxy", 2), true), InitC(Guaranteed("migrate", 4))});
  auto a = s.AllocatePod(pod);
  ASSERT_TRUE(a.ok()) << a.status();
  const ContainerAllocation& proxy = a->containers[0];
  const ContainerAllocation& migrate = a->containers[1];
  const ContainerAllocation& app = a->containers[2];
  EXPECT_FALSE(migrate.cpuset.Intersects(proxy.cpuset));
  EXPECT_TRUE(app.cpuset.IsSubsetOf(migrate.cpuset));
  EXPECT_EQ(s.ExclusiveCpus().Size(), 6);  // max(2 + 4, 2 + 2)
  EXPECT_EQ(CpuDemandOf(pod, NodeMode::kAllocatable).exclusive_cpus, 6);
}

// kubelet#123816: 2 NUMA nodes of 8 CPUs, NUMA node 0 holding 7 for another pod. kubelet's
// order would put the 1-CPU init container on NUMA node 0's last CPU and the 8-CPU app on
// NUMA node 1, so the pod would hold 9 CPUs for its whole life. The init container runs inside
// the app's CPUs instead: the pod holds kubelet's pod-level count, max(1, 8), and NUMA node
// 0's last CPU takes a 1-CPU pod.
TEST(NodeStateInit, AnInitContainerThatCannotReuseLaterCpusRunsInsideThem) {
  auto topo = TwoNumaNoSmt(8);
  NodeConfig config;
  config.name = "n1";
  config.default_bind_policy = BindPolicy::kPacked;
  NodeState s = MakeNode(config, topo);
  auto seven = s.AllocatePod(Pod("seven", {Guaranteed("app", 7)}));
  ASSERT_TRUE(seven.ok()) << seven.status();
  ASSERT_EQ(seven->numa_nodes, std::vector<int>{0});
  PodSpec pod = Pod("p", {Guaranteed("app", 8)}, {InitC(Guaranteed("init", 1))});
  auto a = s.AllocatePod(pod);
  ASSERT_TRUE(a.ok()) << a.status();
  const CpuSet init = a->containers[0].cpuset;
  const CpuSet app = a->containers[1].cpuset;
  EXPECT_EQ(app, topo->CpusInNumaNode(1));
  EXPECT_TRUE(init.IsSubsetOf(app)) << init.ToString();
  EXPECT_EQ(a->numa_nodes, std::vector<int>{1});
  EXPECT_EQ(s.ExclusiveCpus().Size(), 7 + CpuDemandOf(pod, NodeMode::kAllocatable).exclusive_cpus);
  auto one = s.AllocatePod(Pod("one", {Guaranteed("app", 1)}));
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->numa_nodes, std::vector<int>{0});
  EXPECT_THAT(s.Validate(), IsEmpty());
}

// kubelet#132187: reserved CPUs 0 and 4 on 2 NUMA nodes of 4 CPUs, restricted. By online CPUs
// one NUMA node would be the preferred size for 4 CPUs (kubelet's sizing), but it has only 3
// user CPUs; NodeState sizes by the user pool, as the scheduler's NUMA filter does, so the
// 2-node set is preferred and the pod is admitted.
TEST(NodeStateAllocate, RestrictedSizesThePreferredNumaSetByTheUserPool) {
  NodeConfig config;
  config.name = "n1";
  config.system_cpus = CpuSet{0, 4};
  config.topology_policy = TopologyPolicy::kRestricted;
  NodeState s = MakeNode(config, TwoNumaNoSmt(4));
  auto a = s.AllocatePod(Pod("big", {Guaranteed("app", 4)}));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->numa_nodes, (std::vector<int>{0, 1}));
  EXPECT_EQ(a->containers[0].cpuset.Size(), 4);
}

// ---- Release -------------------------------------------------------------------------------

TEST(NodeStateRelease, ReleasingEveryPodRestoresTheEmptyNode) {
  NodeState s = MakeNode();
  const Snapshot empty = Snap(s);
  ASSERT_TRUE(s.AllocatePod(Pod("a", {Guaranteed("app", 4)})).ok());
  ASSERT_TRUE(s.AllocatePod(Pod("b", {Guaranteed("app", 6), Burstable("side", 300)})).ok());
  ASSERT_TRUE(s.ReleasePod("a").ok());
  ASSERT_TRUE(s.ReleasePod("b").ok());
  EXPECT_EQ(Snap(s), empty);
  EXPECT_EQ(s.ReleasePod("a").code(), absl::StatusCode::kNotFound);
}

TEST(NodeStateRelease, ReleasingASharedContainerStopsCountingItsRequest) {
  NodeState s = MakeNode();
  ASSERT_TRUE(s.AllocatePod(Pod("w", {Burstable("web", 700), Burstable("log", 100)})).ok());
  ASSERT_TRUE(s.ReleaseContainer("w", "log").ok());
  EXPECT_EQ(s.SharedRequestedMilli(), 700);
  ASSERT_TRUE(s.ReleaseContainer("w", "web").ok());
  EXPECT_EQ(s.SharedRequestedMilli(), 0);
  EXPECT_TRUE(s.Pods().empty());  // the last container took the pod with it
  EXPECT_EQ(s.ReleaseContainer("w", "web").code(), absl::StatusCode::kNotFound);
}

// ---- Resize --------------------------------------------------------------------------------

TEST(NodeStateResize, GrowKeepsEveryCpuAndStaysOnTheNumaNode) {
  NodeState s = MakeNode();
  auto a = s.AllocatePod(Pod("p", {Guaranteed("app", 4)}));
  ASSERT_TRUE(a.ok());
  const CpuSet before = a->containers[0].cpuset;
  auto grown = s.ResizeContainer("p", "app", 8);
  ASSERT_TRUE(grown.ok()) << grown.status();
  EXPECT_EQ(grown->Size(), 8);
  EXPECT_TRUE(before.IsSubsetOf(*grown));
  EXPECT_TRUE(grown->IsSubsetOf(DualSocket()->CpusInNumaNode(0)));
  EXPECT_TRUE(WholeCores(*DualSocket(), *grown));
  EXPECT_EQ(s.Pods().at("p").containers[0].cpuset, *grown);
  EXPECT_EQ(s.ExclusiveCpus(), *grown);
  EXPECT_THAT(s.Validate(), IsEmpty());
}

TEST(NodeStateResize, ShrinkKeepsASubsetOfWholeCores) {
  NodeState s = MakeNode();
  ASSERT_TRUE(s.AllocatePod(Pod("p", {Guaranteed("app", 8)})).ok());
  const CpuSet before = s.Pods().at("p").containers[0].cpuset;
  auto shrunk = s.ResizeContainer("p", "app", 4);
  ASSERT_TRUE(shrunk.ok()) << shrunk.status();
  EXPECT_EQ(shrunk->Size(), 4);
  EXPECT_TRUE(shrunk->IsSubsetOf(before));
  EXPECT_TRUE(WholeCores(*DualSocket(), *shrunk));
  EXPECT_EQ(s.ExclusiveCpus(), *shrunk);
  EXPECT_THAT(s.Validate(), IsEmpty());
}

TEST(NodeStateResize, RefusalsChangeNothing) {
  struct Case {
    const char* name;
    std::string pod;
    std::string container;
    int cpus;
    absl::StatusCode code;
  };
  const std::vector<Case> cases = {
      {"unknown pod", "nope", "app", 4, absl::StatusCode::kNotFound},
      {"unknown container", "p", "nope", 4, absl::StatusCode::kNotFound},
      {"zero cpus", "p", "app", 0, absl::StatusCode::kInvalidArgument},
      {"shared container", "w", "web", 2, absl::StatusCode::kFailedPrecondition},
      {"half a core under full-cores", "p", "app", 3, absl::StatusCode::kFailedPrecondition},
      {"more than the NUMA node has (single-numa-node)", "p", "app", 12,
       absl::StatusCode::kResourceExhausted},
  };
  for (const Case& c : cases) {
    NodeState s = MakeNode();
    ASSERT_TRUE(s.AllocatePod(Pod("p", {Guaranteed("app", 4)})).ok());
    ASSERT_TRUE(s.AllocatePod(Pod("w", {Burstable("web", 500)})).ok());
    const Snapshot before = Snap(s);
    auto r = s.ResizeContainer(c.pod, c.container, c.cpus);
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_EQ(r.status().code(), c.code) << c.name << ": " << r.status();
    EXPECT_EQ(Snap(s), before) << c.name;
  }
}

TEST(NodeStateResize, GrowUnderBestEffortTopsUpFromAnotherNumaNodeOnlyWhenItMust) {
  NodeConfig config = Config();
  config.topology_policy = TopologyPolicy::kBestEffort;
  NodeState s = MakeNode(config);
  auto a = s.AllocatePod(Pod("p", {Guaranteed("app", 6)}));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->numa_nodes, std::vector<int>{0});  // best fit: 10 user CPUs on node 0
  const CpuSet before = a->containers[0].cpuset;
  auto grown = s.ResizeContainer("p", "app", 12);  // node 0 has 4 left: 4 there, 2 on node 1
  ASSERT_TRUE(grown.ok()) << grown.status();
  EXPECT_TRUE(before.IsSubsetOf(*grown));
  EXPECT_EQ(grown->Intersection(DualSocket()->CpusInNumaNode(0)).Size(), 10);
  EXPECT_EQ(s.Pods().at("p").containers[0].mems, (CpuSet{0, 1}));
  EXPECT_EQ(s.Pods().at("p").numa_nodes, (std::vector<int>{0, 1}));
  EXPECT_THAT(s.Validate(), IsEmpty());
}

TEST(NodeStateResize, AShrinkReturnsCpusThatANewPodCanTake) {
  NodeState s = MakeNode();
  ASSERT_TRUE(s.AllocatePod(Pod("p", {Guaranteed("app", 10)})).ok());  // all of NUMA node 0
  ASSERT_TRUE(s.AllocatePod(Pod("q", {Guaranteed("app", 12)})).ok());  // all of NUMA node 1
  ASSERT_FALSE(s.AllocatePod(Pod("r", {Guaranteed("app", 4)})).ok());
  ASSERT_TRUE(s.ResizeContainer("p", "app", 6).ok());
  auto r = s.AllocatePod(Pod("r", {Guaranteed("app", 4)}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->numa_nodes, std::vector<int>{0});
  EXPECT_FALSE(r->containers[0].cpuset.Intersects(s.Pods().at("p").containers[0].cpuset));
  EXPECT_THAT(s.Validate(), IsEmpty());
}

// ---- Assume --------------------------------------------------------------------------------

PodAllocation Alloc(std::string uid, std::vector<ContainerAllocation> containers) {
  PodAllocation a;
  a.pod_uid = std::move(uid);
  a.node = "n1";
  a.containers = std::move(containers);
  return a;
}

ContainerAllocation Ex(std::string name, CpuSet cpus, bool init = false, bool restartable = false) {
  ContainerAllocation c;
  c.name = std::move(name);
  c.cpuset = std::move(cpus);
  c.mems = CpuSet{0};
  c.init = init;
  c.restartable = restartable;
  return c;
}

TEST(NodeStateAssume, TakesAConsistentAllocationAsIs) {
  NodeState s = MakeNode();
  PodSpec pod = Pod("p", {Guaranteed("app", 2)}, {InitC(Guaranteed("init", 2))});
  PodAllocation a = Alloc("p", {Ex("init", CpuSet{3, 15}, true), Ex("app", CpuSet{3, 15})});
  ASSERT_TRUE(s.Assume(pod, a).ok());
  EXPECT_EQ(s.ExclusiveCpus(), (CpuSet{3, 15}));
  EXPECT_EQ(s.Counters()[0].free_cores, 4);
  EXPECT_THAT(s.Validate(), IsEmpty());
}

TEST(NodeStateReplaceAllocation, MovesAPodIntoFreeOrItsOwnCpusAndRefusesAnotherPodsCpus) {
  NodeState s = MakeNode();
  PodSpec p = Pod("p", {Guaranteed("app", 2)});
  PodSpec q = Pod("q", {Guaranteed("app", 2)});
  ASSERT_TRUE(s.Assume(p, Alloc("p", {Ex("app", CpuSet{3, 15})})).ok());
  ASSERT_TRUE(s.Assume(q, Alloc("q", {Ex("app", CpuSet{4, 16})})).ok());

  // Onto q's CPUs: refused, nothing changed.
  absl::Status refused = s.ReplaceAllocation("p", Alloc("p", {Ex("app", CpuSet{3, 4})}));
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
  EXPECT_EQ(s.Pods().at("p").containers[0].cpuset, (CpuSet{3, 15}));
  EXPECT_EQ(s.ExclusiveCpus(), (CpuSet{3, 4, 15, 16}));

  // Half its own, half free: taken; the CPU it left is free again.
  ASSERT_TRUE(s.ReplaceAllocation("p", Alloc("p", {Ex("app", CpuSet{3, 5})})).ok());
  EXPECT_EQ(s.ExclusiveCpus(), (CpuSet{3, 4, 5, 16}));
  EXPECT_EQ(*s.SpecOf("p"), p);
  EXPECT_THAT(s.Validate(), IsEmpty());
  EXPECT_EQ(s.ReplaceAllocation("ghost", Alloc("ghost", {})).code(), absl::StatusCode::kNotFound);
}

TEST(NodeStateAssume, RejectsWhatWouldBreakAnInvariant) {
  struct Case {
    const char* name;
    PodSpec pod;
    PodAllocation alloc;
    const char* error;
  };
  PodSpec one = Pod("q", {Guaranteed("app", 2)});
  PodSpec two = Pod("q", {Guaranteed("a", 2), Guaranteed("b", 2)});
  PodSpec with_init = Pod("q", {Guaranteed("app", 2)}, {InitC(Guaranteed("init", 2))});
  PodSpec with_sidecar = Pod("q", {Guaranteed("app", 2)}, {InitC(Guaranteed("proxy", 2), true)});
  PodAllocation other_node = Alloc("q", {Ex("app", CpuSet{8})});
  other_node.node = "n2";
  const std::vector<Case> cases = {
      {"a cpu held by another pod", one, Alloc("q", {Ex("app", CpuSet{4, 5})}),
       "cpus 4 are held by pod(s) held"},
      {"a system-pool cpu", one, Alloc("q", {Ex("app", CpuSet{0, 1})}),
       "cpus 0 are in the system pool"},
      {"an unknown cpu", one, Alloc("q", {Ex("app", CpuSet{1, 99})}),
       "cpus 99 do not exist on this machine"},
      {"a container the spec lacks", one, Alloc("q", {Ex("ghost", CpuSet{8})}),
       "container \"ghost\": not in the pod spec"},
      {"an allocation for another node", one, other_node, "\"n2\" is not this node"},
      {"init flags that differ from the spec", with_init,
       Alloc("q", {Ex("init", CpuSet{8}, false), Ex("app", CpuSet{9})}),
       "init=false restartable=false but the pod spec says init=true"},
      {"two app containers sharing a cpu", two,
       Alloc("q", {Ex("a", CpuSet{8, 9}), Ex("b", CpuSet{9, 10})}),
       "containers \"a\" and \"b\" run together and both hold cpus 9"},
      {"an app container sharing a sidecar's cpu", with_sidecar,
       Alloc("q", {Ex("proxy", CpuSet{8}, true, true), Ex("app", CpuSet{8})}),
       "containers \"proxy\" and \"app\" run together"},
      {"containers out of spec order", with_init,
       Alloc("q", {Ex("app", CpuSet{9}), Ex("init", CpuSet{8}, true)}), "out of spec order"},
      {"an empty exclusive cpuset", one, Alloc("q", {Ex("app", CpuSet{})}), "cpuset is empty"},
      {"a pod already on the node", Pod("held", {Guaranteed("app", 2)}),
       Alloc("held", {Ex("app", CpuSet{8})}), "already allocated"},
  };
  for (const Case& c : cases) {
    NodeState s = MakeNode();
    ASSERT_TRUE(s.Assume(Pod("held", {Guaranteed("app", 2)}),
                         Alloc("held", {Ex("app", CpuSet{4, 16})}))
                    .ok());
    const Snapshot before = Snap(s);
    absl::Status st = s.Assume(c.pod, c.alloc);
    ASSERT_FALSE(st.ok()) << c.name;
    EXPECT_THAT(std::string(st.message()), HasSubstr(c.error)) << c.name;
    EXPECT_EQ(Snap(s), before) << c.name;
  }
}

TEST(NodeStateAssume, RejectsOfflineCpus) {
  auto topo = std::make_shared<const CpuTopology>(testing::DualSocketHTWithOffline());
  auto s = NodeState::Create(topo, Config());
  ASSERT_TRUE(s.ok());
  absl::Status st = s->Assume(Pod("q", {Guaranteed("app", 2)}),
                              Alloc("q", {Ex("app", CpuSet{4, 5})}));
  EXPECT_THAT(std::string(st.message()), HasSubstr("cpus 5 are offline"));
}

ContainerAllocation Shared(std::string name) {
  ContainerAllocation c;
  c.name = std::move(name);
  c.exclusive = false;
  return c;
}

// ---- Rebuild -------------------------------------------------------------------------------

TEST(NodeStateRebuild, ConflictingAndMalformedPodsAreReportedTheRestRebuilt) {
  std::vector<std::pair<PodSpec, PodAllocation>> pods = {
      {Pod("a", {Guaranteed("app", 2)}), Alloc("a", {Ex("app", CpuSet{1, 13})})},
      {Pod("b", {Guaranteed("app", 2)}), Alloc("b", {Ex("app", CpuSet{2, 14})})},
      {Pod("c", {Guaranteed("app", 2)}), Alloc("c", {Ex("app", CpuSet{2, 3})})},
      {Pod("d", {Guaranteed("app", 2)}), Alloc("d", {Ex("app", CpuSet{0, 12})})},
      {Pod("e", {Guaranteed("app", 2)}), Alloc("e", {Ex("app", CpuSet{6, 18})})},
      {Pod("e", {Guaranteed("app", 2)}), Alloc("e", {Ex("app", CpuSet{7, 19})})},
      {Pod("f", {Burstable("web", 1200)}),
       Alloc("f", {Shared("web")})},
  };
  NodeState s = MakeNode();
  ASSERT_TRUE(s.AllocatePod(Pod("old", {Guaranteed("app", 8)})).ok());  // replaced by Rebuild
  NodeState::RebuildReport r = s.Rebuild(pods);
  EXPECT_EQ(r.rebuilt, 2);  // a and f
  ASSERT_EQ(r.rejected.size(), 4u);
  EXPECT_EQ(r.rejected[0].first, "b");
  EXPECT_THAT(r.rejected[0].second, HasSubstr("cpus 2 are also claimed by pod(s) c (cpus 2)"));
  EXPECT_EQ(r.rejected[1].first, "c");
  EXPECT_THAT(r.rejected[1].second, HasSubstr("also claimed by pod(s) b"));
  EXPECT_EQ(r.rejected[2].first, "d");
  EXPECT_THAT(r.rejected[2].second, HasSubstr("system pool"));
  EXPECT_EQ(r.rejected[3].first, "e");
  EXPECT_THAT(r.rejected[3].second, HasSubstr("appears 2 times"));
  EXPECT_EQ(s.ExclusiveCpus(), (CpuSet{1, 13}));
  EXPECT_EQ(s.SharedRequestedMilli(), 1200);
  EXPECT_THAT(s.Validate(), IsEmpty());

  // The outcome does not depend on the order of the input.
  std::reverse(pods.begin(), pods.end());
  NodeState t = MakeNode();
  NodeState::RebuildReport r2 = t.Rebuild(pods);
  EXPECT_EQ(r2.rebuilt, r.rebuilt);
  EXPECT_EQ(r2.rejected.size(), r.rejected.size());
  for (size_t i = 0; i < r.rejected.size(); ++i) {
    EXPECT_EQ(r2.rejected[i].first, r.rejected[i].first);
  }
  EXPECT_EQ(Snap(t), Snap(s));
}

// ---- Validate -------------------------------------------------------------------------------

TEST(NodeStateValidate, ReportsEachBrokenInvariantWithItsCpus) {
  struct Case {
    const char* name;
    void (*corrupt)(NodeState&);
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"a stray exclusive cpu",
       [](NodeState& s) { NodeStateTestPeer::AddStrayExclusive(s, CpuSet{20}); },
       "stray: 20"},
      {"two pods holding one cpu",
       [](NodeState& s) {
         NodeStateTestPeer::SetContainerCpus(s, "b", 0, s.Pods().at("a").containers[0].cpuset);
       },
       "pods a and b both hold cpus"},
      {"a container on a system-pool cpu",
       [](NodeState& s) { NodeStateTestPeer::SetContainerCpus(s, "a", 0, CpuSet{0, 12}); },
       "container \"app\" holds system-pool cpus 0,12"},
      {"counters out of step",
       [](NodeState& s) { NodeStateTestPeer::BumpFreeCpus(s, 1); }, "NUMA node 1: counters"},
  };
  for (const Case& c : cases) {
    NodeState s = MakeNode();
    ASSERT_TRUE(s.AllocatePod(Pod("a", {Guaranteed("app", 2)})).ok());
    ASSERT_TRUE(s.AllocatePod(Pod("b", {Guaranteed("app", 2)})).ok());
    ASSERT_THAT(s.Validate(), IsEmpty());
    c.corrupt(s);
    const std::vector<std::string> v = s.Validate();
    EXPECT_THAT(v, Contains(HasSubstr(c.expect))) << c.name << ": "
                                                  << ::testing::PrintToString(v);
  }
}

// Counters are incremental; after any sequence of operations they equal a recount (Validate
// checks exactly that, along with every other invariant).
TEST(NodeStateProperty, RandomOperationsKeepEveryInvariant) {
  std::mt19937 rng(42);
  auto topo = std::make_shared<const CpuTopology>(testing::DualSocketMultiNumaPerSocketHT());
  NodeConfig config;
  config.name = "n1";
  config.system_cpus = CpuSet{0, 16};
  config.default_bind_policy = BindPolicy::kPacked;
  config.topology_policy = TopologyPolicy::kBestEffort;
  auto made = NodeState::Create(topo, config);
  ASSERT_TRUE(made.ok());
  NodeState s = *std::move(made);
  int next = 0;
  for (int step = 0; step < 400; ++step) {
    const int op = static_cast<int>(rng() % 4);
    if (op <= 1 || s.Pods().empty()) {
      const int n = 1 + static_cast<int>(rng() % 5);
      PodSpec pod = Pod(std::to_string(next++), {Guaranteed("app", n)});
      if (rng() % 3 == 0) pod.init_containers.push_back(InitC(Guaranteed("init", 1 + n)));
      if (rng() % 4 == 0) pod.containers.push_back(Guaranteed("second", 1));
      (void)s.AllocatePod(pod);
    } else {
      auto it = s.Pods().begin();
      std::advance(it, static_cast<long>(rng() % s.Pods().size()));
      const std::string uid = it->first;
      if (op == 2) {
        ASSERT_TRUE(s.ReleasePod(uid).ok());
      } else if (!it->second.containers.empty()) {
        const std::string name = it->second.containers.back().name;
        (void)s.ResizeContainer(uid, name, 1 + static_cast<int>(rng() % 6));
      }
    }
    ASSERT_THAT(s.Validate(), IsEmpty()) << "step " << step;
  }
}

}  // namespace
}  // namespace huygens
