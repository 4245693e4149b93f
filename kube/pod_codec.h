// The one reader of a core/v1 Pod object (JSON, as the API server returns it) into what Huygens
// needs of it: identity, the containers' CPU and memory shape, the huygens.io/* annotations, the
// node and the phase. The scheduler (scheduler/objects.h) and the agent (agent/pod.h) both read
// pods through it and add their own fields on top (the scheduler: labels, node affinity,
// tolerations, ports, priority, schedulerName).
//
// The rules (one test each in kube/pod_codec_test.cc):
//   1. The pod is a JSON object with a `metadata` object ("pod: not a JSON object", "pod: metadata:
//      missing").
//   2. metadata.uid, metadata.name and metadata.namespace are non-empty strings (every pod the
//      API server returns has them; the node bookkeeping keys pods by uid, the agent patches them
//      by name).
//   3. metadata.annotations, when present, is an object of strings.
//   4. huygens.io/cpu-policy, huygens.io/topology-policy and huygens.io/bind-policy, when present,
//      name a known policy (alloc/pod.h's names); anything else is an error naming the pod and
//      the annotation. huygens.io/affinity-group is any string. huygens.io/allocation and
//      huygens.io/allocation-status are kept as written (their readers report a malformed one).
//      huygens.io/rebalance, when present, is "true" or "false".
//   5. spec.initContainers and spec.containers, when present, are arrays of objects, each with a
//      non-empty name; an init container with restartPolicy Always is a sidecar (restartable).
//   6. Quantities are strings ("4", "500m", "1Gi") or JSON numbers: cpu as a CPU quantity
//      (millicores), memory in bytes (base/quantity.h).
//   7. huygens.io/isolated-cpu is a CPU quantity of whole CPUs ("2"; "500m" and "1k" are errors).
//   8. Other extended resources (names with a domain) are integer quantities ("1", "1k" = 1000).
//   9. A missing request defaults to the limit, per resource (the API server's defaulting, which
//      the fake API server does not do).
//  10. hugepages-<size> requests are memory quantities in bytes, kept by resource name in
//      ContainerSpec::hugepages_request_bytes ("hugepages-2Mi": "1Gi" -> 1073741824).
//  11. spec.hostNetwork is true only when it is JSON true; the pod IPs are the string `ip`s of
//      status.podIPs in order (entries of another shape skipped), else status.podIP, else none.
//      Kept as text: they are only read to tell which local pod owns an address.
//  12. metadata.deletionTimestamp, when a string, is kept as text: the pod is being deleted
//      (a grace period or finalizers pending) and still exists until the API server removes it.
//  13. spec.resources (pod-level resources, PodLevelResources, beta and on by default in
//      Kubernetes v1.35): requests.cpu and requests.memory, each defaulting to the pod-level
//      limit (the API server's defaulting); other resources are not read. An object when set.
//  14. spec.overhead (set by RuntimeClass admission): cpu, memory and extended resources (names
//      with a domain, integer quantities); other resources are not read. An object when set.
//  15. spec.schedulingGates, when present, is an array of objects, each with a non-empty name.
//  16. What the pod asks for that only a scheduler reads: spec.resourceClaims (an array) and
//      the spec.volumes (an array of objects) that are persistentVolumeClaim or ephemeral
//      volumes; their names are kept.
//  17. spec.affinity.podAffinity and spec.affinity.podAntiAffinity, when present, are objects
//      whose requiredDuringSchedulingIgnoredDuringExecution, when present, is an array of
//      PodAffinityTerm objects and whose preferredDuringSchedulingIgnoredDuringExecution is an
//      array of objects with an integer `weight` of 1 to 100 and a `podAffinityTerm` object (the
//      API server's validation). A PodAffinityTerm has a non-empty string topologyKey;
//      labelSelector and namespaceSelector, when present and not null, are meta/v1
//      LabelSelectors (kube/label_selector_codec.h: an absent labelSelector selects no pod, an
//      empty namespaceSelector every namespace); namespaces, matchLabelKeys and
//      mismatchLabelKeys are arrays of strings. Read into base/label_selector.h's PodAffinity;
//      matchLabelKeys stay apart from the selector (the scheduler applies them, see there).
//  18. spec.topologySpreadConstraints, when present, is an array of objects (the API server's
//      validation): maxSkew an integer of at least 1; topologyKey a non-empty string;
//      whenUnsatisfiable "DoNotSchedule" or "ScheduleAnyway"; minDomains, when present and not
//      null, an integer of at least 1, and only with DoNotSchedule; nodeAffinityPolicy and
//      nodeTaintsPolicy, when present and not null, "Honor" or "Ignore"; labelSelector as in
//      rule 17; matchLabelKeys an array of strings. Read into base/label_selector.h's
//      TopologySpreadConstraint, unset fields as the API server defaults them.
// Unknown fields are ignored. Every error is InvalidArgument "pod <namespace>/<name>: <field>:
// <problem>", e.g. `pod default/web: spec.containers[0].resources.requests.cpu: "4Gi" is not a
// CPU quantity ...`.
//
// Thread-safety: pure functions.
#ifndef HUYGENS_KUBE_POD_CODEC_H_
#define HUYGENS_KUBE_POD_CODEC_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "alloc/pod.h"
#include "base/label_selector.h"
#include "nlohmann/json.hpp"

