// KubeletMemoryReader: what kubelet's memory manager says is in use, per NUMA node and memory
// resource, for the memory and hugepages figures of the published NodeResourceTopology.
//
// What it does: each pass (Read), when kubelet's memoryManagerPolicy is Static, reads kubelet's
// checkpoint `memory_manager_state` (node/kubelet_checkpoint.h) and turns its machineState into
// used bytes chosen so that the published available equals kubelet's `free` for every NUMA node
// and resource: used = allocatable - free, where allocatable is NrtMemory's (topology/nrt.h:
// capacity - reservedMemory, and for memory also minus the node's hugepages, as kubelet's
// getDefaultMachineState computes it). With the same machine and reservedMemory as kubelet,
// used is then kubelet's `reserved` column. Where kubelet's free exceeds our allocatable (a
// different MemTotal), available clamps at allocatable.
//
// Handled, never fatal: no checkpoint path configured, policy None, a missing or unreadable
// file, a file that does not parse, a checksum mismatch (kubelet would reject the file), a
// file written by another policy: nothing is taken from the checkpoint (used = none, so
// available = allocatable) and the reason is given. machineState entries for a NUMA node or
// resource the machine lacks are left out and named. The reason (and the left-out entries) are
// logged once per change, not every pass.
//
// Thread-safety: not thread-safe; one owner (the agent's loop) calls Read.
#ifndef HUYGENS_AGENT_KUBELET_MEMORY_H_
#define HUYGENS_AGENT_KUBELET_MEMORY_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/kubelet_config.h"
#include "node/kubelet_checkpoint.h"
#include "topology/nrt.h"
#include "topology/topology.h"

namespace huygens::agent {

struct KubeletMemoryOptions {
  std::shared_ptr<const CpuTopology> topology;  // required
  // kubelet's memoryManagerPolicy; the checkpoint is read only for Static.
  KubeletMemoryPolicy policy = KubeletMemoryPolicy::kNone;
  // reservedMemory as published (FitReservedMemory's result), for NrtMemory's allocatable.
  NumaMemory reserved;
  // kubelet's memory_manager_state; "" = none. Default "".
  std::string checkpoint_path;
};

// One reading.
struct KubeletMemoryUse {
  // Bytes in use per NUMA node and resource (see the file comment); empty unless
  // from_checkpoint.
  NumaMemory used;
  // True when `used` comes from a checkpoint that parsed, with a good checksum, of the Static
  // policy.
  bool from_checkpoint = false;
  // Why nothing was taken from the checkpoint, or which of its entries were left out; empty
  // when the whole checkpoint was used.
  std::string reason;
};

// Used bytes per NUMA node and resource that make NrtMemory(t, reserved, used).available equal
// `cp`'s free (clamped at allocatable). Entries of cp.machine_state for a NUMA node or resource
// `t` lacks (UnknownNumaMemory) are left out, each with a line in `left_out` naming it as
// `machineState["3"].memoryMap["memory"]: NUMA node 3 does not exist`. Errors: NrtMemory's for
// a `reserved` the machine lacks.
absl::StatusOr<NumaMemory> UsedFromKubeletMemory(const KubeletMemoryCheckpoint& cp,
                                                 const CpuTopology& t, const NumaMemory& reserved,
                                                 std::vector<std::string>& left_out);

// The entries of kubelet's reservedMemory that the machine has; each one left out (a NUMA node
// or page size the machine lacks: kubelet itself refuses the first and never applies the
// second) gets a line in `left_out`, e.g. `reservedMemory: NUMA node 7 does not exist; memory
// reservation of 1073741824 bytes ignored`.
NumaMemory FitReservedMemory(const NumaMemory& reserved, const CpuTopology& t,
                             std::vector<std::string>& left_out);

class KubeletMemoryReader {
 public:
  explicit KubeletMemoryReader(KubeletMemoryOptions options);

  // Reads the checkpoint now (see the file comment). Logs the reason when it differs from the
  // previous call's.
  KubeletMemoryUse Read();

 private:
  KubeletMemoryUse ReadNow() const;

  const KubeletMemoryOptions options_;
  std::optional<std::string> last_reason_;
};

}  // namespace huygens::agent

#endif  // HUYGENS_AGENT_KUBELET_MEMORY_H_
