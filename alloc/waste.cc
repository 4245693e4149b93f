#include "alloc/waste.h"

#include <algorithm>

namespace huygens {

int StrandedCpus(int free_cpus) {
  return free_cpus > 0 && free_cpus < kFragmentUnit ? free_cpus : 0;
}

std::pair<int, int> Rank(const Waste& waste, bool packing) {
  return {waste.shared_cores, packing ? static_cast<int>(!waste.clean_fit) : waste.stranded_cpus};
}

int UnsharedCapacity(BindPolicy bind, int threads_per_core, int offer, int free_cores,
                     int unshared_threads) {
  if (bind != BindPolicy::kPacked || threads_per_core <= 1) return offer;
  return std::min(offer, threads_per_core * free_cores + unshared_threads);
}

void SplitShares(std::span<const int> offers, std::span<const int> whole, int cpus,
                 std::span<int> shares) {
  int left = cpus;
  for (size_t i = 0; i < shares.size(); ++i) {
    shares[i] = std::max(0, std::min(whole[i], left));
    left -= shares[i];
  }
  for (size_t i = 0; i < shares.size() && left > 0; ++i) {
    const int more = std::max(0, std::min(offers[i] - shares[i], left));
    shares[i] += more;
    left -= more;
  }
}

Waste ShareWaste(BindPolicy bind, int threads_per_core, int free_cpus, int free_cores,
                 int share, int unshared_threads) {
  Waste w;
  const int left = free_cpus - share;
  w.stranded_cpus = StrandedCpus(left);
  w.clean_fit = left == 0 || (left >= kFragmentUnit && left < share);
  if (threads_per_core <= 1) return w;
  switch (bind) {
    case BindPolicy::kPacked:
      w.shared_cores = std::max(0, share - threads_per_core * free_cores - unshared_threads);
      break;
    case BindPolicy::kSpreadCores:
      w.shared_cores = std::max(0, share - free_cores);
      break;
    case BindPolicy::kFullCores:
      break;
  }
  return w;
}

}  // namespace huygens
