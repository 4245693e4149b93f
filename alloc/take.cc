#include "alloc/take.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "alloc/combinations.h"
#include "alloc/cpu_accumulator.h"
#include "fmt/format.h"

namespace huygens {
namespace {

size_t Sz(int i) { return static_cast<size_t>(i); }

// kubelet's standardDeviation: mean and result rounded to 3 decimals (math.Round semantics).
double RoundedStandardDeviation(const std::vector<int>& xs) {
  double sum = 0;
  for (int x : xs) sum += static_cast<double>(x);
  const double n = static_cast<double>(xs.size());
  const double mean = std::round(sum / n * 1000) / 1000;
  double squares = 0;
  for (int x : xs) squares += (static_cast<double>(x) - mean) * (static_cast<double>(x) - mean);
  return std::round(std::sqrt(squares / n) * 1000) / 1000;
}

// Calls f(combo) for every k-subset of `items` in lexicographic order of positions (kubelet's
// iterateCombinations, alloc/combinations.h); f returns false to stop.
template <typename F>
void ForEachCombination(const std::vector<int>& items, int k, F&& f) {
  const int n = static_cast<int>(items.size());
  if (k < 1 || k > n) return;
  std::vector<int> pos(Sz(k));
  std::vector<int> combo(Sz(k));
  FirstCombination(pos);
  do {
    for (int i = 0; i < k; ++i) combo[Sz(i)] = items[Sz(pos[Sz(i)])];
    if (!f(combo)) return;
  } while (NextCombination(pos, n));
}

// Hands out `remainder` CPUs in groups of `group_size` round-robin over `subset`, skipping
// nodes with fewer than `group_size` left (kubelet's remainder loop). Returns false where
// kubelet's loop would spin forever: a full round hands out nothing while CPUs remain due.
bool DistributeRemainder(const std::vector<int>& subset, int remainder, int group_size,
                         std::vector<int>& left /* by position in `numas` */,
                         const std::vector<int>& position) {
  while (remainder > 0) {
    bool progressed = false;
    for (int numa : subset) {
      if (remainder == 0) break;
      int& l = left[Sz(position[Sz(numa)])];
      if (l < group_size) continue;
      l -= group_size;
      remainder -= group_size;
      progressed = true;
    }
    if (!progressed) return false;
  }
  return true;
}

// kubelet's iterateCombinations builds each combination by appending one NUMA node at a time
// to the shorter combination it came from, and the combinations kubelet keeps (the best one,
// the best remainder subset) are kept by reference, not copied. Go's append gives an []int
// of one element at a time the capacities 1, 2, 4, 8, 16, ..., so a fresh array is allocated
// only at lengths 1, 2, 3, 5, 9, 17, ...; longer combinations write their further elements
// in place into the array of their length-OwnPrefix(k) prefix, which later combinations with
// that same prefix share. Returns how many leading elements of a k-combination are its own:
// k for k = 1, 2, 3, 5, 9, ...; 3 for k = 4; 5 for k = 6..8; 9 for k = 10..16.
size_t OwnPrefix(size_t k) {
  size_t own = std::min<size_t>(k, 2);
  while (own >= 2 && 2 * own - 1 <= k) own = 2 * own - 1;
  return own;
}

// A combination kept out of one enumeration of ForEachCombination as kubelet's Go code holds
// it (see OwnPrefix): Follow() is shown every combination the enumeration produces, in order
// and including the one it stops on, and rewrites the kept one's shared elements as Go's
// in-place append does. With a 4-combination [a, b, c, d] kept out of nodes 0..7, the
// enumeration's next combinations [a, b, c, e] rewrite it to end in e, and it becomes
// [a, b, c, 7] when the enumeration moves past prefix [a, b, c].
class KeptCombination {
 public:
  bool Empty() const { return items_.empty(); }
  const std::vector<int>& Items() const { return items_; }
  void Keep(const std::vector<int>& combo) { items_ = combo; }
  void Follow(const std::vector<int>& combo) {
    if (items_.size() != combo.size()) return;
    const size_t own = OwnPrefix(combo.size());
    if (own == combo.size() || !std::equal(items_.begin(), items_.begin() + own, combo.begin())) {
      return;
    }
    std::copy(combo.begin() + own, combo.end(), items_.begin() + own);
  }

