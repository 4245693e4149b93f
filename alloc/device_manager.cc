#include "alloc/device_manager.h"

#include <algorithm>

#include "absl/status/status.h"
#include "alloc/combinations.h"
#include "fmt/format.h"

namespace huygens {
namespace {

int64_t CountOn(const NumaDeviceCounts& counts, int numa) {
  auto it = counts.find(numa);
  return it == counts.end() ? 0 : std::max<int64_t>(it->second, 0);
}

}  // namespace

std::map<std::string, int64_t> NodeDeviceRequests(const NodeDevices& devices,
                                                  const std::map<std::string, int64_t>& requests) {
  std::map<std::string, int64_t> out;
  for (const auto& [resource, n] : requests) {
    if (n > 0 && devices.contains(resource)) out[resource] = n;
  }
  return out;
}

void AddDevices(NodeDevices& into, const std::string& resource, const NumaDeviceCounts& counts,
                int sign) {
  for (const auto& [numa, n] : counts) into[resource][numa] += sign * n;
}

int64_t DeviceCount(const NumaDeviceCounts& counts) {
  int64_t sum = 0;
  for (const auto& [numa, n] : counts) sum += std::max<int64_t>(n, 0);
  return sum;
}

std::vector<int> DeviceNumaNodes(const NumaDeviceCounts& counts) {
  std::vector<int> out;
  for (const auto& [numa, n] : counts) {
    if (n > 0) out.push_back(numa);
  }
  return out;
}

std::vector<TopologyHint> DeviceHints(std::span<const int> numa_nodes,
                                      const NumaDeviceCounts& total,
                                      const NumaDeviceCounts& available,
                                      const NumaDeviceCounts& reusable, int64_t request,
                                      int max_set_size) {
  std::vector<int> ids(numa_nodes.begin(), numa_nodes.end());
  std::sort(ids.begin(), ids.end());
  const int n = static_cast<int>(ids.size());
  const std::vector<int> reusable_numa = DeviceNumaNodes(reusable);
  // Per position in `ids`: the devices there, and those free or reusable (looked up once, not
  // once per set).
  std::vector<int64_t> total_at(ids.size()), matching_at(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    total_at[i] = CountOn(total, ids[i]);
    matching_at[i] = CountOn(available, ids[i]) + CountOn(reusable, ids[i]);
  }
  size_t min_affinity = ids.size();
  std::vector<TopologyHint> hints;
  std::vector<int> pos;
  for (int k = 1; k <= std::min(n, max_set_size); ++k) {
    pos.assign(static_cast<size_t>(k), 0);
    FirstCombination(pos);
    do {
      std::vector<int> mask;
      mask.reserve(pos.size());
      int64_t in_mask = 0, matching = 0;
      for (int p : pos) {
        const auto at = static_cast<size_t>(p);
        mask.push_back(ids[at]);
        in_mask += total_at[at];
        matching += matching_at[at];
      }
      if (in_mask >= request && mask.size() < min_affinity) min_affinity = mask.size();
      if (!std::includes(mask.begin(), mask.end(), reusable_numa.begin(), reusable_numa.end())) {
        continue;
      }
      if (matching < request) continue;
      hints.push_back(TopologyHint{std::move(mask), false});
    } while (NextCombination(pos, n));
  }
  for (TopologyHint& h : hints) h.preferred = h.numa_nodes.size() == min_affinity;
  return hints;
}

std::map<std::string, ProviderHints> DeviceProviderHints(
    std::span<const int> numa_nodes, const NodeDevices& total, const NodeDevices& available,
    const NodeDevices& reusable, const std::map<std::string, int64_t>& requests,
    int max_set_size) {
  static const NumaDeviceCounts kNone;
  auto of = [](const NodeDevices& d, const std::string& r) -> const NumaDeviceCounts& {
    auto it = d.find(r);
    return it == d.end() ? kNone : it->second;
  };
  std::map<std::string, ProviderHints> out;
  for (const auto& [resource, request] : requests) {
    auto t = total.find(resource);
    if (t == total.end()) continue;  // not a device-plugin resource of this node
    if (DeviceCount(t->second) == 0) {
      out[resource] = std::nullopt;  // no device with a NUMA node: no preference
      continue;
    }
    const NumaDeviceCounts& free = of(available, resource);
    const NumaDeviceCounts& reuse = of(reusable, resource);
    if (DeviceCount(free) + DeviceCount(reuse) < request) {
      out[resource] = std::vector<TopologyHint>{};
      continue;
    }
    out[resource] = DeviceHints(numa_nodes, t->second, free, reuse, request, max_set_size);
  }
  return out;
}

absl::StatusOr<DeviceTake> TakeDevices(const std::string& resource,
                                       const NumaDeviceCounts& available,
                                       const NumaDeviceCounts& reusable, int64_t request,
                                       const std::vector<int>& affinity) {
  const int64_t have = DeviceCount(available) + DeviceCount(reusable);
  if (have < request) {
    return absl::ResourceExhaustedError(fmt::format(
        "requested number of devices unavailable for {}. Requested: {}, Available: {}", resource,
        request, have));
  }
  auto in_affinity = [&](int numa) {
    return std::find(affinity.begin(), affinity.end(), numa) != affinity.end();
  };
  // kubelet's filterByAffinity order: NUMA nodes of the hint first, each group by fewest
  // devices, then the lower id.
  auto ordered = [&](const NumaDeviceCounts& counts) {
    std::vector<int> ids = DeviceNumaNodes(counts);
    std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) {
      const bool ia = in_affinity(a), ib = in_affinity(b);
      if (ia != ib) return ia;
      return CountOn(counts, a) < CountOn(counts, b);
    });
    return ids;
  };
  DeviceTake out;
  int64_t needed = request;
  auto take_from = [&](const NumaDeviceCounts& counts, NumaDeviceCounts& into, bool only_aligned) {
    for (int numa : ordered(counts)) {
      if (needed == 0) return;
      if (only_aligned && !in_affinity(numa)) continue;
      const int64_t t = std::min(needed, CountOn(counts, numa) - CountOn(into, numa));
      if (t <= 0) continue;
      into[numa] += t;
      needed -= t;
    }
  };
  take_from(reusable, out.from_reusable, false);
  take_from(available, out.from_available, true);
  take_from(available, out.from_available, false);
  return out;
}

}  // namespace huygens
