// HwlocView: what hwloc reports about a machine, before Huygens' own rules are applied.
// Internal to topology/discovery (discovery.cc merges it with the sysfs view).
//
// What it is: per PU (logical CPU), hwloc's core, cluster, die, package and L3 objects as raw
// keys (the objects' gp_index; -1 where the machine has no such level above the PU), the NUMA
// node hwloc puts it in, and hwloc's NUMA nodes with memory, hugepages and distances. Raw keys
// identify objects within one view only; discovery renumbers them.
//
// Thread-safety: LoadHwloc may be called from several threads; for kFsroot it serialises on a
// process-wide mutex while HWLOC_FSROOT is set (see discovery.h).
#ifndef HUYGENS_TOPOLOGY_DISCOVERY_HWLOC_VIEW_H_
#define HUYGENS_TOPOLOGY_DISCOVERY_HWLOC_VIEW_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cpuset/cpuset.h"
#include "topology/topology.h"

namespace huygens::discovery_internal {

enum class HwlocSource {
  kLive,       // this system
  kFsroot,     // `arg` is a dump directory (HWLOC_FSROOT)
  kXml,        // `arg` is an hwloc 2 XML file
  kSynthetic,  // `arg` is a synthetic description
};

struct HwlocView {
  // One entry per CPU of the complete cpuset, ascending by id. A PU is online and its fields
  // hold raw keys (gp_index of the hwloc object) or -1 for a missing level; a CPU without a PU
  // (offline, or outside the cgroup an XML was exported under) is offline with -1 fields.
  // `numa` holds the os_index of the first (lowest os_index) NUMA node whose complete cpuset
  // holds the CPU, or -1. `isolated` is false.
  std::vector<CpuInfo> cpus;
  // hwloc's NUMA nodes, ascending by os_index, with cpus = the PUs whose `numa` is that node,
  // memory, hugepages (page types after the first, base, one) and distances (the first
  // latency matrix over NUMA nodes; empty without one).
  std::vector<NumaNode> numa_nodes;
  // hwloc's complete cpuset (every CPU hwloc knows of, online or not).
  CpuSet complete;
};

// Loads a topology with hwloc (flags: INCLUDE_DISALLOWED; I/O objects and L1/L2 caches are
// filtered out) and reads it into a view. `what` names the input in error messages.
// Errors: InvalidArgument "<what>: <problem>" when hwloc rejects the input or finds no PU.
absl::StatusOr<HwlocView> LoadHwloc(HwlocSource source, const std::string& arg,
                                    const std::string& what);

}  // namespace huygens::discovery_internal

#endif  // HUYGENS_TOPOLOGY_DISCOVERY_HWLOC_VIEW_H_
