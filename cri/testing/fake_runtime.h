// FakeRuntime: an in-memory ContainerRuntime for tests of the agent (and anything else that
// drives a ContainerRuntime). Test-only (target huygens_cri_fake).
//
// What it models: a node with a set of online CPUs and NUMA memory nodes, and containers that
// each hold a cpuset. A test adds, removes and restarts containers, injects faults and changes
// cpusets "behind the agent's back"; every UpdateCpuset call is recorded, successful or not.
//
// Behaviour (chosen to match containerd + runc on cgroup v1 where it matters to the agent):
//   - A new container starts with the node's whole cpuset (all CPUs, all memory nodes), as a
//     container without a CPU manager assignment does.
//   - Restarting a container, as kubelet does, creates a NEW container: new id, attempt + 1,
//     new pid, cpuset back to the node default; the old container is left exited.
//   - UpdateCpuset: kUnavailable while the runtime is down; kNotFound for an unknown id;
//     kFailedPrecondition with the injected message when a failure was injected for the id;
//     kFailedPrecondition "... EINVAL" when cpus or mems are empty or not within the node
//     (the kernel refuses such a write); otherwise it sets both cpus and mems.
//   - ReadCpuset returns what the container holds now (including drift set by the test).
//   - Pid is set only for running containers.
//
// Invariants: container ids are unique; a container's cpuset is always a subset of the node's.
// Thread-safety: every method is safe to call from any thread (one mutex), so a test may inject
// faults while the agent runs its loop on another thread.
#ifndef HUYGENS_CRI_TESTING_FAKE_RUNTIME_H_
#define HUYGENS_CRI_TESTING_FAKE_RUNTIME_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cpuset/cpuset.h"
#include "cri/runtime.h"

namespace huygens::cri::testing {

class FakeRuntime final : public ContainerRuntime {
 public:
  /// One recorded UpdateCpuset call.
  struct UpdateCall {
    std::string container_id;
    CpuSet cpus;
    CpuSet mems;
    absl::Status result;  ///< what the call returned
  };

  /// A node whose CPUs are `node_cpus` and whose NUMA memory nodes are `node_mems`.
  /// REQUIRES: both non-empty.
  FakeRuntime(CpuSet node_cpus, CpuSet node_mems);

  // --- ContainerRuntime ---------------------------------------------------------------------
  std::string Name() const override { return "fake"; }
  absl::StatusOr<std::vector<ContainerInfo>> ListContainers() override;
  absl::Status UpdateCpuset(const ContainerInfo& container, const CpuSet& cpus,
                            const CpuSet& mems) override;
  absl::StatusOr<CpusetResources> ReadCpuset(const ContainerInfo& container) override;
  std::optional<int64_t> Pid(const ContainerInfo& container) override;

  // --- Test controls -------------------------------------------------------------------------

  /// Adds a container. An empty `info.id` gets a fresh one ("fake-<n>"); state kUnknown becomes
  /// kRunning; created_at_ns 0 gets a increasing counter. Its cpuset is the node's whole cpuset.
  /// Returns the stored info. REQUIRES: the id is not in use.
  ContainerInfo AddContainer(ContainerInfo info);

  /// Convenience: a running container of pod `pod_namespace/pod_name` (uid `pod_uid`) named
  /// `container_name`, in sandbox "sandbox-<pod_uid>".
  ContainerInfo AddPodContainer(std::string_view pod_uid, std::string_view pod_namespace,
                                std::string_view pod_name, std::string_view container_name);

  /// Removes the container (and any fault injected for it). False if there was none.
  bool RemoveContainer(std::string_view id);

  /// Kubelet-style restart: marks `id` exited and adds a new running container with the same
  /// Kubernetes identity, attempt + 1, a new id and pid and the node's default cpuset.
  /// Returns the new container. Errors: kNotFound for an unknown id.
  absl::StatusOr<ContainerInfo> RestartContainer(std::string_view id);

  /// Sets the container's state (kExited clears its pid; kRunning gives it one).
  /// False for an unknown id.
  bool SetState(std::string_view id, ContainerState state);

  /// While down, every ContainerRuntime call fails with kUnavailable (like a dead socket).
  void SetDown(bool down);

  /// Every later UpdateCpuset of `id` fails with kFailedPrecondition and `message` (for example
  /// "write .../cpuset.cpus: Device or resource busy (EBUSY)"); nothing changes.
  void FailUpdates(std::string_view id, std::string message);
  /// Stops failing updates of `id`.
  void ClearFailure(std::string_view id);

  /// Drift: sets the container's cpuset without recording an UpdateCpuset call, as if another
  /// program wrote the cgroup. False for an unknown id. REQUIRES: within the node's cpuset.
  bool SetCpusetBehindTheAgentsBack(std::string_view id, const CpuSet& cpus, const CpuSet& mems);

  /// The container's current cpuset (nullopt for an unknown id); ignores SetDown.
  std::optional<CpusetResources> CpusetOf(std::string_view id) const;

  /// Every UpdateCpuset call so far, oldest first (including failed ones).
  std::vector<UpdateCall> Updates() const;
  /// Forgets the recorded calls.
  void ClearUpdates();

  const CpuSet& node_cpus() const { return node_cpus_; }
  const CpuSet& node_mems() const { return node_mems_; }

 private:
  struct Container {
    ContainerInfo info;
    CpusetResources cpuset;
    std::optional<int64_t> pid;
    std::optional<std::string> failure;  ///< injected UpdateCpuset failure message
  };

  absl::Status CheckUp(std::string_view verb, std::string_view id) const;  // REQUIRES: mu_ held
  ContainerInfo AddLocked(ContainerInfo info);                             // REQUIRES: mu_ held

  const CpuSet node_cpus_;
  const CpuSet node_mems_;
  mutable std::mutex mu_;
  std::map<std::string, Container, std::less<>> containers_;
  std::vector<UpdateCall> updates_;
  bool down_ = false;
  int64_t next_serial_ = 1;  ///< ids, pids and creation times
};

}  // namespace huygens::cri::testing

#endif  // HUYGENS_CRI_TESTING_FAKE_RUNTIME_H_
