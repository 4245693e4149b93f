#include "alloc/merge.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstdint>
#include <optional>
#include <utility>

#include "alloc/bits.h"
#include "fmt/format.h"

namespace huygens {
namespace {

// A hint over positions in the sorted NUMA node list. has_affinity == false is kubelet's nil
// NUMANodeAffinity; comparing masks as numbers orders them as kubelet orders NUMA-id masks,
// since positions keep the order of ids.
struct Hint {
  bool has_affinity = false;
  uint64_t mask = 0;
  bool preferred = false;
};

int Count(uint64_t mask) { return PopCount(mask); }

// kubelet's bitmask IsNarrowerThan.
bool IsNarrower(uint64_t a, uint64_t b) {
  if (Count(a) == Count(b)) return a < b;
  return Count(a) < Count(b);
}

std::optional<bool> ParseGoBool(const std::string& s) {
  if (s == "1" || s == "t" || s == "T" || s == "TRUE" || s == "true" || s == "True") return true;
  if (s == "0" || s == "f" || s == "F" || s == "FALSE" || s == "false" || s == "False") {
    return false;
  }
  return std::nullopt;
}

class Merger {
 public:
  Merger(TopologyPolicy policy, const TopologyManagerOptions& options, std::vector<int> ids,
         const std::map<int, std::map<int, int>>& distances)
      : policy_(policy), options_(options), ids_(std::move(ids)) {
    all_ = ids_.size() == 64 ? ~uint64_t{0} : (uint64_t{1} << ids_.size()) - 1;
    if (!ids_.empty() && ids_.back() < kMaxTableId) {
      bit_of_id_.assign(static_cast<size_t>(ids_.back()) + 1, 0);
      for (size_t i = 0; i < ids_.size(); ++i) {
        bit_of_id_[static_cast<size_t>(ids_[i])] = uint64_t{1} << i;
      }
    }
    if (options_.prefer_closest_numa_nodes) {
      // Dense matrix by position (REQUIRES: every pair present, checked by MergeHints).
      distance_.resize(ids_.size() * ids_.size());
      for (size_t a = 0; a < ids_.size(); ++a) {
        const std::map<int, int>& row = distances.at(ids_[a]);
        for (size_t b = 0; b < ids_.size(); ++b) {
          distance_[a * ids_.size() + b] = row.at(ids_[b]);
        }
      }
    }
  }

  uint64_t All() const { return all_; }

  Hint ToHint(const TopologyHint& h) const {
    Hint out;
    out.preferred = h.preferred;
    if (h.numa_nodes.empty()) return out;  // nil affinity
    out.has_affinity = true;
    for (int id : h.numa_nodes) out.mask |= BitOf(id);
    return out;
  }

  // The mask bit of a NUMA node id; 0 for an id not in the machine's list.
  uint64_t BitOf(int id) const {
    if (!bit_of_id_.empty()) {
      return id >= 0 && static_cast<size_t>(id) < bit_of_id_.size()
                 ? bit_of_id_[static_cast<size_t>(id)]
                 : 0;
    }
    auto it = std::lower_bound(ids_.begin(), ids_.end(), id);
    return it != ids_.end() && *it == id ? uint64_t{1} << (it - ids_.begin()) : 0;
  }

  TopologyHint FromHint(const Hint& h) const {
    TopologyHint out;
    out.preferred = h.preferred;
    if (!h.has_affinity) return out;
    for (size_t i = 0; i < ids_.size(); ++i) {
      if (h.mask & (uint64_t{1} << i)) out.numa_nodes.push_back(ids_[i]);
    }
    return out;
  }

  // kubelet's filterProvidersHints.
  std::vector<std::vector<Hint>> Filter(
      const std::vector<std::map<std::string, ProviderHints>>& providers) const {
    std::vector<std::vector<Hint>> all;
    for (const auto& provider : providers) {
      if (provider.empty()) {
        all.push_back({Hint{false, 0, true}});
        continue;
      }
      for (const auto& [resource, hints] : provider) {
        if (!hints.has_value()) {
          all.push_back({Hint{false, 0, true}});
        } else if (hints->empty()) {
          all.push_back({Hint{false, 0, false}});
        } else {
          std::vector<Hint> converted;
          converted.reserve(hints->size());
          for (const TopologyHint& h : *hints) converted.push_back(ToHint(h));
          all.push_back(std::move(converted));
        }
      }
    }
    return all;
  }

  // kubelet's filterSingleNumaHints: keep preferred hints with no affinity or one node.
  static std::vector<std::vector<Hint>> SingleNumaOnly(std::vector<std::vector<Hint>> all) {
    for (auto& hints : all) {
      std::vector<Hint> kept;
      for (const Hint& h : hints) {
        if (h.preferred && (!h.has_affinity || Count(h.mask) == 1)) kept.push_back(h);
      }
      hints = std::move(kept);
    }
    return all;
  }

