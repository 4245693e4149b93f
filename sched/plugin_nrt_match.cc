// NodeResourceTopologyMatch: models scheduler-plugins' NodeResourceTopologyMatch
// (pkg/noderesourcetopology: filter.go, score.go, least_numa.go, least_allocated.go,
// most_allocated.go, balanced_allocation.go, numaresources.go; pkg/util/resource.go) at commit
// 903da7df82cb8794dda8f2d510ba1156111662dd, over the zones of Node::nrt. See plugins.h for the
// Filter; the Score, per strategy:
//   - every pod that is not Guaranteed scores kMaxNodeScore; a node without NRT scores 0;
//   - LeastAllocated, MostAllocated, BalancedAllocation: only on single-numa-node nodes (others
//     score 0). A request is scored against each zone's available resources and the node gets
//     the lowest non-zero zone score (0 when every zone scores 0). Scope `pod` scores the pod's
//     effective request; scope `container` scores each container (init containers first)
//     against the same zones and averages, truncated. Per zone: LeastAllocated
//     (avail - req) x 100 / avail, MostAllocated req x 100 / avail, per requested resource (0
//     when the zone lacks it or it does not fit), averaged with weight 1 each (the plugin's
//     default resources cpu and memory; any other resource weighs 1 too); BalancedAllocation
//     (1 - the sample variance of the requested resources' req / avail) x 100, 0 when one
//     share exceeds 1. Quantities are compared exactly but divided as whole values (cpu
//     rounded up to whole CPUs, as Quantity.Value());
//   - LeastNUMANodes, on every policy: the fewest zones whose summed available resources fit
//     the request (scope `pod`: the effective request; scope `container`: each container in
//     turn, init containers first, taking its request from the chosen zones greedily in zone
//     order, and the largest count over containers); among the combinations of that size, in
//     lexicographic order, the first of the least mean cost (NUMA distance, over all ordered
//     pairs, self included); score = 100 - count x (100 / 8), plus half of that step
//     when the chosen set has the least mean cost of all sets of its size. No fit: 0; nothing
//     requested that a zone reports: 100.
// Upstream indexes the zone list by NUMA id when it takes a container's request from the chosen
// zones; this model uses the zones' positions, the same thing for NUMA ids 0..n-1.
//
// Resources: cpu and memory, which the zones report, and huygens.io/isolated-cpu, which no zone
// reports (a host-level resource upstream: the Filter leaves it to NodeResourcesFit; in the
// scores a zone lacking a requested resource counts as described above). Device-plugin
// resources (ContainerSpec::extended_requests) and hugepages (hugepages_request_bytes): the
// Filter checks each one some zone lists (NodeTopology::Zone::extended_available) in the zone it
// checks cpu and memory in (resourcesAvailableInAnyNUMANodes: a zone that lists it must have the
// amount available; one no zone lists is node-level and left to NodeResourcesFit); the scores
// leave them out (a model limit: upstream weighs each requested resource 1).
#include <algorithm>
#include <array>
#include <optional>
#include <span>
#include <vector>

#include "alloc/combinations.h"
#include "alloc/memory_manager.h"
#include "sched/plugins.h"

