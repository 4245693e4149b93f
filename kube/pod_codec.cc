#include "kube/pod_codec.h"

#include <limits>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "base/json_fields.h"
#include "base/quantity.h"
#include "base/status.h"
#include "base/wire_names.h"
#include "fmt/format.h"
#include "kube/label_selector_codec.h"

namespace huygens::kube {
namespace {

using json_fields::MemberOrNull;
using json_fields::StringOrEmpty;
using nlohmann::json;

absl::Status Error(std::string_view object, std::string_view field, std::string_view problem) {
  return absl::InvalidArgumentError(fmt::format("{}: {}: {}", object, field, problem));
}

// Rule 9: resources.requests.<name>, else resources.limits.<name>; 0 when neither is set.
// `limit` (when not null) receives resources.limits.<name> (0 when unset).
absl::StatusOr<int64_t> Request(const json& container, std::string_view name, QuantityKind kind,
                                const std::string& who, const std::string& field,
                                int64_t* limit) {
  const json& resources = MemberOrNull(container, "resources");
  const json& r = MemberOrNull(MemberOrNull(resources, "requests"), name);
  const json& l = MemberOrNull(MemberOrNull(resources, "limits"), name);
  const std::string limit_field = fmt::format("{}.resources.limits.{}", field, name);
  int64_t limit_value = 0;
  if (!l.is_null()) {
    HUYGENS_ASSIGN_OR_RETURN(limit_value, ReadQuantity(l, kind, who, limit_field));
  }
  if (limit != nullptr) *limit = limit_value;
  if (r.is_null()) return limit_value;
  return ReadQuantity(r, kind, who, fmt::format("{}.resources.requests.{}", field, name));
}

absl::StatusOr<ContainerSpec> ReadContainer(const json& c, bool init, const std::string& who,
                                            const std::string& field) {
  if (!c.is_object()) return Error(who, field, "expected an object");
  ContainerSpec out;
  out.name = StringOrEmpty(c, "name");
  if (out.name.empty()) return Error(who, field + ".name", "missing");
  out.init = init;
  out.restartable = init && StringOrEmpty(c, "restartPolicy") == "Always";
  HUYGENS_ASSIGN_OR_RETURN(out.cpu_request_milli, Request(c, "cpu", QuantityKind::kCpuMilli, who,
                                                          field, &out.cpu_limit_milli));
  HUYGENS_ASSIGN_OR_RETURN(out.memory_request_bytes,
                           Request(c, "memory", QuantityKind::kAmount, who, field,
                                   &out.memory_limit_bytes));
  // Rule 7: a CPU quantity of whole CPUs.
  HUYGENS_ASSIGN_OR_RETURN(const int64_t isolated_milli,
                           Request(c, kIsolatedCpuResource, QuantityKind::kCpuMilli, who, field,
                                   nullptr));
  if (isolated_milli % 1000 != 0) {
    return Error(who, fmt::format("{}.resources", field),
                 fmt::format("{} must be a whole number of CPUs", kIsolatedCpuResource));
  }
  out.isolated_cpus = isolated_milli / 1000;
  const json& resources = MemberOrNull(c, "resources");
  // Hugepages (the API requires request == limit; a missing request takes the limit).
  std::set<std::string> hugepages;
  for (const char* list : {"requests", "limits"}) {
    const json& m = MemberOrNull(resources, list);
    if (!m.is_object()) continue;
    for (const auto& [k, v] : m.items()) {
      if (k.starts_with("hugepages-")) hugepages.insert(k);
    }
  }
  for (const std::string& name : hugepages) {
    HUYGENS_ASSIGN_OR_RETURN(out.hugepages_request_bytes[name],
                             Request(c, name, QuantityKind::kAmount, who, field, nullptr));
  }
  // Rule 8: the other extended resources.
  std::set<std::string> names;
  for (const char* list : {"requests", "limits"}) {
    const json& m = MemberOrNull(resources, list);
    if (!m.is_object()) continue;
    for (const auto& [k, v] : m.items()) {
      if (k.find('/') != std::string::npos && k != kIsolatedCpuResource) names.insert(k);
    }
  }
  for (const std::string& name : names) {
    HUYGENS_ASSIGN_OR_RETURN(out.extended_requests[name],
                             Request(c, name, QuantityKind::kAmount, who, field, nullptr));
  }
  return out;
}

// Rule 4 for one policy annotation.
template <typename Policy, typename Parse>
absl::Status ReadPolicy(const std::map<std::string, std::string>& annotations, const char* key,
                        Parse parse, const std::string& who, std::optional<Policy>& out) {
  auto it = annotations.find(key);
  if (it == annotations.end()) return absl::OkStatus();
  out = parse(it->second);
  if (!out) return Error(who, key, fmt::format("unknown policy {:?}", it->second));
  return absl::OkStatus();
}

// Rule 13: spec.resources, requests.<name> else limits.<name> (the API server's defaulting of
// pod-level requests); nullopt when neither is set.
absl::StatusOr<std::optional<int64_t>> PodLevelRequest(const json& resources, const char* name,
                                                       QuantityKind kind, const std::string& who) {
  for (const char* list : {"requests", "limits"}) {
    const json& v = MemberOrNull(MemberOrNull(resources, list), name);
    if (v.is_null()) continue;
    HUYGENS_ASSIGN_OR_RETURN(int64_t amount,
                             ReadQuantity(v, kind, who, fmt::format("spec.resources.{}.{}", list, name)));
    return std::optional<int64_t>(amount);
  }
  return std::optional<int64_t>();
}

// Rules 13 and 14.
absl::Status ReadPodResources(const json& spec, const std::string& who, PodObject& out) {
  const json& resources = MemberOrNull(spec, "resources");
  if (!resources.is_null() && !resources.is_object()) return Error(who, "spec.resources", "expected an object");
  for (const char* list : {"requests", "limits"}) {
    const json& m = MemberOrNull(resources, list);
    if (!m.is_null() && !m.is_object()) {
      return Error(who, fmt::format("spec.resources.{}", list), "expected an object");
    }
  }
  HUYGENS_ASSIGN_OR_RETURN(out.pod_cpu_request_milli,
                           PodLevelRequest(resources, "cpu", QuantityKind::kCpuMilli, who));
  HUYGENS_ASSIGN_OR_RETURN(out.pod_memory_request_bytes,
                           PodLevelRequest(resources, "memory", QuantityKind::kAmount, who));
  const json& overhead = MemberOrNull(spec, "overhead");
  if (overhead.is_null()) return absl::OkStatus();
  if (!overhead.is_object()) return Error(who, "spec.overhead", "expected an object");
  for (const auto& [name, value] : overhead.items()) {
    const std::string field = "spec.overhead." + name;
    if (name == "cpu") {
      HUYGENS_ASSIGN_OR_RETURN(out.overhead_cpu_milli, ReadQuantity(value, QuantityKind::kCpuMilli, who, field));
    } else if (name == "memory") {
      HUYGENS_ASSIGN_OR_RETURN(out.overhead_memory_bytes, ReadQuantity(value, QuantityKind::kAmount, who, field));
    } else if (name.find('/') != std::string::npos) {
      HUYGENS_ASSIGN_OR_RETURN(out.overhead_extended[name], ReadQuantity(value, QuantityKind::kAmount, who, field));
    }
  }
  return absl::OkStatus();
}

// parent.<key> (rules 15 and 16): null when absent, else an array; anything else is an error
// naming `field`.
absl::StatusOr<const json*> ArrayOf(const json& parent, const char* key, const std::string& who,
                                    std::string_view field) {
  const json& list = MemberOrNull(parent, key);
  if (list.is_null()) return &list;
  if (!list.is_array()) return Error(who, field, "expected an array");
  return &list;
}

// Rule 15 and the names of rule 16: each element of spec.<key> is an object; `keep(element)`
// says whether its name is kept in `names`; a kept element needs a non-empty name.
template <typename Keep>
absl::Status ReadNamed(const json& spec, const char* key, const std::string& who, Keep keep,
                       std::vector<std::string>& names) {
  const std::string field = fmt::format("spec.{}", key);
  HUYGENS_ASSIGN_OR_RETURN(const json* list, ArrayOf(spec, key, who, field));
  if (list->is_null()) return absl::OkStatus();
  for (std::size_t i = 0; i < list->size(); ++i) {
    const json& e = (*list)[i];
    if (!e.is_object()) return Error(who, fmt::format("{}[{}]", field, i), "expected an object");
    if (!keep(e)) continue;
    std::string name = StringOrEmpty(e, "name");
    if (name.empty()) return Error(who, fmt::format("{}[{}].name", field, i), "missing");
    names.push_back(std::move(name));
  }
  return absl::OkStatus();
}

// Rules 15 and 16.
absl::Status ReadSchedulingAsks(const json& spec, const std::string& who, PodObject& out) {
  auto all = [](const json&) { return true; };
  HUYGENS_RETURN_IF_ERROR(ReadNamed(spec, "schedulingGates", who, all, out.scheduling_gates));
  HUYGENS_RETURN_IF_ERROR(ReadNamed(spec, "resourceClaims", who, all, out.resource_claims));
  auto claims_storage = [](const json& v) { return v.contains("persistentVolumeClaim") || v.contains("ephemeral"); };
  return ReadNamed(spec, "volumes", who, claims_storage, out.claim_volumes);
}

// Rules 3 and 4.
absl::Status ReadAnnotations(const json& md, const std::string& who, PodObject& out) {
  std::map<std::string, std::string> annotations;
  const json& a = MemberOrNull(md, "annotations");
  if (!a.is_null()) {
    if (!a.is_object()) return Error(who, "metadata.annotations", "expected an object");
    for (const auto& [k, v] : a.items()) {
      if (!v.is_string()) {
        return Error(who, fmt::format("metadata.annotations.{}", k), "expected a string");
      }
      annotations[k] = v.get<std::string>();
    }
  }
  // Rule 4.
  HUYGENS_RETURN_IF_ERROR(ReadPolicy(annotations, kCpuPolicyAnnotation, ParseCpuPolicy, who,
                                     out.spec.cpu_policy));
  HUYGENS_RETURN_IF_ERROR(ReadPolicy(annotations, kTopologyPolicyAnnotation,
                                     ParseTopologyPolicy, who, out.spec.topology_policy));
  HUYGENS_RETURN_IF_ERROR(ReadPolicy(annotations, kBindPolicyAnnotation, ParseBindPolicy, who,
                                     out.spec.bind_policy));
  auto annotation = [&](const char* key) -> std::optional<std::string> {
    auto it = annotations.find(key);
    if (it == annotations.end()) return std::nullopt;
    return it->second;
  };
  out.spec.affinity_group = annotation(kAffinityGroupAnnotation).value_or("");
  out.allocation = annotation(kAllocationAnnotation);
  out.allocation_status = annotation(kAllocationStatusAnnotation);
  if (std::optional<std::string> rebalance = annotation(kRebalanceAnnotation)) {
    if (*rebalance != "true" && *rebalance != "false") {
      return Error(who, fmt::format("metadata.annotations.{}", kRebalanceAnnotation),
                   fmt::format("{:?} is not \"true\" or \"false\"", *rebalance));
    }
    out.rebalance = *rebalance == "true";
  }
  return absl::OkStatus();
}

}  // namespace

bool IsTerminalPhase(std::string_view phase) { return phase == "Succeeded" || phase == "Failed"; }

bool PodObject::terminal() const { return IsTerminalPhase(phase); }

std::string ObjectKey(const json& object) {
  const json& md = MemberOrNull(object, "metadata");
  std::string ns = StringOrEmpty(md, "namespace");
  std::string name = StringOrEmpty(md, "name");
  return ns.empty() ? name : ns + "/" + name;
}

absl::StatusOr<int64_t> ReadQuantity(const json& value, QuantityKind kind,
                                     std::string_view object, std::string_view field) {
  std::string text;
  if (value.is_string()) {
    text = value.get<std::string>();
  } else if (value.is_number()) {
    text = value.dump();
  } else {
    return Error(object, field, "expected a quantity");
  }
  absl::StatusOr<int64_t> v =
      kind == QuantityKind::kCpuMilli ? ParseCpuMilli(text) : ParseMemoryBytes(text);
  if (!v.ok()) return Error(object, field, Msg(v.status()));
  return *v;
}

std::string DeletionTimestampOf(const json& pod) {
  if (!pod.is_object()) return "";
  return StringOrEmpty(MemberOrNull(pod, "metadata"), "deletionTimestamp");
}

// Rule 17: one PodAffinityTerm at `field`.
absl::StatusOr<PodAffinityTerm> ReadAffinityTerm(const json& t, const std::string& who, const std::string& field) {
  if (!t.is_object()) return Error(who, field, fmt::format("expected an object, got {}", json_fields::TypeName(t)));
  PodAffinityTerm out;
  HUYGENS_ASSIGN_OR_RETURN(out.topology_key, DecodeNonEmptyString(t, "topologyKey", who, field + ".topologyKey"));
  for (auto [key, selector] : {std::pair{"labelSelector", &out.label_selector},
                               std::pair{"namespaceSelector", &out.namespace_selector}}) {
    const json& s = MemberOrNull(t, key);
    if (s.is_null()) continue;
    HUYGENS_ASSIGN_OR_RETURN(*selector, DecodeLabelSelector(s, who, fmt::format("{}.{}", field, key)));
  }
  for (auto [key, list] : {std::pair{"namespaces", &out.namespaces}, std::pair{"matchLabelKeys", &out.match_label_keys},
                           std::pair{"mismatchLabelKeys", &out.mismatch_label_keys}}) {
    HUYGENS_ASSIGN_OR_RETURN(*list, DecodeStrings(MemberOrNull(t, key), who, fmt::format("{}.{}", field, key)));
  }
  return out;
}

// Rule 17: spec.affinity.<kind> (podAffinity or podAntiAffinity) into its two lists.
absl::Status ReadAffinityKind(const json& spec, std::string_view kind, const std::string& who,
                              std::vector<PodAffinityTerm>& required, std::vector<WeightedPodAffinityTerm>& preferred) {
  const std::string field = fmt::format("spec.affinity.{}", kind);
  const json& a = MemberOrNull(MemberOrNull(spec, "affinity"), kind);
  if (a.is_null()) return absl::OkStatus();
  if (!a.is_object()) return Error(who, field, "expected an object");
  for (const char* key : {"requiredDuringSchedulingIgnoredDuringExecution", "preferredDuringSchedulingIgnoredDuringExecution"}) {
    const json& list = MemberOrNull(a, key);
    if (!list.is_null() && !list.is_array()) return Error(who, fmt::format("{}.{}", field, key), "expected an array");
  }
  const json& req = MemberOrNull(a, "requiredDuringSchedulingIgnoredDuringExecution");
  for (std::size_t i = 0; req.is_array() && i < req.size(); ++i) {
    HUYGENS_ASSIGN_OR_RETURN(PodAffinityTerm t, ReadAffinityTerm(req[i], who, fmt::format("{}.requiredDuringSchedulingIgnoredDuringExecution[{}]", field, i)));
    required.push_back(std::move(t));
  }
  const json& pref = MemberOrNull(a, "preferredDuringSchedulingIgnoredDuringExecution");
  for (std::size_t i = 0; pref.is_array() && i < pref.size(); ++i) {
    const std::string f = fmt::format("{}.preferredDuringSchedulingIgnoredDuringExecution[{}]", field, i);
    const json& w = MemberOrNull(pref[i], "weight");
    if (!w.is_number_integer() || w.get<int64_t>() < 1 || w.get<int64_t>() > 100) {
      return Error(who, f + ".weight", fmt::format("{} is not an integer from 1 to 100", w.dump()));
    }
    HUYGENS_ASSIGN_OR_RETURN(PodAffinityTerm t, ReadAffinityTerm(MemberOrNull(pref[i], "podAffinityTerm"), who, f + ".podAffinityTerm"));
    preferred.push_back({static_cast<int32_t>(w.get<int64_t>()), std::move(t)});
  }
  return absl::OkStatus();
}

// Rule 18: `v` at `field` is null or an integer of at least 1.
absl::StatusOr<std::optional<int32_t>> PositiveInt32(const json& v, const std::string& who, const std::string& field) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
    return Error(who, field, fmt::format("{} is not an integer of at least 1", v.dump()));
  }
  return static_cast<int32_t>(v.get<int64_t>());
}

