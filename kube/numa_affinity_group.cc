#include "kube/numa_affinity_group.h"

#include <cstdint>
#include <utility>

#include "base/json_fields.h"
#include "base/status.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "kube/label_selector_codec.h"
#include "kube/pod_codec.h"
#include "kube/resource.h"

namespace huygens::kube {
namespace {

using json_fields::MemberOrNull;
using json_fields::StringOrEmpty;
using nlohmann::json;

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
    return DecodeNonEmptyString(parent, key, who_, field);
  }

  // Rules 3 to 5.
  absl::StatusOr<LabelSelector> Selector(const json& s) const {
    constexpr std::string_view kField = "spec.selector";
    if (s.is_null()) return Error(kField, "missing");
    return DecodeLabelSelector(s, who_, kField);
  }

 private:
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
