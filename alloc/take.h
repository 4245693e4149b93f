// Take-by-topology: choosing exactly N CPUs out of an available set, in kubelet's order.
//
// What it is: two free functions matching kubelet's CPU manager (pkg/kubelet/cm/cpumanager,
// cpu_assignment.go, 1.34+):
//   - TakeByTopology: kubelet's takeByTopologyNUMAPacked. Whole NUMA nodes or sockets first
//     (whichever is the larger unit), then whole cores, then single threads, with kubelet's
//     preferences and tie-breaks; CPU sorting `packed` or `spread` (option
//     distribute-cpus-across-cores); option prefer-align-cpus-by-uncorecache.
//   - TakeByTopologyNumaDistributed: kubelet's takeByTopologyNUMADistributed (option
//     distribute-cpus-across-numa), with kubelet's CPU group size and balance scoring over NUMA
//     combinations, and the NUMA nodes kubelet v1.35.4 actually takes from (its kept
//     combinations alias later ones, see below). Unlike kubelet, it always terminates: where
//     kubelet's loop can spin forever (CPU group size 2 with an odd number of free CPUs left on
//     two or more NUMA nodes, or a kept remainder subset that cannot take the remainder), this
//     one hands out the remainder and answers, or fails cleanly.
//
// Both are pure functions of their arguments: deterministic, no state, no I/O.
//
// Thread-safety: thread-compatible (no shared state); any number of threads may call them.
#ifndef HUYGENS_ALLOC_TAKE_H_
#define HUYGENS_ALLOC_TAKE_H_

#include <span>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "alloc/topology_index.h"
#include "cpuset/cpuset.h"
#include "topology/topology.h"

