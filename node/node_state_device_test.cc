// NodeState with devices modelled (NodeConfig::devices): kubelet's device manager picks a
// pod's devices, Huygens predicts where and puts the exclusive CPUs on the same NUMA nodes. The
// device rules themselves are alloc/device_manager.h's.
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "node/node_state.h"
#include "topology/testing/machines.h"

namespace huygens {
namespace {

using ::testing::HasSubstr;

constexpr char kGpu[] = "example.com/gpu";

// 2 NUMA nodes x 6 cores x 2 threads (NUMA 0: CPUs 0-5,12-17; NUMA 1: 6-11,18-23).
std::shared_ptr<const CpuTopology> Machine() {
  static auto topo = std::make_shared<const CpuTopology>(
      testing::BuildMachine({.sockets = 2, .cores_per_numa = 6}));
  return topo;
}

NodeState Node(NumaDeviceCounts gpus, TopologyPolicy policy = TopologyPolicy::kSingleNumaNode,
               TopologyScope scope = TopologyScope::kContainer) {
  NodeConfig c;
  c.name = "n1";
  c.system_cpus = CpuSet{0, 12};
  c.topology_policy = policy;
  c.topology_scope = scope;
  c.devices[kGpu] = std::move(gpus);
  absl::StatusOr<NodeState> s = NodeState::Create(Machine(), std::move(c));
  EXPECT_TRUE(s.ok()) << s.status();
  return *std::move(s);
}

ContainerSpec Container(std::string name, int cpus, int64_t gpus) {
  ContainerSpec c{.name = std::move(name),
                  .cpu_request_milli = cpus * 1000,
                  .cpu_limit_milli = cpus * 1000,
                  .memory_request_bytes = int64_t{1} << 30,
                  .memory_limit_bytes = int64_t{1} << 30};
  if (gpus > 0) c.extended_requests[kGpu] = gpus;
  return c;
}

PodSpec Pod(std::string uid, int cpus, int64_t gpus) {
  return PodSpec{.uid = uid, .namespace_name = "default", .name = uid,
                 .containers = {Container("app", cpus, gpus)}};
}

std::vector<int> CpuNumaNodes(const NodeState& n, const PodAllocation& a) {
  return n.Topology().NumaNodesOf(a.ExclusiveCpus());
}

TEST(NodeStateDeviceTest, TheCpusGoToTheNumaNodeOfTheOnlyGpu) {
  // Packing alone would start on NUMA node 0; kubelet can only give the GPU of NUMA node 1.
  NodeState n = Node({{1, 1}});
  absl::StatusOr<PodAllocation> a = n.AllocatePod(Pod("a", 2, 1));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(CpuNumaNodes(n, *a), std::vector<int>{1});
  EXPECT_EQ(n.DevicesOf("a"), (NodeDevices{{kGpu, {{1, 1}}}}));
  EXPECT_EQ(n.DevicesFree().at(kGpu).at(1), 0);
  EXPECT_TRUE(n.Validate().empty());
}

TEST(NodeStateDeviceTest, KubeletTakesTheLowestNumaNodeWithAFreeGpuAndTheCpusFollow) {
  NodeState n = Node({{0, 1}, {1, 1}});
  // A pod without GPUs fills most of NUMA node 0 first; kubelet still gives the next GPU pod the
  // GPU of node 0 (the narrowest, lowest preferred hint), so its CPUs must go there.
  ASSERT_TRUE(n.AllocatePod(Pod("cpu-only", 6, 0)).ok());
  absl::StatusOr<PodAllocation> a = n.AllocatePod(Pod("a", 4, 1));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(n.DevicesOf("a"), (NodeDevices{{kGpu, {{0, 1}}}}));
  EXPECT_EQ(CpuNumaNodes(n, *a), std::vector<int>{0});
  // The next GPU pod gets node 1's GPU, and its CPUs go there.
  absl::StatusOr<PodAllocation> b = n.AllocatePod(Pod("b", 2, 1));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(n.DevicesOf("b"), (NodeDevices{{kGpu, {{1, 1}}}}));
  EXPECT_EQ(CpuNumaNodes(n, *b), std::vector<int>{1});
  EXPECT_TRUE(n.Validate().empty());
}

TEST(NodeStateDeviceTest, APodWithoutDevicesKeepsOffTheGpuNumaNodeWhileItFitsElsewhere) {
  NodeState n = Node({{0, 1}});
  // Packing would start on NUMA node 0 (10 user CPUs against 12): it holds the free GPU.
  absl::StatusOr<PodAllocation> a = n.AllocatePod(Pod("cpu-only", 8, 0));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(CpuNumaNodes(n, *a), std::vector<int>{1});
  // 10 CPUs fit NUMA node 0 only now: it goes there.
  absl::StatusOr<PodAllocation> b = n.AllocatePod(Pod("big", 10, 0));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(CpuNumaNodes(n, *b), std::vector<int>{0});
}

TEST(NodeStateDeviceTest, ANodeWhereKubeletsGpuNumaNodeLacksTheCpusRefusesThePod) {
  NodeState n = Node({{0, 1}});
  // 10 user CPUs on NUMA node 0, 12 on node 1: two 10-CPU pods leave 0 and 2 free.
  ASSERT_TRUE(n.AllocatePod(Pod("cpu-only-1", 10, 0)).ok());
  ASSERT_TRUE(n.AllocatePod(Pod("cpu-only-2", 10, 0)).ok());
  absl::StatusOr<PodAllocation> a = n.AllocatePod(Pod("a", 2, 1));
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(a.status().message(), HasSubstr("kubelet puts its devices on NUMA node(s) 0"));
  EXPECT_EQ(n.DevicesFree().at(kGpu).at(0), 1) << "nothing taken";
  EXPECT_TRUE(n.Validate().empty());
}

TEST(NodeStateDeviceTest, TwoGpusOnTwoNumaNodesAreATopologyAffinityErrorUnderSingleNumaNode) {
  NodeState n = Node({{0, 1}, {1, 1}});
  absl::StatusOr<PodAllocation> a = n.AllocatePod(Pod("a", 2, 2));
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(a.status().message(), HasSubstr("TopologyAffinityError"));
  // best-effort admits it: the devices span both NUMA nodes, the CPUs go inside them.
  NodeState b = Node({{0, 1}, {1, 1}}, TopologyPolicy::kBestEffort);
  a = b.AllocatePod(Pod("a", 2, 2));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(b.DevicesOf("a"), (NodeDevices{{kGpu, {{0, 1}, {1, 1}}}}));
}

TEST(NodeStateDeviceTest, ASharedPodsGpuIsCountedToo) {
  NodeState n = Node({{0, 1}, {1, 1}});
  PodSpec burstable = Pod("shared", 0, 1);
  burstable.containers[0].cpu_request_milli = 500;
  burstable.containers[0].cpu_limit_milli = 0;
  ASSERT_TRUE(n.AllocatePod(burstable).ok());
  EXPECT_EQ(n.DevicesOf("shared"), (NodeDevices{{kGpu, {{0, 1}}}}));
  absl::StatusOr<PodAllocation> a = n.AllocatePod(Pod("a", 2, 1));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(CpuNumaNodes(n, *a), std::vector<int>{1});
}

TEST(NodeStateDeviceTest, AnInitContainersGpuIsReusedByTheAppContainer) {
  NodeState n = Node({{0, 1}, {1, 1}});
  PodSpec pod = Pod("a", 2, 1);
  ContainerSpec init = Container("init", 2, 1);
  init.init = true;
  pod.init_containers = {init};
  absl::StatusOr<PodAllocation> a = n.AllocatePod(pod);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(n.DevicesOf("a"), (NodeDevices{{kGpu, {{0, 1}}}})) << "one GPU, reused";
  EXPECT_TRUE(n.Validate().empty());
}

TEST(NodeStateDeviceTest, ReleaseFreesTheDevicesAndAssumeTakesThemOnThePodsNumaNodes) {
  NodeState n = Node({{0, 1}, {1, 2}});
  absl::StatusOr<PodAllocation> a = n.AllocatePod(Pod("a", 2, 2));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(n.DevicesOf("a"), (NodeDevices{{kGpu, {{1, 2}}}}));
  ASSERT_TRUE(n.ReleasePod("a").ok());
  EXPECT_EQ(n.DevicesFree().at(kGpu), (NumaDeviceCounts{{0, 1}, {1, 2}}));
  // A rebuild from the allocation (another replica, a restart) takes them on its NUMA nodes.
  ASSERT_TRUE(n.Assume(Pod("a", 2, 2), *a).ok());
  EXPECT_EQ(n.DevicesOf("a"), (NodeDevices{{kGpu, {{1, 2}}}}));
  EXPECT_TRUE(n.Validate().empty());
}

TEST(NodeStateDeviceTest, AMoveKeepsThePodsDevices) {
  NodeState n = Node({{0, 1}, {1, 1}}, TopologyPolicy::kBestEffort);
  absl::StatusOr<PodAllocation> a = n.AllocatePod(Pod("a", 2, 1));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(n.DevicesOf("a"), (NodeDevices{{kGpu, {{0, 1}}}}));
  // The rebalancer moves its CPUs to NUMA node 1; kubelet does not move its GPU.
  PodAllocation moved = *a;
  moved.containers[0].cpuset = CpuSet{7, 19};
  moved.containers[0].mems = CpuSet{1};
  moved.numa_nodes = {1};
  ASSERT_TRUE(n.ReplaceAllocation("a", moved).ok());
  EXPECT_EQ(n.DevicesOf("a"), (NodeDevices{{kGpu, {{0, 1}}}}));
  EXPECT_TRUE(n.Validate().empty());
}

TEST(NodeStateDeviceTest, DevicesHeldElsewhereAreNotGivenAndAreReplacedByTheNextFigure) {
  NodeState n = Node({{0, 1}, {1, 2}});
  // Another scheduler's pod holds node 0's GPU: kubelet gives the next GPU pod one of node 1.
  EXPECT_EQ(n.HoldForeignDevices({{kGpu, {{0, 1}}}}), (NodeDevices{{kGpu, {{0, 1}}}}));
  absl::StatusOr<PodAllocation> a = n.AllocatePod(Pod("a", 2, 1));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(n.DevicesOf("a"), (NodeDevices{{kGpu, {{1, 1}}}}));
  EXPECT_EQ(CpuNumaNodes(n, *a), std::vector<int>{1});
  EXPECT_TRUE(n.Validate().empty());
  // A new figure replaces the old one, clamped to what is free (node 1 has one GPU left), and
  // an unknown resource or NUMA node is ignored.
  EXPECT_EQ(n.HoldForeignDevices({{kGpu, {{1, 5}, {3, 1}}}, {"example.com/nic", {{0, 1}}}}),
            (NodeDevices{{kGpu, {{1, 1}}}}));
  EXPECT_EQ(n.DevicesFree().at(kGpu), (NumaDeviceCounts{{0, 1}, {1, 0}}));
  EXPECT_TRUE(n.Validate().empty());
  // With node 0's GPU free again and node 1's held, a 2-GPU pod has no single NUMA node.
  absl::StatusOr<PodAllocation> b = n.AllocatePod(Pod("b", 2, 2));
  EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted) << b.status();
  // The pod's release gives back its own GPU only.
  ASSERT_TRUE(n.ReleasePod("a").ok());
  EXPECT_EQ(n.DevicesFree().at(kGpu), (NumaDeviceCounts{{0, 1}, {1, 1}}));
  EXPECT_EQ(n.ForeignDevices(), (NodeDevices{{kGpu, {{1, 1}}}}));
  EXPECT_TRUE(n.Validate().empty());
}

TEST(NodeStateDeviceTest, PredictKubeletNumaIsAllocatePodsDeviceChoiceWithoutTakingIt) {
  NodeState n = Node({{1, 2}}, TopologyPolicy::kBestEffort);
  auto none = n.PredictKubeletNuma(Pod("cpu-only", 2, 0));
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->has_value()) << "kubelet places nothing for a pod without devices";
  auto predicted = n.PredictKubeletNuma(Pod("a", 2, 1));
  ASSERT_TRUE(predicted.ok()) << predicted.status();
  ASSERT_TRUE(predicted->has_value());
  EXPECT_EQ((*predicted)->devices, std::vector<int>{1});
  EXPECT_TRUE((*predicted)->memory.empty());
  EXPECT_EQ(n.DevicesFree().at(kGpu), (NumaDeviceCounts{{1, 2}})) << "nothing taken";
  absl::StatusOr<PodAllocation> a = n.AllocatePod(Pod("a", 2, 1));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(n.DevicesOf("a"), (NodeDevices{{kGpu, {{1, 1}}}}));
  // Three GPUs where the node has two: kubelet's device manager refuses.
  EXPECT_EQ(Node({{1, 2}}).PredictKubeletNuma(Pod("b", 2, 3)).status().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(NodeStateDeviceTest, KubeletNumaIsConsistentWhenTheMemoryLiesInsideTheDevicesNumaNodes) {
  using K = NodeState::KubeletNuma;
  EXPECT_TRUE((K{.devices = {1}, .memory = {1}}).Consistent());
  EXPECT_TRUE((K{.devices = {0, 1}, .memory = {1}}).Consistent());
  EXPECT_TRUE((K{.devices = {}, .memory = {0}}).Consistent());
  EXPECT_FALSE((K{.devices = {1}, .memory = {0}}).Consistent());
  EXPECT_EQ((K{.devices = {1}, .memory = {0}}).CpuNumaNodes(), std::vector<int>{1});
  EXPECT_EQ((K{.devices = {}, .memory = {0}}).CpuNumaNodes(), std::vector<int>{0});
}

TEST(NodeStateDeviceTest, RebuildGivesTheRebuiltPodsTheirDevicesAndFreesTheRest) {
  NodeState n = Node({{0, 1}, {1, 1}});
  absl::StatusOr<PodAllocation> a = n.AllocatePod(Pod("a", 2, 1));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(n.AllocatePod(Pod("b", 2, 1)).ok());
  const NodeDevices a_devices = n.DevicesOf("a");
  // Rebuilt from a's annotation alone: a holds its GPU again, b's is free.
  NodeState::RebuildReport r = n.Rebuild({{Pod("a", 2, 1), *a}});
  EXPECT_EQ(r.rebuilt, 1);
  EXPECT_EQ(n.DevicesOf("a"), a_devices);
  EXPECT_EQ(DeviceCount(n.DevicesFree().at(kGpu)), 1);
  EXPECT_TRUE(n.Validate().empty()) << n.Validate()[0];
  // A GPU held for another scheduler's pods (the free one: a holds the other) stays held
  // through a rebuild; a's is free again.
  n.HoldForeignDevices({{kGpu, {{0, 1}, {1, 1}}}});
  ASSERT_EQ(DeviceCount(n.ForeignDevices().at(kGpu)), 1);
  n.Rebuild({});
  EXPECT_EQ(DeviceCount(n.DevicesFree().at(kGpu)), 1);
  EXPECT_EQ(DeviceCount(n.ForeignDevices().at(kGpu)), 1);
  EXPECT_TRUE(n.Validate().empty()) << n.Validate()[0];
}

TEST(NodeStateDeviceTest, ADeviceOnAnUnknownNumaNodeIsAConfigError) {
  NodeConfig c;
  c.name = "n1";
  c.devices[kGpu] = {{7, 1}};
  absl::StatusOr<NodeState> s = NodeState::Create(Machine(), std::move(c));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("devices[\"example.com/gpu\"][7]"));
}

}  // namespace
}  // namespace huygens
