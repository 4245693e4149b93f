#include "alloc/huygens_allocator.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "alloc/combinations.h"
#include "alloc/cpu_accumulator.h"
#include "alloc/insertion_sort.h"
#include "alloc/take.h"
#include "alloc/waste.h"
#include "fmt/format.h"

namespace huygens {

const char* ToString(NumaStrategy s) {
  switch (s) {
    case NumaStrategy::kMostAllocated:
      return "most-allocated";
    case NumaStrategy::kLeastAllocated:
      return "least-allocated";
    case NumaStrategy::kNearest:
      return "nearest";
  }
  return "most-allocated";
}

std::optional<NumaStrategy> ParseNumaStrategy(const std::string& s) {
  for (NumaStrategy v :
       {NumaStrategy::kMostAllocated, NumaStrategy::kLeastAllocated, NumaStrategy::kNearest}) {
    if (s == ToString(v)) return v;
  }
  return std::nullopt;
}

namespace {

bool UniformThreads(const TopologyIndex& index) {
  for (int core = 0; core < index.NumCores(); ++core) {
    if (index.CoreCpus().SizeOf(core) != index.MaxThreadsPerCore()) return false;
  }
  return true;
}

// What the bind policy calls the unit it counts, for error messages.
const char* UnitText(BindPolicy p) {
  switch (p) {
    case BindPolicy::kPacked:
      return "free CPUs";
    case BindPolicy::kFullCores:
      return "CPUs in free whole cores";
    case BindPolicy::kSpreadCores:
      return "cores with a free thread";
  }
  return "free CPUs";
}

std::string JoinIds(const std::vector<int>& ids) { return fmt::format("{}", fmt::join(ids, ",")); }

}  // namespace

int PreferredNumaCount(std::span<const int> cpus_per_numa, int num_cpus) {
  absl::InlinedVector<int, 64> sizes(cpus_per_numa.begin(), cpus_per_numa.end());
  std::sort(sizes.begin(), sizes.end(), std::greater<int>());
  int sum = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    sum += sizes[k];
    if (sum >= num_cpus) return static_cast<int>(k) + 1;
  }
  return static_cast<int>(sizes.size());
}

int NumaOfferFromCounts(BindPolicy bind, int threads_per_core, int free_cpus, int free_cores,
                        double factor) {
  const int tpc = std::max(1, threads_per_core);
  const int base = factor >= 1.0
                       ? free_cpus
                       : static_cast<int>(std::floor(factor * static_cast<double>(free_cpus)));
  switch (bind) {
    case BindPolicy::kPacked:
      return base;
    case BindPolicy::kFullCores:
      return std::min(base, free_cores * tpc) / tpc * tpc;
    case BindPolicy::kSpreadCores:
      return std::min(base, free_cores + std::max(0, free_cpus - tpc * free_cores));
  }
  return base;
}

ExclusiveAllocator::ExclusiveAllocator(CpuTopology topo)
    : topo_(std::move(topo)), index_(topo_), uniform_threads_(UniformThreads(index_)) {}

// One Allocate call: per-call scratch over the allocator's index. Dense indexes (cores, NUMA
// nodes, NUMA x L3 pairs, local CPUs) are TopologyIndex's.
class AllocationRun {
  // NUMA nodes (dense indexes) or counts per node; (node, share) lists. Inline: no allocation
  // on machines of up to 16 NUMA nodes.
  using NodeList = absl::InlinedVector<int, 16>;
  using ShareList = absl::InlinedVector<std::pair<int, int>, 16>;

 public:
  AllocationRun(const ExclusiveAllocator& a, const CpuSet& available, const ExclusiveRequest& r)
      : topo_(a.topo_), ix_(a.index_), uniform_(a.uniform_threads_), req_(r),
        available_(available) {}

