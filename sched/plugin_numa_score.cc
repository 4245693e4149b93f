// NumaScore: where on the node's NUMA nodes the pod's exclusive CPUs would go, scored 0..100.
// Three parts, from NumaView (counters only):
//   fewer NUMA nodes - 100 / (NUMA nodes the allocator needs): 100 for one, 50 for two, ...;
//   pack or spread   - the node's NodeConfig::numa_strategy: most-allocated (pack) scores the
//                      share of the chosen NUMA nodes' user CPUs in use after the pod, high is
//                      better; least-allocated (spread) scores the share left free;
//   affinity group   - (pods with huygens.io/affinity-group whose group already runs somewhere)
//                      100 when a NUMA node holding group members on this node can take the
//                      pod, else 100 x 10 / (distance from the nearest NUMA node that can to
//                      the nearest member's), 60 when the members here hold no exclusive CPUs,
//                      0 on nodes without members.
// Score = (3 x fewer + 2 x pack/spread) / 5, or (3 x fewer + 2 x pack/spread + 5 x group) / 10
// when the group part applies. Pods without exclusive CPUs and NUMA-blind nodes score 0.
#include <algorithm>
#include <limits>

#include "sched/numa_view.h"
#include "sched/plugins.h"

namespace huygens::sched {
namespace {

struct GroupSlot : CycleState::Data {
  const AffinityGroupPlacement* placement = nullptr;
};

class NumaScore final : public PreScorePlugin, public ScorePlugin {
 public:
  explicit NumaScore(const ClusterCache* cache) : cache_(cache) {}
  std::string_view Name() const override { return "NumaScore"; }

  // A node without members of the pod's group scores differently once the group runs
  // somewhere (see Score): whether it does is part of the key.
  void AppendEquivalenceKey(const CycleState& state, std::string& key) const override {
    const std::string& group = state.pod().spec.affinity_group;
    key += group.empty() || cache_->AffinityGroup(group) == nullptr ? "g0|" : "g1|";
  }

  Status PreScore(CycleState& state, std::span<const NodeInfo* const> feasible) override {
    (void)feasible;
    const std::string& group = state.pod().spec.affinity_group;
    state.Slot<GroupSlot>(slot()).placement = group.empty() ? nullptr : cache_->AffinityGroup(group);
    return Status::Success();
  }

  int64_t Score(CycleState& state, const NodeInfo& node) override {
    const NodeSummary& config = node.summary;
    if (!config.has_cpu_state) return 0;
    const int cpus = state.facts().Demand(config.mode).exclusive_cpus;
    if (cpus == 0) return 0;
    const PodSpec& spec = state.pod().spec;
    const TopologyPolicy policy = spec.topology_policy.value_or(config.topology_policy);
    const NumaView view(node, spec.bind_policy.value_or(config.default_bind_policy));
    view.Choose(policy, config.numa_strategy, cpus, chosen_);
    if (chosen_.empty()) return 0;

    const int64_t fewer = kMaxNodeScore / static_cast<int64_t>(chosen_.size());
    int64_t user = 0, used_after = 0;
    for (int i : chosen_) {
      user += view.at(i).user;
      used_after += view.at(i).user - view.at(i).free;
    }
    used_after = std::min(user, used_after + cpus);
    const int64_t fill = user == 0 ? 0 : kMaxNodeScore * used_after / user;
    const int64_t pack = config.numa_strategy == NumaStrategy::kLeastAllocated
                             ? kMaxNodeScore - fill
                             : fill;

    const GroupSlot* g = state.SlotIfSet<GroupSlot>(slot());
    if (g == nullptr || g->placement == nullptr) return (3 * fewer + 2 * pack) / 5;
    return (3 * fewer + 2 * pack + 5 * GroupScore(*g->placement, node, view, cpus)) / 10;
  }

 private:
  int64_t GroupScore(const AffinityGroupPlacement& placement, const NodeInfo& node,
                     const NumaView& view, int cpus) const {
    auto here = placement.find(&node);
    if (here == placement.end()) return 0;
    const CpuTopology& topo = node.cpu_state->Topology();
    int best = std::numeric_limits<int>::max();
    bool any_numa = false;
    for (const auto& [member_numa, count] : here->second) {
      if (member_numa < 0 || count == 0) continue;
      any_numa = true;
      for (int i = 0; i < view.size(); ++i) {
        if (view.at(i).offer < cpus) continue;
        best = std::min(best, topo.Distance(view.at(i).numa, member_numa));
      }
    }
    if (!any_numa) return 60;
    if (best == std::numeric_limits<int>::max()) return 0;
    if (best <= CpuTopology::kLocalDistance) return kMaxNodeScore;
    return kMaxNodeScore * CpuTopology::kLocalDistance / best;
  }

  const ClusterCache* cache_;
  std::vector<int> chosen_;  // scratch
};

}  // namespace

std::unique_ptr<Plugin> NewNumaScore(const ClusterCache* cache) {
  return std::make_unique<NumaScore>(cache);
}

}  // namespace huygens::sched
