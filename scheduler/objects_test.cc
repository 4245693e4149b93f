// NodeStateFromNrt: the node's CPU state as the agent publishes it, including the per-NUMA
// capacity factors (zone attribute huygens.io/capacity-factor); and what NodeFromJson and
// PodFromJson read for ImageLocality.
#include "scheduler/objects.h"

#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "topology/nrt.h"
#include "topology/testing/machines.h"

namespace huygens::scheduler {
namespace {

nlohmann::json PublishedNrt(const CpuTopology& topo,
                            std::map<int, std::map<std::string, std::string>> zone_attributes) {
  NrtInput in;
  in.node_name = "n1";
  in.topology = &topo;
  in.system_cpus = CpuSet{0};
  in.policy = "single-numa-node";
  in.zone_attributes = std::move(zone_attributes);
  absl::StatusOr<nlohmann::json> nrt = BuildNrt(in);
  EXPECT_TRUE(nrt.ok()) << nrt.status();
  return nrt.ok() ? *nrt : nlohmann::json();
}

TEST(NodeFromJson, EveryNameOfAnImageCarriesItsSizeAndMalformedEntriesAreSkipped) {
  const nlohmann::json node = {
      {"metadata", {{"name", "n1"}}},
      {"status",
       {{"images",
         {{{"names", {"docker.io/library/nginx@sha256:ab", "docker.io/library/nginx:1.25"}}, {"sizeBytes", 70000000}},
          {{"names", {"app:v2"}}, {"sizeBytes", "big"}},
          {{"names", "app:v3"}, {"sizeBytes", 5}},
          "junk"}}}}};
  absl::StatusOr<sched::Node> n = NodeFromJson(node);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(n->images, (std::map<std::string, int64_t>{{"docker.io/library/nginx:1.25", 70000000},
                                                       {"docker.io/library/nginx@sha256:ab", 70000000}}));
}

TEST(PodFromJson, ContainerImagesAreNamedAsImageLocalityMatchesThem) {
  const nlohmann::json pod = {
      {"metadata", {{"name", "web"}, {"namespace", "default"}, {"uid", "u1"}}},
      {"spec",
       {{"initContainers", {{{"name", "init"}, {"image", "registry:5000/setup"}}}},
        {"containers", {{{"name", "app"}, {"image", "nginx:1.25"}}, {{"name", "side"}, {"image", "envoy"}}}}}}};
  absl::StatusOr<sched::Pod> p = PodFromJson(pod);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->container_images,
            (std::vector<std::string>{"registry:5000/setup:latest", "nginx:1.25", "envoy:latest"}));
}

TEST(NodeStateFromNrt, CapacityFactorsOfTheZonesBecomeTheNodesCapacity) {
  const CpuTopology topo = testing::DualSocketHT();
  absl::StatusOr<std::shared_ptr<const NodeState>> state = NodeStateFromNrt(
      PublishedNrt(topo, {{1, {{kCapacityFactorAttribute, "0.5"}}}}), NumaStrategy::kMostAllocated,
      CpuSet{});
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ((*state)->Config().capacity, (std::map<int, double>{{1, 0.5}}));
  EXPECT_EQ((*state)->Config().topology_policy, TopologyPolicy::kSingleNumaNode);
}

TEST(NodeStateFromNrt, AFactorOfOneOrNoneLeavesTheNodeAtFullCapacity) {
  const CpuTopology topo = testing::DualSocketHT();
  absl::StatusOr<std::shared_ptr<const NodeState>> state = NodeStateFromNrt(
      PublishedNrt(topo, {{0, {{kCapacityFactorAttribute, "1"}}}}), NumaStrategy::kMostAllocated,
      CpuSet{});
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_TRUE((*state)->Config().capacity.empty());
}

TEST(NodeStateFromNrt, DeviceResourcesOfTheZonesBecomeTheNodesDevices) {
  const CpuTopology topo = testing::DualSocketHT();
  nlohmann::json nrt = PublishedNrt(topo, {});
  // As NFD's topology-updater lists a device-plugin resource in the zone of its NUMA node.
  nrt["zones"][1]["resources"].push_back(
      {{"name", "nvidia.com/gpu"}, {"capacity", "2"}, {"allocatable", "2"}, {"available", "1"}});
  nrt["zones"][0]["resources"].push_back(
      {{"name", "huygens.io/isolated-cpu"}, {"capacity", "2"}, {"allocatable", "2"}, {"available", "2"}});
  NodeDevices in_use = {{"stale/entry", {{0, 9}}}};
  absl::StatusOr<std::shared_ptr<const NodeState>> state =
      NodeStateFromNrt(nrt, NumaStrategy::kMostAllocated, CpuSet{}, &in_use);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ((*state)->Config().devices, (NodeDevices{{"nvidia.com/gpu", {{1, 2}}}}));
  EXPECT_EQ(in_use, (NodeDevices{{"nvidia.com/gpu", {{1, 1}}}})) << "allocatable - available";

  nrt["zones"][1]["resources"].back()["available"] = "-1";
  state = NodeStateFromNrt(nrt, NumaStrategy::kMostAllocated, CpuSet{}, &in_use);
  ASSERT_FALSE(state.ok());
  EXPECT_THAT(std::string(state.status().message()),
              ::testing::HasSubstr("resource nvidia.com/gpu: available \"-1\" is not a device count"));
  nrt["zones"][1]["resources"].back()["available"] = "2";

  nrt["zones"][1]["resources"].back()["allocatable"] = "two";
  state = NodeStateFromNrt(nrt, NumaStrategy::kMostAllocated, CpuSet{});
  ASSERT_FALSE(state.ok());
  EXPECT_THAT(std::string(state.status().message()),
              ::testing::AllOf(::testing::HasSubstr("node-1"),
                               ::testing::HasSubstr("nvidia.com/gpu"),
                               ::testing::HasSubstr("not a device count")));
}

// Device counts are bounded, so that no sum of them overflows: a count beyond the bound, or a
// resource listed again in its zone whose counts add up beyond it, is an error naming the zone
// and the resource (three "4E" entries overflowed int64; the fuzzer keeps them as the seed
// scheduler/fuzz_seeds/nrt_fuzz/huygens-gpus-listed-thrice-4E.json).
TEST(NodeStateFromNrt, DeviceCountsBeyondTheBoundOrListedAgainBeyondItAreErrors) {
  const CpuTopology topo = testing::DualSocketHT();
  auto with_gpus = [&](std::vector<const char*> counts) {
    nlohmann::json nrt = PublishedNrt(topo, {});
    for (const char* c : counts) {
      nrt["zones"][1]["resources"].push_back(
          {{"name", "nvidia.com/gpu"}, {"capacity", c}, {"allocatable", c}, {"available", "0"}});
    }
    return NodeStateFromNrt(nrt, NumaStrategy::kMostAllocated, CpuSet{});
  };
  ASSERT_TRUE(with_gpus({"1048576"}).ok()) << with_gpus({"1048576"}).status();
  absl::StatusOr<std::shared_ptr<const NodeState>> state = with_gpus({"4E", "4E", "4E"});
  ASSERT_FALSE(state.ok());
  EXPECT_THAT(std::string(state.status().message()),
              ::testing::HasSubstr("zone \"node-1\": resource nvidia.com/gpu: allocatable \"4E\" is not a device "
                                   "count in [0, 1048576]"));
  state = with_gpus({"1048576", "1"});
  ASSERT_FALSE(state.ok());
  EXPECT_THAT(std::string(state.status().message()),
              ::testing::HasSubstr("zone \"node-1\": resource nvidia.com/gpu: more than 1048576 on NUMA node 1"));
}

TEST(NodeStateFromNrt, AFactorOutsideZeroToOneIsAnErrorNamingTheZoneAndAttribute) {
  const CpuTopology topo = testing::DualSocketHT();
  for (const std::string bad : {"0", "1.5", "-0.2", "half", "0.5x", ""}) {
    absl::StatusOr<std::shared_ptr<const NodeState>> state = NodeStateFromNrt(
        PublishedNrt(topo, {{1, {{kCapacityFactorAttribute, bad}}}}),
        NumaStrategy::kMostAllocated, CpuSet{});
    ASSERT_FALSE(state.ok()) << bad;
    EXPECT_THAT(std::string(state.status().message()),
                ::testing::AllOf(::testing::HasSubstr("node-1"),
                                 ::testing::HasSubstr(kCapacityFactorAttribute)))
        << bad;
  }
}

TEST(NodeStateFromNrt, TheMemoryManagerPolicyAndReservedMemoryRoundTripThroughTheZones) {
  CpuTopology machine = testing::DualSocketHT();
  std::vector<NumaNode> nodes = machine.NumaNodes();
  nodes[1].hugepages = {{uint64_t{1} << 30, 2}};
  const CpuTopology topo = *CpuTopology::Create(machine.Cpus(), nodes, machine.Machine());
  NrtInput in;
  in.node_name = "n1";
  in.topology = &topo;
  in.system_cpus = CpuSet{0};
  in.policy = "single-numa-node";
  in.memory_manager_policy = "Static";
  in.memory_reserved = {{0, {{"memory", uint64_t{1} << 30}}},
                        {1, {{"memory", uint64_t{512} << 20}, {"hugepages-1Gi", uint64_t{1} << 30}}}};
  in.memory_used = {{0, {{"memory", uint64_t{2} << 30}}}};  // what pods use is not reserved
  absl::StatusOr<nlohmann::json> nrt = BuildNrt(in);
  ASSERT_TRUE(nrt.ok()) << nrt.status();
  absl::StatusOr<std::shared_ptr<const NodeState>> state =
      NodeStateFromNrt(*nrt, NumaStrategy::kMostAllocated, CpuSet{});
  ASSERT_TRUE(state.ok()) << state.status();
  ASSERT_TRUE((*state)->Config().memory_manager.has_value());
  EXPECT_TRUE((*state)->Config().memory_manager->static_policy);
  EXPECT_EQ((*state)->Config().memory_manager->reserved_memory, in.memory_reserved);
  ASSERT_NE((*state)->Memory(), nullptr);

  // Without the attribute memory is not modelled; an unknown policy is an error naming it.
  in.memory_manager_policy.clear();
  absl::StatusOr<std::shared_ptr<const NodeState>> plain =
      NodeStateFromNrt(*BuildNrt(in), NumaStrategy::kMostAllocated, CpuSet{});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ((*plain)->Memory(), nullptr);
  nlohmann::json bad = *nrt;
  for (auto& a : bad["attributes"]) {
    if (a["name"] == kMemoryManagerPolicyAttribute) a["value"] = "static-ish";
  }
  absl::StatusOr<std::shared_ptr<const NodeState>> refused =
      NodeStateFromNrt(bad, NumaStrategy::kMostAllocated, CpuSet{});
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()),
              ::testing::HasSubstr(kMemoryManagerPolicyAttribute));
}

}  // namespace
}  // namespace huygens::scheduler
