// TopologyIndex: a dense, allocation-friendly view of a CpuTopology's online CPUs, built once
// and shared by every take on the same machine.
//
// What it is: the online CPUs of a topology renumbered densely (local index 0..NumCpus()-1)
// in hierarchical order: by socket, NUMA node, L3 group, core, then CPU id. In that order every
// core, socket, (NUMA node, socket) pair and (NUMA node, L3 group) pair is one contiguous range
// of local indexes, and a NUMA node or L3 group is a few ranges (one, unless it spans a higher
// unit), so free counts over a bitset are a handful of popcounts. Per CPU it gives the dense
// index of its core, NUMA node, socket and L3 group; per unit its CPUs, ranges and sub-units.
// Dense unit indexes are assigned in ascending order of the unit's id, so "ties broken by id"
// (kubelet's rule) is "ties broken by dense index". Counts follow kubelet's CPUTopology:
// NumCores, NumSockets, NumNumaNodes (nodes with online CPUs), NumL3Groups and the averages
// CpusPerCore() = NumCpus / NumCores etc.
//
// Pairs: a NUMA node may span sockets and an L3 group may span NUMA nodes (see topology.h), so
// the index also numbers the (NUMA node, socket) and (NUMA node, L3 group) pairs that hold CPUs;
// kubelet's "sockets of the free CPUs in NUMA node n" is "pairs of n with a free CPU".
//
// Invariants: member lists are sorted ascending (CPU lists of cores and SocketCpusById by CPU
// id); each core lies in exactly one NUMA node, socket and L3 group (CpuTopology guarantees it).
//
// Thread-safety: immutable after construction; any number of threads may read it.
#ifndef HUYGENS_ALLOC_TOPOLOGY_INDEX_H_
#define HUYGENS_ALLOC_TOPOLOGY_INDEX_H_

#include <cstdint>
#include <span>
#include <vector>

#include "cpuset/cpuset.h"
#include "topology/topology.h"

namespace huygens {

class TopologyIndex {
 public:
  // Half-open ranges [begin, end) of local indexes per unit (CSR).
  struct Ranges {
    std::vector<int> start;
    std::vector<int> begin, end;
    size_t First(int u) const { return static_cast<size_t>(start[static_cast<size_t>(u)]); }
    size_t Last(int u) const { return static_cast<size_t>(start[static_cast<size_t>(u) + 1]); }
  };

  // Flat lists of members per unit: members of unit u are items[start[u] .. start[u+1]).
  struct Lists {
    std::vector<int> start;
    std::vector<int> items;
    std::span<const int> Of(int u) const {
      const auto b = static_cast<size_t>(start[static_cast<size_t>(u)]);
      const auto e = static_cast<size_t>(start[static_cast<size_t>(u) + 1]);
      return std::span<const int>(items).subspan(b, e - b);
    }
    int SizeOf(int u) const {
      return start[static_cast<size_t>(u) + 1] - start[static_cast<size_t>(u)];
    }
  };

  // A unit's CPUs as bit masks over the words of the local order (a unit of U CPUs spans at
  // most U / 64 + 2 words): the unit's members in a bitset `bits` over local indexes are
  // bits[word] & mask for each of its entries, so its free count is a popcount per entry.
  struct WordMask {
    size_t word;
    uint64_t mask;
  };
  struct Masks {
    std::vector<int> start;
    std::vector<WordMask> items;
    std::span<const WordMask> Of(int u) const {
      const auto b = static_cast<size_t>(start[static_cast<size_t>(u)]);
      const auto e = static_cast<size_t>(start[static_cast<size_t>(u) + 1]);
      return std::span<const WordMask>(items).subspan(b, e - b);
    }
  };

  explicit TopologyIndex(const CpuTopology& topo);

