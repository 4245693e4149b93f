// Pod: the scheduler's view of one pod.
//
// What it is: the pod's resource shape (PodSpec, from alloc/pod.h: uid, namespace, name,
// containers, Huygens annotations) plus every field kube-scheduler's default filters read:
// labels, nodeSelector, required and preferred node affinity, inter-pod affinity, tolerations,
// host ports, priority, schedulerName, spec.nodeName, extended-resource requests and creation
// order.
// Field meanings and defaults follow the Kubernetes core/v1 API.
//
// Invariants: `spec.uid` is non-empty and unique in a cluster; `creation_index` is unique per
// pod and increases with creation time (it breaks priority ties in the queue, like
// kube-scheduler's timestamp ordering).
//
// Thread-safety: plain data.
#ifndef HUYGENS_SCHED_POD_H_
#define HUYGENS_SCHED_POD_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "alloc/pod.h"
#include "base/label_selector.h"
#include "base/wire_names.h"

namespace huygens::sched {

// core/v1 NodeSelectorRequirement: a requirement on a node label (or, in
// NodeSelectorTerm::match_fields, on the node's name), with Kubernetes' semantics
// (base/label_selector.h). For kGt/kLt `values` holds exactly one integer (as text); for
// kExists/kDoesNotExist it is empty.
using NodeSelectorRequirement = LabelRequirement;

// core/v1 NodeSelectorTerm: the requirements are ANDed. `match_fields` supports the one field
// Kubernetes supports, `metadata.name`. A term with no requirements matches no node (as in
// Kubernetes).
struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;  // on node labels
  std::vector<NodeSelectorRequirement> match_fields;       // key "metadata.name" only

  friend bool operator==(const NodeSelectorTerm&, const NodeSelectorTerm&) = default;
};

// core/v1 PreferredSchedulingTerm (weight 1..100).
struct PreferredSchedulingTerm {
  int32_t weight = 1;
  NodeSelectorTerm preference;

  friend bool operator==(const PreferredSchedulingTerm&, const PreferredSchedulingTerm&) = default;
};

// core/v1 TaintEffect.
enum class TaintEffect { kNoSchedule, kPreferNoSchedule, kNoExecute };

// core/v1 TolerationOperator.
enum class TolerationOperator { kEqual, kExists };

// core/v1 Toleration. An empty key with kExists tolerates every taint; an unset effect matches
// every effect.
struct Toleration {
  std::string key;
  TolerationOperator op = TolerationOperator::kEqual;
  std::string value;
  std::optional<TaintEffect> effect;           // nullopt = all effects
  std::optional<int64_t> toleration_seconds;   // NoExecute only; not used for placement

  friend bool operator==(const Toleration&, const Toleration&) = default;
};

// A container port with hostPort set (core/v1 ContainerPort). Two ports conflict when protocol
// and port are equal and the host IPs are equal or either is the wildcard (kube-scheduler's
// NodePorts plugin).
struct HostPort {
  std::string host_ip;          // "" and "0.0.0.0" both mean every address
  std::string protocol = "TCP"; // "TCP", "UDP" or "SCTP"
  int32_t port = 0;             // 1..65535

  friend bool operator==(const HostPort&, const HostPort&) = default;
};

