// CPU NUMA hints: which NUMA node combinations can hold an exclusive CPU request.
//
// What it is: kubelet's static CPU policy hint generation (pkg/kubelet/cm/cpumanager,
// policy_static.go, generateCPUTopologyHints, 1.34), split into a counts-based core and a
// CpuSet front end, plus the request sizes kubelet feeds it (guaranteedCPUs per container,
// podGuaranteedCPUs per pod for scope `pod`).
//
// Kubelet's rule, reproduced exactly:
//   - every combination of NUMA nodes (those with CPUs) is visited, smallest first, then in
//     lexicographic order of ids (kubelet's bitmask.IterateBitMasks order, which is also the
//     order of the returned hints);
//   - a combination is a hint when the CPUs available on it (plus the pod's reusable CPUs, which
//     must all lie inside it) number at least the request;
//   - a hint is preferred when its size equals the minimum number of NUMA nodes whose
//     allocatable CPUs (free or not) could hold the request at all; with align-by-socket, a hint
//     whose NUMA nodes span the minimum number of sockets is preferred too.
// Huygens limit: only combinations of at most max_allowable_numa_nodes NUMA nodes are visited
// (kubelet's topology manager refuses to start on larger machines, so it never asks for more).
//
// Thread-safety: pure functions; any number of threads may call them.
#ifndef HUYGENS_ALLOC_HINTS_H_
#define HUYGENS_ALLOC_HINTS_H_

#include <map>
#include <span>
#include <string>
#include <vector>

#include "alloc/hint.h"
#include "alloc/pod.h"
#include "cpuset/cpuset.h"
#include "topology/topology.h"

namespace huygens {

// CPU counts of one NUMA node, as the scheduler keeps them per node (no CPU walking).
struct NumaCounts {
  int numa = 0;         // NUMA node id
  int allocatable = 0;  // CPUs of the node that exclusive requests may ever use
  int available = 0;    // of those, CPUs free now (for hints: free + reusable)
};

// kubelet's default for the topology manager option max-allowable-numa-nodes.
inline constexpr int kDefaultMaxAllowableNumaNodes = 8;

// Hints for `num_cpus` exclusive CPUs from per-NUMA counts (see the file comment for the rule).
// Entries with allocatable <= 0 are ignored (kubelet only knows NUMA nodes that have CPUs);
// order of `counts` does not matter; duplicate NUMA ids are summed.
// Preferred = size equal to the minimum number of NUMA nodes whose `allocatable` sums to at
// least num_cpus (kubelet's minAffinitySize; all NUMA nodes when none suffices).
// Returns hints in kubelet's order; empty when no combination can hold the request.
// REQUIRES: num_cpus >= 0; max_allowable_numa_nodes >= 1.
std::vector<TopologyHint> CpuHintsFromCounts(std::span<const NumaCounts> counts, int num_cpus,
                                             int max_allowable_numa_nodes =
                                                 kDefaultMaxAllowableNumaNodes);

// Hints for `num_cpus` exclusive CPUs, exactly as kubelet's static policy computes them.
//   topo      - the CPUs exclusive requests may use; its online CPUs per NUMA node are the
//               "allocatable" counts. Pass the machine topology for kubelet's exact hints
//               (kubelet counts every online CPU, reserved ones included) or
//               topo.Restrict(user pool) to count the user pool only.
//   available - free CPUs (kubelet: default cpuset minus reserved);
//   reusable  - CPUs of this pod's init containers that the container may reuse (kubelet's
//               cpusToReuse); a combination that does not contain all of their NUMA nodes is
//               no hint; they count towards the request as kubelet counts them (added to the
//               available count even if they overlap `available`).
//   align_by_socket - kubelet's static policy option align-by-socket: also prefer hints whose
//               NUMA nodes span the minimum number of sockets
//               (ceil(minAffinitySize / (NUMA nodes per socket))).
// CPUs of available/reusable unknown to `topo` or offline are ignored.
// REQUIRES: num_cpus >= 0.
std::vector<TopologyHint> CpuHints(const CpuTopology& topo, const CpuSet& available,
                                   const CpuSet& reusable, int num_cpus,
                                   bool align_by_socket = false,
                                   int max_allowable_numa_nodes = kDefaultMaxAllowableNumaNodes);

// The CPU hint provider's answer for one request, as the topology manager receives it:
// {"cpu": nullopt} ("no preference", kubelet returns nil) when num_cpus == 0, else
// {"cpu": CpuHints(...)} (an empty list means "no alignment possible").
std::map<std::string, ProviderHints> CpuProviderHints(
    const CpuTopology& topo, const CpuSet& available, const CpuSet& reusable, int num_cpus,
    bool align_by_socket = false, int max_allowable_numa_nodes = kDefaultMaxAllowableNumaNodes);

// Exclusive CPUs of a whole pod, kubelet's podGuaranteedCPUs (used for scope `pod`):
// max(largest init-container need, sum of app containers + sum of restartable init
// containers), where an init container's need is its own exclusive CPUs plus those of the
// restartable init containers started before it. Per container, ExclusiveCpus (alloc/pod.h).
// A pod with pod-level CPU resources gets 0 (kubelet 1.34's CPU manager does not support them
// and gives such pods no hints); AdmissionUnits gives its containers 0 likewise.
int PodExclusiveCpus(const PodSpec& pod);

// One admission unit of the topology manager for a given scope: the whole pod (scope `pod`,
// container == "", cpus == PodExclusiveCpus) or one container (scope `container`, init
// containers first, then app containers, in spec order, cpus == ExclusiveCpus). The topology
// manager merges hints once per unit; for scope `container` the pod is admitted only if every
// unit is. Callers build each unit's providers (CpuProviderHints with `cpus`, memory, devices)
// and call MergeHints (alloc/merge.h).
struct AdmissionUnit {
  std::string container;  // "" for the pod as a whole
  bool init = false;      // an init container (scope `container` only)
  int cpus = 0;           // exclusive CPUs to align (0 = the CPU provider has no preference)

  friend bool operator==(const AdmissionUnit&, const AdmissionUnit&) = default;
};
std::vector<AdmissionUnit> AdmissionUnits(const PodSpec& pod, TopologyScope scope);

}  // namespace huygens

#endif  // HUYGENS_ALLOC_HINTS_H_