  // ---- Counts (kubelet's CPUTopology fields and averages) -------------------------------
  int NumCpus() const { return static_cast<int>(cpu_id_.size()); }
  int NumCores() const { return static_cast<int>(core_id_.size()); }
  int NumSockets() const { return static_cast<int>(socket_id_.size()); }
  int NumNumaNodes() const { return static_cast<int>(numa_id_.size()); }
  int NumL3Groups() const { return static_cast<int>(l3_id_.size()); }
  int NumNumaSocketPairs() const { return static_cast<int>(ns_numa_.size()); }
  int NumNumaL3Pairs() const { return static_cast<int>(nl_numa_.size()); }
  int CpusPerCore() const { return NumCores() == 0 ? 0 : NumCpus() / NumCores(); }
  int CpusPerSocket() const { return NumSockets() == 0 ? 0 : NumCpus() / NumSockets(); }
  int CpusPerL3Group() const { return NumL3Groups() == 0 ? 0 : NumCpus() / NumL3Groups(); }
  int MaxThreadsPerCore() const { return max_threads_per_core_; }
  // kubelet's choice of hierarchy: NUMA nodes are the larger unit when there are at least as
  // many sockets as NUMA nodes.
  bool NumaFirst() const { return NumSockets() >= NumNumaNodes(); }

  // ---- CPUs ---------------------------------------------------------------------------------
  int CpuId(int local) const { return cpu_id_[static_cast<size_t>(local)]; }
  // Local index of a CPU id, or -1 when the CPU is unknown or offline.
  int LocalOf(int cpu) const {
    return cpu >= 0 && cpu < static_cast<int>(local_of_.size())
               ? local_of_[static_cast<size_t>(cpu)]
               : -1;
  }
  int CoreOf(int local) const { return core_of_[static_cast<size_t>(local)]; }
  int NumaOf(int local) const { return numa_of_[static_cast<size_t>(local)]; }
  int SocketOf(int local) const { return socket_of_[static_cast<size_t>(local)]; }
  int L3Of(int local) const { return l3_of_[static_cast<size_t>(local)]; }
  int NumaSocketPairOf(int local) const { return ns_of_[static_cast<size_t>(local)]; }
  int NumaL3PairOf(int local) const { return nl_of_[static_cast<size_t>(local)]; }

  // ---- Units: original ids and members ------------------------------------------------------
  int CoreId(int core) const { return core_id_[static_cast<size_t>(core)]; }
  int NumaId(int numa) const { return numa_id_[static_cast<size_t>(numa)]; }
  int SocketId(int socket) const { return socket_id_[static_cast<size_t>(socket)]; }
  int L3Id(int l3) const { return l3_id_[static_cast<size_t>(l3)]; }
  // Dense index of a NUMA node id, or -1 when it has no online CPU.
  int NumaIndexOf(int numa_id) const;

  // Local CPUs of a unit, ascending local index (for cores: ascending CPU id).
  const Lists& CoreCpus() const { return core_cpus_; }
  const Lists& NumaCpus() const { return numa_cpus_; }
  const Lists& SocketCpus() const { return socket_cpus_; }
  const Lists& L3Cpus() const { return l3_cpus_; }
  // A core's CPUs as one bitset word and mask over local indexes (a core is one range); the
  // mask is 0 when the range crosses a word boundary.
  int CoreWord(int core) const { return core_word_[static_cast<size_t>(core)]; }
  uint64_t CoreMask(int core) const { return core_mask_[static_cast<size_t>(core)]; }
  // Word-wise core walks. CoresInLocalOrder(): dense core indexes never decrease along the
  // local order, so walking any unit's local ranges visits its cores by ascending core id.
  // UniformCoreSize(): the number of CPUs of every core when all cores have the same number
  // and none crosses a 64-bit word of local indexes; 0 otherwise. CoreStartMask(w): the bits
  // of word w of the local order at which a core begins.
  bool CoresInLocalOrder() const { return cores_in_local_order_; }
  int UniformCoreSize() const { return uniform_core_size_; }
  uint64_t CoreStartMask(size_t word) const { return core_start_mask_[word]; }
  // Local CPUs of a socket by ascending CPU id (kubelet's spread order).
  const Lists& SocketCpusById() const { return socket_cpus_by_id_; }
  // Ranges of local indexes per unit.
  const Ranges& CoreRanges() const { return core_ranges_; }
  const Ranges& NumaRanges() const { return numa_ranges_; }
  const Ranges& SocketRanges() const { return socket_ranges_; }
  const Ranges& L3Ranges() const { return l3_ranges_; }
  const Ranges& NumaSocketPairRanges() const { return ns_ranges_; }
  const Ranges& NumaL3PairRanges() const { return nl_ranges_; }
  // Word masks per unit (see WordMask).
  const Masks& NumaMasks() const { return numa_masks_; }
  const Masks& L3Masks() const { return l3_masks_; }
  const Masks& NumaSocketPairMasks() const { return ns_masks_; }
  const Masks& NumaL3PairMasks() const { return nl_masks_; }
  const Lists& NumaCores() const { return numa_cores_; }    // NUMA -> cores
  const Lists& SocketCores() const { return socket_cores_; }  // socket -> cores
  const Lists& L3Cores() const { return l3_cores_; }        // L3 group -> cores
  const Lists& NumaSocketPairsOfNuma() const { return numa_ns_; }    // by socket
  const Lists& NumaSocketPairsOfSocket() const { return socket_ns_; }  // by NUMA node
  const Lists& NumaL3PairsOfNuma() const { return numa_nl_; }        // by L3 group
  int PairSocket(int ns_pair) const { return ns_socket_[static_cast<size_t>(ns_pair)]; }
  int PairNuma(int ns_pair) const { return ns_numa_[static_cast<size_t>(ns_pair)]; }
  int PairL3(int nl_pair) const { return nl_l3_[static_cast<size_t>(nl_pair)]; }
  // The (NUMA node, L3 group) pair holding a core.
  int NumaL3PairOfCore(int core) const { return core_nl_[static_cast<size_t>(core)]; }

