#include "alloc/waste.h"

#include <algorithm>

namespace huygens {

int StrandedCpus(int free_cpus) {
  return free_cpus > 0 && free_cpus < kFragmentUnit ? free_cpus : 0;
}

Waste ShareWaste(BindPolicy bind, int threads_per_core, int free_cpus, int free_cores,
                 int share) {
  Waste w;
  w.stranded_cpus = StrandedCpus(free_cpus - share);
  if (threads_per_core <= 1) return w;
  switch (bind) {
    case BindPolicy::kPacked:
      w.shared_cores = std::max(0, share - threads_per_core * free_cores);
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
