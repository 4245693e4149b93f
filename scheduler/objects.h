// Reading Kubernetes objects (JSON, as the API server returns them) into the scheduling core's
// types: core/v1 Pod -> sched::Pod, core/v1 Node -> sched::Node, NodeResourceTopology ->
// NodeState (the exact topology and pools from the huygens.io/cpu-topology and huygens.io/pools
// annotations, topology/nrt.h).
//
// Field meanings follow core/v1. A pod's identity, containers and huygens.io/* annotations are
// read by the pod codec (kube/pod_codec.h, shared with the agent: one set of rules, among them
// "a missing request defaults to the limit"); node quantities by its ReadQuantity. Only what
// the core reads is converted; unknown fields are ignored.
// Errors: InvalidArgument naming the object ("pod default/web: spec.containers[0].resources.
// requests.cpu: ...") and the field.
// Thread-safety: pure functions.
#ifndef HUYGENS_SCHEDULER_OBJECTS_H_
#define HUYGENS_SCHEDULER_OBJECTS_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "cpuset/cpuset.h"
#include "kube/pod_codec.h"
#include "nlohmann/json.hpp"
#include "node/allocation.h"
#include "node/node_state.h"
#include "sched/node.h"
#include "sched/pod.h"

namespace huygens::scheduler {

// The pod's scheduling view: what the pod codec reads (kube/pod_codec.h, its rules and errors),
// plus labels, nodeSelector, node affinity, tolerations, host ports, the containers' images
// (sched::NormalizedImageName), priority and schedulerName (inter-pod affinity and topology
// spread constraints are the codec's, rules 17 and 18). `creation_index` is left 0 (the
// caller numbers pods in arrival order).
absl::StatusOr<sched::Pod> PodFromJson(const nlohmann::json& pod);

// The pod's huygens.io/allocation annotation; nullopt when absent.
// Errors: AllocationFromJson's, prefixed by the pod.
absl::StatusOr<std::optional<PodAllocation>> PodAllocationOf(const nlohmann::json& pod);

// True for a pod that holds no resources any more (status.phase Succeeded or Failed).
bool PodIsTerminal(const nlohmann::json& pod);

// True for a pod being deleted (metadata.deletionTimestamp set, kube/pod_codec.h rule 12).
bool PodIsBeingDeleted(const nlohmann::json& pod);

// The node's name, labels, taints, spec.unschedulable, status.allocatable (cpu, memory, pods,
// extended resources) and status.images (each name with its image's sizeBytes; entries of
// another shape are skipped). cpu_state is left null.
absl::StatusOr<sched::Node> NodeFromJson(const nlohmann::json& node);

// The node's CPU state from its NodeResourceTopology: topology and pools from the Huygens
// annotations, topology policy and scope from the topologyManagerPolicy / topologyManagerScope
// attributes (the NodeConfig defaults when absent or unknown), `numa_strategy` from the
// configuration. The pools' `exclusive` CPUs that no Huygens allocation holds (`huygens_held`)
// are CPUs held by kubelet or another scheduler's pods: they join the system pool here, so the
// scheduler never hands them out. NUMA-affine devices (NodeConfig::devices): every zone
// resource with a domain in its name other than huygens.io/* (e.g. "nvidia.com/gpu", as NFD's
// topology-updater reports device-plugin resources), counted by its allocatable; an allocatable
// that is not a whole count is InvalidArgument naming the object, the zone and the resource.
// `devices_in_use`, when given, receives the devices the zones report in use per resource and
// NUMA node (allocatable - available, as NFD's topology-updater and Huygens' agent count the
// devices kubelet gave to any container; a resource without `available`, v1alpha1, counts
// none; only counts > 0): the caller subtracts what its own pods hold to find the devices of
// pods it does not account (CacheSync, NodeState::HoldForeignDevices).
// Errors: InvalidArgument naming the object and the field: ReadNrt's, TopologyFromNrt's and
// PoolsFromNrt's; pools `system` or `exclusive` naming CPUs that are not online CPUs of the
// huygens.io/cpu-topology machine; an unknown mode, a bad capacity factor, memory or device
// figure; NodeState::Create's, prefixed by the object. Never throws.
absl::StatusOr<std::shared_ptr<const NodeState>> NodeStateFromNrt(const nlohmann::json& nrt,
                                                                  NumaStrategy numa_strategy,
                                                                  const CpuSet& huygens_held,
                                                                  NodeDevices* devices_in_use = nullptr);

// The devices of NodeStateFromNrt alone (NodeConfig::devices, and `in_use` when given), for a
// publication whose zones changed but nothing else. Errors: NodeStateFromNrt's for the
// object and for the devices.
absl::StatusOr<NodeDevices> DevicesFromNrt(const nlohmann::json& nrt, NodeDevices* in_use);

}  // namespace huygens::scheduler

#endif  // HUYGENS_SCHEDULER_OBJECTS_H_
