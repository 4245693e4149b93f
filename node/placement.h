// Placement: where a new pod's containers go on one node (exclusive CPUs, memory NUMA nodes,
// devices), and where kubelet puts its memory and devices, decided over a const NodeState.
// NodeState::AllocatePod records what PlacePod returns.
#ifndef HUYGENS_NODE_PLACEMENT_H_
#define HUYGENS_NODE_PLACEMENT_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "alloc/device_manager.h"
#include "alloc/memory_manager.h"
#include "alloc/pod.h"
#include "node/allocation.h"
#include "node/node_state.h"

namespace huygens {

// A pod placed on a node, not yet recorded.
struct PodPlacement {
  PodAllocation allocation;
  // The node's memory state with the pod's memory taken; set when the node places memory
  // for this pod (NodeState::Memory() then changes to it).
  std::optional<MemoryManagerState> memory;
  // The node's free devices after kubelet takes the pod's, and the devices the pod holds; set
  // when kubelet's device manager gives the pod devices.
  std::optional<NodeDevices> devices_free;
  NodeDevices devices_held;
};

// Places `pod` on `node` as NodeState::AllocatePod documents (the algorithm is at the
// definition). `near_numa_nodes`: NUMA nodes of the pod's affinity group, preferred.
// Errors (the message names the pod, the container and the reason): AlreadyExists (the pod's
// uid is on the node); InvalidArgument (empty uid, a container name twice); ResourceExhausted
// (not enough CPUs, no NUMA alignment under the topology policy, memory or devices that do not
// fit, or a shared pool left below the shared requests).
// Thread-safety: reads `node` only; safe beside other const calls on it.
absl::StatusOr<PodPlacement> PlacePod(const NodeState& node, const PodSpec& pod,
                                      const std::vector<int>& near_numa_nodes);

// What kubelet decides for a pod before its containers start, as Huygens predicts it: where
// its memory manager (Static policy) puts each container's memory and where its device manager
// takes each container's devices.
struct KubeletPlacement {
  bool places_memory = false;   // kubelet's memory manager (Static) places the pod's memory
  bool places_devices = false;  // kubelet's device manager gives the pod devices
  std::map<std::string, std::vector<int>> mems_of;     // container -> memory NUMA nodes
  std::map<std::string, std::vector<int>> devices_of;  // container -> device NUMA nodes
  NodeDevices held;                                    // the pod's devices
  MemoryManagerState memory;  // the node's memory state after (when places_memory)
  NodeDevices devices_free;   // the node's free devices after
};

// kubelet's decision for `pod` on `node` now; nullopt when kubelet places neither its memory
// nor its devices. Errors: ResourceExhausted when kubelet's topology manager would refuse the
// pod (TopologyAffinityError), or its memory or devices do not fit.
// Thread-safety: reads `node` only.
absl::StatusOr<std::optional<KubeletPlacement>> PredictKubelet(const NodeState& node,
                                                               const PodSpec& pod);

}  // namespace huygens

#endif  // HUYGENS_NODE_PLACEMENT_H_
