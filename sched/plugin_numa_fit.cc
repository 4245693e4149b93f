// NumaFit: would the node admit the pod's exclusive CPUs the way its topology manager would,
// and can Huygens' allocator honour the pod's bind policy there. Judged on NodeState's per-NUMA
// counters (NumaView), never on CPU sets. See plugins.h for the reasons.
//
// Per node with CPU state: the topology policy is the pod's annotation, else the node's; the
// scope and mode are the node's. Scope `pod`: one request of the pod's peak exclusive CPUs
// (kubelet's podGuaranteedCPUs). Scope `container`: one request per exclusive container in
// admission order; after each, the figures are reduced where the allocator would likely place
// it (regular init containers are not subtracted: their CPUs are reused by the containers after
// them). Finally the shared pool must keep ceil(shared requests / 1000) CPUs after the pod's
// exclusive CPUs leave it (NodeState::AllocatePod's rule).
#include "fmt/format.h"
#include "sched/numa_view.h"
#include "sched/plugins.h"

namespace huygens::sched {
namespace {

class NumaFit final : public FilterPlugin {
 public:
  std::string_view Name() const override { return "NumaFit"; }

  Status Filter(CycleState& state, const NodeInfo& node) override {
    const NodeSummary& config = node.summary;
    if (!config.has_cpu_state) return Status::Success();
    const PodFacts& facts = state.facts();
    const CpuDemand& demand = facts.Demand(config.mode);
    if (demand.exclusive_cpus == 0 && demand.shared_milli == 0) return Status::Success();

    const PodSpec& spec = state.pod().spec;
    const TopologyPolicy policy = spec.topology_policy.value_or(config.topology_policy);
    NumaView view(node, spec.bind_policy.value_or(config.default_bind_policy));

    const int shared_pool = view.TotalFree();
    if (demand.exclusive_cpus > 0) {
      Status s = JudgeExclusive(view, config, policy, facts);
      if (!s.ok()) return s;
    }
    const int64_t shared_milli = config.shared_requested_milli + demand.shared_milli;
    if (static_cast<int64_t>(shared_pool - demand.exclusive_cpus) * 1000 < shared_milli) {
      return Status::Unschedulable(
          demand.exclusive_cpus > 0
              ? fmt::format("NUMA: not enough free CPUs for {} exclusive CPUs",
                            demand.exclusive_cpus)
              : std::string("NUMA: shared pool too small"));
    }
    return Status::Success();
  }

 private:
  static Status JudgeExclusive(NumaView& view, const NodeSummary& config, TopologyPolicy policy,
                               const PodFacts& facts) {
    if (view.bind() == BindPolicy::kFullCores) {
      for (const ExclusiveUnit& u : facts.units) {
        const int cpus = Cpus(u, config.mode);
        if (cpus % view.threads_per_core() != 0) {
          return Status::Unschedulable(fmt::format(
              "NUMA: full-cores: {} CPUs is not a whole number of cores", cpus));
        }
      }
    }
    if (config.topology_scope == TopologyScope::kPod) {
      return Judge(view, policy, facts.Demand(config.mode).exclusive_cpus);
    }
    for (size_t i = 0; i < facts.units.size(); ++i) {
      const ExclusiveUnit& u = facts.units[i];
      const int cpus = Cpus(u, config.mode);
      if (cpus == 0) continue;
      Status s = Judge(view, policy, cpus);
      if (!s.ok()) return s;
      if (!u.init && i + 1 < facts.units.size()) view.Place(policy, config.numa_strategy, cpus);
    }
    return Status::Success();
  }

  static int Cpus(const ExclusiveUnit& u, NodeMode mode) {
    return mode == NodeMode::kIsolated ? u.cpus_isolated : u.cpus_allocatable;
  }

  static Status Judge(const NumaView& view, TopologyPolicy policy, int cpus) {
    if (!view.KubeletAdmits(policy, cpus)) {
      if (policy == TopologyPolicy::kSingleNumaNode) {
        return Status::Unschedulable(
            fmt::format("NUMA: no single NUMA node fits {} CPUs", cpus));
      }
      return Status::Unschedulable(fmt::format("NUMA: no set of {} NUMA nodes fits {} CPUs",
                                               view.PreferredSize(cpus), cpus));
    }
    if (view.TotalFree() < cpus) {
      return Status::Unschedulable(
          fmt::format("NUMA: not enough free CPUs for {} exclusive CPUs", cpus));
    }
    if (!view.AllocatorFits(policy, cpus)) {
      switch (view.bind()) {
        case BindPolicy::kFullCores:
          return Status::Unschedulable(
              fmt::format("NUMA: not enough free whole cores for {} CPUs", cpus));
        case BindPolicy::kSpreadCores:
          return Status::Unschedulable(
              fmt::format("NUMA: not enough cores with a free thread for {} CPUs", cpus));
        case BindPolicy::kPacked:
          return Status::Unschedulable(
              fmt::format("NUMA: capacity limits leave too few CPUs for {} CPUs", cpus));
      }
    }
    return Status::Success();
  }
};

}  // namespace

std::unique_ptr<Plugin> NewNumaFit() { return std::make_unique<NumaFit>(); }

}  // namespace huygens::sched
