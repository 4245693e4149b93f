// InterPodAffinity, case by case (kube-scheduler v1.35.4's semantics and reason strings): the
// Filter's required affinity and anti-affinity both ways, namespaces, namespaceSelector,
// matchLabelKeys, the self-affinity first pod; the Score's preferred terms; and the scheduler
// placing replicas apart with the equivalence cache on.
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
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

constexpr const char* kZone = testing::kZoneLabel;
constexpr const char* kHost = testing::kHostnameLabel;
constexpr char kAffinity[] = "node(s) didn't match pod affinity rules";
constexpr char kAnti[] = "node(s) didn't match pod anti-affinity rules";
constexpr char kExisting[] = "node(s) didn't satisfy existing pods anti-affinity rules";

PodAffinityTerm Term(Labels match, std::string topology_key) {
  PodAffinityTerm t;
  t.label_selector = LabelSelector{.match_labels = std::move(match), .match_expressions = {}};
  t.topology_key = std::move(topology_key);
  return t;
}

PodAffinityTerm InNamespaces(PodAffinityTerm t, std::vector<std::string> namespaces) {
  t.namespaces = std::move(namespaces);
  return t;
}

PodAffinityTerm WithNamespaceSelector(PodAffinityTerm t, Labels match) {
  t.namespace_selector = LabelSelector{.match_labels = std::move(match), .match_expressions = {}};
  return t;
}

PodAffinityTerm WithLabelKeys(PodAffinityTerm t, std::vector<std::string> match, std::vector<std::string> mismatch) {
  t.match_label_keys = std::move(match);
  t.mismatch_label_keys = std::move(mismatch);
  return t;
}


Pod WithAffinity(Pod pod, std::vector<PodAffinityTerm> required, std::vector<PodAffinityTerm> required_anti) {
  pod.pod_affinity.required = std::move(required);
  pod.pod_affinity.required_anti = std::move(required_anti);
  return pod;
}

// Nodes n1, n2 (zone a), n3 (zone b), n4 (no zone label), each labelled with its hostname.
void AddNodes(ClusterCache& cache) {
  const std::map<std::string, std::string> zones = {{"n1", "a"}, {"n2", "a"}, {"n3", "b"}, {"n4", ""}};
  for (const auto& [name, zone] : zones) ASSERT_TRUE(cache.AddNode(ZonedNode(name, zone)).ok());
}

struct FilterCase {
  std::string name;
  std::vector<Placed> existing;
  std::map<std::string, Labels> namespaces;  // namespace labels the cache knows
  Pod pod;
  std::vector<std::string> want;  // per node n1..n4: "" fits, else the reason
};

class InterPodAffinityFilter : public ::testing::TestWithParam<FilterCase> {};

TEST_P(InterPodAffinityFilter, MatchesKubeScheduler) {
  const FilterCase& c = GetParam();
  ClusterCache cache;
  AddNodes(cache);
  for (const auto& [ns, labels] : c.namespaces) cache.SetNamespaceLabels(ns, labels);
  PlaceAll(cache, c.existing);
  auto plugin = NewInterPodAffinity(&cache);
  CycleState state;
  state.Reset(Share(c.pod));
  ASSERT_TRUE(dynamic_cast<PreFilterPlugin&>(*plugin).PreFilter(state).ok());
  std::vector<std::string> got;
  for (const char* name : {"n1", "n2", "n3", "n4"}) {
    const Status s = dynamic_cast<FilterPlugin&>(*plugin).Filter(state, *cache.FindNode(name));
    got.push_back(s.ok() ? "" : s.Message());
    if (!s.ok()) {
      EXPECT_EQ(s.code(), s.Message() == kAffinity ? Code::kUnschedulableAndUnresolvable : Code::kUnschedulable)
          << name;
    }
  }
  EXPECT_THAT(got, ElementsAreArray(c.want));
  EXPECT_EQ(state.skip_equivalence_cache, got != std::vector<std::string>(4, "") || !c.pod.pod_affinity.empty());
}

const Labels kDb = {{"app", "db"}};
const Labels kWeb = {{"app", "web"}};

