// CpuAccumulator: the state of one take-by-topology, and kubelet's orderings over it.
//
// What it is: kubelet's cpuAccumulator (pkg/kubelet/cm/cpumanager/cpu_assignment.go) over a
// TopologyIndex: the CPUs still free for this take (a bitset over the index's hierarchical
// local order, so any core, L3 group or NUMA node count is a few popcounts), free counts of
// NUMA nodes and sockets kept up to date on every take, the number of CPUs still needed, and
// the CPUs taken so far. Nothing is allocated per CPU. The phases of kubelet's takeByTopologyNUMAPacked are member functions; each
// computes its order once when it starts, as kubelet does, and then walks it.
//
// Orderings (kubelet's, "fewest free CPUs first, then lowest id"):
//   - NUMA-first machines (sockets >= NUMA nodes): NUMA nodes by free count; sockets by free
//     count within each NUMA node in that order; cores within each socket in that order.
//   - socket-first machines: sockets by free count; NUMA nodes by free count within each socket;
//     cores within each NUMA node.
//   - cores by free count then id; CPUs of a core ascending (packed), or all free CPUs of a socket
//     ascending (spread, kubelet's CPUSortingStrategySpread).
//   - L3 groups by free count within each NUMA node in NUMA order.
// Units judged "free" by kubelet's average-size test (cores and sockets on machines whose
// units differ in size): with whole units (TakeOptions::whole_units_by_average_size, kubelet's
// behaviour) every CPU of the unit is taken, busy ones too, as kubelet does; without, only its
// free CPUs. A CPU listed twice is taken once.
//
// Invariants: Result() holds distinct CPUs of the index; Needed() + Result().size() is the
// request; without whole units every CPU of Result() was free.
//
// Thread-safety: a local object; not shared.
#ifndef HUYGENS_ALLOC_CPU_ACCUMULATOR_H_
#define HUYGENS_ALLOC_CPU_ACCUMULATOR_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "alloc/take.h"
#include "alloc/topology_index.h"

namespace huygens {

class CpuAccumulator {
 public:
  // A list of units (NUMA nodes, sockets, L3 groups): inline for machines of up to 16.
  using UnitList = absl::InlinedVector<int, 16>;

  // Free CPUs: the members of `available` that are online CPUs of `index`.
  // REQUIRES: num_cpus >= 0.
  CpuAccumulator(const TopologyIndex& index, const CpuSet& available, int num_cpus);
  // Free CPUs: the CPUs free in `parent` that lie in the given units, whose word masks are
  // `masks` (e.g. parent's index NumaMasks() and one NUMA node, or NumaL3PairMasks() and some
  // (NUMA node, L3 group) pairs). Word-wise. REQUIRES: num_cpus >= 0.
  CpuAccumulator(const CpuAccumulator& parent, const TopologyIndex::Masks& masks,
                 std::span<const int> units, int num_cpus);
  CpuAccumulator(const CpuAccumulator&) = delete;
  CpuAccumulator& operator=(const CpuAccumulator&) = delete;

  int Needed() const { return needed_; }
  bool Satisfied() const { return needed_ < 1; }
  bool Failed() const { return needed_ > free_total_; }
  int FreeTotal() const { return free_total_; }
  // The local indexes taken so far, in the order taken.
  std::span<const int> Result() const { return result_; }

  int FreeInNuma(int numa) const { return numa_free_[static_cast<size_t>(numa)]; }
  bool IsFree(int cpu) const {
    return (free_[static_cast<size_t>(cpu) >> 6] >> (cpu & 63)) & 1;
  }
  int CoreFree(int core) const;  // free CPUs of a core
  // Free CPUs of a (NUMA node, L3 group) pair (TopologyIndex::NumaL3PairRanges()).
  int FreeInPair(int nl_pair) const { return FreeInUnit(index_.NumaL3PairMasks(), nl_pair); }
  // Takes the given CPUs: those still free; with `whole_units` also the busy ones not yet in
  // the result, which count as taken (kubelet's take() of another accumulator's result that
  // holds whole units, see the file comment).
  void TakeCpus(std::span<const int> cpus, bool whole_units);

