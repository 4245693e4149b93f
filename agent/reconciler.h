// Reconciler: makes the cpusets of this node's containers what the pods' annotations say, and
// reports the outcome on each pod.
//
// One pass (Reconcile) is a pure function of its inputs plus what the reconciler remembers
// (the local checkpoint and the containers it set); the runtime, the API client and the clock
// are injected, so tests drive it step by step.
//
// Desired state (docs/agent.md, "Reconcile rules"):
//   1. kubelet-bound pods: the v2 cpu_manager_state entries (ImportKubeletCpus) hold their CPUs
//      first; the agent never changes their containers and reports them on the pod
//      (state applied, observed.owner "kubelet").
//   2. Huygens pods: a pod of this node with huygens.io/allocation. A malformed annotation, or
//      one that does not match the pod spec or this node, gives `failed` with the parser's
//      reason. The others are admitted into a NodeState in this order: pods the local checkpoint
//      says were applied (with the same allocation), then by creation time, then uid. A pod
//      whose CPUs are offline, in the system pool, outside the user pool or held by a pod
//      admitted before it gets `conflict` naming the CPUs and the holder.
//   3. Cpusets: an exclusive container of an admitted pod -> its cpuset and mems; containers of
//      system namespaces -> the system pool (left alone when it is empty); every other container
//      of a pod (a shared or unlisted container, a pod in conflict or failed, a pod not in the
//      list or that does not decode, cpu-policy none outside cpu_policy_none_namespaces) -> the
//      shared pool (user pool minus every exclusive CPU; in isolated mode, online CPUs outside
//      the user pool, where kubelet runs ordinary pods; when that is empty, the system pool), so
//      nothing runs on an exclusive CPU but its owner. Left alone: cpu-policy none in
//      cpu_policy_none_namespaces, kubelet-bound pods, exited containers. mems: the
//      allocation's, else every NUMA node with memory.
// Actual state: runtime ListContainers + ReadCpuset. A container whose cpuset differs gets
// UpdateCpuset; one that is right is never written (an agent restart moves no CPU that is
// right). A difference on a container the agent already set is counted as drift; a new
// container id for a (pod, container) it set before, as a restart.
// Errors: the runtime down (ListContainers fails) -> every admitted pod `failed` with the
// runtime's message, nothing written; UpdateCpuset / ReadCpuset failing for a container
// (e.g. EBUSY from a nested cgroup v1 cpuset) -> its pod `failed` naming the container; the
// pass goes on with the other pods.
// Status: huygens.io/allocation-status is patched only when its text changes; a change to
// conflict or failed also records a Warning event (through kube::EventRecorder: a repeat within
// 6 minutes counts in the first Event's series). Admitted pods are `applied` when every
// running container of the allocation has its cpuset and no long-running one is missing, else
// `pending` naming the missing containers.
// Local checkpoint (node/checkpoint.h): the admitted Huygens pods, written when they change.
//
// Thread-safety: not thread-safe; one thread runs the passes.
#ifndef HUYGENS_AGENT_RECONCILER_H_
#define HUYGENS_AGENT_RECONCILER_H_

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/status.h"
#include "cpuset/cpuset.h"
#include "cri/runtime.h"
#include "kube/client.h"
#include "kube/event_recorder.h"
#include "base/clock.h"
#include "node/allocation.h"
#include "node/checkpoint.h"
#include "node/kubelet_checkpoint.h"
#include "node/node_state.h"
#include "nlohmann/json.hpp"
#include "topology/topology.h"