// Rule 18: `v` at `field` is null (the default `absent`) or one of `a` and `b`, which map to
// `va` and `vb`.
template <typename T>
absl::StatusOr<T> OneOf(const json& v, const std::string& who, const std::string& field, T absent,
                        std::pair<const char*, T> a, std::pair<const char*, T> b) {
  if (v.is_null()) return absent;
  if (v == a.first) return a.second;
  if (v == b.first) return b.second;
  return Error(who, field, fmt::format("{} is not one of {}, {}", v.dump(), a.first, b.first));
}

// Rule 18: one element of spec.topologySpreadConstraints at `field`.
absl::StatusOr<TopologySpreadConstraint> ReadSpreadConstraint(const json& c, const std::string& who,
                                                              const std::string& field) {
  if (!c.is_object()) return Error(who, field, fmt::format("expected an object, got {}", json_fields::TypeName(c)));
  TopologySpreadConstraint out;
  HUYGENS_ASSIGN_OR_RETURN(std::optional<int32_t> skew, PositiveInt32(MemberOrNull(c, "maxSkew"), who, field + ".maxSkew"));
  if (!skew.has_value()) return Error(who, field + ".maxSkew", "missing");
  out.max_skew = *skew;
  HUYGENS_ASSIGN_OR_RETURN(out.topology_key, DecodeNonEmptyString(c, "topologyKey", who, field + ".topologyKey"));
  const json& when = MemberOrNull(c, "whenUnsatisfiable");
  if (when.is_null()) return Error(who, field + ".whenUnsatisfiable", "missing");
  HUYGENS_ASSIGN_OR_RETURN(out.hard, OneOf(when, who, field + ".whenUnsatisfiable", true,
                                           std::pair{"DoNotSchedule", true}, std::pair{"ScheduleAnyway", false}));
  HUYGENS_ASSIGN_OR_RETURN(std::optional<int32_t> min_domains,
                           PositiveInt32(MemberOrNull(c, "minDomains"), who, field + ".minDomains"));
  if (min_domains.has_value() && !out.hard) {
    return Error(who, field + ".minDomains", "can only be set when whenUnsatisfiable is DoNotSchedule");
  }
  out.min_domains = min_domains.value_or(1);
  for (auto [key, policy, absent] :
       {std::tuple{"nodeAffinityPolicy", &out.node_affinity_policy, NodeInclusionPolicy::kHonor},
        std::tuple{"nodeTaintsPolicy", &out.node_taints_policy, NodeInclusionPolicy::kIgnore}}) {
    HUYGENS_ASSIGN_OR_RETURN(*policy, OneOf(MemberOrNull(c, key), who, fmt::format("{}.{}", field, key), absent,
                                            std::pair{"Honor", NodeInclusionPolicy::kHonor},
                                            std::pair{"Ignore", NodeInclusionPolicy::kIgnore}));
  }
  if (const json& s = MemberOrNull(c, "labelSelector"); !s.is_null()) {
    HUYGENS_ASSIGN_OR_RETURN(out.label_selector, DecodeLabelSelector(s, who, field + ".labelSelector"));
  }
  HUYGENS_ASSIGN_OR_RETURN(out.match_label_keys,
                           DecodeStrings(MemberOrNull(c, "matchLabelKeys"), who, field + ".matchLabelKeys"));
  return out;
}

