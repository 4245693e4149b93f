#include "sched/framework.h"

#include "alloc/cpu_plan.h"

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
  f.requests = ComputePodRequests(pod);
  f.qos = QosOf(spec);
  f.cpu_policy = EffectiveCpuPolicy(spec);
  f.demand_allocatable = CpuDemandOf(spec, NodeMode::kAllocatable);
  f.demand_isolated = CpuDemandOf(spec, NodeMode::kIsolated);
  f.units.clear();
  if (f.demand_allocatable.exclusive_cpus == 0 && f.demand_isolated.exclusive_cpus == 0) return;
  // NodeState's per-container plan (alloc/cpu_plan.h) on each node mode.
  for (const auto* list : {&spec.init_containers, &spec.containers}) {
    for (const ContainerSpec& c : *list) {
      const ContainerCpuPlan allocatable = PlanContainer(spec, c, NodeMode::kAllocatable);
      ExclusiveUnit u;
      u.cpus_allocatable = allocatable.exclusive_cpus;
      u.cpus_isolated = PlanContainer(spec, c, NodeMode::kIsolated).exclusive_cpus;
      u.init = allocatable.regular_init();
      if (u.cpus_allocatable > 0 || u.cpus_isolated > 0) f.units.push_back(u);
    }
  }
}

}  // namespace huygens::sched
