// Tests for alloc/memory_manager.h, reasoned from kubelet's memory manager Static policy
// (pkg/kubelet/cm/memorymanager/policy_static.go, v1.35.4). The differential test against
// kubelet's own code is testbed/oracle_diff_test.cc (ops memory-hints / memory-allocate).
#include "alloc/memory_manager.h"

#include <algorithm>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "topology/testing/machines.h"

namespace huygens {
namespace {

constexpr uint64_t kGi = uint64_t{1} << 30;
constexpr uint64_t kMi = uint64_t{1} << 20;

// 4 NUMA nodes (2 sockets x 2), 8 GiB each, two 1 GiB hugepages on every node.
CpuTopology FourNodes() {
  CpuTopology t = testing::BuildMachine({.sockets = 2, .numa_per_socket = 2, .cores_per_numa = 2,
                                .threads_per_core = 1, .memory_per_numa_bytes = 8 * kGi});
  std::vector<NumaNode> nodes = t.NumaNodes();
  for (NumaNode& n : nodes) n.hugepages = {{kGi, 2}};
  return *CpuTopology::Create(t.Cpus(), std::move(nodes), t.Machine());
}

MemoryManagerPolicy Policy(const CpuTopology& t, ReservedMemory reserved = {{0, {{"memory", kGi}}}}) {
  absl::StatusOr<MemoryManagerPolicy> p = MemoryManagerPolicy::Create(t, std::move(reserved));
  EXPECT_TRUE(p.ok()) << p.status();
  return *std::move(p);
}

ContainerSpec Ctr(std::string name, uint64_t memory, uint64_t huge_1g = 0, bool init = false,
                  bool restartable = false) {
  ContainerSpec c{.name = std::move(name),
                  .cpu_request_milli = 1000,
                  .cpu_limit_milli = 1000,
                  .memory_request_bytes = static_cast<int64_t>(memory),
                  .memory_limit_bytes = static_cast<int64_t>(memory),
                  .init = init,
                  .restartable = restartable};
  if (huge_1g > 0) c.hugepages_request_bytes["hugepages-1Gi"] = static_cast<int64_t>(huge_1g);
  return c;
}

PodSpec Pod(std::string uid, std::vector<ContainerSpec> containers,
            std::vector<ContainerSpec> init = {}) {
  return PodSpec{.uid = std::move(uid), .namespace_name = "default", .name = "p",
                 .init_containers = std::move(init), .containers = std::move(containers)};
}

std::vector<int> Numa(const absl::StatusOr<std::vector<MemoryBlock>>& blocks) {
  EXPECT_TRUE(blocks.ok()) << blocks.status();
  if (!blocks.ok() || blocks->empty()) return {};
  return blocks->front().numa_affinity;
}

TEST(MemoryManagerPolicyTest, InitialStateSubtractsReservedAndHugepagesFromMemory) {
  const MemoryManagerPolicy p = Policy(FourNodes(), {{0, {{"memory", kGi}, {"hugepages-1Gi", kGi}}}});
  const MemoryManagerState s = p.InitialState();
  ASSERT_EQ(s.machine.size(), 4u);
  const MemoryTable& m0 = s.machine.at(0).memory_map.at("memory");
  EXPECT_EQ(m0, (MemoryTable{8 * kGi, kGi, 5 * kGi, 0, 5 * kGi}));
  EXPECT_EQ(s.machine.at(0).memory_map.at("hugepages-1Gi"),
            (MemoryTable{2 * kGi, kGi, kGi, 0, kGi}));
  EXPECT_EQ(s.machine.at(1).memory_map.at("memory").allocatable, 6 * kGi);
  EXPECT_EQ(s.machine.at(3).cells, std::vector<int>{3});
}

TEST(MemoryManagerPolicyTest, CreateRefusesWhatKubeletRefuses) {
  const CpuTopology t = FourNodes();
  EXPECT_FALSE(MemoryManagerPolicy::Create(t, {}).ok()) << "no system reserved memory";
  EXPECT_FALSE(MemoryManagerPolicy::Create(t, {{0, {{"hugepages-1Gi", kGi}}}}).ok())
      << "only hugepages reserved";
  EXPECT_FALSE(MemoryManagerPolicy::Create(t, {{7, {{"memory", kGi}}}}).ok()) << "unknown node";
  EXPECT_FALSE(MemoryManagerPolicy::Create(t, {{0, {{"memory", 9 * kGi}}}}).ok())
      << "more than the node has";
}

TEST(MemoryManagerPolicyTest, WithoutAffinityTheNarrowestLowestNodeThatFitsIsTaken) {
  const MemoryManagerPolicy p = Policy(FourNodes());
  MemoryManagerState s = p.InitialState();
  // Node 0 has 5 GiB allocatable (8 - 1 reserved - 2 hugepages), node 1 has 6 GiB.
  EXPECT_EQ(Numa(p.Allocate(s, Pod("a", {Ctr("c", 4 * kGi)}), "c", std::nullopt)),
            std::vector<int>{0});
  EXPECT_EQ(Numa(p.Allocate(s, Pod("b", {Ctr("c", 4 * kGi)}), "c", std::nullopt)),
            std::vector<int>{1});
  EXPECT_EQ(s.machine.at(0).memory_map.at("memory").free, kGi);
  EXPECT_EQ(s.machine.at(0).number_of_assignments, 1);
}

TEST(MemoryManagerPolicyTest, ARequestLargerThanOneNodeFormsAGroupThatSingleRequestsAvoid) {
  const MemoryManagerPolicy p = Policy(FourNodes());
  MemoryManagerState s = p.InitialState();
  // 10 GiB fits no single node: the narrowest set is {0,1} (11 GiB allocatable).
  EXPECT_EQ(Numa(p.Allocate(s, Pod("big", {Ctr("c", 10 * kGi)}), "c", std::nullopt)),
            (std::vector<int>{0, 1}));
  EXPECT_EQ(s.machine.at(0).memory_map.at("memory").free, 0u);
  EXPECT_EQ(s.machine.at(1).memory_map.at("memory").free, kGi);
  EXPECT_EQ(s.machine.at(1).cells, (std::vector<int>{0, 1}));
  // 1 GiB is free on node 1, but node 1 is in a group: a single-node request goes to node 2.
  EXPECT_EQ(Numa(p.Allocate(s, Pod("small", {Ctr("c", kGi)}), "c", std::nullopt)),
            std::vector<int>{2});
  // Hints: no single-node hint on 0 or 1; {0,1} is offered again for the group's pods.
  const auto hints = p.CalculateHints(s, "x", {{"memory", kGi}});
  ASSERT_TRUE(hints.contains("memory"));
  std::vector<std::vector<int>> sets;
  for (const TopologyHint& h : *hints.at("memory")) sets.push_back(h.numa_nodes);
  EXPECT_EQ(sets.front(), std::vector<int>{2});
  EXPECT_NE(std::find(sets.begin(), sets.end(), std::vector<int>{0, 1}), sets.end());
  EXPECT_EQ(std::find(sets.begin(), sets.end(), std::vector<int>{0}), sets.end());
  EXPECT_EQ(std::find(sets.begin(), sets.end(), std::vector<int>{1, 2}), sets.end())
      << "node 1 already belongs to the group {0,1}";
  EXPECT_EQ(std::find(sets.begin(), sets.end(), std::vector<int>{2, 3}), sets.end())
      << "node 2 holds a single-NUMA allocation";
}

TEST(MemoryManagerPolicyTest, AHintMixingSingleAndCrossNumaUseIsRefused) {
  const MemoryManagerPolicy p = Policy(FourNodes());
  MemoryManagerState s = p.InitialState();
  ASSERT_TRUE(p.Allocate(s, Pod("a", {Ctr("c", kGi)}), "c", std::nullopt).ok());
  const MemoryManagerState before = s;
  absl::StatusOr<std::vector<MemoryBlock>> r =
      p.Allocate(s, Pod("b", {Ctr("c", kGi)}), "c", TopologyHint{{0, 1}, false});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("violates NUMA node allocation"), std::string::npos);
  EXPECT_EQ(s, before) << "a refused allocation changes nothing";
}

TEST(MemoryManagerPolicyTest, AHintThatFallsShortIsExtendedToTheNarrowestSetContainingIt) {
  const MemoryManagerPolicy p = Policy(FourNodes());
  MemoryManagerState s = p.InitialState();
  // The topology manager says {1} (6 GiB allocatable) for 7 GiB: extended to {0,1}, the
  // narrowest qualifying set that contains node 1.
  EXPECT_EQ(Numa(p.Allocate(s, Pod("a", {Ctr("c", 7 * kGi)}), "c", TopologyHint{{1}, false})),
            (std::vector<int>{0, 1}));
  // Memory is taken in ascending id order: node 0 first.
  EXPECT_EQ(s.machine.at(0).memory_map.at("memory").free, 0u);
  EXPECT_EQ(s.machine.at(1).memory_map.at("memory").free, 4 * kGi);
}

TEST(MemoryManagerPolicyTest, AHintOnANodeHoldingSingleNumaMemoryCannotBeExtended) {
  const MemoryManagerPolicy p = Policy(FourNodes());
  MemoryManagerState s = p.InitialState();
  ASSERT_TRUE(p.Allocate(s, Pod("a", {Ctr("c", 5 * kGi)}), "c", std::nullopt).ok());
  // Node 0 is full; a preferred {0} for 2 GiB can only grow to two nodes, which is not
  // preferred for a request that one node could hold.
  absl::StatusOr<std::vector<MemoryBlock>> r =
      p.Allocate(s, Pod("b", {Ctr("c", 2 * kGi)}), "c", TopologyHint{{0}, true});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("failed to find NUMA nodes to extend"), std::string::npos)
      << r.status() << ": node 0 holds a single-NUMA allocation, so no set contains it";
}

