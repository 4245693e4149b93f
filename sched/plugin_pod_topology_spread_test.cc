// PodTopologySpread, case by case (kube-scheduler v1.35.4's semantics, reason strings and
// scores): the Filter's skew against the global minimum with minDomains, the node inclusion
// policies, matchLabelKeys, namespaces and selectors; the Score's ScheduleAnyway constraints;
// and the scheduler spreading replicas evenly over zones with the equivalence cache on.
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sched/cache.h"
#include "sched/framework.h"
#include "sched/plugins.h"
#include "sched/profile.h"
#include "sched/scheduler.h"
#include "sched/test_util.h"

namespace huygens::sched {
namespace {

using testing::LabelledPod;
using testing::PlaceAll;
using testing::Placed;
using testing::ScoreCase;
using testing::ZonedNode;
using testing::Share;
using ::testing::ElementsAreArray;

constexpr const char* kZone = testing::kZoneLabel;
constexpr const char* kHost = testing::kHostnameLabel;
constexpr char kSkew[] = "node(s) didn't match pod topology spread constraints";
constexpr char kLabel[] = "node(s) didn't match pod topology spread constraints (missing required label)";
const std::vector<std::string> kNodes = {"n1", "n2", "n3", "n4", "n5"};

const Labels kWeb = {{"app", "web"}};

TopologySpreadConstraint Spread(std::string key, int32_t max_skew, bool hard, std::optional<Labels> selector = kWeb) {
  TopologySpreadConstraint c;
  c.topology_key = std::move(key);
  c.max_skew = max_skew;
  c.hard = hard;
  if (selector.has_value()) c.label_selector = LabelSelector{.match_labels = *selector, .match_expressions = {}};
  return c;
}


Pod Spreading(Pod pod, std::vector<TopologySpreadConstraint> constraints) {
  pod.topology_spread_constraints = std::move(constraints);
  return pod;
}

// Nodes n1, n2 (zone a), n3 (zone b), n4 (zone c; tainted when asked), n5 (no zone label),
// each labelled with its hostname.
void AddNodes(ClusterCache& cache, bool taint_n4 = false) {
  const std::map<std::string, std::string> zones = {{"n1", "a"}, {"n2", "a"}, {"n3", "b"}, {"n4", "c"}, {"n5", ""}};
  for (const auto& [name, zone] : zones) {
    Node node = ZonedNode(name, zone);
    if (name == "n4" && taint_n4) node.taints.push_back({"dedicated", "db", TaintEffect::kNoSchedule});
    ASSERT_TRUE(cache.AddNode(std::move(node)).ok());
  }
}

// ---- Filter --------------------------------------------------------------------------------

struct FilterCase {
  std::string name;
  std::vector<Placed> existing;
  Pod pod;
  std::vector<std::string> want;  // per node n1..n5: "" fits, else the reason
  bool taint_n4 = false;
};

class PodTopologySpreadFilter : public ::testing::TestWithParam<FilterCase> {};

TEST_P(PodTopologySpreadFilter, MatchesKubeScheduler) {
  const FilterCase& c = GetParam();
  ClusterCache cache;
  AddNodes(cache, c.taint_n4);
  PlaceAll(cache, c.existing);
  auto plugin = NewPodTopologySpread(&cache);
  CycleState state;
  state.Reset(Share(c.pod));
  ASSERT_TRUE(dynamic_cast<PreFilterPlugin&>(*plugin).PreFilter(state).ok());
  std::vector<std::string> got;
  for (const std::string& name : kNodes) {
    const Status s = dynamic_cast<FilterPlugin&>(*plugin).Filter(state, *cache.FindNode(name));
    got.push_back(s.ok() ? "" : s.Message());
    if (!s.ok()) {
      EXPECT_EQ(s.code(), s.Message() == kLabel ? Code::kUnschedulableAndUnresolvable : Code::kUnschedulable) << name;
    }
  }
  EXPECT_THAT(got, ElementsAreArray(c.want));
  EXPECT_TRUE(state.skip_equivalence_cache);
}

TopologySpreadConstraint WithMinDomains(TopologySpreadConstraint c, int32_t min_domains) {
  c.min_domains = min_domains;
  return c;
}

TopologySpreadConstraint WithPolicies(TopologySpreadConstraint c, NodeInclusionPolicy affinity, NodeInclusionPolicy taints) {
  c.node_affinity_policy = affinity;
  c.node_taints_policy = taints;
  return c;
}

TopologySpreadConstraint WithLabelKeys(TopologySpreadConstraint c, std::vector<std::string> keys) {
  c.match_label_keys = std::move(keys);
  return c;
}

Pod InZones(Pod pod, std::vector<std::string> zones) {
  pod.required_node_affinity = {NodeSelectorTerm{.match_expressions = {{kZone, SelectorOperator::kIn, std::move(zones)}},
                                                 .match_fields = {}}};
  return pod;
}

const Placed kWebA{LabelledPod("web-a", kWeb), "n1"};
const Placed kWebB{LabelledPod("web-b", kWeb), "n3"};
const Placed kWebC{LabelledPod("web-c", kWeb), "n4"};
constexpr auto kHonor = NodeInclusionPolicy::kHonor;
constexpr auto kIgnore = NodeInclusionPolicy::kIgnore;

INSTANTIATE_TEST_SUITE_P(
    Cases, PodTopologySpreadFilter,
    ::testing::Values(
        FilterCase{"max skew 1 over zones leaves only the emptiest zone",
                   {kWebA, kWebB},
                   Spreading(LabelledPod("web", kWeb), {Spread(kZone, 1, true)}),
                   {kSkew, kSkew, kSkew, "", kLabel}},
        FilterCase{"a pod its selector does not match only keeps the skew there is",
                   {kWebA, kWebB},
                   Spreading(LabelledPod("api", {{"app", "api"}}), {Spread(kZone, 1, true)}),
                   {"", "", "", "", kLabel}},
        FilterCase{"max skew 2 lets a zone run one ahead",
                   {kWebA, kWebB},
                   Spreading(LabelledPod("web", kWeb), {Spread(kZone, 2, true)}),
                   {"", "", "", "", kLabel}},
        FilterCase{"with one pod in every zone each zone may take the next",
                   {kWebA, kWebB, kWebC},
                   Spreading(LabelledPod("web", kWeb), {Spread(kZone, 1, true)}),
                   {"", "", "", "", kLabel}},
        FilterCase{"minDomains above the domains there are makes the minimum 0",
                   {kWebA, kWebB, kWebC},
                   Spreading(LabelledPod("web", kWeb), {WithMinDomains(Spread(kZone, 1, true), 4)}),
                   {kSkew, kSkew, kSkew, kSkew, kLabel}},
        FilterCase{"minDomains met by the domains there are changes nothing",
                   {kWebA, kWebB, kWebC},
                   Spreading(LabelledPod("web", kWeb), {WithMinDomains(Spread(kZone, 1, true), 3)}),
                   {"", "", "", "", kLabel}},
        FilterCase{"nodeAffinityPolicy Honor leaves zones the pod cannot go to out of the minimum",
                   {kWebA, kWebB},
                   Spreading(InZones(LabelledPod("web", kWeb), {"a", "b"}), {Spread(kZone, 1, true)}),
                   {"", "", "", "", kLabel}},
        FilterCase{"nodeAffinityPolicy Ignore counts every zone",
                   {kWebA, kWebB},
                   Spreading(InZones(LabelledPod("web", kWeb), {"a", "b"}),
                             {WithPolicies(Spread(kZone, 1, true), kIgnore, kIgnore)}),
                   {kSkew, kSkew, kSkew, "", kLabel}},
        FilterCase{"nodeTaintsPolicy Honor leaves a tainted zone out of the minimum",
                   {kWebA, kWebB},
                   Spreading(LabelledPod("web", kWeb), {WithPolicies(Spread(kZone, 1, true), kHonor, kHonor)}),
                   {"", "", "", "", kLabel},
                   /*taint_n4=*/true},
        FilterCase{"nodeTaintsPolicy Ignore, the default, counts a tainted zone",
                   {kWebA, kWebB},
                   Spreading(LabelledPod("web", kWeb), {Spread(kZone, 1, true)}),
                   {kSkew, kSkew, kSkew, "", kLabel},
                   /*taint_n4=*/true},
        FilterCase{"matchLabelKeys counts only pods with the pod's own value",
                   {{LabelledPod("web-v1", {{"app", "web"}, {"version", "1"}}), "n1"},
                    {LabelledPod("web-v2", {{"app", "web"}, {"version", "2"}}), "n3"}},
                   Spreading(LabelledPod("web", {{"app", "web"}, {"version", "2"}}),
                             {WithLabelKeys(Spread(kZone, 1, true), {"version"})}),
                   {"", "", kSkew, "", kLabel}},
        FilterCase{"pods of other namespaces are not counted",
                   {{LabelledPod("web-a", kWeb, "other"), "n1"}, {LabelledPod("web-b", kWeb, "other"), "n3"}},
                   Spreading(LabelledPod("web", kWeb), {Spread(kZone, 1, true)}),
                   {"", "", "", "", kLabel}},
        FilterCase{"a constraint without a label selector counts nothing and skips the pod itself",
                   {kWebA, kWebB},
                   Spreading(LabelledPod("web", kWeb), {Spread(kZone, 1, true, std::nullopt)}),
                   {"", "", "", "", kLabel}},
        FilterCase{"an empty label selector counts nothing but matches the pod itself",
                   {kWebA, kWebB},
                   Spreading(LabelledPod("web", kWeb), {Spread(kZone, 1, true, Labels{})}),
                   {"", "", "", "", kLabel}},
        FilterCase{"every constraint must hold, and a node must carry every key to be counted",
                   {kWebA},
                   Spreading(LabelledPod("web", kWeb), {Spread(kZone, 1, true), Spread(kHost, 1, true)}),
                   {kSkew, kSkew, "", "", kLabel}},
        FilterCase{"ScheduleAnyway constraints do not filter",
                   {kWebA, kWebB},
                   Spreading(LabelledPod("web", kWeb), {Spread(kZone, 1, false)}),
                   {"", "", "", "", ""}}),
    testing::SentenceName<FilterCase>);

// ---- Score ---------------------------------------------------------------------------------

class PodTopologySpreadScore : public ::testing::TestWithParam<ScoreCase> {};

TEST_P(PodTopologySpreadScore, NormalisesLikeKubeScheduler) {
  const ScoreCase& c = GetParam();
  ClusterCache cache;
  AddNodes(cache);
  PlaceAll(cache, c.existing);
  auto plugin = NewPodTopologySpread(&cache);
  CycleState state;
  state.Reset(Share(c.pod));
  ASSERT_TRUE(dynamic_cast<PreFilterPlugin&>(*plugin).PreFilter(state).ok());
  auto& score = dynamic_cast<ScorePlugin&>(*plugin);
  EXPECT_THAT(testing::NormalisedScores(score, state, cache, kNodes), ElementsAreArray(c.want));
  EXPECT_FALSE(score.SkipScore(state));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PodTopologySpreadScore,
    ::testing::Values(
        // Weight ln(3 zones + 2) = 1.609; raw a 2 * 1.609 = 3, b 2, c 0; n5 lacks the key.
        ScoreCase{"an emptier zone scores higher and a node without the key 0",
                  {kWebA, {LabelledPod("web-a2", kWeb), "n2"}, kWebB},
                  Spreading(LabelledPod("web", kWeb), {Spread(kZone, 1, false)}),
                  {0, 0, 33, 100, 0}},
        // Weight ln(5 nodes + 2) = 1.946; raw n1 2 * 1.946 = 4, n3 2, others 0.
        ScoreCase{"hostname counts each node's own pods",
                  {kWebA, {LabelledPod("web-a2", kWeb), "n1"}, kWebB},
                  Spreading(LabelledPod("web", kWeb), {Spread(kHost, 1, false)}),
                  {0, 100, 50, 100, 100}},
        ScoreCase{"equal raw scores all get the maximum",
                  {},
                  Spreading(LabelledPod("web", kWeb), {Spread(kZone, 3, false)}),
                  {100, 100, 100, 100, 0}}),
    testing::SentenceName<ScoreCase>);

TEST(PodTopologySpread, APodWithoutConstraintsSkipsTheScoreAndKeepsTheEquivalenceCache) {
  ClusterCache cache;
  AddNodes(cache);
  auto plugin = NewPodTopologySpread(&cache);
  CycleState state;
  state.Reset(Share(LabelledPod("web", kWeb)));
  ASSERT_TRUE(dynamic_cast<PreFilterPlugin&>(*plugin).PreFilter(state).ok());
  std::vector<const NodeInfo*> feasible = {cache.FindNode("n1")};
  ASSERT_TRUE(dynamic_cast<PreScorePlugin&>(*plugin).PreScore(state, feasible).ok());
  EXPECT_TRUE(dynamic_cast<ScorePlugin&>(*plugin).SkipScore(state));
  EXPECT_FALSE(state.skip_equivalence_cache);
}

// ---- In the scheduler ----------------------------------------------------------------------

// The case: zones a, a, b, c and six replicas with maxSkew 1 over zones land 2/2/2,
// whichever profile schedules them. Identical replicas share an equivalence key: the cache must
// stay out of the way (InterPodAffinity, which runs after PodTopologySpread, once cleared its
// flag and the second replica joined the first's zone).
TEST(PodTopologySpread, SixReplicasSpreadTwoTwoTwoOverThreeZones) {
  for (Profile profile : {DefaultProfile(), HuygensProfile()}) {
    ClusterCache cache;
    for (const auto& [name, zone] : std::map<std::string, std::string>{{"n1", "a"}, {"n2", "a"}, {"n3", "b"}, {"n4", "c"}}) {
      ASSERT_TRUE(cache.AddNode(ZonedNode(name, zone)).ok());
    }
    auto scheduler = Scheduler::Create(&cache, profile);
    ASSERT_TRUE(scheduler.ok()) << scheduler.status();
    std::map<std::string, int> per_zone;
    for (int i = 0; i < 6; ++i) {
      Pod pod = Spreading(LabelledPod("web-" + std::to_string(i), kWeb), {Spread(kZone, 1, true)});
      ScheduleResult r = (*scheduler)->ScheduleOne(Share(std::move(pod)));
      ASSERT_TRUE(r.scheduled()) << profile.scheduler_name << " pod " << i << ": " << r.message;
      ++per_zone[cache.FindNode(r.node)->node.labels.at(kZone)];
    }
    EXPECT_EQ(per_zone, (std::map<std::string, int>{{"a", 2}, {"b", 2}, {"c", 2}})) << profile.scheduler_name;
  }
}

}  // namespace
}  // namespace huygens::sched
