// kube-scheduler's default plugins, case by case: NodeUnschedulable, NodeName,
// TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit, NodeResourcesBalancedAllocation;
// and Huygens' UnsupportedFeatures.
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sched/cache.h"
#include "sched/framework.h"
#include "sched/plugins.h"
#include "sched/test_util.h"

namespace huygens::sched {
namespace {

using testing::PlainNode;
using testing::Share;
using ::testing::ElementsAre;

// Runs one Filter of `plugin` for `pod` on the only node of `cache`.
Status RunFilter(Plugin& plugin, const ClusterCache& cache, const Pod& pod) {
  CycleState state;
  state.Reset(Share(pod));
  ComputePodFacts(pod, state.mutable_facts());
  auto* filter = dynamic_cast<FilterPlugin*>(&plugin);
  EXPECT_NE(filter, nullptr);
  return filter->Filter(state, *cache.Nodes().front());
}

Toleration Tol(std::string key, TolerationOperator op, std::string value,
               std::optional<TaintEffect> effect) {
  Toleration t;
  t.key = std::move(key);
  t.op = op;
  t.value = std::move(value);
  t.effect = effect;
  return t;
}

Pod BarePod() { return testing::SharedPod("p", 100); }

// ---- TaintToleration ----------------------------------------------------------------------

struct TaintCase {
  std::string name;
  std::vector<Taint> taints;
  std::vector<Toleration> tolerations;
  bool fits;
};

class TaintTolerationFilter : public ::testing::TestWithParam<TaintCase> {};

TEST_P(TaintTolerationFilter, MatchesKubernetesTolerationRules) {
  const TaintCase& c = GetParam();
  ClusterCache cache;
  Node node = PlainNode("n", 4000);
  node.taints = c.taints;
  ASSERT_TRUE(cache.AddNode(node).ok());
  Pod pod = BarePod();
  pod.tolerations = c.tolerations;
  auto plugin = NewTaintToleration();
  Status s = RunFilter(*plugin, cache, pod);
  EXPECT_EQ(s.ok(), c.fits);
  if (!c.fits) {
    EXPECT_EQ(s.code(), Code::kUnschedulableAndUnresolvable);
  }
}

const Taint kGpuNoSchedule{"dedicated", "gpu", TaintEffect::kNoSchedule};
const Taint kGpuNoExecute{"dedicated", "gpu", TaintEffect::kNoExecute};
const Taint kGpuPrefer{"dedicated", "gpu", TaintEffect::kPreferNoSchedule};

INSTANTIATE_TEST_SUITE_P(
    Cases, TaintTolerationFilter,
    ::testing::Values(
        TaintCase{"a node without taints takes any pod", {}, {}, true},
        TaintCase{"a NoSchedule taint rejects a pod without tolerations", {kGpuNoSchedule}, {},
                  false},
        TaintCase{"a NoExecute taint rejects a pod without tolerations", {kGpuNoExecute}, {},
                  false},
        TaintCase{"a PreferNoSchedule taint never rejects", {kGpuPrefer}, {}, true},
        TaintCase{"Equal with the same key value and effect tolerates",
                  {kGpuNoSchedule},
                  {Tol("dedicated", TolerationOperator::kEqual, "gpu", TaintEffect::kNoSchedule)},
                  true},
        TaintCase{"Equal with another value does not tolerate",
                  {kGpuNoSchedule},
                  {Tol("dedicated", TolerationOperator::kEqual, "cpu", TaintEffect::kNoSchedule)},
                  false},
        TaintCase{"Exists with the same key tolerates any value",
                  {kGpuNoSchedule},
                  {Tol("dedicated", TolerationOperator::kExists, "", TaintEffect::kNoSchedule)},
                  true},
        TaintCase{"Exists with another key does not tolerate",
                  {kGpuNoSchedule},
                  {Tol("other", TolerationOperator::kExists, "", std::nullopt)},
                  false},
        TaintCase{"an empty key with Exists tolerates every taint",
                  {kGpuNoSchedule, kGpuNoExecute},
                  {Tol("", TolerationOperator::kExists, "", std::nullopt)},
                  true},
        TaintCase{"a toleration without effect matches every effect",
                  {kGpuNoSchedule, kGpuNoExecute},
                  {Tol("dedicated", TolerationOperator::kEqual, "gpu", std::nullopt)},
                  true},
        TaintCase{"a NoSchedule toleration does not cover a NoExecute taint",
                  {kGpuNoExecute},
                  {Tol("dedicated", TolerationOperator::kEqual, "gpu", TaintEffect::kNoSchedule)},
                  false},
        TaintCase{"every hard taint must be tolerated, not just one",
                  {kGpuNoSchedule, {"zone", "x", TaintEffect::kNoSchedule}},
                  {Tol("dedicated", TolerationOperator::kExists, "", std::nullopt)},
                  false}),
    [](const auto& p) { return testing::SentenceName(p); });

TEST(TaintToleration, ReasonNamesTheFirstUntoleratedTaint) {
  ClusterCache cache;
  Node node = PlainNode("n", 4000);
  node.taints = {kGpuNoSchedule};
  ASSERT_TRUE(cache.AddNode(node).ok());
  auto plugin = NewTaintToleration();
  Status s = RunFilter(*plugin, cache, BarePod());
  EXPECT_THAT(s.reasons(), ElementsAre("node(s) had untolerated taint {dedicated: gpu}"));
}

TEST(TaintToleration, ScorePrefersNodesWithFewerUntoleratedPreferNoScheduleTaints) {
  ClusterCache cache;
  Node clean = PlainNode("clean", 4000);
  Node one = PlainNode("one", 4000);
  one.taints = {kGpuPrefer};
  Node two = PlainNode("two", 4000);
  two.taints = {kGpuPrefer, {"zone", "x", TaintEffect::kPreferNoSchedule}};
  for (const Node& n : {clean, one, two}) ASSERT_TRUE(cache.AddNode(n).ok());
  auto plugin = NewTaintToleration();
  auto* score = dynamic_cast<ScorePlugin*>(plugin.get());
  CycleState state;
  state.Reset(Share(BarePod()));
  std::vector<int64_t> scores;
  for (const NodeInfo* n : cache.Nodes()) scores.push_back(score->Score(state, *n));
  score->NormalizeScore(state, scores);
  EXPECT_THAT(scores, ElementsAre(100, 50, 0));
}

// ---- NodeAffinity ---------------------------------------------------------------------------

struct AffinityCase {
  std::string name;
  std::map<std::string, std::string> node_selector;
  std::vector<NodeSelectorTerm> terms;
  bool fits;
};

class NodeAffinityFilter : public ::testing::TestWithParam<AffinityCase> {};

TEST_P(NodeAffinityFilter, MatchesKubernetesSelectorRules) {
  const AffinityCase& c = GetParam();
  ClusterCache cache;
  Node node = PlainNode("node-7", 4000);
  node.labels = {{"zone", "a"}, {"cpus", "64"}, {"ssd", ""}};
  ASSERT_TRUE(cache.AddNode(node).ok());
  Pod pod = BarePod();
  pod.node_selector = c.node_selector;
  pod.required_node_affinity = c.terms;
  auto plugin = NewNodeAffinity();
  Status s = RunFilter(*plugin, cache, pod);
  EXPECT_EQ(s.ok(), c.fits);
  if (!c.fits) {
    EXPECT_THAT(s.reasons(), ElementsAre("node(s) didn't match Pod's node affinity/selector"));
  }
}

NodeSelectorTerm Term(std::vector<NodeSelectorRequirement> exprs) {
  return NodeSelectorTerm{std::move(exprs), {}};
}
using Op = SelectorOperator;

INSTANTIATE_TEST_SUITE_P(
    Cases, NodeAffinityFilter,
    ::testing::Values(
        AffinityCase{"no selector and no affinity fits", {}, {}, true},
        AffinityCase{"a matching nodeSelector fits", {{"zone", "a"}}, {}, true},
        AffinityCase{"a nodeSelector with another value does not fit", {{"zone", "b"}}, {},
                     false},
        AffinityCase{"a nodeSelector on a missing label does not fit", {{"rack", "1"}}, {},
                     false},
        AffinityCase{"In with the node's value fits", {}, {Term({{"zone", Op::kIn, {"b", "a"}}})},
                     true},
        AffinityCase{"In without the node's value does not fit", {},
                     {Term({{"zone", Op::kIn, {"b"}}})}, false},
        AffinityCase{"In on a missing label does not fit", {},
                     {Term({{"rack", Op::kIn, {"1"}}})}, false},
        AffinityCase{"NotIn with the node's value does not fit", {},
                     {Term({{"zone", Op::kNotIn, {"a"}}})}, false},
        AffinityCase{"NotIn on a missing label fits", {}, {Term({{"rack", Op::kNotIn, {"1"}}})},
                     true},
        AffinityCase{"Exists on a present empty label fits", {},
                     {Term({{"ssd", Op::kExists, {}}})}, true},
        AffinityCase{"Exists on a missing label does not fit", {},
                     {Term({{"gpu", Op::kExists, {}}})}, false},
        AffinityCase{"DoesNotExist on a missing label fits", {},
                     {Term({{"gpu", Op::kDoesNotExist, {}}})}, true},
        AffinityCase{"DoesNotExist on a present label does not fit", {},
                     {Term({{"zone", Op::kDoesNotExist, {}}})}, false},
        AffinityCase{"Gt below the label's integer fits", {}, {Term({{"cpus", Op::kGt, {"32"}}})},
                     true},
        AffinityCase{"Gt equal to the label's integer does not fit", {},
                     {Term({{"cpus", Op::kGt, {"64"}}})}, false},
        AffinityCase{"Lt above the label's integer fits", {}, {Term({{"cpus", Op::kLt, {"128"}}})},
                     true},
        AffinityCase{"Lt on a label that is not an integer does not fit", {},
                     {Term({{"zone", Op::kLt, {"5"}}})}, false},
        AffinityCase{"Gt with two values is invalid and does not fit", {},
                     {Term({{"cpus", Op::kGt, {"1", "2"}}})}, false},
        AffinityCase{"In without values is invalid and does not fit", {},
                     {Term({{"zone", Op::kIn, {}}})}, false},
        AffinityCase{"expressions in one term are ANDed", {},
                     {Term({{"zone", Op::kIn, {"a"}}, {"cpus", Op::kGt, {"100"}}})}, false},
        AffinityCase{"terms are ORed", {},
                     {Term({{"zone", Op::kIn, {"b"}}}), Term({{"cpus", Op::kGt, {"8"}}})}, true},
        AffinityCase{"an empty term matches nothing", {}, {NodeSelectorTerm{}}, false},
        AffinityCase{"nodeSelector and affinity must both match", {{"zone", "b"}},
                     {Term({{"cpus", Op::kGt, {"8"}}})}, false},
        AffinityCase{"matchFields on metadata.name fits the named node", {},
                     {NodeSelectorTerm{{}, {{"metadata.name", Op::kIn, {"node-7"}}}}}, true},
        AffinityCase{"matchFields on metadata.name rejects other nodes", {},
                     {NodeSelectorTerm{{}, {{"metadata.name", Op::kIn, {"node-8"}}}}}, false}),
    [](const auto& p) { return testing::SentenceName(p); });

TEST(NodeAffinity, ScoreIsTheNormalisedSumOfMatchingPreferredWeights) {
  ClusterCache cache;
  Node a = PlainNode("a", 4000);
  a.labels = {{"zone", "a"}, {"ssd", "1"}};
  Node b = PlainNode("b", 4000);
  b.labels = {{"zone", "a"}};
  Node c = PlainNode("c", 4000);
  for (const Node& n : {a, b, c}) ASSERT_TRUE(cache.AddNode(n).ok());
  Pod pod = BarePod();
  pod.preferred_node_affinity = {{30, Term({{"zone", Op::kIn, {"a"}}})},
                                 {10, Term({{"ssd", Op::kExists, {}}})}};
  auto plugin = NewNodeAffinity();
  auto* score = dynamic_cast<ScorePlugin*>(plugin.get());
  CycleState state;
  state.Reset(Share(pod));
  std::vector<int64_t> scores;
  for (const NodeInfo* n : cache.Nodes()) scores.push_back(score->Score(state, *n));
  score->NormalizeScore(state, scores);
  EXPECT_THAT(scores, ElementsAre(100, 75, 0));
}

// ---- NodePorts -----------------------------------------------------------------------------

struct PortCase {
  std::string name;
  HostPort used;
  HostPort wanted;
  bool fits;
};

class NodePortsFilter : public ::testing::TestWithParam<PortCase> {};

TEST_P(NodePortsFilter, ConflictsAsKubeSchedulerDoes) {
  const PortCase& c = GetParam();
  ClusterCache cache;
  ASSERT_TRUE(cache.AddNode(PlainNode("n", 8000)).ok());
  Pod holder = testing::SharedPod("holder", 100);
  holder.host_ports = {c.used};
  ASSERT_TRUE(cache.AddPod(Share(holder), "n", std::nullopt).ok());
  Pod pod = BarePod();
  pod.host_ports = {c.wanted};
  auto plugin = NewNodePorts();
  Status s = RunFilter(*plugin, cache, pod);
  EXPECT_EQ(s.ok(), c.fits);
  if (!c.fits) {
    EXPECT_THAT(s.reasons(),
                ElementsAre("node(s) didn't have free ports for the requested pod ports"));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, NodePortsFilter,
    ::testing::Values(
        PortCase{"the same port and protocol on the wildcard conflicts", {"", "TCP", 8080},
                 {"", "TCP", 8080}, false},
        PortCase{"a specific IP conflicts with the wildcard in use", {"0.0.0.0", "TCP", 8080},
                 {"10.0.0.1", "TCP", 8080}, false},
        PortCase{"the wildcard conflicts with a specific IP in use", {"10.0.0.1", "TCP", 80},
                 {"", "TCP", 80}, false},
        PortCase{"two different specific IPs do not conflict", {"10.0.0.1", "TCP", 80},
                 {"10.0.0.2", "TCP", 80}, true},
        PortCase{"another protocol does not conflict", {"", "TCP", 53}, {"", "UDP", 53}, true},
        PortCase{"another port does not conflict", {"", "TCP", 8080}, {"", "TCP", 8081}, true}),
    [](const auto& p) { return testing::SentenceName(p); });

TEST(NodePorts, APortIsFreeAgainOnceItsPodLeaves) {
  ClusterCache cache;
  ASSERT_TRUE(cache.AddNode(PlainNode("n", 8000)).ok());
  Pod holder = testing::SharedPod("holder", 100);
  holder.host_ports = {{"", "TCP", 80}};
  ASSERT_TRUE(cache.AddPod(Share(holder), "n", std::nullopt).ok());
  Pod pod = BarePod();
  pod.host_ports = {{"", "TCP", 80}};
  auto plugin = NewNodePorts();
  EXPECT_FALSE(RunFilter(*plugin, cache, pod).ok());
  ASSERT_TRUE(cache.RemovePod("holder").ok());
  EXPECT_TRUE(RunFilter(*plugin, cache, pod).ok());
}

// ---- NodeResourcesFit ----------------------------------------------------------------------

struct FitCase {
  std::string name;
  Pod pod;
  std::vector<std::string> reasons;  // empty = fits
};

Pod WithMemory(Pod pod, int64_t bytes) {
  pod.spec.containers[0].memory_request_bytes = bytes;
  return pod;
}
Pod WithExtended(Pod pod, std::string name, int64_t amount) {
  pod.extended_requests[name] = amount;
  return pod;
}
Pod WithIsolated(Pod pod, int64_t cpus) {
  pod.spec.containers[0].isolated_cpus = cpus;
  return pod;
}
Pod WithOverhead(Pod pod, int64_t milli, int64_t bytes) {
  pod.overhead_cpu_milli = milli;
  pod.overhead_memory_bytes = bytes;
  return pod;
}
Pod WithPodLevel(Pod pod, std::optional<int64_t> milli, std::optional<int64_t> bytes) {
  pod.pod_cpu_request_milli = milli;
  pod.pod_memory_request_bytes = bytes;
  return pod;
}

class NodeResourcesFitFilter : public ::testing::TestWithParam<FitCase> {};

// The node: 4 CPUs, 8 GiB, 3 pods, 1 example.com/gpu, 2 isolated CPUs; one pod already
// requests 1.5 CPUs and 4 GiB.
TEST_P(NodeResourcesFitFilter, ChecksEveryRequestedResource) {
  const FitCase& c = GetParam();
  ClusterCache cache;
  Node node = PlainNode("n", 4000);
  node.allocatable.memory_bytes = int64_t{8} << 30;
  node.allocatable.pods = 3;
  node.allocatable.extended = {{"example.com/gpu", 1}, {kIsolatedCpuResource, 2}};
  ASSERT_TRUE(cache.AddNode(node).ok());
  ASSERT_TRUE(
      cache.AddPod(Share(WithMemory(testing::SharedPod("old", 1500), int64_t{4} << 30)), "n",
                   std::nullopt)
          .ok());
  auto plugin = NewNodeResourcesFit(ResourceScoring::kLeastAllocated);
  Status s = RunFilter(*plugin, cache, c.pod);
  EXPECT_THAT(std::vector<std::string>(s.reasons().begin(), s.reasons().end()),
              ::testing::ElementsAreArray(c.reasons));
  if (!c.reasons.empty()) {
    EXPECT_EQ(s.code(), Code::kUnschedulable);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, NodeResourcesFitFilter,
    ::testing::Values(
        FitCase{"a pod within every remaining amount fits", testing::SharedPod("p", 2500), {}},
        FitCase{"one millicore too many is insufficient cpu", testing::SharedPod("p", 2501),
                {"Insufficient cpu"}},
        FitCase{"cpu and memory both short are both listed",
                WithMemory(testing::SharedPod("p", 3000), int64_t{5} << 30),
                {"Insufficient cpu", "Insufficient memory"}},
        FitCase{"an extended resource beyond allocatable is insufficient",
                WithExtended(testing::SharedPod("p", 100), "example.com/gpu", 2),
                {"Insufficient example.com/gpu"}},
        FitCase{"an extended resource the node lacks is insufficient",
                WithExtended(testing::SharedPod("p", 100), "example.com/fpga", 1),
                {"Insufficient example.com/fpga"}},
        FitCase{"isolated CPUs within huygens.io/isolated-cpu fit",
                WithIsolated(testing::SharedPod("p", 0), 2), {}},
        FitCase{"isolated CPUs beyond huygens.io/isolated-cpu are insufficient",
                WithIsolated(testing::SharedPod("p", 0), 3),
                {"Insufficient huygens.io/isolated-cpu"}},
        FitCase{"the overhead is added to the containers' requests",
                WithOverhead(testing::SharedPod("p", 2000), 501, int64_t{4} << 30), {"Insufficient cpu"}},
        FitCase{"requests and overhead that fit together fit",
                WithOverhead(testing::SharedPod("p", 2000), 500, int64_t{4} << 30), {}},
        FitCase{"the overhead's memory counts", WithOverhead(testing::SharedPod("p", 100), 0, (int64_t{4} << 30) + 1),
                {"Insufficient memory"}},
        FitCase{"pod-level requests replace the containers' sum",
                WithPodLevel(testing::SharedPod("p", 100), 64000, std::nullopt), {"Insufficient cpu"}},
        FitCase{"pod-level requests below the containers' sum are what counts",
                WithPodLevel(testing::SharedPod("p", 3000), 2500, int64_t{4} << 30), {}},
        FitCase{"pod-level memory replaces the containers' memory",
                WithPodLevel(testing::SharedPod("p", 100), std::nullopt, int64_t{5} << 30), {"Insufficient memory"}},
        FitCase{"the overhead is added to pod-level requests",
                WithOverhead(WithPodLevel(testing::SharedPod("p", 100), 2400, std::nullopt), 101, 0),
                {"Insufficient cpu"}}),
    [](const auto& p) { return testing::SentenceName(p); });

TEST(NodeResourcesFit, ThePodCountIsCheckedEvenForPodsRequestingNothing) {
  ClusterCache cache;
  Node node = PlainNode("n", 4000);
  node.allocatable.pods = 1;
  ASSERT_TRUE(cache.AddNode(node).ok());
  ASSERT_TRUE(cache.AddPod(Share(testing::SharedPod("old", 0)), "n", std::nullopt).ok());
  auto plugin = NewNodeResourcesFit(ResourceScoring::kLeastAllocated);
  Status s = RunFilter(*plugin, cache, testing::SharedPod("p", 0));
  EXPECT_THAT(s.reasons(), ElementsAre("Too many pods"));
}

TEST(NodeResourcesFit, ExclusivePodsCountTheirWholeCpusAgainstTheNode) {
  ClusterCache cache;
  ASSERT_TRUE(cache.AddNode(PlainNode("n", 8000)).ok());
  ASSERT_TRUE(cache.AddPod(Share(testing::GuaranteedPod("g", 6)), "n", std::nullopt).ok());
  auto plugin = NewNodeResourcesFit(ResourceScoring::kLeastAllocated);
  EXPECT_TRUE(RunFilter(*plugin, cache, testing::GuaranteedPod("a", 2)).ok());
  EXPECT_FALSE(RunFilter(*plugin, cache, testing::GuaranteedPod("b", 3)).ok());
}

TEST(NodeResourcesFit, LeastAllocatedPrefersEmptierNodesAndMostAllocatedFuller) {
  ClusterCache cache;
  ASSERT_TRUE(cache.AddNode(PlainNode("empty", 8000)).ok());
  ASSERT_TRUE(cache.AddNode(PlainNode("busy", 8000)).ok());
  ASSERT_TRUE(cache.AddPod(Share(testing::SharedPod("old", 4000)), "busy", std::nullopt).ok());
  const Pod pod = testing::SharedPod("p", 2000);
  for (ResourceScoring scoring : {ResourceScoring::kLeastAllocated, ResourceScoring::kMostAllocated}) {
    auto plugin = NewNodeResourcesFit(scoring);
    auto* score = dynamic_cast<ScorePlugin*>(plugin.get());
    CycleState state;
    state.Reset(Share(pod));
    ComputePodFacts(pod, state.mutable_facts());
    const int64_t empty = score->Score(state, *cache.FindNode("empty"));
    const int64_t busy = score->Score(state, *cache.FindNode("busy"));
    if (scoring == ResourceScoring::kLeastAllocated) {
      EXPECT_GT(empty, busy);
    } else {
      EXPECT_LT(empty, busy);
    }
  }
}

TEST(NodeResourcesFit, ABoundPodsOverheadAndPodLevelRequestsCountOnItsNode) {
  ClusterCache cache;
  ASSERT_TRUE(cache.AddNode(PlainNode("n", 16000)).ok());
  ASSERT_TRUE(cache.AddPod(Share(WithOverhead(testing::SharedPod("vm", 1000), 7000, 0)), "n", std::nullopt).ok());
  ASSERT_TRUE(
      cache.AddPod(Share(WithPodLevel(testing::SharedPod("big", 1000), 7000, std::nullopt)), "n", std::nullopt).ok());
  auto plugin = NewNodeResourcesFit(ResourceScoring::kLeastAllocated);
  EXPECT_TRUE(RunFilter(*plugin, cache, testing::SharedPod("a", 1000)).ok());
  EXPECT_THAT(RunFilter(*plugin, cache, testing::SharedPod("b", 1001)).reasons(), ElementsAre("Insufficient cpu"));
}

TEST(NodeResourcesFit, RequestsMissingFromContainersCountWithKubeSchedulersNonZeroDefaults) {
  Pod pod = testing::SharedPod("p", 0);  // no cpu, no memory request
  ContainerSpec half;
  half.name = "half";
  half.cpu_request_milli = 500;  // no memory request
  pod.spec.containers.push_back(half);
  ContainerSpec init;
  init.name = "init";
  init.init = true;
  pod.spec.init_containers.push_back(init);
  constexpr int64_t kMi = int64_t{1} << 20;
  const PodRequests r = ComputePodRequests(pod);
  EXPECT_EQ(r.cpu_milli, 500);
  EXPECT_EQ(r.memory_bytes, 0);
  EXPECT_EQ(r.non_zero_cpu_milli, 100 + 500);
  EXPECT_EQ(r.non_zero_memory_bytes, 2 * 200 * kMi);
  // A pod-level request replaces the aggregate in both; the overhead adds to both.
  const PodRequests level = ComputePodRequests(WithOverhead(WithPodLevel(pod, 2000, std::nullopt), 250, 0));
  EXPECT_EQ(level.cpu_milli, 2250);
  EXPECT_EQ(level.non_zero_cpu_milli, 2250);
  EXPECT_EQ(level.non_zero_memory_bytes, 2 * 200 * kMi);
}

TEST(NodeResourcesFit, LeastAllocatedSeesBestEffortPodsThroughTheirNonZeroDefaults) {
  ClusterCache cache;
  ASSERT_TRUE(cache.AddNode(PlainNode("empty", 1000)).ok());
  ASSERT_TRUE(cache.AddNode(PlainNode("busy", 1000)).ok());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(cache.AddPod(Share(testing::SharedPod("be-" + std::to_string(i), 0)), "busy", std::nullopt).ok());
  }
  const Pod pod = testing::SharedPod("p", 0);
  auto plugin = NewNodeResourcesFit(ResourceScoring::kLeastAllocated);
  auto* score = dynamic_cast<ScorePlugin*>(plugin.get());
  CycleState state;
  state.Reset(Share(pod));
  ComputePodFacts(pod, state.mutable_facts());
  // empty: cpu 100m of 1000m -> 90, memory 200 MiB of 64 GiB -> 99; (90 + 99) / 2.
  EXPECT_EQ(score->Score(state, *cache.FindNode("empty")), 94);
  // busy: cpu 600m -> 40, memory 1200 MiB -> 98.
  EXPECT_EQ(score->Score(state, *cache.FindNode("busy")), 69);
}

TEST(NodeResourcesFit, MoreRequestedThanAllocatableCapsMostAllocatedAndAResourceTheNodeLacksIsLeftOut) {
  ClusterCache cache;
  ASSERT_TRUE(cache.AddNode(PlainNode("full", 1000)).ok());
  Node no_memory = PlainNode("no-memory", 1000);
  no_memory.allocatable.memory_bytes = 0;
  ASSERT_TRUE(cache.AddNode(no_memory).ok());
  for (int i = 0; i < 12; ++i) {  // 1200m of non-zero cpu on a 1000m node
    ASSERT_TRUE(cache.AddPod(Share(testing::SharedPod("be-" + std::to_string(i), 0)), "full", std::nullopt).ok());
  }
  const Pod pod = testing::SharedPod("p", 0);
  auto score_on = [&](ResourceScoring scoring, const char* node) {
    auto plugin = NewNodeResourcesFit(scoring);
    CycleState state;
    state.Reset(Share(pod));
    ComputePodFacts(pod, state.mutable_facts());
    return dynamic_cast<ScorePlugin&>(*plugin).Score(state, *cache.FindNode(node));
  };
  // cpu 1300m of 1000m: most-allocated caps it at 100 (kube-scheduler's mostRequestedScore),
  // least-allocated gives 0; memory 13 x 200 MiB of 64 GiB: 3, and 96 left.
  EXPECT_EQ(score_on(ResourceScoring::kMostAllocated, "full"), (100 + 3) / 2);
  EXPECT_EQ(score_on(ResourceScoring::kLeastAllocated, "full"), (0 + 96) / 2);
  // No memory at all: the score is cpu's alone (100m of 1000m), not averaged with a 0.
  EXPECT_EQ(score_on(ResourceScoring::kMostAllocated, "no-memory"), 10);
  EXPECT_EQ(score_on(ResourceScoring::kLeastAllocated, "no-memory"), 90);
}

// ---- NodeResourcesBalancedAllocation ---------------------------------------------------------

TEST(BalancedAllocation, ScoresOneMinusHalfTheDifferenceOfTheCpuAndMemoryShares) {
  ClusterCache cache;
  ASSERT_TRUE(cache.AddNode(PlainNode("n", 8000)).ok());  // 8 CPUs, 64 GiB
  Pod busy = testing::SharedPod("busy", 4000);
  busy.spec.containers[0].memory_request_bytes = int64_t{8} << 30;
  ASSERT_TRUE(cache.AddPod(Share(busy), "n", std::nullopt).ok());
  auto plugin = NewBalancedAllocation();
  auto& score = dynamic_cast<ScorePlugin&>(*plugin);
  auto run = [&](const Pod& pod, bool* skipped) {
    CycleState state;
    state.Reset(Share(pod));
    ComputePodFacts(pod, state.mutable_facts());
    *skipped = score.SkipScore(state);
    return score.Score(state, *cache.FindNode("n"));
  };
  bool skipped = false;
  // cpu (4 + 2) / 8 = 0.75, memory (8 + 0) / 64 = 0.125: 100 * (1 - 0.3125) = 68.75.
  EXPECT_EQ(run(testing::SharedPod("p", 2000), &skipped), 68);
  EXPECT_FALSE(skipped);
  // cpu (4 + 12) / 8 caps at 1, memory 0.125: 100 * (1 - 0.4375).
  EXPECT_EQ(run(testing::SharedPod("big", 12000), &skipped), 56);
  // A pod that requests nothing skips the plugin (kube-scheduler's PreScore Skip).
  EXPECT_EQ(run(testing::SharedPod("be", 0), &skipped), 0);
  EXPECT_TRUE(skipped);
}

// ---- ImageLocality -----------------------------------------------------------------------------

TEST(ImageLocality, NormalizedImageNameAddsLatestOnlyWhereNoTagFollowsTheLastSlash) {
  EXPECT_EQ(NormalizedImageName("nginx"), "nginx:latest");
  EXPECT_EQ(NormalizedImageName("nginx:1.25"), "nginx:1.25");
  EXPECT_EQ(NormalizedImageName("registry:5000/app"), "registry:5000/app:latest");
  EXPECT_EQ(NormalizedImageName("registry:5000/app:v2"), "registry:5000/app:v2");
  EXPECT_EQ(NormalizedImageName("app@sha256:0123"), "app@sha256:0123");
}

TEST(ImageLocality, ScoresTheImagesOnTheNodeScaledByHowManyNodesHaveThem) {
  constexpr int64_t kMiB = int64_t{1} << 20;
  ClusterCache cache;
  Node n1 = PlainNode("n1", 4000);
  n1.images = {{"app:1", 500 * kMiB}, {"sidecar:latest", 100 * kMiB}};
  Node n2 = PlainNode("n2", 4000);
  n2.images = {{"app:1", 500 * kMiB}};
  for (const Node& n : {n1, n2, PlainNode("n3", 4000), PlainNode("n4", 4000)}) ASSERT_TRUE(cache.AddNode(n).ok());
  Pod pod = BarePod();
  pod.container_images = {"app:1", "sidecar:latest"};
  auto plugin = NewImageLocality(&cache);
  auto& score = dynamic_cast<ScorePlugin&>(*plugin);
  CycleState state;
  state.Reset(Share(pod));
  auto scores = [&] {
    std::vector<int64_t> out;
    for (const NodeInfo* node : cache.Nodes()) out.push_back(score.Score(state, *node));
    return out;
  };
  // n1: 500 MiB * 2/4 + 100 MiB * 1/4 = 275 MiB; n2: 250 MiB; over [23 MiB, 2 * 1000 MiB].
  EXPECT_THAT(scores(), ElementsAre(12, 11, 0, 0));
  std::string before;
  plugin->AppendEquivalenceKey(state, before);
  // A fifth node with the app image: n1 now 500 * 3/5 + 100 * 1/5 = 320 MiB, n2 300 MiB.
  Node n5 = PlainNode("n5", 4000);
  n5.images = {{"app:1", 500 * kMiB}};
  ASSERT_TRUE(cache.AddNode(n5).ok());
  EXPECT_THAT(scores(), ElementsAre(15, 14, 0, 0, 14));
  std::string after;
  plugin->AppendEquivalenceKey(state, after);
  EXPECT_NE(before, after) << "a score that other nodes change is keyed on them";
  // Updating a node's images counts the change (n1 200 + 20 MiB); an update that keeps them
  // keeps the key.
  n5.images.clear();
  ASSERT_TRUE(cache.UpdateNode(n5).ok());
  EXPECT_THAT(scores(), ElementsAre(9, 8, 0, 0, 0));
  std::string cleared;
  plugin->AppendEquivalenceKey(state, cleared);
  n5.labels["x"] = "y";
  ASSERT_TRUE(cache.UpdateNode(n5).ok());
  std::string relabelled;
  plugin->AppendEquivalenceKey(state, relabelled);
  EXPECT_EQ(cleared, relabelled);
  // A pod without images scores 0 everywhere.
  state.Reset(Share(BarePod()));
  EXPECT_THAT(scores(), ElementsAre(0, 0, 0, 0, 0));
}

// ---- UnsupportedFeatures ---------------------------------------------------------------------

struct UnsupportedCase {
  std::string name;
  void (*ask)(Pod&);
  std::string message;  // "" = passes
};

class UnsupportedFeaturesPreFilter : public ::testing::TestWithParam<UnsupportedCase> {};

TEST_P(UnsupportedFeaturesPreFilter, NamesWhatThePodAsksFor) {
  const UnsupportedCase& c = GetParam();
  Pod pod = BarePod();
  c.ask(pod);
  auto plugin = NewUnsupportedFeatures();
  CycleState state;
  state.Reset(Share(pod));
  Status s = dynamic_cast<PreFilterPlugin&>(*plugin).PreFilter(state);
  if (c.message.empty()) {
    EXPECT_TRUE(s.ok()) << s.Message();
    return;
  }
  EXPECT_EQ(s.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(s.Message(), c.message);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, UnsupportedFeaturesPreFilter,
    ::testing::Values(
        UnsupportedCase{"a plain pod passes", [](Pod&) {}, ""},
        UnsupportedCase{"resource claims wait", [](Pod& p) { p.resource_claims = {"gpu"}; },
                        "pod asks for resourceClaims, which huygens-scheduler does not support yet"},
        UnsupportedCase{"claim volumes wait", [](Pod& p) { p.claim_volumes = {"data"}; },
                        "pod asks for persistentVolumeClaim or ephemeral volumes, which huygens-scheduler does "
                        "not support yet"},
        UnsupportedCase{"several are named together",
                        [](Pod& p) {
                          p.resource_claims = {"gpu"};
                          p.claim_volumes = {"data"};
                        },
                        "pod asks for resourceClaims, persistentVolumeClaim or ephemeral volumes, which "
                        "huygens-scheduler does not support yet"}),
    [](const auto& p) { return testing::SentenceName(p); });

// ---- NodeUnschedulable and NodeName ---------------------------------------------------------

TEST(NodeUnschedulable, ACordonedNodeRejectsPodsUnlessTheyTolerateIt) {
  ClusterCache cache;
  Node node = PlainNode("n", 4000);
  node.unschedulable = true;
  ASSERT_TRUE(cache.AddNode(node).ok());
  auto plugin = NewNodeUnschedulable();
  Status s = RunFilter(*plugin, cache, BarePod());
  EXPECT_THAT(s.reasons(), ElementsAre("node(s) were unschedulable"));
  EXPECT_EQ(s.code(), Code::kUnschedulableAndUnresolvable);
  Pod tolerant = BarePod();
  tolerant.tolerations = {Tol("node.kubernetes.io/unschedulable", TolerationOperator::kExists, "", TaintEffect::kNoSchedule)};
  EXPECT_TRUE(RunFilter(*plugin, cache, tolerant).ok());
}

TEST(NodeName, APodWithNodeNameFitsOnlyThatNode) {
  ClusterCache cache;
  ASSERT_TRUE(cache.AddNode(PlainNode("n", 4000)).ok());
  auto plugin = NewNodeName();
  Pod pod = BarePod();
  EXPECT_TRUE(RunFilter(*plugin, cache, pod).ok());
  pod.node_name = "n";
  EXPECT_TRUE(RunFilter(*plugin, cache, pod).ok());
  pod.node_name = "m";
  Status s = RunFilter(*plugin, cache, pod);
  EXPECT_THAT(s.reasons(), ElementsAre("node(s) didn't match the requested node name"));
}

}  // namespace
}  // namespace huygens::sched
