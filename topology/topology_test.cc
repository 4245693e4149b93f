#include "topology/topology.h"

#include <functional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "topology/testing/machines.h"

namespace huygens {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

using testing::Node;
using testing::Offline;
using testing::Online;
using testing::OfflineCpusAdjacentSiblings;
using testing::OneSocketNoSmt;
using testing::SparseNumaWithMemoryOnlyNode;
using testing::TwoSocketsSmt;

CpuTopology MustCreate(std::vector<CpuInfo> cpus, std::vector<NumaNode> nodes,
                       MachineCpus machine = {}) {
  absl::StatusOr<CpuTopology> t = CpuTopology::Create(std::move(cpus), std::move(nodes), machine);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *std::move(t) : CpuTopology();
}

// ---- Counts -----------------------------------------------------------------------------------

struct CountCase {
  const char* name;
  std::function<CpuTopology()> machine;
  int cpus, cores, sockets, numa_nodes, l3_groups, cpus_per_core, cpus_per_socket,
      cpus_per_numa;
};
void PrintTo(const CountCase& c, std::ostream* os) { *os << c.name; }

class Counts : public ::testing::TestWithParam<CountCase> {};

TEST_P(Counts, MatchTheMachine) {
  const CountCase& c = GetParam();
  const CpuTopology t = c.machine();
  EXPECT_EQ(t.NumCpus(), c.cpus);
  EXPECT_EQ(t.NumCores(), c.cores);
  EXPECT_EQ(t.NumSockets(), c.sockets);
  EXPECT_EQ(t.NumNumaNodes(), c.numa_nodes);
  EXPECT_EQ(t.NumL3Groups(), c.l3_groups);
  EXPECT_EQ(t.CpusPerCore(), c.cpus_per_core);
  EXPECT_EQ(t.CpusPerSocket(), c.cpus_per_socket);
  EXPECT_EQ(t.CpusPerNumaNode(), c.cpus_per_numa);
}

INSTANTIATE_TEST_SUITE_P(
    Machines, Counts,
    ::testing::Values(
        CountCase{"OneSocketNoSmt", OneSocketNoSmt, 4, 4, 1, 1, 1, 1, 4, 4},
        CountCase{"TwoSocketsSmt", TwoSocketsSmt, 16, 8, 2, 2, 2, 2, 8, 8},
        // Five NUMA nodes, but CPUs per NUMA node divides by the four that have CPUs.
        CountCase{"SparseNumaWithMemoryOnlyNode", SparseNumaWithMemoryOnlyNode, 8, 8, 1, 5, 2, 1,
                  8, 2},
        // Offline CPUs count nowhere.
        CountCase{"OfflineCpusAdjacentSiblings", OfflineCpusAdjacentSiblings, 4, 2, 1, 1, 1, 2, 4,
                  4},
        CountCase{"Empty", [] { return CpuTopology(); }, 0, 0, 0, 0, 0, 0, 0, 0}),
    [](const ::testing::TestParamInfo<CountCase>& p) { return std::string(p.param.name); });

// ---- Queries ----------------------------------------------------------------------------------

TEST(TwoSocketsSmt, SiblingsAreNAndNPlusHalf) {
  const CpuTopology t = TwoSocketsSmt();
  EXPECT_EQ(t.SiblingsOf(0), CpuSet({0, 8}));
  EXPECT_EQ(t.SiblingsOf(12), CpuSet({4, 12}));
  EXPECT_EQ(t.CpusInCore(3), CpuSet({3, 11}));
  EXPECT_EQ(t.ThreadsPerCore(3), 2);
  EXPECT_EQ(t.ThreadsPerCore(99), 0);
}

TEST(TwoSocketsSmt, MembershipQueriesFollowSockets) {
  const CpuTopology t = TwoSocketsSmt();
  EXPECT_EQ(t.CpusInSocket(1), *CpuSet::Parse("4-7,12-15"));
  EXPECT_EQ(t.CpusInNumaNode(0), *CpuSet::Parse("0-3,8-11"));
  EXPECT_EQ(t.CpusInL3Group(1), *CpuSet::Parse("4-7,12-15"));
  EXPECT_EQ(t.CpusInDie(0), *CpuSet::Parse("0-3,8-11"));
  EXPECT_EQ(t.CpusInCluster(5), CpuSet({5, 13}));
  const int cores[] = {0, 5, 42};
  EXPECT_EQ(t.CpusInCores(cores), CpuSet({0, 8, 5, 13}));
  const int sockets[] = {0, 1};
  EXPECT_EQ(t.CpusInSockets(sockets), CpuSet::Range(0, 15));
  const int nodes[] = {1};
  EXPECT_EQ(t.CpusInNumaNodes(nodes), t.CpusInSocket(1));
  EXPECT_THAT(t.CoreIds(), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  EXPECT_THAT(t.SocketIds(), ElementsAre(0, 1));
  EXPECT_THAT(t.CoresInSocket(1), ElementsAre(4, 5, 6, 7));
  EXPECT_THAT(t.CoresInNumaNode(0), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(t.SocketsInNumaNode(1), ElementsAre(1));
  EXPECT_THAT(t.NumaNodesInSocket(0), ElementsAre(0));
  EXPECT_THAT(t.L3GroupsInSocket(1), ElementsAre(1));
  EXPECT_THAT(t.L3GroupsInNumaNode(0), ElementsAre(0));
}

TEST(TwoSocketsSmt, UnitsOfASetListEveryUnitTouched) {
  const CpuTopology t = TwoSocketsSmt();
  const CpuSet cpus = {1, 9, 12};
  EXPECT_THAT(t.CoresOf(cpus), ElementsAre(1, 4));
  EXPECT_THAT(t.SocketsOf(cpus), ElementsAre(0, 1));
  EXPECT_THAT(t.NumaNodesOf(cpus), ElementsAre(0, 1));
  EXPECT_THAT(t.L3GroupsOf(cpus), ElementsAre(0, 1));
  EXPECT_THAT(t.CoresOf(CpuSet()), IsEmpty());
  // Unknown CPUs are ignored.
  EXPECT_THAT(t.CoresOf(CpuSet({2, 100})), ElementsAre(2));
}

TEST(TwoSocketsSmt, DistancesComeFromTheTable) {
  const CpuTopology t = TwoSocketsSmt();
  EXPECT_TRUE(t.HasDistances());
  EXPECT_EQ(t.Distance(0, 1), 21);
  EXPECT_EQ(t.Distance(1, 1), 10);
  EXPECT_EQ(t.Numa(1).memory_bytes, 16ull << 30);
}

TEST(TwoSocketsSmt, UnknownIdsGiveEmptyResults) {
  const CpuTopology t = TwoSocketsSmt();
  EXPECT_TRUE(t.CpusInCore(100).Empty());
  EXPECT_TRUE(t.CpusInSocket(-1).Empty());
  EXPECT_TRUE(t.CpusInNumaNode(7).Empty());
  EXPECT_THAT(t.CoresInSocket(5), IsEmpty());
  EXPECT_FALSE(t.HasCpu(16));
  EXPECT_FALSE(t.HasCpu(-1));
  EXPECT_FALSE(t.HasNumaNode(2));
}

TEST(SparseNumaWithMemoryOnlyNode, SparseIdsAndCpuLessNodesAreKept) {
  const CpuTopology t = SparseNumaWithMemoryOnlyNode();
  EXPECT_THAT(t.NumaNodeIds(), ElementsAre(0, 1, 4, 5, 250));
  EXPECT_THAT(t.NumaNodeIdsWithCpus(), ElementsAre(0, 1, 4, 5));
  EXPECT_TRUE(t.CpusInNumaNode(250).Empty());
  EXPECT_EQ(t.Numa(250).memory_bytes, 64ull << 30);
  EXPECT_EQ(t.CpusInNumaNode(4), CpuSet({4, 5}));
  EXPECT_THAT(t.NumaNodesInSocket(0), ElementsAre(0, 1, 4, 5));
  EXPECT_EQ(t.Distance(4, 250), 30);
  EXPECT_EQ(t.Distance(0, 5), 12);
}

TEST(SparseNumaWithMemoryOnlyNode, AnL3GroupMaySpanNumaNodes) {
  const CpuTopology t = SparseNumaWithMemoryOnlyNode();
  EXPECT_THAT(t.L3GroupIds(), ElementsAre(0, 1));
  EXPECT_THAT(t.L3GroupsInNumaNode(1), ElementsAre(0));
  EXPECT_THAT(t.NumaNodesOf(t.CpusInL3Group(1)), ElementsAre(4, 5));
}

// kubelet's own test machines carry no L3 information: uncore cache id 0 on every CPU of both
// sockets. kubelet takes such a machine, so Huygens does too: one L3 group over both sockets.
TEST(CpuTopologyCreate, AnL3GroupMaySpanSocketsAsOnMachinesWithoutL3Information) {
  absl::StatusOr<CpuTopology> t = CpuTopology::Create(
      {Online(0, 0, 0, 0, 0), Online(1, 1, 0, 0, 0), Online(2, 2, 1, 1, 0),
       Online(3, 3, 1, 1, 0)},
      {Node(0, {0, 1}), Node(1, {2, 3})});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->L3GroupIds(), ElementsAre(0));
  EXPECT_THAT(t->L3GroupsInSocket(1), ElementsAre(0));
  EXPECT_EQ(t->CpusInL3Group(0), CpuSet({0, 1, 2, 3}));
}

TEST(OfflineCpusAdjacentSiblings, OfflineCpusAreKnownButNotCounted) {
  const CpuTopology t = OfflineCpusAdjacentSiblings();
  EXPECT_EQ(t.AllCpus(), CpuSet::Range(0, 5));
  EXPECT_EQ(t.OnlineCpus(), CpuSet::Range(0, 3));
  EXPECT_EQ(t.OfflineCpus(), CpuSet({4, 5}));
  EXPECT_TRUE(t.HasCpu(4));
  EXPECT_FALSE(t.Cpu(4).online);
  EXPECT_EQ(t.Cpu(4).core, -1);
  EXPECT_EQ(t.SiblingsOf(1), CpuSet({0, 1}));
  EXPECT_THAT(t.CoresOf(CpuSet::Range(0, 5)), ElementsAre(0, 1));
  EXPECT_EQ(t.IsolatedCpus(), CpuSet({2}));
  EXPECT_EQ(t.Machine().nohz_full, CpuSet({2, 3}));
  EXPECT_THAT(t.Machine().isolcpus_flags, ElementsAre("domain"));
}

TEST(OfflineCpusAdjacentSiblings, DistancesDefaultToTheKernelsValues) {
  const CpuTopology t = OfflineCpusAdjacentSiblings();
  EXPECT_FALSE(t.HasDistances());
  EXPECT_EQ(t.Distance(0, 0), CpuTopology::kLocalDistance);
  EXPECT_EQ(CpuTopology::kLocalDistance, 10);
}

TEST(DistanceDefaults, RemoteNodesWithoutATableAreTwenty) {
  const CpuTopology t = MustCreate({Online(0, 0, 0, 0, 0), Online(1, 1, 1, 3, 1)},
                                   {Node(0, {0}), Node(3, {1})});
  EXPECT_FALSE(t.HasDistances());
  EXPECT_EQ(t.Distance(0, 3), 20);
  EXPECT_EQ(t.Distance(3, 0), CpuTopology::kRemoteDistance);
  EXPECT_EQ(t.Distance(3, 3), 10);
}

TEST(CpuTopologyDeathTest, QueriesOutsideTheirPreconditionsAbort) {
  const CpuTopology t = OfflineCpusAdjacentSiblings();
  EXPECT_DEATH((void)t.Cpu(9), "unknown cpu");
  EXPECT_DEATH((void)t.SiblingsOf(4), "offline");
  EXPECT_DEATH((void)t.Numa(1), "unknown NUMA node");
  EXPECT_DEATH((void)t.Distance(0, 1), "unknown NUMA node");
}

TEST(CpuTopologyCreate, SortsCpusAndNodesById) {
  const CpuTopology t = MustCreate({Online(1, 1, 0, 2, 0), Online(0, 0, 0, 0, 0)},
                                   {Node(2, {1}), Node(0, {0})});
  ASSERT_EQ(t.Cpus().size(), 2u);
  EXPECT_EQ(t.Cpus()[0].id, 0);
  EXPECT_EQ(t.NumaNodes()[0].id, 0);
  EXPECT_EQ(t.Cpu(1).numa, 2);
  // Equality does not depend on input order.
  EXPECT_EQ(t, MustCreate({Online(0, 0, 0, 0, 0), Online(1, 1, 0, 2, 0)},
                          {Node(0, {0}), Node(2, {1})}));
}

TEST(CpuTopologyCreate, EqualityComparesEveryField) {
  const CpuTopology a = TwoSocketsSmt();
  EXPECT_EQ(a, TwoSocketsSmt());
  EXPECT_NE(a, OneSocketNoSmt());
  std::vector<CpuInfo> cpus = a.Cpus();
  cpus[3].isolated = true;
  EXPECT_NE(a, MustCreate(cpus, a.NumaNodes(), a.Machine()));
  std::vector<NumaNode> nodes = a.NumaNodes();
  nodes[0].hugepages[2 << 20] = 4;
  EXPECT_NE(a, MustCreate(a.Cpus(), nodes, a.Machine()));
  MachineCpus machine = a.Machine();
  machine.isolcpus_flags.push_back("nohz");
  EXPECT_NE(a, MustCreate(a.Cpus(), a.NumaNodes(), machine));
}

// ---- Restrict ---------------------------------------------------------------------------------

TEST(Restrict, KeepsOnlyTheGivenCpusAndEveryNumaNode) {
  const CpuTopology t = TwoSocketsSmt();
  const CpuTopology r = t.Restrict(*CpuSet::Parse("0-1,8-9,4"));
  EXPECT_EQ(r.AllCpus(), *CpuSet::Parse("0-1,4,8-9"));
  EXPECT_EQ(r.NumCores(), 3);
  EXPECT_EQ(r.SiblingsOf(4), CpuSet({4}));
  EXPECT_EQ(r.SiblingsOf(0), CpuSet({0, 8}));
  EXPECT_EQ(r.NumNumaNodes(), 2);
  EXPECT_EQ(r.Numa(0).cpus, *CpuSet::Parse("0-1,8-9"));
  EXPECT_EQ(r.Numa(1).cpus, CpuSet({4}));
  EXPECT_EQ(r.Numa(1).memory_bytes, 16ull << 30);
  EXPECT_EQ(r.Distance(0, 1), 21);
  // Ids are not renumbered.
  EXPECT_THAT(r.CoreIds(), ElementsAre(0, 1, 4));
}

TEST(Restrict, CanLeaveANumaNodeWithoutCpus) {
  const CpuTopology r = TwoSocketsSmt().Restrict(CpuSet::Range(0, 3));
  EXPECT_THAT(r.NumaNodeIds(), ElementsAre(0, 1));
  EXPECT_THAT(r.NumaNodeIdsWithCpus(), ElementsAre(0));
  EXPECT_EQ(r.NumSockets(), 1);
}

TEST(Restrict, IntersectsTheMachineMasksAndKeepsFlags) {
  const CpuTopology r = OfflineCpusAdjacentSiblings().Restrict({2, 3, 4, 6});
  EXPECT_EQ(r.AllCpus(), CpuSet({2, 3, 4}));
  EXPECT_EQ(r.OfflineCpus(), CpuSet({4}));
  EXPECT_EQ(r.Machine().possible, CpuSet({2, 3, 4, 6}));
  EXPECT_EQ(r.Machine().present, CpuSet({2, 3, 4}));
  EXPECT_EQ(r.Machine().isolated, CpuSet({2}));
  EXPECT_EQ(r.Machine().nohz_full, CpuSet({2, 3}));
  EXPECT_THAT(r.Machine().isolcpus_flags, ElementsAre("domain"));
  EXPECT_EQ(r.IsolatedCpus(), CpuSet({2}));
}

TEST(Restrict, ToEverythingIsTheSameTopologyAndToNothingIsCpuLess) {
  const CpuTopology t = SparseNumaWithMemoryOnlyNode();
  EXPECT_EQ(t.Restrict(t.AllCpus()), t);
  const CpuTopology none = t.Restrict(CpuSet());
  EXPECT_EQ(none.NumCpus(), 0);
  EXPECT_EQ(none.NumNumaNodes(), 5);
  EXPECT_EQ(none.CpusPerCore(), 0);
  EXPECT_EQ(none.Distance(0, 250), 30);
}

// ---- Validation -------------------------------------------------------------------------------

struct InvalidCase {
  const char* name;
  std::vector<CpuInfo> cpus;
  std::vector<NumaNode> nodes;
  std::string error;
};
void PrintTo(const InvalidCase& c, std::ostream* os) { *os << c.name; }

class Invalid : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(Invalid, IsRejectedNamingTheCpuOrNodeAndTheRule) {
  const InvalidCase& c = GetParam();
  absl::StatusOr<CpuTopology> t = CpuTopology::Create(c.cpus, c.nodes);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(t.status().message()), HasSubstr(c.error));
}

CpuInfo With(CpuInfo c, const std::function<void(CpuInfo&)>& edit) {
  edit(c);
  return c;
}

const NumaNode kNode0 = Node(0, {0, 1});

INSTANTIATE_TEST_SUITE_P(
    CpuTopologyCreate, Invalid,
    ::testing::Values(
        InvalidCase{"NegativeCpuId", {Online(-1, 0, 0, 0, 0)}, {Node(0, {})},
                    "cpu -1: id is outside [0, 8192)"},
        InvalidCase{"CpuIdAtTheMaximum", {Online(8192, 0, 0, 0, 0)}, {Node(0, {})},
                    "cpu 8192: id is outside [0, 8192)"},
        InvalidCase{"DuplicateCpu", {Online(1, 0, 0, 0, 0), Online(1, 0, 0, 0, 0)},
                    {Node(0, {1})}, "cpu 1: listed twice"},
        InvalidCase{"OnlineCpuWithUnknownCore", {Online(0, -1, 0, 0, 0), Online(1, 0, 0, 0, 0)},
                    {kNode0}, "cpu 0: online CPU has unknown core (-1)"},
        InvalidCase{"OnlineCpuWithUnknownSocket",
                    {With(Online(1, 0, 0, 0, 0), [](CpuInfo& c) { c.socket = -1; }),
                     Online(0, 0, 0, 0, 0)},
                    {kNode0}, "cpu 1: online CPU has unknown socket (-1)"},
        InvalidCase{"OnlineCpuWithUnknownDie",
                    {With(Online(0, 0, 0, 0, 0), [](CpuInfo& c) { c.die = -1; }),
                     Online(1, 0, 0, 0, 0)},
                    {kNode0}, "cpu 0: online CPU has unknown die (-1)"},
        InvalidCase{"OnlineCpuWithUnknownCluster",
                    {With(Online(0, 0, 0, 0, 0), [](CpuInfo& c) { c.cluster = -1; }),
                     Online(1, 0, 0, 0, 0)},
                    {kNode0}, "cpu 0: online CPU has unknown cluster (-1)"},
        InvalidCase{"OnlineCpuWithUnknownL3", {Online(0, 0, 0, 0, -1), Online(1, 0, 0, 0, 0)},
                    {kNode0}, "cpu 0: online CPU has unknown L3 group (-1)"},
        InvalidCase{"OnlineCpuWithUnknownNuma", {Online(0, 0, 0, -1, 0), Online(1, 0, 0, 0, 0)},
                    {Node(0, {1})}, "cpu 0: online CPU has unknown NUMA node (-1)"},
        InvalidCase{"IdBelowMinusOne",
                    {With(Offline(0), [](CpuInfo& c) { c.core = -2; })}, {},
                    "cpu 0: core id -2 is invalid"},
        InvalidCase{"NumaNodeNotListed", {Online(5, 0, 0, 3, 0)}, {Node(0, {})},
                    "cpu 5: NUMA node 3 is not listed"},
        InvalidCase{"OfflineCpuInAnUnlistedNumaNode",
                    {With(Offline(2), [](CpuInfo& c) { c.numa = 1; })}, {Node(0, {})},
                    "cpu 2: NUMA node 1 is not listed"},
        InvalidCase{"CoreInTwoSockets", {Online(0, 0, 0, 0, 0), Online(1, 0, 1, 0, 0)},
                    {kNode0}, "cpu 1: core 0 lies in socket 1 here but in socket 0 at cpu 0"},
        InvalidCase{"CoreInTwoNumaNodes", {Online(0, 0, 0, 0, 0), Online(1, 0, 0, 1, 0)},
                    {Node(0, {0}), Node(1, {1})},
                    "cpu 1: core 0 lies in NUMA node 1 here but in NUMA node 0 at cpu 0"},
        InvalidCase{"CoreInTwoL3Groups", {Online(0, 0, 0, 0, 0), Online(1, 0, 0, 0, 1)},
                    {kNode0}, "cpu 1: core 0 lies in L3 group 1 here but in L3 group 0"},
        InvalidCase{"CoreInTwoDies",
                    {Online(0, 0, 0, 0, 0),
                     With(Online(1, 0, 0, 0, 0), [](CpuInfo& c) { c.die = 1; })},
                    {kNode0}, "cpu 1: core 0 lies in die 1 here but in die 0"},
        InvalidCase{"CoreInTwoClusters",
                    {Online(0, 0, 0, 0, 0),
                     With(Online(1, 0, 0, 0, 0), [](CpuInfo& c) { c.cluster = 7; })},
                    {kNode0}, "cpu 1: core 0 lies in cluster 7 here but in cluster 0"},
        InvalidCase{"DieInTwoSockets",
                    {Online(0, 0, 0, 0, 0),
                     With(Online(1, 1, 1, 0, 1), [](CpuInfo& c) { c.die = 0; })},
                    {kNode0}, "cpu 1: die 0 lies in socket 1 here but in socket 0"},
        InvalidCase{"NegativeNumaNodeId", {}, {Node(-1, {})}, "NUMA node -1: id is negative"},
        InvalidCase{"DuplicateNumaNode", {}, {Node(3, {}), Node(3, {})},
                    "NUMA node 3: listed twice"},
        InvalidCase{"NumaCpusMissingACpu", {Online(0, 0, 0, 0, 0), Online(1, 1, 0, 0, 0)},
                    {Node(0, {0})},
                    "NUMA node 0: cpus \"0\" differ from the CPUs whose NUMA node is 0 (\"0-1\")"},
        InvalidCase{"NumaCpusWithAnExtraCpu", {Online(0, 0, 0, 0, 0)}, {Node(0, {0, 9})},
                    "NUMA node 0: cpus \"0,9\" differ"},
        InvalidCase{"DistanceRowMissingANode", {}, {Node(0, {}, 0, {{0, 10}}), Node(1, {})},
                    "NUMA node 0: distances lack an entry for NUMA node 1"},
        InvalidCase{"DistanceToAnUnlistedNode", {}, {Node(0, {}, 0, {{0, 10}, {2, 20}})},
                    "NUMA node 0: distance to NUMA node 2 which is not listed"},
        InvalidCase{"NonPositiveDistance", {}, {Node(0, {}, 0, {{0, 0}})},
                    "NUMA node 0: distance 0 to NUMA node 0 is not positive"},
        InvalidCase{"SelfDistanceNotTheSmallest", {},
                    {Node(0, {}, 0, {{0, 10}, {1, 20}}), Node(1, {}, 0, {{0, 9}, {1, 10}})},
                    "NUMA node 1: distance 9 to NUMA node 0 is smaller than the distance 10 to "
                    "itself"}),
    [](const ::testing::TestParamInfo<InvalidCase>& p) { return std::string(p.param.name); });

TEST(CpuTopologyCreate, OfflineCpuWithKnownIdsIsChecked) {
  // An offline CPU may keep ids (e.g. from a dump taken before it went offline); they must then
  // agree with the rest of its core.
  CpuInfo off = Online(1, 0, 1, 0, 0);
  off.online = false;
  absl::StatusOr<CpuTopology> t = CpuTopology::Create({Online(0, 0, 0, 0, 0), off}, {kNode0});
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("core 0 lies in socket 1"));
}

TEST(CpuTopologyCreate, EqualSelfAndRemoteDistancesAreAllowed) {
  absl::StatusOr<CpuTopology> t = CpuTopology::Create(
      {}, {Node(0, {}, 0, {{0, 10}, {1, 10}}), Node(1, {}, 0, {{0, 10}, {1, 10}})});
  EXPECT_TRUE(t.ok()) << t.status();
}

TEST(HugepageResourceNameTest, NamesPageSizesAsKubeletDoes) {
  EXPECT_EQ(HugepageResourceName(2 * (uint64_t{1} << 20)), "hugepages-2Mi");
  EXPECT_EQ(HugepageResourceName((uint64_t{1} << 30)), "hugepages-1Gi");
  EXPECT_EQ(HugepageResourceName(64 * 1024), "hugepages-64Ki");
  EXPECT_EQ(HugepageResourceName(1536 * 1024), "hugepages-1536Ki");
}

}  // namespace
}  // namespace huygens
