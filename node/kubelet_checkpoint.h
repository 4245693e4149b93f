// Kubelet's checkpoints: /var/lib/kubelet/cpu_manager_state and memory_manager_state.
//
// What it is: readers for both files, checksum verification exactly as kubelet computes it, and
// the import of kubelet-bound CPUs into a NodeState.
//
// Formats (kubelet pkg/kubelet/cm/cpumanager/state/checkpoint.go, memorymanager/state):
//   - cpu_manager_state v2: {"policyName","defaultCpuSet","entries":{podUID:{container:cpuset}},
//     "checksum"}; v1 (kubelet < 1.18): "entries":{containerID:cpuset}. "entries" is omitted
//     when empty.
//   - memory_manager_state: {"policyName" (Static/static/None),"machineState":{numa:{
//     numberOfAssignments, memoryMap:{resource:{total,systemReserved,allocatable,reserved,free}},
//     cells:[...]}},"entries":{podUID:{container:[{numaAffinity:[..],type,size}]}},"checksum"}.
//
// Checksum (reproduced exactly; verified against every real fixture): FNV-32a over go-spew's
// `%#v` dump (Indent " ", SortKeys, DisableMethods, SpewKeys) of a pointer to the checkpoint
// struct with Checksum = 0, the type printed as state.CPUManagerCheckpoint (v1 too: kubelet
// renames V1) or state.MemoryManagerCheckpoint. An omitted "entries" is hashed both as nil
// (`<nil>`) and as an empty map (`map[]`), since kubelet's JSON omits both alike. Checksum 0 is
// accepted for cpu_manager_state, as kubelet does ("old file backend").
//
// Thread-safety: pure functions except ImportKubeletCpus, which mutates the given NodeState.
#ifndef HUYGENS_NODE_KUBELET_CHECKPOINT_H_
#define HUYGENS_NODE_KUBELET_CHECKPOINT_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "cpuset/cpuset.h"
#include "node/node_state.h"

namespace huygens {

struct KubeletCpuCheckpoint {
  int format = 2;                 // 2: entries by pod UID then container; 1: by container ID
  std::string policy_name;        // "static" | "none"
  CpuSet default_cpu_set;
  // v2: pod UID -> container name -> cpuset. v1: "" -> container ID -> cpuset.
  std::map<std::string, std::map<std::string, CpuSet>> entries;
  uint64_t checksum = 0;
  uint64_t computed_checksum = 0;  // kubelet's algorithm over this file's content
  bool checksum_ok = false;        // computed == stored, or stored == 0 (accepted by kubelet)
};

// Parses cpu_manager_state (either format). Errors: InvalidArgument naming the field (not
// JSON, policyName missing, a cpuset that does not parse, a checksum that is not a uint64).
// A checksum mismatch is NOT an error: see checksum_ok.
absl::StatusOr<KubeletCpuCheckpoint> ParseKubeletCpuCheckpoint(std::string_view json);

struct KubeletMemoryTable {
  uint64_t total = 0, system_reserved = 0, allocatable = 0, reserved = 0, free = 0;
};
struct KubeletNumaMemory {
  int number_of_assignments = 0;
  std::map<std::string, KubeletMemoryTable> memory_map;  // resource name -> table
  std::vector<int> cells;
};
struct KubeletMemoryBlock {
  std::vector<int> numa_affinity;
  std::string type;
  uint64_t size = 0;
};
struct KubeletMemoryCheckpoint {
  std::string policy_name;  // "Static" | "static" | "None"
  std::map<int, KubeletNumaMemory> machine_state;
  std::map<std::string, std::map<std::string, std::vector<KubeletMemoryBlock>>> entries;
  uint64_t checksum = 0;
  uint64_t computed_checksum = 0;
  bool checksum_ok = false;  // computed == stored
};

// Parses memory_manager_state. Errors as ParseKubeletCpuCheckpoint.
absl::StatusOr<KubeletMemoryCheckpoint> ParseKubeletMemoryCheckpoint(std::string_view json);

// Imports the exclusive CPUs of a v2 cpu_manager_state into `node` as kubelet-owned pods (one
// pod per UID, one exclusive container per entry). Every entry that cannot be taken is
// reported and left out: CPUs absent from the topology or offline, reserved (system-pool) CPUs
// handed to a container, CPUs outside the user pool, overlaps with another entry or with what
// `node` already holds. The file's own consistency is checked as kubelet's static policy
// validates its state at start (validateState) and as the runtime would pin it:
// defaultCpuSet overlapping an entry; defaultCpuSet naming CPUs that are absent or offline;
// user-pool CPUs (online, not in the system pool) in neither defaultCpuSet nor any entry,
// checked for the static policy also when there are no entries (not for a fresh static state,
// both empty, nor for the none policy, which names no CPUs; system-pool CPUs may be missing,
// as kubelet's strict-cpu-reservation leaves them out). v1 files (keyed by container ID)
// cannot be tied to pods and are reported as such. Returns the violations (empty = clean),
// one human-readable line each naming the field and the CPUs.
std::vector<std::string> ImportKubeletCpus(NodeState& node, const KubeletCpuCheckpoint& cp);

}  // namespace huygens

#endif  // HUYGENS_NODE_KUBELET_CHECKPOINT_H_
