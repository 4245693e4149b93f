#include "rebalance/planner.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <tuple>

#include "absl/status/status.h"
#include "alloc/huygens_allocator.h"
#include "alloc/memory_manager.h"
#include "fmt/format.h"
#include "fmt/ranges.h"

namespace huygens::rebalance {

const char* ToString(GroupOutcome::State state) {
  switch (state) {
    case GroupOutcome::State::kAligned: return "aligned";
    case GroupOutcome::State::kMoving: return "moving";
    case GroupOutcome::State::kBlocked: return "blocked";
  }
  return "?";
}

int Plan::MovedCpus() const {
  int sum = 0;
  for (const Move& m : moves) sum += m.moved_cpus;
  return sum;
}

absl::Status ApplyMove(NodeState& state, const Move& move) {
  return state.ReplaceAllocation(move.pod_uid, move.to);
}

namespace {

// CPUs of `to` the pod did not hold in `from` (Move::moved_cpus).
int MovedCpus(const PodAllocation& from, const PodAllocation& to) {
  return to.ExclusiveCpus().Difference(from.ExclusiveCpus()).Size();
}

// The planner's working state: the node as it will be after the moves planned so far.
class Planner {
 public:
  Planner(const NodeState& state, const std::set<std::string>& pinned,
          const PlannerOptions& options)
      : state_(state), topo_(state.Topology()), options_(options) {
    for (const auto& [uid, allocation] : state_.Pods()) {
      if (allocation.ExclusiveCpus().Empty()) continue;  // nothing to move, no NUMA location
      std::string why = PinReason(uid, allocation, pinned);
      if (!why.empty()) {
        pinned_[uid] = why;
        plan_.pinned.emplace_back(uid, std::move(why));
      }
    }
  }

  absl::Status Run(std::span<const AffinityGroup> groups) {
    std::set<std::string> grouped;
    for (const AffinityGroup& input : groups) {
      AffinityGroup group{input.name, input.policy, {}};
      for (const std::string& uid : input.members) {
        auto it = state_.Pods().find(uid);
        if (it == state_.Pods().end() || it->second.ExclusiveCpus().Empty()) continue;
        if (!grouped.insert(uid).second) continue;  // in an earlier group already
        group.members.push_back(uid);
      }
      if (group.members.size() < 2) continue;
      if (absl::Status s = PlanGroup(group); !s.ok()) return s;
    }
    if (options_.balance) return Balance(grouped);
    return absl::OkStatus();
  }

  Plan TakePlan() { return std::move(plan_); }

 private:
  // A pod's NUMA nodes now (of its exclusive CPUs).
  std::vector<int> NumaOf(const std::string& uid) const {
    return state_.Pods().at(uid).numa_nodes;
  }

  std::string PinReason(const std::string& uid, const PodAllocation& allocation,
                        const std::set<std::string>& pinned) const {
    if (pinned.contains(uid)) return "opted out of rebalancing (or a system pod)";
    if (state_.OwnerOf(uid) == Owner::kKubelet) return "its CPUs were decided by kubelet";
    const MemoryManagerState* memory = state_.Memory();
    if (memory != nullptr && state_.Config().memory_manager.has_value() &&
        state_.Config().memory_manager->static_policy && memory->assignments.contains(uid)) {
      return "kubelet's memory manager (Static) pins its memory";
    }
    if (!state_.DevicesOf(uid).empty()) {
      return "kubelet's device manager holds its devices on their NUMA node(s)";
    }
    int running = 0;
    for (const ContainerAllocation& c : allocation.containers) {
      if (c.exclusive && (!c.init || c.restartable)) running += c.cpuset.Size();
    }
    for (const ContainerAllocation& c : allocation.containers) {
      if (c.exclusive && c.init && !c.restartable && c.cpuset.Size() > running) {
        return fmt::format("init container {:?} holds more CPUs ({}) than its running "
                           "containers ({})", c.name, c.cpuset.Size(), running);
      }
    }
    return "";
  }

  bool IsPinned(const std::string& uid) const { return pinned_.contains(uid); }

