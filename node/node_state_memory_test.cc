// NodeState with memory modelled (NodeConfig::memory_manager): CPUs and memory on the same
// NUMA nodes, under kubelet's memory manager None (Huygens places the memory) and Static
// (kubelet places it; Huygens follows). The memory rules themselves are alloc/memory_manager.h's.
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "node/node_state.h"
#include "topology/testing/machines.h"

namespace huygens {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kGi = int64_t{1} << 30;

// 2 NUMA nodes x 6 cores x 2 threads (NUMA 0: CPUs 0-5,12-17; NUMA 1: 6-11,18-23), 8 GiB of
// memory on each; NUMA node 1 also has two 1 GiB hugepages.
std::shared_ptr<const CpuTopology> Machine() {
  static auto topo = [] {
    CpuTopology t = testing::BuildMachine({.sockets = 2, .cores_per_numa = 6,
                                           .memory_per_numa_bytes = uint64_t{8} << 30});
    std::vector<NumaNode> nodes = t.NumaNodes();
    nodes[1].hugepages = {{uint64_t{1} << 30, 2}};
    return std::make_shared<const CpuTopology>(
        *CpuTopology::Create(t.Cpus(), std::move(nodes), t.Machine()));
  }();
  return topo;
}

NodeState Node(bool static_policy, TopologyPolicy policy = TopologyPolicy::kSingleNumaNode) {
  NodeConfig c;
  c.name = "n1";
  c.system_cpus = CpuSet{0, 12};
  c.topology_policy = policy;
  c.memory_manager = MemoryManagerConfig{
      .static_policy = static_policy,
      .reserved_memory = {{0, {{"memory", uint64_t{1} << 30}}}}};
  absl::StatusOr<NodeState> s = NodeState::Create(Machine(), std::move(c));
  EXPECT_TRUE(s.ok()) << s.status();
  return *std::move(s);
}

PodSpec Pod(std::string uid, int cpus, int64_t memory, int64_t huge_1g = 0) {
  ContainerSpec c{.name = "app",
                  .cpu_request_milli = cpus * 1000,
                  .cpu_limit_milli = cpus * 1000,
                  .memory_request_bytes = memory,
                  .memory_limit_bytes = memory};
  if (huge_1g > 0) c.hugepages_request_bytes["hugepages-1Gi"] = huge_1g;
  PodSpec p{.uid = uid, .namespace_name = "default", .name = uid, .containers = {c}};
  return p;
}

int NumaOfCpus(const NodeState& n, const ContainerAllocation& c) {
  const std::vector<int> ids = n.Topology().NumaNodesOf(c.cpuset);
  EXPECT_EQ(ids.size(), 1u);
  return ids.empty() ? -1 : ids[0];
}

TEST(NodeStateMemoryTest, UnderNoneAPodGoesWhereBothItsCpusAndItsMemoryFit) {
  NodeState n = Node(/*static_policy=*/false);
  // NUMA 0 has 7 GiB allocatable (8 - 1 reserved), NUMA 1 has 6 (8 - 2 of hugepages).
  absl::StatusOr<PodAllocation> a = n.AllocatePod(Pod("a", 2, 6 * kGi));
  ASSERT_TRUE(a.ok()) << a.status();
  const int first = NumaOfCpus(n, a->containers[0]);
  EXPECT_EQ(a->containers[0].mems, CpuSet{first});
  // Packing would put 2 more CPUs beside the first pod; its memory (4 GiB) no longer fits
  // there, so both go to the other NUMA node.
  absl::StatusOr<PodAllocation> b = n.AllocatePod(Pod("b", 2, 4 * kGi));
  ASSERT_TRUE(b.ok()) << b.status();
  const int second = NumaOfCpus(n, b->containers[0]);
  EXPECT_NE(second, first);
  EXPECT_EQ(b->containers[0].mems, CpuSet{second});
  ASSERT_NE(n.Memory(), nullptr);
  EXPECT_EQ(n.Memory()->machine.at(second).memory_map.at("memory").reserved,
            static_cast<uint64_t>(4 * kGi));
}

TEST(NodeStateMemoryTest, UnderNoneMemoryThatFitsNoSingleNodeIsRefusedUnderSingleNumaNode) {
  NodeState n = Node(false);
  absl::StatusOr<PodAllocation> a = n.AllocatePod(Pod("a", 2, 10 * kGi));
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(a.status().message(), HasSubstr("memory"));
  EXPECT_EQ(*n.Memory(), *Node(false).Memory()) << "a refused pod changes nothing";
  EXPECT_TRUE(n.Pods().empty());
}

TEST(NodeStateMemoryTest, UnderBestEffortMemoryMaySpanTheNodesBesideTheCpus) {
  NodeState n = Node(false, TopologyPolicy::kBestEffort);
  absl::StatusOr<PodAllocation> a = n.AllocatePod(Pod("a", 2, 10 * kGi));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->containers[0].mems, (CpuSet{0, 1}));
}

TEST(NodeStateMemoryTest, HugepagesBringThePodToTheNodeThatHasThem) {
  NodeState n = Node(false);
  absl::StatusOr<PodAllocation> a = n.AllocatePod(Pod("a", 2, kGi, 2 * kGi));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(NumaOfCpus(n, a->containers[0]), 1);
  EXPECT_EQ(a->containers[0].mems, CpuSet{1});
  // No 1 GiB pages are left anywhere.
  EXPECT_FALSE(n.AllocatePod(Pod("b", 2, kGi, kGi)).ok());
}

