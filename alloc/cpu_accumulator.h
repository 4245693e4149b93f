// CpuAccumulator: the state of one take-by-topology, and kubelet's orderings over it.
//
// What it is: kubelet's cpuAccumulator (pkg/kubelet/cm/cpumanager/cpu_assignment.go) over a
// TopologyIndex: the CPUs still free for this take, per-unit free counts kept up to date on
// every take (so no ordering ever rescans the machine), the number of CPUs still needed, and the
// CPUs taken so far. The phases of kubelet's takeByTopologyNUMAPacked are member functions; each
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
// Deviations from kubelet, on machines where kubelet would break its own invariants only
// (documented in take.cc): a unit judged "free" by kubelet's average-size test gives only its
// free CPUs (kubelet would also hand out busy ones); a CPU listed twice is taken once.
//
// Invariants: Result() holds distinct available CPUs; Needed() + Result().size() is the request.
//
// Thread-safety: a local object; not shared.
#ifndef HUYGENS_ALLOC_CPU_ACCUMULATOR_H_
#define HUYGENS_ALLOC_CPU_ACCUMULATOR_H_

#include <cstdint>
#include <span>
#include <vector>

#include "alloc/take.h"
#include "alloc/topology_index.h"

namespace huygens {

class CpuAccumulator {
 public:
  // `available` are local CPU indexes of `index` (duplicates ignored). REQUIRES: num_cpus >= 0.
  CpuAccumulator(const TopologyIndex& index, std::span<const int> available, int num_cpus);

  int Needed() const { return needed_; }
  bool Satisfied() const { return needed_ < 1; }
  bool Failed() const { return needed_ > free_total_; }
  const std::vector<int>& Result() const { return result_; }

  int FreeInNuma(int numa) const { return numa_free_[static_cast<size_t>(numa)]; }
  // Free CPUs of a NUMA node, ascending, appended to `out`.
  void AppendFreeCpusOfNuma(int numa, std::vector<int>& out) const;
  // Takes the given CPUs (those still free).
  void TakeCpus(std::span<const int> cpus);

  // kubelet's orders (see the file comment), written into `out`.
  void SortedNumas(std::vector<int>& out) const;
  void SortedSockets(std::vector<int>& out) const;
  void SortedL3Groups(std::vector<int>& out) const;

  // kubelet's takeByTopologyNUMAPacked phases.
  void TakeFullFirstLevel();   // whole NUMA nodes (NUMA-first) or whole sockets
  void TakeFullSecondLevel();  // the other one
  void TakeUncoreCache();      // option prefer-align-cpus-by-uncorecache
  void TakeFullCores();
  void TakeRemainingCpus(CpuSortingStrategy strategy);

 private:
  void Take(int cpu);
  void TakeFreeOf(std::span<const int> cpus);
  void TakeFullNumaNodes();
  void TakeFullSockets();
  void TakeFullUncore();
  void TakePartialUncore(int l3);
  void SortByFree(std::vector<int>& units, const std::vector<int>& free, size_t from) const;
  // Groups whose cores are walked in core order: sockets (NUMA-first) or NUMA nodes.
  void CoreGroups(std::vector<int>& out) const;
  std::span<const int> CoresOfGroup(int group) const;

  const TopologyIndex& index_;
  int needed_;
  int free_total_ = 0;
  std::vector<uint8_t> free_;
  std::vector<int> core_free_, numa_free_, socket_free_, l3_free_, ns_free_, nl_free_;
  std::vector<int> result_;
};

}  // namespace huygens

#endif  // HUYGENS_ALLOC_CPU_ACCUMULATOR_H_