// Rule 18.
absl::Status ReadSpreadConstraints(const json& spec, const std::string& who, PodObject& out) {
  const std::string field = "spec.topologySpreadConstraints";
  HUYGENS_ASSIGN_OR_RETURN(const json* list, ArrayOf(spec, "topologySpreadConstraints", who, field));
  for (std::size_t i = 0; list->is_array() && i < list->size(); ++i) {
    HUYGENS_ASSIGN_OR_RETURN(TopologySpreadConstraint c,
                             ReadSpreadConstraint((*list)[i], who, fmt::format("{}[{}]", field, i)));
    out.topology_spread_constraints.push_back(std::move(c));
  }
  return absl::OkStatus();
}

absl::StatusOr<PodObject> DecodePod(const json& pod) {
  // Rule 1.
  if (!pod.is_object()) return absl::InvalidArgumentError("pod: not a JSON object");
  const json& md = MemberOrNull(pod, "metadata");
  if (!md.is_object()) return absl::InvalidArgumentError("pod: metadata: missing");
  const std::string who = "pod " + ObjectKey(pod);
  PodObject out;
  // Rule 2.
  out.spec.uid = StringOrEmpty(md, "uid");
  out.spec.name = StringOrEmpty(md, "name");
  out.spec.namespace_name = StringOrEmpty(md, "namespace");
  for (auto [key, value] : {std::pair{"uid", &out.spec.uid}, std::pair{"name", &out.spec.name},
                            std::pair{"namespace", &out.spec.namespace_name}}) {
    if (value->empty()) return Error(who, fmt::format("metadata.{}", key), "missing");
  }
  out.creation_timestamp = StringOrEmpty(md, "creationTimestamp");
  // Rule 12.
  out.deletion_timestamp = StringOrEmpty(md, "deletionTimestamp");
  // Rules 3 and 4.
  HUYGENS_RETURN_IF_ERROR(ReadAnnotations(md, who, out));
  // Rules 5 to 9.
  const json& spec = MemberOrNull(pod, "spec");
  out.node_name = StringOrEmpty(spec, "nodeName");
  for (auto [key, init] : {std::pair{"initContainers", true}, std::pair{"containers", false}}) {
    const json& list = MemberOrNull(spec, key);
    if (list.is_null()) continue;
    if (!list.is_array()) return Error(who, fmt::format("spec.{}", key), "expected an array");
    for (std::size_t i = 0; i < list.size(); ++i) {
      HUYGENS_ASSIGN_OR_RETURN(
          ContainerSpec c, ReadContainer(list[i], init, who, fmt::format("spec.{}[{}]", key, i)));
      (init ? out.spec.init_containers : out.spec.containers).push_back(std::move(c));
    }
  }
  // Rules 13 to 16.
  HUYGENS_RETURN_IF_ERROR(ReadPodResources(spec, who, out));
  HUYGENS_RETURN_IF_ERROR(ReadSchedulingAsks(spec, who, out));
  const json& status = MemberOrNull(pod, "status");
  out.phase = StringOrEmpty(status, "phase");
  // Rule 11.
  out.host_network = MemberOrNull(spec, "hostNetwork") == true;
  const json& ips = MemberOrNull(status, "podIPs");
  for (const json& entry : ips.is_array() ? ips : json::array()) {
    if (std::string ip = StringOrEmpty(entry, "ip"); !ip.empty()) out.pod_ips.push_back(ip);
  }
  if (out.pod_ips.empty()) {
    if (std::string ip = StringOrEmpty(status, "podIP"); !ip.empty()) out.pod_ips.push_back(ip);
  }
  // Rule 17.
  PodAffinity& affinity = out.pod_affinity;
  HUYGENS_RETURN_IF_ERROR(ReadAffinityKind(spec, "podAffinity", who, affinity.required, affinity.preferred));
  HUYGENS_RETURN_IF_ERROR(ReadAffinityKind(spec, "podAntiAffinity", who, affinity.required_anti, affinity.preferred_anti));
  // Rule 18.
  HUYGENS_RETURN_IF_ERROR(ReadSpreadConstraints(spec, who, out));
  return out;
}

}  // namespace huygens::kube
