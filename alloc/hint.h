// TopologyHint: one NUMA-affinity hint, the currency of kubelet's topology manager.
//
// What it is: a set of NUMA node ids that a resource could be aligned to, and whether that set
// is preferred (kubelet: the narrowest sets that satisfy the request are preferred). Matches
// kubelet's topologymanager.TopologyHint{NUMANodeAffinity, Preferred}.
//
// Invariants: numa_nodes is sorted ascending and has no duplicates. An empty numa_nodes is
// only meaningful as "no alignment possible" in a merged result (kubelet's nil affinity).
//
// Thread-safety: plain data.
#ifndef HUYGENS_ALLOC_HINT_H_
#define HUYGENS_ALLOC_HINT_H_

#include <optional>
#include <vector>

namespace huygens {

struct TopologyHint {
  std::vector<int> numa_nodes;  // sorted ascending, unique
  bool preferred = false;

  friend bool operator==(const TopologyHint&, const TopologyHint&) = default;
};

// What one hint provider (cpu, memory, a device) says for one resource, as in kubelet:
//   - std::nullopt          -> "no preference" (kubelet: nil hints for the resource);
//   - an empty vector       -> "no alignment possible" (kubelet: an empty, non-nil list);
//   - otherwise             -> the hints that can satisfy the request.
using ProviderHints = std::optional<std::vector<TopologyHint>>;

}  // namespace huygens

#endif  // HUYGENS_ALLOC_HINT_H_