  // The allocation that puts every exclusive CPU of `uid` on NUMA node `target`, over the
  // current state minus what earlier movers of the same candidate claimed there (`taken` CPUs,
  // `claimed` memory); nullopt when it does not fit (CPUs or memory).
  std::optional<PodAllocation> MoveTo(const std::string& uid, int target,
                                      const CpuSet& taken = {},
                                      const MemoryRequests& claimed = {}) const {
    const PodAllocation& from = state_.Pods().at(uid);
    const PodSpec& spec = *state_.SpecOf(uid);
    const CpuSet target_cpus = topo_.CpusInNumaNode(target);
    const CpuSet free_on_target = state_.SharedPool().Intersection(target_cpus).Difference(taken);
    ExclusiveRequest request;
    request.bind_policy = spec.bind_policy.value_or(state_.Config().default_bind_policy);
    request.topology_policy = TopologyPolicy::kSingleNumaNode;
    request.within_numa_nodes = std::vector<int>{target};
    request.allocatable_cpus = state_.UserPool();

    PodAllocation to = from;
    to.numa_nodes = {target};
    // Running containers first, largest first (whole cores go to the big ones), then each
    // regular init container inside the running containers' new CPUs (kubelet's reuse).
    std::vector<size_t> order;
    for (size_t i = 0; i < to.containers.size(); ++i) {
      const ContainerAllocation& c = to.containers[i];
      if (c.exclusive && (!c.init || c.restartable)) order.push_back(i);
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return from.containers[a].cpuset.Size() > from.containers[b].cpuset.Size();
    });
    CpuSet::Builder chosen;
    for (size_t i : order) {
      const ContainerAllocation& old = from.containers[i];
      const CpuSet available =
          free_on_target.Union(old.cpuset.Intersection(target_cpus)).Difference(chosen.Build());
      CpuSet cpus;
      if (old.cpuset.IsSubsetOf(target_cpus)) {
        cpus = old.cpuset;  // already there: kept as it is
      } else {
        request.num_cpus = old.cpuset.Size();
        absl::StatusOr<ExclusiveAllocation> got = state_.Allocator().Allocate(available, request);
        if (!got.ok()) return std::nullopt;
        cpus = got->cpus;
      }
      chosen.Add(cpus);
      to.containers[i].cpuset = cpus;
      to.containers[i].mems = CpuSet{target};
    }
    const CpuSet running = chosen.Build();
    for (ContainerAllocation& c : to.containers) {
      if (!c.exclusive || !c.init || c.restartable) continue;
      if (c.cpuset.Size() > running.Size()) return std::nullopt;  // pinned already; defensive
      c.cpuset = c.cpuset.IsSubsetOf(running) ? c.cpuset : running.First(c.cpuset.Size());
      c.mems = CpuSet{target};
    }
    if (!MemoryFits(uid, spec, target, claimed)) return std::nullopt;
    return to;
  }

  // Whether the pod's memory, when Huygens places it (memory modelled, policy None), fits NUMA
  // node `target` once the pod's own memory is released and `claimed` is taken there.
  bool MemoryFits(const std::string& uid, const PodSpec& spec, int target,
                  const MemoryRequests& claimed) const {
    if (state_.Memory() == nullptr || !state_.Memory()->assignments.contains(uid)) return true;
    NodeState without = state_;
    if (!without.ReleasePod(uid).ok()) return false;
    const auto node = without.Memory()->machine.find(target);
    if (node == without.Memory()->machine.end()) return false;
    for (const auto& [resource, bytes] : PodMemoryRequests(spec)) {
      if (bytes == 0) continue;
      auto table = node->second.memory_map.find(resource);
      auto other = claimed.find(resource);
      const uint64_t wanted = bytes + (other == claimed.end() ? 0 : other->second);
      if (table == node->second.memory_map.end() || table->second.free < wanted) return false;
    }
    return true;
  }

  // Records a move in the plan and carries it out on the working state.
  absl::Status Commit(const std::string& uid, PodAllocation to, const std::string& group,
                      std::string reason) {
    Move move;
    move.pod_uid = uid;
    move.from = state_.Pods().at(uid);
    move.to = std::move(to);
    move.moved_cpus = MovedCpus(move.from, move.to);
    move.group = group;
    move.reason = fmt::format("{} ({} cpus moved)", reason, move.moved_cpus);
    if (absl::Status s = ApplyMove(state_, move); !s.ok()) {
      return absl::InternalError(fmt::format("planned move of pod {} refused: {}", uid,
                                             std::string(s.message())));
    }
    plan_.moves.push_back(std::move(move));
    return absl::OkStatus();
  }

  bool BudgetLeft() const {
    return static_cast<int>(plan_.moves.size()) < options_.max_moves;
  }

