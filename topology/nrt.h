// NodeResourceTopology (NRT): building and reading the per-node object Huygens publishes.
//
// What it is: the CRD object `topology.node.k8s.io/v1alpha2`, kind `NodeResourceTopology`, one
// per node and named after it, in the shape NFD's topology-updater and the scheduler-plugins
// NodeResourceTopologyMatch plugin use (DESIGN.md, "Contracts on the wire"):
//   - `attributes`: topologyManagerPolicy and topologyManagerScope; the deprecated
//     `topologyPolicies` list holds the matching single value (e.g.
//     "SingleNUMANodeContainerLevel");
//   - `zones`: one per NUMA node (CPU-less ones included), name `node-<id>`, type `Node`, `costs`
//     [{name: node-<j>, value: distance}] for every NUMA node j, `resources` cpu, memory and
//     one hugepages-<size> per configured page size, each with capacity/allocatable/available as
//     Kubernetes quantity strings (cpu as a whole count, memory and hugepages in bytes), and
//     optional zone `attributes`;
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
#include "topology/topology.h"

namespace huygens {

inline constexpr char kNrtApiVersion[] = "topology.node.k8s.io/v1alpha2";
inline constexpr char kNrtApiVersionV1Alpha1[] = "topology.node.k8s.io/v1alpha1";
inline constexpr char kNrtKind[] = "NodeResourceTopology";
// kCpuTopologyAnnotation, kPoolsAnnotation and kCapacityFactorAttribute: base/wire_names.h.

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
  // Per NUMA node id, memory kept from pods (allocatable = MemTotal - reserved) and memory in
  // use by pods (available = allocatable - used), bytes. Absent nodes: 0. Values larger than
  // what they are subtracted from clamp the result at 0.
  std::map<int, uint64_t> memory_reserved_bytes{};
  std::map<int, uint64_t> memory_used_bytes{};
  // Extra zone attributes per NUMA node id (e.g. {"capacityFactor": "0.8"}), written in key
  // order as the zone's `attributes`.
  std::map<int, std::map<std::string, std::string>> zone_attributes{};
};

// The NRT object for `in`. Errors: InvalidArgument naming the field of NrtInput (empty node name,
// missing topology, unknown mode/policy/scope, system or exclusive CPUs outside the machine,
// exclusive CPUs outside the user pool).
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

}  // namespace huygens

#endif  // HUYGENS_TOPOLOGY_NRT_H_
