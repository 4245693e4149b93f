#include "rebalance/planner.h"

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "topology/testing/machines.h"

namespace huygens::rebalance {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr int64_t kGi = int64_t{1} << 30;

// The machine of issue 17's example: 4 NUMA nodes (one socket each) of 8 cores x 2 threads;
// NUMA node n holds cores 8n..8n+7 = CPUs 8n..8n+7 and 32+8n..32+8n+7. Distances: 0-1 and 2-3
// are 16, every other pair 32.
std::shared_ptr<const CpuTopology> FourNuma() {
  static const std::shared_ptr<const CpuTopology> topo = [] {
    const CpuTopology base = testing::BuildMachine({.sockets = 4, .cores_per_numa = 8});
    std::vector<NumaNode> nodes = base.NumaNodes();
    for (NumaNode& node : nodes) {
      for (auto& [other, distance] : node.distances) {
        distance = node.id == other ? 10 : (node.id / 2 == other / 2 ? 16 : 32);
      }
    }
    return std::make_shared<const CpuTopology>(
        *CpuTopology::Create(base.Cpus(), nodes, base.Machine()));
  }();
  return topo;
}

// Both threads of cores [first, first + count) of NUMA node `numa` of FourNuma().
CpuSet Cores(int numa, int first, int count) {
  CpuSet::Builder b;
  for (int k = first; k < first + count; ++k) {
    b.Add(8 * numa + k);
    b.Add(32 + 8 * numa + k);
  }
  return b.Build();
}

PodSpec OneContainerPod(const std::string& uid, int cpus) {
  PodSpec pod;
  pod.uid = uid;
  pod.namespace_name = "default";
  pod.name = uid;
  pod.containers.push_back(ContainerSpec{.name = "app",
                                         .cpu_request_milli = cpus * 1000,
                                         .cpu_limit_milli = cpus * 1000,
                                         .memory_request_bytes = kGi,
                                         .memory_limit_bytes = kGi});
  return pod;
}

// Records pod `uid` holding `cpus` (one container) on `state`.
void Place(NodeState& state, const std::string& uid, const CpuSet& cpus,
           Owner owner = Owner::kHuygens) {
  PodAllocation allocation;
  allocation.pod_uid = uid;
  allocation.node = state.Config().name;
  allocation.numa_nodes = state.Topology().NumaNodesOf(cpus);
  CpuSet::Builder mems;
  for (int n : allocation.numa_nodes) mems.Add(n);
  allocation.containers.push_back(
      ContainerAllocation{.name = "app", .cpuset = cpus, .mems = mems.Build()});
  ASSERT_TRUE(state.Assume(OneContainerPod(uid, cpus.Size()), allocation, owner).ok()) << uid;
}

NodeState EmptyNode() {
  NodeConfig config;
  config.name = "n1";
  return *NodeState::Create(FourNuma(), config);
}

// One pod placement of a case: pod `uid` on cores [first, first + cores) of NUMA node `numa`.
struct Placed {
  std::string uid;
  int numa = 0;
  int first = 0;
  int cores = 0;
};

struct ExpectedMove {
  std::string uid;
  int numa = 0;  // the NUMA node it moves to
  friend bool operator==(const ExpectedMove&, const ExpectedMove&) = default;
};

void PrintTo(const ExpectedMove& m, std::ostream* os) { *os << m.uid << "->" << m.numa; }

struct PlanCase {
  std::string name;
  std::vector<Placed> pods;
  std::vector<AffinityGroup> groups;
  std::set<std::string> pinned;
  PlannerOptions options;
  std::vector<ExpectedMove> moves;
  int moved_cpus = 0;
};

void PrintTo(const PlanCase& c, std::ostream* os) { *os << c.name; }

class PlanTable : public ::testing::TestWithParam<PlanCase> {};

TEST_P(PlanTable, PlansTheExpectedMoves) {
  const PlanCase& c = GetParam();
  NodeState state = EmptyNode();
  for (const Placed& p : c.pods) Place(state, p.uid, Cores(p.numa, p.first, p.cores));
  absl::StatusOr<Plan> plan = PlanMoves(state, c.groups, c.pinned, c.options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::vector<ExpectedMove> got;
  for (const Move& m : plan->moves) {
    ASSERT_EQ(m.to.numa_nodes.size(), 1u) << m.reason;
    got.push_back({m.pod_uid, m.to.numa_nodes[0]});
    ASSERT_TRUE(ApplyMove(state, m).ok()) << m.reason;
    EXPECT_THAT(state.Validate(), IsEmpty()) << m.reason;
  }
  EXPECT_EQ(got, c.moves);
  EXPECT_EQ(plan->MovedCpus(), c.moved_cpus);
}

// The pods of a case (members and the filler pods f<n> that leave the named cores free).
std::vector<Placed> With(std::vector<Placed> pods) { return pods; }

const AffinityGroup kAB{"web", GroupPolicy::kSameNuma, {"a", "b"}};

INSTANTIATE_TEST_SUITE_P(
    Issue17Example, PlanTable,
    ::testing::Values(
        PlanCase{.name = "b_joins_a_when_numa_node_0_has_8_free_cpus",
                 .pods = With({{"a", 0, 0, 4}, {"b", 3, 0, 4}, {"f1", 1, 0, 8}, {"f2", 2, 0, 8},
                               {"f3", 3, 4, 4}}),
                 .groups = {kAB},
                 .moves = {{"b", 0}},
                 .moved_cpus = 8},
        PlanCase{.name = "a_joins_b_when_only_numa_node_3_has_room",
                 .pods = With({{"a", 0, 0, 4}, {"b", 3, 0, 4}, {"f0", 0, 4, 4}, {"f1", 1, 0, 8},
                               {"f2", 2, 0, 8}}),
                 .groups = {kAB},
                 .moves = {{"a", 3}},
                 .moved_cpus = 8},
        PlanCase{.name = "both_move_to_numa_node_2_when_neither_has_room_but_it_has_16",
                 .pods = With({{"a", 0, 0, 4}, {"b", 3, 0, 4}, {"f0", 0, 4, 4}, {"f1", 1, 0, 8},
                               {"f3", 3, 4, 4}}),
                 .groups = {kAB},
                 .options = {.max_moves = 2},  // a plan of two moves (the default budget is 1)
                 .moves = {{"a", 2}, {"b", 2}},
                 .moved_cpus = 16},
        PlanCase{.name = "with_room_for_one_pod_b_moves_to_the_free_node_nearest_a",
                 .pods = With({{"a", 0, 0, 4}, {"b", 3, 0, 4}, {"f0", 0, 4, 4}, {"f1", 1, 0, 4},
                               {"f2", 2, 0, 8}, {"f3", 3, 4, 4}}),
                 .groups = {kAB},
                 .moves = {{"b", 1}},
                 .moved_cpus = 8},
        PlanCase{.name = "of_two_affine_pods_the_one_with_fewer_cpus_moves",
                 .pods = With({{"a", 0, 0, 2}, {"b", 3, 0, 4}}),
                 .groups = {kAB},
                 .moves = {{"a", 3}},
                 .moved_cpus = 4},
        PlanCase{.name = "equal_cpus_to_move_tie_goes_to_the_lower_numa_id",
                 .pods = With({{"a", 0, 0, 4}, {"b", 3, 0, 4}}),
                 .groups = {kAB},
                 .moves = {{"b", 0}},
                 .moved_cpus = 8},
        PlanCase{.name = "with_equal_cpus_to_move_the_target_nearest_the_movers_wins",
                 .pods = With({{"a", 0, 0, 2}, {"b", 1, 0, 2}, {"c", 2, 0, 2}, {"f0", 0, 2, 6}}),
                 .groups = {{"trio", GroupPolicy::kSameNuma, {"a", "b", "c"}}},
                 .options = {.max_moves = 2},  // a plan of two moves (the default budget is 1)
                 .moves = {{"a", 1}, {"c", 1}},
                 .moved_cpus = 8},
        PlanCase{.name = "a_pinned_member_stays_and_the_other_joins_it",
                 .pods = With({{"a", 3, 0, 4}, {"b", 0, 0, 4}}),
                 .groups = {kAB},
                 .pinned = {"a"},
                 .moves = {{"b", 3}},
                 .moved_cpus = 8},
        PlanCase{.name = "a_group_on_one_numa_node_is_left_alone",
                 .pods = With({{"a", 0, 0, 4}, {"b", 0, 4, 4}}),
                 .groups = {kAB},
                 .moves = {},
                 .moved_cpus = 0},
        PlanCase{.name = "at_most_max_moves_per_plan",
                 .pods = With({{"a", 0, 0, 2}, {"b", 1, 0, 2}, {"c", 2, 0, 2}, {"f0", 0, 2, 6},
                               {"f1", 1, 2, 6}, {"f2", 2, 2, 6}}),
                 .groups = {{"trio", GroupPolicy::kSameNuma, {"a", "b", "c"}}},
                 .options = {.max_moves = 2},
                 .moves = {{"a", 3}, {"b", 3}},
                 .moved_cpus = 8},
        PlanCase{.name = "nearest_moves_one_member_at_a_time_while_each_move_brings_them_nearer",
                 .pods = With({{"a", 0, 0, 4}, {"b", 3, 0, 4}, {"f0", 0, 4, 4}, {"f1", 1, 0, 8},
                               {"f3", 3, 4, 4}}),
                 .groups = {{"web", GroupPolicy::kNearest, {"a", "b"}}},
                 .options = {.max_moves = 1},
                 .moves = {{"a", 2}},
                 .moved_cpus = 8},
        PlanCase{.name = "spread_moves_one_member_to_the_freest_numa_node",
                 .pods = With({{"a", 0, 0, 2}, {"b", 0, 2, 2}, {"f1", 1, 0, 4}, {"f2", 2, 0, 2}}),
                 .groups = {{"apart", GroupPolicy::kSpread, {"a", "b"}}},
                 .moves = {{"a", 3}},
                 .moved_cpus = 4},
        PlanCase{.name = "balance_evens_load_to_within_one_pod",
                 .pods = With({{"p1", 0, 0, 2}, {"p2", 0, 2, 2}, {"p3", 0, 4, 2}, {"p4", 0, 6, 2}}),
                 .options = {.max_moves = 8, .balance = true},
                 .moves = {{"p1", 1}, {"p2", 2}, {"p3", 3}},
                 .moved_cpus = 12},
        PlanCase{.name = "balance_leaves_group_members_and_pinned_pods_alone",
                 .pods = With({{"a", 0, 0, 2}, {"b", 0, 2, 2}, {"p", 0, 4, 2}, {"q", 0, 6, 2}}),
                 .groups = {kAB},
                 .pinned = {"p"},
                 .options = {.max_moves = 8, .balance = true},
                 .moves = {{"q", 1}},
                 .moved_cpus = 4}),
    [](const ::testing::TestParamInfo<PlanCase>& p) { return p.param.name; });

// Group kAB on `state` (a on NUMA node 3, b on NUMA node 0): a is pinned with a reason naming
// `why`, and b moves to NUMA node 3 beside it.
void ExpectAPinnedAndBMovedBesideIt(const NodeState& state, const std::string& why) {
  absl::StatusOr<Plan> plan = PlanMoves(state, {{kAB}}, {}, {});
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->moves.size(), 1u);
  EXPECT_EQ(plan->moves[0].pod_uid, "b");
  EXPECT_EQ(plan->moves[0].to.numa_nodes, std::vector<int>{3});
  ASSERT_EQ(plan->pinned.size(), 1u);
  EXPECT_EQ(plan->pinned[0].first, "a");
  EXPECT_THAT(plan->pinned[0].second, HasSubstr(why));
}

TEST(PlanMoves, KubeletOwnedPodsArePinnedWithTheReason) {
  NodeState state = EmptyNode();
  // Both NUMA nodes have room: unpinned, the tie would move a to NUMA node 0.
  Place(state, "a", Cores(3, 0, 4), Owner::kKubelet);
  Place(state, "b", Cores(0, 0, 4));
  ExpectAPinnedAndBMovedBesideIt(state, "kubelet");
}

TEST(PlanMoves, APodHoldingDevicesIsPinnedWithTheReason) {
  NodeConfig config;
  config.name = "n1";
  config.devices["example.com/gpu"] = {{0, 1}, {3, 1}};
  NodeState state = *NodeState::Create(FourNuma(), config);
  // As in KubeletOwnedPodsArePinnedWithTheReason: unpinned, the tie would move a to NUMA node
  // 0, away from the GPU of NUMA node 3 it holds (kubelet never moves a device).
  PodSpec gpu = OneContainerPod("a", 8);
  gpu.containers[0].extended_requests["example.com/gpu"] = 1;
  ASSERT_TRUE(state.Assume(gpu, PodAllocation{.pod_uid = "a",
                                              .node = "n1",
                                              .numa_nodes = {3},
                                              .containers = {ContainerAllocation{
                                                  .name = "app",
                                                  .cpuset = Cores(3, 0, 4),
                                                  .mems = CpuSet{3}}}})
                  .ok());
  ASSERT_EQ(state.DevicesOf("a"), (NodeDevices{{"example.com/gpu", {{3, 1}}}}));
  Place(state, "b", Cores(0, 0, 4));
  ExpectAPinnedAndBMovedBesideIt(state, "devices");
}

TEST(PlanMoves, ABlockedGroupSaysWhy) {
  NodeState state = EmptyNode();
  Place(state, "a", Cores(0, 0, 8));
  Place(state, "b", Cores(1, 0, 8));
  Place(state, "f2", Cores(2, 0, 8));
  Place(state, "f3", Cores(3, 0, 8));
  absl::StatusOr<Plan> plan = PlanMoves(state, {{kAB}}, {}, {});
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(plan->moves, IsEmpty());
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].state, GroupOutcome::State::kBlocked);
  EXPECT_EQ(plan->groups[0].numa_before, (std::vector<int>{0, 1}));
  EXPECT_THAT(plan->groups[0].reason, HasSubstr("no NUMA node has room"));
}