  // kubelet's orders (see the file comment), written into `out`.
  void SortedNumas(UnitList& out) const;
  void SortedSockets(UnitList& out) const;
  void SortedL3Groups(UnitList& out) const;

  // kubelet's takeByTopologyNUMAPacked phases. `whole_units`: a core or socket judged free by
  // kubelet's average-size test gives all its CPUs, busy ones included (see the file comment).
  void TakeFullFirstLevel(bool whole_units);   // whole NUMA nodes (NUMA-first) or sockets
  void TakeFullSecondLevel(bool whole_units);  // the other one
  void TakeUncoreCache();                      // option prefer-align-cpus-by-uncorecache
  void TakeFullCores(bool whole_units);
  void TakeRemainingCpus(CpuSortingStrategy strategy);

 private:
  void Init(int num_cpus);
  int FreeIn(int begin, int end) const;  // free CPUs among local indexes [begin, end)
  int FreeInUnit(const TopologyIndex::Masks& masks, int unit) const;
  void Take(int cpu);
  void TakeFreeOf(std::span<const int> cpus);
  // Takes every CPU of `cpus` (a unit of the index): free ones as Take, busy ones only into
  // the result and the count needed, as kubelet's take() of a whole unit.
  void TakeAllOf(std::span<const int> cpus);
  void TakeFullNumaNodes();
  void TakeFullSockets(bool whole_units);
  void TakeFullUncore();
  void TakePartialUncore(int l3);
  // Groups whose cores are walked in core order: sockets (NUMA-first) or NUMA nodes.
  void CoreGroups(UnitList& out) const;
  std::span<const int> CoresOfGroup(int group) const;
  // Local-index ranges of the core groups (sockets or NUMA nodes).
  const TopologyIndex::Ranges& RangesOfGroup() const;
  // Free bits of word `word` of the local order that lie in [begin, end).
  uint64_t FreeBitsIn(size_t word, int begin, int end) const;

  const TopologyIndex& index_;
  int needed_;
  int free_total_ = 0;
  absl::InlinedVector<uint64_t, 16> free_;  // bit per local CPU index
  // Free CPUs per NUMA node, socket and (NUMA node, socket) pair: three arrays in counts_,
  // which is sized once by Init (the accumulator is neither copied nor moved, so the
  // pointers stay valid).
  absl::InlinedVector<int, 48> counts_;
  int* numa_free_ = nullptr;
  int* socket_free_ = nullptr;
  int* ns_free_ = nullptr;
  absl::InlinedVector<int, 64> result_;
  // Scratch lists for the orders (inline up to 16 units: no allocation per phase).
  mutable UnitList scratch_numas_, scratch_sockets_;
  mutable absl::InlinedVector<int, 64> scratch_counts_;  // per L3 group
  UnitList groups_;
  // Result size when TakeFullUncore last ran (kubelet calls it once per L3 group; a repeat
  // with nothing taken in between finds the same nothing).
  int full_uncore_checked_at_ = -1;
};

// kubelet's "not enough cpus available to satisfy request" error (ResourceExhausted), for an
// accumulator that Failed(); `available` is the size of the available set kubelet reports.
absl::Status NotEnoughCpus(int requested, int available);

// kubelet's takeByTopologyNUMAPacked on a fresh accumulator; on success acc.Result() holds the
// local indexes taken, in the order taken.
// REQUIRES: !acc.Failed() (callers report NotEnoughCpus with their available set's size first;
// a failed accumulator gets an Internal error).
absl::Status TakePacked(CpuAccumulator& acc, const TakeOptions& options);

}  // namespace huygens

#endif  // HUYGENS_ALLOC_CPU_ACCUMULATOR_H_
