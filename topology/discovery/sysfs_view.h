// SysfsView: what Linux's sysfs and procfs say about CPUs and NUMA nodes, read from a root
// directory ("/" for the live machine, or a dump's fsroot). Internal to topology/discovery.
//
// What it is: the files kubelet and the kernel documentation treat as the truth for NUMA
// membership and CPU state: /sys/devices/system/cpu/{possible,present,online,isolated,
// nohz_full}, cpuN/{online,topology/{physical_package_id,core_cpus_list|thread_siblings_list},
// nodeM}, /sys/devices/system/node/nodeN/
// {cpulist|cpumap,meminfo,distance,hugepages/*/nr_hugepages}, node/{possible,online} and
// /proc/cmdline (isolcpus=, nohz_full=).
//
// Thread-safety: ReadSysfs only reads files; it may run concurrently with itself.
#ifndef HUYGENS_TOPOLOGY_DISCOVERY_SYSFS_VIEW_H_
#define HUYGENS_TOPOLOGY_DISCOVERY_SYSFS_VIEW_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cpuset/cpuset.h"
#include "topology/topology.h"

namespace huygens::discovery_internal {

struct SysfsCpu {
  int id = 0;
  bool online = true;
  bool has_directory = false;  // cpuN/ exists (false: known only from the present/online masks)
  bool has_topology = false;   // cpuN/topology/ exists (offline CPUs lose it on most kernels)
  int package_id = -1;         // topology/physical_package_id (-1 on IBM POWER, or unknown)
  int node_link = -1;          // M of a cpuN/nodeM entry, -1 without one
  // topology/core_cpus_list (thread_siblings_list on kernels before 5.6): the CPU's SMT
  // siblings, itself included; empty without the file.
  CpuSet siblings;
};

struct SysfsNode {
  int id = 0;
  CpuSet cpus;                 // cpulist, or cpumap on kernels without cpulist
  uint64_t memory_bytes = 0;   // meminfo "Node N MemTotal: X kB" * 1024; 0 without meminfo
  std::map<uint64_t, uint64_t> hugepages;  // page size in bytes -> nr_hugepages
  std::vector<int> distance_row;           // the `distance` file's numbers; empty without one
};

struct SysfsView {
  // Known CPUs: the cpuN directories plus the present and online masks, ascending by id.
  std::vector<SysfsCpu> cpus;
  // Node directories, ascending by id; empty on a kernel without NUMA support.
  std::vector<SysfsNode> nodes;
  // node/possible and node/online, when present: the orders a `distance` row may follow.
  std::optional<CpuSet> possible_nodes, online_nodes;
  MachineCpus machine;
  // /proc/meminfo MemTotal in bytes (used when the kernel has no node directories).
  uint64_t mem_total_bytes = 0;
};

// Reads the view under `root` (a directory; "/" for the live machine).
// Errors: NotFound when `root`/sys/devices/system/cpu does not exist; InvalidArgument naming the
// file for a file that does not parse, or when there is no cpuN directory.
absl::StatusOr<SysfsView> ReadSysfs(const std::string& root);

// The distance from node `row` to every node, mapping the row's entries to node ids: to the
// node directories when the counts match, else to node/possible, else node/online.
// Errors: InvalidArgument naming the `distance` file when no list has the row's length.
absl::StatusOr<std::map<int, int>> DistanceRow(const SysfsView& view, const SysfsNode& node,
                                               const std::string& root);

}  // namespace huygens::discovery_internal

#endif  // HUYGENS_TOPOLOGY_DISCOVERY_SYSFS_VIEW_H_
