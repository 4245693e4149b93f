#include "alloc/cpu_accumulator.h"

#include <algorithm>

namespace huygens {
namespace {

size_t Sz(int i) { return static_cast<size_t>(i); }

}  // namespace

CpuAccumulator::CpuAccumulator(const TopologyIndex& index, std::span<const int> available,
                               int num_cpus)
    : index_(index),
      needed_(num_cpus),
      free_(Sz(index.NumCpus()), 0),
      core_free_(Sz(index.NumCores()), 0),
      numa_free_(Sz(index.NumNumaNodes()), 0),
      socket_free_(Sz(index.NumSockets()), 0),
      l3_free_(Sz(index.NumL3Groups()), 0),
      ns_free_(Sz(index.NumNumaSocketPairs()), 0),
      nl_free_(Sz(index.NumNumaL3Pairs()), 0) {
  for (int cpu : available) {
    if (free_[Sz(cpu)]) continue;
    free_[Sz(cpu)] = 1;
    ++free_total_;
    ++core_free_[Sz(index_.CoreOf(cpu))];
    ++numa_free_[Sz(index_.NumaOf(cpu))];
    ++socket_free_[Sz(index_.SocketOf(cpu))];
    ++l3_free_[Sz(index_.L3Of(cpu))];
    ++ns_free_[Sz(index_.NumaSocketPairOf(cpu))];
    ++nl_free_[Sz(index_.NumaL3PairOf(cpu))];
  }
  result_.reserve(Sz(std::max(num_cpus, 0)));
}

void CpuAccumulator::Take(int cpu) {
  free_[Sz(cpu)] = 0;
  --free_total_;
  --core_free_[Sz(index_.CoreOf(cpu))];
  --numa_free_[Sz(index_.NumaOf(cpu))];
  --socket_free_[Sz(index_.SocketOf(cpu))];
  --l3_free_[Sz(index_.L3Of(cpu))];
  --ns_free_[Sz(index_.NumaSocketPairOf(cpu))];
  --nl_free_[Sz(index_.NumaL3PairOf(cpu))];
  --needed_;
  result_.push_back(cpu);
}

void CpuAccumulator::TakeFreeOf(std::span<const int> cpus) {
  for (int cpu : cpus) {
    if (free_[Sz(cpu)]) Take(cpu);
  }
}

void CpuAccumulator::TakeCpus(std::span<const int> cpus) { TakeFreeOf(cpus); }

void CpuAccumulator::AppendFreeCpusOfNuma(int numa, std::vector<int>& out) const {
  for (int cpu : index_.NumaCpus().Of(numa)) {
    if (free_[Sz(cpu)]) out.push_back(cpu);
  }
}

// Sorts units[from..] by (free count, index) ascending: kubelet's cpuAccumulator.sort.
void CpuAccumulator::SortByFree(std::vector<int>& units, const std::vector<int>& free,
                                size_t from) const {
  std::sort(units.begin() + static_cast<std::ptrdiff_t>(from), units.end(), [&](int a, int b) {
    const int fa = free[Sz(a)], fb = free[Sz(b)];
    return fa != fb ? fa < fb : a < b;
  });
}

void CpuAccumulator::SortedNumas(std::vector<int>& out) const {
  out.clear();
  if (index_.NumaFirst()) {
    for (int numa = 0; numa < index_.NumNumaNodes(); ++numa) {
      if (numa_free_[Sz(numa)] > 0) out.push_back(numa);
    }
    SortByFree(out, numa_free_, 0);
    return;
  }
  // Socket-first: NUMA nodes of each socket, sockets in their order.
  std::vector<int> sockets;
  SortedSockets(sockets);
  for (int socket : sockets) {
    const size_t from = out.size();
    for (int pair : index_.NumaSocketPairsOfSocket().Of(socket)) {
      if (ns_free_[Sz(pair)] > 0) out.push_back(index_.PairNuma(pair));
    }
    SortByFree(out, numa_free_, from);
  }
}

void CpuAccumulator::SortedSockets(std::vector<int>& out) const {
  out.clear();
  if (!index_.NumaFirst()) {
    for (int socket = 0; socket < index_.NumSockets(); ++socket) {
      if (socket_free_[Sz(socket)] > 0) out.push_back(socket);
    }
    SortByFree(out, socket_free_, 0);
    return;
  }
  // NUMA-first: sockets of each NUMA node, NUMA nodes in their order.
  std::vector<int> numas;
  SortedNumas(numas);
  for (int numa : numas) {
    const size_t from = out.size();
    for (int pair : index_.NumaSocketPairsOfNuma().Of(numa)) {
      if (ns_free_[Sz(pair)] > 0) out.push_back(index_.PairSocket(pair));
    }
    SortByFree(out, socket_free_, from);
  }
}

void CpuAccumulator::SortedL3Groups(std::vector<int>& out) const {
  out.clear();
  std::vector<int> numas;
  SortedNumas(numas);
  for (int numa : numas) {
    const size_t from = out.size();
    for (int pair : index_.NumaL3PairsOfNuma().Of(numa)) {
      if (nl_free_[Sz(pair)] > 0) out.push_back(index_.PairL3(pair));
    }
    SortByFree(out, l3_free_, from);
  }
}

void CpuAccumulator::CoreGroups(std::vector<int>& out) const {
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
  std::vector<int> numas;
  SortedNumas(numas);
  for (int numa : numas) {
    const int size = index_.NumaCpus().SizeOf(numa);
    // kubelet's isNUMANodeFree (every CPU free) and needsAtLeast(size).
    if (numa_free_[Sz(numa)] != size || needed_ < size) continue;
    TakeFreeOf(index_.NumaCpus().Of(numa));
  }
}

void CpuAccumulator::TakeFullSockets() {
  std::vector<int> sockets;
  SortedSockets(sockets);
  for (int socket : sockets) {
    // kubelet's isSocketFree compares with the machine's average socket size.
    if (socket_free_[Sz(socket)] != index_.CpusPerSocket()) continue;
    if (needed_ < index_.SocketCpus().SizeOf(socket)) continue;
    TakeFreeOf(index_.SocketCpus().Of(socket));
  }
}

void CpuAccumulator::TakeFullFirstLevel() {
  if (index_.NumaFirst()) {
    TakeFullNumaNodes();
  } else {
    TakeFullSockets();
  }
}

void CpuAccumulator::TakeFullSecondLevel() {
  if (index_.NumaFirst()) {
    TakeFullSockets();
  } else {
    TakeFullNumaNodes();
  }
}

void CpuAccumulator::TakeFullUncore() {
  std::vector<int> groups;
  SortedL3Groups(groups);
  for (int l3 : groups) {
    const int size = index_.L3Cpus().SizeOf(l3);
    if (l3_free_[Sz(l3)] != size || needed_ < size) continue;
    TakeFreeOf(index_.L3Cpus().Of(l3));
  }
}

void CpuAccumulator::TakePartialUncore(int l3) {
  // kubelet: the first needed/CpusPerCore cores (by id) of the L3 group that have a free CPU;
  // claimed only when their free CPUs are exactly the CPUs still needed.
  const int cores_needed = needed_ / index_.CpusPerCore();
  int count = 0, cores = 0;
  std::span<const int> l3_cores = index_.L3Cores().Of(l3);
  size_t end = 0;
  for (; end < l3_cores.size() && cores < cores_needed; ++end) {
    const int free = core_free_[Sz(l3_cores[end])];
    if (free == 0) continue;
    ++cores;
    count += free;
  }
  if (count != needed_) return;
  for (size_t i = 0; i < end; ++i) TakeFreeOf(index_.CoreCpus().Of(l3_cores[i]));
}

void CpuAccumulator::TakeUncoreCache() {
  const int cpus_per_l3 = index_.CpusPerL3Group();
  std::vector<int> groups;
  SortedL3Groups(groups);
  for (int l3 : groups) {
    if (needed_ >= cpus_per_l3) TakeFullUncore();
    if (Satisfied()) return;
    TakePartialUncore(l3);
    if (Satisfied()) return;
  }
}

void CpuAccumulator::TakeFullCores() {
  // kubelet's freeCores(): cores in group order, each group's cores by (free count, id); a core
  // is free when its free count equals the machine's average core size. All free cores have
  // the same count, so within a group they come by id.
  const int per_core = index_.CpusPerCore();
  std::vector<int> groups;
  CoreGroups(groups);
  for (int group : groups) {
    for (int core : CoresOfGroup(group)) {
      if (core_free_[Sz(core)] != per_core) continue;
      if (needed_ < index_.CoreCpus().SizeOf(core)) continue;
      TakeFreeOf(index_.CoreCpus().Of(core));
    }
  }
}

void CpuAccumulator::TakeRemainingCpus(CpuSortingStrategy strategy) {
  std::vector<int> groups;
  if (strategy == CpuSortingStrategy::kSpread) {
    // kubelet's sortAvailableCPUsSpread: sockets in order, each socket's free CPUs by id.
    SortedSockets(groups);
    for (int socket : groups) {
      for (int cpu : index_.SocketCpus().Of(socket)) {
        if (!free_[Sz(cpu)]) continue;
        Take(cpu);
        if (Satisfied()) return;
      }
    }
    return;
  }
  // kubelet's sortAvailableCPUsPacked: cores in group order, each group's cores by (free
  // count, id), each core's free CPUs by id. A group's cores are untouched until the walk
  // reaches it, so bucketing by the current free count reproduces kubelet's snapshot order.
  CoreGroups(groups);
  const int max_threads = index_.MaxThreadsPerCore();
  for (int group : groups) {
    std::span<const int> cores = CoresOfGroup(group);
    for (int count = 1; count <= max_threads; ++count) {
      for (int core : cores) {
        if (core_free_[Sz(core)] != count) continue;
        for (int cpu : index_.CoreCpus().Of(core)) {
          if (!free_[Sz(cpu)]) continue;
          Take(cpu);
          if (Satisfied()) return;
        }
      }
    }
  }
}

}  // namespace huygens
