// Selector: a parsed Kubernetes label or field selector, as the API server evaluates the
// `labelSelector` and `fieldSelector` query parameters.
//
// Label selector grammar (k8s.io/apimachinery/pkg/labels): comma-separated requirements, each
// one of `k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)`, `k notin (a,b)`. All must hold.
// Field selector grammar (k8s.io/apimachinery/pkg/fields): comma-separated `path=v`, `path==v`,
// `path!=v`, where path is a dotted JSON path into the object (`metadata.name`,
// `spec.nodeName`); a missing field compares as the empty string, as the server's field sets do.
// The real server accepts only a fixed set of field paths per resource; this one accepts any.
//
// Immutable after Parse; safe to share between threads.
#ifndef HUYGENS_KUBE_TESTING_SELECTOR_H_
#define HUYGENS_KUBE_TESTING_SELECTOR_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
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
  enum class Op { kEquals, kNotEquals, kExists, kNotExists, kIn, kNotIn };
  struct Requirement {
    std::string key;  // label key, or a field path
    Op op = Op::kEquals;
    std::vector<std::string> values;
  };
  bool fields_ = false;
  std::vector<Requirement> requirements_;
};

}  // namespace huygens::kube::testing

#endif  // HUYGENS_KUBE_TESTING_SELECTOR_H_
