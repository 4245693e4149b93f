// NodeTopology: what a node's NodeResourceTopology object tells a scheduler that reads it the
// way scheduler-plugins' NodeResourceTopologyMatch does.
//
// What it is: the parts of the NRT object (topology/nrt.h) that plugin reads: the kubelet's
// topology manager policy and scope (the `topologyManagerPolicy` / `topologyManagerScope`
// attributes; no `topologyManagerMaxNUMANodes`, so readers take their default), and per zone of
// type `Node` (NUMA node) the `available` cpu, memory, hugepages and device-plugin resources
// and the zone costs (NUMA distances). Resources are kept as numbers rather than quantity
// strings: cpu in millicores, memory and hugepages in bytes, devices as counts.
//
// Invariants: `zones` are in ascending NUMA id; `costs` has zones.size()^2 entries.
//
// Thread-safety: plain data, shared read-only between copies of a Node.
#ifndef HUYGENS_SCHED_NODE_TOPOLOGY_H_
#define HUYGENS_SCHED_NODE_TOPOLOGY_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "alloc/pod.h"

namespace huygens::sched {

struct NodeTopology {
  // One zone of type `Node`, named node-<numa>.
  struct Zone {
    int numa = 0;
    int64_t cpu_available_milli = 0;     // resources[cpu].available
    int64_t memory_available_bytes = 0;  // resources[memory].available
    // The other resources the zone lists, as NFD's topology-updater reports them: device-plugin
    // resources in the zones of their devices' NUMA nodes (counts) and, under kubelet's memory
    // manager Static, hugepages-<size> (bytes): resource name -> available. A resource no zone
    // lists is node-level only.
    std::map<std::string, int64_t> extended_available;
  };

  TopologyPolicy policy = TopologyPolicy::kNone;      // kubelet's --topology-manager-policy
  TopologyScope scope = TopologyScope::kContainer;    // kubelet's --topology-manager-scope
  std::vector<Zone> zones;
  // costs[i * zones.size() + j]: the cost (NUMA distance) from zones[i] to zones[j].
  std::vector<int> costs;

  int Cost(size_t i, size_t j) const { return costs[i * zones.size() + j]; }
};

}  // namespace huygens::sched

#endif  // HUYGENS_SCHED_NODE_TOPOLOGY_H_
