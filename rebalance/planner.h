// The rebalancer's planner: which running pods of one node to move, and where, so that affine
// pods share a NUMA node (or the nearest ones) and NUMA load stays even, with the fewest CPUs
// moved (docs/rebalancer.md gives the rule with worked examples).
//
// What it is: a pure function from one node's state (node/node_state.h: its pods' exclusive
// cpusets and memory) and the affinity groups of the pods on that node to an ordered list of
// moves. A move is a new huygens.io/allocation for one pod (DESIGN.md, "Pod, allocation changes
// by the rebalancer"). It plans; it writes nothing: the scheduler's rebalancer carries out the
// moves one at a time with resourceVersion preconditions, and the agent applies each.
//
// The rule (goals in order; each step only ever improves the first goal it touches):
//   1. Groups with policy same-numa whose members fit one NUMA node end on one: for every
//      candidate NUMA node t, the members not already wholly on t move there, each into free
//      CPUs of t (plus its own CPUs on t); t must hold them all (never more than its free CPUs)
//      and every pinned member must already be wholly on t. Among feasible t: the fewest CPUs
//      moved (so of two affine pods the one that needs fewer moved CPUs moves), then the smallest
//      sum over moving members of CPUs x NUMA distance from where they are to t (the nearest
//      target), then the lowest NUMA id.
//   2. When no t holds them (or under policy nearest): single-member moves, each to one NUMA
//      node with room, while a move lowers the group's distance (the sum over member pairs of
//      the mean NUMA distance between their NUMA nodes); the largest drop first, then the fewest
//      CPUs moved. So with room for only one pod anywhere, one member moves to the free NUMA node
//      nearest the others.
//   3. Policy spread: single-member moves to NUMA nodes without members while that lowers the
//      number of member pairs sharing a NUMA node (the freest target first).
//   4. PlannerOptions::balance: pods in no group move from the most to the least loaded NUMA node
//      (exclusive CPUs held) while a pod smaller than the difference exists (the one closest to
//      half the difference, then the smaller), so load ends within one pod's size of even.
// Hysteresis: a group on one NUMA node is never touched, a greedy move must strictly lower its
// measure, and balance moves leave groups alone, so replanning after a plan was carried out
// reaches a fixed point (no plan) instead of oscillating (rebalance/planner_test.cc checks it).
//
// Who is never moved ("pinned", with the reason in Plan::pinned): pods in `pinned` (the caller's
// opt-outs: huygens.io/rebalance "false", system pods), pods whose CPUs kubelet decided
// (Owner::kKubelet), pods whose memory kubelet's memory manager pins (Static policy), pods that
// hold devices (NodeState::DevicesOf: kubelet never moves a device, so moving the CPUs would
// take them away from it), pods whose
// regular init container is larger than their running exclusive CPUs. Pods without exclusive
// CPUs have nothing to move and take no part. A move keeps each container's CPU count and bind
// policy, puts all of the pod's exclusive CPUs on one NUMA node (its mems follow), and leaves
// shared containers as they are. A pod listed in two groups belongs to the first only.
//
// Validity: moves are planned one after another on a copy of the state; each move's cpusets lie
// in CPUs that are free after the moves before it, plus the pod's own CPUs (a container never
// takes a CPU its sibling container still holds), and NodeState::Assume accepts it. So carrying
// out any prefix of the plan leaves a valid node (no CPU held by two pods between two steps),
// and a crash mid-plan leaves a state from which the next plan continues.
//
// Thread-safety: pure; the state is read only.
#ifndef HUYGENS_REBALANCE_PLANNER_H_
#define HUYGENS_REBALANCE_PLANNER_H_

#include <optional>
#include <chrono>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "alloc/pod.h"
#include "node/allocation.h"
#include "node/node_state.h"

namespace huygens::rebalance {

// What a group wants (a NumaAffinityGroup's spec.policy; names and parser in alloc/pod.h):
// kSameNuma: one NUMA node when the members fit one, else the nearest set; kNearest: only
// single moves that bring members nearer; kSpread: members on different NUMA nodes.
using GroupPolicy = AffinityGroupPolicy;

// One affinity group as seen on one node.
struct AffinityGroup {
  std::string name;                  // for outcomes and reasons, e.g. "default/web" or "web"
  GroupPolicy policy = GroupPolicy::kSameNuma;
  std::vector<std::string> members;  // pod uids; members the node does not know are ignored
};

// How often the rebalancer plans each node by default: huygens-scheduler's
// `rebalancer.interval` and the simulator's `rebalance.interval` (one default for both, so the
// simulator shows what the service does).
inline constexpr std::chrono::seconds kDefaultInterval{30};

struct PlannerOptions {
  // The most moves one plan holds (the bound per node per interval). Default 1, also
  // huygens-scheduler's `rebalancer.maxMovesPerNode` and the simulator's `rebalance.maxMoves`.
  int max_moves = 1;
  // Goal 4, even exclusive load per NUMA node (the node's numaStrategy least-allocated).
  // Default false.
  bool balance = false;
};

// One step: pod `pod_uid`'s allocation goes from `from` to `to`.
struct Move {
  std::string pod_uid;
  PodAllocation from;
  PodAllocation to;
  int moved_cpus = 0;  // CPUs of `to` the pod did not hold in `from`
  std::string group;   // the group it serves; "" for a balance move
  std::string reason;  // one line, e.g. "group web: join NUMA node 0 (8 cpus moved)"
};

// Where a group stands.
struct GroupOutcome {
  enum class State {
    kAligned,  // already where its policy wants it; nothing to do
    kMoving,   // the plan moves members
    kBlocked,  // not aligned and no move helps now (reason says why)
  };
  std::string group;
  State state = State::kAligned;
  std::vector<int> numa_before;  // NUMA nodes its members' exclusive CPUs span, ascending
  std::vector<int> numa_after;   // the same after the plan
  std::string reason;
};
const char* ToString(GroupOutcome::State state);

struct Plan {
  std::vector<Move> moves;             // in the order to carry them out
  std::vector<GroupOutcome> groups;    // one per input group with members holding CPUs
  std::vector<std::pair<std::string, std::string>> pinned;  // pod uid, why it is not moved
  int MovedCpus() const;               // sum of moves' moved_cpus
};

// Plans the moves for one node (see the file comment for the rule).
// `pinned`: pod uids never to move. Errors: InvalidArgument when max_moves < 0; Internal when
// the state rejects a move the planner built (a bug: nothing is planned past it).
absl::StatusOr<Plan> PlanMoves(const NodeState& state, std::span<const AffinityGroup> groups,
                               const std::set<std::string>& pinned,
                               const PlannerOptions& options);

// Carries out `move` on `state` (NodeState::ReplaceAllocation with move.to), as the planner
// does between the steps of a plan. Errors: ReplaceAllocation's (the state is then unchanged).
absl::Status ApplyMove(NodeState& state, const Move& move);

}  // namespace huygens::rebalance

#endif  // HUYGENS_REBALANCE_PLANNER_H_
