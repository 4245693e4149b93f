// The codec of the NumaAffinityGroup object (group huygens.io, version v1alpha1, namespaced;
// the CRD is deploy/helm/huygens/crds/numaaffinitygroup.yaml, the format docs/numa-affinity-group.md):
// reads the object into a typed struct, and writes its status as the body of a merge patch of the
// status subresource, for huygens-scheduler's rebalancer (scheduler/rebalancer.h, which forms
// groups from the annotation below only until it reads these objects).
//
// A group names pods of its namespace by label selector and says how their exclusive CPUs
// should sit on the NUMA nodes of each node: `same-numa` (the default), `nearest`, `spread`.
// The pod annotation huygens.io/affinity-group is the short form: the pods carrying it with one
// value form an implicit group of that name with policy same-numa (kube/pod_codec.h reads it;
// the scheduler's cache keys such groups by the name alone, sched/cache.h).
//
// Decoding rules (one test each in kube/numa_affinity_group_test.cc):
//   1. The object is a JSON object with a `metadata` object; `kind` and `apiVersion`, when
//      present, are "NumaAffinityGroup" and "huygens.io/v1alpha1".
//   2. metadata.name, metadata.namespace and metadata.uid are non-empty strings;
//      metadata.generation, when present, is a non-negative integer (0 when absent).
//   3. `spec` is an object and spec.selector is an object (a meta/v1 LabelSelector). The empty
//      selector `{}` selects every pod of the namespace, as in Kubernetes.
//   4. spec.selector.matchLabels, when present, is an object of strings.
//   5. spec.selector.matchExpressions, when present, is an array of objects, each with a
//      non-empty string `key`, an `operator` of In, NotIn, Exists, DoesNotExist, and `values`
//      (an array of strings) that is non-empty for In and NotIn and empty or absent for Exists
//      and DoesNotExist (apimachinery's ValidateLabelSelectorRequirement).
//   6. spec.policy, when present, is one of same-numa, nearest, spread; absent = same-numa.
// Label keys and values are not checked against Kubernetes' label syntax: a key or value no pod
// can carry matches no pod. Unknown fields and the status are ignored. Every error is
// InvalidArgument "NumaAffinityGroup <namespace>/<name>: <field>: <problem>", e.g.
// `NumaAffinityGroup ns/x: spec.selector.matchExpressions[1].operator: "Foo" is not one of In,
// NotIn, Exists, DoesNotExist`. The CRD's schema refuses most of these already; the codec
// holds on its own (an object written before the schema, a fake API server, a fuzzer).
//
// Thread-safety: pure functions.
#ifndef HUYGENS_KUBE_NUMA_AFFINITY_GROUP_H_
#define HUYGENS_KUBE_NUMA_AFFINITY_GROUP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "alloc/pod.h"
#include "base/label_selector.h"
#include "nlohmann/json.hpp"

namespace huygens::kube {

// What the codec reads of one NumaAffinityGroup.
struct NumaAffinityGroup {
  std::string namespace_name;  // metadata.namespace: the group selects pods of this namespace
  std::string name;            // metadata.name
  std::string uid;             // metadata.uid
  int64_t generation = 0;      // metadata.generation: goes to status.observedGeneration
  LabelSelector selector;      // spec.selector
  AffinityGroupPolicy policy = AffinityGroupPolicy::kSameNuma;  // spec.policy (alloc/pod.h)

  friend bool operator==(const NumaAffinityGroup&, const NumaAffinityGroup&) = default;
};

// Reads a NumaAffinityGroup object by the rules above.
absl::StatusOr<NumaAffinityGroup> DecodeNumaAffinityGroup(const nlohmann::json& object);

// One member of a group as the rebalancer last saw it (status.members[]).
struct AffinityGroupMember {
  std::string pod;              // the pod's name (in the group's namespace)
  std::string node;             // the node it runs on
  std::vector<int> numa_nodes;  // the NUMA node ids its exclusive CPUs sit on, ascending
  int cpus = 0;                 // its exclusive CPUs (0: it holds none)
};

// The group's one condition (status.conditions[], meta/v1 Condition's shape).
struct AffinityGroupCondition {
  std::string type = "Aligned";   // the only type: the members sit as the policy asks
  bool status = false;            // "True" / "False" on the wire
  std::string reason;             // CamelCase, non-empty (the CRD requires it)
  std::string message;            // for people; may be empty
  std::string last_transition_time;  // RFC 3339 ("2026-12-03T02:49:07Z"): when status last changed
};

// status of a NumaAffinityGroup, written by the rebalancer.
struct NumaAffinityGroupStatus {
  int64_t observed_generation = 0;  // the metadata.generation this status was computed for
  std::vector<AffinityGroupMember> members;
  // Max over nodes of the number of distinct NUMA nodes the members on that node occupy
  // (0: no member holds exclusive CPUs).
  int numa_nodes_spanned = 0;
  int64_t moves_made = 0;  // allocation changes the rebalancer made for this group, in total
  std::vector<AffinityGroupCondition> conditions;
};

// The body of a merge patch (application/merge-patch+json) of the status subresource
// (PATCH .../numaaffinitygroups/<name>/status) that sets the whole status:
// {"status": {"observedGeneration": 3, "memberCount": 1, "members": [{"pod": "a", "node": "n1",
// "numaNodes": [0], "cpus": 4}], "numaNodesSpanned": 1, "movesMade": 2, "conditions":
// [{"type": "Aligned", "status": "True", "reason": "...", "message": "...",
// "lastTransitionTime": "..."}]}}. memberCount is members' length (for `kubectl get`'s Members
// column: a printer column cannot count a list). Lists are replaced as a whole by a merge patch,
// so members and conditions not in `status` go. Add metadata.resourceVersion to the body for a
// precondition (Client::MergePatch).
nlohmann::json EncodeStatusPatch(const NumaAffinityGroupStatus& status);

}  // namespace huygens::kube

#endif  // HUYGENS_KUBE_NUMA_AFFINITY_GROUP_H_
