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
// exclusive CPUs leave it (NodeState::AllocatePod's rule). Memory and devices: see JudgeMemory
// and JudgeKubelet.
#include <algorithm>

#include "alloc/device_manager.h"
#include "alloc/memory_manager.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
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
    if (demand.exclusive_cpus > 0 && node.node.agent_silent) {
      return Status::Unresolvable(std::string(kAgentSilentReason));
    }

    const PodSpec& spec = state.pod().spec;
    const TopologyPolicy policy = spec.topology_policy.value_or(config.topology_policy);
    NumaView view(node, spec.bind_policy.value_or(config.default_bind_policy));

    const int shared_pool = view.TotalFree();
    if (demand.exclusive_cpus > 0) {
      Status s = JudgeExclusive(view, config, policy, facts);
      if (!s.ok()) return s;
    }
    const NodeState* st = node.cpu_state.get();
    const std::map<std::string, int64_t> devices =
        st == nullptr ? std::map<std::string, int64_t>{}
                      : NodeDeviceRequests(st->Config().devices, state.pod().extended_requests);
    const bool place_memory = st != nullptr && st->Memory() != nullptr &&
                              MemoryManagerPlacesPod(spec);
    const bool static_memory = place_memory && st->Config().memory_manager->static_policy;
    if (place_memory && !static_memory) {
      Status s = JudgeMemory(*st, view, policy, spec, demand.exclusive_cpus);
      if (!s.ok()) return s;
    }
    if (static_memory || !devices.empty()) {
      Status s = JudgeKubelet(*st, view, policy, spec, devices, demand.exclusive_cpus);
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

  // The memory rule of NodeState::AllocatePod under the memory manager's None policy (Huygens
  // places the memory), judged on the pod's total memory (kubelet's pod-level requests) and its
  // exclusive CPUs as one request: some NUMA set that can hold the memory offers the CPUs.
  static Status JudgeMemory(const NodeState& st, const NumaView& view, TopologyPolicy policy,
                            const PodSpec& spec, int cpus) {
    const MemoryRequests requests = PodMemoryRequests(spec);
    const bool single = policy == TopologyPolicy::kSingleNumaNode;
    const auto hints = st.MemoryPolicy()->CalculateHints(
        *st.Memory(), spec.uid, requests,
        single ? 1 : MemoryHintSetLimit(st.Topology().NumNumaNodes()));
    std::vector<TopologyHint> sets;
    if (auto it = hints.find(kMemoryResource); it != hints.end() && it->second) {
      sets = *it->second;
    }
    if (sets.empty()) {
      const auto m = requests.find(kMemoryResource);
      return Status::Unschedulable(fmt::format(
          "NUMA: no {} has {} bytes of free memory{}", single ? "NUMA node" : "NUMA node set",
          m == requests.end() ? 0 : m->second, requests.size() > 1 ? " and hugepages" : ""));
    }
    for (const TopologyHint& set : sets) {
      if (view.OfferWithin(policy, set.numa_nodes, cpus) >= cpus) return Status::Success();
    }
    return Status::Unschedulable(fmt::format(
        "NUMA: no {} holds both its memory and {} free CPUs",
        single ? "NUMA node" : "NUMA node set", cpus));
  }

  // What kubelet decides itself, as NodeState::AllocatePod predicts it (the same call,
  // NodeState::PredictKubeletNuma: the topology manager's merge of the device hints and, under
  // the memory manager's Static policy, the memory hints, per admission unit of the node's
  // scope; each container's devices and memory then taken): kubelet must admit the pod, and
  // under single-numa-node or restricted the NUMA nodes of its devices (else of its memory)
  // must offer the exclusive CPUs.
  static Status JudgeKubelet(const NodeState& st, const NumaView& view, TopologyPolicy policy,
                             const PodSpec& spec,
                             const std::map<std::string, int64_t>& devices, int cpus) {
    for (const auto& [resource, n] : devices) {
      const auto free = st.DevicesFree().find(resource);
      const int64_t have = free == st.DevicesFree().end() ? 0 : DeviceCount(free->second);
      if (have < n) {
        return Status::Unschedulable(
            fmt::format("NUMA: {} free {} on the NUMA nodes, {} requested", have, resource, n));
      }
    }
    absl::StatusOr<std::optional<NodeState::KubeletNuma>> kubelet = st.PredictKubeletNuma(spec);
    if (!kubelet.ok()) {
      if (kubelet.status().code() != absl::StatusCode::kResourceExhausted) {
        return Status::Error(std::string(kubelet.status().message()));
      }
      return Status::Unschedulable(fmt::format("NUMA: {}", std::string(kubelet.status().message())));
    }
    const bool must_align =
        policy == TopologyPolicy::kSingleNumaNode || policy == TopologyPolicy::kRestricted;
    if (!kubelet->has_value() || cpus == 0 || !must_align) return Status::Success();
    const std::vector<int>& set = (*kubelet)->CpuNumaNodes();
    if (!set.empty() && view.OfferWithin(policy, set, cpus) < cpus) {
      return Status::Unschedulable(
          fmt::format("NUMA: kubelet puts its {} on NUMA node(s) {}, which lack {} free CPUs",
                      (*kubelet)->devices.empty() ? "memory" : "devices", fmt::join(set, ","), cpus));
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