TEST(MemoryManagerPolicyTest, HugepagesAndMemoryAreTakenOnTheSameNumaSet) {
  const MemoryManagerPolicy p = Policy(FourNodes());
  MemoryManagerState s = p.InitialState();
  absl::StatusOr<std::vector<MemoryBlock>> r =
      p.Allocate(s, Pod("a", {Ctr("c", kGi, 3 * kGi)}), "c", std::nullopt);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].type, "hugepages-1Gi");
  EXPECT_EQ((*r)[1].type, "memory");
  EXPECT_EQ((*r)[0].numa_affinity, (std::vector<int>{0, 1})) << "3 GiB of 1Gi pages: two nodes";
  EXPECT_EQ((*r)[1].numa_affinity, (std::vector<int>{0, 1}));
  // Each block counts one assignment on every node of the set.
  EXPECT_EQ(s.machine.at(0).number_of_assignments, 2);
  EXPECT_EQ(s.machine.at(0).memory_map.at("hugepages-1Gi").free, 0u);
  EXPECT_EQ(s.machine.at(1).memory_map.at("hugepages-1Gi").free, kGi);
}

TEST(MemoryManagerPolicyTest, RemovingTheLastAssignmentDissolvesTheGroup) {
  const MemoryManagerPolicy p = Policy(FourNodes());
  MemoryManagerState s = p.InitialState();
  ASSERT_TRUE(p.Allocate(s, Pod("big", {Ctr("c", 10 * kGi)}), "c", std::nullopt).ok());
  p.RemoveContainer(s, "big", "c");
  EXPECT_EQ(s, p.InitialState());
  p.RemoveContainer(s, "big", "c");  // idempotent
  EXPECT_EQ(s, p.InitialState());
}

