// NodeResourceTopology (NRT): building and reading the per-node object Huygens publishes.
//
// What it is: the CRD object `topology.node.k8s.io/v1alpha2`, kind `NodeResourceTopology`, one
// per node and named after it, in the shape NFD's topology-updater and the scheduler-plugins
// NodeResourceTopologyMatch plugin use (DESIGN.md, "Contracts on the wire"):
//   - `attributes`: topologyManagerPolicy and topologyManagerScope (and memoryManagerPolicy when
//     known: kMemoryManagerPolicyAttribute); the deprecated
//     `topologyPolicies` list holds the matching single value (e.g.
//     "SingleNUMANodeContainerLevel");
//   - `zones`: one per NUMA node (CPU-less ones included), name `node-<id>`, type `Node`, `costs`
//     [{name: node-<j>, value: distance}] for every NUMA node j, `resources` cpu, memory and
//     one hugepages-<size> per page size the node lists, each with capacity/allocatable/available
//     as Kubernetes quantity strings (cpu as a whole count, memory and hugepages in bytes; memory
//     and hugepages figured as kubelet's memory manager does, NrtMemory), then the NUMA-affine
//     device-plugin resources of the zone (NrtInput::devices), and optional zone `attributes`;
//   - annotations `huygens.io/cpu-topology` (the topology JSON of topology/json.h, compact) and
//     `huygens.io/pools` ({"version":1,"system","user","exclusive" (cpu-lists),"mode"}), from
//     which the scheduler rebuilds the exact topology and pools (TopologyFromNrt, PoolsFromNrt).
//
// Thread-safety: free functions and plain structs.
#ifndef HUYGENS_TOPOLOGY_NRT_H_
#define HUYGENS_TOPOLOGY_NRT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cpuset/cpuset.h"
#include "base/wire_names.h"
#include "nlohmann/json.hpp"
#include "topology/pod_traffic.h"
#include "topology/topology.h"

