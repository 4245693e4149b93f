// Device hints and device choice: kubelet's device manager, on per-NUMA device counts.
//
// What it is: the NUMA side of kubelet's device manager (pkg/kubelet/cm/devicemanager,
// topology_hints.go and manager.go's devicesToAllocate / filterByAffinity, kubelet v1.35.4)
// for device-plugin resources (GPUs, SR-IOV VFs, any resource a device plugin registers),
// reproduced on counts: Huygens knows how many devices of a resource hang off each NUMA node
// (NodeResourceTopology zones, as NFD's topology-updater and kubelet's podresources API report
// them), not their ids.
//
// Kubelet's rules, reproduced:
//   - a resource none of whose devices names a NUMA node has no preference (nil hints); one
//     whose free plus reusable devices number fewer than the request has no alignment possible
//     (an empty list);
//   - otherwise every combination of the machine's NUMA nodes is visited (smallest first, then
//     lexicographic order of ids, kubelet's bitmask.IterateBitMasks), and it is a hint when the
//     free devices on its NUMA nodes plus the pod's reusable ones number at least the request
//     and it contains the NUMA node of every reusable device;
//   - a hint is preferred when its size equals the fewest NUMA nodes whose devices, free or
//     not, could hold the request (all NUMA nodes when none can);
//   - allocation takes the pod's reusable devices first (those of its regular init
//     containers), then free devices on the NUMA nodes of the topology manager's hint, then the
//     rest. Among equally eligible devices kubelet lets the device plugin's
//     GetPreferredAllocation or Go's map order choose; Huygens counts them in kubelet's NUMA
//     node order (filterByAffinity: the hint's NUMA nodes first, each group by fewest free
//     devices, then the lower id).
// Huygens limits: a device is attached to exactly one NUMA node (NRT zones count each device
// in one zone); devices without a NUMA node are not modelled. Hints visit NUMA sets of at most
// max_set_size nodes (kubelet visits every set; its topology manager refuses machines with
// more than max-allowable-numa-nodes NUMA nodes).
//
// Thread-safety: pure functions; any number of threads may call them.
#ifndef HUYGENS_ALLOC_DEVICE_MANAGER_H_
#define HUYGENS_ALLOC_DEVICE_MANAGER_H_

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "alloc/hint.h"

namespace huygens {

// Devices of one resource per NUMA node id. Absent ids and zero counts mean none.
using NumaDeviceCounts = std::map<int, int64_t>;

// The devices of every device-plugin resource of a node: resource name (e.g. "nvidia.com/gpu")
// -> NUMA node id -> devices.
using NodeDevices = std::map<std::string, NumaDeviceCounts>;

// kubelet's generateDeviceTopologyHints for `request` devices of one resource.
//   numa_nodes - the machine's NUMA node ids (kubelet's numaNodes: every NUMA node, with or
//                without devices), any order, no duplicates;
//   total      - every device of the resource (kubelet's allDevices), per NUMA node;
//   available  - its free devices (healthy and not allocated);
//   reusable   - devices of the pod's regular init containers the container may reuse
//                (kubelet's devicesToReuse); disjoint from `available`.
// Returns the hints in kubelet's order (see the file comment); empty when no set qualifies.
// REQUIRES: request >= 0; max_set_size >= 1.
std::vector<TopologyHint> DeviceHints(std::span<const int> numa_nodes,
                                      const NumaDeviceCounts& total,
                                      const NumaDeviceCounts& available,
                                      const NumaDeviceCounts& reusable, int64_t request,
                                      int max_set_size = 64);

// kubelet's GetTopologyHints / GetPodTopologyHints for the requested resources (resource name
// -> devices; resources absent from `total` are not device-plugin resources of this node and
// are skipped, as kubelet's isDevicePluginResource does): per resource nullopt when the node
// has none of its devices on a NUMA node, an empty list when free + reusable devices are fewer
// than the request, else DeviceHints. `available` and `reusable` are looked up per resource
// (absent = none).
std::map<std::string, ProviderHints> DeviceProviderHints(
    std::span<const int> numa_nodes, const NodeDevices& total, const NodeDevices& available,
    const NodeDevices& reusable, const std::map<std::string, int64_t>& requests,
    int max_set_size = 64);

// kubelet's devicesToAllocate on counts for one resource: `request` devices, reusable ones
// first, then free ones on the NUMA nodes of `affinity` (empty = no affinity), then the other
// free ones, in the order of the file comment. Returns the devices taken per NUMA node, split
// into those taken from `reusable` and those taken from `available`.
// Errors: ResourceExhausted, as kubelet's "requested number of devices unavailable for
// <resource>. Requested: N, Available: M" when reusable + available < request.
struct DeviceTake {
  NumaDeviceCounts from_reusable;
  NumaDeviceCounts from_available;
  friend bool operator==(const DeviceTake&, const DeviceTake&) = default;
};
absl::StatusOr<DeviceTake> TakeDevices(const std::string& resource,
                                       const NumaDeviceCounts& available,
                                       const NumaDeviceCounts& reusable, int64_t request,
                                       const std::vector<int>& affinity);

// The entries of `requests` (resource name -> amount) that name a resource of `devices` with a
// positive amount: what kubelet's device manager allocates (isDevicePluginResource).
std::map<std::string, int64_t> NodeDeviceRequests(const NodeDevices& devices,
                                                  const std::map<std::string, int64_t>& requests);

// Adds sign * counts to into[resource], NUMA node by NUMA node (sign +1 gives devices back,
// -1 takes them).
void AddDevices(NodeDevices& into, const std::string& resource, const NumaDeviceCounts& counts,
                int sign);

// Sum of the counts.
int64_t DeviceCount(const NumaDeviceCounts& counts);

// The NUMA node ids with a positive count, ascending.
std::vector<int> DeviceNumaNodes(const NumaDeviceCounts& counts);

}  // namespace huygens

#endif  // HUYGENS_ALLOC_DEVICE_MANAGER_H_
