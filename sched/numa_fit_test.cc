// NumaFit and NumaView against their references:
//   - NumaView::KubeletAdmits gives kubelet's topology-manager answer: the same as
//     CpuHintsFromCounts + MergeHints (alloc/, kubelet-exact) for every policy, on several
//     machines and random states;
//   - NumaFit passes a single-container exclusive pod exactly when NodeState::AllocatePod
//     (what Reserve runs) succeeds, for every topology policy, scope and bind policy;
//   - the reason strings.
#include <algorithm>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "alloc/hints.h"
#include "alloc/merge.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sched/numa_view.h"
#include "sched/plugins.h"
#include "sched/test_util.h"
#include "topology/testing/machines.h"

namespace huygens::sched {
namespace {

using testing::GuaranteedPod;
using testing::Share;

struct NamedMachine {
  std::string name;
  std::shared_ptr<const CpuTopology> topo;
};

std::vector<NamedMachine> Machines() {
  using namespace huygens::testing;
  return {
      {"DualSocketHT", std::make_shared<const CpuTopology>(DualSocketHT())},
      {"DualSocketMultiNumaPerSocketHT",
       std::make_shared<const CpuTopology>(DualSocketMultiNumaPerSocketHT())},
      {"QuadSocket4NumaSMT", std::make_shared<const CpuTopology>(QuadSocket4NumaSMT())},
      {"SparseNumaIds", std::make_shared<const CpuTopology>(SparseNumaIds())},
      {"EpycLikeSplitL3", std::make_shared<const CpuTopology>(EpycLikeSplitL3())},
  };
}

constexpr TopologyPolicy kPolicies[] = {TopologyPolicy::kNone, TopologyPolicy::kBestEffort,
                                        TopologyPolicy::kRestricted,
                                        TopologyPolicy::kSingleNumaNode};
constexpr BindPolicy kBinds[] = {BindPolicy::kPacked, BindPolicy::kFullCores,
                                 BindPolicy::kSpreadCores};

// A node state judged with `config`, holding random exclusive pods: each takes a random subset
// of the free CPUs (so cores end up split and NUMA nodes unevenly used), assumed as if another
// scheduler replica had decided it.
NodeState RandomState(const std::shared_ptr<const CpuTopology>& topo, NodeConfig config,
                      std::mt19937& rng) {
  absl::StatusOr<NodeState> state = NodeState::Create(topo, std::move(config));
  EXPECT_TRUE(state.ok());
  const int target = std::uniform_int_distribution<int>(0, topo->NumCpus())(rng);
  for (int i = 0; state->ExclusiveCpus().Size() < target; ++i) {
    std::vector<int> free = state->SharedPool().ToVector();
    std::shuffle(free.begin(), free.end(), rng);
    const int take = std::min<int>(static_cast<int>(free.size()),
                                   std::uniform_int_distribution<int>(1, 9)(rng));
    if (take == 0) break;
    const CpuSet cpus = *CpuSet::FromIds(std::span<const int>(free.data(), static_cast<size_t>(take)));
    const std::string uid = fmt::format("fill-{}", i);
    PodAllocation a;
    a.pod_uid = uid;
    a.numa_nodes = topo->NumaNodesOf(cpus);
    CpuSet::Builder mems;
    for (int numa : a.numa_nodes) mems.Add(numa);
    a.containers.push_back({"app", cpus, mems.Build(), false, false, true});
    EXPECT_TRUE(state->Assume(GuaranteedPod(uid, take).spec, a).ok());
  }
  return *std::move(state);
}

TEST(NumaView, KubeletAdmitsAgreesWithTheTopologyManagerOnEveryPolicy) {
  std::mt19937 rng(7);
  int checked = 0;
  for (const NamedMachine& m : Machines()) {
    for (int round = 0; round < 25; ++round) {
      NodeState state = RandomState(m.topo, {}, rng);
      const NumaView view(state, BindPolicy::kPacked);
      std::vector<NumaCounts> counts;
      for (const NumaCounters& c : state.Counters()) {
        counts.push_back({c.numa, c.user_cpus, c.free_cpus});
      }
      const std::vector<int> numa_ids = m.topo->NumaNodeIds();
      for (TopologyPolicy policy : kPolicies) {
        for (int cpus = 1; cpus <= m.topo->NumCpus(); ++cpus) {
          std::vector<std::map<std::string, ProviderHints>> providers = {
              {{"cpu", CpuHintsFromCounts(counts, cpus)}}};
          absl::StatusOr<MergeResult> merged =
              MergeHints(policy, TopologyManagerOptions{}, numa_ids, {}, providers);
          ASSERT_TRUE(merged.ok()) << merged.status();
          EXPECT_EQ(view.KubeletAdmits(policy, cpus), merged->admit)
              << m.name << " round " << round << " policy " << ToString(policy) << " cpus "
              << cpus;
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 10000);
}

// Runs NumaFit for `pod` on a cache node holding a copy of `state`.
Status NumaFitOn(const NodeState& state, const Pod& pod) {
  ClusterCache cache;
  Node node;
  node.name = "n";
  node.cpu_state = std::make_shared<const NodeState>(state);
  EXPECT_TRUE(cache.AddNode(std::move(node)).ok());
  CycleState cycle;
  cycle.Reset(Share(pod));
  ComputePodFacts(pod, cycle.mutable_facts());
  auto plugin = NewNumaFit();
  return dynamic_cast<FilterPlugin&>(*plugin).Filter(cycle, *cache.Nodes().front());
}

// The allocator's division of a request over several NUMA nodes (alloc/waste.h's
// SplitShares, whole cores first), as the view judges it. DualSocketHT (core c = CPUs c and
// c+12; NUMA 0 = cores 0-5) with CPUs 12-14 (a thread of cores 0-2) and cores 10-11 held:
// NUMA 0 has 9 free, 3 whole cores; NUMA 1 has 8 free, 4 whole cores. 14 CPUs over both fit
// the 7 whole cores: no core shared with another pod, and the view's Place leaves NUMA 0 its
// 3 half-held threads.
TEST(NumaView, WasteOfSeveralNodesTakesTheSetsWholeCoresFirst) {
  const auto topo = std::make_shared<const CpuTopology>(huygens::testing::DualSocketHT());
  absl::StatusOr<NodeState> state = NodeState::Create(topo, {});
  ASSERT_TRUE(state.ok()) << state.status();
  PodAllocation held;
  held.pod_uid = "held";
  held.numa_nodes = {0, 1};
  held.containers.push_back({"app", *CpuSet::Parse("12-14,10-11,22-23"), CpuSet{0, 1}, false,
                             false, true});
  ASSERT_TRUE(state->Assume(GuaranteedPod("held", 7).spec, held).ok());
  NumaView view(*state, BindPolicy::kPacked);
  ASSERT_EQ(view.size(), 2);
  EXPECT_EQ(view.at(0).offer, 9);
  EXPECT_EQ(view.at(1).offer, 8);
  const std::vector<int> chosen = {0, 1};
  EXPECT_EQ(view.WasteOf(chosen, 14).shared_cores, 0);
  EXPECT_EQ(view.WasteOf(chosen, 16).shared_cores, 2);  // 14 whole-core CPUs, then 2 threads
  view.Place(TopologyPolicy::kBestEffort, NumaStrategy::kMostAllocated, 14);
  EXPECT_EQ(view.at(0).free, 3);
  EXPECT_EQ(view.at(1).free, 0);
}

// A user thread beside the system pool shares its core with no pod: the view counts it with
// the whole cores (alloc/waste.h's unshared_threads), from the NodeState and from the cache's
// inline summary alike. DualSocketHT (core c = CPUs c and c+12) with system CPU 0 and CPU 18
// (core 6, NUMA 1) held: each NUMA node has 11 free CPUs on 5 whole cores and a lone thread,
// but only NUMA 1's lone thread (6) splits a core with another pod.
TEST(NumaView, CountsTheThreadBesideTheSystemPoolAsUnshared) {
  const auto topo = std::make_shared<const CpuTopology>(huygens::testing::DualSocketHT());
  NodeConfig config;
  config.system_cpus = CpuSet{0};
  absl::StatusOr<NodeState> state = NodeState::Create(topo, config);
  ASSERT_TRUE(state.ok()) << state.status();
  PodAllocation held;
  held.pod_uid = "held";
  held.numa_nodes = {1};
  held.containers.push_back({"app", CpuSet{18}, CpuSet{1}, false, false, true});
  ASSERT_TRUE(state->Assume(GuaranteedPod("held", 1).spec, held).ok());
  ClusterCache cache;
  Node node;
  node.name = "n";
  node.cpu_state = std::make_shared<const NodeState>(*state);
  ASSERT_TRUE(cache.AddNode(std::move(node)).ok());
  for (const NumaView& view : {NumaView(*state, BindPolicy::kPacked),
                               NumaView(*cache.Nodes().front(), BindPolicy::kPacked)}) {
    ASSERT_EQ(view.size(), 2);
    for (int i : {0, 1}) {
      EXPECT_EQ(view.at(i).free, 11);
      EXPECT_EQ(view.at(i).free_cores, 5);
    }
    EXPECT_EQ(view.at(0).unshared, 1);
    EXPECT_EQ(view.at(1).unshared, 0);
    EXPECT_EQ(view.WasteOf(std::vector<int>{0}, 11).shared_cores, 0);
    EXPECT_EQ(view.WasteOf(std::vector<int>{1}, 11).shared_cores, 1);
    NumaView placed = view;
    placed.Place(TopologyPolicy::kSingleNumaNode, NumaStrategy::kMostAllocated, 3);
    EXPECT_EQ(placed.at(0).free, 8);      // NUMA 0: it shares nothing there
    EXPECT_EQ(placed.at(0).unshared, 0);  // one whole core, then CPU 12
  }
}

TEST(NumaFit, PassesExactlyWhenReserveCanAllocateASingleContainerPod) {
  std::mt19937 rng(11);
  int checked = 0, fits = 0;
  for (const NamedMachine& m : Machines()) {
    for (int round = 0; round < 20; ++round) {
      NodeConfig config;
      config.topology_policy = kPolicies[round % 4];
      config.topology_scope = round % 2 == 0 ? TopologyScope::kContainer : TopologyScope::kPod;
      config.default_bind_policy = kBinds[(round / 4) % 3];
      const NodeState state = RandomState(m.topo, config, rng);
      for (int cpus = 1; cpus <= m.topo->NumCpus() / 2 + 2; ++cpus) {
        const Pod pod = GuaranteedPod("probe", cpus);
        NodeState copy = state;
        const absl::StatusOr<PodAllocation> got = copy.AllocatePod(pod.spec);
        const bool allocated = got.ok();
        const Status fit = NumaFitOn(state, pod);
        EXPECT_EQ(fit.ok(), allocated)
            << m.name << " round " << round << " policy " << ToString(config.topology_policy)
            << " bind " << ToString(config.default_bind_policy) << " cpus " << cpus << ": "
            << fit.Message() << " / " << (got.ok() ? "" : got.status().ToString());
        ++checked;
        fits += allocated ? 1 : 0;
      }
    }
  }
  EXPECT_GT(fits, checked / 10);
  EXPECT_GT(checked - fits, checked / 10);
}

// DualSocketMultiNumaPerSocketHT with 8 GiB of memory on each NUMA node and `huge_1g_on_numa_3`
// 1 GiB hugepages on NUMA node 3.
std::shared_ptr<const CpuTopology> MultiNumaWith8GiB(uint64_t huge_1g_on_numa_3) {
  CpuTopology t = huygens::testing::DualSocketMultiNumaPerSocketHT();
  std::vector<NumaNode> nodes = t.NumaNodes();
  for (NumaNode& n : nodes) n.memory_bytes = uint64_t{8} << 30;
  if (huge_1g_on_numa_3 > 0) nodes[3].hugepages = {{uint64_t{1} << 30, huge_1g_on_numa_3}};
  return std::make_shared<const CpuTopology>(
      *CpuTopology::Create(t.Cpus(), std::move(nodes), t.Machine()));
}

constexpr int64_t kGi = int64_t{1} << 30;

// On `rounds` random CPU states (RandomState with config_of(round)), each also holding the
// filler pods filler_of(i) for i < fillers that fit, NumaFit passes each of 24 probe pods
// probe_of(probe) exactly when NodeState::AllocatePod can place it; both outcomes are common.
template <typename ConfigOf, typename FillerOf, typename ProbeOf>
void ExpectNumaFitAgreesWithReserve(const std::shared_ptr<const CpuTopology>& topo,
                                    std::mt19937& rng, int rounds, int fillers,
                                    ConfigOf config_of, FillerOf filler_of, ProbeOf probe_of) {
  int checked = 0, fits = 0;
  for (int round = 0; round < rounds; ++round) {
    const NodeConfig config = config_of(round);
    NodeState state = RandomState(topo, config, rng);
    for (int i = 0; i < fillers; ++i) {
      NodeState copy = state;
      if (copy.AllocatePod(filler_of(i).spec).ok()) state = std::move(copy);
    }
    for (int probe = 0; probe < 24; ++probe) {
      const Pod pod = probe_of(probe);
      NodeState copy = state;
      const absl::StatusOr<PodAllocation> got = copy.AllocatePod(pod.spec);
      const Status fit = NumaFitOn(state, pod);
      EXPECT_EQ(fit.ok(), got.ok())
          << "round " << round << " policy " << ToString(config.topology_policy) << " memory "
          << (config.memory_manager ? (config.memory_manager->static_policy ? "Static" : "None")
                                    : "-")
          << ": " << fit.Message() << " / "
          << (got.ok() ? "allocated" : got.status().ToString());
      ++checked;
      fits += got.ok() ? 1 : 0;
    }
  }
  EXPECT_GT(fits, checked / 10);
  EXPECT_GT(checked - fits, checked / 10);
}

// Memory modelled (kubelet's memory manager None and Static): on random CPU and memory states,
// NumaFit passes a single-container pod with memory exactly when Reserve can allocate it.
TEST(NumaFit, WithMemoryPassesExactlyWhenReserveCanAllocate) {
  std::mt19937 rng(5);
  ExpectNumaFitAgreesWithReserve(
      MultiNumaWith8GiB(/*huge_1g_on_numa_3=*/4), rng, 64, 4,
      [](int round) {
        NodeConfig config;
        config.topology_policy = kPolicies[round % 4];
        config.memory_manager = MemoryManagerConfig{
            .static_policy = (round / 4) % 2 == 1, .reserved_memory = {{0, {{"memory", kGi}}}}};
        return config;
      },
      [&](int i) {  // memory of running pods on random single NUMA nodes
        Pod filler = GuaranteedPod(fmt::format("mem-{}", i), 1);
        filler.spec.containers[0].memory_request_bytes =
            filler.spec.containers[0].memory_limit_bytes =
                std::uniform_int_distribution<int64_t>(1, 7)(rng) * kGi;
        return filler;
      },
      [&](int probe) {
        Pod pod = GuaranteedPod("probe", std::uniform_int_distribution<int>(1, 10)(rng));
        ContainerSpec& c = pod.spec.containers[0];
        c.memory_request_bytes = c.memory_limit_bytes =
            std::uniform_int_distribution<int64_t>(1, 12)(rng) * kGi;
        if (probe % 3 == 0) c.hugepages_request_bytes["hugepages-1Gi"] = 2 * kGi;
        return pod;
      });
}

// Devices modelled (NodeConfig::devices), with and without kubelet's memory manager Static: on
// random CPU and GPU states, NumaFit passes a single-container pod with GPUs exactly when
// Reserve can allocate it.
TEST(NumaFit, WithDevicesPassesExactlyWhenReserveCanAllocate) {
  constexpr char kGpu[] = "example.com/gpu";
  const auto topo = MultiNumaWith8GiB(/*huge_1g_on_numa_3=*/0);
  std::mt19937 rng(7);
  ExpectNumaFitAgreesWithReserve(
      topo, rng, 64, 3,
      [&](int round) {
        NodeConfig config;
        config.topology_policy = kPolicies[round % 4];
        if ((round / 4) % 2 == 1) {
          config.memory_manager = MemoryManagerConfig{
              .static_policy = true, .reserved_memory = {{0, {{"memory", kGi}}}}};
        }
        for (int numa : topo->NumaNodeIds()) {
          config.devices[kGpu][numa] = std::uniform_int_distribution<int>(0, 2)(rng);
        }
        return config;
      },
      [&](int i) {  // GPUs of running pods
        Pod filler = GuaranteedPod(fmt::format("gpu-{}", i), 1);
        filler.spec.containers[0].extended_requests[kGpu] = 1;
        return filler;
      },
      [&](int) {
        Pod pod = GuaranteedPod("probe", std::uniform_int_distribution<int>(1, 10)(rng));
        ContainerSpec& c = pod.spec.containers[0];
        c.memory_request_bytes = c.memory_limit_bytes =
            std::uniform_int_distribution<int64_t>(1, 6)(rng) * kGi;
        c.extended_requests[kGpu] = std::uniform_int_distribution<int>(1, 3)(rng);
        pod.extended_requests = PodExtendedRequests(pod.spec);
        return pod;
      });
}

struct ReasonCase {
  std::string name;
  TopologyPolicy policy;
  BindPolicy bind;
  int cpus;
  std::string reason;
};

class NumaFitReasons : public ::testing::TestWithParam<ReasonCase> {};

// DualSocketHT (two NUMA nodes of 6 cores x 2 threads), with one thread of cores 0, 1 and 2
// held on NUMA 0 (9 CPUs free there, 3 whole cores) and nothing on NUMA 1 (12 free).
TEST_P(NumaFitReasons, NameTheConstraintThatFailed) {
  const ReasonCase& c = GetParam();
  auto topo = std::make_shared<const CpuTopology>(huygens::testing::DualSocketHT());
  NodeConfig config;
  config.topology_policy = c.policy;
  config.default_bind_policy = c.bind;
  absl::StatusOr<NodeState> state = NodeState::Create(topo, config);
  ASSERT_TRUE(state.ok());
  PodAllocation held;
  held.pod_uid = "held";
  held.numa_nodes = {0};
  held.containers.push_back({"app", CpuSet{0, 1, 2}, CpuSet{0}, false, false, true});
  ASSERT_TRUE(state->Assume(GuaranteedPod("held", 3).spec, held).ok());
  Status s = NumaFitOn(*state, GuaranteedPod("p", c.cpus));
  if (c.reason.empty()) {
    EXPECT_TRUE(s.ok()) << s.Message();
  } else {
    EXPECT_THAT(s.reasons(), ::testing::ElementsAre(c.reason));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, NumaFitReasons,
    ::testing::Values(
        ReasonCase{"single numa node fits twelve CPUs on the empty node",
                   TopologyPolicy::kSingleNumaNode, BindPolicy::kPacked, 12, ""},
        ReasonCase{"single numa node rejects thirteen CPUs", TopologyPolicy::kSingleNumaNode,
                   BindPolicy::kPacked, 13, "NUMA: no single NUMA node fits 13 CPUs"},
        ReasonCase{"restricted allows two NUMA nodes for thirteen CPUs",
                   TopologyPolicy::kRestricted, BindPolicy::kPacked, 13, ""},
        ReasonCase{"restricted rejects more than the two nodes hold free",
                   TopologyPolicy::kRestricted, BindPolicy::kPacked, 22,
                   "NUMA: no set of 2 NUMA nodes fits 22 CPUs"},
        ReasonCase{"best effort admits but the CPUs must exist", TopologyPolicy::kBestEffort,
                   BindPolicy::kPacked, 22, "NUMA: not enough free CPUs for 22 exclusive CPUs"},
        ReasonCase{"full cores rejects an odd count on an SMT machine",
                   TopologyPolicy::kSingleNumaNode, BindPolicy::kFullCores, 3,
                   "NUMA: full-cores: 3 CPUs is not a whole number of cores"},
        ReasonCase{"full cores counts whole free cores only", TopologyPolicy::kBestEffort,
                   BindPolicy::kFullCores, 20, "NUMA: not enough free whole cores for 20 CPUs"},
        ReasonCase{"spread cores needs one free core per CPU", TopologyPolicy::kSingleNumaNode,
                   BindPolicy::kSpreadCores, 7,
                   "NUMA: not enough cores with a free thread for 7 CPUs"}),
    [](const auto& p) { return testing::SentenceName(p); });

TEST(NumaFit, ContainerScopeJudgesEachContainerAfterThePreviousOnes) {
  // Two 8-CPU containers on DualSocketHT: each fits one NUMA node under container scope, but
  // never both on the same node; under pod scope 16 CPUs need one NUMA node and fail.
  auto topo = std::make_shared<const CpuTopology>(huygens::testing::DualSocketHT());
  Pod pod = GuaranteedPod("p", 8);
  ContainerSpec second = pod.spec.containers[0];
  second.name = "second";
  pod.spec.containers.push_back(second);
  for (TopologyScope scope : {TopologyScope::kContainer, TopologyScope::kPod}) {
    NodeConfig config;
    config.topology_scope = scope;
    absl::StatusOr<NodeState> state = NodeState::Create(topo, config);
    ASSERT_TRUE(state.ok());
    NodeState copy = *state;
    const bool allocated = copy.AllocatePod(pod.spec).ok();
    EXPECT_EQ(NumaFitOn(*state, pod).ok(), allocated) << ToString(scope);
    EXPECT_EQ(allocated, scope == TopologyScope::kContainer);
  }
}

}  // namespace
}  // namespace huygens::sched
