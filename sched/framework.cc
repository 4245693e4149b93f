#include "sched/framework.h"

namespace huygens::sched {

std::string Status::Message() const {
  std::string out;
  for (const std::string& r : reasons_) {
    if (!out.empty()) out += ", ";
    out += r;
  }
  return out;
}

void ComputePodFacts(const Pod& pod, PodFacts& f) {
  const PodSpec& spec = pod.spec;
  f.requests = ComputePodRequests(spec);
  f.qos = QosOf(spec);
  f.cpu_policy = EffectiveCpuPolicy(spec);
  f.demand_allocatable = CpuDemandOf(spec, NodeMode::kAllocatable);
  f.demand_isolated = CpuDemandOf(spec, NodeMode::kIsolated);
  f.units.clear();
  if (f.demand_allocatable.exclusive_cpus == 0 && f.demand_isolated.exclusive_cpus == 0) return;
  // The same rule as NodeState's per-container plan (node/node_state.h, AllocatePod).
  const bool isolated_exclusive =
      spec.cpu_policy != CpuPolicy::kShared && spec.cpu_policy != CpuPolicy::kNone;
  for (const auto* list : {&spec.init_containers, &spec.containers}) {
    for (const ContainerSpec& c : *list) {
      ExclusiveUnit u;
      u.cpus_allocatable = f.cpu_policy == CpuPolicy::kExclusive ? ExclusiveCpus(spec, c) : 0;
      u.cpus_isolated = isolated_exclusive ? static_cast<int>(c.isolated_cpus) : 0;
      u.init = c.init && !c.restartable;
      if (u.cpus_allocatable > 0 || u.cpus_isolated > 0) f.units.push_back(u);
    }
  }
}

}  // namespace huygens::sched