  absl::StatusOr<ExclusiveAllocation> Run() {
    if (absl::Status s = Validate(); !s.ok()) return s;
    ExclusiveAllocation out;
    if (req_.num_cpus == 0) return absl::StatusOr<ExclusiveAllocation>(absl::in_place);
    if (req_.bind_policy == BindPolicy::kFullCores && uniform_ &&
        req_.num_cpus % ix_.MaxThreadsPerCore() != 0) {
      return absl::ResourceExhaustedError(fmt::format(
          "full-cores: {} CPUs is not a whole number of cores ({} threads per core)",
          req_.num_cpus, ix_.MaxThreadsPerCore()));
    }
    // Free CPUs: the usable ones of allowed NUMA nodes.
    CpuSet usable = available_;
    if (req_.within_numa_nodes) {
      std::vector<int> allowed_ids;
      for (int numa = 0; numa < ix_.NumNumaNodes(); ++numa) {
        if (allowed_[static_cast<size_t>(numa)]) allowed_ids.push_back(ix_.NumaId(numa));
      }
      usable = usable.Intersection(topo_.CpusInNumaNodes(allowed_ids));
    }
    const CpuAccumulator free(ix_, usable, 0);
    free_ = &free;
    if (req_.bind_policy != BindPolicy::kPacked) {
      // The core-based policies read every core's count, some several times: count once.
      core_free_.resize(static_cast<size_t>(ix_.NumCores()));
      for (int core = 0; core < ix_.NumCores(); ++core) {
        core_free_[static_cast<size_t>(core)] = free.CoreFree(core);
      }
    }
    CountOffers();
    NodeList set;
    if (absl::Status s = ChooseNumaSet(set); !s.ok()) return s;
    CpuSet::Builder cpus;
    for (const auto& [numa, share] : Shares(set)) {
      absl::StatusOr<CpuSet> part = PickInNode(numa, share);
      if (!part.ok()) return part.status();
      cpus.Add(*part);
      out.numa_nodes.push_back(ix_.NumaId(numa));
    }
    out.cpus = cpus.Build();
    std::sort(out.numa_nodes.begin(), out.numa_nodes.end());
    if (out.cpus.Size() != req_.num_cpus) {
      return absl::ResourceExhaustedError(fmt::format(
          "{}: cannot compose {} CPUs from whole free cores", ToString(req_.bind_policy),
          req_.num_cpus));
    }
    return out;
  }

 private:
  absl::Status Validate() {
    if (req_.num_cpus < 0) {
      return absl::InvalidArgumentError(
          fmt::format("numCpus: {} is negative", req_.num_cpus));
    }
    factor_.assign(static_cast<size_t>(ix_.NumNumaNodes()), 1.0);
    for (const auto& [numa, f] : req_.capacity) {
      if (!topo_.HasNumaNode(numa)) {
        return absl::InvalidArgumentError(
            fmt::format("capacity: NUMA node {} is not in the topology", numa));
      }
      if (!(f > 0.0 && f <= 1.0)) {
        return absl::InvalidArgumentError(fmt::format(
            "capacity: factor {} for NUMA node {} is outside (0,1]", f, numa));
      }
      const int dense = ix_.NumaIndexOf(numa);
      if (dense >= 0) factor_[static_cast<size_t>(dense)] = f;
    }
    for (int numa : req_.near_numa_nodes) {
      if (!topo_.HasNumaNode(numa)) {
        return absl::InvalidArgumentError(
            fmt::format("nearNumaNodes: NUMA node {} is not in the topology", numa));
      }
    }
    allowed_.assign(static_cast<size_t>(ix_.NumNumaNodes()), !req_.within_numa_nodes);
    if (req_.within_numa_nodes) {
      for (int numa : *req_.within_numa_nodes) {
        if (!topo_.HasNumaNode(numa)) {
          return absl::InvalidArgumentError(
              fmt::format("withinNumaNodes: NUMA node {} is not in the topology", numa));
        }
        const int dense = ix_.NumaIndexOf(numa);
        if (dense >= 0) allowed_[static_cast<size_t>(dense)] = true;
      }
    }
    return absl::OkStatus();
  }