namespace huygens::sched {
namespace {

enum Resource { kCpu, kMemory, kIsolated, kNumResources };
// nodeconfig.DefaultMaxNUMANodes: what the plugin normalises LeastNUMANodes with when the NRT
// object has no topologyManagerMaxNUMANodes attribute (NodeTopology carries none).
constexpr int64_t kMaxNumaNodes = 8;
constexpr int kZoneResources = 2;  // zones report kCpu and kMemory

// A resource list: cpu millicores, memory bytes, isolated CPUs; 0 = not requested (a simulated
// container never names a resource with a zero request).
using Amounts = std::array<int64_t, kNumResources>;

Amounts Requests(const ContainerSpec& c) {
  return {EffectiveRequest(c.cpu_request_milli, c.cpu_limit_milli),
          EffectiveRequest(c.memory_request_bytes, c.memory_limit_bytes), c.isolated_cpus};
}

// scheduler-plugins' util.GetPodEffectiveRequest: per resource, the larger of the app
// containers' sum and the largest init container (sidecars count as init containers).
Amounts PodEffectiveRequest(const PodSpec& pod) {
  Amounts apps{}, init{};
  for (const ContainerSpec& c : pod.containers) {
    const Amounts r = Requests(c);
    for (int i = 0; i < kNumResources; ++i) apps[i] += r[i];
  }
  for (const ContainerSpec& c : pod.init_containers) {
    const Amounts r = Requests(c);
    for (int i = 0; i < kNumResources; ++i) init[i] = std::max(init[i], r[i]);
  }
  for (int i = 0; i < kNumResources; ++i) apps[i] = std::max(apps[i], init[i]);
  return apps;
}

// Quantity.Value(): whole units, rounded up (cpu in CPUs).
int64_t Value(int resource, int64_t amount) {
  return resource == kCpu ? (amount + 999) / 1000 : amount;
}

// A zone's available resources (kIsolated is always 0: no zone reports it).
using ZoneAmounts = std::vector<Amounts>;

// numaresources.go isResourceSetSuitable: cpu and memory of a pod that is not Guaranteed fit
// any zone.
bool Suitable(bool guaranteed, int resource, int64_t want, int64_t have) {
  if (!guaranteed && resource < kZoneResources) return true;
  return have >= want;
}

// Per zone, its other available resources (NodeTopology::Zone::extended_available).
using ZoneExtended = std::vector<std::map<std::string, int64_t>>;

// What a container asks besides cpu, memory and isolated CPUs: its device-plugin resources and
// its hugepages (bytes).
std::map<std::string, int64_t> ExtendedAndHugepages(const ContainerSpec& c) {
  std::map<std::string, int64_t> out = c.extended_requests;
  for (const auto& [size, bytes] : c.hugepages_request_bytes) out[size] += bytes;
  return out;
}

// The pod's effective other requests (Kubernetes' pod-level rule, PodExtendedRequests and
// PodMemoryRequests).
std::map<std::string, int64_t> PodExtendedAndHugepages(const PodSpec& pod) {
  std::map<std::string, int64_t> out = PodExtendedRequests(pod);
  for (const auto& [resource, bytes] : PodMemoryRequests(pod)) {
    if (resource != kMemoryResource) out[resource] += static_cast<int64_t>(bytes);
  }
  return out;
}

// The requested devices and hugepages some zone lists (the others are node-level).
std::map<std::string, int64_t> ZoneExtendedRequests(const ZoneExtended& zones,
                                                  const std::map<std::string, int64_t>& want) {
  std::map<std::string, int64_t> out;
  for (const auto& [resource, n] : want) {
    if (n <= 0) continue;
    for (const auto& zone : zones) {
      if (zone.contains(resource)) {
        out[resource] = n;
        break;
      }
    }
  }
  return out;
}

// The lowest zone every requested zone resource fits, or -1 (filter.go
// resourcesAvailableInAnyNUMANodes); 0 when nothing a zone reports is requested. `devices`:
// the requested devices some zone lists (ZoneExtendedRequests).
int FitZone(const ZoneAmounts& zones, const ZoneExtended& zone_extended, bool guaranteed,
            const Amounts& want, const std::map<std::string, int64_t>& devices) {
  bool any = !devices.empty();
  for (int r = 0; r < kZoneResources; ++r) any = any || want[r] > 0;
  if (!any) return 0;
  for (size_t z = 0; z < zones.size(); ++z) {
    bool fits = true;
    for (int r = 0; r < kZoneResources && fits; ++r) {
      fits = want[r] == 0 || Suitable(guaranteed, r, want[r], zones[z][r]);
    }
    for (const auto& [resource, n] : devices) {
      auto it = zone_extended[z].find(resource);
      fits = fits && it != zone_extended[z].end() && it->second >= n;
    }
    if (fits) return static_cast<int>(z);
  }
  return -1;
}

// ---- Score strategies (per zone) ------------------------------------------------------------

int64_t LeastOrMostAllocated(bool least, const Amounts& want, const Amounts& avail) {
  int64_t sum = 0, weights = 0;
  for (int r = 0; r < kNumResources; ++r) {
    if (want[r] == 0) continue;
    ++weights;
    if (avail[r] == 0 || want[r] > avail[r]) continue;
    const int64_t have = Value(r, avail[r]), need = Value(r, want[r]);
    sum += (least ? have - need : need) * kMaxNodeScore / have;
  }
  // REQUIRES: a Guaranteed container requests cpu and memory (weights > 0).
  return weights == 0 ? 0 : sum / weights;
}

int64_t BalancedAllocation(const Amounts& want, const Amounts& avail) {
  std::array<double, kNumResources> shares{};
  int n = 0;
  for (int r = 0; r < kNumResources; ++r) {
    if (want[r] == 0) continue;
    const int64_t have = Value(r, avail[r]);
    const double share =
        have == 0 ? 1.0 : static_cast<double>(Value(r, want[r])) / static_cast<double>(have);
    if (share > 1) return 0;
    shares[static_cast<size_t>(n++)] = share;
  }
  // gonum stat.Variance: the sample variance (divided by n - 1). REQUIRES: n >= 2, as for every
  // Guaranteed container (cpu and memory).
  if (n < 2) return 0;
  double mean = 0;
  for (int i = 0; i < n; ++i) mean += shares[static_cast<size_t>(i)];
  mean /= n;
  double ss = 0;
  for (int i = 0; i < n; ++i) {
    const double d = shares[static_cast<size_t>(i)] - mean;
    ss += d * d;
  }
  return static_cast<int64_t>((1 - ss / (n - 1)) * static_cast<double>(kMaxNodeScore));
}

class NodeResourceTopologyMatch final : public FilterPlugin, public ScorePlugin {
 public:
  explicit NodeResourceTopologyMatch(NrtScoring scoring) : scoring_(scoring) {}
  std::string_view Name() const override { return "NodeResourceTopologyMatch"; }

