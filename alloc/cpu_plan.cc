#include "alloc/cpu_plan.h"

#include <algorithm>

namespace huygens {
const char* ToString(NodeMode mode) {
  return mode == NodeMode::kIsolated ? "isolated" : "allocatable";
}

std::optional<NodeMode> ParseNodeMode(const std::string& s) {
  if (s == "allocatable") return NodeMode::kAllocatable;
  if (s == "isolated") return NodeMode::kIsolated;
  return std::nullopt;
}

int64_t SharedCpuMilli(const ContainerSpec& c, NodeMode mode) {
  if (mode == NodeMode::kIsolated) return c.isolated_cpus * 1000;
  return EffectiveRequest(c.cpu_request_milli, c.cpu_limit_milli);
}

ContainerCpuPlan PlanContainer(const PodSpec& pod, const ContainerSpec& c, NodeMode mode) {
  ContainerCpuPlan plan;
  plan.spec = &c;
  if (mode == NodeMode::kIsolated) {
    if (c.isolated_cpus <= 0 || pod.cpu_policy == CpuPolicy::kNone) return plan;
    plan.managed = true;
    if (pod.cpu_policy == CpuPolicy::kShared) {
      plan.shared_milli = SharedCpuMilli(c, mode);
    } else {
      plan.exclusive_cpus = static_cast<int>(c.isolated_cpus);
    }
    return plan;
  }
  const CpuPolicy policy = EffectiveCpuPolicy(pod);
  if (policy == CpuPolicy::kNone) return plan;
  plan.managed = true;
  if (policy == CpuPolicy::kExclusive) plan.exclusive_cpus = ExclusiveCpus(pod, c);
  if (plan.exclusive_cpus == 0) plan.shared_milli = SharedCpuMilli(c, mode);
  return plan;
}

std::vector<ContainerCpuPlan> PlanPod(const PodSpec& pod, NodeMode mode) {
  std::vector<ContainerCpuPlan> plans;
  plans.reserve(pod.init_containers.size() + pod.containers.size());
  for (const ContainerSpec& c : pod.init_containers) plans.push_back(PlanContainer(pod, c, mode));
  for (const ContainerSpec& c : pod.containers) plans.push_back(PlanContainer(pod, c, mode));
  return plans;
}

int PodLevelExclusiveCpus(const std::vector<ContainerCpuPlan>& plans) {
  int long_running = 0;
  int init_peak = 0;
  for (const ContainerCpuPlan& p : plans) {
    if (p.regular_init()) {
      init_peak = std::max(init_peak, long_running + p.exclusive_cpus);
    } else {
      long_running += p.exclusive_cpus;
    }
  }
  return std::max(init_peak, long_running);
}

CpuDemand CpuDemandOf(const PodSpec& pod, NodeMode mode) {
  const std::vector<ContainerCpuPlan> plans = PlanPod(pod, mode);
  CpuDemand d;
  d.exclusive_cpus = PodLevelExclusiveCpus(plans);
  for (const ContainerCpuPlan& p : plans) d.shared_milli += p.shared_milli;
  return d;
}

}  // namespace huygens