  // NUMA nodes that have user-pool CPUs (the only targets).
  std::vector<int> Targets() const {
    std::vector<int> out;
    for (const NumaCounters& c : state_.Counters()) {
      if (c.user_cpus > 0) out.push_back(c.numa);
    }
    return out;
  }

  double SetDistance(const std::vector<int>& a, const std::vector<int>& b) const {
    double sum = 0;
    for (int x : a) {
      for (int y : b) sum += topo_.Distance(x, y);
    }
    return sum / static_cast<double>(a.size() * b.size());
  }

  // The members' NUMA nodes now, or with member `moved` (when set) wholly on NUMA node `target`.
  std::vector<std::vector<int>> Layout(const std::vector<std::string>& members,
                                       const std::string* moved, int target) const {
    std::vector<std::vector<int>> out;
    for (const std::string& uid : members) {
      out.push_back(moved != nullptr && uid == *moved ? std::vector<int>{target} : NumaOf(uid));
    }
    return out;
  }

  // Goal 2's measure: sum over member pairs of the mean NUMA distance between them.
  double GroupDistance(const std::vector<std::vector<int>>& layout) const {
    double sum = 0;
    for (size_t i = 0; i < layout.size(); ++i) {
      for (size_t j = i + 1; j < layout.size(); ++j) sum += SetDistance(layout[i], layout[j]);
    }
    return sum;
  }

  // Goal 3's measure: member pairs whose NUMA nodes overlap.
  static int SharingPairs(const std::vector<std::vector<int>>& layout) {
    int pairs = 0;
    for (size_t i = 0; i < layout.size(); ++i) {
      for (size_t j = i + 1; j < layout.size(); ++j) {
        const std::vector<int>& a = layout[i];
        const std::vector<int>& b = layout[j];
        for (int x : a) {
          if (std::find(b.begin(), b.end(), x) != b.end()) {
            ++pairs;
            break;
          }
        }
      }
    }
    return pairs;
  }

  std::vector<int> Span(const std::vector<std::string>& members) const {
    std::set<int> numa;
    for (const std::string& uid : members) {
      for (int n : NumaOf(uid)) numa.insert(n);
    }
    return {numa.begin(), numa.end()};
  }

  int CpusOf(const std::string& uid) const { return state_.Pods().at(uid).ExclusiveCpus().Size(); }

  absl::Status PlanGroup(const AffinityGroup& group) {
    GroupOutcome outcome;
    outcome.group = group.name;
    outcome.numa_before = Span(group.members);
    const size_t moves_before = plan_.moves.size();
    const bool aligned = group.policy == GroupPolicy::kSpread
                             ? SharingPairs(Layout(group.members, nullptr, 0)) == 0
                             : outcome.numa_before.size() == 1;
    absl::Status s;
    if (aligned) {
      outcome.state = GroupOutcome::State::kAligned;
    } else if (group.policy == GroupPolicy::kSpread) {
      s = Spread(group, outcome);
    } else {
      bool together = false;
      if (group.policy == GroupPolicy::kSameNuma) {
        s = Together(group, outcome, together);
      }
      if (s.ok() && !together) s = Nearer(group, outcome);
    }
    if (!s.ok()) return s;
    outcome.numa_after = Span(group.members);
    if (plan_.moves.size() > moves_before) {
      outcome.state = GroupOutcome::State::kMoving;
    } else if (!aligned) {
      outcome.state = GroupOutcome::State::kBlocked;
    }
    plan_.groups.push_back(std::move(outcome));
    return absl::OkStatus();
  }

