// AllocationStatus: the agent's report on one pod, the `huygens.io/allocation-status` annotation
// (DESIGN.md, "Contracts on the wire").
//
// Wire form (compact JSON, keys in this order):
//   {"version":1,"state":"applied","reason":"","observed":{"containers":{"app":"4-7"}}}
//   - state: applied (every running container of the allocation has its cpuset), pending (the
//     allocation is accepted, some containers are not running yet), conflict (the node's reality
//     disagrees: a CPU held by another pod, offline, in the system pool; nothing was changed),
//     failed (malformed annotation, or the runtime could not apply it);
//   - reason: one line naming the container, CPUs or field; "" when applied;
//   - observed.containers: container name -> the cpuset it runs on now, for the containers the
//     agent saw; observed.owner "kubelet" marks CPUs bound by kubelet's static policy (read from
//     its checkpoint and published, never changed by the agent).
//
// Thread-safety: plain data; pure functions.
#ifndef HUYGENS_AGENT_STATUS_H_
#define HUYGENS_AGENT_STATUS_H_

#include <map>
#include <string>


namespace huygens::agent {

enum class AllocationState { kApplied, kPending, kConflict, kFailed };
const char* ToString(AllocationState state);

struct AllocationStatus {
  AllocationState state = AllocationState::kPending;
  std::string reason;
  std::string owner;                              // "" (Huygens) or "kubelet"
  std::map<std::string, std::string> observed;    // container name -> cpu-list

  friend bool operator==(const AllocationStatus&, const AllocationStatus&) = default;
};

// The annotation value (see the file comment). Never throws: bytes of `reason` that are not
// well-formed UTF-8 (a runtime's error text) are written as U+FFFD.
std::string StatusToJson(const AllocationStatus& status);

}  // namespace huygens::agent

#endif  // HUYGENS_AGENT_STATUS_H_
