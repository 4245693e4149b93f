#include "kube/numa_affinity_group.h"

#include <cstdint>
#include <utility>

#include "base/json_fields.h"
#include "base/status.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "kube/pod_codec.h"
#include "kube/resource.h"

namespace huygens::kube {
namespace {

using json_fields::MemberOrNull;
using json_fields::StringOrEmpty;
using nlohmann::json;

// The operators of meta/v1 LabelSelectorRequirement (no Gt/Lt: those are node affinity's).
constexpr SelectorOperator kLabelSelectorOperators[] = {
    SelectorOperator::kIn, SelectorOperator::kNotIn, SelectorOperator::kExists,
    SelectorOperator::kDoesNotExist};

// Reads and reports errors for one object: "NumaAffinityGroup <ns>/<name>: <field>: <problem>".
class Reader {
 public:
  explicit Reader(std::string who) : who_(std::move(who)) {}

  absl::Status Error(std::string_view field, std::string_view problem) const {
    return absl::InvalidArgumentError(fmt::format("{}: {}: {}", who_, field, problem));
  }

  // A string that is present and not empty.
  absl::StatusOr<std::string> NonEmptyString(const json& parent, std::string_view key,
                                             std::string_view field) const {
    const json& v = MemberOrNull(parent, key);
    if (v.is_null()) return Error(field, "missing");
    if (!v.is_string()) return Error(field, fmt::format("expected a string, got {}", json_fields::TypeName(v)));
    if (v.get_ref<const std::string&>().empty()) return Error(field, "must not be empty");
    return v.get<std::string>();
  }

  // An array of strings; absent = empty.
  absl::StatusOr<std::vector<std::string>> Strings(const json& v, std::string_view field) const {
    std::vector<std::string> out;
    if (v.is_null()) return out;
    if (!v.is_array()) return Error(field, fmt::format("expected an array, got {}", json_fields::TypeName(v)));
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string()) {
        return Error(json_fields::Element(field, i),
                     fmt::format("expected a string, got {}", json_fields::TypeName(v[i])));
      }
      out.push_back(v[i].get<std::string>());
    }
    return out;
  }

  // Rule 5 for one requirement.
  absl::StatusOr<LabelRequirement> Requirement(const json& r, const std::string& field) const {
    if (!r.is_object()) return Error(field, fmt::format("expected an object, got {}", json_fields::TypeName(r)));
    LabelRequirement out;
    HUYGENS_ASSIGN_OR_RETURN(out.key, NonEmptyString(r, "key", field + ".key"));
    HUYGENS_ASSIGN_OR_RETURN(const std::string op, NonEmptyString(r, "operator", field + ".operator"));
    std::optional<SelectorOperator> parsed = ParseSelectorOperator(op);
    if (!parsed || *parsed == SelectorOperator::kGt || *parsed == SelectorOperator::kLt) {
      return Error(field + ".operator",
                   fmt::format("{:?} is not one of {}", op, fmt::join(OperatorNames(), ", ")));
    }
    out.op = *parsed;
    HUYGENS_ASSIGN_OR_RETURN(out.values, Strings(MemberOrNull(r, "values"), field + ".values"));
    const bool needs_values = out.op == SelectorOperator::kIn || out.op == SelectorOperator::kNotIn;
    if (needs_values && out.values.empty()) {
      return Error(field + ".values", fmt::format("must be non-empty for operator {}", op));
    }
    if (!needs_values && !out.values.empty()) {
      return Error(field + ".values", fmt::format("must be empty for operator {}", op));
    }
    return out;
  }

  // Rules 3 to 5.
  absl::StatusOr<LabelSelector> Selector(const json& s) const {
    constexpr std::string_view kField = "spec.selector";
    if (s.is_null()) return Error(kField, "missing");
    if (!s.is_object()) return Error(kField, fmt::format("expected an object, got {}", json_fields::TypeName(s)));
    LabelSelector out;
    const json& labels = MemberOrNull(s, "matchLabels");
    if (!labels.is_null()) {
      if (!labels.is_object()) {
        return Error("spec.selector.matchLabels",
                     fmt::format("expected an object, got {}", json_fields::TypeName(labels)));
      }
      for (const auto& [k, v] : labels.items()) {
        if (!v.is_string()) {
          return Error(fmt::format("spec.selector.matchLabels.{}", k),
                       fmt::format("expected a string, got {}", json_fields::TypeName(v)));
        }
        out.match_labels[k] = v.get<std::string>();
      }
    }
    const json& expressions = MemberOrNull(s, "matchExpressions");
    if (!expressions.is_null()) {
      if (!expressions.is_array()) {
        return Error("spec.selector.matchExpressions",
                     fmt::format("expected an array, got {}", json_fields::TypeName(expressions)));
      }
      for (std::size_t i = 0; i < expressions.size(); ++i) {
        HUYGENS_ASSIGN_OR_RETURN(
            LabelRequirement r,
            Requirement(expressions[i], fmt::format("spec.selector.matchExpressions[{}]", i)));
        out.match_expressions.push_back(std::move(r));
      }
    }
    return out;
  }

