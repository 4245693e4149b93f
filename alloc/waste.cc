#include "alloc/waste.h"

#include <algorithm>

namespace huygens {

int StrandedCpus(int free_cpus) {
  return free_cpus > 0 && free_cpus < kFragmentUnit ? free_cpus : 0;
}

std::pair<int, int> Rank(const Waste& waste, bool packing) {
  return {waste.shared_cores, packing ? static_cast<int>(!waste.clean_fit) : waste.stranded_cpus};
}

Waste ShareWaste(BindPolicy bind, int threads_per_core, int free_cpus, int free_cores,
                 int share, int own_threads) {
  Waste w;
  const int left = free_cpus - share;
  w.stranded_cpus = StrandedCpus(left);
  w.clean_fit = left == 0 || (left >= kFragmentUnit && left < share);
  if (threads_per_core <= 1) return w;
  switch (bind) {
    case BindPolicy::kPacked:
      w.shared_cores = std::max(0, share - threads_per_core * free_cores - own_threads);
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