namespace huygens {

inline constexpr char kNrtApiVersion[] = "topology.node.k8s.io/v1alpha2";
inline constexpr char kNrtApiVersionV1Alpha1[] = "topology.node.k8s.io/v1alpha1";
inline constexpr char kNrtKind[] = "NodeResourceTopology";
// kCpuTopologyAnnotation, kPoolsAnnotation and kCapacityFactorAttribute: base/wire_names.h.

// Bytes per NUMA node id and memory resource name: "memory", or "hugepages-<size>" with the page
// size as a canonical binary-SI quantity as kubelet names it ("hugepages-2Mi", "hugepages-1Gi",
// "hugepages-64Ki"). The shape of kubelet's memory manager tables (reservedMemory, machineState
// memoryMap); the same type as alloc/memory_manager.h's ReservedMemory.
using NumaMemory = std::map<int, std::map<std::string, uint64_t>>;

// Why (numa, resource) is not a memory resource of `t`, e.g. "NUMA node 7 does not exist" or
// "NUMA node 0 has no hugepages-1Gi (it has memory, hugepages-2Mi)"; nullopt when it is one:
// "memory" on every NUMA node, hugepages-<size> on a node that lists that page size (even with
// 0 pages, as kubelet's machine info does).
std::optional<std::string> UnknownNumaMemory(const CpuTopology& t, int numa,
                                             std::string_view resource);

// The figures of one memory resource in one zone, bytes.
struct NrtMemoryFigures {
  uint64_t capacity = 0;     // total: MemTotal, or pages x page size
  uint64_t allocatable = 0;  // capacity - reserved; for memory also minus the node's hugepages
  uint64_t available = 0;    // allocatable - used
  friend bool operator==(const NrtMemoryFigures&, const NrtMemoryFigures&) = default;
};

// Every memory resource of every NUMA node of `t` (NUMA id -> resource name -> figures):
// "memory" with capacity = NumaNode::memory_bytes, allocatable = capacity - reserved - the bytes
// of all the node's hugepages (kubelet's memory manager Static policy takes hugepages out of
// the node's memory: getDefaultMachineState in pkg/kubelet/cm/memorymanager/policy_static.go);
// each hugepages-<size> with capacity = pages x size, allocatable = capacity - reserved; for
// all, available = allocatable - used. Every subtraction clamps at 0. Errors: InvalidArgument
// naming the argument and entry, e.g. `memory_reserved[0]["hugepages-1Gi"]: NUMA node 0 has no
// hugepages-1Gi (it has memory, hugepages-2Mi)` (UnknownNumaMemory).
absl::StatusOr<std::map<int, std::map<std::string, NrtMemoryFigures>>> NrtMemory(
    const CpuTopology& t, const NumaMemory& memory_reserved, const NumaMemory& memory_used);

// One device-plugin resource in one zone: the devices kubelet can allocate there and how many of
// them are free (counts).
struct NrtDeviceFigures {
  uint64_t allocatable = 0;
  uint64_t available = 0;  // <= allocatable
  friend bool operator==(const NrtDeviceFigures&, const NrtDeviceFigures&) = default;
};

// What BuildNrt needs to describe one node.
struct NrtInput {
  std::string node_name;                 // metadata.name; required, non-empty
  const CpuTopology* topology = nullptr;  // required
  CpuSet system_cpus{};    // the system pool; default none. REQUIRES: known CPUs
  CpuSet exclusive_cpus{}; // CPUs held exclusively now; default none. REQUIRES: in the user pool
  // "allocatable" (default: user pool = online CPUs minus the system pool) or "isolated" (user
  // pool = the online CPUs marked isolated, minus the system pool). See DESIGN.md, "Pools".
  std::string mode = "allocatable";
  // Kubelet's topology manager policy ("none", "best-effort", "restricted", "single-numa-node")
  // and scope ("container", "pod"), as kubelet spells them. Defaults are kubelet's.
  std::string policy = "none";
  std::string scope = "container";
  // Kubelet's memory manager policy ("None" or "Static", as kubelet spells
  // --memory-manager-policy), written as the object attribute `memoryManagerPolicy` so that the
  // scheduler knows who places a Guaranteed pod's memory. Empty (default): not written.
  std::string memory_manager_policy;
  // Memory kept from pods (kubelet's `reservedMemory`) and memory in use by pods, in bytes, per
  // NUMA node id and memory resource name ("memory", "hugepages-<size>"; see NumaMemory).
  // Absent entries: 0. Every entry must name a NUMA node of the topology and a resource that
  // node has (UnknownNumaMemory); the figures are NrtMemory's.
  NumaMemory memory_reserved{};
  NumaMemory memory_used{};
  // NUMA-affine device-plugin resources per NUMA node id and resource name (with a domain, e.g.
  // "nvidia.com/gpu"), as kubelet's pod resources API reports them: written after the memory
  // resources of the zone, in name order, with capacity = allocatable (NFD's topology-updater
  // writes them so). Default none. Every entry must name a NUMA node of the topology, a name
  // with a '/' and available <= allocatable.
  std::map<int, std::map<std::string, NrtDeviceFigures>> devices{};
  // Extra zone attributes per NUMA node id (e.g. {"capacityFactor": "0.8"}), written in key
  // order as the zone's `attributes`.
  std::map<int, std::map<std::string, std::string>> zone_attributes{};
};

// The NRT object for `in`; each zone's memory resources carry NrtMemory's figures. Errors:
// InvalidArgument naming the field of NrtInput (empty node name, missing topology, unknown
// mode/policy/scope, system or exclusive CPUs outside the machine, exclusive CPUs outside the
// user pool, a memory_reserved or memory_used entry for a NUMA node or memory resource the
// machine lacks, a devices entry for an unknown NUMA node, a name without a domain or more
// available than allocatable).
absl::StatusOr<nlohmann::json> BuildNrt(const NrtInput& in);

// The deprecated `topologyPolicies` value for a policy and scope ("single-numa-node" +
// "pod" -> "SingleNUMANodePodLevel", "none" -> "None"), as NFD's topology-updater writes it.
// Errors: InvalidArgument for an unknown policy or scope.
absl::StatusOr<std::string> NrtTopologyPolicy(std::string_view policy, std::string_view scope);

// ---- Reading ----------------------------------------------------------------------------------

struct NrtNameValue {
  std::string name;
  std::string value;
  friend bool operator==(const NrtNameValue&, const NrtNameValue&) = default;
};

struct NrtCost {
  std::string name;  // a zone name, e.g. "node-1"
  int value = 0;     // the ACPI distance
  friend bool operator==(const NrtCost&, const NrtCost&) = default;
};

// Quantities are kept as the object gives them (Kubernetes quantity strings; v1alpha1 integers
// are turned into their decimal text).
struct NrtResource {
  std::string name;
  std::string capacity;
  std::string allocatable;
  std::optional<std::string> available;  // absent in v1alpha1
  friend bool operator==(const NrtResource&, const NrtResource&) = default;
};

struct NrtZone {
  std::string name{};
  std::string type{};
  std::string parent{};  // empty when absent
  std::vector<NrtCost> costs{};
  std::vector<NrtResource> resources{};
  std::vector<NrtNameValue> attributes{};

