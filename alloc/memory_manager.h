// MemoryManagerPolicy: kubelet's memory manager `Static` policy, one container at a time.
//
// What it is: the per-NUMA-node memory and hugepages bookkeeping of kubelet's memory manager
// with --memory-manager-policy=Static (pkg/kubelet/cm/memorymanager/policy_static.go, kubelet
// v1.35.4), reproduced rule for rule so that Huygens can predict what kubelet admits and where
// it puts a container's memory (`cpuset.mems`):
//   - only containers of Guaranteed pods get memory blocks; a pod with pod-level resources
//     gets none (kubelet skips it);
//   - the resources are `memory` and every `hugepages-<size>` the container requests; each
//     NUMA node has per resource: total, systemReserved (kubelet's --reserved-memory),
//     allocatable (total - systemReserved; for `memory` also minus the node's hugepages),
//     reserved (held by containers) and free (allocatable - reserved);
//   - hints: every non-empty set of NUMA nodes (smallest first, then lexicographic order) whose
//     allocatable covers every requested resource; a single NUMA node that is part of a
//     multi-NUMA group is no hint; a set of several NUMA nodes is no hint when one of its nodes
//     holds a single-NUMA allocation or belongs to a different group; the set's free memory
//     (plus what the pod's init containers hold on exactly that set) must cover the request;
//     preferred = as few NUMA nodes as the smallest set whose allocatable would do;
//   - Allocate: the topology manager's hint (or, without one, the best of the container's own
//     hints: preferred first, then fewest NUMA nodes, then the lowest bitmask), extended to the
//     narrowest hint that contains it when its free memory falls short; refused when that hint
//     mixes single-NUMA and multi-NUMA use ("a NUMA node cannot have both single and cross NUMA
//     node allocations"); the request is then taken from the hint's NUMA nodes in ascending id
//     order, each giving what it has free; every NUMA node of the hint counts one assignment per
//     resource and joins the group (`cells`) of the hint;
//   - memory of a pod's regular init containers is reused by the containers after it that land
//     on the same NUMA set (kubelet's initContainersReusableMemory, which it keeps for the last
//     pod allocated only: MemoryManagerState::reusable holds the same);
//   - RemoveContainer gives the memory back, in ascending id order, and a NUMA node with no
//     assignment left leaves its group.
//
// State: the policy holds none; MemoryManagerState (kubelet's memory_manager_state content plus
// kubelet's in-memory reusable map) is passed in and updated.
//
// Huygens limits: NUMA ids 0..63. CalculateHints visits sets of at most max_set_size NUMA nodes
// (kubelet visits all 2^n - 1 sets; its topology manager refuses machines with more than 8 NUMA
// nodes unless max-allowable-numa-nodes is raised); Allocate, like kubelet, visits every set
// when it needs the default or extended hint (callers bound the NUMA node count: `huygens
// allocate` takes at most 16). A resource the machine state lacks
// on a NUMA node counts as a table of zeros (kubelet would dereference nil there).
//
// Thread-safety: a MemoryManagerPolicy is immutable; calls modify only the state they are given
// (callers serialise access to one state).
#ifndef HUYGENS_ALLOC_MEMORY_MANAGER_H_
#define HUYGENS_ALLOC_MEMORY_MANAGER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "alloc/hint.h"
#include "alloc/pod.h"
#include "topology/topology.h"