INSTANTIATE_TEST_SUITE_P(
    Cases, InterPodAffinityFilter,
    ::testing::Values(
        FilterCase{"required affinity holds in the zone of a matching pod",
                   {{LabelledPod("db", kDb), "n1"}}, {},
                   WithAffinity(LabelledPod("web", kWeb), {Term(kDb, kZone)}, {}),
                   {"", "", kAffinity, kAffinity}},
        FilterCase{"required affinity on hostname holds on the matching pod's node only",
                   {{LabelledPod("db", kDb), "n3"}}, {},
                   WithAffinity(LabelledPod("web", kWeb), {Term(kDb, kHost)}, {}),
                   {kAffinity, kAffinity, "", kAffinity}},
        FilterCase{"required affinity without any matching pod rejects every node",
                   {{LabelledPod("other", kWeb), "n1"}}, {},
                   WithAffinity(LabelledPod("web", {{"app", "api"}}), {Term(kDb, kZone)}, {}),
                   {kAffinity, kAffinity, kAffinity, kAffinity}},
        FilterCase{"a pod matching its own term goes first wherever the topology key exists",
                   {}, {},
                   WithAffinity(LabelledPod("web", kWeb), {Term(kWeb, kZone)}, {}),
                   {"", "", "", kAffinity}},
        FilterCase{"once a pod matching the term runs the self-affine pod follows it",
                   {{LabelledPod("web-0", kWeb), "n3"}}, {},
                   WithAffinity(LabelledPod("web", kWeb), {Term(kWeb, kZone)}, {}),
                   {kAffinity, kAffinity, "", kAffinity}},
        FilterCase{"every required affinity term must hold in its own domain",
                   {{LabelledPod("db", kDb), "n1"}, {LabelledPod("cache", {{"app", "cache"}}), "n2"}}, {},
                   WithAffinity(LabelledPod("web", kWeb), {Term(kDb, kZone), Term({{"app", "cache"}}, kHost)}, {}),
                   {kAffinity, kAffinity, kAffinity, kAffinity}},
        FilterCase{"anti-affinity rejects the zone of a matching pod, not nodes without the key",
                   {{LabelledPod("web-0", kWeb), "n1"}}, {},
                   WithAffinity(LabelledPod("web", kWeb), {}, {Term(kWeb, kZone)}),
                   {kAnti, kAnti, "", ""}},
        FilterCase{"anti-affinity on hostname rejects the matching pod's node only",
                   {{LabelledPod("web-0", kWeb), "n1"}}, {},
                   WithAffinity(LabelledPod("web", kWeb), {}, {Term(kWeb, kHost)}),
                   {kAnti, "", "", ""}},
        FilterCase{"an existing pod's anti-affinity keeps a pod it selects out of its zone",
                   {{WithAffinity(LabelledPod("db", kDb), {}, {Term(kWeb, kZone)}), "n1"}}, {},
                   LabelledPod("web", kWeb),
                   {kExisting, kExisting, "", ""}},
        FilterCase{"an existing pod's anti-affinity ignores pods it does not select",
                   {{WithAffinity(LabelledPod("db", kDb), {}, {Term(kWeb, kZone)}), "n1"}}, {},
                   LabelledPod("api", {{"app", "api"}}),
                   {"", "", "", ""}},
        FilterCase{"a term without namespaces looks in its pod's namespace only",
                   {{LabelledPod("db", kDb, "data"), "n1"}}, {},
                   WithAffinity(LabelledPod("web", kWeb), {Term(kDb, kZone)}, {}),
                   {kAffinity, kAffinity, kAffinity, kAffinity}},
        FilterCase{"a term's namespaces name where to look",
                   {{LabelledPod("db", kDb, "data"), "n1"}}, {},
                   WithAffinity(LabelledPod("web", kWeb), {InNamespaces(Term(kDb, kZone), {"data"})}, {}),
                   {"", "", kAffinity, kAffinity}},
        FilterCase{"a namespaceSelector selects namespaces by their labels",
                   {{LabelledPod("db", kDb, "data"), "n3"}}, {{"data", {{"team", "x"}}}},
                   WithAffinity(LabelledPod("web", kWeb), {WithNamespaceSelector(Term(kDb, kZone), {{"team", "x"}})}, {}),
                   {kAffinity, kAffinity, "", kAffinity}},
        FilterCase{"a namespaceSelector skips namespaces whose labels differ",
                   {{LabelledPod("db", kDb, "data"), "n3"}}, {{"data", {{"team", "y"}}}},
                   WithAffinity(LabelledPod("web", kWeb), {WithNamespaceSelector(Term(kDb, kZone), {{"team", "x"}})}, {}),
                   {kAffinity, kAffinity, kAffinity, kAffinity}},
        FilterCase{"an empty namespaceSelector selects every namespace, known or not",
                   {{LabelledPod("web-0", kWeb, "elsewhere"), "n3"}}, {},
                   WithAffinity(LabelledPod("web", {{"app", "api"}}), {}, {WithNamespaceSelector(Term(kWeb, kZone), {})}),
                   {"", "", kAnti, ""}},
        FilterCase{"an existing pod's namespaceSelector reads the incoming pod's namespace labels",
                   {{WithAffinity(LabelledPod("db", kDb, "data"), {},
                                  {WithNamespaceSelector(Term(kWeb, kHost), {{"tier", "front"}})}),
                     "n2"}},
                   {{"shop", {{"tier", "front"}}}},
                   LabelledPod("web", kWeb, "shop"),
                   {"", kExisting, "", ""}},
        FilterCase{"matchLabelKeys narrows the selector to the pod's own value",
                   {{LabelledPod("web-v1", {{"app", "web"}, {"version", "1"}}), "n1"},
                    {LabelledPod("web-v2", {{"app", "web"}, {"version", "2"}}), "n3"}},
                   {},
                   WithAffinity(LabelledPod("web", {{"app", "web"}, {"version", "2"}}), {},
                                {WithLabelKeys(Term(kWeb, kZone), {"version"}, {})}),
                   {"", "", kAnti, ""}},
        FilterCase{"mismatchLabelKeys keeps pods with the pod's own value out of the selector",
                   {{LabelledPod("db-a", {{"app", "db"}, {"tenant", "a"}}), "n1"},
                    {LabelledPod("db-b", {{"app", "db"}, {"tenant", "b"}}), "n3"}},
                   {},
                   WithAffinity(LabelledPod("web", {{"app", "web"}, {"tenant", "a"}}),
                                {WithLabelKeys(Term(kDb, kZone), {}, {"tenant"})}, {}),
                   {kAffinity, kAffinity, "", kAffinity}},
        FilterCase{"a term without a label selector selects no pod",
                   {{LabelledPod("db", kDb), "n1"}}, {},
                   WithAffinity(LabelledPod("web", kWeb), {}, {[] {
                                  PodAffinityTerm no_selector = Term(kDb, kZone);
                                  no_selector.label_selector.reset();
                                  return no_selector;
                                }()}),
                   {"", "", "", ""}}),
    testing::SentenceName<FilterCase>);

