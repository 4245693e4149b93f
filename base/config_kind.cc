#include "base/config_kind.h"

#include "fmt/format.h"

namespace huygens {

std::optional<ConfigKindProblem> CheckConfigKind(const YAML::Node& root, std::string_view kind) {
  struct Expected {
    const char* field;
    std::string_view value;
    const char* otherwise;
  };
  const Expected expected[] = {
      {"apiVersion", kConfigApiVersion, "this version of Huygens reads only"},
      {"kind", kind, "this file is for another Huygens component; expected"},
  };
  for (const Expected& e : expected) {
    const YAML::Node v = root[e.field];
    if (!v) continue;
    if (!v.IsScalar()) return ConfigKindProblem{e.field, fmt::format("expected {}", e.value)};
    if (v.Scalar() != e.value) {
      return ConfigKindProblem{e.field,
                               fmt::format("{:?} is not supported ({} {})", v.Scalar(), e.otherwise, e.value)};
    }
  }
  return std::nullopt;
}

}  // namespace huygens
