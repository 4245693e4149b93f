// CriRuntime: the ContainerRuntime that speaks CRI runtime.v1 gRPC to the node's container
// runtime (containerd, CRI-O) on its unix socket.
//
// Calls used (see docs/cri.md): ListContainers; ContainerStatus(verbose) for the container's
// current resources, pid and cgroup; UpdateContainerResources to set the cpuset; Version.
//
//   - ListContainers maps the labels io.kubernetes.pod.uid / .namespace / .name and
//     io.kubernetes.container.name (set by kubelet on every container it creates).
//   - UpdateCpuset sends LinuxContainerResources with cpuset_cpus / cpuset_mems and the
//     container's other resources unchanged: from ContainerStatus.resources when the runtime
//     reports them, else from the verbose info's runtimeSpec.linux.resources (CPU shares, quota,
//     period, memory limit and swap). containerd 1.6 merges only non-zero fields into the spec, so
//     a zero field keeps its value there; CRI-O writes what it gets, which is why we resend.
//   - ReadCpuset reads the kernel truth from cgroupfs (CgroupfsWriter) for the container's
//     cgroup: the verbose info's runtimeSpec.linux.cgroupsPath (cgroupfs or systemd form), else
//     the cpuset line of /proc/<pid>/cgroup.
//   - Pid is the verbose info's "pid".
//
// Errors: every message starts with the CRI verb and the container id. gRPC codes map to the
// absl codes of the same number (UNAVAILABLE -> kUnavailable when the socket is missing or
// refuses, DEADLINE_EXCEEDED -> kDeadlineExceeded after the configured timeout, NOT_FOUND ->
// kNotFound), except that UNKNOWN with a cgroup write refusal in its text (runc's "invalid
// argument", "device or resource busy", "no space left on device") becomes kFailedPrecondition.
//
// Thread-safety: safe to call from one thread at a time (see runtime.h); the gRPC channel itself
// is thread-safe.
#ifndef HUYGENS_CRI_CRI_RUNTIME_H_
#define HUYGENS_CRI_CRI_RUNTIME_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cpuset/cpuset.h"
#include "cri/cgroupfs.h"
#include "cri/runtime.h"

namespace huygens::cri {

struct CriRuntimeOptions {
  /// Path of the runtime's CRI socket. Default: containerd's "/run/containerd/containerd.sock"
  /// (CRI-O: "/var/run/crio/crio.sock"), as kubelet's --container-runtime-endpoint.
  std::string socket = "/run/containerd/containerd.sock";
  /// Longest time one ContainerRuntime call may take, all its RPCs together. Default 2 s
  /// (kubelet's CRI calls default to 2 min; the agent retries on its own schedule instead).
  std::chrono::milliseconds timeout{2000};
  /// Where ReadCpuset reads cgroupfs. Default: /sys/fs/cgroup, version detected.
  CgroupfsOptions cgroupfs;
  /// procfs mount, for /proc/<pid>/cgroup. Default "/proc".
  std::string proc_root = "/proc";
};

/// What ContainerStatus(verbose) tells about one container (see the file comment).
struct CriContainerDetails {
  ContainerState state = ContainerState::kUnknown;
  std::optional<int64_t> pid;
  std::string cgroup;  ///< normalised cgroup path; "" when the runtime did not say
};

class CriRuntime final : public ContainerRuntime {
 public:
  /// The largest reply read from the runtime: kubelet's CRI client limit (16 MiB).
  static constexpr int kMaxReplyBytes = 16 * 1024 * 1024;

  /// Does not connect: the first call does (so a runtime that starts later is found).
  explicit CriRuntime(CriRuntimeOptions options);
  ~CriRuntime() override;
  CriRuntime(const CriRuntime&) = delete;
  CriRuntime& operator=(const CriRuntime&) = delete;

  std::string Name() const override { return "cri"; }
  absl::StatusOr<std::vector<ContainerInfo>> ListContainers() override;
  absl::Status UpdateCpuset(const ContainerInfo& container, const CpuSet& cpus,
                            const CpuSet& mems) override;
  absl::StatusOr<CpusetResources> ReadCpuset(const ContainerInfo& container) override;
  std::optional<int64_t> Pid(const ContainerInfo& container) override;

  /// "<runtime_name> <runtime_version> (CRI <runtime_api_version>)", e.g.
  /// "containerd 1.6.20~ds1 (CRI v1)". Errors as ListContainers.
  absl::StatusOr<std::string> Version();

  /// State, pid and cgroup path of a container. Errors: kNotFound for an unknown id, the gRPC
  /// errors above, kInvalidArgument when the runtime's verbose info does not parse.
  absl::StatusOr<CriContainerDetails> Details(const ContainerInfo& container);

  const CgroupfsWriter& cgroupfs() const { return cgroupfs_; }

 private:
  struct Rpc;  // gRPC channel and stubs; kept out of this header
  CriRuntimeOptions options_;
  CgroupfsWriter cgroupfs_;
  std::unique_ptr<Rpc> rpc_;
};

}  // namespace huygens::cri

#endif  // HUYGENS_CRI_CRI_RUNTIME_H_
