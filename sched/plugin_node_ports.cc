// NodePorts: kube-scheduler's plugin of that name (pkg/scheduler/framework/plugins/nodeports):
// a host port conflicts with one in use on the node when protocol and port are equal and the
// host IPs are equal or either is the wildcard ("" or 0.0.0.0).
#include "sched/plugins.h"

namespace huygens::sched {
namespace {

bool Wildcard(const std::string& ip) { return ip.empty() || ip == "0.0.0.0"; }

bool Conflicts(const HostPort& a, const HostPort& b) {
  if (a.port != b.port || a.protocol != b.protocol) return false;
  return a.host_ip == b.host_ip || Wildcard(a.host_ip) || Wildcard(b.host_ip);
}

class NodePorts final : public FilterPlugin {
 public:
  std::string_view Name() const override { return "NodePorts"; }

  Status Filter(CycleState& state, const NodeInfo& node) override {
    if (!node.summary.ports_in_use) return Status::Success();
    for (const HostPort& want : state.pod().host_ports) {
      for (const UsedPort& used : node.used_ports) {
        if (Conflicts(want, used.port)) {
          return Status::Unschedulable(
              "node(s) didn't have free ports for the requested pod ports");
        }
      }
    }
    return Status::Success();
  }
};

}  // namespace

std::unique_ptr<Plugin> NewNodePorts() { return std::make_unique<NodePorts>(); }

}  // namespace huygens::sched
