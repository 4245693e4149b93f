// KubeletConfig: the few fields of kubelet's own configuration file that the node agent follows.
//
// What it is: a typed struct parsed once from kubelet's KubeletConfiguration file (YAML or JSON,
// `--config` of kubelet; agent config `kubeletConfig`, chart value agent.kubelet.configFile),
// and the parser. Only these fields are read; every other key of the file is ignored (it is
// kubelet's file, not ours):
//   reservedSystemCPUs: "0,32"          # cpu-list; the system pool (ResolveSystemCpus)
//   memoryManagerPolicy: Static         # None (default) | Static
//   reservedMemory:                     # kubelet's per-NUMA memory reservation
//   - numaNode: 0
//     limits: {memory: 1Gi, hugepages-2Mi: 64Mi}
// The fields mirror kubelet v1.35.4's KubeletConfiguration (ReservedSystemCPUs,
// MemoryManagerPolicy, ReservedMemory) and the checks kubelet makes on them at start
// (pkg/kubelet/apis/config/validation/validation_reserved_memory.go: only `memory` and
// `hugepages-<size>` limits, none zero, no NUMA node and resource twice). Whether a NUMA node
// or page size exists is a property of the machine, checked where the topology is known
// (UnknownNumaMemory in topology/nrt.h).
//
// Thread-safety: plain data; the parser is a pure function.
#ifndef HUYGENS_AGENT_KUBELET_CONFIG_H_
#define HUYGENS_AGENT_KUBELET_CONFIG_H_

#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "cpuset/cpuset.h"
#include "topology/nrt.h"

namespace huygens::agent {

// kubelet's memoryManagerPolicy. (kubelet also knows BestEffort, on Windows only.)
enum class KubeletMemoryPolicy {
  kNone,    // "None": no per-NUMA memory accounting (kubelet's default)
  kStatic,  // "Static": kubelet's memory manager pins Guaranteed pods' memory to NUMA nodes
};
// "None" | "Static", as kubelet spells them.
const char* ToString(KubeletMemoryPolicy p);

// kubelet's memory manager settings.
struct KubeletMemorySettings {
  // memoryManagerPolicy. Default None.
  KubeletMemoryPolicy policy = KubeletMemoryPolicy::kNone;
  // reservedMemory: NUMA node id -> resource name ("memory", "hugepages-2Mi", ...) -> bytes.
  // Default none. Invariant: every value > 0.
  NumaMemory reserved;
  friend bool operator==(const KubeletMemorySettings&, const KubeletMemorySettings&) = default;
};

struct KubeletConfig {
  // reservedSystemCPUs; nullopt when the file does not set it.
  std::optional<CpuSet> reserved_system_cpus;
  KubeletMemorySettings memory;
};

// Parses kubelet's config file `text` (YAML or JSON); `path` names the file in errors. Errors:
// InvalidArgument "kubelet config PATH: FIELD: problem", e.g. `kubelet config /k.yaml:
// reservedMemory[1].limits["hugepages-2Mi"]: "2x" is not a memory quantity ...`: not YAML, not
// a mapping, a bad cpu-list, a memoryManagerPolicy other than None or Static, reservedMemory
// not a list of mappings, a numaNode missing or not an integer in [0, 2^31), limits missing or
// not a mapping, a limit other than memory or hugepages-<size>, a bad or zero quantity, the same
// NUMA node and resource twice.
absl::StatusOr<KubeletConfig> ParseKubeletConfig(std::string_view text, std::string_view path);

}  // namespace huygens::agent

#endif  // HUYGENS_AGENT_KUBELET_CONFIG_H_