// ---- Score ---------------------------------------------------------------------------------

class InterPodAffinityScore : public ::testing::TestWithParam<ScoreCase> {};

TEST_P(InterPodAffinityScore, NormalisesLikeKubeScheduler) {
  const ScoreCase& c = GetParam();
  ClusterCache cache;
  AddNodes(cache);
  PlaceAll(cache, c.existing);
  auto plugin = NewInterPodAffinity(&cache);
  CycleState state;
  state.Reset(Share(c.pod));
  ASSERT_TRUE(dynamic_cast<PreFilterPlugin&>(*plugin).PreFilter(state).ok());
  auto& score = dynamic_cast<ScorePlugin&>(*plugin);
  EXPECT_THAT(testing::NormalisedScores(score, state, cache, {"n1", "n2", "n3", "n4"}), ElementsAreArray(c.want));
}

Pod Preferring(Pod pod, std::vector<WeightedPodAffinityTerm> affinity, std::vector<WeightedPodAffinityTerm> anti) {
  pod.pod_affinity.preferred = std::move(affinity);
  pod.pod_affinity.preferred_anti = std::move(anti);
  return pod;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, InterPodAffinityScore,
    ::testing::Values(
        ScoreCase{"no terms anywhere scores every node 0", {{LabelledPod("db", kDb), "n1"}},
                  LabelledPod("web", kWeb), {0, 0, 0, 0}},
        ScoreCase{"preferred affinity and anti-affinity weights add up per domain",
                  {{LabelledPod("db", kDb), "n1"}, {LabelledPod("web-0", kWeb), "n2"}},
                  Preferring(LabelledPod("web", kWeb), {{10, Term(kDb, kZone)}}, {{5, Term(kWeb, kHost)}}),
                  // raw n1 10, n2 10 - 5, n3 0, n4 0: min-max over 0..10
                  {100, 50, 0, 0}},
        ScoreCase{"anti-affinity alone puts the matching domain last",
                  {{LabelledPod("web-0", kWeb), "n3"}},
                  Preferring(LabelledPod("web", kWeb), {}, {{7, Term(kWeb, kZone)}}),
                  {100, 100, 0, 100}},
        ScoreCase{"existing pods' required affinity counts with weight 1, preferred with theirs",
                  {{WithAffinity(LabelledPod("db", kDb), {Term(kWeb, kHost)}, {}), "n1"},
                   {Preferring(LabelledPod("cache", {{"app", "cache"}}), {{3, Term(kWeb, kZone)}}, {}), "n3"},
                   {Preferring(LabelledPod("api", {{"app", "api"}}), {}, {{2, Term(kWeb, kHost)}}), "n4"}},
                  LabelledPod("web", kWeb),
                  // raw n1 1, n2 0, n3 3, n4 -2: min-max over -2..3
                  {60, 40, 100, 0}}),
    testing::SentenceName<ScoreCase>);