namespace huygens {

// kMemoryResource and HugepageResourceName (the resource names): topology/topology.h.

// One resource on one NUMA node, in bytes (kubelet's state.MemoryTable).
struct MemoryTable {
  uint64_t total = 0;
  uint64_t system_reserved = 0;
  uint64_t allocatable = 0;
  uint64_t reserved = 0;
  uint64_t free = 0;
  friend bool operator==(const MemoryTable&, const MemoryTable&) = default;
};

// One NUMA node (kubelet's state.NUMANodeState).
struct NumaMemoryState {
  // Memory blocks naming this node, counted once per block (per container and resource).
  int number_of_assignments = 0;
  std::map<std::string, MemoryTable> memory_map;  // resource name -> table
  // The NUMA nodes this node is grouped with, itself included, ascending; {id} when single.
  std::vector<int> cells;
  friend bool operator==(const NumaMemoryState&, const NumaMemoryState&) = default;
};

// One container's memory of one resource (kubelet's state.Block).
struct MemoryBlock {
  std::vector<int> numa_affinity;  // ascending NUMA ids
  std::string type;                // resource name
  uint64_t size = 0;               // bytes
  friend bool operator==(const MemoryBlock&, const MemoryBlock&) = default;
};

// kubelet's memory manager state for one node.
struct MemoryManagerState {
  std::map<int, NumaMemoryState> machine;  // NUMA id -> node state
  // pod UID -> container name -> its blocks, one per requested resource, in resource-name order.
  std::map<std::string, std::map<std::string, std::vector<MemoryBlock>>> assignments;
  // kubelet's initContainersReusableMemory: pod UID -> NUMA set -> resource -> bytes that later
  // containers of the pod may reuse. Holds at most the pod allocated last.
  std::map<std::string, std::map<std::vector<int>, std::map<std::string, uint64_t>>> reusable;
  friend bool operator==(const MemoryManagerState&, const MemoryManagerState&) = default;
};

// Bytes per resource name ("memory", "hugepages-2Mi", ...).
using MemoryRequests = std::map<std::string, uint64_t>;
// kubelet's --reserved-memory: NUMA id -> resource name -> bytes.
using ReservedMemory = std::map<int, std::map<std::string, uint64_t>>;

// Huygens' bound on the NUMA sets it enumerates for memory (kubelet visits all 2^n - 1): every
// set on machines of up to 8 NUMA nodes (where kubelet's topology manager runs), sets of at most
// 4 NUMA nodes above that.
inline int MemoryHintSetLimit(int num_numa_nodes) {
  return num_numa_nodes <= 8 ? num_numa_nodes : 4;
}

// kubelet's findBestHint over memory hints: preferred beats non-preferred, then the narrower
// (fewer NUMA nodes, then the smaller bitmask). The hint kubelet's memory manager takes when the
// topology manager gives none. nullopt for an empty list.
std::optional<TopologyHint> FindBestMemoryHint(const std::vector<TopologyHint>& hints);

// True when kubelet's memory manager (Static) gives the pod memory blocks: the pod is
// Guaranteed and sets no pod-level resources.
bool MemoryManagerPlacesPod(const PodSpec& pod);

// A container's memory-manager requests (kubelet's getRequestedResources): its memory request
// (the limit when unset) and each hugepages request, zero amounts included.
MemoryRequests ContainerMemoryRequests(const ContainerSpec& container);

// A pod's memory-manager requests for scope `pod` (kubelet's getPodRequestedResources): per
// resource, the larger of (app containers + restartable init containers) and the largest step
// of the init sequence (a regular init container plus the restartable ones before it).
MemoryRequests PodMemoryRequests(const PodSpec& pod);

class MemoryManagerPolicy {
 public:
  // Builds the policy for `topo`'s NUMA nodes (every one, with or without CPUs) with kubelet's
  // --reserved-memory. Errors (InvalidArgument): no `memory` reserved on any NUMA node when
  // require_system_reserved (kubelet: "you should specify the system reserved memory"; Huygens
  // passes false to account memory by the same rules on nodes whose kubelet runs the None
  // policy); a reservation on a NUMA node
  // the machine lacks; more than 64 NUMA nodes or a NUMA id above 63; a reservation larger
  // than the resource's total on that node.
  static absl::StatusOr<MemoryManagerPolicy> Create(const CpuTopology& topo,
                                                    ReservedMemory reserved,
                                                    bool require_system_reserved = true);

  const ReservedMemory& Reserved() const { return reserved_; }

  // A fresh state (kubelet's getDefaultMachineState): every NUMA node with one table per
  // hugepage size configured there (even 0 pages) and one for `memory`, nothing reserved.
  MemoryManagerState InitialState() const;