  Status Filter(CycleState& state, const NodeInfo& node) override {
    const NodeTopology* nrt = node.node.nrt.get();
    if (nrt == nullptr || state.facts().qos == QosClass::kBestEffort ||
        nrt->policy != TopologyPolicy::kSingleNumaNode) {
      return Status::Success();
    }
    const bool guaranteed = state.facts().qos == QosClass::kGuaranteed;
    const PodSpec& pod = state.pod().spec;
    LoadZones(*nrt);
    if (nrt->scope == TopologyScope::kPod) {
      if (FitZone(zones_, zone_extended_, guaranteed, PodEffectiveRequest(pod),
                  ZoneExtendedRequests(zone_extended_, PodExtendedAndHugepages(pod))) < 0) {
        return Status::Unschedulable("cannot align pod");
      }
      return Status::Success();
    }
    // Init containers run one after another, before the app containers: each must fit alone.
    for (const ContainerSpec& c : pod.init_containers) {
      if (FitZone(zones_, zone_extended_, guaranteed, Requests(c),
                  ZoneExtendedRequests(zone_extended_, ExtendedAndHugepages(c))) < 0) {
        return Status::Unschedulable(c.restartable ? "cannot align sidecar container"
                                                   : "cannot align init container");
      }
    }
    for (const ContainerSpec& c : pod.containers) {
      const Amounts want = Requests(c);
      const std::map<std::string, int64_t> devices =
          ZoneExtendedRequests(zone_extended_, ExtendedAndHugepages(c));
      const int z = FitZone(zones_, zone_extended_, guaranteed, want, devices);
      if (z < 0) return Status::Unschedulable("cannot align container");
      if (!guaranteed || zones_.empty()) continue;
      for (int r = 0; r < kZoneResources; ++r) zones_[static_cast<size_t>(z)][r] -= want[r];
      for (const auto& [resource, n] : devices) zone_extended_[static_cast<size_t>(z)][resource] -= n;
    }
    return Status::Success();
  }

  int64_t Score(CycleState& state, const NodeInfo& node) override {
    if (state.facts().qos != QosClass::kGuaranteed) return kMaxNodeScore;
    const NodeTopology* nrt = node.node.nrt.get();
    if (nrt == nullptr) return 0;
    const PodSpec& pod = state.pod().spec;
    LoadZones(*nrt);
    if (scoring_ == NrtScoring::kLeastNumaNodes) return LeastNumaNodes(*nrt, pod);
    if (nrt->policy != TopologyPolicy::kSingleNumaNode) return 0;
    if (nrt->scope == TopologyScope::kPod) return ScoreEachZone(PodEffectiveRequest(pod));
    double sum = 0;
    int n = 0;
    for (const auto* list : {&pod.init_containers, &pod.containers}) {
      for (const ContainerSpec& c : *list) {
        sum += static_cast<double>(ScoreEachZone(Requests(c)));
        ++n;
      }
    }
    return n == 0 ? 0 : static_cast<int64_t>(sum / n);
  }

 private:
  void LoadZones(const NodeTopology& nrt) {
    zones_.resize(nrt.zones.size());
    zone_extended_.resize(nrt.zones.size());
    for (size_t z = 0; z < nrt.zones.size(); ++z) {
      zones_[z] = {nrt.zones[z].cpu_available_milli, nrt.zones[z].memory_available_bytes, 0};
      zone_extended_[z] = nrt.zones[z].extended_available;
    }
  }

  // score.go scoreForEachNUMANode: the lowest non-zero zone score, 0 when all are 0.
  int64_t ScoreEachZone(const Amounts& want) const {
    int64_t lowest = 0;
    for (const Amounts& avail : zones_) {
      const int64_t s = scoring_ == NrtScoring::kBalancedAllocation
                            ? BalancedAllocation(want, avail)
                            : LeastOrMostAllocated(scoring_ == NrtScoring::kLeastAllocated, want,
                                                   avail);
      if (lowest == 0 || (s != 0 && s < lowest)) lowest = s;
    }
    return lowest;
  }

