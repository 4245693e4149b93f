// The reader of a meta/v1 LabelSelector (JSON) into base/label_selector.h's LabelSelector, and the
// field readers it is made of (a non-empty string, an array of strings), shared
// by the objects that carry one: the NumaAffinityGroup's spec.selector
// (kube/numa_affinity_group.h) and the pod's inter-pod affinity terms (kube/pod_codec.h).
//
// Rules (apimachinery's ValidateLabelSelector): the selector is an object; matchLabels, when
// present, is an object of strings; matchExpressions, when present, is an array of objects, each
// with a non-empty string `key`, an `operator` of In, NotIn, Exists, DoesNotExist, and `values`
// (an array of strings) that is non-empty for In and NotIn and empty or absent for Exists and
// DoesNotExist. Label syntax is not checked: a key or value no object carries matches nothing.
//
// Thread-safety: pure functions.
#ifndef HUYGENS_KUBE_LABEL_SELECTOR_CODEC_H_
#define HUYGENS_KUBE_LABEL_SELECTOR_CODEC_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "base/label_selector.h"
#include "nlohmann/json.hpp"

namespace huygens::kube {

// Reads the selector `s` found at `field` of the object `who` ("pod default/web").
// Errors: InvalidArgument "<who>: <field>[.matchExpressions[i].operator ...]: <problem>", e.g.
// `pod default/web: spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].
// labelSelector.matchExpressions[1].operator: "Gt" is not one of In, NotIn, Exists, DoesNotExist`.
absl::StatusOr<LabelSelector> DecodeLabelSelector(const nlohmann::json& s, std::string_view who,
                                                  std::string_view field);

// Reads member `key` of `parent`, found at `field` of `who`, as a non-empty string.
// Errors: InvalidArgument "<who>: <field>: missing / expected a string, got <type> / must not
// be empty".
absl::StatusOr<std::string> DecodeNonEmptyString(const nlohmann::json& parent, std::string_view key,
                                                 std::string_view who, std::string_view field);

// Reads `v` found at `field` of `who` as an array of strings; null (absent) is empty.
// Errors: InvalidArgument "<who>: <field>[: or [i]:] expected an array / a string, got <type>".
absl::StatusOr<std::vector<std::string>> DecodeStrings(const nlohmann::json& v, std::string_view who,
                                                       std::string_view field);

}  // namespace huygens::kube

#endif  // HUYGENS_KUBE_LABEL_SELECTOR_CODEC_H_
