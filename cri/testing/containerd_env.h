// ContainerdEnv: a private containerd for tests that need real containers (cri's containerd
// tests and the agent's end-to-end test). Test-only (target huygens_cri_containerd_env).
//
// Start() creates a temporary folder holding containerd's root, state, socket, config and logs;
// writes a config (cri/testing/containerd_config.sh) with the CRI plugin on, the sandbox image set
// to our local image, the snapshotter overlayfs (native where overlay cannot mount), runc with the
// cgroupfs driver and restrict_oom_score_adj on (so it also runs where lowering oom_score_adj is
// denied, as in unprivileged CI containers); starts `containerd --config ...` as
// a child in its own process group; waits for the CRI socket to answer Version; builds a tiny
// OCI image from busybox-static (cri/testing/busybox_image.sh: bin/busybox with links sh, sleep,
// cat; entrypoint `sleep 1000000`) and imports it with `ctr -n k8s.io images import`. No registry is
// needed. Pod sandboxes use host networking (containerd 1.6 skips CNI for those) unless the
// environment has a pod network (ContainerdEnvOptions::pod_network) and RunPodSandbox asks for
// it: then the sandbox gets a network namespace of its own, set up by containerd through CNI
// with Debian's plugins (package containernetworking-plugins): `bridge` (a bridge of this
// environment's own, "hye2e<test pid>", with no address on the host: no routing, no NAT, no
// host route, nothing outside the bridge reaches the pods) and `host-local` (addresses from
// kPodSubnet, its state under the folder), plus the `loopback` containerd 1.6 always adds.
// Pods of one environment reach each other at their pod IPs over that bridge, as pods of one
// node do.
//
// Pods are placed under the cgroup parent "/huygens-e2e-<test pid>/pod<uid>" (kubelet's
// cgroupfs driver layout, one level shorter), so a container's cgroup is
// "/huygens-e2e-<pid>/pod<uid>/<container id>" in every hierarchy.
//
// Teardown (the destructor, also after a failed test): removes every pod sandbox (which stops
// and removes its containers, and CNI releases its address and link), stops containerd (SIGTERM
// to its process group, SIGKILL after 3 s), deletes the pod network's bridge, kills leftover
// shims started for this containerd (by pid, found by their -address argument), unmounts
// anything left under the folder, removes the folder and the cgroup parent.
//
// Thread-safety: one thread at a time.
#ifndef HUYGENS_CRI_TESTING_CONTAINERD_ENV_H_
#define HUYGENS_CRI_TESTING_CONTAINERD_ENV_H_

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cri/cri_runtime.h"

namespace huygens::cri::testing {

/// The pod network's subnet: every pod-network sandbox gets one address of it.
inline constexpr char kPodSubnet[] = "10.231.0.0/24";

struct ContainerdEnvOptions {
  /// Binaries, looked up in PATH unless absolute. Defaults: Debian's package names.
  std::string containerd = "containerd";
  std::string ctr = "ctr";
  std::string runc = "runc";
  /// A statically linked busybox (Debian: busybox-static). Default "/bin/busybox".
  std::string busybox = "/bin/busybox";
  /// Tag of the image built and imported; also the CRI sandbox_image. Default
  /// "huygens.local/busybox:e2e".
  std::string image = "huygens.local/busybox:e2e";
  /// Set up a pod network (see the file comment). Default false: host networking only.
  bool pod_network = false;
  /// Where the CNI plugins bridge, host-local and loopback are (pod_network only). Default
  /// "/usr/lib/cni" (Debian's containernetworking-plugins).
  std::string cni_plugins = "/usr/lib/cni";
  /// Longest wait for containerd's socket to answer. Default 30 s.
  std::chrono::seconds start_timeout{30};
  /// Per-call timeout of the CRI calls the environment makes. Default 20 s.
  std::chrono::seconds call_timeout{20};
};

/// A pod sandbox the environment started.
struct EnvPod {
  std::string sandbox_id;
  std::string uid;
  std::string name;
  std::string pod_namespace;
  std::string cgroup_parent;  ///< e.g. "/huygens-e2e-123/pod<uid>"
  /// The pod IP (CRI PodSandboxStatus network.ip) of a pod-network sandbox; "" on the host
  /// network.
  std::string ip;
};

class ContainerdEnv {
 public:
  /// Why the environment cannot run on this machine (not root; containerd, ctr, runc or busybox
  /// missing; with options.pod_network, a CNI plugin or `ip` missing), or nullopt when it can.
  /// Tests GTEST_SKIP with this message.
  static std::optional<std::string> Unsupported(const ContainerdEnvOptions& options = {});