 private:
  static std::vector<const char*> OperatorNames() {
    std::vector<const char*> names;
    for (SelectorOperator op : kLabelSelectorOperators) names.push_back(ToString(op));
    return names;
  }

  std::string who_;
};

std::vector<const char*> PolicyNames() {
  std::vector<const char*> names;
  for (AffinityGroupPolicy p :
       {AffinityGroupPolicy::kSameNuma, AffinityGroupPolicy::kNearest, AffinityGroupPolicy::kSpread}) {
    names.push_back(ToString(p));
  }
  return names;
}

}  // namespace

absl::StatusOr<NumaAffinityGroup> DecodeNumaAffinityGroup(const json& object) {
  // Rule 1.
  if (!object.is_object()) return absl::InvalidArgumentError("NumaAffinityGroup: not a JSON object");
  const json& md = MemberOrNull(object, "metadata");
  if (!md.is_object()) return absl::InvalidArgumentError("NumaAffinityGroup: metadata: missing");
  const ResourceRef& resource = NumaAffinityGroups();
  const Reader reader(fmt::format("{} {}", resource.kind, ObjectKey(object)));
  for (const auto& [key, want] : {std::pair{"kind", resource.kind}, std::pair{"apiVersion", resource.ApiVersion()}}) {
    const json& v = MemberOrNull(object, key);
    if (!v.is_null() && v != want) return reader.Error(key, fmt::format("{} is not {:?}", v.dump(), want));
  }
  // Rule 2.
  NumaAffinityGroup out;
  HUYGENS_ASSIGN_OR_RETURN(out.name, reader.NonEmptyString(md, "name", "metadata.name"));
  HUYGENS_ASSIGN_OR_RETURN(out.namespace_name, reader.NonEmptyString(md, "namespace", "metadata.namespace"));
  HUYGENS_ASSIGN_OR_RETURN(out.uid, reader.NonEmptyString(md, "uid", "metadata.uid"));
  const json& generation = MemberOrNull(md, "generation");
  if (!generation.is_null()) {
    const bool ok = generation.is_number_unsigned()
                        ? generation.get<uint64_t>() <= uint64_t{INT64_MAX}
                        : generation.is_number_integer() && generation.get<int64_t>() >= 0;
    if (!ok) return reader.Error("metadata.generation", fmt::format("{} is not a non-negative integer", generation.dump()));
    out.generation = generation.get<int64_t>();
  }
  // Rules 3 to 5.
  const json& spec = MemberOrNull(object, "spec");
  if (!spec.is_object()) return reader.Error("spec", spec.is_null() ? "missing" : "expected an object");
  HUYGENS_ASSIGN_OR_RETURN(out.selector, reader.Selector(MemberOrNull(spec, "selector")));
  // Rule 6.
  const json& policy = MemberOrNull(spec, "policy");
  if (!policy.is_null()) {
    std::optional<AffinityGroupPolicy> parsed;
    if (policy.is_string()) parsed = ParseAffinityGroupPolicy(policy.get_ref<const std::string&>());
    if (!parsed) {
      return reader.Error("spec.policy",
                          fmt::format("{} is not one of {}", policy.dump(), fmt::join(PolicyNames(), ", ")));
    }
    out.policy = *parsed;
  }
  return out;
}

json EncodeStatusPatch(const NumaAffinityGroupStatus& status) {
  json members = json::array();
  for (const AffinityGroupMember& m : status.members) {
    members.push_back({{"pod", m.pod}, {"node", m.node}, {"numaNodes", m.numa_nodes}, {"cpus", m.cpus}});
  }
  json conditions = json::array();
  for (const AffinityGroupCondition& c : status.conditions) {
    conditions.push_back({{"type", c.type},
                          {"status", c.status ? "True" : "False"},
                          {"reason", c.reason},
                          {"message", c.message},
                          {"lastTransitionTime", c.last_transition_time}});
  }
  return {{"status",
           {{"observedGeneration", status.observed_generation},
            {"memberCount", status.members.size()},
            {"members", std::move(members)},
            {"numaNodesSpanned", status.numa_nodes_spanned},
            {"movesMade", status.moves_made},
            {"conditions", std::move(conditions)}}}};
}

}  // namespace huygens::kube
