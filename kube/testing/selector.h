// Selector: a parsed Kubernetes label or field selector, as the API server evaluates the
// `labelSelector` and `fieldSelector` query parameters.
//
// Label selector grammar (k8s.io/apimachinery/pkg/labels): comma-separated requirements, each
// one of `k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)`, `k notin (a,b)`. All must hold.
// Field selector grammar (k8s.io/apimachinery/pkg/fields): comma-separated `path=v`, `path==v`,
// `path!=v`, where path is a dotted JSON path into the object (`metadata.name`,
// `spec.nodeName`); a missing field compares as the empty string, as the server's field sets do.
// The real server accepts only a fixed set of field paths per resource; this one accepts any.
// Requirements are base/label_selector.h's (`k=v` is `In [v]`, `k!=v` is `NotIn [v]`, `!k` is
// DoesNotExist), matched against the object's labels or, for fields, against the fields it names.
//
// Immutable after Parse; safe to share between threads.
#ifndef HUYGENS_KUBE_TESTING_SELECTOR_H_
#define HUYGENS_KUBE_TESTING_SELECTOR_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "base/label_selector.h"
#include "nlohmann/json.hpp"

namespace huygens::kube::testing {

class Selector {
 public:
  // The empty selector matches everything.
  Selector() = default;

  // Errors: InvalidArgument naming the offending requirement.
  static absl::StatusOr<Selector> ParseLabels(std::string_view text);
  static absl::StatusOr<Selector> ParseFields(std::string_view text);

  // Whether `object` (a full Kubernetes object) satisfies every requirement.
  bool Matches(const nlohmann::json& object) const;

 private:
  bool fields_ = false;
  std::vector<LabelRequirement> requirements_;  // key: a label key, or a field path
};

}  // namespace huygens::kube::testing

#endif  // HUYGENS_KUBE_TESTING_SELECTOR_H_