  // Each node's offer (free CPUs under its capacity factor and the bind policy), its whole
  // free cores, and each (NUMA node, L3 group) pair's offer (ignoring the node's bound).
  void CountOffers() {
    offer_.assign(static_cast<size_t>(ix_.NumNumaNodes()), 0);
    whole_cores_.assign(static_cast<size_t>(ix_.NumNumaNodes()), 0);
    unshared_threads_.assign(static_cast<size_t>(ix_.NumNumaNodes()), 0);
    unshared_cores_.clear();
    if (req_.bind_policy == BindPolicy::kPacked && ix_.MaxThreadsPerCore() > 1) {
      // Only a core with a seed thread (IsSeed) can be an unshared half core: visit those (a
      // pod's few CPUs, the system pool), not every core, each once, from its first seed.
      const auto visit = [&](int cpu) {
        const int local = ix_.LocalOf(cpu);
        if (local < 0) return;
        const int core = ix_.CoreOf(local);
        for (int sibling : ix_.CoreCpus().Of(core)) {
          if (sibling == local) break;
          if (IsSeed(ix_.CpuId(sibling))) return;  // visited from that sibling
        }
        const int unshared = UnsharedThreads(core);
        if (unshared == 0) return;
        unshared_cores_.push_back(core);
        unshared_threads_[static_cast<size_t>(ix_.NumaOf(local))] += unshared;
      };
      for (int cpu : req_.pod_cpus) visit(cpu);
      if (req_.allocatable_cpus) {
        for (int cpu : topo_.OnlineCpus().Difference(*req_.allocatable_cpus)) visit(cpu);
      }
    }
    for (int numa = 0; numa < ix_.NumNumaNodes(); ++numa) {
      const auto n = static_cast<size_t>(numa);
      if (ix_.MaxThreadsPerCore() > 1) {
        for (int core : ix_.NumaCores().Of(numa)) {
          if (IsWholeFreeCore(core)) ++whole_cores_[n];
        }
      }
      // floor(f x free); the epsilon keeps 0.29 x 100 at 29 despite binary rounding. Factor 1
      // (most nodes) gives `free` itself, without the call to floor.
      const int free = free_->FreeInNuma(numa);
      const int bound =
          factor_[n] == 1.0
              ? free
              : static_cast<int>(std::floor(factor_[n] * static_cast<double>(free) + 1e-9));
      offer_[n] = Offer(numa, bound);
    }
    pair_offer_.assign(static_cast<size_t>(ix_.NumNumaL3Pairs()), 0);
    if (req_.bind_policy == BindPolicy::kPacked) {
      for (int pair = 0; pair < ix_.NumNumaL3Pairs(); ++pair) {
        pair_offer_[static_cast<size_t>(pair)] = free_->FreeInPair(pair);
      }
    } else {
      for (int core = 0; core < ix_.NumCores(); ++core) {
        pair_offer_[static_cast<size_t>(ix_.NumaL3PairOfCore(core))] += CoreUnit(core);
      }
    }
  }

  int CoreFree(int core) const {
    return core_free_.empty() ? free_->CoreFree(core) : core_free_[static_cast<size_t>(core)];
  }

  bool IsWholeFreeCore(int core) const { return CoreFree(core) == ix_.CoreCpus().SizeOf(core); }

  // An online CPU that no other pod can hold: the same pod's (ExclusiveRequest::pod_cpus) or
  // outside the user pool (ExclusiveRequest::allocatable_cpus, when set: the system pool).
  bool IsSeed(int cpu) const {
    return req_.pod_cpus.Contains(cpu) ||
           (req_.allocatable_cpus && !req_.allocatable_cpus->Contains(cpu));
  }

  // The core's free threads when taking them shares the core with no other pod (waste.h's
  // UnsharedThreadsOfCore: partly free, every taken thread a seed), else 0. CountOffers lists
  // the cores with some in unshared_cores_ (packed only).
  int UnsharedThreads(int core) const {
    int held_by_others = 0;
    for (int local : ix_.CoreCpus().Of(core)) {
      held_by_others += !free_->IsFree(local) && !IsSeed(ix_.CpuId(local));
    }
    return UnsharedThreadsOfCore(ix_.CoreCpus().SizeOf(core), CoreFree(core), held_by_others);
  }

  int CoreUnit(int core) const {
    const int free = CoreFree(core);
    switch (req_.bind_policy) {
      case BindPolicy::kPacked:
        return free;
      case BindPolicy::kFullCores:
        return free == ix_.CoreCpus().SizeOf(core) ? free : 0;
      case BindPolicy::kSpreadCores:
        return free > 0 ? 1 : 0;
    }
    return 0;
  }

