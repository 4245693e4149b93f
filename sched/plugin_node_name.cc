// NodeName: kube-scheduler's plugin of that name: spec.nodeName pins the pod to one node.
#include "sched/plugins.h"

namespace huygens::sched {
namespace {

class NodeName final : public FilterPlugin {
 public:
  std::string_view Name() const override { return "NodeName"; }

  Status Filter(CycleState& state, const NodeInfo& node) override {
    const std::string& want = state.pod().node_name;
    if (want.empty() || want == node.node.name) return Status::Success();
    return Status::Unresolvable("node(s) didn't match the requested node name");
  }
};

}  // namespace

std::unique_ptr<Plugin> NewNodeName() { return std::make_unique<NodeName>(); }

}  // namespace huygens::sched
