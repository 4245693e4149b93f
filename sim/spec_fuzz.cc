// Fuzzes the simulator's YAML spec parsers (cluster spec, memoryManager included, and workload
// spec, hugepages, affinity groups and the rebalance block included): any input gives a spec or
// an error, never a crash; a parsed cluster keeps its invariants (topology with CPUs, memory
// manager accepted by kubelet's rules), a parsed workload its own (affinityGroups >= 1, a
// positive rebalance interval).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "alloc/memory_manager.h"
#include "sim/cluster_spec.h"
#include "sim/workload.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto cluster = huygens::sim::ParseClusterSpec(text, "fuzz.yaml");
  if (cluster.ok()) {
    for (const huygens::sim::NodeGroupSpec& g : cluster->groups) {
      if (g.topology == nullptr || g.topology->NumCpus() == 0) std::abort();
      if (g.memory_manager &&
          !huygens::MemoryManagerPolicy::Create(*g.topology, g.memory_manager->reserved_memory,
                                                g.memory_manager->static_policy)
               .ok()) {
        std::abort();
      }
    }
  }
  auto workload = huygens::sim::ParseWorkloadSpec(text, "fuzz.yaml");
  if (workload.ok()) {
    if (workload->rebalance && workload->rebalance->interval_us <= 0) std::abort();
    for (const huygens::sim::PodTemplate& t : workload->templates) {
      if (t.affinity_groups < 1) std::abort();
      for (const huygens::ContainerSpec& c : t.pod.spec.containers) {
        for (const auto& [name, bytes] : c.hugepages_request_bytes) {
          if (bytes < 0) std::abort();
        }
      }
    }
  }
  return 0;
}