  /// Starts containerd and imports the image (see the file comment). Errors name the step and
  /// end with the tail of containerd's log.
  static absl::StatusOr<std::unique_ptr<ContainerdEnv>> Start(ContainerdEnvOptions options = {});

  ~ContainerdEnv();
  ContainerdEnv(const ContainerdEnv&) = delete;
  ContainerdEnv& operator=(const ContainerdEnv&) = delete;

  /// The CRI socket path and the temporary folder.
  const std::string& socket() const { return socket_; }
  const std::string& dir() const { return dir_; }
  /// The snapshotter in use: "overlayfs", or "native" where overlay cannot mount.
  const std::string& snapshotter() const { return snapshotter_; }
  /// CriRuntimeOptions for this containerd (socket set, timeout 5 s, cgroupfs defaults).
  CriRuntimeOptions RuntimeOptions() const;

  /// Runs a pod sandbox labelled like kubelet does (io.kubernetes.pod.uid / name / namespace),
  /// on the host network, or with `pod_network` in a network namespace of its own on the pod
  /// network (EnvPod::ip set). Errors: FailedPrecondition for `pod_network` in an environment
  /// started without ContainerdEnvOptions::pod_network; the CRI's, with containerd's log tail.
  absl::StatusOr<EnvPod> RunPodSandbox(std::string_view uid, std::string_view name,
                                       std::string_view pod_namespace = "default",
                                       bool pod_network = false);

  /// Creates and starts a container `name` in `pod` running `command` (default
  /// sleep 3600), labelled like kubelet does, with CPU shares 512 (so tests can check that an
  /// update keeps them), in the pod's network namespace (the host's unless the pod has an IP).
  /// Returns the container id.
  absl::StatusOr<std::string> StartContainer(const EnvPod& pod, std::string_view name,
                                             uint32_t attempt = 0,
                                             std::vector<std::string> command = {"/bin/sleep",
                                                                                 "3600"});

  /// Stops (SIGKILL at once) and removes nothing.
  absl::Status StopContainer(std::string_view container_id);
  /// Kubelet-style restart: stops `container_id` and starts a new container with the same name
  /// and attempt + 1. Returns the new id.
  absl::StatusOr<std::string> RestartContainer(const EnvPod& pod, std::string_view container_id);
  absl::Status RemoveContainer(std::string_view container_id);
  /// Stops and removes the pod sandbox and its containers.
  absl::Status RemovePodSandbox(const EnvPod& pod);

  /// Main pid of a container (ContainerStatus verbose info).
  absl::StatusOr<int64_t> ContainerPid(std::string_view container_id);

  /// Stops containerd (SIGTERM, then SIGKILL) without touching the containers: the socket goes
  /// away, the shims and containers keep running (runtime down).
  void StopContainerd();
  /// Starts containerd again on the same folder and waits for it (runtime back).
  absl::Status RestartContainerd();
  bool containerd_running() const { return containerd_pid_ > 0; }

  /// The last lines of containerd's log (for failure messages).
  std::string LogTail(size_t lines = 20) const;

 private:
  struct Rpc;
  explicit ContainerdEnv(ContainerdEnvOptions options);
  absl::Status Setup();
  absl::Status LaunchContainerd();
  absl::Status WaitReady();
  absl::Status ImportImage();
  absl::Status SetupPodNetwork();
  void Teardown();

  ContainerdEnvOptions options_;
  std::string dir_;
  std::string socket_;
  std::string snapshotter_;
  std::string cgroup_base_;  ///< "/huygens-e2e-<pid>"
  std::string bridge_;       ///< the pod network's bridge; "" without one
  pid_t containerd_pid_ = -1;
  std::unique_ptr<Rpc> rpc_;
  std::vector<EnvPod> pods_;
};

}  // namespace huygens::cri::testing

#endif  // HUYGENS_CRI_TESTING_CONTAINERD_ENV_H_
