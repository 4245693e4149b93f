// NodeResourcesBalancedAllocation: kube-scheduler v1.35.4's plugin of that name (pkg/scheduler/
// framework/plugins/noderesources/balanced_allocation.go) with its default resources, cpu and
// memory, weight 1 each. For each resource the node has, the share of its allocatable that the
// node's pods and this pod request (actual requests, not the non-zero ones; capped at 1); the
// score is (1 - the shares' standard deviation) * kMaxNodeScore, truncated. With two resources
// the deviation is half their difference; with one it is 0. A pod requesting neither skips the
// plugin (kube-scheduler's PreScore Skip for a BestEffort pod).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "sched/plugins.h"

namespace huygens::sched {
namespace {

class BalancedAllocation final : public ScorePlugin {
 public:
  std::string_view Name() const override { return "NodeResourcesBalancedAllocation"; }

  int64_t Score(CycleState& state, const NodeInfo& node) override {
    if (SkipScore(state)) return 0;
    const PodRequests& want = state.facts().requests;
    const NodeSummary& n = node.summary;
    double shares[2];
    int count = 0;
    auto add = [&](int64_t requested, int64_t allocatable) {
      if (allocatable <= 0) return;
      shares[count++] = std::min(1.0, static_cast<double>(requested) / static_cast<double>(allocatable));
    };
    add(n.cpu_requested_milli + want.cpu_milli, n.cpu_allocatable_milli);
    add(n.memory_requested_bytes + want.memory_bytes, n.memory_allocatable_bytes);
    const double deviation = count == 2 ? std::abs(shares[0] - shares[1]) / 2 : 0.0;
    return static_cast<int64_t>((1 - deviation) * static_cast<double>(kMaxNodeScore));
  }

  bool SkipScore(const CycleState& state) const override {
    const PodRequests& want = state.facts().requests;
    return want.cpu_milli == 0 && want.memory_bytes == 0;
  }
};

}  // namespace

std::unique_ptr<Plugin> NewBalancedAllocation() { return std::make_unique<BalancedAllocation>(); }

}  // namespace huygens::sched
