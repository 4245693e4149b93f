#include "alloc/huygens_allocator.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "alloc/hints.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "topology/testing/machines.h"

namespace huygens {
namespace {

using ::testing::HasSubstr;
using namespace huygens::testing;  // NOLINT: the named machines

CpuSet Cpus(const std::string& list) { return *CpuSet::Parse(list); }

constexpr BindPolicy kPacked = BindPolicy::kPacked;
constexpr BindPolicy kFull = BindPolicy::kFullCores;
constexpr BindPolicy kSpread = BindPolicy::kSpreadCores;
constexpr TopologyPolicy kSingle = TopologyPolicy::kSingleNumaNode;
constexpr TopologyPolicy kRestricted = TopologyPolicy::kRestricted;
constexpr TopologyPolicy kBestEffort = TopologyPolicy::kBestEffort;
constexpr NumaStrategy kMost = NumaStrategy::kMostAllocated;
constexpr NumaStrategy kLeast = NumaStrategy::kLeastAllocated;
constexpr NumaStrategy kNearest = NumaStrategy::kNearest;

ExclusiveRequest Req(int n, BindPolicy bind = kPacked, TopologyPolicy policy = kSingle,
                     NumaStrategy strategy = kMost) {
  ExclusiveRequest r;
  r.num_cpus = n;
  r.bind_policy = bind;
  r.topology_policy = policy;
  r.numa_strategy = strategy;
  return r;
}

ExclusiveRequest With(ExclusiveRequest r, std::map<int, double> capacity) {
  r.capacity = std::move(capacity);
  return r;
}
ExclusiveRequest Near(ExclusiveRequest r, std::vector<int> near) {
  r.near_numa_nodes = std::move(near);
  return r;
}
ExclusiveRequest Own(ExclusiveRequest r, const std::string& pod_cpus) {
  r.pod_cpus = *CpuSet::Parse(pod_cpus);
  return r;
}
ExclusiveRequest Pool(ExclusiveRequest r, const std::string& allocatable_cpus) {
  r.allocatable_cpus = *CpuSet::Parse(allocatable_cpus);
  return r;
}
ExclusiveRequest Within(ExclusiveRequest r, std::vector<int> within) {
  r.within_numa_nodes = std::move(within);
  return r;
}

struct AllocCase {
  std::string name;
  CpuTopology topo;
  std::string available;
  ExclusiveRequest request;
  std::string want_cpus;         // when ok
  std::vector<int> want_numa;    // when ok
  std::string want_error = "";   // substring, when the allocation must fail
};

class AllocateExclusiveTest : public ::testing::TestWithParam<AllocCase> {};

TEST_P(AllocateExclusiveTest, PicksTheDocumentedCpus) {
  const AllocCase& c = GetParam();
  absl::StatusOr<ExclusiveAllocation> got =
      AllocateExclusive(c.topo, Cpus(c.available), c.request);
  if (!c.want_error.empty()) {
    ASSERT_FALSE(got.ok()) << got->cpus;
    EXPECT_THAT(got.status().message(), HasSubstr(c.want_error));
    return;
  }
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->cpus, Cpus(c.want_cpus));
  EXPECT_EQ(got->numa_nodes, c.want_numa);
}

// 1 socket x 4 NUMA nodes x 4 cores x 2 threads (NUMA node n = CPUs 4n..4n+3, 16+4n..16+4n+3),
// with two pairs of close nodes: distance 12 between 0 and 1 and between 2 and 3, 32 between
// the pairs (sub-NUMA clustering with two memory controllers per die, say). Sockets then tie,
// so only the distances tell the sets apart.
CpuTopology SingleSocketTwoNumaPairs() {
  const CpuTopology base = BuildMachine({.numa_per_socket = 4, .cores_per_numa = 4});
  std::vector<NumaNode> nodes = base.NumaNodes();
  for (NumaNode& node : nodes) {
    for (auto& [other, distance] : node.distances) {
      if (other != node.id) distance = other / 2 == node.id / 2 ? 12 : 32;
    }
  }
  return *CpuTopology::Create(base.Cpus(), std::move(nodes), base.Machine());
}

// Machines (topology/testing/machines.h):
//   DualSocketHT: NUMA node 0 = cores 0-5 (CPUs c, c+12), node 1 = cores 6-11.
//   SingleSocketHT: cores 0-3, CPUs c and c+4.
//   DualSocketHTAdjacent: core c = CPUs 2c, 2c+1; node 0 = cores 0-5.
//   QuadSocket4NumaSMT: NUMA node n = cores 4n..4n+3 = CPUs 4n..4n+3, 32+4n..32+4n+3;
//     distances 12 inside a socket (nodes {0,1}, {2,3}, ...), 32 across.
//   SingleSocketFourL3: L3 group g = cores 4g..4g+3 = CPUs 4g..4g+3, 16+4g..16+4g+3.
//   EpycLikeSplitL3: NUMA node n = cores 16n..16n+15 = CPUs 32n..32n+31 (siblings adjacent);
//     L3 group 2n = CPUs 32n..32n+15, 2n+1 = CPUs 32n+16..32n+31.
//   SparseNumaIds: NUMA ids 0, 1, 4, 5; id 4 = cores 8-11 = CPUs 8-11, 24-27.
//   DualSocketHTWithOffline: CPUs 5, 17 (node 0) and 18 (node 1) offline.
INSTANTIATE_TEST_SUITE_P(
    Table, AllocateExclusiveTest,
    ::testing::Values(
        // ---- NUMA set and strategies ----
        AllocCase{"EqualNodesGoToTheLowestIdInKubeletsOrder", DualSocketHT(), "0-23", Req(4),
                  "0-1,12-13", {0}},
        // Node 1 has 6 free, node 0 has 12: packing fills node 1.
        AllocCase{"MostAllocatedPacksTheFullerNode", DualSocketHT(), "0-5,12-17,6-8,18-20",
                  Req(6), "6-8,18-20", {1}},
        // Waste before the strategy (alloc/waste.h): 6 CPUs on the fuller node 1 (8 free) would
        // strand 2 CPUs there; on node 0 (10 free) they leave 4, too few for a second 6-CPU
        // pod: a clean fit, which wins.
        AllocCase{"MostAllocatedTakesACleanFitOverAStrandingBestFit", DualSocketHT(),
                  "0-4,12-16,6-9,18-21", Req(6), "0-2,12-14", {0}},
        // But a stranding best fit beats breaking a hole that holds two such pods: 4 CPUs on
        // node 1 (6 free) strand 2; node 0 (12 free) would keep room for two more.
        AllocCase{"MostAllocatedStrandsRatherThanBreakABigHole", DualSocketHT(),
                  "0-5,12-17,6-8,18-20", Req(4), "6-7,18-19", {1}},
        // And a core shared with another pod counts first: node 1 has 4 free CPUs but only
        // one whole free core (7/19; 6 and 8 have a busy sibling), node 0 has whole cores.
        AllocCase{"MostAllocatedDoesNotShareACoreWhenAnotherNodeHasWholeCores", DualSocketHT(),
                  "0-5,12-17,6-8,19", Req(4), "0-1,12-13", {0}},
        AllocCase{"LeastAllocatedBalancesToTheEmptierNode", DualSocketHT(),
                  "0-5,12-17,6-8,18-20", Req(4, kPacked, kSingle, kLeast), "0-1,12-13", {0}},
        AllocCase{"NearestTakesTheNearNodeItself", QuadSocket4NumaSMT(), "0-63",
                  Near(Req(4, kPacked, kSingle, kNearest), {5}), "20-21,52-53", {5}},
        AllocCase{"NearestFallsBackToTheSameSocket", QuadSocket4NumaSMT(),
                  "0-19,24-51,56-63", Near(Req(4, kPacked, kSingle, kNearest), {5}),
                  "16-17,48-49", {4}},
        // Packed takes whole free cores first: kubelet's order would take the third CPU from a
        // half-used core (3, whose sibling 15 another pod holds), Huygens from free core 1.
        AllocCase{"PackedTakesAFreeCoresThreadNotTheLastThreadOfABusyCore", DualSocketHT(),
                  "0-5,12-14,6-11,18-23", Req(3), "0-1,12", {0}},
        // ... but the last thread of a core the same pod holds (pod_cpus: an earlier container
        // of the pod has CPU 3) is taken first: the pod fills its own half core.
        AllocCase{"PackedFillsTheHalfCoreOfItsOwnPodFirst", DualSocketHT(),
                  "0-2,4-5,12-17,6-11,18-23", Own(Req(1), "3"), "15", {0}},
        // ... and so is a thread whose sibling is in the system pool (CPU 0, outside
        // allocatable_cpus): it shares its core with no pod, and kubelet's take fills it
        // first. Taking a thread of free core 2 instead would leave 14 a half core that the
        // next odd CPU must share with this pod.
        AllocCase{"PackedFillsTheHalfCoreBesideTheSystemPoolFirst", DualSocketHT(),
                  "1-5,12-17,6-11,18-23", Pool(Req(3), "1-23"), "1,12-13", {0}},
        // Without allocatable_cpus, CPU 0 may be another pod's: its sibling is left alone.
        AllocCase{"PackedLeavesAHalfCoreOfAnUnknownHolderAlone", DualSocketHT(),
                  "1-5,12-17,6-11,18-23", Req(3), "1-2,13", {0}},
        // The NUMA node choice counts the pod's own half core too: 3 CPUs, node 0 has one
        // whole free core (4/16) and the free sibling of CPU 3, which the pod holds; node 1 has
        // three whole free cores. Without its own half core, node 0 would split a core with
        // another pod and lose to node 1; with it, node 0 is an exact fit sharing nothing.
        AllocCase{"PackedCountsItsOwnHalfCoreWhenChoosingTheNumaNode", DualSocketHT(),
                  "4,15-16,6-8,18-20", Own(Req(3), "3"), "4,15-16", {0}},
        AllocCase{"NearestWithoutNearNodesPacks", DualSocketHT(), "0-5,12-17,6-8,18-20",
                  Req(6, kPacked, kSingle, kNearest), "6-8,18-20", {1}},
        // 20 CPUs need 3 of the 8 nodes; near node 6: nodes 6 and 7 (same socket) give 8
        // each, the third node (lowest id) the rest.
        AllocCase{"NearestSpreadsOverTheNearestNodesFirst", QuadSocket4NumaSMT(), "0-63",
                  Near(Req(20, kPacked, kBestEffort, kNearest), {6}), "0-1,24-33,56-63",
                  {0, 6, 7}},
        AllocCase{"BestEffortUsesTheFewestNodes", QuadSocket4NumaSMT(), "0-63",
                  Req(20, kPacked, kBestEffort), "0-9,32-41", {0, 1, 2}},
        // ---- Multi-NUMA sets: fewest sockets, then smallest distances, then the strategy ----
        // 12 CPUs, node 1 (socket 0) has 4 free, nodes 2 and 3 (socket 1) 8 each. Best fit
        // alone would take node 1 + node 2 (12 offered, two sockets); socket 1 has room.
        AllocCase{"MultiNumaSetsStayInOneSocketWhenItHasRoom", QuadSocket4NumaSMT(),
                  "4-5,36-37,8-15,40-47", Req(12, kPacked, kBestEffort), "8-13,40-45",
                  {2, 3}},
        // 12 CPUs, least-allocated: nodes 1 and 4 (sockets 0 and 2) offer 8 each, nodes 2 and
        // 3 (socket 1) 6 each. Balancing alone would take the largest pair, 1 + 4.
        AllocCase{"MultiNumaSetsStayInOneSocketAlsoWhenBalancing", QuadSocket4NumaSMT(),
                  "4-7,36-39,8-10,40-42,12-14,44-46,16-19,48-51",
                  Req(12, kPacked, kBestEffort, kLeast), "8-10,12-14,40-42,44-46", {2, 3}},
        // 12 CPUs, free: node 0 6, node 1 8, node 2 6. Best fit alone would take nodes 0 + 2
        // (12 offered, distance 32); nodes 0 + 1 are at distance 12: node 1 gives 8, node 0 4.
        AllocCase{"MultiNumaSetsPreferTheCloserPair", SingleSocketTwoNumaPairs(),
                  "0-3,16-17,4-7,20-23,8-11,24-25", Req(12, kPacked, kBestEffort),
                  "0-1,4-7,16-17,20-23", {0, 1}},
        AllocCase{"RestrictedSetsPreferTheCloserPair", SingleSocketTwoNumaPairs(),
                  "0-3,16-17,4-7,20-23,8-11,24-25", Req(12, kPacked, kRestricted),
                  "0-1,4-7,16-17,20-23", {0, 1}},
        AllocCase{"SingleNumaNodeSaysWhyItCannot", DualSocketHT(), "0-4,12-16,6-9,18-21",
                  Req(11), "", {}, "no single NUMA node has 11 free CPUs (largest: 10 on node 0)"},
        AllocCase{"BestEffortSpillsToASecondNode", DualSocketHT(), "0-4,12-16,6-9,18-21",
                  Req(11, kPacked, kBestEffort), "0-4,6,12-16", {0, 1}},
        AllocCase{"RestrictedAcceptsThePreferredTwoNodes", DualSocketHT(), "0-23",
                  Req(13, kPacked, kRestricted), "0-5,6,12-17", {0, 1}},
        // One node could hold 8 allocatable CPUs, so kubelet prefers only single nodes.
        AllocCase{"RestrictedRefusesANonPreferredSet", DualSocketHT(), "0-2,12-14,6-8,18-20",
                  Req(8, kPacked, kRestricted), "", {},
                  "restricted: no set of 1 NUMA nodes has 8 free CPUs (largest: 6 on nodes 0)"},
        AllocCase{"NotEnoughAnywhere", DualSocketHT(), "0-3", Req(5, kPacked, kBestEffort), "",
                  {}, "not enough free CPUs: requested 5, the usable NUMA nodes offer 4"},
        // ---- Capacity factors ----
        AllocCase{"HalfCapacityMakesANodeLookFuller", DualSocketHT(), "0-23",
                  With(Req(6), {{0, 0.5}}), "0-2,12-14", {0}},
        AllocCase{"HalfCapacityLimitsWhatANodeOffers", DualSocketHT(), "0-23",
                  With(Req(8), {{0, 0.5}}), "6-9,18-21", {1}},
        // floor(0.3 x 12) = 3.
        AllocCase{"CapacityIsRoundedDown", DualSocketHT(), "0-5,12-17", With(Req(4), {{0, 0.3}}),
                  "", {}, "no single NUMA node has 4 free CPUs (largest: 3 on node 0)"},
        // ---- Bind policies ----
        // Core 0 has only CPU 0 free; cores 1-3 are whole.
        AllocCase{"FullCoresSkipsSplitCores", DualSocketHT(), "0-3,13-15", Req(4, kFull),
                  "1-2,13-14", {0}},
        AllocCase{"FullCoresCountsOnlyWholeCores", DualSocketHT(), "0-5,12-14", Req(8, kFull),
                  "", {}, "no single NUMA node has 8 CPUs in free whole cores (largest: 6 on node 0)"},
        AllocCase{"FullCoresNeedsAWholeNumberOfCores", DualSocketHT(), "0-23", Req(3, kFull), "",
                  {}, "full-cores: 3 CPUs is not a whole number of cores (2 threads per core)"},
        AllocCase{"FullCoresWithoutSmtIsAnyCount", DualSocketNoHT(), "0-11", Req(3, kFull),
                  "0-2", {0}},
        AllocCase{"SpreadCoresTakesOneThreadPerCore", SingleSocketHT(), "0-7", Req(3, kSpread),
                  "0-2", {0}},
        // Cores 0 and 2 are whole; 1 and 3 have a busy sibling.
        AllocCase{"SpreadCoresPrefersCoresWithAllSiblingsFree", SingleSocketHT(), "0-4,6",
                  Req(2, kSpread), "0,2", {0}},
        AllocCase{"SpreadCoresUsesPartlyBusyCoresLast", SingleSocketHT(), "0-4,6",
                  Req(3, kSpread), "0-2", {0}},
        AllocCase{"SpreadCoresNeverTakesTwoSiblings", SingleSocketHT(), "0-7", Req(5, kSpread),
                  "", {}, "no single NUMA node has 5 cores with a free thread (largest: 4 on node 0)"},
        AllocCase{"SpreadCoresWithAdjacentSiblings", DualSocketHTAdjacent(), "0-23",
                  Req(3, kSpread), "0,2,4", {0}},
        // ---- L3 groups ----
        // L3 offers: group 0 has 2 free, 1 has 8, 2 has 5: the best fit for 4 is group 2.
        AllocCase{"PackedFitsTheSmallestL3GroupThatHoldsIt", SingleSocketFourL3(),
                  "0-1,4-7,20-23,8-10,24-25", Req(4), "8-9,24-25", {0}},
        AllocCase{"SpreadFitsInOneL3Group", SingleSocketFourL3(), "0-1,4-7,20-23,8-10,24-25",
                  Req(4, kSpread), "4-7", {0}},
        // Both nodes offer 12, but node 0's are split over two L3 groups.
        AllocCase{"EqualNodesGoToTheOneWithFewerL3Groups", EpycLikeSplitL3(), "0-5,16-21,32-43",
                  Req(8), "32-39", {1}},
        // ---- Restrictions, numbering, offline CPUs ----
        AllocCase{"WithinNumaNodesRestrictsTheChoice", DualSocketHT(), "0-23",
                  Within(Req(4), {1}), "6-7,18-19", {1}},
        AllocCase{"SparseNumaIdsAreReported", SparseNumaIds(), "8-15,24-31", Req(4),
                  "8-9,24-25", {4}},
        AllocCase{"OfflineCpusAreNeverTaken", DualSocketHTWithOffline(), "0-23", Req(11),
                  "6-11,19-23", {1}},
        AllocCase{"OfflineCpusDoNotCount", DualSocketHTWithOffline(), "0-23", Req(12), "", {},
                  "no single NUMA node has 12 free CPUs (largest: 11 on node 1)"},
        AllocCase{"ZeroCpusIsAnEmptyAllocation", DualSocketHT(), "0-23", Req(0), "", {}}),
    [](const ::testing::TestParamInfo<AllocCase>& p) { return p.param.name; });

TEST(AllocateExclusiveErrorsTest, BadRequestsNameTheField) {
  const CpuTopology topo = DualSocketHT();
  const CpuSet all = Cpus("0-23");
  struct Bad {
    ExclusiveRequest request;
    std::string message;
  };
  for (const Bad& bad : {
           Bad{Req(-1), "numCpus: -1 is negative"},
           Bad{With(Req(2), {{0, 1.5}}), "capacity: factor 1.5 for NUMA node 0 is outside (0,1]"},
           Bad{With(Req(2), {{0, 0.0}}), "outside (0,1]"},
           Bad{With(Req(2), {{7, 0.5}}), "capacity: NUMA node 7 is not in the topology"},
           Bad{Near(Req(2, kPacked, kSingle, kNearest), {9}),
               "nearNumaNodes: NUMA node 9 is not in the topology"},
           Bad{Within(Req(2), {3}), "withinNumaNodes: NUMA node 3 is not in the topology"},
       }) {
    absl::StatusOr<ExclusiveAllocation> got = AllocateExclusive(topo, all, bad.request);
    ASSERT_FALSE(got.ok()) << bad.message;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(got.status().message(), HasSubstr(bad.message));
  }
}

TEST(AllocateExclusiveTest, SpanningTwoL3GroupsUsesTheTwoLargest) {
  const CpuTopology topo = SingleSocketFourL3();
  absl::StatusOr<ExclusiveAllocation> got =
      AllocateExclusive(topo, Cpus("0-1,4-7,20-23,8-10,24-25"), Req(10));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->cpus.Size(), 10);
  EXPECT_EQ(topo.L3GroupsOf(got->cpus), (std::vector<int>{1, 2}));
}