  // kubelet's GetTopologyHints for one container: {} (no preference) for a pod that is not
  // Guaranteed or uses pod-level resources; the hints regenerated from the container's blocks
  // when it has some (each block's NUMA set, preferred; {} when the blocks do not match the
  // request); else the hints of CalculateHints, one list per requested resource.
  std::map<std::string, ProviderHints> ContainerHints(const MemoryManagerState& state,
                                                      const PodSpec& pod,
                                                      const std::string& container_name,
                                                      int max_set_size = 64) const;

  // kubelet's GetPodTopologyHints (scope `pod`): as ContainerHints over PodMemoryRequests;
  // the first container (init containers first) that has blocks decides a regeneration.
  std::map<std::string, ProviderHints> PodHints(const MemoryManagerState& state,
                                                const PodSpec& pod,
                                                int max_set_size = 64) const;

  // kubelet's calculateHints for `requests` of `pod` (its reusable memory counts), visiting NUMA
  // sets of at most max_set_size nodes. One entry per requested resource, all alike; an empty
  // map when no set qualifies or nothing is requested.
  std::map<std::string, ProviderHints> CalculateHints(const MemoryManagerState& state,
                                                      const std::string& pod_uid,
                                                      const MemoryRequests& requests,
                                                      int max_set_size = 64) const;

  // kubelet's Allocate for one container (see the file comment). `affinity`: the topology
  // manager's merged hint (empty numa_nodes = no affinity, with the merge's preferred flag);
  // nullopt is the same as {{}, false}. Returns the container's blocks (resource-name order),
  // empty for a container that gets none; a container that already has blocks gets them back
  // and `state` changes only in its reusable map, as in kubelet.
  // Errors (state unchanged; messages as kubelet's, prefixed "[memorymanager] "): NotFound
  // (container not in pod); ResourceExhausted ("failed to get the default NUMA affinity, no
  // NUMA nodes with enough memory is available", "failed to find NUMA nodes to extend the
  // current topology hint", "failed to find the default preferred hint", "failed to find the
  // extended preferred hint", "preferred hint violates NUMA node allocation").
  absl::StatusOr<std::vector<MemoryBlock>> Allocate(MemoryManagerState& state,
                                                    const PodSpec& pod,
                                                    const std::string& container_name,
                                                    const std::optional<TopologyHint>& affinity) const;

  // Records blocks decided elsewhere (kubelet's checkpoint, a pod's huygens.io/allocation) the
  // way kubelet's validateState accumulates a restored state: each block's size is taken from
  // its NUMA nodes in ascending id order, each giving what it has free (no checks: memory
  // beyond what is free is recorded as far as free memory goes), and every NUMA node of a
  // block counts one assignment and joins the block's group. Replaces the container's blocks
  // if it had some. Blocks naming NUMA nodes outside the state are ignored.
  void Restore(MemoryManagerState& state, const std::string& pod_uid,
               const std::string& container_name, std::vector<MemoryBlock> blocks) const;

  // kubelet's RemoveContainer: drops the container's blocks and gives their memory back.
  // Unknown pods/containers are ignored.
  void RemoveContainer(MemoryManagerState& state, const std::string& pod_uid,
                       const std::string& container_name) const;

  // The NUMA nodes of a container's memory (the union of its blocks' affinities, ascending;
  // empty when it has none): what kubelet writes to cpuset.mems.
  static std::vector<int> MemoryNumaNodes(const MemoryManagerState& state,
                                          const std::string& pod_uid,
                                          const std::string& container_name);

 private:
  explicit MemoryManagerPolicy(const CpuTopology& topo, ReservedMemory reserved);

  // NUMA id -> (MemTotal, hugepages: page size -> pages), from the topology.
  std::map<int, std::pair<uint64_t, std::map<uint64_t, uint64_t>>> nodes_;
  ReservedMemory reserved_;
};

}  // namespace huygens

#endif  // HUYGENS_ALLOC_MEMORY_MANAGER_H_
