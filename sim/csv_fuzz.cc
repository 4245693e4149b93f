// Fuzzes the simulator's CSV inputs: the pod trace (ParseTrace, under two option sets) and the
// node list (ParseNodeListCsv). Any input gives arrivals / a cluster or an error, never a crash
// or an overflow (the fuzz build runs with UBSan); what parses keeps its invariants: arrivals in
// time order with creation indexes 0..n-1, times and lifetimes non-negative (-1: never leaves),
// exclusive requests in whole CPUs; every node group with a topology that has CPUs.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sim/cluster_spec.h"
#include "sim/workload.h"

namespace {

void CheckTrace(std::string_view text, const huygens::sim::TraceOptions& options) {
  auto arrivals = huygens::sim::ParseTrace(text, "fuzz.csv", options);
  if (!arrivals.ok()) return;
  int64_t last = 0;
  for (size_t i = 0; i < arrivals->size(); ++i) {
    const huygens::sim::PodArrival& a = (*arrivals)[i];
    if (a.arrival_us < last || a.lifetime_us < -1) std::abort();
    if (a.pod.creation_index != static_cast<int64_t>(i)) std::abort();
    last = a.arrival_us;
    for (const huygens::ContainerSpec& c : a.pod.spec.containers) {
      if (c.cpu_request_milli < 0 || c.memory_request_bytes < 0) std::abort();
      if (c.cpu_limit_milli > 0 && c.cpu_limit_milli % 1000 != 0) std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  CheckTrace(text, huygens::sim::TraceOptions{});
  CheckTrace(text, huygens::sim::TraceOptions{.round_up_exclusive = true,
                                              .max_creation_seconds = 1000,
                                              .max_pods = 50,
                                              .time_compression = 7});
  auto cluster = huygens::sim::ParseNodeListCsv(text, "fuzz.csv", huygens::sim::NodeGroupSpec{});
  if (cluster.ok()) {
    for (const huygens::sim::NodeGroupSpec& g : cluster->groups) {
      if (g.topology == nullptr || g.topology->NumCpus() == 0 || g.count < 1) std::abort();
    }
  }
  return 0;
}
