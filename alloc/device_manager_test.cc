#include "alloc/device_manager.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace huygens {
namespace {

using ::testing::ElementsAre;

TopologyHint H(std::vector<int> numa, bool preferred) { return {std::move(numa), preferred}; }

const std::vector<int> kTwo = {0, 1};
const std::vector<int> kFour = {0, 1, 2, 3};

TEST(DeviceHints, OneDeviceOnEachOfTwoNumaNodes) {
  // kubelet's topology_hints_test "2 devices, 1 request": {0} and {1} preferred, {0,1} not.
  EXPECT_THAT(DeviceHints(kTwo, {{0, 1}, {1, 1}}, {{0, 1}, {1, 1}}, {}, 1),
              ElementsAre(H({0}, true), H({1}, true), H({0, 1}, false)));
}

TEST(DeviceHints, ARequestThatNeedsBothNumaNodesPrefersThePair) {
  EXPECT_THAT(DeviceHints(kTwo, {{0, 1}, {1, 1}}, {{0, 1}, {1, 1}}, {}, 2),
              ElementsAre(H({0, 1}, true)));
}

TEST(DeviceHints, PreferenceCountsEveryDeviceButHintsOnlyFreeOnes) {
  // Two GPUs on NUMA node 0, one taken; one on node 1. A request of 2 could fit node 0 alone
  // (minAffinitySize 1), so the only hint, {0,1}, is not preferred.
  EXPECT_THAT(DeviceHints(kTwo, {{0, 2}, {1, 1}}, {{0, 1}, {1, 1}}, {}, 2),
              ElementsAre(H({0, 1}, false)));
}

TEST(DeviceHints, NumaNodesWithoutDevicesAreVisitedToo) {
  // kubelet iterates every NUMA node of the machine: sets with a device-less node qualify.
  const auto hints = DeviceHints(kFour, {{2, 1}}, {{2, 1}}, {}, 1);
  ASSERT_FALSE(hints.empty());
  EXPECT_EQ(hints[0], H({2}, true));
  EXPECT_EQ(hints[1], H({0, 2}, false));
  EXPECT_EQ(hints.size(), 8u);  // every set containing node 2
}

TEST(DeviceHints, ReusableDevicesMustLieInTheSet) {
  // One reusable device on node 1 (an init container's): only sets with node 1 are hints.
  EXPECT_THAT(DeviceHints(kTwo, {{0, 1}, {1, 1}}, {{0, 1}}, {{1, 1}}, 1),
              ElementsAre(H({1}, true), H({0, 1}, false)));
}

TEST(DeviceHints, MaxSetSizeBoundsTheSetsVisited) {
  EXPECT_THAT(DeviceHints(kFour, {{0, 1}, {1, 1}, {2, 1}, {3, 1}},
                          {{0, 1}, {1, 1}, {2, 1}, {3, 1}}, {}, 3, 2),
              ElementsAre());
}

TEST(DeviceProviderHints, NoDevicesMeansNoPreferenceTooFewMeansNoAlignment) {
  const NodeDevices total = {{"example.com/gpu", {{0, 1}, {1, 1}}},
                             {"example.com/nic", {}}};
  const NodeDevices available = {{"example.com/gpu", {{1, 1}}}};
  const auto hints = DeviceProviderHints(
      kTwo, total, available, {},
      {{"example.com/gpu", 2}, {"example.com/nic", 1}, {"example.com/other", 1}});
  ASSERT_EQ(hints.size(), 2u) << "example.com/other is no device-plugin resource here";
  ASSERT_TRUE(hints.at("example.com/gpu").has_value());
  EXPECT_TRUE(hints.at("example.com/gpu")->empty()) << "one free device for a request of 2";
  EXPECT_FALSE(hints.at("example.com/nic").has_value());

  const auto one = DeviceProviderHints(kTwo, total, available, {}, {{"example.com/gpu", 1}});
  EXPECT_THAT(*one.at("example.com/gpu"), ElementsAre(H({1}, true), H({0, 1}, false)));
}

TEST(TakeDevices, TheHintsNumaNodesFirstThenTheRest) {
  auto take = TakeDevices("example.com/gpu", {{0, 2}, {1, 2}}, {}, 3, {1});
  ASSERT_TRUE(take.ok()) << take.status();
  EXPECT_EQ(take->from_available, (NumaDeviceCounts{{0, 1}, {1, 2}}));
  EXPECT_TRUE(take->from_reusable.empty());
}

TEST(TakeDevices, ReusableDevicesFirst) {
  auto take = TakeDevices("example.com/gpu", {{0, 2}}, {{1, 1}}, 2, {0});
  ASSERT_TRUE(take.ok()) << take.status();
  EXPECT_EQ(take->from_reusable, (NumaDeviceCounts{{1, 1}}));
  EXPECT_EQ(take->from_available, (NumaDeviceCounts{{0, 1}}));
}

TEST(TakeDevices, WithoutAffinityTheNumaNodeWithFewestFreeDevicesFirst) {
  auto take = TakeDevices("example.com/gpu", {{0, 3}, {1, 1}}, {}, 2, {});
  ASSERT_TRUE(take.ok()) << take.status();
  EXPECT_EQ(take->from_available, (NumaDeviceCounts{{0, 1}, {1, 1}}));
}

TEST(TakeDevices, TooFewIsKubeletsError) {
  auto take = TakeDevices("example.com/gpu", {{0, 1}}, {}, 2, {0});
  ASSERT_FALSE(take.ok());
  EXPECT_EQ(take.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(take.status().message(),
            "requested number of devices unavailable for example.com/gpu. Requested: 2, "
            "Available: 1");
}

}  // namespace
}  // namespace huygens