  // Goal 1. Sets `together` when a target was chosen (and its moves planned, within budget).
  absl::Status Together(const AffinityGroup& group, GroupOutcome& outcome, bool& together) {
    using Score = std::tuple<int, int64_t, int>;  // moved CPUs, CPU x distance, NUMA id
    std::optional<Score> best;
    std::vector<std::pair<std::string, PodAllocation>> best_moves;
    for (int target : Targets()) {
      bool feasible = true;
      for (const std::string& uid : group.members) {
        if (IsPinned(uid) && NumaOf(uid) != std::vector<int>{target}) feasible = false;
      }
      if (!feasible) continue;
      // A bound first: the CPUs the movers need on `target` beyond their own must be free
      // there, and a target needing more than the best one moves cannot win.
      const CpuSet target_cpus = topo_.CpusInNumaNode(target);
      int need = 0;
      for (const std::string& uid : group.members) {
        if (NumaOf(uid) == std::vector<int>{target}) continue;
        const CpuSet held = state_.Pods().at(uid).ExclusiveCpus();
        need += held.Size() - held.IntersectionSize(target_cpus);
      }
      if (need > state_.SharedPool().IntersectionSize(target_cpus)) continue;
      if (best.has_value() && need > std::get<0>(*best)) continue;
      // This target's moves, members in a fixed order, each into what the ones before it left.
      std::vector<std::pair<std::string, PodAllocation>> moves;
      CpuSet::Builder taken;
      MemoryRequests claimed;
      int moved = 0;
      int64_t far = 0;
      for (const std::string& uid : group.members) {
        if (NumaOf(uid) == std::vector<int>{target}) continue;
        std::optional<PodAllocation> to = MoveTo(uid, target, taken.Build(), claimed);
        if (!to.has_value()) {
          feasible = false;
          break;
        }
        const CpuSet held = to->ExclusiveCpus();
        moved += MovedCpus(state_.Pods().at(uid), *to);
        for (int n : NumaOf(uid)) {
          far += static_cast<int64_t>(CpusOf(uid)) * topo_.Distance(n, target);
        }
        taken.Add(held);
        if (state_.Memory() != nullptr) {
          for (const auto& [resource, bytes] : PodMemoryRequests(*state_.SpecOf(uid))) {
            claimed[resource] += bytes;
          }
        }
        moves.emplace_back(uid, *std::move(to));
      }
      if (!feasible) continue;
      const Score score{moved, far, target};
      if (!best.has_value() || score < *best) {
        best = score;
        best_moves = std::move(moves);
      }
    }
    if (!best.has_value()) {
      outcome.reason = "no NUMA node has room for all members";
      return absl::OkStatus();
    }
    together = true;
    const int target = std::get<2>(*best);
    for (auto& [uid, to] : best_moves) {
      if (!BudgetLeft()) {
        outcome.reason = fmt::format("moving to NUMA node {}; the rest waits for the next "
                                     "interval (at most {} moves per plan)", target,
                                     options_.max_moves);
        return absl::OkStatus();
      }
      if (absl::Status s = Commit(uid, std::move(to), group.name,
                                  fmt::format("group {}: join NUMA node {}", group.name, target));
          !s.ok()) {
        return s;
      }
    }
    outcome.reason = fmt::format("all members to NUMA node {}", target);
    return absl::OkStatus();
  }

  // The best single move of a member to one NUMA node by `measure` (lower is better), with the
  // tie-breaks of the rule; nullopt when none lowers it.
  template <typename Measure, typename Prefer>
  std::optional<std::pair<std::string, std::pair<int, PodAllocation>>> BestSingleMove(
      const AffinityGroup& group, Measure measure, Prefer prefer) {
    const double now = measure(Layout(group.members, nullptr, 0));
    // drop (higher better), moved CPUs, preference (lower better), uid, target
    using Score = std::tuple<double, int, int64_t, std::string, int>;
    std::optional<Score> best;
    std::optional<PodAllocation> best_to;
    for (const std::string& uid : group.members) {
      if (IsPinned(uid)) continue;
      for (int target : Targets()) {
        if (NumaOf(uid) == std::vector<int>{target}) continue;
        const double after = measure(Layout(group.members, &uid, target));
        if (!(after < now - 1e-9)) continue;
        if (best.has_value() && -(now - after) > std::get<0>(*best) + 1e-9) continue;
        std::optional<PodAllocation> to = MoveTo(uid, target);
        if (!to.has_value()) continue;
        const int moved = MovedCpus(state_.Pods().at(uid), *to);
        const Score score{-(now - after), moved, prefer(target), uid, target};
        if (!best.has_value() || score < *best) {
          best = score;
          best_to = std::move(to);
        }
      }
    }
    if (!best.has_value()) return std::nullopt;
    return std::make_pair(std::get<3>(*best), std::make_pair(std::get<4>(*best), *best_to));
  }

