// ContainerRuntime: the seam between the node agent and whatever runs the containers.
//
// The agent asks a runtime for the containers on this node and sets their cpusets; it never
// talks to containerd, CRI-O or cgroupfs itself. Implementations: the CRI gRPC client
// (UpdateContainerResources on the runtime's socket), the cgroupfs writer (cgroup v1 and v2,
// cgroupfs and systemd drivers), a fallback chain of the two, and an in-memory fake for tests.
//
// Invariants every implementation keeps:
//   - ListContainers returns each container of the node once, keyed by its runtime id, with the
//     Kubernetes identity taken from the runtime's labels (io.kubernetes.pod.uid, ...).
//   - UpdateCpuset either sets both cpuset.cpus and cpuset.mems of the container or reports
//     why it could not; a failed call leaves the container's cpuset as it was where the runtime
//     allows (cgroup v1 may have written cpus before mems failed: the error says which).
//   - No call blocks longer than the timeout the implementation was configured with.
//
// Thread-safety: implementations are safe to call from one thread at a time; the agent
// serialises its calls.
#ifndef HUYGENS_CRI_RUNTIME_H_
#define HUYGENS_CRI_RUNTIME_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cpuset/cpuset.h"

namespace huygens::cri {

/// State of a container as CRI reports it (runtime.v1.ContainerState).
enum class ContainerState { kCreated, kRunning, kExited, kUnknown };

/// One container on the node, as the runtime reports it.
struct ContainerInfo {
  std::string id;              ///< runtime container id (64 hex digits for containerd)
  std::string sandbox_id;      ///< id of the pod sandbox it runs in
  std::string pod_uid;         ///< label io.kubernetes.pod.uid; empty for non-Kubernetes containers
  std::string pod_namespace;   ///< label io.kubernetes.pod.namespace
  std::string pod_name;        ///< label io.kubernetes.pod.name
  std::string container_name;  ///< label io.kubernetes.container.name
  uint32_t attempt = 0;        ///< restart count (CRI ContainerMetadata.attempt)
  ContainerState state = ContainerState::kUnknown;
  int64_t created_at_ns = 0;   ///< creation time, ns since the epoch
};

/// The cpuset of one container: logical CPUs and NUMA memory nodes (ids in a CpuSet).
struct CpusetResources {
  CpuSet cpus;  ///< cpuset.cpus
  CpuSet mems;  ///< cpuset.mems (NUMA node ids)
};

/// The runtime seam. See the file comment for the invariants.
class ContainerRuntime {
 public:
  virtual ~ContainerRuntime() = default;

  /// Short name for logs and metrics: "cri", "cgroupfs", "fake", ...
  virtual std::string Name() const = 0;

  /// All containers on the node (every state). Errors: kUnavailable when the runtime cannot be
  /// reached, kDeadlineExceeded on timeout.
  virtual absl::StatusOr<std::vector<ContainerInfo>> ListContainers() = 0;

  /// Sets the container's cpuset.cpus and cpuset.mems. Errors: kNotFound (no such container),
  /// kUnavailable (runtime down), kFailedPrecondition (the kernel refused, e.g. EBUSY or EINVAL
  /// from a nested cgroup v1 cpuset; the message names the file and errno).
  virtual absl::Status UpdateCpuset(const ContainerInfo& container, const CpuSet& cpus,
                                    const CpuSet& mems) = 0;

  /// The cpuset the container has right now (read back from the kernel where possible), so the
  /// agent can see drift. Errors as UpdateCpuset.
  virtual absl::StatusOr<CpusetResources> ReadCpuset(const ContainerInfo& container) = 0;

  /// Main process id of a running container, when the runtime tells it (for tests and logs).
  virtual std::optional<int64_t> Pid(const ContainerInfo& container) = 0;
};

}  // namespace huygens::cri

#endif  // HUYGENS_CRI_RUNTIME_H_