namespace huygens::agent {

struct ReconcilerOptions {
  std::string node_name;                        // required
  std::shared_ptr<const CpuTopology> topology;  // required
  CpuSet system_cpus;                           // the system pool; default none
  NodeMode mode = NodeMode::kAllocatable;
  // Namespaces whose containers go to the system pool. Default {"kube-system"}.
  std::vector<std::string> system_namespaces{"kube-system"};
  // Namespaces where huygens.io/cpu-policy: none leaves a container alone (AgentConfig's
  // cpuPolicyNoneNamespaces). Default: none.
  std::vector<std::string> cpu_policy_none_namespaces;
  // The agent's checkpoint file; "" = keep none. Default "".
  std::string checkpoint_path;
  // Memory accounting of the admitted pods (NodeConfig::memory_manager): when set, each pass
  // reports the memory and hugepages Huygens' Guaranteed pods hold per NUMA node
  // (ReconcileReport::memory_held), recorded on their containers' mems. Default: none.
  std::optional<MemoryManagerConfig> memory_manager;
};

struct ReconcileInput {
  std::vector<nlohmann::json> pods;            // pod objects; those of other nodes are ignored
  std::optional<KubeletCpuCheckpoint> kubelet;  // kubelet's cpu_manager_state, when there is one
};

// One pod's outcome in a pass.
struct PodOutcome {
  std::string uid, ns, name;
  AllocationStatus status;
  bool patched = false;  // the annotation was written in this pass
};

// What one pass did.
struct ReconcileReport {
  int containers_applied = 0;    // successful UpdateCpuset calls (all kinds)
  int drift_corrections = 0;     // of which: a container the agent had set was changed by others
  int restarts_reapplied = 0;    // of which: a restarted container (new id) of a known one
  int update_failures = 0;       // failed UpdateCpuset / ReadCpuset calls
  int conflicts = 0;             // pods in conflict
  int failed = 0;                // pods failed
  int status_patches = 0;        // annotation patches sent
  std::vector<double> apply_latency_seconds;  // per successful UpdateCpuset, on the clock
  std::vector<PodOutcome> pods;  // Huygens and kubelet-bound pods, by uid
  CpuSet exclusive;              // every exclusive CPU (for the NRT)
  // With ReconcilerOptions::memory_manager: bytes held by the admitted pods, NUMA id -> resource
  // name ("memory", "hugepages-2Mi", ...) -> bytes; entries with 0 bytes left out.
  std::map<int, std::map<std::string, uint64_t>> memory_held;
  bool runtime_ok = true;        // ListContainers succeeded
  std::vector<std::string> warnings;  // kubelet checkpoint violations, unreadable pods, ...
};

class Reconciler {
 public:
  // Builds the node's pools and loads the local checkpoint (a corrupt one is moved aside and
  // reported in the first pass's warnings). `runtime`, `client` and `clock` must outlive it.
  // Errors: InvalidArgument from NodeState::Create (bad system CPUs), Internal when the
  // checkpoint exists but cannot be read.
  static absl::StatusOr<std::unique_ptr<Reconciler>> Create(ReconcilerOptions options,
                                                           cri::ContainerRuntime* runtime,
                                                           kube::Client* client,
                                                           Clock* clock);

  // One pass; see the file comment. Never fails: every problem is in the report and on pods.
  ReconcileReport Reconcile(const ReconcileInput& input);

  // The empty node: pools of this configuration without pods.
  const NodeState& EmptyNode() const { return empty_; }

 private:
  struct Admitted;
  struct Pass;
  struct Desired {
    CpuSet cpus, mems;
  };
  Reconciler(ReconcilerOptions options, cri::ContainerRuntime* runtime, kube::Client* client,
             Clock* clock, NodeState empty);

  // The steps of one pass, in order (see the file comment for the rules).
  void CollectPods(const ReconcileInput& input, Pass& pass, ReconcileReport& report);
  void AdmitPods(const ReconcileInput& input, Pass& pass, ReconcileReport& report);
  void ConvergeContainers(Pass& pass, ReconcileReport& report);
  void ReportStatuses(const Pass& pass, ReconcileReport& report);
  void SaveCheckpoint(const Pass& pass, ReconcileReport& report);

  // Sets one container to `want` when it differs; returns the error to report on its pod.
  absl::Status Converge(const cri::ContainerInfo& c, const Desired& want,
                        ReconcileReport& report, CpuSet& observed);
  // Patches the pod's status annotation when it changed; events on conflict/failed.
  void Report(const std::string& ns, const std::string& name, const std::string& uid,
              const std::optional<std::string>& current, const AllocationStatus& status,
              ReconcileReport& report);
  void WriteCheckpoint(const NodeCheckpoint& checkpoint, ReconcileReport& report);

  const ReconcilerOptions options_;
  cri::ContainerRuntime* const runtime_;
  kube::Client* const client_;
  Clock* const clock_;
  kube::EventRecorder events_;  // CpusetConflict / CpusetFailed, folded into series
  const NodeState empty_;
  std::optional<CheckpointFile> checkpoint_file_;
  // Pods the agent applied before (from the checkpoint, then from each pass): uid -> allocation.
  std::map<std::string, PodAllocation> applied_pods_;
  std::optional<NodeCheckpoint> last_checkpoint_;
  // Containers the agent set: container id -> the cpuset it wrote.
  std::map<std::string, cri::CpusetResources> set_by_us_;
  // (pod uid, container name) -> the last container id the agent set.
  std::map<std::pair<std::string, std::string>, std::string> known_containers_;
  std::vector<std::string> pending_warnings_;
};

}  // namespace huygens::agent

#endif  // HUYGENS_AGENT_RECONCILER_H_
