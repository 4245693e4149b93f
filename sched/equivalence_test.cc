// The scheduler's equivalence cache: the key tells apart every pod field a plugin reads, and
// a scheduler that reuses results decides exactly as one that recomputes everything, through
// pod churn, node updates, node removal, affinity groups and inter-pod (anti-)affinity.
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "sched/scheduler.h"
#include "sched/test_util.h"
#include "topology/testing/machines.h"

namespace huygens::sched {
namespace {

using testing::GuaranteedPod;
using testing::MachineNode;
using testing::Share;

std::string KeyOf(const Pod& pod) {
  std::string key;
  AppendEquivalenceKey(pod, key);
  return key;
}

TEST(EquivalenceKey, PodsThatDifferOnlyInIdentityLabelsAndCreationShareAKey) {
  Pod a = GuaranteedPod("a", 4);
  Pod b = GuaranteedPod("b", 4);
  b.labels["app"] = "web";
  b.creation_index = 42;
  EXPECT_EQ(KeyOf(a), KeyOf(b));
}

struct KeyCase {
  std::string name;
  std::function<void(Pod&)> change;
};

class EquivalenceKeyField : public ::testing::TestWithParam<KeyCase> {};

TEST_P(EquivalenceKeyField, ChangingAFieldAPluginReadsChangesTheKey) {
  const Pod base = GuaranteedPod("a", 4);
  Pod changed = base;
  GetParam().change(changed);
  EXPECT_NE(KeyOf(base), KeyOf(changed));
}

INSTANTIATE_TEST_SUITE_P(
    EveryField, EquivalenceKeyField,
    ::testing::Values(
        KeyCase{"namespace", [](Pod& p) { p.spec.namespace_name = "kube-system"; }},
        KeyCase{"cpu request", [](Pod& p) { p.spec.containers[0].cpu_request_milli = 3000; }},
        KeyCase{"cpu limit", [](Pod& p) { p.spec.containers[0].cpu_limit_milli = 5000; }},
        KeyCase{"memory request", [](Pod& p) { p.spec.containers[0].memory_request_bytes = 1; }},
        KeyCase{"memory limit", [](Pod& p) { p.spec.containers[0].memory_limit_bytes = 1; }},
        KeyCase{"isolated cpus", [](Pod& p) { p.spec.containers[0].isolated_cpus = 2; }},
        KeyCase{"container name", [](Pod& p) { p.spec.containers[0].name = "other"; }},
        KeyCase{"an init container", [](Pod& p) { p.spec.init_containers.push_back(p.spec.containers[0]); }},
        KeyCase{"a sidecar", [](Pod& p) {
                  ContainerSpec c = p.spec.containers[0];
                  c.init = c.restartable = true;
                  p.spec.init_containers.push_back(c);
                }},
        KeyCase{"pod level cpu", [](Pod& p) { p.spec.pod_cpu_request_milli = 8000; }},
        KeyCase{"pod level cpu request", [](Pod& p) { p.pod_cpu_request_milli = 8000; }},
        KeyCase{"pod level memory request", [](Pod& p) { p.pod_memory_request_bytes = 1; }},
        KeyCase{"cpu overhead", [](Pod& p) { p.overhead_cpu_milli = 250; }},
        KeyCase{"memory overhead", [](Pod& p) { p.overhead_memory_bytes = 1; }},
        KeyCase{"cpu policy", [](Pod& p) { p.spec.cpu_policy = CpuPolicy::kShared; }},
        KeyCase{"topology policy", [](Pod& p) { p.spec.topology_policy = TopologyPolicy::kRestricted; }},
        KeyCase{"bind policy", [](Pod& p) { p.spec.bind_policy = BindPolicy::kSpreadCores; }},
        KeyCase{"affinity group", [](Pod& p) { p.spec.affinity_group = "g"; }},
        KeyCase{"node selector", [](Pod& p) { p.node_selector["zone"] = "a"; }},
        KeyCase{"required node affinity", [](Pod& p) {
                  NodeSelectorTerm term;
                  term.match_expressions.push_back({"zone", SelectorOperator::kIn, {"a"}});
                  p.required_node_affinity.push_back(term);
                }},
        KeyCase{"preferred node affinity weight", [](Pod& p) {
                  PreferredSchedulingTerm term;
                  term.weight = 7;
                  p.preferred_node_affinity.push_back(term);
                }},
        KeyCase{"toleration", [](Pod& p) { p.tolerations.push_back({"k", TolerationOperator::kExists}); }},
        KeyCase{"host port", [](Pod& p) { p.host_ports.push_back({"", "TCP", 8080}); }},
        KeyCase{"extended request", [](Pod& p) { p.extended_requests["example.com/gpu"] = 1; }},
        KeyCase{"priority", [](Pod& p) { p.priority = 1000; }},
        KeyCase{"scheduler name", [](Pod& p) { p.scheduler_name = "huygens"; }},
        KeyCase{"node name", [](Pod& p) { p.node_name = "n1"; }},
        KeyCase{"required pod anti-affinity", [](Pod& p) {
                  p.pod_affinity.required_anti.push_back({.label_selector = LabelSelector{}, .namespaces = {},
                                                          .namespace_selector = std::nullopt, .topology_key = "zone",
                                                          .match_label_keys = {}, .mismatch_label_keys = {}});
                }},
        KeyCase{"preferred pod affinity weight", [](Pod& p) { p.pod_affinity.preferred.push_back({.weight = 3, .term = {}}); }},
        KeyCase{"topology spread constraint", [](Pod& p) { p.topology_spread_constraints.push_back({}); }}),
    testing::SentenceName<KeyCase>);

TEST(EquivalenceKey, FieldBoundariesCannotBeConfused) {
  Pod a = GuaranteedPod("a", 4);
  Pod b = a;
  a.node_selector["ab"] = "c";
  b.node_selector["a"] = "bc";
  EXPECT_NE(KeyOf(a), KeyOf(b));
}

// Two clusters fed the same events, one scheduler with the cache and one without.
class Twin {
 public:
  Twin() {
    for (bool cached : {true, false}) {
      Profile profile = HuygensProfile();
      profile.equivalence_cache = cached;
      sides_.push_back(std::make_unique<Side>());
      sides_.back()->scheduler = *Scheduler::Create(&sides_.back()->cache, profile);
    }
  }
  template <typename F>
  void Both(F f) {
    for (auto& s : sides_) f(s->cache);
  }
  // Schedules the pod on both sides and expects the same decision.
  bool Schedule(const Pod& pod, const std::string& when) {
    ScheduleResult with = sides_[0]->scheduler->ScheduleOne(Share(pod));
    ScheduleResult without = sides_[1]->scheduler->ScheduleOne(Share(pod));
    EXPECT_EQ(with.outcome, without.outcome) << when;
    EXPECT_EQ(with.node, without.node) << when;
    EXPECT_EQ(with.message, without.message) << when;
    EXPECT_EQ(with.allocation, without.allocation) << when;
    return with.scheduled();
  }
  const ClusterCache& first() const { return sides_[0]->cache; }

