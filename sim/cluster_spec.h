// ClusterSpec: the simulated cluster, as read from a cluster YAML file or a node-list CSV.
//
// What it is: node groups, each with a count and one machine shape (a CpuTopology, shared by
// every node of the group), the node's pools (system CPUs, mode), its kubelet topology-manager
// configuration, Huygens' NUMA scoring strategy and default bind policy, and the Kubernetes
// node fields the scheduler reads (labels, taints, memory). docs/simulate.md documents every
// field of the YAML form.
//
// Topology sources (exactly one per group):
//   - `preset`: a named real server (see PresetNames), built with DiscoverSynthetic in Linux
//     numbering (siblings n and n + cpus/2) and NUMA distances 10 / 12 (same socket) / 32;
//   - `synthetic`: an hwloc synthetic description, with `numbering` linux (default) or adjacent;
//   - `file`: an hwloc 2 XML export (*.xml) or a sysfs dump (directory or *.tar.bz2), relative
//     paths resolved against the spec file's folder;
//   and optionally `numaSplit` ("per-socket:N" or "l3") applied after loading.
//
// Invariants of a parsed spec: every group has count >= 0, a topology with at least one online
// CPU, system CPUs that are online CPUs of that topology and leave at least one user CPU,
// unique group names.
//
// Thread-safety: plain data; topologies are shared immutable.
#ifndef HUYGENS_SIM_CLUSTER_SPEC_H_
#define HUYGENS_SIM_CLUSTER_SPEC_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "alloc/pod.h"
#include "cpuset/cpuset.h"
#include "node/node_state.h"
#include "sched/node.h"
#include "topology/topology.h"

namespace huygens::sim {

struct NodeGroupSpec {
  std::string name;  // node names are "<name>-<index>"
  int count = 1;
  // Where the topology came from, for reports ("preset epyc-9654-2s-nps4", a file path, ...).
  std::string shape;
  std::shared_ptr<const CpuTopology> topology;
  // System pool. When `system_cpus` is set it is the exact set; otherwise `system_cpu_count`
  // CPUs are taken as kubelet takes reservedSystemCPUs from a count (TakeByTopology over all
  // online CPUs). Default: 2 CPUs (one core with SMT2), like a typical kube-reserved of 2.
  std::optional<CpuSet> system_cpus;
  int system_cpu_count = 2;
  NodeMode mode = NodeMode::kAllocatable;
  TopologyPolicy topology_policy = TopologyPolicy::kSingleNumaNode;  // default single-numa-node
  TopologyScope topology_scope = TopologyScope::kContainer;          // default container
  // How the node picks among NUMA nodes: "pack" (most-allocated, default) or "spread"
  // (least-allocated); the allocator's names most-allocated / least-allocated / nearest too.
  NumaStrategy numa_strategy = NumaStrategy::kMostAllocated;
  BindPolicy bind_policy = BindPolicy::kPacked;  // default for pods without the annotation
  std::map<std::string, std::string> labels;
  std::vector<sched::Taint> taints;
  // Node memory in bytes. Default: the topology's NUMA memory when it is at least 1 GiB per
  // CPU (a real machine), else 4 GiB per CPU (synthetic machines and presets).
  int64_t memory_bytes = 0;
  int64_t max_pods = 110;  // kubelet's maxPods, default 110
  // YAML `memoryManager`: the group models memory and hugepages per NUMA node. nullopt
  // (default, key absent): memory is not modelled (CPUs only, as before). Set: kubelet's
  // --memory-manager-policy (static_policy: Static; false: None) and --reserved-memory; the
  // Huygens run gives it to NodeState (NodeConfig::memory_manager), the kubelet model of the
  // nrt and baseline runs runs the memory manager when the policy is Static. The topology's
  // NUMA nodes then carry the modelled memory and hugepages (see ParseClusterSpec).
  std::optional<MemoryManagerConfig> memory_manager;
  // YAML `devices`: NUMA-affine device-plugin resources (GPUs, NICs' VFs) per NUMA node id, as a
  // device plugin reports them to kubelet with their NUMA node. Empty (default): none. Every
  // run gives them to the node as allocatable extended resources; the Huygens run models them
  // in NodeState (NodeConfig::devices), the kubelet model of the nrt and baseline runs runs the
  // device manager (alloc/device_manager.h) as a hint provider, and the nrt run's
  // NodeResourceTopology lists them per zone.
  NodeDevices devices;
};

struct ClusterSpec {
  std::vector<NodeGroupSpec> groups;
  int TotalNodes() const;
};

// Names of the built-in server presets, in a stable order:
// epyc-9654-2s-nps1, epyc-9654-2s-nps4, xeon-8480-2s, xeon-6230-2s-snc2, kunpeng-920-2s.
std::vector<std::string> PresetNames();

// The topology of a preset (see the .cc for each machine's synthetic description).
// Errors: NotFound naming the preset and listing the known names.
absl::StatusOr<CpuTopology> PresetTopology(std::string_view name);

// Parses a cluster spec. A group with `memoryManager` gets per-NUMA memory: when the group's
// `memory` differs from the machine's NUMA memory total (synthetic machines, presets, an
// overridden `memory`), that memory is shared among the NUMA nodes with CPUs in proportion to
// their online CPUs; `memoryManager.hugepages` then sets the pages of each size on every such
// NUMA node. `file_name` is used in messages and to resolve relative topology
// files. Errors: InvalidArgument "FILE:LINE:COL: FIELD: problem" for unknown fields, wrong
// units, negative counts, bad enum values, topology files that do not load, system CPUs outside
// the machine, a memory manager kubelet would refuse (Static without reserved `memory`, a
// reservation on an unknown NUMA node or above the node's total), hugepages larger than a
// NUMA node's memory.
absl::StatusOr<ClusterSpec> ParseClusterSpec(std::string_view yaml, std::string_view file_name);

// Reads and parses a cluster spec file. Errors: NotFound when the file cannot be read; else as
// ParseClusterSpec.
absl::StatusOr<ClusterSpec> LoadClusterSpec(const std::string& path);

// The machine shape the simulator uses for a node with `cpus` logical CPUs and no other
// information (node-list CSVs): the preset with exactly that many CPUs when one exists, else a
// synthetic machine: 2 sockets with SMT2 when cpus % 4 == 0 and cpus >= 32, else 1 socket with
// SMT2 when cpus is even, else 1 socket without SMT; one NUMA node per socket.
// Errors: InvalidArgument when cpus < 1.
absl::StatusOr<NodeGroupSpec> ShapeForCpuCount(int cpus);

// A cluster from a node-list CSV in the layout of openb_node_list_all_node.csv (header
// `sn,cpu_milli,memory_mib,gpu,model`): nodes with the same cpu_milli and memory form one group
// (ShapeForCpuCount; cpu_milli rounded down to whole CPUs), GPUs are ignored. `defaults` gives
// every other field (policy, system CPUs, ...).
// Errors: InvalidArgument "FILE:LINE: column: problem".
absl::StatusOr<ClusterSpec> ParseNodeListCsv(std::string_view csv, std::string_view file_name,
                                             const NodeGroupSpec& defaults);
absl::StatusOr<ClusterSpec> LoadNodeListCsv(const std::string& path,
                                            const NodeGroupSpec& defaults);

// Reads a whole file. Errors: errno's status (NotFound, PermissionDenied, ...) naming the path
// and the reason.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

}  // namespace huygens::sim

#endif  // HUYGENS_SIM_CLUSTER_SPEC_H_