TEST(MemoryManagerPolicyTest, OnlyGuaranteedPodsWithoutPodLevelResourcesGetMemory) {
  const MemoryManagerPolicy p = Policy(FourNodes());
  MemoryManagerState s = p.InitialState();
  PodSpec burstable = Pod("b", {Ctr("c", kGi)});
  burstable.containers[0].memory_limit_bytes = 2 * static_cast<int64_t>(kGi);
  absl::StatusOr<std::vector<MemoryBlock>> r = p.Allocate(s, burstable, "c", std::nullopt);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
  EXPECT_TRUE(p.ContainerHints(s, burstable, "c").empty()) << "no preference";
  PodSpec pod_level = Pod("l", {Ctr("c", kGi)});
  pod_level.pod_cpu_request_milli = pod_level.pod_cpu_limit_milli = 1000;
  EXPECT_TRUE(p.Allocate(s, pod_level, "c", std::nullopt)->empty());
  EXPECT_EQ(s, p.InitialState());
  EXPECT_EQ(p.Allocate(s, Pod("x", {Ctr("c", kGi)}), "other", std::nullopt).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(MemoryManagerPolicyTest, AppContainersReuseTheMemoryOfRegularInitContainers) {
  const MemoryManagerPolicy p = Policy(FourNodes());
  MemoryManagerState s = p.InitialState();
  const PodSpec pod = Pod("a", {Ctr("app", 3 * kGi)}, {Ctr("init", 4 * kGi, 0, /*init=*/true)});
  ASSERT_EQ(Numa(p.Allocate(s, pod, "init", std::nullopt)), std::vector<int>{0});
  ASSERT_EQ(Numa(p.Allocate(s, pod, "app", std::nullopt)), std::vector<int>{0});
  // The app's 3 GiB come out of the init container's 4 GiB: node 0 holds 4 GiB, not 7.
  EXPECT_EQ(s.machine.at(0).memory_map.at("memory").reserved, 4 * kGi);
  // kubelet then shrinks the init container's block by what the app reused.
  EXPECT_EQ(s.assignments.at("a").at("init").front().size, kGi);
  EXPECT_EQ(s.reusable.at("a").at({0}).at("memory"), kGi);
  // Allocating another pod drops this pod's reusable memory, as kubelet's map does.
  ASSERT_TRUE(p.Allocate(s, Pod("b", {Ctr("c", kGi)}), "c", std::nullopt).ok());
  EXPECT_FALSE(s.reusable.contains("a"));
}

TEST(MemoryManagerPolicyTest, ContainerHintsAreRegeneratedFromExistingBlocks) {
  const MemoryManagerPolicy p = Policy(FourNodes());
  MemoryManagerState s = p.InitialState();
  const PodSpec pod = Pod("a", {Ctr("c", 10 * kGi)});
  ASSERT_TRUE(p.Allocate(s, pod, "c", std::nullopt).ok());
  const auto hints = p.ContainerHints(s, pod, "c");
  ASSERT_TRUE(hints.contains("memory"));
  EXPECT_EQ(*hints.at("memory"), (std::vector<TopologyHint>{{{0, 1}, true}}));
  // Blocks that do not match the request give no preference at all.
  PodSpec resized = pod;
  resized.containers[0].memory_request_bytes = resized.containers[0].memory_limit_bytes =
      static_cast<int64_t>(kGi);
  EXPECT_TRUE(p.ContainerHints(s, resized, "c").empty());
}

TEST(MemoryManagerPolicyTest, HintsArePreferredWhenAsNarrowAsTheSmallestSetThatCouldHold) {
  const MemoryManagerPolicy p = Policy(FourNodes());
  const MemoryManagerState s = p.InitialState();
  const auto hints = p.CalculateHints(s, "x", {{"memory", 7 * kGi}}, /*max_set_size=*/2);
  ASSERT_TRUE(hints.contains("memory"));
  const std::vector<TopologyHint>& h = *hints.at("memory");
  // No single node has 7 GiB allocatable; every pair does, all preferred, lexicographic order.
  ASSERT_EQ(h.size(), 6u);
  EXPECT_EQ(h[0], (TopologyHint{{0, 1}, true}));
  EXPECT_EQ(h[1], (TopologyHint{{0, 2}, true}));
  EXPECT_EQ(h[5], (TopologyHint{{2, 3}, true}));
}

TEST(MemoryManagerPolicyTest, RestoreAccumulatesBlocksAsKubeletValidatesAState) {
  const MemoryManagerPolicy p = Policy(FourNodes());
  MemoryManagerState s = p.InitialState();
  // 7 GiB on {2,3}: node 2 gives its 6 GiB, node 3 the rest; both join the group.
  p.Restore(s, "a", "c", {{{2, 3}, "memory", 7 * kGi}});
  EXPECT_EQ(s.machine.at(2).memory_map.at("memory").free, 0u);
  EXPECT_EQ(s.machine.at(3).memory_map.at("memory").free, 5 * kGi);
  EXPECT_EQ(s.machine.at(3).cells, (std::vector<int>{2, 3}));
  // The same as allocating it there.
  MemoryManagerState allocated = p.InitialState();
  ASSERT_TRUE(p.Allocate(allocated, Pod("a", {Ctr("c", 7 * kGi)}), "c", TopologyHint{{2, 3}, true})
                  .ok());
  EXPECT_EQ(s, allocated);
  // Unknown NUMA nodes are left out; restoring again replaces, never adds.
  p.Restore(s, "a", "c", {{{2, 3}, "memory", 7 * kGi}, {{9}, "memory", kGi}});
  EXPECT_EQ(s, allocated);
  p.RemoveContainer(s, "a", "c");
  EXPECT_EQ(s, p.InitialState());
}

TEST(MemoryManagerPolicyTest, WithoutTheKubeletCheckNoReservationIsNeeded) {
  EXPECT_TRUE(MemoryManagerPolicy::Create(FourNodes(), {}, /*require_system_reserved=*/false).ok());
}

TEST(FindBestMemoryHintTest, PreferredFirstThenFewerNodesThenTheSmallerBitmask) {
  EXPECT_EQ(FindBestMemoryHint({}), std::nullopt);
  // {1,2} (bitmask 6) beats {0,3} (9) although {0,3} comes first in kubelet's visiting order.
  EXPECT_EQ(FindBestMemoryHint({{{0, 3}, true}, {{1, 2}, true}, {{0}, false}}),
            (TopologyHint{{1, 2}, true}));
  EXPECT_EQ(FindBestMemoryHint({{{0, 1}, false}, {{2}, false}}), (TopologyHint{{2}, false}));
}

TEST(PodMemoryRequestsTest, TakesTheLargerOfLongRunningAndInitPeak) {
  const PodSpec pod = Pod("a", {Ctr("app", 2 * kGi)},
                          {Ctr("side", kGi, 0, true, /*restartable=*/true),
                           Ctr("init", 4 * kGi, 0, true)});
  // Long-running: app 2 + sidecar 1 = 3 GiB; init step: sidecar 1 + init 4 = 5 GiB.
  EXPECT_EQ(PodMemoryRequests(pod), (MemoryRequests{{"memory", 5 * kGi}}));
}

}  // namespace
}  // namespace huygens