  // kubelet's HintMerger.Merge.
  Hint Merge(const std::vector<std::vector<Hint>>& all) {
    best_non_preferred_count_ = MaxOfMinAffinityCounts(all);
    std::optional<Hint> best;
    for (const auto& hints : all) {
      if (hints.empty()) return Hint{true, all_, false};  // no permutation at all
    }
    std::vector<size_t> index(all.size(), 0);
    while (true) {
      best = Compare(best, MergePermutation(all, index));
      // Odometer over the cross product, last provider fastest (kubelet's recursion order).
      bool advanced = false;
      for (size_t i = all.size(); i > 0 && !advanced; --i) {
        if (++index[i - 1] < all[i - 1].size()) {
          advanced = true;
        } else {
          index[i - 1] = 0;
        }
      }
      if (!advanced) break;
    }
    if (!best.has_value()) return Hint{true, all_, false};
    return *best;
  }

 private:
  Hint MergePermutation(const std::vector<std::vector<Hint>>& all,
                        const std::vector<size_t>& index) const {
    bool preferred = true;
    uint64_t mask = all_;
    std::optional<uint64_t> first;
    for (size_t p = 0; p < all.size(); ++p) {
      const Hint& h = all[p][index[p]];
      if (h.has_affinity) {
        mask &= h.mask;
        if (!first.has_value()) {
          first = h.mask;
        } else if (*first != h.mask) {
          preferred = false;
        }
      }
      if (!h.preferred) preferred = false;
    }
    return Hint{true, mask, preferred};
  }

  // kubelet's maxOfMinAffinityCounts over narrowestHint of each provider.
  static int MaxOfMinAffinityCounts(const std::vector<std::vector<Hint>>& all) {
    int result = 0;
    for (const auto& hints : all) {
      const Hint* narrowest = nullptr;
      for (const Hint& h : hints) {
        if (!h.has_affinity) continue;
        if (narrowest == nullptr || IsNarrower(h.mask, narrowest->mask)) narrowest = &h;
      }
      if (narrowest != nullptr) result = std::max(result, Count(narrowest->mask));
    }
    return result;
  }

  // Sum of distances over all ordered pairs of the mask (kubelet averages over count^2 pairs;
  // both masks compared have the same count, so sums compare as averages do).
  int64_t DistanceSum(uint64_t mask) const {
    int64_t sum = 0;
    for (uint64_t as = mask; as != 0; as &= as - 1) {
      const int* row = &distance_[static_cast<size_t>(std::countr_zero(as)) * ids_.size()];
      for (uint64_t bs = mask; bs != 0; bs &= bs - 1) sum += row[std::countr_zero(bs)];
    }
    return sum;
  }

  // DistanceSum of the best hint so far, which changes rarely: remembered.
  int64_t CurrentDistanceSum(uint64_t mask) const {
    if (mask != summed_mask_) {
      summed_mask_ = mask;
      summed_ = DistanceSum(mask);
    }
    return summed_;
  }

  // kubelet's compareNumaAffinityMasks: true when the candidate replaces the current hint.
  bool CandidateFitter(uint64_t current, uint64_t candidate) const {
    if (candidate == current) return false;
    if (policy_ != TopologyPolicy::kSingleNumaNode && options_.prefer_closest_numa_nodes &&
        Count(current) == Count(candidate)) {
      // NUMAInfo.Closest: smaller average distance; equal: the smaller mask.
      const int64_t dc = CurrentDistanceSum(current), dn = DistanceSum(candidate);
      if (dc == dn) return candidate < current;
      return dn < dc;
    }
    // NUMAInfo.Narrowest(current, candidate): current wins when it is narrower.
    return !IsNarrower(current, candidate);
  }

  // kubelet's HintMerger.compare.
  std::optional<Hint> Compare(const std::optional<Hint>& current, const Hint& candidate) const {
    if (Count(candidate.mask) == 0) return current;
    if (!current.has_value()) return candidate;
    const Hint& cur = *current;
    if (!cur.preferred && candidate.preferred) return candidate;
    if (cur.preferred && !candidate.preferred) return current;
    auto fitter = [&]() -> std::optional<Hint> {
      return CandidateFitter(cur.mask, candidate.mask) ? candidate : cur;
    };
    if (cur.preferred && candidate.preferred) return fitter();
    const int best = best_non_preferred_count_;
    const int cur_count = Count(cur.mask), cand_count = Count(candidate.mask);
    if (cur_count > best) return fitter();
    if (cur_count == best) return cand_count != best ? current : fitter();
    if (cand_count > best) return current;
    if (cand_count == best) return candidate;
    if (cand_count > cur_count) return candidate;
    if (cand_count < cur_count) return current;
    return fitter();
  }