TEST(PlanMoves, AMoveKeepsEachContainerItsCountAndInitContainersInsideTheRunningCpus) {
  NodeState state = EmptyNode();
  PodSpec pod = OneContainerPod("a", 4);
  pod.containers.push_back(pod.containers[0]);
  pod.containers[1].name = "side";
  pod.containers[1].cpu_request_milli = pod.containers[1].cpu_limit_milli = 2000;
  ContainerSpec init = pod.containers[0];
  init.name = "setup";
  init.init = true;
  pod.init_containers.push_back(init);
  PodAllocation alloc;
  alloc.pod_uid = "a";
  alloc.node = "n1";
  alloc.numa_nodes = {0};
  alloc.containers = {
      {.name = "setup", .cpuset = Cores(0, 0, 2), .mems = CpuSet{0}, .init = true},
      {.name = "app", .cpuset = Cores(0, 0, 2), .mems = CpuSet{0}},
      {.name = "side", .cpuset = Cores(0, 2, 1), .mems = CpuSet{0}}};
  ASSERT_TRUE(state.Assume(pod, alloc).ok());
  Place(state, "b", Cores(3, 0, 4));
  Place(state, "f0", Cores(0, 3, 5));
  absl::StatusOr<Plan> plan = PlanMoves(state, {{kAB}}, {}, {});
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->moves.size(), 1u);
  const PodAllocation& to = plan->moves[0].to;
  ASSERT_EQ(to.containers.size(), 3u);
  EXPECT_EQ(to.containers[1].cpuset.Size(), 4);
  EXPECT_EQ(to.containers[2].cpuset.Size(), 2);
  EXPECT_FALSE(to.containers[1].cpuset.Intersects(to.containers[2].cpuset));
  EXPECT_TRUE(to.containers[0].cpuset.IsSubsetOf(
      to.containers[1].cpuset.Union(to.containers[2].cpuset)));
  for (const ContainerAllocation& c : to.containers) {
    EXPECT_TRUE(c.cpuset.IsSubsetOf(FourNuma()->CpusInNumaNode(3))) << c.name;
    EXPECT_EQ(c.mems, CpuSet{3}) << c.name;
  }
  EXPECT_TRUE(ApplyMove(state, plan->moves[0]).ok());
  EXPECT_THAT(state.Validate(), IsEmpty());
}