// DualSocketHT (core c = CPUs c and c+12; NUMA 0 = cores 0-5). Another pod holds CPUs 12-14
// (one thread of cores 0-2) and cores 10-11: NUMA 0 offers 9 (3 half-held cores' threads and
// 3 whole cores), NUMA 1 offers 8 (4 whole cores). 14 CPUs need both; the 14 whole-core CPUs
// hold them, so no core is split with the other pod (first-come would take all 9 of NUMA 0).
TEST(AllocateExclusiveTest, SpanningNumaNodesTakesTheSetsWholeCoresBeforeHalfHeldOnes) {
  const CpuTopology topo = DualSocketHT();
  absl::StatusOr<ExclusiveAllocation> got =
      AllocateExclusive(topo, Cpus("0-9,15-21"), Req(14, kPacked, kBestEffort));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->cpus, Cpus("3-9,15-21"));
  EXPECT_EQ(got->numa_nodes, (std::vector<int>{0, 1}));
}

// ---- Properties on random machines and states -------------------------------------------

CpuTopology RandomMachine(std::mt19937& rng) {
  MachineSpec spec;
  spec.sockets = 1 + static_cast<int>(rng() % 4);
  spec.numa_per_socket = 1 + static_cast<int>(rng() % 2);
  spec.cores_per_numa = std::vector<int>{1, 2, 4, 6, 8}[rng() % 5];
  spec.threads_per_core = 1 + static_cast<int>(rng() % 2);
  spec.cores_per_l3 = (spec.cores_per_numa % 2 == 0 && rng() % 2) ? spec.cores_per_numa / 2 : 0;
  spec.numbering = rng() % 2 ? SiblingNumbering::kSplit : SiblingNumbering::kAdjacent;
  const int numa = spec.sockets * spec.numa_per_socket;
  if (rng() % 3 == 0) {
    for (int i = 0; i < numa; ++i) spec.numa_ids.push_back(i * 3 + 1);  // sparse
  }
  const int cpus = numa * spec.cores_per_numa * spec.threads_per_core;
  CpuSet::Builder offline;
  for (int cpu = 1; cpu < cpus; ++cpu) {
    if (rng() % 16 == 0) offline.Add(cpu);
  }
  spec.offline = offline.Build();
  return BuildMachine(spec);
}