namespace huygens {

// Order of free CPUs within the take (kubelet's CPUSortingStrategy).
enum class CpuSortingStrategy {
  kPacked,  // kubelet CPUSortingStrategyPacked: fill cores before moving to the next
  kSpread,  // kubelet CPUSortingStrategySpread: one thread per core first (option
            // distribute-cpus-across-cores)
};

struct TakeOptions {
  // Default kPacked; kSpread is kubelet's option distribute-cpus-across-cores.
  CpuSortingStrategy cpu_sorting_strategy = CpuSortingStrategy::kPacked;
  // Default false; true is kubelet's option prefer-align-cpus-by-uncorecache: after whole
  // NUMA nodes and sockets, take whole L3 groups, then try to fit the rest into one L3 group
  // (fewest free CPUs first). kubelet's option parser rejects it together with spread sorting
  // or distribute-cpus-across-numa; here it simply applies to TakeByTopology.
  bool prefer_align_by_uncore_cache = false;
  // Default false; true answers exactly as kubelet v1.35.4 on machines whose cores or sockets
  // differ in size (hybrid parts with 2- and 1-thread cores, offline threads). kubelet's
  // isCoreFree and isSocketFree call a unit free when its free CPUs number the machine's
  // average unit size (NumCPUs / NumCores, NumCPUs / NumSockets, integer division), and then
  // take every CPU of that unit (takeFullCores, takeFullSockets), busy ones too: on such
  // machines the answer can hold CPUs that are not in `available` (kubernetes#140498, after
  // 1.35, changes this). False: only the free CPUs of such a unit are taken, and the answer
  // always lies within `available`. On machines with uniform cores and sockets both agree.
  // Also applied to the per-NUMA-node takes of TakeByTopologyNumaDistributed, as kubelet runs
  // takeByTopologyNUMAPacked there; the busy CPUs such a take hands out count towards the
  // request.
  bool whole_units_by_average_size = false;
};

// Exactly `num_cpus` CPUs out of `available`, in kubelet's takeByTopologyNUMAPacked order.
// CPUs of `available` unknown to `topo` or offline are never chosen. The answer lies within
// `available` unless options.whole_units_by_average_size (then it can hold other online CPUs of
// a core or socket kubelet takes whole).
// Errors: InvalidArgument when num_cpus < 0; ResourceExhausted ("not enough cpus available to
// satisfy request: requested=N, available=M", kubelet's wording) when `available` holds fewer
// usable CPUs than requested. num_cpus == 0 gives the empty set.
absl::StatusOr<CpuSet> TakeByTopology(const CpuTopology& topo, const CpuSet& available,
                                      int num_cpus, const TakeOptions& options = {});

// The same on a prebuilt index of the machine. The CpuTopology forms build a TopologyIndex on
// every call, which costs far more than the take itself (tens of µs against a few µs on 384
// CPUs, see take_bench.cc): build the index once per machine and use these forms in loops.
absl::StatusOr<CpuSet> TakeByTopology(const TopologyIndex& index, const CpuSet& available,
                                      int num_cpus, const TakeOptions& options = {});

// Exactly `num_cpus` CPUs out of `available`, spread evenly over the fewest NUMA nodes that can
// hold them, in kubelet's takeByTopologyNUMADistributed order: CPUs are handed out to NUMA
// nodes in groups of `cpu_group_size` (kubelet passes CpusPerCore(), so cores are not split
// across NUMA nodes), the NUMA combination with the best balance (lowest variance of the
// remaining free CPUs per NUMA node) wins, ties go to the first combination in kubelet's
// enumeration order, and each NUMA node's share is taken with TakeByTopology over that node's
// free CPUs (sorting and whole_units_by_average_size as given, no uncore-cache option, as in
// kubelet). A request that is not a multiple of cpu_group_size, or that no NUMA combination
// can take evenly, is packed with TakeByTopology.
// As kubelet v1.35.4 (matches the kubelet oracle, docs/allocate.md): kubelet keeps the best
// combination and the best remainder subset as Go slices that its combination walk goes on
// appending into, so a kept combination of 4, or of 6 to 8, NUMA nodes ends up naming the
// nodes of the last combination walked with the same first 3 (or 5) nodes; the CPUs come from
// the nodes so named. E.g. 32 of 64 free CPUs on 8 NUMA nodes of 8 CPUs: every 4-combination
// balances alike, {0,1,2,3} is kept, and kubelet takes NUMA 0, 1, 2 and 7.
// Always terminates (see the file comment).
// REQUIRES: cpu_group_size >= 1 (InvalidArgument otherwise).
// Errors: as TakeByTopology; Internal ("accounting error, ...", kubelet's wording) when the
// NUMA nodes so named cannot give the CPUs (kubelet then fails the same way, or spins).
absl::StatusOr<CpuSet> TakeByTopologyNumaDistributed(const CpuTopology& topo,
                                                     const CpuSet& available, int num_cpus,
                                                     int cpu_group_size,
                                                     const TakeOptions& options = {});
absl::StatusOr<CpuSet> TakeByTopologyNumaDistributed(const TopologyIndex& index,
                                                     const CpuSet& available, int num_cpus,
                                                     int cpu_group_size,
                                                     const TakeOptions& options = {});

// One step of TakeAligned: exactly `num_cpus` CPUs out of `available` (TakeByTopology or
// TakeByTopologyNumaDistributed with the caller's options).
using TakeFunction =
    absl::FunctionRef<absl::StatusOr<CpuSet>(const CpuSet& available, int num_cpus)>;

// Exactly `num_cpus` CPUs out of `allocatable` for a NUMA affinity, as kubelet's static policy
// takes them (allocateCPUs with getAlignedCPUs): with `numa_nodes` non-empty, first
// min(num_cpus, aligned size) CPUs of the aligned CPUs, which are the allocatable CPUs of those
// NUMA nodes or, with `align_by_socket` (kubelet's option align-by-socket), of every socket
// those NUMA nodes touch; then the rest from the other allocatable CPUs. Both steps use
// `take`. Empty `numa_nodes` (no affinity): take(allocatable, num_cpus).
// Errors: those of `take`.
absl::StatusOr<CpuSet> TakeAligned(const CpuTopology& topo, const CpuSet& allocatable,
                                   int num_cpus, std::span<const int> numa_nodes,
                                   bool align_by_socket, TakeFunction take);

}  // namespace huygens

#endif  // HUYGENS_ALLOC_TAKE_H_
