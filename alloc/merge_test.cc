#include "alloc/merge.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "topology/testing/machines.h"

namespace huygens {
namespace {

using ::testing::HasSubstr;

TopologyHint H(std::vector<int> nodes, bool preferred) { return {std::move(nodes), preferred}; }
using Hints = std::vector<TopologyHint>;
using Providers = std::vector<std::map<std::string, ProviderHints>>;
using Distances = std::map<int, std::map<int, int>>;

// 4 NUMA nodes: 0 and 3 are close (12), 0 and 2 far (21); every other pair 15.
Distances FourNodeDistances() {
  Distances d;
  for (int a = 0; a < 4; ++a) {
    for (int b = 0; b < 4; ++b) d[a][b] = a == b ? 10 : 15;
  }
  d[0][3] = d[3][0] = 12;
  d[0][2] = d[2][0] = 21;
  return d;
}

// The 8 NUMA nodes of QuadSocket4NumaSMT: 12 within a socket ({0,1}, {2,3}, ...), 32 across.
Distances EightNodeDistances() {
  Distances d;
  const CpuTopology topo = testing::QuadSocket4NumaSMT();
  for (int a : topo.NumaNodeIds()) {
    for (int b : topo.NumaNodeIds()) d[a][b] = topo.Distance(a, b);
  }
  return d;
}

struct MergeCase {
  std::string name;
  TopologyPolicy policy;
  TopologyManagerOptions options;
  std::vector<int> numa_nodes;
  Distances distances;
  Providers providers;
  MergeResult want;
};

class MergeHintsTest : public ::testing::TestWithParam<MergeCase> {};

TEST_P(MergeHintsTest, MatchesKubeletsTopologyManager) {
  const MergeCase& c = GetParam();
  absl::StatusOr<MergeResult> got =
      MergeHints(c.policy, c.options, c.numa_nodes, c.distances, c.providers);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->hint, c.want.hint);
  EXPECT_EQ(got->admit, c.want.admit);
}

constexpr TopologyPolicy kNone = TopologyPolicy::kNone;
constexpr TopologyPolicy kBestEffort = TopologyPolicy::kBestEffort;
constexpr TopologyPolicy kRestricted = TopologyPolicy::kRestricted;
constexpr TopologyPolicy kSingle = TopologyPolicy::kSingleNumaNode;
const TopologyManagerOptions kDefault{};
const TopologyManagerOptions kClosest{.prefer_closest_numa_nodes = true};

const Hints kCpuEither = {H({0}, true), H({1}, true), H({0, 1}, false)};

INSTANTIATE_TEST_SUITE_P(
    Table, MergeHintsTest,
    ::testing::Values(
        MergeCase{"NoneAdmitsWithoutAffinity", kNone, kDefault, {0, 1}, {},
                  {{{"cpu", Hints{H({1}, true)}}}}, {H({}, false), true}},
        MergeCase{"BestEffortTakesTheNarrowestPreferred", kBestEffort, kDefault, {0, 1}, {},
                  {{{"cpu", kCpuEither}}}, {H({0}, true), true}},
        MergeCase{"BestEffortAdmitsANonPreferredHint", kBestEffort, kDefault, {0, 1}, {},
                  {{{"cpu", Hints{H({0, 1}, false)}}}}, {H({0, 1}, false), true}},
        MergeCase{"RestrictedRejectsANonPreferredHint", kRestricted, kDefault, {0, 1}, {},
                  {{{"cpu", Hints{H({0, 1}, false)}}}}, {H({0, 1}, false), false}},
        MergeCase{"RestrictedAdmitsAPreferredWideHint", kRestricted, kDefault, {0, 1}, {},
                  {{{"cpu", Hints{H({0, 1}, true)}}}}, {H({0, 1}, true), true}},
        // Only single-node hints survive the filter; nothing left: every node, which
        // single-numa-node turns into no affinity.
        MergeCase{"SingleNumaNodeRejectsARequestNeedingTwoNodes", kSingle, kDefault, {0, 1},
                  {}, {{{"cpu", Hints{H({0, 1}, true)}}}}, {H({}, false), false}},
        MergeCase{"SingleNumaNodeAlignsProviders", kSingle, kDefault, {0, 1}, {},
                  {{{"cpu", kCpuEither}}, {{"memory", Hints{H({1}, true), H({0, 1}, false)}}}},
                  {H({1}, true), true}},
        MergeCase{"SingleNumaNodeOnAOneNodeMachineGivesNoAffinity", kSingle, kDefault, {0}, {},
                  {{{"cpu", Hints{H({0}, true)}}}}, {H({}, true), true}},
        MergeCase{"ProvidersAreMergedByIntersection", kBestEffort, kDefault, {0, 1}, {},
                  {{{"cpu", kCpuEither}}, {{"gpu", Hints{H({1}, true)}}}}, {H({1}, true), true}},
        // {0} and {1} share no node: nothing mergeable gives every node, not preferred.
        MergeCase{"DisjointProvidersGiveEveryNodeNotPreferred", kRestricted, kDefault, {0, 1},
                  {}, {{{"cpu", Hints{H({0}, true)}}}, {{"gpu", Hints{H({1}, true)}}}},
                  {H({0, 1}, false), false}},
        // {0,1} & {0} differ, so the merge is not preferred; between {0} and {1} the lower.
        MergeCase{"DifferingAffinitiesAreNotPreferred", kBestEffort, kDefault, {0, 1}, {},
                  {{{"cpu", Hints{H({0, 1}, true)}}}, {{"gpu", Hints{H({0}, true), H({1}, true)}}}},
                  {H({0}, false), true}},
        // Non-preferred merges {0}, {1}, {0,1}: the widest provider's narrowest hint has two
        // nodes, so the two-node merge wins.
        MergeCase{"NonPreferredMergesAimAtTheWidestNarrowestHint", kBestEffort, kDefault,
                  {0, 1, 2, 3}, {},
                  {{{"cpu", Hints{H({0, 1}, true)}}},
                   {{"gpu", Hints{H({0}, true), H({1}, true), H({0, 1, 2, 3}, false)}}}},
                  {H({0, 1}, false), true}},
        MergeCase{"NoPreferenceDoesNotConstrain", kRestricted, kDefault, {0, 1}, {},
                  {{{"cpu", Hints{H({1}, true)}}, {"memory", std::nullopt}}},
                  {H({1}, true), true}},
        MergeCase{"AnEmptyProviderHasNoPreference", kRestricted, kDefault, {0, 1}, {},
                  {{{"cpu", Hints{H({1}, true)}}}, {}}, {H({1}, true), true}},
        MergeCase{"NoAlignmentPossibleMakesTheMergeNonPreferred", kRestricted, kDefault, {0, 1},
                  {}, {{{"cpu", Hints{H({1}, true)}}}, {{"gpu", Hints{}}}},
                  {H({1}, false), false}},
        MergeCase{"NoProvidersAtAllGiveEveryNodePreferred", kRestricted, kDefault, {0, 1}, {},
                  {}, {H({0, 1}, true), true}},
        MergeCase{"SparseNumaIdsAreKept", kRestricted, kDefault, {0, 1, 4, 5}, {},
                  {{{"cpu", Hints{H({4}, true), H({5}, true), H({4, 5}, false)}}}},
                  {H({4}, true), true}},
        // {0,2} is the smaller mask (5 < 9); with prefer-closest, {0,3} is closer (12 < 21).
        MergeCase{"WithoutPreferClosestTheLowerIdsWin", kBestEffort, kDefault, {0, 1, 2, 3},
                  FourNodeDistances(), {{{"cpu", Hints{H({0, 2}, true), H({0, 3}, true)}}}},
                  {H({0, 2}, true), true}},
        MergeCase{"PreferClosestPicksTheSmallestAverageDistance", kBestEffort, kClosest,
                  {0, 1, 2, 3}, FourNodeDistances(),
                  {{{"cpu", Hints{H({0, 2}, true), H({0, 3}, true)}}}}, {H({0, 3}, true), true}},
        // {1,2} and {1,3} are both at 15: the smaller mask.
        MergeCase{"PreferClosestTiesGoToTheLowerIds", kRestricted, kClosest, {0, 1, 2, 3},
                  FourNodeDistances(), {{{"cpu", Hints{H({1, 3}, true), H({1, 2}, true)}}}},
                  {H({1, 2}, true), true}},
        // Prefer-closest only breaks ties between equally wide hints.
        MergeCase{"PreferClosestStillPrefersFewerNodes", kBestEffort, kClosest, {0, 1, 2, 3},
                  FourNodeDistances(), {{{"cpu", Hints{H({0, 3}, true), H({2}, true)}}}},
                  {H({2}, true), true}},
        MergeCase{"PreferClosestOnEightNodesKeepsASocket", kBestEffort, kClosest,
                  {0, 1, 2, 3, 4, 5, 6, 7}, EightNodeDistances(),
                  {{{"cpu", Hints{H({2, 4}, true), H({4, 5}, true)}}}}, {H({4, 5}, true), true}},
        MergeCase{"EightNodesWithoutPreferClosest", kBestEffort, kDefault,
                  {0, 1, 2, 3, 4, 5, 6, 7}, EightNodeDistances(),
                  {{{"cpu", Hints{H({2, 4}, true), H({4, 5}, true)}}}}, {H({2, 4}, true), true}},
        MergeCase{"NineNodesAreFineWhenAllowed", kRestricted,
                  TopologyManagerOptions{.max_allowable_numa_nodes = 9},
                  {0, 1, 2, 3, 4, 5, 6, 7, 8}, {},
                  {{{"cpu", Hints{H({8}, true)}}}}, {H({8}, true), true}},
        MergeCase{"NoneIgnoresTheNumaNodeLimit", kNone, kDefault, {0, 1, 2, 3, 4, 5, 6, 7, 8},
                  {}, {}, {H({}, false), true}}),
    [](const ::testing::TestParamInfo<MergeCase>& p) { return p.param.name; });

TEST(MergeHintsErrorsTest, MoreNumaNodesThanAllowedIsRefusedClearly) {
  const std::vector<int> nine = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  absl::StatusOr<MergeResult> got = MergeHints(kBestEffort, kDefault, nine, {}, {});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(got.status().message(),
              HasSubstr("unsupported on machines with more than 8 NUMA Nodes (this machine has "
                        "9); raise the topology manager option max-allowable-numa-nodes"));
}

TEST(MergeHintsErrorsTest, MaxAllowableBelowEightIsRejected) {
  const std::vector<int> two = {0, 1};
  EXPECT_FALSE(MergeHints(kBestEffort, {.max_allowable_numa_nodes = 4}, two, {}, {}).ok());
}

TEST(MergeHintsErrorsTest, PreferClosestNeedsEveryDistance) {
  const std::vector<int> two = {0, 1};
  absl::StatusOr<MergeResult> got = MergeHints(kBestEffort, kClosest, two, {{0, {{0, 10}}}}, {});
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), HasSubstr("no distance from NUMA node 0 to 1"));
}