namespace huygens::kube {

// What the codec reads of one pod.
struct PodObject {
  // uid, namespace, name; containers (init containers in spec.initContainers, app containers in
  // spec.containers, each in spec order); the cpu, topology and bind policies and the affinity
  // group from the annotations.
  PodSpec spec;
  std::string node_name;           // spec.nodeName, "" when unset
  std::string phase;               // status.phase, "" when unset
  std::string creation_timestamp;  // metadata.creationTimestamp (RFC 3339), "" when unset
  std::string deletion_timestamp;  // metadata.deletionTimestamp (rule 12), "" when unset
  bool host_network = false;       // spec.hostNetwork (rule 11)
  std::vector<std::string> pod_ips;  // status.podIPs[].ip, else status.podIP (rule 11)
  PodAffinity pod_affinity;          // spec.affinity.podAffinity / podAntiAffinity (rule 17)
  std::optional<std::string> allocation;         // huygens.io/allocation, as written
  std::optional<std::string> allocation_status;  // huygens.io/allocation-status, as written
  // huygens.io/rebalance: false when the annotation is "false" (the rebalancer leaves the pod
  // where it is). Default true.
  bool rebalance = true;
  // Rule 13: the pod-level requests; nullopt where unset.
  std::optional<int64_t> pod_cpu_request_milli;
  std::optional<int64_t> pod_memory_request_bytes;
  // Rule 14: spec.overhead (0 / empty when unset).
  int64_t overhead_cpu_milli = 0;
  int64_t overhead_memory_bytes = 0;
  std::map<std::string, int64_t> overhead_extended;
  // Rule 15: spec.schedulingGates[].name, in order.
  std::vector<std::string> scheduling_gates;
  // Rule 16: spec.resourceClaims[].name; the names of the persistentVolumeClaim and ephemeral
  // volumes.
  std::vector<std::string> resource_claims;
  std::vector<std::string> claim_volumes;
  // Rule 18: spec.topologySpreadConstraints, in order.
  std::vector<TopologySpreadConstraint> topology_spread_constraints;

  // The pod holds no resources any more (IsTerminalPhase(phase)).
  bool terminal() const;
};

// True for status.phase Succeeded or Failed.
bool IsTerminalPhase(std::string_view phase);

// metadata.deletionTimestamp of a pod (rule 12), "" when unset: what DecodePod reads into
// PodObject::deletion_timestamp, for a caller that needs that field alone. Never fails.
std::string DeletionTimestampOf(const nlohmann::json& pod);

// Reads a Pod object by the rules above.
absl::StatusOr<PodObject> DecodePod(const nlohmann::json& pod);

// "namespace/name" of an object's metadata ("name" for a cluster-scoped object, "" when the
// metadata is missing): the key used in messages.
std::string ObjectKey(const nlohmann::json& object);

// What a quantity field holds (rule 6).
enum class QuantityKind {
  kCpuMilli,  // a CPU quantity -> millicores
  kAmount,    // memory, pods and extended resources -> an integer amount (bytes for memory)
};

// Reads one quantity field: a string or a JSON number. Errors: InvalidArgument "<object>:
// <field>: <problem>" (the object as "pod default/web", "node n1").
absl::StatusOr<int64_t> ReadQuantity(const nlohmann::json& value, QuantityKind kind,
                                     std::string_view object, std::string_view field);

}  // namespace huygens::kube

#endif  // HUYGENS_KUBE_POD_CODEC_H_
