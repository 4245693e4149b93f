// NodeUnschedulable: kube-scheduler's plugin of that name (pkg/scheduler/framework/plugins/
// nodeunschedulable): a cordoned node takes only pods tolerating its unschedulable taint.
#include "sched/plugins.h"
#include "sched/toleration.h"

namespace huygens::sched {
namespace {

class NodeUnschedulable final : public FilterPlugin {
 public:
  std::string_view Name() const override { return "NodeUnschedulable"; }

  Status Filter(CycleState& state, const NodeInfo& node) override {
    if (!node.summary.unschedulable) return Status::Success();
    static const Taint kUnschedulableTaint{"node.kubernetes.io/unschedulable", "",
                                           TaintEffect::kNoSchedule};
    for (const Toleration& t : state.pod().tolerations) {
      if (ToleratesTaint(t, kUnschedulableTaint)) return Status::Success();
    }
    return Status::Unresolvable("node(s) were unschedulable");
  }
};

}  // namespace

std::unique_ptr<Plugin> NewNodeUnschedulable() { return std::make_unique<NodeUnschedulable>(); }

}  // namespace huygens::sched
