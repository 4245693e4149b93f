// Final assembly of a discovered topology: id fallbacks, dense renumbering and validation.
// Internal to topology/discovery; shared by the sysfs, XML and synthetic paths and NUMA splits.
//
// Thread-safety: pure functions.
#ifndef HUYGENS_TOPOLOGY_DISCOVERY_ASSEMBLE_H_
#define HUYGENS_TOPOLOGY_DISCOVERY_ASSEMBLE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "topology/topology.h"

namespace huygens::discovery_internal {

// Builds the CpuTopology from CPUs whose core/cluster/die/socket/l3 fields hold raw keys (any
// non-negative ints identifying a unit within its level, -1 when the level is missing) and whose
// `numa` holds the kernel NUMA id. For online CPUs a missing cluster falls back to the core, a
// missing die or L3 group to the socket. Then each level is renumbered densely from 0 in order
// of its smallest CPU, and NumaNode::cpus is recomputed from the CPUs' `numa`.
// Errors: InvalidArgument "<what>: inconsistent topology: <Create's message>".
absl::StatusOr<CpuTopology> Assemble(std::vector<CpuInfo> cpus, std::vector<NumaNode> nodes,
                                     MachineCpus machine, const std::string& what);

// Distances by socket for nodes without a measured table: 10 to itself, 12 to a node whose CPUs
// share a socket with it, 32 otherwise. `socket_of_node` maps each NUMA id to its socket
// (-1 for a node without CPUs, which is then "another socket" to everything).
std::map<int, std::map<int, int>> SocketDistances(const std::map<int, int>& socket_of_node);

}  // namespace huygens::discovery_internal

#endif  // HUYGENS_TOPOLOGY_DISCOVERY_ASSEMBLE_H_
