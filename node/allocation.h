// PodAllocation: the scheduler's decision for one pod on one node, and its wire form, the
// `huygens.io/allocation` pod annotation (DESIGN.md, "Contracts on the wire").
//
// What it is: per container (init containers included, in spec order: init containers first,
// then app containers), the cpuset it runs on and the NUMA nodes its memory is bound to.
//
// Wire form (JSON, keys in this order when written; unknown keys are ignored when read so that
// a later minor addition does not break an older reader):
//   {"version":1,"node":"n1","numaNodes":[0],
//    "containers":[{"name":"init","cpuset":"4-7","mems":"0","init":true},
//                  {"name":"sidecar","cpuset":"8","mems":"0","init":true,"restartable":true},
//                  {"name":"app","cpuset":"4-7","mems":"0"},
//                  {"name":"log","cpuset":"2-3,9-63","mems":"0-1","exclusive":false}]}
//   - "init" (default false): listed in spec.initContainers;
//   - "restartable" (default false): an init container with restartPolicy Always (a sidecar);
//     only valid together with "init":true;
//   - "exclusive" (default true): false for a container that runs in the shared pool; its
//     cpuset is then the shared pool at the time of the decision (the agent follows the pool
//     as it changes), and it holds no CPU.
//
// Invariants of a PodAllocation produced by AllocationFromJson: version 1; container names
// non-empty and unique; restartable implies init; numa_nodes sorted, unique, >= 0. (Whether
// the cpusets fit a node is NodeState's business, not the parser's.)
//
// Thread-safety: plain data; the functions are pure.
#ifndef HUYGENS_NODE_ALLOCATION_H_
#define HUYGENS_NODE_ALLOCATION_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "base/wire_names.h"
#include "nlohmann/json_fwd.hpp"
#include "cpuset/cpuset.h"

namespace huygens {

// The annotation key is kAllocationAnnotation (base/wire_names.h).
// The only wire version this code reads and writes.
inline constexpr int kAllocationVersion = 1;

// One container's placement.
struct ContainerAllocation {
  std::string name;
  CpuSet cpuset;            // exclusive CPUs, or the shared pool when !exclusive
  CpuSet mems;              // NUMA node ids (a set of ids, written in cpu-list syntax)
  bool init = false;        // an init container
  bool restartable = false; // a restartable init container (sidecar); REQUIRES: init
  bool exclusive = true;    // holds `cpuset` exclusively

  friend bool operator==(const ContainerAllocation&, const ContainerAllocation&) = default;
};

// One pod's placement on one node.
struct PodAllocation {
  std::string pod_uid;              // not on the wire (the annotation lives on the pod)
  std::string node;                 // node name
  std::vector<int> numa_nodes;      // NUMA nodes of the pod's exclusive CPUs; sorted, unique
  std::vector<ContainerAllocation> containers;  // init containers first, in spec order

  // The container named `name`, or nullptr.
  const ContainerAllocation* Find(std::string_view name) const;
  // The pod's exclusive CPUs: the union of its exclusive containers' cpusets.
  CpuSet ExclusiveCpus() const;

  friend bool operator==(const PodAllocation&, const PodAllocation&) = default;
};

// The annotation value: compact JSON in the key order shown in the file comment; defaults
// ("init":false, "restartable":false, "exclusive":true) are omitted.
std::string AllocationToJson(const PodAllocation& allocation);

// The allocation in one line for logs, events and `huygens status`: the NUMA nodes and the
// union of the exclusive cpusets, then each container's share, e.g.
//   "NUMA node 0, cpuset 4-8 (init 4-7, app 4-7, sidecar 8)"
//   "NUMA nodes 0-1, cpuset 0-3,32-35 (app 0-3,32-35, log shared)"
//   "no exclusive CPUs (log shared)"
// A container that holds no CPU (exclusive false) reads "shared" (the shared pool).
std::string DescribeAllocation(const PodAllocation& allocation);

// Parses an annotation value for the pod `pod_uid`.
// Errors (InvalidArgument), in base/json_fields.h's form prefixed by the annotation, e.g.
//   `huygens.io/allocation: containers[1].cpuset: cpu-list "4-": ...`,
//   `huygens.io/allocation: version: 2 is not supported (this reader knows 1)`:
// not JSON / not an object; version missing, not an integer or not 1; node missing or not a
// string; numaNodes not an array of integers >= 0 or with duplicates; containers missing or
// not an array; a container that is not an object; name missing, empty or repeated; cpuset or
// mems missing or not a cpu-list; init/restartable/exclusive not a boolean; restartable without
// init.
absl::StatusOr<PodAllocation> AllocationFromJson(std::string_view json, std::string pod_uid);

// The same, from an annotation value already parsed as part of a larger document (the agent's
// checkpoint), at `path` in it: errors name the field under `path` without the annotation
// prefix (`pods[0].allocation.containers[1].cpuset: ...`).
absl::StatusOr<PodAllocation> AllocationFromJsonValue(const nlohmann::json& value,
                                                      std::string_view path,
                                                      std::string pod_uid);

}  // namespace huygens

#endif  // HUYGENS_NODE_ALLOCATION_H_
