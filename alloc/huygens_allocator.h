// Huygens' own exclusive-CPU allocator: NUMA set choice, capacity factors, L3 groups and bind
// policies. These are Huygens' choices, not kubelet's (kubelet-exact behaviour lives in
// alloc/take.h, alloc/static_policy.h, alloc/hints.h and alloc/merge.h).
//
// What it does, in order:
//   1. Usable CPUs: `available` ∩ online CPUs of the topology (∩ the CPUs of
//      `within_numa_nodes` when given).
//   2. What each NUMA node offers, in CPUs: floor(capacity factor × its usable CPUs) (factor
//      1 when absent), further limited by the bind policy's unit: packed counts CPUs,
//      full-cores counts the CPUs of whole free cores (all online threads usable) that fit
//      under that bound, spread-cores counts cores with at least one usable thread (one CPU
//      each).
//   3. NUMA set: the fewest NUMA nodes whose offers add up to the request, under the topology
//      policy: single-numa-node allows one node only; restricted allows only sets of the
//      preferred size (PreferredNumaCount over each node's `allocatable_cpus`: the user pool
//      for Huygens' nodes, every online CPU for kubelet's own sizing); best-effort and none
//      allow any size. Among sets of that size: first the most compact set - the fewest
//      sockets, then the smallest sum of the NUMA distances between its nodes (so two nodes at
//      distance 12 beat two at 32, and a set never crosses a socket when one socket has room) -
//      then the waste of its shares (alloc/waste.h's Rank: fewer cores shared with another
//      pod, then, packing, a clean fit; spreading, fewer stranded CPUs), then the numa_strategy
//      score (most-allocated: the smallest total offer, best fit;
//      least-allocated: the largest total offer; nearest: the smallest sum, over the set, of
//      each node's distance to the nearest of near_numa_nodes, then as most-allocated), then
//      the fewest L3 groups the allocation would span, then the lowest NUMA ids. With more than
//      16 candidate NUMA nodes the search is not run: the set is the nodes with the largest
//      offers (then lowest ids).
//   4. Shares: with one node, the whole request; with several, nodes in decreasing offer
//      (then increasing id; under nearest, the nodes nearest to near_numa_nodes first) divide
//      it by alloc/waste.h's SplitShares: each first gives what its whole free cores (and its
//      unshared half cores, below) hold, then each gives the rest of its offer, until the request is
//      met, so a share splits a core with another pod only when the set's whole cores cannot
//      hold the request.
//   5. Inside each node: the fewest L3 groups that can hold the share (one group: the one
//      offering least that still fits; several: largest offers first), then the bind policy:
//        packed       - kubelet's order (TakeByTopology, alloc/take.h) over the whole free
//                       cores in those L3 groups and the free threads of unshared half
//                       cores (cores no other pod holds part of: the rest is held by the same
//                       pod, pod_cpus, or lies outside the user pool, allocatable_cpus) when
//                       they hold the share (an odd CPU then takes such a thread, as kubelet's
//                       take fills the core with the fewest free threads first, else a thread
//                       of a free core; never the last free thread of a core another pod
//                       holds), else over every free CPU there (then, with one L3
//                       group per NUMA node and one NUMA node, exactly what kubelet's static
//                       policy would take there);
//        full-cores   - whole free cores only, lowest core id first; never splits a core;
//        spread-cores - one thread (the lowest usable) per core, cores whose threads are all
//                       free first, then cores already partly used, lowest core id first; the
//                       siblings stay available for other pods.
//
// Properties (tested on random topologies and states): the result is a subset of `available`,
// has exactly num_cpus CPUs, is deterministic, never splits a core under full-cores, never
// takes two threads of one core under spread-cores, lies in one NUMA node under
// single-numa-node and in a preferred-size set under restricted; every call terminates.
//
// Thread-safety: ExclusiveAllocator is immutable after construction; any number of threads may
// call Allocate on one instance. AllocateExclusive is a pure function.
#ifndef HUYGENS_ALLOC_HUYGENS_ALLOCATOR_H_
#define HUYGENS_ALLOC_HUYGENS_ALLOCATOR_H_