  // The CPU ids of a list of local indexes.
  CpuSet ToCpuSet(std::span<const int> locals) const;

  // ---- Word-parallel conversion of CPU-id sets into bitsets over local indexes ---------------
  // Words of a bitset over local indexes: NumCpus() / 64 + 1.
  size_t LocalWords() const { return static_cast<size_t>(NumCpus() / 64 + 1); }
  // Overwrites `local` (REQUIRES: LocalWords() words) with the bitset of the local indexes of
  // the members of `cpus`; members unknown to the index or offline are dropped. Word-parallel:
  // CPU ids map to local indexes in runs of consecutive ids whose local indexes advance by a
  // constant stride of 1, 2, 4 or 8 (1 when siblings are numbered adjacently, the number of
  // threads per core when they are numbered NumCores apart), and a run moves up to 64 bits at
  // a time; ids fitting no such run form runs of one. Same result as setting the bit
  // LocalOf(cpu) of every member with LocalOf(cpu) >= 0.
  void ToLocalBits(const CpuSet& cpus, std::span<uint64_t> local) const;

 private:
  std::vector<int> cpu_id_, local_of_;
  std::vector<int> core_of_, numa_of_, socket_of_, l3_of_, ns_of_, nl_of_;
  std::vector<int> core_id_, numa_id_, socket_id_, l3_id_;
  std::vector<int> ns_numa_, ns_socket_, nl_numa_, nl_l3_;
  Lists core_cpus_, numa_cpus_, socket_cpus_, l3_cpus_, socket_cpus_by_id_;
  Ranges core_ranges_, numa_ranges_, socket_ranges_, l3_ranges_, ns_ranges_, nl_ranges_;
  Masks numa_masks_, l3_masks_, ns_masks_, nl_masks_;
  Lists numa_cores_, socket_cores_, l3_cores_;
  Lists numa_ns_, socket_ns_, numa_nl_;
  std::vector<int> core_word_, core_nl_;
  std::vector<uint64_t> core_mask_;
  std::vector<uint64_t> core_start_mask_;  // per word of local indexes (NumCpus / 64 + 1)
  // ToLocalBits' runs, ascending by id: CPUs id .. id + length - 1 have local indexes
  // local + (i << shift) for i in [0, length), shift in [0, 3].
  struct IdRun {
    int id, local, length, shift;
  };
  std::vector<IdRun> id_runs_;
  int max_threads_per_core_ = 0;
  int uniform_core_size_ = 0;
  bool cores_in_local_order_ = true;
};

}  // namespace huygens

#endif  // HUYGENS_ALLOC_TOPOLOGY_INDEX_H_