  // CPUs the node offers under its bound and the bind policy.
  int Offer(int numa, int bound) const {
    if (req_.bind_policy == BindPolicy::kPacked) return bound;
    int sum = 0;
    for (int core : ix_.NumaCores().Of(numa)) {
      const int unit = CoreUnit(core);
      if (unit > 0 && sum + unit <= bound) sum += unit;
    }
    return sum;
  }

  // Offer per NUMA x L3 pair of one node (ignoring the node's bound), indexed like
  // NumaL3PairsOfNuma().Of(numa): a node's pairs are numbered consecutively (pairs are
  // numbered in (NUMA, L3) order).
  std::span<const int> PairOffers(int numa) const {
    const auto pairs = ix_.NumaL3PairsOfNuma().Of(numa);
    return std::span<const int>(pair_offer_.data(), pair_offer_.size())
        .subspan(static_cast<size_t>(pairs[0]), pairs.size());
  }

  // The L3 pairs (slots into NumaL3PairsOfNuma().Of(numa)) chosen to hold `share` units.
  absl::InlinedVector<size_t, 8> ChoosePairs(int numa, int share) const {
    const std::span<const int> offers = PairOffers(numa);
    absl::InlinedVector<size_t, 8> chosen;
    // One group: the smallest offer that fits (best fit), lowest L3 first on ties.
    size_t best = offers.size();
    for (size_t i = 0; i < offers.size(); ++i) {
      if (offers[i] >= share && (best == offers.size() || offers[i] < offers[best])) best = i;
    }
    if (best != offers.size()) {
      chosen.push_back(best);
      return chosen;
    }
    // Several: largest offers first.
    absl::InlinedVector<size_t, 8> order(offers.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    InsertionSort(std::span<size_t>(order.data(), order.size()),
                  [&](size_t a, size_t b) { return offers[a] > offers[b]; });
    int sum = 0;
    for (size_t i : order) {
      if (sum >= share) break;
      chosen.push_back(i);
      sum += offers[i];
    }
    return chosen;
  }

  int L3Span(const ShareList& shares) const {
    int span = 0;
    for (const auto& [numa, share] : shares) {
      span += static_cast<int>(ChoosePairs(numa, share).size());
    }
    return span;
  }

  // Nodes in decreasing offer (then increasing id; with kNearest, nearest first), dividing the
  // request by SplitShares (alloc/waste.h): whole free cores first, then the other free CPUs.
  ShareList Shares(std::span<const int> set) const {
    NodeList order(set.begin(), set.end());
    const bool near = req_.numa_strategy == NumaStrategy::kNearest &&
                      !req_.near_numa_nodes.empty();
    InsertionSort(std::span<int>(order.data(), order.size()), [&](int a, int b) {
      if (near) {
        const int da = NodeNearScore(a), db = NodeNearScore(b);
        if (da != db) return da < db;
      }
      return offer_[static_cast<size_t>(a)] > offer_[static_cast<size_t>(b)];
    });
    // Whole free cores first over the set (alloc/waste.h, SplitShares).
    absl::InlinedVector<int, 16> offers, whole, split(order.size(), 0);
    for (int numa : order) {
      const auto n = static_cast<size_t>(numa);
      offers.push_back(offer_[n]);
      whole.push_back(UnsharedCapacity(req_.bind_policy, ix_.MaxThreadsPerCore(), offer_[n],
                                       whole_cores_[n], unshared_threads_[n]));
    }
    SplitShares(offers, whole, req_.num_cpus, std::span<int>(split.data(), split.size()));
    ShareList shares;
    for (size_t i = 0; i < order.size(); ++i) {
      if (split[i] > 0) shares.emplace_back(order[i], split[i]);
    }
    return shares;
  }

  // PreferredNumaCount over each node's online CPUs, or its request.allocatable_cpus.
  int PreferredSize() const {
    NodeList sizes;
    for (int numa = 0; numa < ix_.NumNumaNodes(); ++numa) {
      sizes.push_back(req_.allocatable_cpus
                          ? topo_.CpusInNumaNode(ix_.NumaId(numa))
                                .Intersection(*req_.allocatable_cpus)
                                .Size()
                          : ix_.NumaCpus().SizeOf(numa));
    }
    return PreferredNumaCount(sizes, req_.num_cpus);
  }

  // A node's distance to the nearest of near_numa_nodes.
  int NodeNearScore(int numa) const {
    int nearest = std::numeric_limits<int>::max();
    for (int near : req_.near_numa_nodes) {
      nearest = std::min(nearest, topo_.Distance(ix_.NumaId(numa), near));
    }
    return nearest;
  }

  int NearScore(std::span<const int> set) const {
    int score = 0;
    for (int numa : set) score += NodeNearScore(numa);
    return score;
  }

  // How compact a NUMA set is; lower is better: (sockets its CPUs lie in, sum of the NUMA
  // distances over its pairs of nodes). Every choice ranks by this before the strategy score;
  // among single nodes it only sets apart a node that spans several sockets.
  std::pair<int, int> Compactness(std::span<const int> set) const {
    absl::InlinedVector<int, 16> sockets;
    int distance = 0;
    for (size_t i = 0; i < set.size(); ++i) {
      for (int pair : ix_.NumaSocketPairsOfNuma().Of(set[i])) {
        sockets.push_back(ix_.PairSocket(pair));
      }
      for (size_t j = i + 1; j < set.size(); ++j) {
        distance += topo_.Distance(ix_.NumaId(set[i]), ix_.NumaId(set[j]));
      }
    }
    std::sort(sockets.begin(), sockets.end());
    const auto distinct = std::unique(sockets.begin(), sockets.end()) - sockets.begin();
    return {static_cast<int>(distinct), distance};
  }

  // What the set's shares leave behind (alloc/waste.h); lower is better.
  Waste WasteOf(std::span<const int> set) const {
    Waste w;
    for (const auto& [numa, share] : Shares(set)) {
      const auto n = static_cast<size_t>(numa);
      w += ShareWaste(req_.bind_policy, ix_.MaxThreadsPerCore(), free_->FreeInNuma(numa),
                      whole_cores_[n], share, unshared_threads_[n]);
    }
    return w;
  }

  // Lower is better: (strategy score, secondary).
  std::pair<int64_t, int64_t> StrategyScore(std::span<const int> set) const {
    int64_t total = 0;
    for (int numa : set) total += offer_[static_cast<size_t>(numa)];
    switch (req_.numa_strategy) {
      case NumaStrategy::kMostAllocated:
        return {total, 0};
      case NumaStrategy::kLeastAllocated:
        return {-total, 0};
      case NumaStrategy::kNearest:
        if (req_.near_numa_nodes.empty()) return {total, 0};
        return {NearScore(set), total};
    }
    return {total, 0};
  }

  // The NUMA set, ascending dense index, into `best`.
  absl::Status ChooseNumaSet(NodeList& best) const {
    // Candidate nodes (allowed, offering something), ascending id.
    NodeList nodes;
    for (int numa = 0; numa < ix_.NumNumaNodes(); ++numa) {
      if (allowed_[static_cast<size_t>(numa)] && offer_[static_cast<size_t>(numa)] > 0) {
        nodes.push_back(numa);
      }
    }
    // Fewest nodes: the largest offers first.
    NodeList offers;
    for (int numa : nodes) offers.push_back(offer_[static_cast<size_t>(numa)]);
    std::sort(offers.rbegin(), offers.rend());
    int k = 0, sum = 0;
    while (k < static_cast<int>(offers.size()) && sum < req_.num_cpus) {
      sum += offers[static_cast<size_t>(k++)];
    }
    const bool fits = sum >= req_.num_cpus;
    int max_k = static_cast<int>(nodes.size());
    if (req_.topology_policy == TopologyPolicy::kSingleNumaNode) max_k = 1;
    if (req_.topology_policy == TopologyPolicy::kRestricted) max_k = PreferredSize();
    if (!fits || k > max_k) return NoFit(nodes, max_k, sum);

    // On machines with more than kMaxNodes candidate NUMA nodes the search would explode:
    // take the k largest offers (then lowest ids) instead.
    if (nodes.size() > kMaxNodes) {
      std::stable_sort(nodes.begin(), nodes.end(), [&](int a, int b) {
        return offer_[static_cast<size_t>(a)] > offer_[static_cast<size_t>(b)];
      });
      nodes.resize(static_cast<size_t>(k));
      std::sort(nodes.begin(), nodes.end());
      best = nodes;
      return absl::OkStatus();
    }
    // Every k-set that fits; the best by compactness (fewest sockets, then smallest NUMA
    // distances), then waste (alloc/waste.h's Rank), then strategy, then L3 span, then lowest
    // ids (enumeration order is lexicographic, so the first of equals stays).
    best.clear();
    std::tuple<std::pair<int, int>, std::pair<int, int>, std::pair<int64_t, int64_t>>
        best_score{};
    const bool packing = req_.numa_strategy != NumaStrategy::kLeastAllocated;
    int best_span = 0;
    // k <= n <= kMaxNodes: positions and sets fit in fixed arrays.
    std::array<int, kMaxNodes> set{}, pos{};
    const std::span<const int> current(set.data(), static_cast<size_t>(k));
    const int n = static_cast<int>(nodes.size());
    const int* node = nodes.data();
    const int* offer = offer_.data();
    const std::span<int> positions(pos.data(), static_cast<size_t>(k));
    FirstCombination(positions);
    do {
      int total = 0;
      for (size_t i = 0; i < current.size(); ++i) {
        set[i] = node[pos[i]];
        total += offer[set[i]];
      }
      if (total >= req_.num_cpus) {
        const auto score =
            std::make_tuple(Compactness(current), Rank(WasteOf(current), packing),
                            StrategyScore(current));
        if (best.empty() || score < best_score) {
          best.assign(current.begin(), current.end());
          best_score = score;
          best_span = -1;  // computed when a tie needs it
        } else if (score == best_score) {
          if (best_span < 0) best_span = L3Span(Shares(best));
          const int span = L3Span(Shares(current));
          if (span < best_span) {
            best.assign(current.begin(), current.end());
            best_span = span;
          }
        }
      }
    } while (NextCombination(positions, n));
    return absl::OkStatus();
  }

  absl::Status NoFit(std::span<const int> nodes, int max_k, int reachable) const {
    const char* unit = UnitText(req_.bind_policy);
    // The best set of at most max_k nodes: the largest offers.
    std::vector<int> order(nodes.begin(), nodes.end());
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return offer_[static_cast<size_t>(a)] > offer_[static_cast<size_t>(b)];
    });
    if (static_cast<int>(order.size()) > max_k) order.resize(static_cast<size_t>(max_k));
    int largest = 0;
    std::vector<int> ids;
    for (int numa : order) {
      largest += offer_[static_cast<size_t>(numa)];
      ids.push_back(ix_.NumaId(numa));
    }
    std::sort(ids.begin(), ids.end());
    switch (req_.topology_policy) {
      case TopologyPolicy::kSingleNumaNode:
        if (ids.empty()) {
          return absl::ResourceExhaustedError(fmt::format(
              "no single NUMA node has {} {} (none has any)", req_.num_cpus, unit));
        }
        return absl::ResourceExhaustedError(
            fmt::format("no single NUMA node has {} {} (largest: {} on node {})", req_.num_cpus,
                        unit, largest, ids[0]));
      case TopologyPolicy::kRestricted:
        return absl::ResourceExhaustedError(fmt::format(
            "restricted: no set of {} NUMA nodes has {} {} (largest: {} on nodes {})", max_k,
            req_.num_cpus, unit, largest, JoinIds(ids)));
      case TopologyPolicy::kBestEffort:
      case TopologyPolicy::kNone:
        break;
    }
    return absl::ResourceExhaustedError(fmt::format(
        "not enough {}: requested {}, the usable NUMA nodes offer {}", unit, req_.num_cpus,
        reachable));
  }

  // `share` CPUs of one node, by the bind policy, inside the fewest L3 groups.
  absl::StatusOr<CpuSet> PickInNode(int numa, int share) const {
    const std::span<const int> pairs = ix_.NumaL3PairsOfNuma().Of(numa);
    absl::InlinedVector<int, 8> chosen_pairs;
    absl::InlinedVector<char, 8> chosen(pairs.size(), 0);  // by slot
    for (size_t slot : ChoosePairs(numa, share)) {
      chosen_pairs.push_back(pairs[slot]);
      chosen[slot] = 1;
    }
    auto in_chosen = [&](int core) {
      return chosen[static_cast<size_t>(ix_.NumaL3PairOfCore(core) - pairs[0])] != 0;
    };
    CpuSet::Builder out;
    int left = share;
    switch (req_.bind_policy) {
      case BindPolicy::kPacked: {
        // kubelet's take over the whole free cores of the chosen L3 groups, and the free
        // threads of cores no other pod holds part of (the pod's own half cores, a user thread
        // beside the system pool), when they hold the share (alloc/waste.h's
        // UnsharedCapacity; an odd CPU then takes such a thread, which kubelet's take fills
        // first, else a thread of a free core; never the last thread of a core another pod
        // holds), else over every free CPU there.
        const auto n = static_cast<size_t>(numa);
        if (ix_.MaxThreadsPerCore() > 1 &&
            UnsharedCapacity(BindPolicy::kPacked, ix_.MaxThreadsPerCore(), offer_[n],
                             whole_cores_[n], unshared_threads_[n]) >= share) {
          for (int core : ix_.NumaCores().Of(numa)) {
            if (!in_chosen(core) || !IsWholeFreeCore(core)) continue;
            for (int local : ix_.CoreCpus().Of(core)) out.Add(ix_.CpuId(local));
          }
          for (int core : unshared_cores_) {
            if (ix_.NumaOf(ix_.CoreCpus().Of(core).front()) != numa || !in_chosen(core)) continue;
            for (int local : ix_.CoreCpus().Of(core)) {
              if (free_->IsFree(local)) out.Add(ix_.CpuId(local));
            }
          }
          const CpuSet whole = out.Build();
          if (whole.Size() >= share) {
            CpuAccumulator acc(ix_, whole, share);
            if (absl::Status s = TakePacked(acc, TakeOptions()); !s.ok()) return s;
            return ix_.ToCpuSet(acc.Result());
          }
        }
        // kubelet's take over the node's free CPUs in the chosen L3 groups.
        CpuAccumulator acc(*free_, ix_.NumaL3PairMasks(), chosen_pairs, share);
        if (acc.Failed()) return NotEnoughCpus(share, acc.FreeTotal());
        if (absl::Status s = TakePacked(acc, TakeOptions()); !s.ok()) return s;
        return ix_.ToCpuSet(acc.Result());
      }
      case BindPolicy::kFullCores:
        for (int core : ix_.NumaCores().Of(numa)) {
          const int unit = CoreUnit(core);
          if (left == 0) break;
          if (unit == 0 || unit > left || !in_chosen(core)) continue;
          for (int local : ix_.CoreCpus().Of(core)) out.Add(ix_.CpuId(local));
          left -= unit;
        }
        break;
      case BindPolicy::kSpreadCores:
        // Cores whose threads are all free first, then cores already partly used.
        for (bool whole : {true, false}) {
          for (int core : ix_.NumaCores().Of(numa)) {
            if (left == 0) break;
            const int free = CoreFree(core);
            if (free == 0 || (free == ix_.CoreCpus().SizeOf(core)) != whole) continue;
            if (!in_chosen(core)) continue;
            for (int local : ix_.CoreCpus().Of(core)) {
              if (free_->IsFree(local)) {
                out.Add(ix_.CpuId(local));
                --left;
                break;
              }
            }
          }
        }
        break;
    }
    return out.Build();
  }

  static constexpr size_t kMaxNodes = 16;

  const CpuTopology& topo_;
  const TopologyIndex& ix_;
  const bool uniform_;
  const ExclusiveRequest& req_;
  const CpuSet& available_;
  absl::InlinedVector<double, 8> factor_;  // per dense NUMA node
  absl::InlinedVector<char, 8> allowed_;   // per dense NUMA node
  const CpuAccumulator* free_ = nullptr;   // the free CPUs (set by Run)
  absl::InlinedVector<int, 256> core_free_;  // per dense core; empty under packed
  absl::InlinedVector<int, 8> offer_;        // per dense NUMA node, in bind-policy units
  absl::InlinedVector<int, 8> whole_cores_;  // per dense NUMA node: cores with every thread free
  absl::InlinedVector<int, 8> unshared_threads_;  // per dense NUMA node: UnsharedThreads summed
  absl::InlinedVector<int, 8> unshared_cores_;    // dense cores with UnsharedThreads (packed only)
  absl::InlinedVector<int, 32> pair_offer_;  // per (NUMA node, L3 group) pair, likewise
};