#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "alloc/pod.h"
#include "alloc/topology_index.h"
#include "cpuset/cpuset.h"
#include "topology/topology.h"

namespace huygens {

// How Huygens chooses among equally small NUMA sets (Huygens' choice; see the file comment).
enum class NumaStrategy {
  kMostAllocated,   // "most-allocated": pack (best fit: the set offering the fewest CPUs)
  kLeastAllocated,  // "least-allocated": balance (the set offering the most CPUs)
  kNearest,         // "nearest": closest by NUMA distance to near_numa_nodes (affinity groups)
};
const char* ToString(NumaStrategy s);
std::optional<NumaStrategy> ParseNumaStrategy(const std::string& s);

// One exclusive request.
struct ExclusiveRequest {
  int num_cpus = 0;  // CPUs to allocate; 0 gives an empty allocation
  // packed | full-cores | spread-cores (DESIGN.md, huygens.io/bind-policy). Default packed.
  BindPolicy bind_policy = BindPolicy::kPacked;
  // Which NUMA sets are acceptable. Default single-numa-node.
  TopologyPolicy topology_policy = TopologyPolicy::kSingleNumaNode;
  // Among equally small NUMA sets. Default most-allocated.
  NumaStrategy numa_strategy = NumaStrategy::kMostAllocated;
  // kNearest: the NUMA nodes to be near (e.g. where the pod's affinity group already runs).
  // Empty = no preference (kNearest then behaves as kMostAllocated). Ignored otherwise.
  std::vector<int> near_numa_nodes;
  // Per-NUMA capacity factor in (0,1]; a node missing here has factor 1. A node with factor f
  // offers only floor(f × its free CPUs) to this request.
  std::map<int, double> capacity;
  // When set, only these NUMA nodes may be used (e.g. the pod-scope decision). Default: all.
  std::optional<std::vector<int>> within_numa_nodes;
  // Restricted: the CPUs that size the preferred NUMA set (PreferredNumaCount over each NUMA
  // node's share of them). Huygens passes the node's user pool, so a set that the user pool
  // can fill is preferred even when reserved CPUs make one node look big enough (kubelet#132187).
  // Default (unset): every online CPU, kubelet's topology-manager sizing (reserved included).
  // Under packed it also tells a core split with the system pool: a free thread whose siblings
  // are all outside allocatable_cpus shares its core with no pod, and is taken like a pod_cpus
  // half core (below) rather than breaking a whole free core (kubelet's take fills it first).
  // Unset, every CPU missing from `available` is taken to be another pod's.
  std::optional<CpuSet> allocatable_cpus;
  // CPUs the same pod already holds (its containers placed before this one). A free thread of
  // a core whose other threads are all free or in pod_cpus shares that core with no other pod:
  // under packed such threads count like whole free cores and are taken first, so a pod's
  // containers fill each other's half cores (app 13 + proxy 1 on two threads of one core)
  // instead of leaving a half core that another pod must share. Default: none.
  CpuSet pod_cpus;
};

// The preferred number of NUMA nodes for `num_cpus` exclusive CPUs: the fewest nodes whose
// counts in `cpus_per_numa` (one entry per NUMA node, any order) add up to num_cpus, taking the
// largest first; all of them (cpus_per_numa.size()) when even all together fall short; 0 when
// there are none. This is kubelet's minAffinitySize, and the one rule for "preferred" that the
// scheduler's NUMA filter (sched/numa_view.h, over user-pool counts) and the allocator at
// Reserve (ExclusiveRequest::allocatable_cpus) both call, so they never disagree.
// Pure; allocates nothing for up to 64 NUMA nodes.
int PreferredNumaCount(std::span<const int> cpus_per_numa, int num_cpus);

// What one NUMA node offers an exclusive request of bind policy `bind` (step 2 of the file
// comment), from its counts alone: `free_cpus` free user-pool CPUs, `free_cores` cores with
// every thread free, `threads_per_core` (>= 1) and capacity `factor` in (0,1] (1: none).
// floor(factor x free_cpus), then packed: all of it; full-cores: the whole free cores' CPUs
// under that bound; spread-cores: cores with a free thread (free_cores + the partly free cores,
// exact for up to 2 threads per core, an upper bound above). Exact for packed and full-cores;
// the allocator itself walks the cores. The one rule the scheduler's NUMA view
// (sched/numa_view.h) and the cache's NUMA slots (sched/cache.h, NumaSlots) both use. Pure.
int NumaOfferFromCounts(BindPolicy bind, int threads_per_core, int free_cpus, int free_cores,
                        double factor);

// The result: the CPUs and the NUMA nodes they lie in (sorted ascending).
struct ExclusiveAllocation {
  CpuSet cpus;
  std::vector<int> numa_nodes;

