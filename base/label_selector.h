// Label selectors: Kubernetes' requirement-on-labels semantics, shared by the scheduler's node
// affinity (core/v1 NodeSelectorRequirement, sched/plugin_node_affinity.cc) and the
// NumaAffinityGroup's pod selector (meta/v1 LabelSelector, kube/numa_affinity_group.h), and
// inter-pod affinity terms (core/v1 PodAffinityTerm, sched/plugin_inter_pod_affinity.cc) and
// topology spread constraints (core/v1 TopologySpreadConstraint, sched/plugin_pod_topology_spread.cc).
//
// Semantics (k8s.io/apimachinery/pkg/labels, Requirement.Matches; core/v1 node affinity):
//   In           the label is present and its value is one of `values`
//   NotIn        the label is absent, or its value is none of `values`
//   Exists       the label is present (any value)
//   DoesNotExist the label is absent
//   Gt, Lt       (node affinity only) the label's value and the single entry of `values` both
//                parse as base-10 int64 and compare greater / less
// A requirement that breaks its operator's shape (In/NotIn without values, Exists/DoesNotExist
// with values, Gt/Lt without exactly one value) matches nothing: kube-scheduler drops the term
// it sits in, and readers of meta/v1 selectors refuse it before it gets here
// (kube/numa_affinity_group.h).
//
// Thread-safety: plain values; Matches is const and pure.
#ifndef HUYGENS_BASE_LABEL_SELECTOR_H_
#define HUYGENS_BASE_LABEL_SELECTOR_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace huygens {

// A set of labels: key -> value.
using Labels = std::map<std::string, std::string>;

// The operators of core/v1 NodeSelectorOperator; meta/v1 LabelSelectorOperator is the first
// four.
enum class SelectorOperator { kIn, kNotIn, kExists, kDoesNotExist, kGt, kLt };

// "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt": the names on the wire.
const char* ToString(SelectorOperator op);

// The operator named `name` (case-sensitive, as the wire spells it); nullopt for anything else.
std::optional<SelectorOperator> ParseSelectorOperator(std::string_view name);

// One requirement on one label (core/v1 NodeSelectorRequirement, meta/v1
// LabelSelectorRequirement). `values` is empty for Exists/DoesNotExist and holds exactly one
// integer (as text) for Gt/Lt.
struct LabelRequirement {
  std::string key;
  SelectorOperator op = SelectorOperator::kIn;
  std::vector<std::string> values;

  // Whether `labels` satisfy the requirement (semantics in the file comment).
  bool Matches(const Labels& labels) const;

  friend bool operator==(const LabelRequirement&, const LabelRequirement&) = default;
};

// Whether every pair of `required` is a label of `labels` (the matchLabels part of a selector,
// and a pod's spec.nodeSelector against a node's labels).
bool HasLabels(const Labels& labels, const Labels& required);

// meta/v1 LabelSelector: every pair of `match_labels` must be a label of the object, and every
// requirement of `match_expressions` must hold. The empty selector matches every set of labels
// (LabelSelectorAsSelector maps an empty, non-nil selector to labels.Everything()).
struct LabelSelector {
  Labels match_labels;
  std::vector<LabelRequirement> match_expressions;

  bool Matches(const Labels& labels) const;
  // No requirement at all: matches every set of labels.
  bool empty() const { return match_labels.empty() && match_expressions.empty(); }

  friend bool operator==(const LabelSelector&, const LabelSelector&) = default;
};

// core/v1 PodAffinityTerm: the pods (label_selector, in the namespaces named or selected) whose
// nodes' topology_key domains the term is about. Absent label_selector selects no pod; with
// neither namespaces nor namespace_selector the term names its owner's namespace; an empty
// namespace_selector `{}` selects every namespace. match_label_keys / mismatch_label_keys
// require the selected pod's label to equal / differ from the owner's (when the owner carries
// it): the requirements the API server merges into label_selector at creation (In / NotIn the
// owner's value, pkg/registry/core/pod strategy, v1.35), applied at match time instead.
struct PodAffinityTerm {
  std::optional<LabelSelector> label_selector;
  std::vector<std::string> namespaces;
  std::optional<LabelSelector> namespace_selector;
  std::string topology_key;
  std::vector<std::string> match_label_keys;
  std::vector<std::string> mismatch_label_keys;

  friend bool operator==(const PodAffinityTerm&, const PodAffinityTerm&) = default;
};

// core/v1 WeightedPodAffinityTerm (weight 1..100).
struct WeightedPodAffinityTerm {
  int32_t weight = 1;
  PodAffinityTerm term;

  friend bool operator==(const WeightedPodAffinityTerm&, const WeightedPodAffinityTerm&) = default;
};

// spec.affinity.podAffinity and spec.affinity.podAntiAffinity, the
// requiredDuringSchedulingIgnoredDuringExecution and preferredDuringSchedulingIgnoredDuringExecution
// lists of each.
struct PodAffinity {
  std::vector<PodAffinityTerm> required;
  std::vector<WeightedPodAffinityTerm> preferred;
  std::vector<PodAffinityTerm> required_anti;
  std::vector<WeightedPodAffinityTerm> preferred_anti;

  bool empty() const {
    return required.empty() && preferred.empty() && required_anti.empty() && preferred_anti.empty();
  }
  friend bool operator==(const PodAffinity&, const PodAffinity&) = default;
};

// core/v1 NodeInclusionPolicy: whether a topology spread constraint counts only the nodes
// that pass the pod's node affinity (nodeAffinityPolicy) or tolerate the pod (nodeTaintsPolicy).
enum class NodeInclusionPolicy { kHonor, kIgnore };

// core/v1 TopologySpreadConstraint, with the API server's defaults in place: minDomains 1,
// nodeAffinityPolicy Honor, nodeTaintsPolicy Ignore. An absent label_selector selects no pod.
// match_label_keys are applied at match time, as for PodAffinityTerm: each key the incoming
// pod carries adds "key In (its value)" to the selector.
struct TopologySpreadConstraint {
  int32_t max_skew = 1;
  std::string topology_key;
  bool hard = true;  // whenUnsatisfiable DoNotSchedule; false: ScheduleAnyway
  std::optional<LabelSelector> label_selector;
  int32_t min_domains = 1;
  NodeInclusionPolicy node_affinity_policy = NodeInclusionPolicy::kHonor;
  NodeInclusionPolicy node_taints_policy = NodeInclusionPolicy::kIgnore;
  std::vector<std::string> match_label_keys;

  friend bool operator==(const TopologySpreadConstraint&, const TopologySpreadConstraint&) = default;
};

}  // namespace huygens

#endif  // HUYGENS_BASE_LABEL_SELECTOR_H_