  TopologyPolicy policy_;
  TopologyManagerOptions options_;
  std::vector<int> ids_;
  // BitOf's table by id, when every id is below kMaxTableId (real machines); empty otherwise.
  static constexpr int kMaxTableId = 1024;
  std::vector<uint64_t> bit_of_id_;
  std::vector<int> distance_;  // [a * n + b]: distance between positions a and b
  mutable uint64_t summed_mask_ = 0;  // the mask CurrentDistanceSum last summed (0: none)
  mutable int64_t summed_ = 0;
  uint64_t all_ = 0;
  int best_non_preferred_count_ = 0;
};

}  // namespace

absl::StatusOr<TopologyManagerOptions> ParseTopologyManagerOptions(
    const std::map<std::string, std::string>& options) {
  TopologyManagerOptions out;
  for (const auto& [key, value] : options) {
    if (key == "prefer-closest-numa-nodes") {
      std::optional<bool> b = ParseGoBool(value);
      if (!b.has_value()) {
        return absl::InvalidArgumentError(fmt::format(
            "topology manager option prefer-closest-numa-nodes: {:?} is not a boolean", value));
      }
      out.prefer_closest_numa_nodes = *b;
    } else if (key == "max-allowable-numa-nodes") {
      int n = 0;
      const char* end = value.data() + value.size();
      auto [ptr, ec] = std::from_chars(value.data(), end, n);
      if (value.empty() || ec != std::errc() || ptr != end) {
        return absl::InvalidArgumentError(fmt::format(
            "topology manager option max-allowable-numa-nodes: {:?} is not an integer", value));
      }
      if (n < kDefaultMaxAllowableNumaNodes) {
        return absl::InvalidArgumentError(fmt::format(
            "topology manager option max-allowable-numa-nodes: the minimum value is {}, got {}",
            kDefaultMaxAllowableNumaNodes, n));
      }
      out.max_allowable_numa_nodes = n;
    } else {
      return absl::InvalidArgumentError(
          fmt::format("topology manager option {:?}: unsupported option", key));
    }
  }
  return out;
}

absl::StatusOr<MergeResult> MergeHints(
    TopologyPolicy policy, const TopologyManagerOptions& options, std::span<const int> numa_nodes,
    const std::map<int, std::map<int, int>>& distances,
    const std::vector<std::map<std::string, ProviderHints>>& providers) {
  if (options.max_allowable_numa_nodes < kDefaultMaxAllowableNumaNodes) {
    return absl::InvalidArgumentError(fmt::format(
        "topology manager option max-allowable-numa-nodes: the minimum value is {}, got {}",
        kDefaultMaxAllowableNumaNodes, options.max_allowable_numa_nodes));
  }
  std::vector<int> ids(numa_nodes.begin(), numa_nodes.end());
  std::sort(ids.begin(), ids.end());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0) {
      return absl::InvalidArgumentError(fmt::format("numaNodes: NUMA node id {} is negative",
                                                    ids[i]));
    }
    if (i > 0 && ids[i] == ids[i - 1]) {
      return absl::InvalidArgumentError(
          fmt::format("numaNodes: NUMA node {} is listed twice", ids[i]));
    }
  }
  // kubelet's none policy admits everything with no affinity and checks nothing else.
  if (policy == TopologyPolicy::kNone) return MergeResult{TopologyHint{}, true};
  if (ids.empty()) return absl::InvalidArgumentError("numaNodes: no NUMA nodes given");
  const int n = static_cast<int>(ids.size());
  if (n > options.max_allowable_numa_nodes) {
    return absl::InvalidArgumentError(fmt::format(
        "topology manager: unsupported on machines with more than {} NUMA Nodes (this machine "
        "has {}); raise the topology manager option max-allowable-numa-nodes",
        options.max_allowable_numa_nodes, n));
  }
  if (n > 64) {
    return absl::InvalidArgumentError(fmt::format(
        "topology manager: at most 64 NUMA nodes are supported (this machine has {})", n));
  }
  if (options.prefer_closest_numa_nodes) {
    for (int a : ids) {
      for (int b : ids) {
        auto row = distances.find(a);
        if (row == distances.end() || !row->second.contains(b)) {
          return absl::InvalidArgumentError(fmt::format(
              "distances: no distance from NUMA node {} to {} (prefer-closest-numa-nodes needs "
              "every pair)",
              a, b));
        }
      }
    }
  }

  Merger merger(policy, options, std::move(ids), distances);
  std::vector<std::vector<Hint>> filtered = merger.Filter(providers);
  if (policy == TopologyPolicy::kSingleNumaNode) {
    filtered = Merger::SingleNumaOnly(std::move(filtered));
  }
  Hint best = merger.Merge(filtered);
  if (policy == TopologyPolicy::kSingleNumaNode && best.mask == merger.All()) {
    best.has_affinity = false;
    best.mask = 0;
  }
  const bool admit = policy == TopologyPolicy::kBestEffort || best.preferred;
  return MergeResult{merger.FromHint(best), admit};
}

}  // namespace huygens