  friend bool operator==(const ExclusiveAllocation&, const ExclusiveAllocation&) = default;
};

// A topology indexed for fast repeated allocation (per core, per NUMA node, per L3 group).
// Build one per node and topology version; Allocate is then the hot path the scheduler uses.
class ExclusiveAllocator {
 public:
  explicit ExclusiveAllocator(CpuTopology topo);

  const CpuTopology& Topology() const { return topo_; }
  // The topology's index, for kubelet's takes on the same machine (alloc/take.h).
  const TopologyIndex& Index() const { return index_; }

  // See AllocateExclusive.
  absl::StatusOr<ExclusiveAllocation> Allocate(const CpuSet& available,
                                               const ExclusiveRequest& request) const;

  // An in-place resize of a container that holds `current` to request.num_cpus CPUs
  // (kubelet's in-place resize of a Guaranteed pod under the static policy, KEP-5554: the CPUs
  // a running container has are kept).
  //   - grow: `current` plus request.num_cpus - |current| CPUs that Allocate chooses out of
  //     `available` (minus current's cores' siblings under spread-cores, so no core holds two
  //     of its threads), inside the NUMA nodes of `current`; only under topology policy none
  //     or best-effort, when those nodes cannot give them all, do they give what they can
  //     (the largest count Allocate meets there) and other NUMA nodes the rest;
  //   - shrink: the subset of `current` that kubelet's take-by-topology (TakeByTopology,
  //     alloc/take.h) packs best; under full-cores the new count must be whole cores;
  //   - same size: `current`.
  // request.within_numa_nodes is ignored (the NUMA nodes of `current` take its place); the
  // other fields mean what they mean for Allocate. `available` should not contain `current`.
  // Returns the new cpuset (a superset or subset of `current`).
  // Errors: InvalidArgument (num_cpus < 1, current empty or with CPUs that are not online);
  // FailedPrecondition (full-cores and a count that is not whole cores, on a machine whose
  // cores all have the same number of threads); ResourceExhausted (grow: not enough CPUs
  // under the topology policy and bind policy); messages of the last two start with "grow: "
  // or "shrink: ".
  absl::StatusOr<CpuSet> Resize(const CpuSet& current, const CpuSet& available,
                                const ExclusiveRequest& request) const;

 private:
  friend class AllocationRun;

  CpuTopology topo_;
  TopologyIndex index_;
  bool uniform_threads_ = true;  // every online core has the same number of online threads
};

// Exactly `request.num_cpus` CPUs out of `available`, chosen as the file comment describes.
// Equivalent to ExclusiveAllocator(topo).Allocate(available, request).
// Errors:
//   InvalidArgument - num_cpus < 0; a capacity factor outside (0,1] or for an unknown NUMA
//     node; an unknown NUMA node in near_numa_nodes or within_numa_nodes;
//   ResourceExhausted - the request cannot be met, with the reason, e.g.
//     "no single NUMA node has 24 free CPUs (largest: 18 on node 1)",
//     "full-cores: 5 CPUs is not a whole number of cores (2 threads per core)",
//     "restricted: no set of 2 NUMA nodes has 40 free CPUs (largest: 36 on nodes 0,1)".
absl::StatusOr<ExclusiveAllocation> AllocateExclusive(const CpuTopology& topo,
                                                      const CpuSet& available,
                                                      const ExclusiveRequest& request);

}  // namespace huygens

#endif  // HUYGENS_ALLOC_HUYGENS_ALLOCATOR_H_