struct Pod {
  PodSpec spec;  // uid, namespace, name, containers, Huygens annotations
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> node_selector;                // spec.nodeSelector
  // spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution: the terms are
  // ORed. Empty = no requirement.
  std::vector<NodeSelectorTerm> required_node_affinity;
  // spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution.
  std::vector<PreferredSchedulingTerm> preferred_node_affinity;
  // spec.affinity.podAffinity and podAntiAffinity (base/label_selector.h).
  PodAffinity pod_affinity;
  std::vector<Toleration> tolerations;
  std::vector<HostPort> host_ports;
  // Effective requests of extended resources other than huygens.io/isolated-cpu (which comes
  // from the containers' `isolated_cpus`), computed as Kubernetes does for the pod
  // (PodExtendedRequests, alloc/pod.h). Resource name -> amount.
  std::map<std::string, int64_t> extended_requests;
  int32_t priority = 0;                                  // spec.priority (resolved)
  std::string scheduler_name = "default-scheduler";      // spec.schedulerName
  std::string node_name;                                 // spec.nodeName ("" = unset)
  int64_t creation_index = 0;                            // creation order, see file comment
  // metadata.resourceVersion as decoded: the version a decision read, which the service's
  // Binding carries as its precondition ("" in the simulator).
  std::string resource_version;
  bool rebalance = true;  // huygens.io/rebalance; false: the rebalancer never moves it
  // The image of each init container, then each app container, in spec order, as
  // kube-scheduler's ImageLocality names it (":latest" added when the name has no tag).
  std::vector<std::string> container_images;
  // spec.topologySpreadConstraints (base/label_selector.h).
  std::vector<TopologySpreadConstraint> topology_spread_constraints;
  // What the pod asks for that huygens-scheduler reads only to know it is asked
  // (sched/plugin_unsupported_features.cc): the names of its persistentVolumeClaim and
  // ephemeral volumes and of its spec.resourceClaims.
  std::vector<std::string> claim_volumes;
  std::vector<std::string> resource_claims;
  // spec.schedulingGates' names: while any is left the pod is not attempted.
  std::vector<std::string> scheduling_gates;
  // spec.overhead's cpu (millicores) and memory (bytes), added to the requests in the fit (its
  // extended resources are in `extended_requests`).
  int64_t overhead_memory_bytes = 0;
  int64_t overhead_cpu_milli = 0;
  // Pod-level requests (spec.resources.requests, PodLevelResources), cpu in millicores and
  // memory in bytes; nullopt where unset. Each replaces the containers' sum in the fit.
  std::optional<int64_t> pod_memory_request_bytes;
  std::optional<int64_t> pod_cpu_request_milli;

  const std::string& Uid() const { return spec.uid; }
};

// Pods are shared, immutable, between the queue, the cache and the caller.
using PodPtr = std::shared_ptr<const Pod>;

// Effective pod requests as kube-scheduler v1.35 computes them for the fit (component-helpers'
// resource.PodRequests): for each resource, max(sum over app containers and restartable init
// containers, the largest regular init container plus the restartable init containers started
// before it); a pod-level request (Pod::pod_cpu_request_milli, pod_memory_request_bytes) replaces
// that for its resource; then the pod overhead is added. A container without a request counts
// 0. cpu is in millicores, memory in bytes; isolated_cpus in whole CPUs (containers only).
struct PodRequests {
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  int64_t isolated_cpus = 0;  // huygens.io/isolated-cpu
  // cpu and memory as kube-scheduler's scores count them (NodeInfo.NonZeroRequested, v1.35): the
  // same sum with a container's missing cpu request taken as 100m and its missing memory request
  // as 200 MiB (DefaultMilliCPURequest, DefaultMemoryRequest). A request written as 0 is
  // missing here too (the codec keeps no difference).
  int64_t non_zero_cpu_milli = 0;
  int64_t non_zero_memory_bytes = 0;

  friend bool operator==(const PodRequests&, const PodRequests&) = default;
};
PodRequests ComputePodRequests(const Pod& pod);

// Appends to `key` the pod's equivalence key: every field a Filter or Score plugin may read
// (the PodSpec but uid and name; nodeSelector, node affinity, tolerations, host ports, extended
// requests, pod-level requests, overhead, priority, schedulerName, spec.nodeName, inter-pod
// affinity terms, topology spread constraints, container images). Pods with equal keys are judged and scored
// identically on a node in a given state, which the scheduler's equivalence cache relies on.
// Left out: uid, name, labels (only InterPodAffinity and PodTopologySpread read them, and they
// keep an attempt where they matter out of the equivalence cache:
// CycleState::skip_equivalence_cache), creation_index, resource_version,
// scheduling_gates (never attempted) and what UnsupportedFeatures reads (a PreFilter: a pod it
// refuses reaches no Filter). A plugin that reads a new
// pod field must add it here; a static_assert on the struct sizes in pod.cc is the reminder.
void AppendEquivalenceKey(const Pod& pod, std::string& key);

const char* ToString(TaintEffect e);          // "NoSchedule", "PreferNoSchedule", "NoExecute"

}  // namespace huygens::sched

#endif  // HUYGENS_SCHED_POD_H_