absl::StatusOr<ExclusiveAllocation> ExclusiveAllocator::Allocate(
    const CpuSet& available, const ExclusiveRequest& request) const {
  return AllocationRun(*this, available, request).Run();
}

absl::StatusOr<CpuSet> ExclusiveAllocator::Resize(const CpuSet& current,
                                                  const CpuSet& available,
                                                  const ExclusiveRequest& request) const {
  const int want = request.num_cpus;
  if (want < 1) {
    return absl::InvalidArgumentError(fmt::format("numCpus: resize to {} cpus", want));
  }
  if (current.Empty()) return absl::InvalidArgumentError("current cpuset is empty");
  if (const CpuSet off = current.Difference(topo_.OnlineCpus()); !off.Empty()) {
    return absl::InvalidArgumentError(
        fmt::format("current cpus {} are not online", off.ToString()));
  }
  const int threads = std::max(1, topo_.CpusPerCore());
  const bool whole_cores_only = request.bind_policy == BindPolicy::kFullCores && uniform_threads_;
  if (want == current.Size()) return current;
  const char* way = want < current.Size() ? "shrink" : "grow";
  if (whole_cores_only && want % threads != 0) {
    return absl::FailedPreconditionError(fmt::format(
        "{}: full-cores: {} cpus is not a whole number of cores ({} threads per core)", way,
        want, threads));
  }
  if (want < current.Size()) {
    absl::StatusOr<CpuSet> kept = TakeByTopology(index_, current, want);
    if (!kept.ok()) {
      return absl::Status(kept.status().code(),
                          "shrink: " + std::string(kept.status().message()));
    }
    return *kept;
  }
  CpuSet usable = available.Difference(current);
  if (request.bind_policy == BindPolicy::kSpreadCores) {
    usable = usable.Difference(topo_.CpusInCores(topo_.CoresOf(current)));
  }
  ExclusiveRequest extra = request;
  extra.num_cpus = want - current.Size();
  extra.within_numa_nodes = topo_.NumaNodesOf(current);
  absl::StatusOr<ExclusiveAllocation> got = Allocate(usable, extra);
  if (got.ok()) return current.Union(got->cpus);
  const bool may_leave = request.topology_policy == TopologyPolicy::kNone ||
                         request.topology_policy == TopologyPolicy::kBestEffort;
  if (may_leave) {
    // As many as its NUMA nodes still offer, the rest wherever Allocate puts them.
    CpuSet inside;
    ExclusiveRequest part = extra;
    for (part.num_cpus = extra.num_cpus - 1; part.num_cpus > 0 && inside.Empty(); --part.num_cpus) {
      absl::StatusOr<ExclusiveAllocation> p = Allocate(usable, part);
      if (p.ok()) inside = p->cpus;
    }
    ExclusiveRequest rest = extra;
    rest.num_cpus = extra.num_cpus - inside.Size();
    rest.within_numa_nodes.reset();
    got = Allocate(usable.Difference(inside), rest);
    if (got.ok()) return current.Union(inside).Union(got->cpus);
  }
  return absl::Status(got.status().code(), "grow: " + std::string(got.status().message()));
}

absl::StatusOr<ExclusiveAllocation> AllocateExclusive(const CpuTopology& topo,
                                                      const CpuSet& available,
                                                      const ExclusiveRequest& request) {
  return ExclusiveAllocator(topo).Allocate(available, request);
}

}  // namespace huygens