 private:
  struct Side {
    ClusterCache cache;
    std::unique_ptr<Scheduler> scheduler;
  };
  std::vector<std::unique_ptr<Side>> sides_;
};

TEST(EquivalenceCache, DecidesExactlyAsRecomputingThroughChurnNodeUpdatesAndGroups) {
  using namespace huygens::testing;
  const std::vector<std::shared_ptr<const CpuTopology>> shapes = {
      std::make_shared<const CpuTopology>(DualSocketHT()),
      std::make_shared<const CpuTopology>(DualSocketMultiNumaPerSocketHT()),
      std::make_shared<const CpuTopology>(EpycLikeSplitL3()),
  };
  std::mt19937 rng(7);
  Twin twin;
  // 160 nodes: more than 100, so the round-robin search stops before visiting all of them.
  auto node_of = [&](int i) {
    NodeConfig config;
    config.topology_policy = i % 3 == 0 ? TopologyPolicy::kRestricted
                                        : TopologyPolicy::kSingleNumaNode;
    config.numa_strategy = i % 2 == 0 ? NumaStrategy::kMostAllocated
                                      : NumaStrategy::kLeastAllocated;
    config.system_cpus = CpuSet{0};
    Node n = MachineNode(fmt::format("n{}", i), shapes[static_cast<size_t>(i) % shapes.size()],
                         config);
    n.labels["zone"] = i % 4 == 0 ? "a" : "b";
    n.labels["kubernetes.io/hostname"] = n.name;
    return n;
  };
  for (int i = 0; i < 160; ++i) {
    twin.Both([&](ClusterCache& c) { ASSERT_TRUE(c.AddNode(node_of(i)).ok()); });
  }
  // A handful of pod shapes, so that classes repeat as they do in real workloads.
  auto pod_of = [&](const std::string& uid, int shape) {
    Pod pod = GuaranteedPod(uid, 2 + shape % 6 * 2);  // whole cores: full-cores is the default
    if (shape % 5 == 1) pod.spec.affinity_group = fmt::format("g{}", shape % 3);
    if (shape % 7 == 2) pod.node_selector["zone"] = "a";
    if (shape % 4 == 3) pod.spec.bind_policy = BindPolicy::kSpreadCores;
    if (shape % 9 == 4) pod.tolerations.push_back({"dedicated", TolerationOperator::kExists});
    // Inter-pod affinity: replicas of a0 keep apart on hostname, and repel every a0 pod;
    // some a2 pods would rather run in a zone with a1 pods.
    const std::string app = fmt::format("a{}", shape % 3);
    pod.labels["app"] = app;
    PodAffinityTerm term{.label_selector = LabelSelector{.match_labels = {{"app", app}}, .match_expressions = {}},
                         .namespaces = {}, .namespace_selector = std::nullopt,
                         .topology_key = "kubernetes.io/hostname", .match_label_keys = {}, .mismatch_label_keys = {}};
    if (shape % 11 == 3) pod.pod_affinity.required_anti.push_back(term);
    if (shape % 13 == 2) {
      term.label_selector->match_labels["app"] = "a1";
      term.topology_key = "zone";
      pod.pod_affinity.preferred.push_back({5, term});
    }
    return pod;
  };
  std::vector<std::string> running;
  int scheduled = 0, unschedulable = 0;
  for (int event = 0; event < 4000 && !::testing::Test::HasFailure(); ++event) {
    const std::string when = fmt::format("event {}", event);
    const int dice = std::uniform_int_distribution<int>(0, 99)(rng);
    if (dice < 25 && !running.empty()) {
      const size_t victim = std::uniform_int_distribution<size_t>(0, running.size() - 1)(rng);
      twin.Both([&](ClusterCache& c) { ASSERT_TRUE(c.RemovePod(running[victim]).ok()); });
      running[victim] = running.back();
      running.pop_back();
    } else if (dice < 28) {  // taint or untaint a node; cordon another
      const int i = std::uniform_int_distribution<int>(0, 159)(rng);
      twin.Both([&](ClusterCache& c) {
        const NodeInfo* info = c.FindNode(fmt::format("n{}", i));
        if (info == nullptr) return;
        Node n = info->node;
        if (n.taints.empty()) {
          n.taints.push_back({"dedicated", "x", TaintEffect::kNoSchedule});
        } else {
          n.taints.clear();
        }
        n.unschedulable = n.taints.empty() && event % 3 == 0;
        ASSERT_TRUE(c.UpdateNode(n).ok());
      });
    } else if (dice < 29) {  // remove a node and add it back (its slot and index move)
      const int i = std::uniform_int_distribution<int>(0, 159)(rng);
      const std::string name = fmt::format("n{}", i);
      twin.Both([&](ClusterCache& c) {
        if (c.FindNode(name) == nullptr) return;
        ASSERT_TRUE(c.RemoveNode(name).ok());
        ASSERT_TRUE(c.AddNode(node_of(i)).ok());
      });
      std::erase_if(running,
                    [&](const std::string& uid) { return twin.first().FindPod(uid) == nullptr; });
    } else {
      const std::string uid = fmt::format("p{}", event);
      if (twin.Schedule(pod_of(uid, std::uniform_int_distribution<int>(0, 29)(rng)), when)) {
        running.push_back(uid);
        ++scheduled;
      } else {
        ++unschedulable;
      }
    }
  }
  EXPECT_GT(scheduled, 1000);
  EXPECT_GT(unschedulable, 0);  // the cluster ran full
}

}  // namespace
}  // namespace huygens::sched