  // least_numa.go: leastNUMAContainerScopeScore / leastNUMAPodScopeScore.
  int64_t LeastNumaNodes(const NodeTopology& nrt, const PodSpec& pod) {
    if (nrt.scope == TopologyScope::kPod) {
      const Amounts want = PodEffectiveRequest(pod);
      if (OnlyNonZoneResources(want)) return kMaxNodeScore;
      if (!ZonesRequired(nrt, want)) return 0;
      return Normalize(static_cast<int>(chosen_.size()), min_distance_);
    }
    int most = 0;
    bool all_min_distance = true;
    for (const auto* list : {&pod.init_containers, &pod.containers}) {
      for (const ContainerSpec& c : *list) {
        const Amounts want = Requests(c);
        if (OnlyNonZoneResources(want)) continue;
        if (!ZonesRequired(nrt, want)) return 0;
        all_min_distance = all_min_distance && min_distance_;
        most = std::max(most, static_cast<int>(chosen_.size()));
        TakeGreedily(want);
      }
    }
    if (most == 0) return kMaxNodeScore;
    return Normalize(most, all_min_distance);
  }

  // onlyNonNUMAResources: no requested resource is reported by any zone.
  bool OnlyNonZoneResources(const Amounts& want) const {
    if (zones_.empty()) return true;
    return want[kCpu] == 0 && want[kMemory] == 0;
  }

  static int64_t Normalize(int count, bool min_distance) {
    const int64_t step = kMaxNodeScore / kMaxNumaNodes;
    const int64_t score = kMaxNodeScore - count * step;
    return min_distance ? score + step / 2 : score;
  }

  // The mean cost over all ordered pairs of `set` (self pairs included).
  static double MeanCost(const NodeTopology& nrt, std::span<const int> set) {
    int64_t sum = 0;
    for (int a : set) {
      for (int b : set) sum += nrt.Cost(static_cast<size_t>(a), static_cast<size_t>(b));
    }
    return static_cast<double>(sum) / static_cast<double>(set.size() * set.size());
  }

  // numaNodesRequired: sets `chosen_` to the fewest zones that fit `want` (see the file
  // comment) and `min_distance_`; false when no set of zones fits. REQUIRES: a Guaranteed pod.
  bool ZonesRequired(const NodeTopology& nrt, const Amounts& want) {
    // A zone lacks huygens.io/isolated-cpu, so no set of zones is valid for a request of it.
    if (want[kIsolated] > 0) return false;
    const int n = static_cast<int>(zones_.size());
    for (int k = 1; k <= n; ++k) {
      double least = 1e300;
      ForEachSet(k, [&](std::span<const int> set) {
        least = std::min(least, MeanCost(nrt, set));
        return true;
      });
      double best = 1e300;
      bool found = false, at_least = false;
      ForEachSet(k, [&](std::span<const int> set) {
        Amounts sum{};
        for (int z : set) {
          for (int r = 0; r < kZoneResources; ++r) sum[r] += zones_[static_cast<size_t>(z)][r];
        }
        for (int r = 0; r < kZoneResources; ++r) {
          if (want[r] > 0 && sum[r] < want[r]) return true;
        }
        const double cost = MeanCost(nrt, set);
        if (cost == least || cost < best) {
          chosen_.assign(set.begin(), set.end());
          found = true;
          at_least = cost == least;
          best = cost;
        }
        return !at_least;
      });
      if (found) {
        min_distance_ = at_least;
        return true;
      }
    }
    return false;
  }

  // Calls fn(set) for every k-subset of the zones in lexicographic order (gonum's
  // combin.Combinations order, alloc/combinations.h) until fn returns false.
  template <typename Fn>
  void ForEachSet(int k, Fn fn) {
    set_.resize(static_cast<size_t>(k));
    FirstCombination(set_);
    do {
      if (!fn(std::span<const int>(set_))) return;
    } while (NextCombination(set_, static_cast<int>(zones_.size())));
  }

  // subtractFromNUMAs: takes `want` from the chosen zones in order, each as far as it goes.
  void TakeGreedily(const Amounts& want) {
    for (int r = 0; r < kZoneResources; ++r) {
      int64_t left = want[r];
      for (int z : chosen_) {
        if (left == 0) break;
        int64_t& have = zones_[static_cast<size_t>(z)][r];
        const int64_t take = std::min(left, have);
        have -= take;
        left -= take;
      }
    }
  }

  NrtScoring scoring_;
  // Scratch, reused across calls.
  ZoneAmounts zones_;
  ZoneExtended zone_extended_;
  std::vector<int> chosen_;  // zone positions
  std::vector<int> set_;
  bool min_distance_ = false;
};

}  // namespace

std::unique_ptr<Plugin> NewNodeResourceTopologyMatch(NrtScoring scoring) {
  return std::make_unique<NodeResourceTopologyMatch>(scoring);
}

}  // namespace huygens::sched