TEST(MergeHintsErrorsTest, DuplicateNumaNodesAreRejected) {
  const std::vector<int> dup = {0, 1, 1};
  absl::StatusOr<MergeResult> got = MergeHints(kBestEffort, kDefault, dup, {}, {});
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), HasSubstr("NUMA node 1 is listed twice"));
}

struct OptionsCase {
  std::string name;
  std::map<std::string, std::string> options;
  bool ok;
  TopologyManagerOptions want;
};

class ParseTopologyManagerOptionsTest : public ::testing::TestWithParam<OptionsCase> {};

TEST_P(ParseTopologyManagerOptionsTest, ParsesAsKubelet) {
  absl::StatusOr<TopologyManagerOptions> got = ParseTopologyManagerOptions(GetParam().options);
  ASSERT_EQ(got.ok(), GetParam().ok) << got.status();
  if (got.ok()) {
    EXPECT_EQ(*got, GetParam().want);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, ParseTopologyManagerOptionsTest,
    ::testing::Values(
        OptionsCase{"NoOptionsAreTheDefaults", {}, true, {}},
        OptionsCase{"PreferClosestTrue", {{"prefer-closest-numa-nodes", "true"}}, true,
                    {.prefer_closest_numa_nodes = true}},
        OptionsCase{"PreferClosestGoBooleanT", {{"prefer-closest-numa-nodes", "T"}}, true,
                    {.prefer_closest_numa_nodes = true}},
        OptionsCase{"PreferClosestNotABoolean", {{"prefer-closest-numa-nodes", "yes"}}, false,
                    {}},
        OptionsCase{"MaxAllowableSixteen", {{"max-allowable-numa-nodes", "16"}}, true,
                    {.max_allowable_numa_nodes = 16}},
        OptionsCase{"MaxAllowableBelowEight", {{"max-allowable-numa-nodes", "4"}}, false, {}},
        OptionsCase{"MaxAllowableNotANumber", {{"max-allowable-numa-nodes", "8x"}}, false, {}},
        OptionsCase{"UnknownOption", {{"prefer-farthest", "true"}}, false, {}}),
    [](const ::testing::TestParamInfo<OptionsCase>& p) { return p.param.name; });

// NUMA ids are only names: very large ids (beyond any table of ids) merge exactly like small
// ones, and affinities naming unknown nodes are cut to the machine's nodes.
TEST(MergeHintsIdsTest, LargeNumaIdsMergeLikeSmallOnes) {
  auto merge = [](int base) {
    const std::vector<int> numa = {base, base + 1, base + 2};
    const Providers providers = {
        {{"cpu", Hints{{{base}, false}, {{base + 1, base + 2}, true}, {{base, base + 9}, true}}}},
        {{"memory", Hints{{{base + 1, base + 2}, true}, {{base}, true}}}}};
    return MergeHints(kRestricted, kDefault, numa, {}, providers);
  };
  for (int base : {1 << 20, 5000}) {
    SCOPED_TRACE(base);
    absl::StatusOr<MergeResult> small = merge(0), large = merge(base);
    ASSERT_TRUE(small.ok() && large.ok());
    EXPECT_EQ(small->admit, large->admit);
    EXPECT_EQ(small->hint.preferred, large->hint.preferred);
    std::vector<int> shifted;
    for (int id : small->hint.numa_nodes) shifted.push_back(id + base);
    EXPECT_EQ(shifted, large->hint.numa_nodes);
    // {base, base + 9} is cut to {base}, preferred, and matches memory's {base}.
    EXPECT_EQ(small->hint, (TopologyHint{{0}, true}));
  }
}

// Scope: the same merge per admission unit. Two 4-CPU containers on DualSocketHT with 6 free
// CPUs per node: per container each fits one node; the pod's 8 do not.
TEST(ScopeTest, ContainerScopeAdmitsWhatPodScopeRejectsUnderSingleNumaNode) {
  const CpuTopology topo = testing::DualSocketHT();
  const CpuSet free = *CpuSet::Parse("0-5,6-11");
  PodSpec pod;
  for (const char* name : {"a", "b"}) {
    ContainerSpec c;
    c.name = name;
    c.cpu_request_milli = c.cpu_limit_milli = 4000;
    c.memory_request_bytes = c.memory_limit_bytes = 1 << 30;
    pod.containers.push_back(c);
  }
  const std::vector<int> numa = topo.NumaNodeIds();
  auto admit = [&](TopologyScope scope) {
    bool all = true;
    for (const AdmissionUnit& unit : AdmissionUnits(pod, scope)) {
      absl::StatusOr<MergeResult> r = MergeHints(kSingle, kDefault, numa, {},
                                                 {CpuProviderHints(topo, free, {}, unit.cpus)});
      EXPECT_TRUE(r.ok());
      all = all && r->admit;
    }
    return all;
  };
  EXPECT_TRUE(admit(TopologyScope::kContainer));
  EXPECT_FALSE(admit(TopologyScope::kPod));
}

}  // namespace
}  // namespace huygens
