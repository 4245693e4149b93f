#include "kube/label_selector_codec.h"

#include <cstddef>
#include <optional>
#include <utility>

#include "base/json_fields.h"
#include "base/status.h"
#include "fmt/format.h"
#include "fmt/ranges.h"

namespace huygens::kube {
namespace {

using json_fields::MemberOrNull;
using nlohmann::json;

// The operators of meta/v1 LabelSelectorRequirement (no Gt/Lt: those are node affinity's).
constexpr SelectorOperator kLabelSelectorOperators[] = {
    SelectorOperator::kIn, SelectorOperator::kNotIn, SelectorOperator::kExists,
    SelectorOperator::kDoesNotExist};

absl::Status Error(std::string_view who, std::string_view field, std::string_view problem) {
  return absl::InvalidArgumentError(fmt::format("{}: {}: {}", who, field, problem));
}

std::string Expected(std::string_view what, const json& v) {
  return fmt::format("expected {}, got {}", what, json_fields::TypeName(v));
}

absl::StatusOr<LabelRequirement> Requirement(const json& r, std::string_view who, const std::string& field) {
  if (!r.is_object()) return Error(who, field, Expected("an object", r));
  LabelRequirement out;
  HUYGENS_ASSIGN_OR_RETURN(out.key, DecodeNonEmptyString(r, "key", who, field + ".key"));
  HUYGENS_ASSIGN_OR_RETURN(const std::string op, DecodeNonEmptyString(r, "operator", who, field + ".operator"));
  std::optional<SelectorOperator> parsed = ParseSelectorOperator(op);
  if (!parsed || *parsed == SelectorOperator::kGt || *parsed == SelectorOperator::kLt) {
    std::vector<const char*> names;
    for (SelectorOperator o : kLabelSelectorOperators) names.push_back(ToString(o));
    return Error(who, field + ".operator", fmt::format("{:?} is not one of {}", op, fmt::join(names, ", ")));
  }
  out.op = *parsed;
  HUYGENS_ASSIGN_OR_RETURN(out.values, DecodeStrings(MemberOrNull(r, "values"), who, field + ".values"));
  const bool needs_values = out.op == SelectorOperator::kIn || out.op == SelectorOperator::kNotIn;
  if (needs_values && out.values.empty()) {
    return Error(who, field + ".values", fmt::format("must be non-empty for operator {}", op));
  }
  if (!needs_values && !out.values.empty()) {
    return Error(who, field + ".values", fmt::format("must be empty for operator {}", op));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::string> DecodeNonEmptyString(const json& parent, std::string_view key, std::string_view who,
                                                 std::string_view field) {
  const json& v = MemberOrNull(parent, key);
  if (v.is_null()) return Error(who, field, "missing");
  if (!v.is_string()) return Error(who, field, Expected("a string", v));
  if (v.get_ref<const std::string&>().empty()) return Error(who, field, "must not be empty");
  return v.get<std::string>();
}

absl::StatusOr<std::vector<std::string>> DecodeStrings(const json& v, std::string_view who, std::string_view field) {
  std::vector<std::string> out;
  if (v.is_null()) return out;
  if (!v.is_array()) return Error(who, field, Expected("an array", v));
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) return Error(who, json_fields::Element(field, i), Expected("a string", v[i]));
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

absl::StatusOr<LabelSelector> DecodeLabelSelector(const json& s, std::string_view who, std::string_view field) {
  if (!s.is_object()) return Error(who, field, Expected("an object", s));
  LabelSelector out;
  const json& labels = MemberOrNull(s, "matchLabels");
  if (!labels.is_null()) {
    if (!labels.is_object()) return Error(who, fmt::format("{}.matchLabels", field), Expected("an object", labels));
    for (const auto& [k, v] : labels.items()) {
      if (!v.is_string()) return Error(who, fmt::format("{}.matchLabels.{}", field, k), Expected("a string", v));
      out.match_labels[k] = v.get<std::string>();
    }
  }
  const json& expressions = MemberOrNull(s, "matchExpressions");
  if (expressions.is_null()) return out;
  if (!expressions.is_array()) {
    return Error(who, fmt::format("{}.matchExpressions", field), Expected("an array", expressions));
  }
  for (std::size_t i = 0; i < expressions.size(); ++i) {
    HUYGENS_ASSIGN_OR_RETURN(LabelRequirement r,
                             Requirement(expressions[i], who, fmt::format("{}.matchExpressions[{}]", field, i)));
    out.match_expressions.push_back(std::move(r));
  }
  return out;
}

}  // namespace huygens::kube
