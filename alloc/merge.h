// Hint merging: kubelet's topology manager, as a pure function.
//
// What it is: the merge step of kubelet's topology manager (pkg/kubelet/cm/topologymanager,
// policy*.go and numa_info.go, 1.34): the hints of every provider (CPU manager, memory manager,
// device manager) for one admission unit (a container for scope `container`, the pod for scope
// `pod`: see AdmissionUnits in alloc/hints.h) are merged into one NUMA affinity, and the
// policy decides whether the unit is admitted.
//
// Kubelet's rules, reproduced exactly:
//   - per provider, per resource: nullopt ("no preference") becomes one preferred hint with no
//     affinity; [] ("no alignment possible") one non-preferred hint with no affinity; a provider
//     whose map is empty has no preference for any resource;
//   - every combination (cross product, providers in order, resources in name order) is merged
//     by AND-ing the affinities (no affinity = every NUMA node); the merged hint is preferred
//     when every hint in it is preferred and all the affinities in it are equal; combinations
//     whose AND is empty are dropped;
//   - the best merged hint: preferred beats non-preferred; between preferred hints the
//     narrower wins (fewer NUMA nodes, then the smaller bitmask, i.e. the lower ids), or, with
//     prefer-closest-numa-nodes (not under single-numa-node), among equally many NUMA nodes the
//     one with the smaller average distance (ties: the smaller bitmask); between non-preferred
//     hints, the one closest to (not above) the largest of the providers' narrowest hint sizes;
//     nothing mergeable gives every NUMA node, not preferred;
//   - none: no affinity, admitted. best-effort: admitted. restricted: admitted when preferred.
//     single-numa-node: only no-affinity and one-node preferred hints are merged; a result equal
//     to every NUMA node becomes no affinity; admitted when preferred.
//
// Thread-safety: pure functions; any number of threads may call them.
#ifndef HUYGENS_ALLOC_MERGE_H_
#define HUYGENS_ALLOC_MERGE_H_

#include <map>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "alloc/hint.h"
#include "alloc/hints.h"
#include "alloc/pod.h"

namespace huygens {

// kubelet's --topology-manager-policy-options, parsed.
struct TopologyManagerOptions {
  // "prefer-closest-numa-nodes". Default false: among equally wide preferred hints, the lower
  // NUMA ids win. True: the smaller average NUMA distance wins (needs distances).
  bool prefer_closest_numa_nodes = false;
  // "max-allowable-numa-nodes". Default 8 (kubelet's); kubelet rejects smaller values. A machine
  // with more NUMA nodes is refused (kubelet refuses to start) under every policy but `none`.
  int max_allowable_numa_nodes = kDefaultMaxAllowableNumaNodes;

  friend bool operator==(const TopologyManagerOptions&, const TopologyManagerOptions&) = default;
};

// Parses --topology-manager-policy-options as kubelet's NewPolicyOptions does: keys
// "prefer-closest-numa-nodes" (a Go boolean: 1, t, T, TRUE, true, True, 0, f, F, FALSE, false,
// False) and "max-allowable-numa-nodes" (a decimal integer >= 8).
// Errors: InvalidArgument naming the option (unknown key, bad value, value below 8).
absl::StatusOr<TopologyManagerOptions> ParseTopologyManagerOptions(
    const std::map<std::string, std::string>& options);

// The topology manager's answer for one admission unit.
struct MergeResult {
  TopologyHint hint;  // empty numa_nodes = no affinity (kubelet's nil NUMANodeAffinity)
  bool admit = true;  // false: kubelet rejects the pod with TopologyAffinityError

  friend bool operator==(const MergeResult&, const MergeResult&) = default;
};

// Merges `providers` (one map per hint provider, resource name -> ProviderHints) under
// `policy` (see the file comment for the rules).
//   numa_nodes - the machine's NUMA node ids (kubelet: every NUMA node cadvisor reports, with or
//                without CPUs); any order, no duplicates; ids >= 0. Affinities naming other
//                nodes are cut to these (kubelet ANDs them with every node).
//   distances  - NUMA distances, from -> to -> distance; read only with
//                prefer_closest_numa_nodes, which then needs every pair of numa_nodes.
// Errors (InvalidArgument): numa_nodes empty, duplicated or negative; more than 64 NUMA nodes;
// max_allowable_numa_nodes < 8; with a policy other than `none`, more NUMA nodes than
// max_allowable_numa_nodes ("topology manager: unsupported on machines with more than 8 NUMA
// Nodes (this machine has 9); raise the option max-allowable-numa-nodes", as kubelet refuses
// to start); prefer_closest_numa_nodes without a distance for some pair.
absl::StatusOr<MergeResult> MergeHints(
    TopologyPolicy policy, const TopologyManagerOptions& options, std::span<const int> numa_nodes,
    const std::map<int, std::map<int, int>>& distances,
    const std::vector<std::map<std::string, ProviderHints>>& providers);

}  // namespace huygens

#endif  // HUYGENS_ALLOC_MERGE_H_
