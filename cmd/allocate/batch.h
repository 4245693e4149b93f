// AllocateBatch: the request decoder and dispatcher behind `huygens allocate`.
//
// What it is: one JSON request line in, one JSON response line out (docs/allocate.md is the
// reference for every op, field, default and error). Ops:
//   take            - kubelet's take-by-topology (alloc/take.h), packed or distributed across
//                     NUMA nodes;
//   static-allocate - kubelet's static policy for one container on a given state
//                     (alloc/static_policy.h);
//   hints           - kubelet's CPU NUMA hints for a request (alloc/hints.h);
//   merge           - kubelet's topology-manager hint merge (alloc/merge.h);
//   huygens         - Huygens' own exclusive allocator (alloc/huygens_allocator.h);
//   resize          - an in-place resize of a running container's cpuset, keeping its CPUs
//                     (ExclusiveAllocator::Resize);
//   memory-allocate - kubelet's memory manager Static policy for the containers of one pod, in
//                     order, within one policy instance (alloc/memory_manager.h), after
//                     optional removals, on a given or fresh memory_manager_state;
//   memory-hints    - that policy's hints for a container or (scope pod) the pod;
//   device-hints    - kubelet's device manager hints for one device-plugin resource whose
//                     devices are given as counts per NUMA node (alloc/device_manager.h).
// A response always carries the request's "id" (null when the line has none or is not JSON)
// and either the op's result or "error" (a message naming the field) and "kind" (invalid,
// not-found, unavailable, smt-alignment, internal).
//
// Topologies: a request's "topology" is the minimal topology JSON ({"cpus":[...]}, read by
// topology/json.h), or {"synthetic":"..."[,"numbering":"linux"|"adjacent"]} or
// {"file":"path"}, each with optional "distances". The last two are resolved by the injected
// TopologyLoader, so this layer does no I/O; `huygens allocate` passes one backed by
// topology/discovery. Topologies are cached by their JSON text (a batch of many lines on one
// machine indexes it once); the cache keeps the kMaxCachedTopologies most recent machines.
//
// Thread-safety: an AllocateBatch is not thread-safe (its cache changes on Handle); use one per
// thread. The loader is called from Handle only.
#ifndef HUYGENS_CMD_ALLOCATE_BATCH_H_
#define HUYGENS_CMD_ALLOCATE_BATCH_H_

#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "absl/status/statusor.h"
#include "alloc/huygens_allocator.h"
#include "nlohmann/json.hpp"
#include "topology/topology.h"

namespace huygens {

// A topology named by the request rather than given inline. Exactly one of synthetic / file is
// set.
struct TopologySource {
  std::string synthetic;           // an hwloc synthetic description
  std::string numbering = "linux";  // CPU numbering for `synthetic`: "linux" or "adjacent"
  std::string file;                // a path: topology JSON (*.json), hwloc 2 XML (*.xml), or a
                                   // sysfs dump (directory or .tar.bz2)
};

// Resolves a TopologySource to a machine. Errors are returned to the request as they are
// (NotFound -> kind not-found, anything else -> invalid).
using TopologyLoader = std::function<absl::StatusOr<CpuTopology>(const TopologySource&)>;

class AllocateBatch {
 public:
  // The most machines kept indexed at once (least recently used ones are dropped).
  static constexpr size_t kMaxCachedTopologies = 16;

  explicit AllocateBatch(TopologyLoader load) : load_(std::move(load)) {}

  struct Response {
    std::string line;    // one compact JSON object, without a newline
    bool error = false;  // an error response ("error" and "kind" instead of a result)
  };

  // Answers one request line (without its newline). Never fails: every problem becomes an
  // error response.
  Response Handle(std::string_view line);

 private:
  // The machine of a request's "topology" value, from the cache or freshly loaded and indexed.
  absl::StatusOr<std::shared_ptr<const ExclusiveAllocator>> Machine(
      const nlohmann::json& topology);
  absl::StatusOr<CpuTopology> Load(const nlohmann::json& topology) const;
  // One request, decoded and run: the response's fields after "id".
  absl::StatusOr<nlohmann::ordered_json> Dispatch(const nlohmann::json& request);

  TopologyLoader load_;
  // JSON text of a "topology" value -> its indexed machine; `lru_` orders the keys, most
  // recently used first.
  std::list<std::string> lru_;
  std::unordered_map<std::string, std::pair<std::shared_ptr<const ExclusiveAllocator>,
                                            std::list<std::string>::iterator>>
      cache_;
};

}  // namespace huygens

#endif  // HUYGENS_CMD_ALLOCATE_BATCH_H_
