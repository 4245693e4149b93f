// NodeStateFromNrt: the node's CPU state as the agent publishes it, including the per-NUMA
// capacity factors (zone attribute huygens.io/capacity-factor).
#include "scheduler/objects.h"

#include <map>
#include <string>

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

}  // namespace
}  // namespace huygens::scheduler