  // The NUMA node id of a zone of type "Node" named "node-<id>"; nullopt otherwise.
  std::optional<int> NumaId() const;
  // The resource called `name`, or nullptr.
  const NrtResource* Resource(std::string_view name) const;
};

struct NrtObject {
  std::string api_version;  // kNrtApiVersion or kNrtApiVersionV1Alpha1
  std::string name;         // metadata.name
  std::map<std::string, std::string> annotations;  // metadata.annotations
  std::vector<std::string> topology_policies;      // deprecated list, as given
  std::vector<NrtNameValue> attributes;
  std::vector<NrtZone> zones;

  // The value of the attribute `name`, or nullptr.
  const std::string* Attribute(std::string_view name) const;
};

// Parses an NRT object (v1alpha2; v1alpha1 is read too: integer quantities, no `available`).
// Fields Huygens does not use (status, managedFields, ...) are ignored. Errors: InvalidArgument
// naming the object and the field path, e.g. `NodeResourceTopology "n1": zones[1].costs[0].value:
// expected an integer, got string`; another apiVersion or kind is an error naming it.
absl::StatusOr<NrtObject> ReadNrt(const nlohmann::json& object);

// The exact CpuTopology from the `huygens.io/cpu-topology` annotation. Every zone named
// `node-<id>` must be a NUMA node of that topology. Errors: InvalidArgument naming the object
// and the annotation (missing, or not a valid topology JSON, with the reader's message).
absl::StatusOr<CpuTopology> TopologyFromNrt(const NrtObject& nrt);

// The pools of the `huygens.io/pools` annotation.
struct NrtPools {
  CpuSet system;
  CpuSet user;
  CpuSet exclusive;
  std::string mode;  // "allocatable" or "isolated"
  friend bool operator==(const NrtPools&, const NrtPools&) = default;
};
// Errors: InvalidArgument naming the object and the annotation field.
absl::StatusOr<NrtPools> PoolsFromNrt(const NrtObject& nrt);

// The observed affinity of the `huygens.io/pod-traffic` annotation (topology/pod_traffic.h);
// nullopt when the object has none (an agent that does not observe traffic). Errors:
// InvalidArgument naming the object and the annotation field (ParsePodTraffic's), e.g.
// `NodeResourceTopology "n1": metadata.annotations["huygens.io/pod-traffic"].windowSeconds:
// missing`.
absl::StatusOr<std::optional<PodTraffic>> PodTrafficFromNrt(const NrtObject& nrt);

}  // namespace huygens

#endif  // HUYGENS_TOPOLOGY_NRT_H_