TEST(NodeStateMemoryTest, UnderStaticTheCpusFollowKubeletsMemoryPlacement) {
  NodeState n = Node(/*static_policy=*/true);
  // kubelet puts 6 GiB on NUMA 0 (the lowest node that holds it) and 4 GiB then on NUMA 1.
  absl::StatusOr<PodAllocation> a = n.AllocatePod(Pod("a", 2, 6 * kGi));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(NumaOfCpus(n, a->containers[0]), 0);
  EXPECT_EQ(a->containers[0].mems, CpuSet{0});
  absl::StatusOr<PodAllocation> b = n.AllocatePod(Pod("b", 2, 4 * kGi));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(NumaOfCpus(n, b->containers[0]), 1);
  EXPECT_EQ(b->containers[0].mems, CpuSet{1});
}

TEST(NodeStateMemoryTest, UnderStaticAPodWhoseCpusDoNotFitBesideKubeletsMemoryIsRefused) {
  NodeState n = Node(true);
  // NUMA 0's 10 user CPUs are taken by a pod with little memory; kubelet still puts the next
  // pod's memory on NUMA 0, where no CPU is left: kubelet would pin its memory away from any
  // CPU Huygens could give it under single-numa-node.
  ASSERT_TRUE(n.AllocatePod(Pod("a", 10, kGi)).ok());
  absl::StatusOr<PodAllocation> b = n.AllocatePod(Pod("b", 2, kGi));
  ASSERT_FALSE(b.ok());
  EXPECT_THAT(b.status().message(), HasSubstr("kubelet puts its memory on NUMA node(s) 0"));
  // Under best-effort kubelet admits it; the CPUs then go to NUMA 1 and the mems stay kubelet's.
  NodeState be = Node(true, TopologyPolicy::kBestEffort);
  ASSERT_TRUE(be.AllocatePod(Pod("a", 10, kGi)).ok());
  absl::StatusOr<PodAllocation> c = be.AllocatePod(Pod("b", 2, kGi));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(NumaOfCpus(be, c->containers[0]), 1);
  EXPECT_EQ(c->containers[0].mems, CpuSet{0});
}

TEST(NodeStateMemoryTest, UnderStaticKubeletsRefusalIsATopologyAffinityError) {
  NodeState n = Node(true);
  absl::StatusOr<PodAllocation> a = n.AllocatePod(Pod("a", 2, 10 * kGi));
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(a.status().message(), HasSubstr("TopologyAffinityError"));
}

TEST(NodeStateMemoryTest, ReleaseGivesTheMemoryBackAndAssumeRecordsItFromTheMems) {
  NodeState n = Node(false);
  const MemoryManagerState initial = *n.Memory();
  absl::StatusOr<PodAllocation> a = n.AllocatePod(Pod("a", 2, 6 * kGi));
  ASSERT_TRUE(a.ok()) << a.status();
  const MemoryManagerState after = *n.Memory();
  ASSERT_TRUE(n.ReleasePod("a").ok());
  EXPECT_EQ(*n.Memory(), initial);
  // Rebuilding from the annotation gives the same memory state.
  ASSERT_TRUE(n.Assume(Pod("a", 2, 6 * kGi), *a).ok());
  EXPECT_EQ(n.Memory()->machine, after.machine);
  EXPECT_EQ(n.Memory()->assignments, after.assignments);
}

TEST(NodeStateMemoryTest, RebuildRestoresTheRebuiltPodsMemoryAndDropsTheRest) {
  NodeState n = Node(true);
  absl::StatusOr<PodAllocation> a = n.AllocatePod(Pod("a", 2, 3 * kGi));
  ASSERT_TRUE(a.ok()) << a.status();
  const MemoryManagerState only_a = *n.Memory();
  ASSERT_TRUE(n.AllocatePod(Pod("b", 2, 5 * kGi)).ok());
  // Rebuilt from a's annotation alone: a's memory is held as before, b's is free again.
  NodeState::RebuildReport r = n.Rebuild({{Pod("a", 2, 3 * kGi), *a}});
  EXPECT_EQ(r.rebuilt, 1);
  EXPECT_EQ(n.Memory()->machine, only_a.machine);
  EXPECT_EQ(n.Memory()->assignments, only_a.assignments);
  EXPECT_THAT(n.Validate(), ::testing::IsEmpty());
  // Rebuilt from nothing: the initial state.
  n.Rebuild({});
  EXPECT_EQ(*n.Memory(), *Node(true).Memory());
}

TEST(NodeStateMemoryTest, BurstablePodsAndNodesWithoutMemoryModellingPlaceNoMemory) {
  NodeState n = Node(false);
  PodSpec burstable = Pod("b", 2, kGi);
  burstable.containers[0].memory_limit_bytes = 2 * kGi;
  ASSERT_TRUE(n.AllocatePod(burstable).ok());
  EXPECT_TRUE(n.Memory()->assignments.empty());
  NodeConfig plain;
  plain.name = "n2";
  absl::StatusOr<NodeState> without = NodeState::Create(Machine(), plain);
  ASSERT_TRUE(without.ok());
  EXPECT_EQ(without->Memory(), nullptr);
  EXPECT_TRUE(without->AllocatePod(Pod("a", 2, 100 * kGi)).ok()) << "memory not modelled";
}

TEST(NodeStateMemoryTest, AStaticNodeWithoutReservedMemoryIsAConfigurationError) {
  NodeConfig c;
  c.name = "n1";
  c.memory_manager = MemoryManagerConfig{.static_policy = true};
  absl::StatusOr<NodeState> s = NodeState::Create(Machine(), c);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("memory_manager"));
}

}  // namespace
}  // namespace huygens