TEST(PreferredNumaCountTest, TheFewestNodesWhoseLargestCountsHoldTheRequest) {
  const std::vector<int> counts = {3, 8, 3, 5};
  EXPECT_EQ(PreferredNumaCount(counts, 0), 1);
  EXPECT_EQ(PreferredNumaCount(counts, 8), 1);
  EXPECT_EQ(PreferredNumaCount(counts, 9), 2);   // 8 + 5
  EXPECT_EQ(PreferredNumaCount(counts, 16), 3);  // 8 + 5 + 3
  EXPECT_EQ(PreferredNumaCount(counts, 99), 4);  // none suffices: all of them
  EXPECT_EQ(PreferredNumaCount({}, 4), 0);
}

// A NUMA node of 2-thread cores with 9 free CPUs, 3 of whose cores are whole (3 half-free).
TEST(NumaOfferFromCountsTest, FollowsTheBindPolicysUnitUnderTheCapacityFactor) {
  EXPECT_EQ(NumaOfferFromCounts(BindPolicy::kPacked, 2, 9, 3, 1.0), 9);
  EXPECT_EQ(NumaOfferFromCounts(BindPolicy::kFullCores, 2, 9, 3, 1.0), 6);
  EXPECT_EQ(NumaOfferFromCounts(BindPolicy::kSpreadCores, 2, 9, 3, 1.0), 6);  // 3 + 3 half
  // Factor 0.5: floor(4.5) = 4 CPUs, then the unit.
  EXPECT_EQ(NumaOfferFromCounts(BindPolicy::kPacked, 2, 9, 3, 0.5), 4);
  EXPECT_EQ(NumaOfferFromCounts(BindPolicy::kFullCores, 2, 9, 3, 0.5), 4);
  EXPECT_EQ(NumaOfferFromCounts(BindPolicy::kFullCores, 2, 9, 3, 0.4), 2);  // floor(3.6)=3 -> 1 core
  EXPECT_EQ(NumaOfferFromCounts(BindPolicy::kSpreadCores, 2, 9, 3, 0.5), 4);
  // No SMT (threads_per_core 1, or 0 read as 1): every free CPU is a whole core.
  EXPECT_EQ(NumaOfferFromCounts(BindPolicy::kFullCores, 1, 5, 5, 1.0), 5);
  EXPECT_EQ(NumaOfferFromCounts(BindPolicy::kFullCores, 0, 5, 5, 1.0), 5);
  EXPECT_EQ(NumaOfferFromCounts(BindPolicy::kPacked, 2, 0, 0, 1.0), 0);
}