 private:
  std::vector<int> items_;
};

}  // namespace

absl::Status NotEnoughCpus(int requested, int available) {
  return absl::ResourceExhaustedError(fmt::format(
      "not enough cpus available to satisfy request: requested={}, available={}", requested,
      available));
}

absl::Status TakePacked(CpuAccumulator& acc, const TakeOptions& options) {
  if (acc.Satisfied()) return absl::OkStatus();

  acc.TakeFullFirstLevel(options.whole_units_by_average_size);
  if (acc.Satisfied()) return absl::OkStatus();
  acc.TakeFullSecondLevel(options.whole_units_by_average_size);
  if (acc.Satisfied()) return absl::OkStatus();
  if (options.prefer_align_by_uncore_cache) {
    acc.TakeUncoreCache();
    if (acc.Satisfied()) return absl::OkStatus();
  }
  // kubelet skips whole cores with the spread strategy (distribute-cpus-across-cores).
  if (options.cpu_sorting_strategy != CpuSortingStrategy::kSpread) {
    acc.TakeFullCores(options.whole_units_by_average_size);
    if (acc.Satisfied()) return absl::OkStatus();
  }
  acc.TakeRemainingCpus(options.cpu_sorting_strategy);
  if (acc.Satisfied()) return absl::OkStatus();
  return absl::InternalError("failed to allocate cpus");
}

absl::StatusOr<CpuSet> TakeByTopology(const TopologyIndex& index, const CpuSet& available,
                                      int num_cpus, const TakeOptions& options) {
  if (num_cpus < 0) {
    return absl::InvalidArgumentError(fmt::format("num_cpus {} is negative", num_cpus));
  }
  CpuAccumulator acc(index, available, num_cpus);
  if (acc.Failed()) return NotEnoughCpus(num_cpus, available.Size());
  if (absl::Status s = TakePacked(acc, options); !s.ok()) return s;
  return index.ToCpuSet(acc.Result());
}

absl::StatusOr<CpuSet> TakeByTopology(const CpuTopology& topo, const CpuSet& available,
                                      int num_cpus, const TakeOptions& options) {
  return TakeByTopology(TopologyIndex(topo), available, num_cpus, options);
}

absl::StatusOr<CpuSet> TakeByTopologyNumaDistributed(const TopologyIndex& index,
                                                     const CpuSet& available, int num_cpus,
                                                     int cpu_group_size,
                                                     const TakeOptions& options) {
  if (cpu_group_size < 1) {
    return absl::InvalidArgumentError(
        fmt::format("cpu_group_size {} is not positive", cpu_group_size));
  }
  // kubelet does not apply the uncore-cache option on this path.
  TakeOptions packed = options;
  packed.prefer_align_by_uncore_cache = false;
  if (num_cpus < 0 || num_cpus % cpu_group_size != 0) {
    return TakeByTopology(index, available, num_cpus, packed);
  }

  CpuAccumulator acc(index, available, num_cpus);
  if (acc.Satisfied()) return CpuSet();
  if (acc.Failed()) return NotEnoughCpus(num_cpus, available.Size());

  CpuAccumulator::UnitList sorted;
  acc.SortedNumas(sorted);
  const std::vector<int> numas(sorted.begin(), sorted.end());
  // position[numa] = its place in `numas` (the balance vector is indexed by position).
  std::vector<int> position(Sz(index.NumNumaNodes()), -1);
  for (size_t i = 0; i < numas.size(); ++i) position[Sz(numas[i])] = static_cast<int>(i);
  std::vector<int> free_by_position(numas.size());
  for (size_t i = 0; i < numas.size(); ++i) free_by_position[i] = acc.FreeInNuma(numas[i]);

  // kubelet's rangeNUMANodesNeededToSatisfy.
  const int g = cpu_group_size;
  const int machine_groups = (index.NumCpus() - 1) / g + 1;
  const int groups_per_numa = (machine_groups - 1) / index.NumNumaNodes() + 1;
  const int groups_needed = (num_cpus - 1) / g + 1;
  const int min_numas = (groups_needed - 1) / groups_per_numa + 1;
  const int max_numas = std::min(groups_needed, static_cast<int>(numas.size()));

  std::vector<int> after, trial, remainder_combo;
  for (int k = min_numas; k <= max_numas; ++k) {
    double best_balance = std::numeric_limits<double>::max();
    // As kubelet keeps them (KeptCombination): the best combination can come out of this
    // enumeration with other NUMA nodes than the ones scored, and so can its remainder subset.
    KeptCombination best_combo;
    std::vector<int> best_remainder;
    ForEachCombination(numas, k, [&](const std::vector<int>& combo) {
      best_combo.Follow(combo);
      if (best_balance == 0) return false;
      int total = 0, groups = 0;
      for (int numa : combo) {
        total += acc.FreeInNuma(numa);
        groups += acc.FreeInNuma(numa) / g;
      }
      if (total < num_cpus || groups * g < num_cpus) return true;
      const int distribution = (num_cpus / k / g) * g;
      for (int numa : combo) {
        if (acc.FreeInNuma(numa) < distribution) return true;
      }
      after = free_by_position;
      for (int numa : combo) after[Sz(position[Sz(numa)])] -= distribution;
      const int remainder = num_cpus - distribution * k;
      remainder_combo.clear();
      for (int numa : combo) {
        if (after[Sz(position[Sz(numa)])] >= g) remainder_combo.push_back(numa);
      }
      double local_balance = std::numeric_limits<double>::max();
      KeptCombination local_remainder;
      if (remainder == 0) local_balance = RoundedStandardDeviation(after);
      for (int r = static_cast<int>(remainder_combo.size()); remainder > 0 && r >= 1; --r) {
        ForEachCombination(remainder_combo, r, [&](const std::vector<int>& subset) {
          local_remainder.Follow(subset);
          int capacity = 0;
          for (int numa : subset) capacity += after[Sz(position[Sz(numa)])];
          if (capacity < remainder) return true;
          trial = after;
          // Where kubelet would spin forever, this subset simply cannot take the remainder.
          if (!DistributeRemainder(subset, remainder, g, trial, position)) return true;
          const double balance = RoundedStandardDeviation(trial);
          if (balance < local_balance) {
            local_balance = balance;
            local_remainder.Keep(subset);
          }
          return true;
        });
      }
      if (local_balance < best_balance) {
        best_balance = local_balance;
        best_remainder = local_remainder.Items();
        best_combo.Keep(combo);
      }
      return true;
    });
    if (best_combo.Empty()) continue;

    // The shares are taken as kubelet takes them: each with takeByTopologyNUMAPacked over the
    // NUMA node's free CPUs, whose CPUs (busy ones of a whole unit too, with
    // whole_units_by_average_size) all count; a share the node cannot give is skipped, and
    // the count check below reports it.
    const std::vector<int>& chosen = best_combo.Items();
    const int distribution = (num_cpus / static_cast<int>(chosen.size()) / g) * g;
    auto take_from = [&](int numa, int count) {
      const int units[] = {numa};
      CpuAccumulator sub(acc, index.NumaMasks(), units, count);
      if (sub.Failed() || !TakePacked(sub, packed).ok()) return;
      acc.TakeCpus(sub.Result(), packed.whole_units_by_average_size);
    };
    for (int numa : chosen) take_from(numa, distribution);
    int remainder = num_cpus - distribution * static_cast<int>(chosen.size());
    while (remainder > 0) {
      bool progressed = false;
      for (int numa : best_remainder) {
        if (remainder == 0) break;
        if (acc.FreeInNuma(numa) < g) continue;
        take_from(numa, g);
        remainder -= g;
        progressed = true;
      }
      // Only after a kept combination changed (above): kubelet's loop spins here forever.
      if (!progressed) break;
    }
    if (acc.Needed() > 0) {
      return absl::InternalError(fmt::format(
          "accounting error, not enough CPUs allocated, remaining: {}", acc.Needed()));
    }
    if (acc.Needed() < 0) {
      return absl::InternalError(fmt::format(
          "accounting error, too many CPUs allocated, remaining: {}", acc.Needed()));
    }
    return index.ToCpuSet(acc.Result());
  }
  // No NUMA combination can take the CPUs evenly: kubelet falls back to packing.
  return TakeByTopology(index, available, num_cpus, packed);
}

absl::StatusOr<CpuSet> TakeByTopologyNumaDistributed(const CpuTopology& topo,
                                                     const CpuSet& available, int num_cpus,
                                                     int cpu_group_size,
                                                     const TakeOptions& options) {
  return TakeByTopologyNumaDistributed(TopologyIndex(topo), available, num_cpus, cpu_group_size,
                                       options);
}

absl::StatusOr<CpuSet> TakeAligned(const CpuTopology& topo, const CpuSet& allocatable,
                                   int num_cpus, std::span<const int> numa_nodes,
                                   bool align_by_socket, TakeFunction take) {
  CpuSet result;
  if (!numa_nodes.empty()) {
    CpuSet region = topo.CpusInNumaNodes(numa_nodes);
    if (align_by_socket) {
      const std::vector<int> sockets = topo.SocketsOf(region);
      region = topo.CpusInSockets(sockets);
    }
    const CpuSet aligned = allocatable.Intersection(region);
    absl::StatusOr<CpuSet> taken = take(aligned, std::min(num_cpus, aligned.Size()));
    if (!taken.ok()) return taken.status();
    result = *taken;
  }
  if (num_cpus > result.Size() || numa_nodes.empty()) {
    absl::StatusOr<CpuSet> rest = take(allocatable.Difference(result), num_cpus - result.Size());
    if (!rest.ok()) return rest.status();
    result = result.Union(*rest);
  }
  return result;
}

}  // namespace huygens
