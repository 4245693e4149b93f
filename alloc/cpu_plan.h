// The per-container CPU plan of a pod: which containers Huygens manages on a node, which of
// them get exclusive CPUs (how many) and what the shared ones ask of the shared pool. The one
// place this is worked out: NodeState allocates by it (node/node_state.h, AllocatePod), the
// scheduler's per-pod facts count by it (sched/framework.h, ComputePodFacts), and both see the
// same pod-level demand (CpuDemandOf).
//
// Rules (DESIGN.md, "Pools on a node"; kubelet's static policy where Huygens matches it):
//   - kAllocatable mode: with cpu-policy none (EffectiveCpuPolicy) no container is managed;
//     with exclusive, a container takes ExclusiveCpus(pod, container) CPUs (kubelet's
//     guaranteedCPUs) when > 0; every other managed container is shared and asks its cpu
//     request (a missing request defaults to the limit: EffectiveRequest).
//   - kIsolated mode: only containers asking for huygens.io/isolated-cpu are managed, and not
//     under cpu-policy none; under cpu-policy shared they are shared (asking isolated_cpus *
//     1000 millicores), else exclusive with isolated_cpus CPUs (the annotation alone decides: a
//     pod requesting only the extended resource is never Guaranteed).
//   - Pod level (kubelet's podGuaranteedCPUs): a regular init container's CPUs are reused by
//     the containers after it; restartable init containers (sidecars) run beside them.
//
// Units: CPUs are whole logical CPUs; shared requests are millicores.
// Thread-safety: pure functions over plain data.
#ifndef HUYGENS_ALLOC_CPU_PLAN_H_
#define HUYGENS_ALLOC_CPU_PLAN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "alloc/pod.h"

namespace huygens {

// DESIGN.md "Pools on a node": how the user pool is formed.
enum class NodeMode {
  kAllocatable,  // user pool = all online CPUs minus the system pool; pods request `cpu`
  kIsolated,     // user pool = the kernel's isolated CPUs; pods request huygens.io/isolated-cpu
};
const char* ToString(NodeMode mode);                        // "allocatable" | "isolated"
std::optional<NodeMode> ParseNodeMode(const std::string& s);  // nullopt when unknown

// How one container is treated on a node of a given mode (the rules above).
struct ContainerCpuPlan {
  const ContainerSpec* spec = nullptr;  // the container; points into the planned PodSpec
  bool managed = false;                 // appears in the pod's allocation
  int exclusive_cpus = 0;               // > 0: exclusive, that many CPUs
  int64_t shared_milli = 0;             // shared containers: what they ask of the shared pool

  // A regular (non-restartable) init container: it has finished before the next one starts.
  bool regular_init() const { return spec->init && !spec->restartable; }
};

// Whole CPUs that `milli` millicores need: ceil(milli / 1000).
inline int CeilCpus(int64_t milli) { return static_cast<int>((milli + 999) / 1000); }

// What container `c` asks of the shared pool when it is shared, in millicores: its cpu request
// (EffectiveRequest), or in kIsolated mode isolated_cpus * 1000.
int64_t SharedCpuMilli(const ContainerSpec& c, NodeMode mode);

// The plan of container `c` of `pod`. REQUIRES: `c` outlives the plan.
ContainerCpuPlan PlanContainer(const PodSpec& pod, const ContainerSpec& c, NodeMode mode);

// The plans of every container, init containers first, each list in spec order. The plans
// point into `pod`, which must outlive them.
std::vector<ContainerCpuPlan> PlanPod(const PodSpec& pod, NodeMode mode);

// Exclusive CPUs the pod holds at most at once (kubelet's podGuaranteedCPUs over the plans):
// the larger of (each regular init container plus the restartable init containers before it)
// and (all restartable init containers plus all app containers).
int PodLevelExclusiveCpus(const std::vector<ContainerCpuPlan>& plans);

// What one pod asks of a node, as NodeState counts it (no CPU walks).
struct CpuDemand {
  int exclusive_cpus = 0;    // PodLevelExclusiveCpus
  int64_t shared_milli = 0;  // sum of the shared containers' CPU requests
};

// The demand of `pod` on a node of `mode`.
CpuDemand CpuDemandOf(const PodSpec& pod, NodeMode mode);

}  // namespace huygens

#endif  // HUYGENS_ALLOC_CPU_PLAN_H_
