// The scheduling cycle: node sampling, the FitError message, NUMA placement, scoring, and the
// assume / forget / unreserve contract.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sched/numa_view.h"
#include "sched/plugins.h"
#include "sched/scheduler.h"
#include "sched/test_util.h"
#include "topology/testing/machines.h"

namespace huygens::sched {
namespace {

using testing::GuaranteedPod;
using testing::MachineNode;
using testing::PlainNode;
using testing::Share;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::shared_ptr<const CpuTopology> DualSocket() {
  static const auto topo =
      std::make_shared<const CpuTopology>(huygens::testing::DualSocketHT());
  return topo;
}

std::unique_ptr<Scheduler> MustCreate(ClusterCache& cache, Profile profile,
                                      std::unique_ptr<BindPlugin> binder = nullptr) {
  absl::StatusOr<std::unique_ptr<Scheduler>> s =
      Scheduler::Create(&cache, std::move(profile), std::move(binder));
  EXPECT_TRUE(s.ok()) << s.status();
  return *std::move(s);
}

// An allocation of `cpus` to the pod's single container "app" on `numa`.
PodAllocation Holding(const std::string& uid, const std::string& node, const CpuSet& cpus,
                      int numa) {
  PodAllocation a;
  a.pod_uid = uid;
  a.node = node;
  a.numa_nodes = {numa};
  a.containers.push_back({"app", cpus, CpuSet{numa}, false, false, true});
  return a;
}

struct FeasibleCase {
  std::string name;
  int nodes;
  int percentage;
  int want;
};

class NumFeasibleNodes : public ::testing::TestWithParam<FeasibleCase> {};

TEST_P(NumFeasibleNodes, FollowsKubeSchedulersPercentageOfNodesToScore) {
  EXPECT_EQ(NumFeasibleNodesToFind(GetParam().nodes, GetParam().percentage), GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, NumFeasibleNodes,
    ::testing::Values(FeasibleCase{"fewer than 100 nodes are all searched", 99, 0, 99},
                      FeasibleCase{"100 nodes adaptive still searches 100", 100, 0, 100},
                      FeasibleCase{"1000 nodes adaptive is 42 percent", 1000, 0, 420},
                      FeasibleCase{"5000 nodes adaptive is 10 percent", 5000, 0, 500},
                      FeasibleCase{"10000 nodes adaptive floors at 5 percent", 10000, 0, 500},
                      FeasibleCase{"a small percentage still finds 100 nodes", 5000, 1, 100},
                      FeasibleCase{"100 percent searches everything", 5000, 100, 5000}),
    [](const auto& p) { return testing::SentenceName(p); });

TEST(FitErrorMessage, CountsNodesPerReasonSortedAsText) {
  Diagnosis d;
  d.num_all_nodes = 5000;
  d.reasons = {{"Insufficient cpu", 3120}, {"NUMA: no single NUMA node fits 24 CPUs", 1880}};
  EXPECT_EQ(FitErrorMessage(d),
            "0/5000 nodes are available: 1880 NUMA: no single NUMA node fits 24 CPUs, 3120 "
            "Insufficient cpu.");
}

TEST(FitErrorMessage, APreFilterRejectionIsTheWholeMessage) {
  Diagnosis d;
  d.num_all_nodes = 3;
  d.pre_filter_message = "pod has unbound immediate PersistentVolumeClaims";
  EXPECT_EQ(FitErrorMessage(d),
            "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims.");
}

TEST(Scheduler, AnUnschedulablePodGetsKubeSchedulersFitError) {
  ClusterCache cache;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(cache.AddNode(PlainNode(fmt::format("small-{}", i), 2000)).ok());
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(cache.AddNode(MachineNode(fmt::format("m-{}", i), DualSocket())).ok());
  auto scheduler = MustCreate(cache, HuygensProfile());
  ScheduleResult r = scheduler->ScheduleOne(Share(GuaranteedPod("p", 16)));
  EXPECT_EQ(r.outcome, ScheduleResult::Outcome::kUnschedulable);
  EXPECT_EQ(r.message,
            "0/5 nodes are available: 2 NUMA: no single NUMA node fits 16 CPUs, 3 Insufficient "
            "cpu.");
  EXPECT_EQ(r.evaluated_nodes, 5);
  EXPECT_EQ(cache.NumPods(), 0);
}

TEST(Scheduler, VerdictsGiveEachVisitedNodesRefusalOrItsScoreInVisitOrder) {
  ClusterCache cache;
  ASSERT_TRUE(cache.AddNode(PlainNode("small", 2000)).ok());
  ASSERT_TRUE(cache.AddNode(MachineNode("m-0", DualSocket())).ok());
  ASSERT_TRUE(cache.AddNode(MachineNode("m-1", DualSocket())).ok());
  auto scheduler = MustCreate(cache, HuygensProfile());
  // m-0 holds 4 CPUs already, so the two machines score differently.
  ASSERT_TRUE(scheduler->ScheduleOne(Share(GuaranteedPod("first", 4))).scheduled());
  std::vector<NodeVerdict> verdicts;
  ScheduleResult r = scheduler->ScheduleOne(Share(GuaranteedPod("p", 4)), &verdicts);
  ASSERT_TRUE(r.scheduled()) << r.message;
  ASSERT_EQ(verdicts.size(), 3u);
  int64_t best = -1;
  for (const NodeVerdict& v : verdicts) {
    if (v.node == "small") {
      EXPECT_EQ(v.refusal, "Insufficient cpu");
      EXPECT_FALSE(v.score.has_value());
      continue;
    }
    EXPECT_EQ(v.refusal, "") << v.node;
    ASSERT_TRUE(v.score.has_value()) << v.node;
    if (v.node == r.node) best = *v.score;
  }
  for (const NodeVerdict& v : verdicts) {
    if (v.score.has_value()) {
      EXPECT_LE(*v.score, best) << "the chosen node has the highest total";
    }
  }
  // Without the out-parameter nothing is collected; the outcome is the same.
  EXPECT_TRUE(scheduler->ScheduleOne(Share(GuaranteedPod("q", 4))).scheduled());
}

TEST(Scheduler, AnExclusivePodGetsACpusetOnOneNumaNodeAndIsBound) {
  ClusterCache cache;
  ASSERT_TRUE(cache.AddNode(MachineNode("m", DualSocket())).ok());
  auto scheduler = MustCreate(cache, HuygensProfile());
  ScheduleResult r = scheduler->ScheduleOne(Share(GuaranteedPod("p", 4)));
  ASSERT_TRUE(r.scheduled()) << r.message;
  EXPECT_EQ(r.node, "m");
  ASSERT_TRUE(r.allocation.has_value());
  EXPECT_EQ(r.allocation->numa_nodes.size(), 1u);
  EXPECT_EQ(r.allocation->containers.at(0).cpuset.Size(), 4);
  const ClusterCache::PodEntry* e = cache.FindPod("p");
  ASSERT_NE(e, nullptr);
  EXPECT_FALSE(e->assumed);  // CacheBind confirmed it
  EXPECT_EQ(cache.FindNode("m")->cpu_state->ExclusiveCpus(), r.allocation->containers[0].cpuset);
}

TEST(Scheduler, TheDefaultProfileIsNumaBlind) {
  ClusterCache cache;
  ASSERT_TRUE(cache.AddNode(MachineNode("m", DualSocket())).ok());
  auto scheduler = MustCreate(cache, DefaultProfile());
  ScheduleResult r = scheduler->ScheduleOne(Share(GuaranteedPod("p", 16)));
  ASSERT_TRUE(r.scheduled()) << r.message;
  EXPECT_FALSE(r.allocation.has_value());
  EXPECT_TRUE(cache.FindNode("m")->cpu_state->ExclusiveCpus().Empty());
}

TEST(Scheduler, CreateRejectsAnUnknownPluginAndAPluginAtTheWrongPoint) {
  ClusterCache cache;
  Profile p = HuygensProfile();
  p.filters.push_back("NoSuchPlugin");
  EXPECT_FALSE(Scheduler::Create(&cache, p).ok());
  Profile q = HuygensProfile();
  q.filters.push_back("SmtScore");
  EXPECT_FALSE(Scheduler::Create(&cache, q).ok());
}

class FailingBind final : public BindPlugin {
 public:
  std::string_view Name() const override { return "FailingBind"; }
  Status Bind(const ReservedPod&) override { return Status::Error("API said no"); }
};

TEST(Scheduler, AFailedBindUnreservesAndForgetsEverything) {
  ClusterCache cache;
  ASSERT_TRUE(cache.AddNode(MachineNode("m", DualSocket())).ok());
  const uint64_t before = cache.Generation();
  auto failing = MustCreate(cache, HuygensProfile(), std::make_unique<FailingBind>());
  ScheduleResult r = failing->ScheduleOne(Share(GuaranteedPod("p", 4)));
  EXPECT_EQ(r.outcome, ScheduleResult::Outcome::kError);
  EXPECT_THAT(r.message, ::testing::HasSubstr("API said no"));
  EXPECT_EQ(cache.NumPods(), 0);
  const NodeInfo* node = cache.FindNode("m");
  EXPECT_TRUE(node->cpu_state->ExclusiveCpus().Empty());
  EXPECT_TRUE(node->cpu_state->Pods().empty());
  EXPECT_EQ(node->requested.cpu_milli, 0);
  EXPECT_THAT(node->cpu_state->Validate(), ::testing::IsEmpty());
  EXPECT_GT(cache.Generation(), before);
  // The CPUs are free again for the next attempt.
  auto ok = MustCreate(cache, HuygensProfile());
  EXPECT_TRUE(ok->ScheduleOne(Share(GuaranteedPod("p", 12))).scheduled());
}

// A binder that answers with `answer` and counts its calls; it writes nothing to the cache.
class AnsweringBind final : public BindPlugin {
 public:
  explicit AnsweringBind(Status answer) : answer_(std::move(answer)) {}
  std::string_view Name() const override { return "AnsweringBind"; }
  Status Bind(const ReservedPod&) override {
    ++calls;
    return answer_;
  }
  std::atomic<int> calls{0};

 private:
  Status answer_;
};

TEST(Scheduler, TheSchedulingCycleReservesAndAssumesAndBindsNothing) {
  ClusterCache cache;
  ASSERT_TRUE(cache.AddNode(MachineNode("m", DualSocket())).ok());
  auto bind = std::make_unique<AnsweringBind>(Status::Success());
  AnsweringBind* binder = bind.get();
  auto scheduler = MustCreate(cache, HuygensProfile(), std::move(bind));
  ScheduleResult r = scheduler->SchedulingCycle(Share(GuaranteedPod("p", 4)));
  ASSERT_TRUE(r.scheduled()) << r.message;
  ASSERT_TRUE(r.reserved.has_value());
  EXPECT_EQ(r.reserved->node, "m");
  EXPECT_EQ(r.reserved->pod->Uid(), "p");
  ASSERT_TRUE(r.reserved->allocation.has_value());
  EXPECT_EQ(r.reserved->allocation->ExclusiveCpus().Size(), 4);
  EXPECT_EQ(binder->calls, 0);
  const ClusterCache::PodEntry* e = cache.FindPod("p");
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(e->assumed);
  EXPECT_FALSE(e->binding_finished);
  // The binding cycle binds; FinishBinding marks the assume as bound, still counted.
  EXPECT_TRUE(scheduler->BindingCycle(*r.reserved).ok());
  EXPECT_EQ(binder->calls, 1);
  scheduler->FinishBinding(*r.reserved, Status::Success());
  EXPECT_TRUE(cache.FindPod("p")->binding_finished);
  EXPECT_EQ(cache.FindNode("m")->cpu_state->ExclusiveCpus(), r.reserved->allocation->ExclusiveCpus());
}

TEST(Scheduler, APodScheduledWhileAnotherIsBindingGetsOtherCpus) {
  ClusterCache cache;
  ASSERT_TRUE(cache.AddNode(MachineNode("m", DualSocket())).ok());
  auto scheduler = MustCreate(cache, HuygensProfile(), std::make_unique<AnsweringBind>(Status::Success()));
  ScheduleResult first = scheduler->SchedulingCycle(Share(GuaranteedPod("a", 6)));
  ASSERT_TRUE(first.scheduled()) << first.message;
  // a's binding cycle runs on another thread while b's scheduling cycle runs here.
  std::thread binding([&] { EXPECT_TRUE(scheduler->BindingCycle(*first.reserved).ok()); });
  ScheduleResult second = scheduler->SchedulingCycle(Share(GuaranteedPod("b", 6)));
  binding.join();
  ASSERT_TRUE(second.scheduled()) << second.message;
  EXPECT_TRUE(first.reserved->allocation->ExclusiveCpus()
                  .Intersection(second.reserved->allocation->ExclusiveCpus())
                  .Empty());
  scheduler->FinishBinding(*first.reserved, Status::Success());
  EXPECT_THAT(cache.FindNode("m")->cpu_state->Validate(), IsEmpty());
}

TEST(Scheduler, AFailedBindingCycleUnreservesAndAnUnconfirmedOneKeepsTheCpus) {
  ClusterCache cache;
  ASSERT_TRUE(cache.AddNode(MachineNode("m", DualSocket())).ok());
  auto scheduler = MustCreate(cache, HuygensProfile(), std::make_unique<AnsweringBind>(Status::Success()));
  ScheduleResult lost = scheduler->SchedulingCycle(Share(GuaranteedPod("lost", 4)));
  ScheduleResult unsure = scheduler->SchedulingCycle(Share(GuaranteedPod("unsure", 4)));
  ASSERT_TRUE(lost.scheduled() && unsure.scheduled());
  // A Binding that may have landed: its CPUs stay reserved, the pod assumed.
  scheduler->FinishBinding(*unsure.reserved, Status::Unconfirmed("the answer was lost"));
  ASSERT_NE(cache.FindPod("unsure"), nullptr);
  EXPECT_TRUE(cache.FindPod("unsure")->assumed);
  // A Binding that cannot land: forgotten and its CPUs free again.
  scheduler->FinishBinding(*lost.reserved, Status::Error("lost the race"));
  EXPECT_EQ(cache.FindPod("lost"), nullptr);
  EXPECT_EQ(cache.FindNode("m")->cpu_state->ExclusiveCpus(), unsure.reserved->allocation->ExclusiveCpus());
  EXPECT_EQ(cache.FindNode("m")->requested.cpu_milli, 4000);
  EXPECT_THAT(cache.FindNode("m")->cpu_state->Validate(), IsEmpty());
}

TEST(ClusterCache, AssumeCountsThePodAndForgetReleasesItsCpus) {
  ClusterCache cache;
  ASSERT_TRUE(cache.AddNode(MachineNode("m", DualSocket())).ok());
  PodPtr pod = Share(GuaranteedPod("p", 4));
  absl::StatusOr<PodAllocation> a = cache.MutableCpuState("m")->AllocatePod(pod->spec);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(cache.AssumePod(pod, "m", *a, /*allocation_applied=*/true).ok());
  EXPECT_EQ(cache.FindNode("m")->requested.cpu_milli, 4000);
  EXPECT_EQ(cache.FindNode("m")->NumPods(), 1);
  EXPECT_EQ(cache.ExclusiveSizes(), (std::map<int, int>{{4, 1}}));
  ASSERT_TRUE(cache.FinishBinding("p").ok());
  ASSERT_TRUE(cache.ForgetPod("p").ok());
  EXPECT_TRUE(cache.ExclusiveSizes().empty());
  EXPECT_EQ(cache.FindNode("m")->requested.cpu_milli, 0);
  EXPECT_TRUE(cache.FindNode("m")->cpu_state->ExclusiveCpus().Empty());
  EXPECT_EQ(cache.FindPod("p"), nullptr);
}

TEST(ClusterCache, APodBoundWithOtherCpusThanAssumedHoldsTheBoundOnes) {
  // Another leader's Binding landed, not this replica's: the CPUs it bound count, and the
  // ones this replica assumed are free again.
  ClusterCache cache;
  ASSERT_TRUE(cache.AddNode(MachineNode("m", DualSocket())).ok());
  PodPtr pod = Share(GuaranteedPod("p", 2));
  ASSERT_TRUE(cache.AssumePod(pod, "m", Holding("p", "m", CpuSet{0, 12}, 0), false).ok());
  ASSERT_TRUE(cache.FinishBinding("p").ok());
  ASSERT_TRUE(cache.AddPod(pod, "m", Holding("p", "m", CpuSet{1, 13}, 0)).ok());
  ASSERT_NE(cache.FindPod("p"), nullptr);
  EXPECT_FALSE(cache.FindPod("p")->assumed);
  EXPECT_EQ(cache.FindPod("p")->allocation->ExclusiveCpus(), (CpuSet{1, 13}));
  EXPECT_EQ(cache.FindNode("m")->cpu_state->ExclusiveCpus(), (CpuSet{1, 13}));
  EXPECT_EQ(cache.FindNode("m")->requested.cpu_milli, 2000);
  EXPECT_THAT(cache.FindNode("m")->cpu_state->Validate(), IsEmpty());
  // The same allocation confirms the assume as it stands.
  PodPtr q = Share(GuaranteedPod("q", 2));
  ASSERT_TRUE(cache.AssumePod(q, "m", Holding("q", "m", CpuSet{2, 14}, 0), false).ok());
  ASSERT_TRUE(cache.AddPod(q, "m", Holding("q", "m", CpuSet{2, 14}, 0)).ok());
  EXPECT_EQ(cache.FindNode("m")->cpu_state->ExclusiveCpus(), (CpuSet{1, 2, 13, 14}));
}

TEST(ClusterCache, ABoundPodCannotBeForgottenOnlyRemoved) {
  ClusterCache cache;
  ASSERT_TRUE(cache.AddNode(MachineNode("m", DualSocket())).ok());
  ASSERT_TRUE(cache.AddPod(Share(GuaranteedPod("p", 4)), "m",
                           Holding("p", "m", CpuSet{0, 1, 12, 13}, 0))
                  .ok());
  EXPECT_EQ(cache.ForgetPod("p").code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(cache.RemovePod("p").ok());
  EXPECT_TRUE(cache.FindNode("m")->cpu_state->ExclusiveCpus().Empty());
}

TEST(ClusterCache, AnAllocationOverlappingAnotherPodIsRejectedAndChangesNothing) {
  ClusterCache cache;
  ASSERT_TRUE(cache.AddNode(MachineNode("m", DualSocket())).ok());
  ASSERT_TRUE(cache.AddPod(Share(GuaranteedPod("a", 2)), "m", Holding("a", "m", CpuSet{0, 12}, 0))
                  .ok());
  const uint64_t generation = cache.Generation();
  absl::Status s =
      cache.AddPod(Share(GuaranteedPod("b", 2)), "m", Holding("b", "m", CpuSet{0, 12}, 0));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(cache.NumPods(), 1);
  EXPECT_EQ(cache.FindNode("m")->requested.cpu_milli, 2000);
  EXPECT_EQ(cache.Generation(), generation);
}

TEST(ClusterCache, RemovingANodeDropsItsPodsAndKeepsTheOthersIndexed) {
  ClusterCache cache;
  for (const char* n : {"a", "b", "c"}) ASSERT_TRUE(cache.AddNode(MachineNode(n, DualSocket())).ok());
  ASSERT_TRUE(cache.AddPod(Share(GuaranteedPod("p", 2)), "a", Holding("p", "a", CpuSet{0, 12}, 0))
                  .ok());
  ASSERT_TRUE(cache.RemoveNode("a").ok());
  EXPECT_EQ(cache.FindPod("p"), nullptr);
  ASSERT_EQ(cache.Nodes().size(), 2u);
  for (size_t i = 0; i < cache.Nodes().size(); ++i) {
    EXPECT_EQ(cache.Nodes()[i]->index, static_cast<int>(i));
    EXPECT_EQ(cache.FindNode(cache.Nodes()[i]->node.name), cache.Nodes()[i]);
  }
}

// NumaSlots against a recount over every NUMA-aware node's NumaView offers.
int64_t RecountNumaSlots(const ClusterCache& cache, int cpus) {
  int64_t slots = 0;
  for (const NodeInfo* node : cache.Nodes()) {
    if (node->cpu_state == nullptr) continue;
    const NumaView view(*node, node->summary.default_bind_policy);
    for (int i = 0; i < view.size(); ++i) slots += view.at(i).offer / cpus;
  }
  return slots;
}

TEST(ClusterCache, NumaSlotsAndLargestNumaNodeFollowPodsNodesAndCapacityFactors) {
  ClusterCache cache;
  // DualSocketHT: 2 NUMA nodes of 6 cores x 2 threads; MachineNode's default bind policy is
  // full-cores.
  for (const char* n : {"a", "b"}) ASSERT_TRUE(cache.AddNode(MachineNode(n, DualSocket())).ok());
  ASSERT_TRUE(cache.AddNode(PlainNode("blind", 64000)).ok());  // NUMA-blind: offers nothing
  EXPECT_EQ(cache.NumaSlots(12), 4);
  EXPECT_EQ(cache.NumaSlots(6), 8);
  EXPECT_EQ(cache.NumaSlots(13), 0);
  EXPECT_EQ(cache.LargestNumaNode(), 12);
  EXPECT_EQ(cache.NumaSlots(0), 0);
  // One thread of core 0 taken: full-cores offers the 5 whole free cores of NUMA node 0.
  ASSERT_TRUE(cache.AddPod(Share(GuaranteedPod("p", 1)), "a", Holding("p", "a", CpuSet{0}, 0))
                  .ok());
  EXPECT_EQ(cache.NumaSlots(12), 3);
  EXPECT_EQ(cache.NumaSlots(5), 8);  // 10 / 5 + 3 x 12 / 5
  EXPECT_EQ(cache.NumaSlots(11), 3);
  for (int cpus : {1, 2, 5, 10, 11, 12}) EXPECT_EQ(cache.NumaSlots(cpus), RecountNumaSlots(cache, cpus)) << cpus;
  ASSERT_TRUE(cache.RemovePod("p").ok());
  EXPECT_EQ(cache.NumaSlots(12), 4);
  // Removing a node drops its offers and its pods' exclusive sizes.
  ASSERT_TRUE(cache.AddPod(Share(GuaranteedPod("q", 2)), "b", Holding("q", "b", CpuSet{0, 12}, 0))
                  .ok());
  EXPECT_EQ(cache.ExclusiveSizes(), (std::map<int, int>{{2, 1}}));
  ASSERT_TRUE(cache.RemoveNode("b").ok());
  EXPECT_EQ(cache.NumaSlots(12), 2);
  EXPECT_TRUE(cache.ExclusiveSizes().empty());
  ASSERT_TRUE(cache.RemoveNode("a").ok());
  EXPECT_EQ(cache.LargestNumaNode(), 0);  // only the NUMA-blind node is left
  ASSERT_TRUE(cache.AddNode(MachineNode("a", DualSocket())).ok());
  // A capacity factor of 0.5 on NUMA node 1 halves what it offers.
  NodeConfig half;
  half.capacity = {{1, 0.5}};
  ASSERT_TRUE(cache.AddNode(MachineNode("c", DualSocket(), half)).ok());
  EXPECT_EQ(cache.NumaSlots(12), 3);
  EXPECT_EQ(cache.NumaSlots(6), 7);
  for (int cpus : {1, 2, 5, 6, 12}) EXPECT_EQ(cache.NumaSlots(cpus), RecountNumaSlots(cache, cpus)) << cpus;
}

TEST(ClusterCache, NodeGenerationsFollowEveryNodeThroughChangesAndRemoval) {
  ClusterCache cache;
  auto expect_in_step = [&](const std::string& when) {
    ASSERT_EQ(cache.NodeGenerations().size(), cache.Nodes().size()) << when;
    for (size_t i = 0; i < cache.Nodes().size(); ++i) {
      EXPECT_EQ(cache.NodeGenerations()[i], cache.Nodes()[i]->generation) << when;
    }
  };
  for (const char* n : {"a", "b", "c"}) ASSERT_TRUE(cache.AddNode(MachineNode(n, DualSocket())).ok());
  expect_in_step("after adding");
  const uint64_t before = cache.NodeGenerations()[0];
  ASSERT_TRUE(cache.AddPod(Share(GuaranteedPod("p", 2)), "a", Holding("p", "a", CpuSet{0, 12}, 0))
                  .ok());
  EXPECT_GT(cache.NodeGenerations()[0], before);
  expect_in_step("after a pod");
  ASSERT_TRUE(cache.RemoveNode("a").ok());  // "c" moves into index 0
  expect_in_step("after removing a node");
  ASSERT_TRUE(cache.AddNode(MachineNode("d", DualSocket())).ok());
  expect_in_step("after reusing the slot");
}

// A node the filters pass but whose exact allocation fails at Reserve (no NUMA filter in this
// profile, so a 14-CPU pod reaches NumaReserve on 12-CPU NUMA nodes under single-numa-node):
// the attempt is Unschedulable over that one node, as kube-scheduler treats a Reserve
// rejection, not an Error that would back off and hit the same refusal forever.
TEST(Scheduler, AReserveRejectionIsUnschedulableAndChangesNothing) {
  ClusterCache cache;
  ASSERT_TRUE(cache.AddNode(MachineNode("m", DualSocket())).ok());
  Profile p;
  p.filters = {"NodeResourcesFit"};
  p.reserves = {"NumaReserve"};
  auto scheduler = MustCreate(cache, p);
  ScheduleResult r = scheduler->ScheduleOne(Share(GuaranteedPod("p", 14)));
  EXPECT_EQ(r.outcome, ScheduleResult::Outcome::kUnschedulable);
  EXPECT_THAT(r.message, ::testing::StartsWith("0/1 nodes are available: 1 NUMA: "));
  ASSERT_EQ(r.reasons.size(), 1u);
  EXPECT_EQ(r.reasons[0].second, 1);
  EXPECT_EQ(cache.NumPods(), 0);
  EXPECT_TRUE(cache.FindNode("m")->cpu_state->Pods().empty());
}

TEST(ClusterCache, AResizeMovesTheRequestsTheAllocationAndTheGenerationTogether) {
  ClusterCache cache;
  ASSERT_TRUE(cache.AddNode(MachineNode("m", DualSocket())).ok());
  auto scheduler = MustCreate(cache, HuygensProfile());
  ASSERT_TRUE(scheduler->ScheduleOne(Share(GuaranteedPod("p", 4))).scheduled());
  const CpuSet before = cache.FindPod("p")->allocation->containers[0].cpuset;
  const uint64_t generation = cache.Generation();
  absl::StatusOr<CpuSet> grown = cache.ResizeContainer("p", "app", 6);
  ASSERT_TRUE(grown.ok()) << grown.status();
  EXPECT_TRUE(before.IsSubsetOf(*grown));
  const NodeInfo* node = cache.FindNode("m");
  EXPECT_EQ(node->requested.cpu_milli, 6000);
  EXPECT_EQ(cache.FindPod("p")->allocation->containers[0].cpuset, *grown);
  EXPECT_EQ(cache.FindPod("p")->pod->spec.containers[0].cpu_limit_milli, 6000);
  EXPECT_EQ(node->cpu_state->ExclusiveCpus(), *grown);
  EXPECT_EQ(cache.ExclusiveSizes(), (std::map<int, int>{{6, 1}}));
  EXPECT_GT(cache.Generation(), generation);
  // Refused (no NUMA node has 20 CPUs): nothing moves.
  EXPECT_EQ(cache.ResizeContainer("p", "app", 20).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(node->requested.cpu_milli, 6000);
  EXPECT_EQ(cache.FindPod("p")->allocation->containers[0].cpuset, *grown);
  EXPECT_EQ(cache.ResizeContainer("nope", "app", 2).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(ClusterCache, AMoveCarriesTheAllocationTheGroupPlacementAndTheGeneration) {
  ClusterCache cache;
  ASSERT_TRUE(cache.AddNode(MachineNode("m", DualSocket())).ok());
  Pod web = GuaranteedPod("p", 2);
  web.spec.affinity_group = "web";
  ASSERT_TRUE(cache.AddPod(Share(web), "m", Holding("p", "m", CpuSet{0, 12}, 0)).ok());
  ASSERT_TRUE(cache.AddPod(Share(GuaranteedPod("q", 2)), "m", Holding("q", "m", CpuSet{1, 13}, 0))
                  .ok());
  const uint64_t generation = cache.Generation();
  // Onto q's CPUs: refused, nothing changed.
  EXPECT_EQ(cache.MovePod("p", Holding("p", "m", CpuSet{1, 13}, 0)).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(cache.FindPod("p")->allocation->containers[0].cpuset, (CpuSet{0, 12}));
  // To NUMA node 1.
  ASSERT_TRUE(cache.MovePod("p", Holding("p", "m", CpuSet{6, 18}, 1)).ok());
  EXPECT_EQ(cache.FindPod("p")->allocation->containers[0].cpuset, (CpuSet{6, 18}));
  EXPECT_EQ(cache.FindNode("m")->cpu_state->ExclusiveCpus(), (CpuSet{1, 6, 13, 18}));
  const AffinityGroupPlacement* group = cache.AffinityGroup("web");
  ASSERT_NE(group, nullptr);
  EXPECT_EQ(group->at(cache.FindNode("m")), (std::map<int, int>{{1, 1}}));
  EXPECT_GT(cache.Generation(), generation);
  EXPECT_EQ(cache.MovePod("nope", Holding("nope", "m", CpuSet{7}, 1)).code(),
            absl::StatusCode::kNotFound);
}

// Only the NUMA score decides, so the strategy's effect is visible.
Profile NumaScoreOnly() {
  Profile p;
  p.filters = {"NodeResourcesFit", "NumaFit"};
  p.scores = {{"NumaScore", 1}};
  p.reserves = {"NumaReserve"};
  return p;
}

// Node "busy": 8 CPUs used on NUMA 0 and 4 on NUMA 1; node "empty": nothing used.
void AddBusyAndEmpty(ClusterCache& cache, NumaStrategy strategy) {
  NodeConfig config;
  config.numa_strategy = strategy;
  ASSERT_TRUE(cache.AddNode(MachineNode("busy", DualSocket(), config)).ok());
  ASSERT_TRUE(cache.AddNode(MachineNode("empty", DualSocket(), config)).ok());
  ASSERT_TRUE(cache.AddPod(Share(GuaranteedPod("eight", 8)), "busy",
                           Holding("eight", "busy", CpuSet{0, 1, 2, 3, 12, 13, 14, 15}, 0))
                  .ok());
  ASSERT_TRUE(cache.AddPod(Share(GuaranteedPod("four", 4)), "busy",
                           Holding("four", "busy", CpuSet{6, 7, 18, 19}, 1))
                  .ok());
}

TEST(NumaScore, PackPutsThePodOnTheFullestNumaNodeThatFits) {
  ClusterCache cache;
  AddBusyAndEmpty(cache, NumaStrategy::kMostAllocated);
  auto scheduler = MustCreate(cache, NumaScoreOnly());
  // busy's NUMA node 0 has exactly 4 free CPUs: the pod fills it.
  ScheduleResult r = scheduler->ScheduleOne(Share(GuaranteedPod("p", 4)));
  ASSERT_TRUE(r.scheduled()) << r.message;
  EXPECT_EQ(r.node, "busy");
  EXPECT_THAT(r.allocation->numa_nodes, ElementsAre(0));
}

// Waste before packing (alloc/waste.h): 7 CPUs on busy's NUMA node 1 (8 free) would strand
// one CPU; on the empty node they leave 5, too few for a second 7-CPU pod (a clean fit).
TEST(NumaScore, PackPrefersACleanFitToAStrandingBestFit) {
  ClusterCache cache;
  AddBusyAndEmpty(cache, NumaStrategy::kMostAllocated);
  auto scheduler = MustCreate(cache, NumaScoreOnly());
  Pod pod = GuaranteedPod("p", 7);
  pod.spec.bind_policy = BindPolicy::kPacked;  // the nodes' default, full-cores, wants 6 or 8
  ScheduleResult r = scheduler->ScheduleOne(Share(std::move(pod)));
  ASSERT_TRUE(r.scheduled()) << r.message;
  EXPECT_EQ(r.node, "empty");
}

// The room rule (docs/scheduler.md, NumaScore): a packed 6-CPU pod either strands 2 CPUs on
// busy's NUMA node 1 (8 free; best fit) or strands nothing on the empty node (12 free, 6 left).
// `full` nodes each run two 12-CPU pods, the largest size. With one, the NUMA nodes still
// offer two more 12-CPU slots (the empty node's) for the two running: room, so nothing
// stranded wins; with two, four run against two slots: best fit wins.
void AddFullNodes(ClusterCache& cache, int count) {
  for (int n = 0; n < count; ++n) {
    const std::string name = "full" + std::to_string(n);
    ASSERT_TRUE(cache.AddNode(MachineNode(name, DualSocket())).ok());
    for (int numa = 0; numa < 2; ++numa) {
      const std::string uid = name + "-" + std::to_string(numa);
      const CpuSet cpus = CpuSet::Range(6 * numa, 6 * numa + 5).Union(
          CpuSet::Range(12 + 6 * numa, 17 + 6 * numa));
      ASSERT_TRUE(cache.AddPod(Share(GuaranteedPod(uid, 12)), name, Holding(uid, name, cpus, numa))
                      .ok());
    }
  }
}

ScheduleResult ScheduleSixPacked(ClusterCache& cache) {
  auto scheduler = MustCreate(cache, NumaScoreOnly());
  Pod pod = GuaranteedPod("p", 6);
  pod.spec.bind_policy = BindPolicy::kPacked;
  return scheduler->ScheduleOne(Share(std::move(pod)));
}

TEST(NumaScore, WithRoomForTheLargestPodsAPlacementThatStrandsNothingWins) {
  ClusterCache cache;
  AddBusyAndEmpty(cache, NumaStrategy::kMostAllocated);
  AddFullNodes(cache, 1);
  EXPECT_EQ(cache.ExclusiveSizes(), (std::map<int, int>{{4, 1}, {8, 1}, {12, 2}}));
  ScheduleResult r = ScheduleSixPacked(cache);
  ASSERT_TRUE(r.scheduled()) << r.message;
  EXPECT_EQ(r.node, "empty");
}

TEST(NumaScore, WithoutRoomForTheLargestPodsBestFitWins) {
  ClusterCache cache;
  AddBusyAndEmpty(cache, NumaStrategy::kMostAllocated);
  AddFullNodes(cache, 2);
  ScheduleResult r = ScheduleSixPacked(cache);
  ASSERT_TRUE(r.scheduled()) << r.message;
  EXPECT_EQ(r.node, "busy");
  EXPECT_THAT(r.allocation->numa_nodes, ElementsAre(1));
}

// A pod wider than every NUMA node (24 CPUs over both 12-CPU NUMA nodes of a best-effort node)
// spans NUMA nodes whatever the holes: the room is judged for the largest size that fits one,
// 12, which still has room, so nothing stranded wins. (Judged for 24, no NUMA node could ever
// take one and best fit would win: one wide pod would turn the rule off cluster-wide.)
TEST(NumaScore, APodWiderThanEveryNumaNodeLeavesTheRoomToTheLargestThatFitsOne) {
  ClusterCache cache;
  AddBusyAndEmpty(cache, NumaStrategy::kMostAllocated);
  AddFullNodes(cache, 1);
  NodeConfig best_effort;
  best_effort.topology_policy = TopologyPolicy::kBestEffort;
  ASSERT_TRUE(cache.AddNode(MachineNode("wide", DualSocket(), best_effort)).ok());
  PodAllocation wide = Holding("w", "wide", CpuSet::Range(0, 23), 0);
  wide.numa_nodes = {0, 1};
  wide.containers[0].mems = CpuSet{0, 1};
  ASSERT_TRUE(cache.AddPod(Share(GuaranteedPod("w", 24)), "wide", wide).ok());
  EXPECT_EQ(cache.LargestNumaNode(), 12);
  EXPECT_EQ(cache.ExclusiveSizes().rbegin()->first, 24);
  ScheduleResult r = ScheduleSixPacked(cache);
  ASSERT_TRUE(r.scheduled()) << r.message;
  EXPECT_EQ(r.node, "empty");
}

TEST(NumaScore, SpreadPutsThePodOnTheEmptiestNumaNode) {
  ClusterCache cache;
  AddBusyAndEmpty(cache, NumaStrategy::kLeastAllocated);
  auto scheduler = MustCreate(cache, NumaScoreOnly());
  ScheduleResult r = scheduler->ScheduleOne(Share(GuaranteedPod("p", 2)));
  ASSERT_TRUE(r.scheduled()) << r.message;
  EXPECT_EQ(r.node, "empty");
}

TEST(NumaScore, FewerNumaNodesBeatBetterPacking) {
  // best-effort: a 10-CPU pod needs both NUMA nodes of "busy" (8 and 4 free) but only one of
  // "empty"; packing alone would prefer the fuller "busy".
  ClusterCache cache;
  NodeConfig config;
  config.topology_policy = TopologyPolicy::kBestEffort;
  config.default_bind_policy = BindPolicy::kPacked;
  ASSERT_TRUE(cache.AddNode(MachineNode("busy", DualSocket(), config)).ok());
  ASSERT_TRUE(cache.AddNode(MachineNode("empty", DualSocket(), config)).ok());
  ASSERT_TRUE(cache.AddPod(Share(GuaranteedPod("four", 4)), "busy",
                           Holding("four", "busy", CpuSet{0, 1, 12, 13}, 0))
                  .ok());
  ASSERT_TRUE(cache.AddPod(Share(GuaranteedPod("eight", 8)), "busy",
                           Holding("eight", "busy", CpuSet{6, 7, 8, 9, 18, 19, 20, 21}, 1))
                  .ok());
  auto scheduler = MustCreate(cache, NumaScoreOnly());
  ScheduleResult r = scheduler->ScheduleOne(Share(GuaranteedPod("p", 10)));
  ASSERT_TRUE(r.scheduled()) << r.message;
  EXPECT_EQ(r.node, "empty");
  EXPECT_EQ(r.allocation->numa_nodes.size(), 1u);
}

// Fewer shared cores first also where the pod spans NUMA nodes: a 21-CPU pod needs both NUMA
// nodes of either best-effort node. On "busy", whose two 1-CPU pods each hold half a core, its
// whole free cores hold 20 CPUs, so the 21st splits a core with one of them; on "empty" the
// 21st is half a core of its own. Packing alone prefers the fuller "busy".
TEST(NumaScore, APodOverSeveralNumaNodesAvoidsANodeWhereItWouldShareACore) {
  ClusterCache cache;
  NodeConfig config;
  config.topology_policy = TopologyPolicy::kBestEffort;
  config.default_bind_policy = BindPolicy::kPacked;
  config.numa_strategy = NumaStrategy::kMostAllocated;
  ASSERT_TRUE(cache.AddNode(MachineNode("busy", DualSocket(), config)).ok());
  ASSERT_TRUE(cache.AddNode(MachineNode("empty", DualSocket(), config)).ok());
  ASSERT_TRUE(
      cache.AddPod(Share(GuaranteedPod("a", 1)), "busy", Holding("a", "busy", CpuSet{0}, 0)).ok());
  ASSERT_TRUE(
      cache.AddPod(Share(GuaranteedPod("b", 1)), "busy", Holding("b", "busy", CpuSet{6}, 1)).ok());
  auto scheduler = MustCreate(cache, NumaScoreOnly());
  ScheduleResult r = scheduler->ScheduleOne(Share(GuaranteedPod("p", 21)));
  ASSERT_TRUE(r.scheduled()) << r.message;
  EXPECT_EQ(r.node, "empty");
  EXPECT_EQ(r.allocation->numa_nodes.size(), 2u);
}

// A Guaranteed pod of `cpus` CPUs in affinity group "g".
Pod GroupMember(const std::string& name, int cpus) {
  Pod pod = GuaranteedPod(name, cpus);
  pod.spec.affinity_group = "g";
  return pod;
}

// Empty DualSocket nodes "a" and "c", and group "g"'s first member on "c", holding `cpus` of
// NUMA node 1.
void AddNodesAAndCWithAFirstMember(ClusterCache& cache, const CpuSet& cpus) {
  ASSERT_TRUE(cache.AddNode(MachineNode("a", DualSocket())).ok());
  ASSERT_TRUE(cache.AddNode(MachineNode("c", DualSocket())).ok());
  ASSERT_TRUE(cache.AddPod(Share(GroupMember("first", cpus.Size())), "c",
                           Holding("first", "c", cpus, 1))
                  .ok());
}

TEST(NumaScore, AffinityGroupMembersJoinTheirGroupsNumaNode) {
  ClusterCache cache;
  AddNodesAAndCWithAFirstMember(cache, CpuSet{6, 18});
  auto scheduler = MustCreate(cache, NumaScoreOnly());
  ScheduleResult r = scheduler->ScheduleOne(Share(GroupMember("second", 2)));
  ASSERT_TRUE(r.scheduled()) << r.message;
  EXPECT_EQ(r.node, "c");
  EXPECT_THAT(r.allocation->numa_nodes, ElementsAre(1));
  // Both members are now indexed on node "c", NUMA node 1.
  const AffinityGroupPlacement* g = cache.AffinityGroup("g");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->at(cache.FindNode("c")).at(1), 2);
}

// same-numa (the annotation's policy) holds on a node without members as it does where the pod
// joins them, and breaks where the pod would sit beside members on another NUMA node: on "c" the
// group's only member holds all of NUMA node 1, so the pod could only take NUMA node 0. Packing
// alone prefers "c" (fuller), and so did the old score by NUMA distance.
TEST(NumaScore, AGroupMemberAvoidsANodeWhereItWouldSitApartFromItsGroup) {
  ClusterCache cache;
  AddNodesAAndCWithAFirstMember(cache, CpuSet::Range(6, 11).Union(CpuSet::Range(18, 23)));
  auto scheduler = MustCreate(cache, NumaScoreOnly());
  ScheduleResult r = scheduler->ScheduleOne(Share(GroupMember("second", 2)));
  ASSERT_TRUE(r.scheduled()) << r.message;
  EXPECT_EQ(r.node, "a");
}

// Joining the group outranks the waste tiers. Node "busy" as AddBusyAndEmpty makes it, but its
// 4-CPU pod on NUMA node 1 is of group "g": a 7-CPU pod there strands one CPU, while the empty
// node is a clean fit (NumaScore.PackPrefersACleanFitToAStrandingBestFit). A pod of no group
// takes the clean fit; a pod of group "g" joins its group-mate.
// best-effort nodes with one GPU on NUMA node 1: on "full", NUMA node 1's CPUs are all held, so
// kubelet's GPU and the pod's CPUs would land on different NUMA nodes; "roomy" has CPUs there.
// Packing alone prefers "full" (its NUMA node 0 is partly used); kubelet's alignment wins.
TEST(NumaScore, ANodeWhereKubeletsDeviceCannotBeBesideTheCpusLoses) {
  constexpr char kGpu[] = "example.com/gpu";
  ClusterCache cache;
  NodeConfig config;
  config.topology_policy = TopologyPolicy::kBestEffort;
  config.devices[kGpu] = {{1, 1}};
  for (const char* name : {"full", "roomy"}) {
    Node node = MachineNode(name, DualSocket(), config);
    node.allocatable.extended[kGpu] = 1;
    ASSERT_TRUE(cache.AddNode(std::move(node)).ok());
  }
  ASSERT_TRUE(cache.AddPod(Share(GuaranteedPod("numa1", 12)), "full",
                           Holding("numa1", "full", CpuSet{6, 7, 8, 9, 10, 11, 18, 19, 20, 21, 22, 23}, 1))
                  .ok());
  ASSERT_TRUE(cache.AddPod(Share(GuaranteedPod("four", 4)), "full",
                           Holding("four", "full", CpuSet{0, 1, 12, 13}, 0))
                  .ok());
  auto scheduler = MustCreate(cache, NumaScoreOnly());
  Pod pod = GuaranteedPod("p", 4);
  pod.spec.containers[0].extended_requests[kGpu] = 1;
  pod.extended_requests = PodExtendedRequests(pod.spec);
  ScheduleResult r = scheduler->ScheduleOne(Share(std::move(pod)));
  ASSERT_TRUE(r.scheduled()) << r.message;
  EXPECT_EQ(r.node, "roomy");
  EXPECT_THAT(r.allocation->numa_nodes, ElementsAre(1));
}

TEST(NumaScore, AGroupMemberJoinsItsGroupsNumaNodeOverACleanFitElsewhere) {
  for (const std::string group : {"", "g"}) {
    ClusterCache cache;
    ASSERT_TRUE(cache.AddNode(MachineNode("busy", DualSocket())).ok());
    ASSERT_TRUE(cache.AddNode(MachineNode("empty", DualSocket())).ok());
    ASSERT_TRUE(cache.AddPod(Share(GuaranteedPod("eight", 8)), "busy",
                             Holding("eight", "busy", CpuSet{0, 1, 2, 3, 12, 13, 14, 15}, 0))
                    .ok());
    Pod four = GuaranteedPod("four", 4);
    four.spec.affinity_group = "g";
    ASSERT_TRUE(cache.AddPod(Share(four), "busy", Holding("four", "busy", CpuSet{6, 7, 18, 19}, 1)).ok());
    auto scheduler = MustCreate(cache, NumaScoreOnly());
    Pod pod = GuaranteedPod("p", 7);
    pod.spec.bind_policy = BindPolicy::kPacked;
    pod.spec.affinity_group = group;
    ScheduleResult r = scheduler->ScheduleOne(Share(std::move(pod)));
    ASSERT_TRUE(r.scheduled()) << r.message;
    EXPECT_EQ(r.node, group.empty() ? "empty" : "busy") << "group '" << group << "'";
    if (!group.empty()) {
      EXPECT_THAT(r.allocation->numa_nodes, ElementsAre(1));
    }
  }
}

// A group split over NUMA nodes gathers on its largest part: one member on NUMA node 0 (with a
// non-member that makes node 0 the fuller one, which packing alone would pick), two on NUMA
// node 1; the next member goes to NUMA node 1.
TEST(NumaReserve, ANewMemberJoinsTheNumaNodeWithMostOfItsGroup) {
  ClusterCache cache;
  ASSERT_TRUE(cache.AddNode(MachineNode("c", DualSocket())).ok());
  const auto member = [&](const std::string& uid, CpuSet cpus, int numa) {
    Pod p = GuaranteedPod(uid, 2);
    p.spec.affinity_group = "g";
    ASSERT_TRUE(cache.AddPod(Share(p), "c", Holding(uid, "c", cpus, numa)).ok());
  };
  member("m0", CpuSet{0, 12}, 0);
  member("m1", CpuSet{6, 18}, 1);
  member("m2", CpuSet{7, 19}, 1);
  ASSERT_TRUE(cache.AddPod(Share(GuaranteedPod("other", 6)), "c", Holding("other", "c", CpuSet{1, 2, 3, 13, 14, 15}, 0))
                  .ok());
  const AffinityGroupPlacement* g = cache.AffinityGroup("g");
  ASSERT_NE(g, nullptr);
  EXPECT_THAT(GroupNumaNodes(*g, *cache.FindNode("c")), ElementsAre(1));
  auto scheduler = MustCreate(cache, NumaScoreOnly());
  Pod next = GuaranteedPod("next", 2);
  next.spec.affinity_group = "g";
  ScheduleResult r = scheduler->ScheduleOne(Share(next));
  ASSERT_TRUE(r.scheduled()) << r.message;
  EXPECT_THAT(r.allocation->numa_nodes, ElementsAre(1));
}

TEST(GroupNumaNodes, AreTheNumaNodesWithTheMostMembersAllOfThemOnATie) {
  ClusterCache cache;
  ASSERT_TRUE(cache.AddNode(MachineNode("c", DualSocket())).ok());
  ASSERT_TRUE(cache.AddNode(MachineNode("d", DualSocket())).ok());
  for (const auto& [uid, cpus, numa] : {std::tuple{"a", CpuSet{0, 12}, 0}, std::tuple{"b", CpuSet{6, 18}, 1}}) {
    Pod p = GuaranteedPod(uid, 2);
    p.spec.affinity_group = "g";
    ASSERT_TRUE(cache.AddPod(Share(p), "c", Holding(uid, "c", cpus, numa)).ok());
  }
  const AffinityGroupPlacement* g = cache.AffinityGroup("g");
  ASSERT_NE(g, nullptr);
  EXPECT_THAT(GroupNumaNodes(*g, *cache.FindNode("c")), ElementsAre(0, 1));
  EXPECT_THAT(GroupNumaNodes(*g, *cache.FindNode("d")), IsEmpty());  // no member there
}

TEST(Scheduler, RoundRobinStartsWhereTheLastAttemptStopped) {
  ClusterCache cache;
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(cache.AddNode(PlainNode(fmt::format("n{}", i), 64000)).ok());
  Profile p = DefaultProfile();
  p.percentage_of_nodes_to_score = 50;  // 100 of 200
  p.scores.clear();                      // the first feasible node wins
  auto scheduler = MustCreate(cache, p);
  ScheduleResult first = scheduler->ScheduleOne(Share(testing::SharedPod("a", 100)));
  ScheduleResult second = scheduler->ScheduleOne(Share(testing::SharedPod("b", 100)));
  EXPECT_EQ(first.node, "n0");
  EXPECT_EQ(first.evaluated_nodes, 100);
  EXPECT_EQ(second.node, "n100");
}

}  // namespace
}  // namespace huygens::sched
