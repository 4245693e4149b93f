#include "alloc/cpu_accumulator.h"

#include <algorithm>
#include <bit>

#include "alloc/bits.h"
#include "alloc/insertion_sort.h"

namespace huygens {
namespace {

size_t Sz(int i) { return static_cast<size_t>(i); }

// Sorts units[from..] by (count, unit) ascending: kubelet's cpuAccumulator.sort.
void SortByCount(CpuAccumulator::UnitList& units, const int* count, size_t from) {
  InsertionSort(std::span<int>(units.data(), units.size()).subspan(from), [&](int a, int b) {
    const int ca = count[a], cb = count[b];
    return ca != cb ? ca < cb : a < b;
  });
}

}  // namespace

CpuAccumulator::CpuAccumulator(const TopologyIndex& index, const CpuSet& available,
                               int num_cpus)
    : index_(index), needed_(num_cpus) {
  free_.resize(index.LocalWords());
  index_.ToLocalBits(available, free_);
  Init(num_cpus);
}

CpuAccumulator::CpuAccumulator(const CpuAccumulator& parent, const TopologyIndex::Masks& masks,
                               std::span<const int> units, int num_cpus)
    : index_(parent.index_), needed_(num_cpus) {
  free_.assign(index_.LocalWords(), 0);
  uint64_t* bits = free_.data();
  const uint64_t* parent_bits = parent.free_.data();
  for (int unit : units) {
    for (const TopologyIndex::WordMask& m : masks.Of(unit)) {
      bits[m.word] |= parent_bits[m.word] & m.mask;
    }
  }
  Init(num_cpus);
}

void CpuAccumulator::Init(int num_cpus) {
  // The (NUMA node, socket) pairs partition the CPUs: count them, and sum NUMA nodes, sockets
  // and the total from them.
  counts_.assign(Sz(index_.NumNumaNodes() + index_.NumSockets() + index_.NumNumaSocketPairs()),
                 0);
  numa_free_ = counts_.data();
  socket_free_ = numa_free_ + index_.NumNumaNodes();
  ns_free_ = socket_free_ + index_.NumSockets();
  for (int u = 0; u < index_.NumNumaSocketPairs(); ++u) {
    const int free = FreeInUnit(index_.NumaSocketPairMasks(), u);
    ns_free_[Sz(u)] = free;
    numa_free_[Sz(index_.PairNuma(u))] += free;
    socket_free_[Sz(index_.PairSocket(u))] += free;
    free_total_ += free;
  }
  result_.reserve(Sz(std::max(num_cpus, 0)));
}

int CpuAccumulator::FreeIn(int begin, int end) const {
  if (begin >= end) return 0;
  const size_t first = Sz(begin) >> 6, last = Sz(end - 1) >> 6;
  const uint64_t first_mask = ~uint64_t{0} << (begin & 63);
  const uint64_t last_mask = ~uint64_t{0} >> (63 - ((end - 1) & 63));
  if (first == last) return PopCount(free_[first] & first_mask & last_mask);
  int n = PopCount(free_[first] & first_mask);
  for (size_t w = first + 1; w < last; ++w) n += PopCount(free_[w]);
  return n + PopCount(free_[last] & last_mask);
}

int CpuAccumulator::FreeInUnit(const TopologyIndex::Masks& masks, int unit) const {
  const uint64_t* bits = free_.data();
  int n = 0;
  for (const TopologyIndex::WordMask& m : masks.Of(unit)) n += PopCount(bits[m.word] & m.mask);
  return n;
}

int CpuAccumulator::CoreFree(int core) const {
  if (const uint64_t mask = index_.CoreMask(core); mask != 0) {
    return PopCount(free_[Sz(index_.CoreWord(core))] & mask);
  }
  const TopologyIndex::Ranges& r = index_.CoreRanges();
  const size_t i = r.First(core);  // a core is one range in the hierarchical order
  return FreeIn(r.begin[i], r.end[i]);
}

void CpuAccumulator::Take(int cpu) {
  free_[Sz(cpu) >> 6] &= ~(uint64_t{1} << (cpu & 63));
  --free_total_;
  --numa_free_[Sz(index_.NumaOf(cpu))];
  --socket_free_[Sz(index_.SocketOf(cpu))];
  --ns_free_[Sz(index_.NumaSocketPairOf(cpu))];
  --needed_;
  result_.push_back(cpu);
}

void CpuAccumulator::TakeFreeOf(std::span<const int> cpus) {
  for (int cpu : cpus) {
    if (IsFree(cpu)) Take(cpu);
  }
}

void CpuAccumulator::TakeAllOf(std::span<const int> cpus) {
  for (int cpu : cpus) {
    if (IsFree(cpu)) {
      Take(cpu);
    } else if (std::find(result_.begin(), result_.end(), cpu) == result_.end()) {
      --needed_;  // busy: kubelet's take() counts it and adds it to the result
      result_.push_back(cpu);
    }
  }
}

void CpuAccumulator::TakeCpus(std::span<const int> cpus, bool whole_units) {
  if (whole_units) {
    TakeAllOf(cpus);
  } else {
    TakeFreeOf(cpus);
  }
}

void CpuAccumulator::SortedNumas(UnitList& out) const {
  out.clear();
  if (index_.NumaFirst()) {
    for (int numa = 0; numa < index_.NumNumaNodes(); ++numa) {
      if (numa_free_[Sz(numa)] > 0) out.push_back(numa);
    }
    SortByCount(out, numa_free_, 0);
    return;
  }
  // Socket-first: the NUMA nodes of each socket, sockets in their order.
  SortedSockets(scratch_sockets_);
  for (int socket : scratch_sockets_) {
    const size_t from = out.size();
    for (int pair : index_.NumaSocketPairsOfSocket().Of(socket)) {
      if (ns_free_[Sz(pair)] > 0) out.push_back(index_.PairNuma(pair));
    }
    SortByCount(out, numa_free_, from);
  }
}

void CpuAccumulator::SortedSockets(UnitList& out) const {
  out.clear();
  if (!index_.NumaFirst()) {
    for (int socket = 0; socket < index_.NumSockets(); ++socket) {
      if (socket_free_[Sz(socket)] > 0) out.push_back(socket);
    }
    SortByCount(out, socket_free_, 0);
    return;
  }
  // NUMA-first: the sockets of each NUMA node, NUMA nodes in their order.
  SortedNumas(scratch_numas_);
  for (int numa : scratch_numas_) {
    const size_t from = out.size();
    for (int pair : index_.NumaSocketPairsOfNuma().Of(numa)) {
      if (ns_free_[Sz(pair)] > 0) out.push_back(index_.PairSocket(pair));
    }
    SortByCount(out, socket_free_, from);
  }
}

void CpuAccumulator::SortedL3Groups(UnitList& out) const {
  out.clear();
  scratch_counts_.resize(Sz(index_.NumL3Groups()));
  for (int l3 = 0; l3 < index_.NumL3Groups(); ++l3) {
    scratch_counts_[Sz(l3)] = FreeInUnit(index_.L3Masks(), l3);
  }
  SortedNumas(scratch_numas_);
  for (int numa : scratch_numas_) {
    const size_t from = out.size();
    for (int pair : index_.NumaL3PairsOfNuma().Of(numa)) {
      if (FreeInPair(pair) > 0) out.push_back(index_.PairL3(pair));
    }
    SortByCount(out, scratch_counts_.data(), from);
  }
}

void CpuAccumulator::CoreGroups(UnitList& out) const {
  if (index_.NumaFirst()) {
    SortedSockets(out);
  } else {
    SortedNumas(out);
  }
}

std::span<const int> CpuAccumulator::CoresOfGroup(int group) const {
  return index_.NumaFirst() ? index_.SocketCores().Of(group) : index_.NumaCores().Of(group);
}

void CpuAccumulator::TakeFullNumaNodes() {
  SortedNumas(groups_);
  for (int numa : groups_) {
    const int size = index_.NumaCpus().SizeOf(numa);
    // kubelet's isNUMANodeFree (every CPU free) and needsAtLeast(size).
    if (numa_free_[Sz(numa)] != size || needed_ < size) continue;
    TakeFreeOf(index_.NumaCpus().Of(numa));
  }
}

void CpuAccumulator::TakeFullSockets(bool whole_units) {
  SortedSockets(groups_);
  for (int socket : groups_) {
    // kubelet's isSocketFree compares with the machine's average socket size.
    if (socket_free_[Sz(socket)] != index_.CpusPerSocket()) continue;
    if (needed_ < index_.SocketCpus().SizeOf(socket)) continue;
    if (whole_units) {
      TakeAllOf(index_.SocketCpus().Of(socket));
    } else {
      TakeFreeOf(index_.SocketCpus().Of(socket));
    }
  }
}

void CpuAccumulator::TakeFullFirstLevel(bool whole_units) {
  if (index_.NumaFirst()) {
    TakeFullNumaNodes();
  } else {
    TakeFullSockets(whole_units);
  }
}

void CpuAccumulator::TakeFullSecondLevel(bool whole_units) {
  if (index_.NumaFirst()) {
    TakeFullSockets(whole_units);
  } else {
    TakeFullNumaNodes();
  }
}

void CpuAccumulator::TakeFullUncore() {
  // Nothing taken since the last call found no free L3 group: it would find none again.
  if (full_uncore_checked_at_ == static_cast<int>(result_.size())) return;
  full_uncore_checked_at_ = static_cast<int>(result_.size());
  UnitList l3s;
  SortedL3Groups(l3s);
  for (int l3 : l3s) {
    const int size = index_.L3Cpus().SizeOf(l3);
    if (FreeInUnit(index_.L3Masks(), l3) != size || needed_ < size) continue;
    TakeFreeOf(index_.L3Cpus().Of(l3));
  }
}

void CpuAccumulator::TakePartialUncore(int l3) {
  // kubelet (takePartialUncore): the first ceil(needed / CpusPerCore) cores (by id) of the L3
  // group that have a free CPU, and their free CPUs; when the need is odd on an SMT machine and
  // those hold more than needed, less the one with the highest CPU id. Claimed only when that
  // is exactly the CPUs still needed.
  const int per_core = index_.CpusPerCore();
  const int cores_needed = (needed_ + per_core - 1) / per_core;
  int count = 0, cores = 0;
  std::span<const int> l3_cores = index_.L3Cores().Of(l3);
  size_t end = 0;
  for (; end < l3_cores.size() && cores < cores_needed; ++end) {
    const int free = CoreFree(l3_cores[end]);
    if (free == 0) continue;
    ++cores;
    count += free;
  }
  const bool drop_highest = needed_ % 2 != 0 && per_core > 1 && count > needed_;
  if (count - (drop_highest ? 1 : 0) != needed_) return;
  int highest = -1;  // local index of the free CPU with the highest CPU id
  if (drop_highest) {
    for (size_t i = 0; i < end; ++i) {
      for (int cpu : index_.CoreCpus().Of(l3_cores[i])) {
        if (IsFree(cpu) && (highest < 0 || index_.CpuId(cpu) > index_.CpuId(highest))) {
          highest = cpu;
        }
      }
    }
  }
  for (size_t i = 0; i < end; ++i) {
    for (int cpu : index_.CoreCpus().Of(l3_cores[i])) {
      if (cpu != highest && IsFree(cpu)) Take(cpu);
    }
  }
}

void CpuAccumulator::TakeUncoreCache() {
  const int cpus_per_l3 = index_.CpusPerL3Group();
  SortedL3Groups(groups_);
  for (int l3 : groups_) {
    if (needed_ >= cpus_per_l3) TakeFullUncore();
    if (Satisfied()) return;
    TakePartialUncore(l3);
    if (Satisfied()) return;
  }
}

const TopologyIndex::Ranges& CpuAccumulator::RangesOfGroup() const {
  return index_.NumaFirst() ? index_.SocketRanges() : index_.NumaRanges();
}

uint64_t CpuAccumulator::FreeBitsIn(size_t word, int begin, int end) const {
  const int base = static_cast<int>(word) * 64;
  const int lo = std::max(begin, base) - base, hi = std::min(end, base + 64) - base;
  const uint64_t upper = hi == 64 ? ~uint64_t{0} : (uint64_t{1} << hi) - 1;
  return free_[word] & upper & ~((uint64_t{1} << lo) - 1);
}

void CpuAccumulator::TakeFullCores(bool whole_units) {
  // kubelet's freeCores(): cores in group order, each group's cores by (free count, id); a core
  // is free when its free count equals the machine's average core size. All free cores have
  // the same count, so within a group they come by id. Such a core has at least CpusPerCore()
  // CPUs, so nothing qualifies once fewer are needed.
  const int per_core = index_.CpusPerCore();
  CoreGroups(groups_);
  const int k = index_.UniformCoreSize();
  if (k > 0 && index_.CoresInLocalOrder()) {
    // Word-wise: a core is free when the k bits from its start bit are all set.
    const TopologyIndex::Ranges& ranges = RangesOfGroup();
    for (int group : groups_) {
      for (size_t r = ranges.First(group); r < ranges.Last(group); ++r) {
        const int begin = ranges.begin[r], end = ranges.end[r];
        for (size_t w = Sz(begin) >> 6; w <= (Sz(end) - 1) >> 6; ++w) {
          const uint64_t bits = FreeBitsIn(w, begin, end);
          uint64_t full = bits & index_.CoreStartMask(w);
          for (int i = 1; i < k; ++i) full &= bits >> i;
          for (; full != 0; full &= full - 1) {
            if (needed_ < per_core) return;
            const int first = static_cast<int>(w * 64) + std::countr_zero(full);
            for (int cpu = first; cpu < first + k; ++cpu) Take(cpu);
          }
        }
      }
    }
    return;
  }
  for (int group : groups_) {
    if (needed_ < per_core) return;
    for (int core : CoresOfGroup(group)) {
      if (needed_ < index_.CoreCpus().SizeOf(core)) continue;
      if (CoreFree(core) != per_core) continue;
      if (whole_units) {
        TakeAllOf(index_.CoreCpus().Of(core));
      } else {
        TakeFreeOf(index_.CoreCpus().Of(core));
      }
    }
  }
}

void CpuAccumulator::TakeRemainingCpus(CpuSortingStrategy strategy) {
  if (strategy == CpuSortingStrategy::kSpread) {
    // kubelet's sortAvailableCPUsSpread: sockets in order, each socket's free CPUs by id.
    SortedSockets(groups_);
    for (int socket : groups_) {
      for (int cpu : index_.SocketCpusById().Of(socket)) {
        if (!IsFree(cpu)) continue;
        Take(cpu);
        if (Satisfied()) return;
      }
    }
    return;
  }
  // kubelet's sortAvailableCPUsPacked: cores in group order, each group's cores by (free
  // count, id), each core's free CPUs by id. A group's cores are untouched until the walk
  // reaches it, so bucketing by the current free count reproduces kubelet's snapshot order.
  CoreGroups(groups_);
  const int k = index_.UniformCoreSize();
  if ((k == 1 || k == 2) && index_.CoresInLocalOrder()) {
    // Word-wise: the start bits of cores with exactly `count` free CPUs.
    const TopologyIndex::Ranges& ranges = RangesOfGroup();
    for (int group : groups_) {
      for (int count = 1; count <= k; ++count) {
        for (size_t r = ranges.First(group); r < ranges.Last(group); ++r) {
          const int begin = ranges.begin[r], end = ranges.end[r];
          for (size_t w = Sz(begin) >> 6; w <= (Sz(end) - 1) >> 6; ++w) {
            const uint64_t bits = FreeBitsIn(w, begin, end);
            uint64_t cores = index_.CoreStartMask(w) &
                             (k == 1 ? bits : count == 1 ? bits ^ (bits >> 1) : bits & (bits >> 1));
            for (; cores != 0; cores &= cores - 1) {
              const int first = static_cast<int>(w * 64) + std::countr_zero(cores);
              for (int cpu = first; cpu < first + k; ++cpu) {
                if (!IsFree(cpu)) continue;
                Take(cpu);
                if (Satisfied()) return;
              }
            }
          }
        }
      }
    }
    return;
  }
  const int max_threads = index_.MaxThreadsPerCore();
  for (int group : groups_) {
    std::span<const int> cores = CoresOfGroup(group);
    for (int count = 1; count <= max_threads; ++count) {
      for (int core : cores) {
        if (CoreFree(core) != count) continue;
        for (int cpu : index_.CoreCpus().Of(core)) {
          if (!IsFree(cpu)) continue;
          Take(cpu);
          if (Satisfied()) return;
        }
      }
    }
  }
}

}  // namespace huygens
