#include "alloc/hints.h"

#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "topology/testing/machines.h"

namespace huygens {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::DualSocketHT;
using testing::DualSocketHTWithOffline;
using testing::DualSocketMultiNumaPerSocketHT;
using testing::SparseNumaIds;

TopologyHint H(std::vector<int> nodes, bool preferred) { return {std::move(nodes), preferred}; }

CpuSet Cpus(const std::string& list) { return *CpuSet::Parse(list); }

struct HintCase {
  std::string name;
  CpuTopology topo;
  std::string available;
  std::string reusable;
  int num_cpus;
  bool align_by_socket;
  std::vector<TopologyHint> want;
};

class CpuHintsTest : public ::testing::TestWithParam<HintCase> {};

TEST_P(CpuHintsTest, MatchesKubeletsStaticPolicy) {
  const HintCase& c = GetParam();
  EXPECT_EQ(CpuHints(c.topo, Cpus(c.available), Cpus(c.reusable), c.num_cpus, c.align_by_socket),
            c.want);
}

// DualSocketHT: NUMA node 0 = CPUs 0-5,12-17; NUMA node 1 = CPUs 6-11,18-23.
// DualSocketMultiNumaPerSocketHT: NUMA node n = CPUs 4n..4n+3 and 16+4n..16+4n+3; sockets
// hold nodes {0,1} and {2,3}. SparseNumaIds: the same shape with NUMA ids 0, 1, 4, 5.
INSTANTIATE_TEST_SUITE_P(
    Table, CpuHintsTest,
    ::testing::Values(
        HintCase{"RequestFittingOneNodePrefersEachSingleNode", DualSocketHT(), "0-23", "", 4,
                 false, {H({0}, true), H({1}, true), H({0, 1}, false)}},
        HintCase{"RequestLargerThanANodePrefersOnlyThePair", DualSocketHT(), "0-23", "", 13,
                 false, {H({0, 1}, true)}},
        HintCase{"NodeWithTooFewFreeCpusGivesNoHint", DualSocketHT(), "0-1,6-11,18-23", "", 4,
                 false, {H({1}, true), H({0, 1}, false)}},
        // 4 free on each node: only the pair can hold 6, but one node could by allocatable
        // CPUs, so kubelet does not prefer the pair.
        HintCase{"PreferenceCountsAllocatableNotFreeCpus", DualSocketHT(), "0-3,6-9", "", 6,
                 false, {H({0, 1}, false)}},
        HintCase{"ReusableCpusRestrictHintsToTheirNodes", DualSocketHT(), "0-5,7-11", "6", 2,
                 false, {H({1}, true), H({0, 1}, false)}},
        HintCase{"ReusableCpusCountTowardsTheRequest", DualSocketHT(), "7", "6", 2, false,
                 {H({1}, true), H({0, 1}, false)}},
        HintCase{"NoCombinationCanHoldTheRequest", DualSocketHT(), "0-23", "", 25, false, {}},
        HintCase{"SparseNumaIdsKeepKubeletsOrder", SparseNumaIds(), "0-31", "", 10, false,
                 {H({0, 1}, true), H({0, 4}, true), H({0, 5}, true), H({1, 4}, true),
                  H({1, 5}, true), H({4, 5}, true), H({0, 1, 4}, false), H({0, 1, 5}, false),
                  H({0, 4, 5}, false), H({1, 4, 5}, false), H({0, 1, 4, 5}, false)}},
        // CPUs 5 and 17 (node 0) and 18 (node 1) are offline: 10 and 11 allocatable CPUs.
        HintCase{"OfflineCpusAreNeitherAllocatableNorAvailable", DualSocketHTWithOffline(),
                 "0-23", "", 11, false, {H({1}, true), H({0, 1}, false)}},
        HintCase{"WithoutAlignBySocketOnlyTheNarrowestArePreferred",
                 DualSocketMultiNumaPerSocketHT(), "0-31", "", 6, false,
                 {H({0}, true), H({1}, true), H({2}, true), H({3}, true), H({0, 1}, false),
                  H({0, 2}, false), H({0, 3}, false), H({1, 2}, false), H({1, 3}, false),
                  H({2, 3}, false), H({0, 1, 2}, false), H({0, 1, 3}, false),
                  H({0, 2, 3}, false), H({1, 2, 3}, false), H({0, 1, 2, 3}, false)}},
        HintCase{"AlignBySocketAlsoPrefersHintsWithinOneSocket",
                 DualSocketMultiNumaPerSocketHT(), "0-31", "", 6, true,
                 {H({0}, true), H({1}, true), H({2}, true), H({3}, true), H({0, 1}, true),
                  H({0, 2}, false), H({0, 3}, false), H({1, 2}, false), H({1, 3}, false),
                  H({2, 3}, true), H({0, 1, 2}, false), H({0, 1, 3}, false),
                  H({0, 2, 3}, false), H({1, 2, 3}, false), H({0, 1, 2, 3}, false)}}),
    [](const ::testing::TestParamInfo<HintCase>& p) { return p.param.name; });

TEST(CpuHintsFromCountsTest, IgnoresNodesWithoutAllocatableCpusAndSumsDuplicates) {
  const std::vector<NumaCounts> counts = {{3, 0, 0}, {1, 4, 4}, {0, 2, 1}, {0, 2, 2}};
  // Node 0: 4 allocatable, 3 free; node 1: 4 and 4; node 3 has no CPUs.
  EXPECT_THAT(CpuHintsFromCounts(counts, 4),
              ElementsAre(H({1}, true), H({0, 1}, false)));
}

TEST(CpuHintsFromCountsTest, MaxAllowableNumaNodesBoundsTheCombinations) {
  std::vector<NumaCounts> counts;
  for (int numa = 0; numa < 10; ++numa) counts.push_back({numa, 4, 4});
  // 33 CPUs need 9 of the 10 nodes.
  EXPECT_THAT(CpuHintsFromCounts(counts, 33), IsEmpty());
  const std::vector<TopologyHint> hints = CpuHintsFromCounts(counts, 33, 10);
  ASSERT_EQ(hints.size(), 11u);  // C(10,9) preferred + the whole machine
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(hints[i].numa_nodes.size(), 9u);
    EXPECT_TRUE(hints[i].preferred);
  }
  EXPECT_EQ(hints[10], H({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, false));
}

TEST(CpuHintsFromCountsTest, AgreesWithTheCpuSetVersionOnRandomStates) {
  std::mt19937 rng(7);
  const CpuTopology topo = DualSocketMultiNumaPerSocketHT();
  for (int round = 0; round < 200; ++round) {
    CpuSet::Builder free;
    for (int cpu = 0; cpu < 32; ++cpu) {
      if (rng() % 2) free.Add(cpu);
    }
    const CpuSet available = free.Build();
    const int num_cpus = static_cast<int>(rng() % 34);
    std::vector<NumaCounts> counts;
    for (int numa : topo.NumaNodeIdsWithCpus()) {
      const CpuSet node = topo.CpusInNumaNode(numa);
      counts.push_back({numa, node.Size(), available.IntersectionSize(node)});
    }
    EXPECT_EQ(CpuHintsFromCounts(counts, num_cpus), CpuHints(topo, available, {}, num_cpus))
        << "available " << available << " num_cpus " << num_cpus;
  }
}

TEST(CpuProviderHintsTest, ZeroCpusIsNoPreference) {
  const auto hints = CpuProviderHints(DualSocketHT(), Cpus("0-23"), {}, 0);
  ASSERT_TRUE(hints.contains("cpu"));
  EXPECT_FALSE(hints.at("cpu").has_value());
}

TEST(CpuProviderHintsTest, ImpossibleRequestIsAnEmptyList) {
  const auto hints = CpuProviderHints(DualSocketHT(), Cpus("0-3"), {}, 8);
  ASSERT_TRUE(hints.at("cpu").has_value());
  EXPECT_THAT(*hints.at("cpu"), IsEmpty());
}

// ---- Request sizes per scope ------------------------------------------------------------

ContainerSpec Guaranteed(std::string name, int cpus, bool init = false,
                         bool restartable = false) {
  ContainerSpec c;
  c.name = std::move(name);
  c.cpu_request_milli = c.cpu_limit_milli = cpus * 1000;
  c.memory_request_bytes = c.memory_limit_bytes = int64_t{1} << 30;
  c.init = init;
  c.restartable = restartable;
  return c;
}

struct PodCase {
  std::string name;
  std::vector<ContainerSpec> init;
  std::vector<ContainerSpec> app;
  int want;
};

class PodExclusiveCpusTest : public ::testing::TestWithParam<PodCase> {};

TEST_P(PodExclusiveCpusTest, MatchesKubeletsPodGuaranteedCpus) {
  PodSpec pod;
  pod.init_containers = GetParam().init;
  pod.containers = GetParam().app;
  EXPECT_EQ(PodExclusiveCpus(pod), GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    Table, PodExclusiveCpusTest,
    ::testing::Values(
        PodCase{"AppContainersAddUp", {}, {Guaranteed("a", 2), Guaranteed("b", 3)}, 5},
        PodCase{"ALargerInitContainerWins", {Guaranteed("i", 6, true)},
                {Guaranteed("a", 2), Guaranteed("b", 3)}, 6},
        PodCase{"SidecarsAddToAppContainers", {Guaranteed("s", 2, true, true)},
                {Guaranteed("a", 3)}, 5},
        // The init container after the sidecar runs beside it: 2 + 4.
        PodCase{"InitAfterSidecarCountsTheSidecar",
                {Guaranteed("s", 2, true, true), Guaranteed("i", 4, true)},
                {Guaranteed("a", 3)}, 6},
        PodCase{"InitBeforeSidecarDoesNot",
                {Guaranteed("i", 4, true), Guaranteed("s", 2, true, true)},
                {Guaranteed("a", 1)}, 4}),
    [](const ::testing::TestParamInfo<PodCase>& p) { return p.param.name; });

TEST(PodExclusiveCpusTest, BurstablePodHasNone) {
  PodSpec pod;
  pod.containers = {Guaranteed("a", 2)};
  pod.containers[0].cpu_limit_milli = 4000;
  EXPECT_EQ(PodExclusiveCpus(pod), 0);
}

TEST(PodExclusiveCpusTest, PodLevelResourcesGetNoExclusiveCpus) {
  PodSpec pod;
  pod.containers = {Guaranteed("a", 2)};
  pod.pod_cpu_request_milli = pod.pod_cpu_limit_milli = 2000;
  EXPECT_EQ(PodExclusiveCpus(pod), 0);
  EXPECT_THAT(AdmissionUnits(pod, TopologyScope::kContainer),
              ElementsAre(AdmissionUnit{"a", false, 0}));
}

TEST(AdmissionUnitsTest, PodScopeIsOneUnitWithThePodsTotal) {
  PodSpec pod;
  pod.init_containers = {Guaranteed("i", 6, true)};
  pod.containers = {Guaranteed("a", 2), Guaranteed("b", 3)};
  EXPECT_THAT(AdmissionUnits(pod, TopologyScope::kPod), ElementsAre(AdmissionUnit{"", false, 6}));
}

TEST(AdmissionUnitsTest, ContainerScopeIsInitContainersThenAppContainers) {
  PodSpec pod;
  pod.init_containers = {Guaranteed("i", 6, true)};
  pod.containers = {Guaranteed("a", 2), Guaranteed("b", 3)};
  EXPECT_THAT(AdmissionUnits(pod, TopologyScope::kContainer),
              ElementsAre(AdmissionUnit{"i", true, 6}, AdmissionUnit{"a", false, 2},
                          AdmissionUnit{"b", false, 3}));
}

}  // namespace
}  // namespace huygens