// ---- In the scheduler ----------------------------------------------------------------------

TEST(InterPodAffinity, ReplicasWithRequiredAntiAffinityLandOnDifferentNodesThenWait) {
  ClusterCache cache;
  AddNodes(cache);
  auto scheduler = Scheduler::Create(&cache, DefaultProfile());
  ASSERT_TRUE(scheduler.ok());
  std::vector<std::string> nodes;
  for (int i = 0; i < 5; ++i) {
    Pod pod = WithAffinity(LabelledPod("web-" + std::to_string(i), kWeb), {}, {Term(kWeb, kHost)});
    ScheduleResult r = (*scheduler)->ScheduleOne(Share(std::move(pod)));
    nodes.push_back(r.scheduled() ? r.node : r.message);
  }
  std::vector<std::string> first(nodes.begin(), nodes.begin() + 4);
  std::sort(first.begin(), first.end());
  EXPECT_THAT(first, ElementsAre("n1", "n2", "n3", "n4"));
  EXPECT_EQ(nodes[4], "0/4 nodes are available: 4 node(s) didn't match pod anti-affinity rules.");
}

TEST(InterPodAffinity, AnExistingPodsAntiAffinityReachesNodesTheEquivalenceCacheKept) {
  ClusterCache cache;
  AddNodes(cache);
  auto scheduler = Scheduler::Create(&cache, DefaultProfile());
  ASSERT_TRUE(scheduler.ok());
  // A plain web pod leaves every node's verdict in the equivalence cache; then a db that repels
  // web pods from its zone lands on n1, which changes n1 but not n2.
  ASSERT_TRUE((*scheduler)->ScheduleOne(Share(LabelledPod("web-0", kWeb))).scheduled());
  ASSERT_TRUE(cache.AddPod(Share(WithAffinity(LabelledPod("db", kDb), {}, {Term(kWeb, kZone)})), "n1",
                           std::nullopt)
                  .ok());
  std::vector<NodeVerdict> verdicts;
  ScheduleResult r = (*scheduler)->ScheduleOne(Share(LabelledPod("web-1", kWeb)), &verdicts);
  ASSERT_TRUE(r.scheduled()) << r.message;
  EXPECT_THAT(r.node, ::testing::AnyOf("n3", "n4"));
  std::map<std::string, std::string> refusals;
  for (const NodeVerdict& v : verdicts) refusals[v.node] = v.refusal;
  EXPECT_EQ(refusals["n1"], kExisting);
  EXPECT_EQ(refusals["n2"], kExisting);
}

}  // namespace
}  // namespace huygens::sched