  // Goals 2 and 3: single moves while `measure` drops, the best first (BestSingleMove); the
  // reasons are the outcome's when nothing moves (`blocked`) and after a move (`moved`).
  template <typename Measure, typename Prefer>
  absl::Status Greedy(const AffinityGroup& group, GroupOutcome& outcome, Measure measure,
                      Prefer prefer, const char* verb, const std::string& blocked,
                      const std::string& moved) {
    while (BudgetLeft()) {
      auto best = BestSingleMove(group, measure, prefer);
      if (!best.has_value()) {
        if (outcome.reason.empty()) outcome.reason = blocked;
        return absl::OkStatus();
      }
      auto& [uid, placed] = *best;
      const int target = placed.first;
      if (absl::Status s = Commit(uid, std::move(placed.second), group.name,
                                  fmt::format("group {}: {}, to NUMA node {}", group.name, verb,
                                              target));
          !s.ok()) {
        return s;
      }
      outcome.reason = moved;
    }
    return absl::OkStatus();
  }

  // Goal 2: single moves while the group's distance drops.
  absl::Status Nearer(const AffinityGroup& group, GroupOutcome& outcome) {
    const std::string why_not_together = outcome.reason;
    return Greedy(
        group, outcome, [this](const auto& layout) { return GroupDistance(layout); },
        [](int) { return int64_t{0}; }, "nearer", "no single move brings members nearer",
        why_not_together.empty() ? "members moved nearer"
                                 : fmt::format("members moved nearer ({})", why_not_together));
  }

  // Goal 3: single moves while fewer member pairs share a NUMA node; the freest target first.
  absl::Status Spread(const AffinityGroup& group, GroupOutcome& outcome) {
    return Greedy(
        group, outcome,
        [](const auto& layout) { return static_cast<double>(SharingPairs(layout)); },
        [this](int target) {
          for (const NumaCounters& c : state_.Counters()) {
            if (c.numa == target) return -static_cast<int64_t>(c.free_cpus);
          }
          return int64_t{0};
        },
        "spread", "no NUMA node without members has room", "members spread over NUMA nodes");
  }

  // Goal 4: from the most to the least loaded NUMA node while a pod smaller than the gap exists.
  absl::Status Balance(const std::set<std::string>& grouped) {
    while (BudgetLeft()) {
      std::vector<std::pair<int, int>> load;  // exclusive CPUs held, NUMA id
      for (const NumaCounters& c : state_.Counters()) {
        if (c.user_cpus > 0) load.emplace_back(c.user_cpus - c.free_cpus, c.numa);
      }
      if (load.size() < 2) return absl::OkStatus();
      std::sort(load.begin(), load.end());
      const auto [high, from] = load.back();
      bool moved = false;
      for (const auto& [low, target] : load) {
        if (target == from) break;
        const int gap = high - low;
        // Candidates wholly on `from`, smaller than the gap: nearest half the gap, then smaller.
        std::vector<std::tuple<int, int, std::string>> candidates;
        for (const auto& [uid, allocation] : state_.Pods()) {
          if (IsPinned(uid) || grouped.contains(uid)) continue;
          if (allocation.numa_nodes != std::vector<int>{from}) continue;
          const int size = allocation.ExclusiveCpus().Size();
          if (size == 0 || size >= gap) continue;
          candidates.emplace_back(std::abs(gap - 2 * size), size, uid);
        }
        std::sort(candidates.begin(), candidates.end());
        for (const auto& [unused, size, uid] : candidates) {
          std::optional<PodAllocation> to = MoveTo(uid, target);
          if (!to.has_value()) continue;
          if (absl::Status s = Commit(uid, *std::move(to), "",
                                      fmt::format("balance: NUMA node {} ({} exclusive cpus) to "
                                                  "NUMA node {} ({})", from, high, target, low));
              !s.ok()) {
            return s;
          }
          moved = true;
          break;
        }
        if (moved) break;
      }
      if (!moved) return absl::OkStatus();
    }
    return absl::OkStatus();
  }

  NodeState state_;
  const CpuTopology& topo_;
  PlannerOptions options_;
  std::map<std::string, std::string> pinned_;  // uid -> reason
  Plan plan_;
};

}  // namespace

absl::StatusOr<Plan> PlanMoves(const NodeState& state, std::span<const AffinityGroup> groups,
                               const std::set<std::string>& pinned,
                               const PlannerOptions& options) {
  if (options.max_moves < 0) {
    return absl::InvalidArgumentError(
        fmt::format("rebalancer: max_moves must be >= 0, got {}", options.max_moves));
  }
  Planner planner(state, pinned, options);
  if (absl::Status s = planner.Run(groups); !s.ok()) return s;
  return planner.TakePlan();
}

}  // namespace huygens::rebalance
