#include "alloc/hints.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <set>
#include <utility>

#include "alloc/bits.h"
#include "alloc/combinations.h"

namespace huygens {
namespace {

// The NUMA nodes hints are built over, in ascending id order, with their counts. Masks below
// are bitmasks over positions in this order; since positions preserve the order of ids,
// comparing position masks as numbers orders them as kubelet orders NUMA-id bitmasks.
struct HintInput {
  std::vector<int> ids;
  std::vector<int> allocatable;
  std::vector<int> available;         // free CPUs, plus reusable CPUs in the node
  uint64_t required = 0;              // nodes every hint must contain (reusable CPUs' nodes)
  // align-by-socket: sockets of each node (by position) and kubelet's NUMA nodes per socket.
  std::vector<std::vector<int>> sockets;
  int numa_per_socket = 0;
};

std::vector<int> MaskToIds(uint64_t mask, const std::vector<int>& ids) {
  std::vector<int> out;
  out.reserve(static_cast<size_t>(PopCount(mask)));
  for (size_t i = 0; i < ids.size(); ++i) {
    if (mask & (uint64_t{1} << i)) out.push_back(ids[i]);
  }
  return out;
}

int SocketsSpanned(uint64_t mask, const HintInput& in) {
  std::set<int> sockets;
  for (size_t i = 0; i < in.ids.size(); ++i) {
    if (mask & (uint64_t{1} << i)) sockets.insert(in.sockets[i].begin(), in.sockets[i].end());
  }
  return static_cast<int>(sockets.size());
}

// kubelet's generateCPUTopologyHints over `in` (see hints.h).
std::vector<TopologyHint> GenerateHints(const HintInput& in, int num_cpus, int max_numa,
                                        bool align_by_socket) {
  const int n = static_cast<int>(in.ids.size());
  std::vector<TopologyHint> hints;
  if (n == 0 || n > 64) return hints;
  std::vector<uint64_t> masks;  // of the hints, in order
  int min_affinity_size = n;
  const int max_k = std::min(n, std::max(1, max_numa));
  // Combinations of size k in lexicographic order of positions (kubelet's IterateBitMasks).
  std::vector<int> pos;
  for (int k = 1; k <= max_k; ++k) {
    pos.resize(static_cast<size_t>(k));
    FirstCombination(pos);
    do {
      uint64_t mask = 0;
      int allocatable = 0, available = 0;
      for (int p : pos) {
        mask |= uint64_t{1} << p;
        allocatable += in.allocatable[static_cast<size_t>(p)];
        available += in.available[static_cast<size_t>(p)];
      }
      if (allocatable >= num_cpus && k < min_affinity_size) min_affinity_size = k;
      if ((mask & in.required) == in.required && available >= num_cpus) masks.push_back(mask);
    } while (NextCombination(pos, n));
  }
  int min_sockets = -1;
  if (align_by_socket && in.numa_per_socket > 0) {
    min_sockets = (min_affinity_size + in.numa_per_socket - 1) / in.numa_per_socket;
  }
  hints.reserve(masks.size());
  for (uint64_t mask : masks) {
    TopologyHint hint{MaskToIds(mask, in.ids), false};
    if (min_sockets >= 0 && SocketsSpanned(mask, in) == min_sockets) {
      hint.preferred = true;
    } else {
      hint.preferred = PopCount(mask) == min_affinity_size;
    }
    hints.push_back(std::move(hint));
  }
  return hints;
}

}  // namespace

std::vector<TopologyHint> CpuHintsFromCounts(std::span<const NumaCounts> counts, int num_cpus,
                                             int max_allowable_numa_nodes) {
  std::vector<NumaCounts> merged;
  for (const NumaCounts& c : counts) {
    if (c.allocatable <= 0) continue;
    auto it = std::find_if(merged.begin(), merged.end(),
                           [&](const NumaCounts& m) { return m.numa == c.numa; });
    if (it == merged.end()) {
      merged.push_back(c);
    } else {
      it->allocatable += c.allocatable;
      it->available += c.available;
    }
  }
  std::sort(merged.begin(), merged.end(),
            [](const NumaCounts& a, const NumaCounts& b) { return a.numa < b.numa; });
  HintInput in;
  for (const NumaCounts& c : merged) {
    in.ids.push_back(c.numa);
    in.allocatable.push_back(c.allocatable);
    in.available.push_back(c.available);
  }
  return GenerateHints(in, num_cpus, max_allowable_numa_nodes, /*align_by_socket=*/false);
}

std::vector<TopologyHint> CpuHints(const CpuTopology& topo, const CpuSet& available,
                                   const CpuSet& reusable, int num_cpus, bool align_by_socket,
                                   int max_allowable_numa_nodes) {
  HintInput in;
  in.ids = topo.NumaNodeIdsWithCpus();
  const CpuSet online = topo.OnlineCpus();
  const CpuSet usable_reusable = reusable.Intersection(online);
  for (size_t i = 0; i < in.ids.size(); ++i) {
    const CpuSet node = topo.CpusInNumaNode(in.ids[i]);
    in.allocatable.push_back(node.Size());
    const int reused = usable_reusable.IntersectionSize(node);
    // kubelet counts reusable and available CPUs separately, overlap or not.
    in.available.push_back(available.IntersectionSize(node) + reused);
    if (reused > 0 && i < 64) in.required |= uint64_t{1} << i;
    if (align_by_socket) in.sockets.push_back(topo.SocketsInNumaNode(in.ids[i]));
  }
  if (align_by_socket && topo.NumSockets() > 0) {
    // kubelet: NumNUMANodes / NumSockets over the CPUs it knows.
    in.numa_per_socket = static_cast<int>(in.ids.size()) / topo.NumSockets();
  }
  return GenerateHints(in, num_cpus, max_allowable_numa_nodes, align_by_socket);
}

std::map<std::string, ProviderHints> CpuProviderHints(const CpuTopology& topo,
                                                      const CpuSet& available,
                                                      const CpuSet& reusable, int num_cpus,
                                                      bool align_by_socket,
                                                      int max_allowable_numa_nodes) {
  if (num_cpus == 0) return {{"cpu", std::nullopt}};
  return {{"cpu", CpuHints(topo, available, reusable, num_cpus, align_by_socket,
                           max_allowable_numa_nodes)}};
}

namespace {
bool HasPodLevelCpu(const PodSpec& pod) {
  return pod.pod_cpu_request_milli > 0 || pod.pod_cpu_limit_milli > 0;
}
}  // namespace

int PodExclusiveCpus(const PodSpec& pod) {
  if (HasPodLevelCpu(pod)) return 0;
  int by_init = 0;
  int by_restartable = 0;
  for (const ContainerSpec& c : pod.init_containers) {
    const int cpus = ExclusiveCpus(pod, c);
    if (c.restartable) {
      by_restartable += cpus;
    } else {
      by_init = std::max(by_init, by_restartable + cpus);
    }
  }
  int by_app = 0;
  for (const ContainerSpec& c : pod.containers) by_app += ExclusiveCpus(pod, c);
  return std::max(by_init, by_app + by_restartable);
}

std::vector<AdmissionUnit> AdmissionUnits(const PodSpec& pod, TopologyScope scope) {
  if (scope == TopologyScope::kPod) return {AdmissionUnit{"", false, PodExclusiveCpus(pod)}};
  const bool pod_level = HasPodLevelCpu(pod);
  std::vector<AdmissionUnit> units;
  for (const ContainerSpec& c : pod.init_containers) {
    units.push_back({c.name, true, pod_level ? 0 : ExclusiveCpus(pod, c)});
  }
  for (const ContainerSpec& c : pod.containers) {
    units.push_back({c.name, false, pod_level ? 0 : ExclusiveCpus(pod, c)});
  }
  return units;
}

}  // namespace huygens