// DualSocketNoHT (NUMA 0 = CPUs 0-5, NUMA 1 = 6-11) with CPUs 0 and 6 reserved: 6 CPUs fit one
// node by online CPUs, so restricted refuses the 2-node set; sized by the user pool, two nodes
// are the preferred size and the request is met.
TEST(AllocateExclusiveTest, RestrictedSizesByAllocatableCpusWhenGiven) {
  const CpuTopology topo = DualSocketNoHT();
  const CpuSet user = CpuSet::Parse("1-5,7-11").value();
  ExclusiveRequest r{.num_cpus = 6, .topology_policy = TopologyPolicy::kRestricted};
  auto online_sized = AllocateExclusive(topo, user, r);
  ASSERT_FALSE(online_sized.ok());
  EXPECT_THAT(std::string(online_sized.status().message()),
              HasSubstr("restricted: no set of 1 NUMA nodes"));
  r.allocatable_cpus = user;
  auto user_sized = AllocateExclusive(topo, user, r);
  ASSERT_TRUE(user_sized.ok()) << user_sized.status();
  EXPECT_EQ(user_sized->numa_nodes, (std::vector<int>{0, 1}));
  EXPECT_EQ(user_sized->cpus.Size(), 6);
}

// Resize on DualSocketHT (NUMA 0 = 0-5,12-17): spread-cores never adds a sibling of a CPU the
// container holds; a grow that must leave the NUMA node is allowed only under best-effort.
TEST(ExclusiveResizeTest, GrowRespectsSpreadCoresAndTheTopologyPolicy) {
  const ExclusiveAllocator a(DualSocketHT());
  const CpuSet current{1, 2};
  ExclusiveRequest r{.num_cpus = 4, .bind_policy = BindPolicy::kSpreadCores};
  auto grown = a.Resize(current, a.Topology().OnlineCpus().Difference(current), r);
  ASSERT_TRUE(grown.ok()) << grown.status();
  EXPECT_TRUE(current.IsSubsetOf(*grown));
  EXPECT_EQ(a.Topology().CoresOf(*grown).size(), 4u);  // one thread per core
  EXPECT_TRUE(grown->IsSubsetOf(a.Topology().CpusInNumaNode(0)));
  const CpuSet numa0 = a.Topology().CpusInNumaNode(0);
  const CpuSet numa1_free = a.Topology().CpusInNumaNode(1);
  r = ExclusiveRequest{.num_cpus = 14, .bind_policy = BindPolicy::kPacked};
  EXPECT_EQ(a.Resize(numa0, numa1_free, r).status().code(), absl::StatusCode::kResourceExhausted);
  r.topology_policy = TopologyPolicy::kBestEffort;
  auto spilled = a.Resize(numa0, numa1_free, r);
  ASSERT_TRUE(spilled.ok()) << spilled.status();
  EXPECT_EQ(spilled->Difference(numa0).Size(), 2);
  EXPECT_EQ(a.Resize(CpuSet(), numa1_free, r).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(AllocateExclusivePropertyTest, ResultsAreSoundOnRandomMachinesAndStates) {
  std::mt19937 rng(2026);
  int allocated = 0, refused = 0;
  for (int round = 0; round < 3000; ++round) {
    const CpuTopology topo = RandomMachine(rng);
    CpuSet::Builder free;
    for (int cpu : topo.AllCpus()) {
      if (rng() % 4 != 0) free.Add(cpu);
    }
    const CpuSet available = free.Build();
    ExclusiveRequest r;
    r.num_cpus = static_cast<int>(rng() % (topo.NumCpus() + 2));
    r.bind_policy = std::vector<BindPolicy>{kPacked, kFull, kSpread}[rng() % 3];
    r.topology_policy = std::vector<TopologyPolicy>{TopologyPolicy::kNone, kBestEffort,
                                                    kRestricted, kSingle}[rng() % 4];
    r.numa_strategy = std::vector<NumaStrategy>{kMost, kLeast, kNearest}[rng() % 3];
    const std::vector<int> ids = topo.NumaNodeIds();
    if (rng() % 2) r.near_numa_nodes = {ids[rng() % ids.size()]};
    if (rng() % 3 == 0) r.capacity[ids[rng() % ids.size()]] = 0.25 * static_cast<double>(1 + rng() % 4);

    const ExclusiveAllocator allocator(topo);
    absl::StatusOr<ExclusiveAllocation> got = allocator.Allocate(available, r);
    absl::StatusOr<ExclusiveAllocation> again = allocator.Allocate(available, r);
    ASSERT_EQ(got.ok(), again.ok());
    const std::string context = ::testing::PrintToString(available) + " n=" +
                                std::to_string(r.num_cpus) + " bind=" + ToString(r.bind_policy) +
                                " policy=" + ToString(r.topology_policy);
    // Capacity per node in CPUs, for the soundness and completeness checks.
    auto bound = [&](int numa) {
      const double f = r.capacity.contains(numa) ? r.capacity.at(numa) : 1.0;
      const int free_cpus = available.IntersectionSize(topo.CpusInNumaNode(numa));
      return static_cast<int>(std::floor(f * free_cpus + 1e-9));
    };
    if (!got.ok()) {
      ++refused;
      EXPECT_EQ(got.status().code(), absl::StatusCode::kResourceExhausted) << got.status();
      // Completeness for packed: a refusal means no acceptable set could hold the request.
      if (r.bind_policy == kPacked && r.topology_policy == kSingle) {
        for (int numa : ids) EXPECT_LT(bound(numa), r.num_cpus) << context;
      }
      if (r.bind_policy == kPacked && (r.topology_policy == kBestEffort ||
                                       r.topology_policy == TopologyPolicy::kNone)) {
        int total = 0;
        for (int numa : ids) total += bound(numa);
        EXPECT_LT(total, r.num_cpus) << context;
      }
      continue;
    }
    ++allocated;
    EXPECT_EQ(got->cpus, again->cpus) << "not deterministic: " << context;
    EXPECT_TRUE(got->cpus.IsSubsetOf(available.Intersection(topo.OnlineCpus()))) << context;
    EXPECT_EQ(got->cpus.Size(), r.num_cpus) << context;
    EXPECT_EQ(got->numa_nodes, topo.NumaNodesOf(got->cpus)) << context;
    for (int numa : got->numa_nodes) {
      EXPECT_LE(got->cpus.IntersectionSize(topo.CpusInNumaNode(numa)), bound(numa)) << context;
    }
    for (int core : topo.CoresOf(got->cpus)) {
      const int taken = got->cpus.IntersectionSize(topo.CpusInCore(core));
      if (r.bind_policy == kFull) {
        EXPECT_EQ(taken, topo.ThreadsPerCore(core)) << context;
      }
      if (r.bind_policy == kSpread) {
        EXPECT_EQ(taken, 1) << context;
      }
    }
    if (r.topology_policy == kSingle && r.num_cpus > 0) {
      EXPECT_EQ(got->numa_nodes.size(), 1u) << context;
    }
    if (r.topology_policy == kRestricted && r.num_cpus > 0) {
      const std::vector<TopologyHint> hints = CpuHints(topo, available, {}, r.num_cpus);
      EXPECT_NE(std::find(hints.begin(), hints.end(), TopologyHint{got->numa_nodes, true}),
                hints.end())
          << "not a preferred hint: " << context;
    }
  }
  // The generator must exercise both outcomes.
  EXPECT_GT(allocated, 500);
  EXPECT_GT(refused, 100);
}

}  // namespace
}  // namespace huygens
