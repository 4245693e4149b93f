// TaintToleration: kube-scheduler's plugin of that name (pkg/scheduler/framework/plugins/
// tainttoleration). Filter: the first NoSchedule/NoExecute taint the pod does not tolerate
// rejects the node. Score: untolerated PreferNoSchedule taints, fewer is better.
#include <algorithm>

#include "fmt/format.h"
#include "sched/plugins.h"
#include "sched/toleration.h"

namespace huygens::sched {
namespace {

class TaintToleration final : public FilterPlugin, public ScorePlugin {
 public:
  std::string_view Name() const override { return "TaintToleration"; }

  Status Filter(CycleState& state, const NodeInfo& node) override {
    if (!node.summary.hard_taints) return Status::Success();
    const Taint* taint = FirstUntoleratedHardTaint(state.pod().tolerations, node.node.taints);
    if (taint == nullptr) return Status::Success();
    return Status::Unresolvable(fmt::format("node(s) had untolerated taint {{{}: {}}}", taint->key, taint->value));
  }

  int64_t Score(CycleState& state, const NodeInfo& node) override {
    int64_t untolerated = 0;
    if (!node.summary.prefer_taints) return untolerated;
    for (const Taint& taint : node.node.taints) {
      if (taint.effect != TaintEffect::kPreferNoSchedule) continue;
      // Only tolerations with no effect or PreferNoSchedule count (kube-scheduler's
      // getAllTolerationPreferNoSchedule).
      bool tolerated = false;
      for (const Toleration& t : state.pod().tolerations) {
        if ((!t.effect.has_value() || *t.effect == TaintEffect::kPreferNoSchedule) &&
            ToleratesTaint(t, taint)) {
          tolerated = true;
          break;
        }
      }
      if (!tolerated) ++untolerated;
    }
    return untolerated;
  }

  // kube-scheduler's DefaultNormalizeScore(MaxNodeScore, reverse=true).
  void NormalizeScore(CycleState& state, std::span<int64_t> scores) override {
    (void)state;
    int64_t max = 0;
    for (int64_t s : scores) max = std::max(max, s);
    for (int64_t& s : scores) s = max == 0 ? kMaxNodeScore : kMaxNodeScore - kMaxNodeScore * s / max;
  }
};

}  // namespace

std::unique_ptr<Plugin> NewTaintToleration() { return std::make_unique<TaintToleration>(); }

}  // namespace huygens::sched