TEST(PlanMoves, NegativeMaxMovesIsAnError) {
  NodeState state = EmptyNode();
  absl::StatusOr<Plan> plan = PlanMoves(state, {}, {}, {.max_moves = -1});
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(plan.status().message(), HasSubstr("max_moves"));
}

// Randomized: on generated machines, pods, groups and options, every step of a plan is valid on
// its own (its CPUs are free at that step or the pod's own; the state accepts it), and replanning
// after carrying a plan out reaches a fixed point (no oscillation). A failure names the seed.
TEST(PlanMoves, EveryStepIsValidAndReplanningConverges) {
  const std::vector<testing::MachineSpec> shapes = {
      {.sockets = 2, .numa_per_socket = 2, .cores_per_numa = 4},
      {.sockets = 2, .cores_per_numa = 6, .threads_per_core = 1},
      {.sockets = 1, .numa_per_socket = 4, .cores_per_numa = 3,
       .numbering = testing::SiblingNumbering::kAdjacent},
      {.sockets = 2, .numa_per_socket = 4, .cores_per_numa = 2}};
  int moves_checked = 0;
  for (uint32_t seed = 1; seed <= 500; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    std::mt19937 rng(seed);
    auto pick = [&rng](int lo, int hi) {
      return std::uniform_int_distribution<int>(lo, hi)(rng);
    };
    auto topo = std::make_shared<const CpuTopology>(
        testing::BuildMachine(shapes[static_cast<size_t>(pick(0, 3))]));
    NodeConfig config;
    config.name = "n1";
    config.default_bind_policy = pick(0, 1) == 0 ? BindPolicy::kFullCores : BindPolicy::kPacked;
    config.numa_strategy = pick(0, 1) == 0 ? NumaStrategy::kMostAllocated
                                           : NumaStrategy::kLeastAllocated;
    NodeState state = *NodeState::Create(topo, config);
    std::vector<std::string> uids;
    const int pods = pick(2, 9);
    for (int i = 0; i < pods; ++i) {
      const std::string uid = "p" + std::to_string(i);
      const int cpus = 2 * pick(1, 3);
      // Near a random NUMA node, so that groups start scattered.
      const int near = topo->NumaNodes()[static_cast<size_t>(pick(0, topo->NumNumaNodes() - 1))].id;
      if (state.AllocatePod(OneContainerPod(uid, cpus), {near}).ok()) uids.push_back(uid);
    }
    std::shuffle(uids.begin(), uids.end(), rng);
    std::vector<AffinityGroup> groups;
    size_t next = 0;
    while (next + 1 < uids.size() && pick(0, 2) != 0) {
      AffinityGroup g{"g" + std::to_string(groups.size()),
                      static_cast<GroupPolicy>(pick(0, 2)), {}};
      const size_t size = static_cast<size_t>(pick(2, 3));
      for (size_t k = 0; k < size && next < uids.size(); ++k) g.members.push_back(uids[next++]);
      groups.push_back(g);
    }
    std::set<std::string> pinned;
    for (const std::string& uid : uids) {
      if (pick(0, 5) == 0) pinned.insert(uid);
    }
    PlannerOptions options{.max_moves = pick(1, 4), .balance = pick(0, 1) == 1};

    bool converged = false;
    for (int round = 0; round < 40 && !converged; ++round) {
      absl::StatusOr<Plan> plan = PlanMoves(state, groups, pinned, options);
      ASSERT_TRUE(plan.ok()) << plan.status();
      converged = plan->moves.empty();
      for (const Move& m : plan->moves) {
        ASSERT_FALSE(pinned.contains(m.pod_uid));
        ASSERT_EQ(m.from, state.Pods().at(m.pod_uid)) << m.reason;
        // Free at this step, or the pod's own: no CPU held by two pods between two steps.
        CpuSet::Builder others;
        for (const auto& [uid, a] : state.Pods()) {
          if (uid == m.pod_uid) continue;
          for (const ContainerAllocation& c : a.containers) {
            if (c.exclusive) others.Add(c.cpuset);
          }
        }
        for (const ContainerAllocation& c : m.to.containers) {
          ASSERT_FALSE(c.exclusive && c.cpuset.Intersects(others.Build())) << m.reason;
        }
        ASSERT_TRUE(ApplyMove(state, m).ok()) << m.reason;
        ASSERT_THAT(state.Validate(), IsEmpty()) << m.reason;
        ++moves_checked;
      }
    }
    EXPECT_TRUE(converged) << "replanning did not reach a fixed point in 40 rounds";
  }
  EXPECT_GT(moves_checked, 120);  // the generator exercises the planner
}

}  // namespace
}  // namespace huygens::rebalance
