#include "topology/nrt.h"

#include <algorithm>
#include <utility>

#include "fmt/format.h"
#include "topology/json.h"
#include "topology/json_fields.h"

namespace huygens {
namespace {

using json_fields::Child;
using json_fields::Element;
using json_fields::FieldError;
using json_fields::Find;
using nlohmann::json;

std::string ZoneName(int numa) { return fmt::format("node-{}", numa); }


uint64_t SubtractClamped(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

uint64_t Lookup(const NumaMemory& m, int numa, const std::string& resource) {
  auto node = m.find(numa);
  if (node == m.end()) return 0;
  auto it = node->second.find(resource);
  return it == node->second.end() ? 0 : it->second;
}

absl::Status CheckNumaMemory(const CpuTopology& t, const NumaMemory& m, std::string_view field) {
  for (const auto& [numa, resources] : m) {
    for (const auto& [resource, bytes] : resources) {
      if (std::optional<std::string> why = UnknownNumaMemory(t, numa, resource)) {
        return absl::InvalidArgumentError(
            fmt::format("{}[{}][{:?}]: {}", field, numa, resource, *why));
      }
    }
  }
  return absl::OkStatus();
}

json Resource(std::string_view name, uint64_t capacity, uint64_t allocatable,
              uint64_t available) {
  return {{"name", name},
          {"capacity", std::to_string(capacity)},
          {"allocatable", std::to_string(allocatable)},
          {"available", std::to_string(available)}};
}

json NameValue(std::string_view name, std::string_view value) {
  return {{"name", name}, {"value", value}};
}

bool IsOneOf(std::string_view s, std::initializer_list<std::string_view> options) {
  return std::find(options.begin(), options.end(), s) != options.end();
}

}  // namespace

std::optional<std::string> UnknownNumaMemory(const CpuTopology& t, int numa,
                                             std::string_view resource) {
  if (!t.HasNumaNode(numa)) return fmt::format("NUMA node {} does not exist", numa);
  if (resource == kMemoryResource) return std::nullopt;
  std::string has = kMemoryResource;
  for (const auto& [page_bytes, pages] : t.Numa(numa).hugepages) {
    const std::string name = HugepageResourceName(page_bytes);
    if (name == resource) return std::nullopt;
    has += ", " + name;
  }
  return fmt::format("NUMA node {} has no {} (it has {})", numa, resource, has);
}

absl::StatusOr<std::map<int, std::map<std::string, NrtMemoryFigures>>> NrtMemory(
    const CpuTopology& t, const NumaMemory& memory_reserved, const NumaMemory& memory_used) {
  HUYGENS_RETURN_IF_ERROR(CheckNumaMemory(t, memory_reserved, "memory_reserved"));
  HUYGENS_RETURN_IF_ERROR(CheckNumaMemory(t, memory_used, "memory_used"));
  std::map<int, std::map<std::string, NrtMemoryFigures>> out;
  for (const NumaNode& node : t.NumaNodes()) {
    std::map<std::string, NrtMemoryFigures>& zone = out[node.id];
    const auto figure = [&](const std::string& name, uint64_t capacity, uint64_t also_taken) {
      NrtMemoryFigures f{.capacity = capacity};
      f.allocatable = SubtractClamped(
          SubtractClamped(capacity, Lookup(memory_reserved, node.id, name)), also_taken);
      f.available = SubtractClamped(f.allocatable, Lookup(memory_used, node.id, name));
      zone[name] = f;
    };
    uint64_t hugepage_bytes = 0;
    for (const auto& [page_bytes, pages] : node.hugepages) {
      const uint64_t bytes = page_bytes * pages;
      hugepage_bytes += bytes;
      figure(HugepageResourceName(page_bytes), bytes, 0);
    }
    figure(kMemoryResource, node.memory_bytes, hugepage_bytes);
  }
  return out;
}

absl::StatusOr<std::string> NrtTopologyPolicy(std::string_view policy, std::string_view scope) {
  if (!IsOneOf(scope, {"container", "pod"})) {
    return absl::InvalidArgumentError(
        fmt::format("scope: unknown topology manager scope {:?} (want container or pod)", scope));
  }
  const bool pod = scope == "pod";
  if (policy == "none") return std::string("None");
  if (policy == "best-effort")
    return std::string(pod ? "BestEffortPodLevel" : "BestEffortContainerLevel");
  if (policy == "restricted")
    return std::string(pod ? "RestrictedPodLevel" : "RestrictedContainerLevel");
  if (policy == "single-numa-node") {
    return std::string(pod ? "SingleNUMANodePodLevel" : "SingleNUMANodeContainerLevel");
  }
  return absl::InvalidArgumentError(fmt::format(
      "policy: unknown topology manager policy {:?} (want none, best-effort, restricted or "
      "single-numa-node)",
      policy));
}

absl::StatusOr<json> BuildNrt(const NrtInput& in) {
  if (in.node_name.empty()) return absl::InvalidArgumentError("node_name: empty");
  if (in.topology == nullptr) return absl::InvalidArgumentError("topology: missing");
  const CpuTopology& t = *in.topology;
  HUYGENS_ASSIGN_OR_RETURN(const std::string legacy_policy,
                           NrtTopologyPolicy(in.policy, in.scope));
  if (!IsOneOf(in.mode, {"allocatable", "isolated"})) {
    return absl::InvalidArgumentError(
        fmt::format("mode: unknown node mode {:?} (want allocatable or isolated)", in.mode));
  }
  if (!in.system_cpus.IsSubsetOf(t.AllCpus())) {
    return absl::InvalidArgumentError(
        fmt::format("system_cpus: CPUs {:?} are not on the machine",
                    in.system_cpus.Difference(t.AllCpus()).ToString()));
  }
  const CpuSet eligible =
      in.mode == "isolated" ? t.OnlineCpus().Intersection(t.IsolatedCpus()) : t.OnlineCpus();
  const CpuSet user = eligible.Difference(in.system_cpus);
  if (!in.exclusive_cpus.IsSubsetOf(user)) {
    return absl::InvalidArgumentError(
        fmt::format("exclusive_cpus: CPUs {:?} are not in the user pool {:?}",
                    in.exclusive_cpus.Difference(user).ToString(), user.ToString()));
  }

  HUYGENS_ASSIGN_OR_RETURN(const auto memory, NrtMemory(t, in.memory_reserved, in.memory_used));
  for (const auto& [numa, resources] : in.devices) {
    for (const auto& [name, f] : resources) {
      const std::string field = fmt::format("devices[{}][{:?}]", numa, name);
      if (!t.HasNumaNode(numa)) {
        return absl::InvalidArgumentError(
            fmt::format("{}: NUMA node {} does not exist", field, numa));
      }
      if (name.find('/') == std::string::npos) {
        return absl::InvalidArgumentError(
            fmt::format("{}: a device-plugin resource name has a domain", field));
      }
      if (f.available > f.allocatable) {
        return absl::InvalidArgumentError(fmt::format(
            "{}: available {} exceeds allocatable {}", field, f.available, f.allocatable));
      }
    }
  }
  json zones = json::array();
  for (const NumaNode& node : t.NumaNodes()) {
    json costs = json::array();
    for (const NumaNode& other : t.NumaNodes()) {
      costs.push_back({{"name", ZoneName(other.id)}, {"value", t.Distance(node.id, other.id)}});
    }
    const CpuSet online = t.CpusInNumaNode(node.id);
    const CpuSet allocatable = online.Intersection(user);
    const CpuSet available = allocatable.Difference(in.exclusive_cpus);
    json resources = json::array();
    resources.push_back(Resource("cpu", static_cast<uint64_t>(online.Size()),
                                 static_cast<uint64_t>(allocatable.Size()),
                                 static_cast<uint64_t>(available.Size())));
    // memory first, then hugepages by page size (NumaNode::hugepages is ordered by size).
    const std::map<std::string, NrtMemoryFigures>& figures = memory.at(node.id);
    const auto add = [&](const std::string& name) {
      const NrtMemoryFigures& f = figures.at(name);
      resources.push_back(Resource(name, f.capacity, f.allocatable, f.available));
    };
    add(kMemoryResource);
    for (const auto& [page_bytes, pages] : node.hugepages) add(HugepageResourceName(page_bytes));
    if (auto d = in.devices.find(node.id); d != in.devices.end()) {
      for (const auto& [name, f] : d->second) {
        resources.push_back(Resource(name, f.allocatable, f.allocatable, f.available));
      }
    }
    json zone = {{"name", ZoneName(node.id)},
                 {"type", "Node"},
                 {"costs", std::move(costs)},
                 {"resources", std::move(resources)}};
    if (auto it = in.zone_attributes.find(node.id); it != in.zone_attributes.end()) {
      json attributes = json::array();
      for (const auto& [name, value] : it->second) attributes.push_back(NameValue(name, value));
      zone["attributes"] = std::move(attributes);
    }
    zones.push_back(std::move(zone));
  }

  const json pools = {{"version", 1},
                      {"system", in.system_cpus.ToString()},
                      {"user", user.ToString()},
                      {"exclusive", in.exclusive_cpus.ToString()},
                      {"mode", in.mode}};
  json attributes = json::array({NameValue("topologyManagerPolicy", in.policy),
                                 NameValue("topologyManagerScope", in.scope)});
  if (!in.memory_manager_policy.empty()) {
    if (in.memory_manager_policy != "None" && in.memory_manager_policy != "Static") {
      return absl::InvalidArgumentError(fmt::format(
          "NrtInput.memory_manager_policy: {:?} is not None or Static", in.memory_manager_policy));
    }
    attributes.push_back(NameValue(kMemoryManagerPolicyAttribute, in.memory_manager_policy));
  }
  return json{
      {"apiVersion", kNrtApiVersion},
      {"kind", kNrtKind},
      {"metadata",
       {{"name", in.node_name},
        {"annotations",
         {{kCpuTopologyAnnotation, ToJsonString(t)}, {kPoolsAnnotation, pools.dump()}}}}},
      {"topologyPolicies", json::array({legacy_policy})},
      {"attributes", std::move(attributes)},
      {"zones", std::move(zones)}};
}

// ---- Reading ----------------------------------------------------------------------------------

std::optional<int> NrtZone::NumaId() const {
  constexpr std::string_view kPrefix = "node-";
  if (type != "Node" || !name.starts_with(kPrefix)) return std::nullopt;
  absl::StatusOr<uint64_t> id = json_fields::ReadDecimalKey(
      std::string_view(name).substr(kPrefix.size()), "", static_cast<uint64_t>(INT32_MAX));
  if (!id.ok()) return std::nullopt;
  return static_cast<int>(*id);
}

const NrtResource* NrtZone::Resource(std::string_view resource) const {
  for (const NrtResource& r : resources) {
    if (r.name == resource) return &r;
  }
  return nullptr;
}

const std::string* NrtObject::Attribute(std::string_view attribute) const {
  for (const NrtNameValue& a : attributes) {
    if (a.name == attribute) return &a.value;
  }
  return nullptr;
}

namespace {

absl::StatusOr<std::string> RequiredString(const json& obj, std::string_view path,
                                           std::string_view key) {
  const json* v = Find(obj, key);
  if (v == nullptr) return FieldError(Child(path, key), "missing");
  return json_fields::ReadString(*v, Child(path, key));
}

// A quantity: a string (v1alpha2) or an integer (v1alpha1).
absl::StatusOr<std::string> ReadQuantity(const json& j, std::string_view path) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_number_integer()) return j.dump();
  return FieldError(path, fmt::format("expected a quantity string or an integer, got {}",
                                      json_fields::TypeName(j)));
}

// An optional array of objects at obj[key], each read by `read`.
template <typename T, typename Read>
absl::StatusOr<std::vector<T>> ReadList(const json& obj, std::string_view path,
                                        std::string_view key, Read read) {
  std::vector<T> out;
  const json* list = Find(obj, key);
  if (list == nullptr) return out;
  const std::string list_path = Child(path, key);
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectArray(*list, list_path));
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string item_path = Element(list_path, i);
    HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject((*list)[i], item_path));
    HUYGENS_ASSIGN_OR_RETURN(T item, read((*list)[i], item_path));
    out.push_back(std::move(item));
  }
  return out;
}

absl::StatusOr<NrtNameValue> ReadNameValue(const json& j, std::string_view path) {
  NrtNameValue nv;
  HUYGENS_ASSIGN_OR_RETURN(nv.name, RequiredString(j, path, "name"));
  HUYGENS_ASSIGN_OR_RETURN(nv.value, RequiredString(j, path, "value"));
  return nv;
}

absl::StatusOr<NrtCost> ReadCost(const json& j, std::string_view path) {
  NrtCost c;
  HUYGENS_ASSIGN_OR_RETURN(c.name, RequiredString(j, path, "name"));
  const json* value = Find(j, "value");
  if (value == nullptr) return FieldError(Child(path, "value"), "missing");
  HUYGENS_ASSIGN_OR_RETURN(c.value, json_fields::ReadInt(*value, Child(path, "value")));
  return c;
}

absl::StatusOr<NrtResource> ReadResource(const json& j, std::string_view path, bool v1alpha1) {
  NrtResource r;
  HUYGENS_ASSIGN_OR_RETURN(r.name, RequiredString(j, path, "name"));
  for (auto [key, field] : {std::pair{"capacity", &r.capacity},
                            std::pair{"allocatable", &r.allocatable}}) {
    const json* v = Find(j, key);
    if (v == nullptr) return FieldError(Child(path, key), "missing");
    HUYGENS_ASSIGN_OR_RETURN(*field, ReadQuantity(*v, Child(path, key)));
  }
  if (const json* v = Find(j, "available")) {
    HUYGENS_ASSIGN_OR_RETURN(r.available, ReadQuantity(*v, Child(path, "available")));
  } else if (!v1alpha1) {
    return FieldError(Child(path, "available"), "missing");
  }
  return r;
}

absl::StatusOr<NrtZone> ReadZone(const json& j, std::string_view path, bool v1alpha1) {
  NrtZone z;
  HUYGENS_ASSIGN_OR_RETURN(z.name, RequiredString(j, path, "name"));
  HUYGENS_ASSIGN_OR_RETURN(z.type, RequiredString(j, path, "type"));
  if (const json* parent = Find(j, "parent")) {
    HUYGENS_ASSIGN_OR_RETURN(z.parent, json_fields::ReadString(*parent, Child(path, "parent")));
  }
  HUYGENS_ASSIGN_OR_RETURN(z.costs, ReadList<NrtCost>(j, path, "costs", ReadCost));
  HUYGENS_ASSIGN_OR_RETURN(
      z.resources,
      ReadList<NrtResource>(j, path, "resources", [v1alpha1](const json& r, std::string_view p) {
        return ReadResource(r, p, v1alpha1);
      }));
  HUYGENS_ASSIGN_OR_RETURN(z.attributes,
                           ReadList<NrtNameValue>(j, path, "attributes", ReadNameValue));
  return z;
}

// Reads everything but the identity (apiVersion, kind, name), which the caller has checked.
absl::Status ReadBody(const json& object, NrtObject& nrt) {
  const json& metadata = object.at("metadata");
  if (const json* annotations = Find(metadata, "annotations")) {
    HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(*annotations, "metadata.annotations"));
    for (const auto& [key, value] : annotations->items()) {
      HUYGENS_ASSIGN_OR_RETURN(
          nrt.annotations[key],
          json_fields::ReadString(value, fmt::format("metadata.annotations[{:?}]", key)));
    }
  }
  if (const json* policies = Find(object, "topologyPolicies")) {
    HUYGENS_RETURN_IF_ERROR(json_fields::ExpectArray(*policies, "topologyPolicies"));
    for (size_t i = 0; i < policies->size(); ++i) {
      HUYGENS_ASSIGN_OR_RETURN(
          std::string p, json_fields::ReadString((*policies)[i], Element("topologyPolicies", i)));
      nrt.topology_policies.push_back(std::move(p));
    }
  }
  HUYGENS_ASSIGN_OR_RETURN(nrt.attributes,
                           ReadList<NrtNameValue>(object, "", "attributes", ReadNameValue));
  if (Find(object, "zones") == nullptr) return FieldError("zones", "missing");
  const bool v1alpha1 = nrt.api_version == kNrtApiVersionV1Alpha1;
  HUYGENS_ASSIGN_OR_RETURN(
      nrt.zones,
      ReadList<NrtZone>(object, "", "zones", [v1alpha1](const json& z, std::string_view p) {
        return ReadZone(z, p, v1alpha1);
      }));
  return absl::OkStatus();
}

absl::Status ObjectError(std::string_view name, const absl::Status& s) {
  return absl::InvalidArgumentError(
      fmt::format("{} {:?}: {}", kNrtKind, name, std::string(s.message())));
}

}  // namespace

absl::StatusOr<NrtObject> ReadNrt(const json& object) {
  // Identity first, so that later errors can name the object.
  auto identity_error = [](const absl::Status& s) {
    return absl::InvalidArgumentError(
        fmt::format("{}: {}", kNrtKind, std::string(s.message())));
  };
  if (absl::Status s = json_fields::ExpectObject(object, "object"); !s.ok()) {
    return identity_error(s);
  }
  NrtObject nrt;
  absl::Status identity = [&]() -> absl::Status {
    HUYGENS_ASSIGN_OR_RETURN(nrt.api_version, RequiredString(object, "", "apiVersion"));
    if (nrt.api_version != kNrtApiVersion && nrt.api_version != kNrtApiVersionV1Alpha1) {
      return FieldError("apiVersion", fmt::format("unsupported apiVersion {:?} (want {} or {})",
                                                  nrt.api_version, kNrtApiVersion,
                                                  kNrtApiVersionV1Alpha1));
    }
    HUYGENS_ASSIGN_OR_RETURN(const std::string kind, RequiredString(object, "", "kind"));
    if (kind != kNrtKind) {
      return FieldError("kind", fmt::format("expected {}, got {:?}", kNrtKind, kind));
    }
    const json* metadata = Find(object, "metadata");
    if (metadata == nullptr) return FieldError("metadata", "missing");
    HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(*metadata, "metadata"));
    HUYGENS_ASSIGN_OR_RETURN(nrt.name, RequiredString(*metadata, "metadata", "name"));
    if (nrt.name.empty()) return FieldError("metadata.name", "empty");
    return absl::OkStatus();
  }();
  if (!identity.ok()) return identity_error(identity);
  if (absl::Status s = ReadBody(object, nrt); !s.ok()) return ObjectError(nrt.name, s);
  return nrt;
}

absl::StatusOr<CpuTopology> TopologyFromNrt(const NrtObject& nrt) {
  const std::string field = fmt::format("metadata.annotations[{:?}]", kCpuTopologyAnnotation);
  auto it = nrt.annotations.find(kCpuTopologyAnnotation);
  if (it == nrt.annotations.end()) {
    return ObjectError(nrt.name, FieldError(field, "missing"));
  }
  absl::StatusOr<CpuTopology> t = TopologyFromJson(std::string_view(it->second));
  if (!t.ok()) return ObjectError(nrt.name, FieldError(field, std::string(t.status().message())));
  for (size_t i = 0; i < nrt.zones.size(); ++i) {
    const std::optional<int> numa = nrt.zones[i].NumaId();
    if (numa.has_value() && !t->HasNumaNode(*numa)) {
      return ObjectError(nrt.name,
                         FieldError(Child(Element("zones", i), "name"),
                                    fmt::format("zone {:?} is not a NUMA node of the {} topology",
                                                nrt.zones[i].name, kCpuTopologyAnnotation)));
    }
  }
  return t;
}

namespace {

// The pools annotation's JSON text; `field` names the annotation in errors.
absl::StatusOr<NrtPools> ReadPools(std::string_view text, std::string_view field) {
  HUYGENS_ASSIGN_OR_RETURN(const json doc, json_fields::ParseJson(text, field));
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(doc, field));
  HUYGENS_RETURN_IF_ERROR(
      json_fields::CheckKnownKeys(doc, field, {"version", "system", "user", "exclusive", "mode"}));
  const json* version = Find(doc, "version");
  if (version == nullptr) return FieldError(Child(field, "version"), "missing");
  HUYGENS_ASSIGN_OR_RETURN(const int v, json_fields::ReadInt(*version, Child(field, "version")));
  if (v != 1) return FieldError(Child(field, "version"), fmt::format("unsupported version {}", v));
  NrtPools pools;
  for (auto [key, set] : {std::pair{"system", &pools.system}, std::pair{"user", &pools.user},
                          std::pair{"exclusive", &pools.exclusive}}) {
    const json* list = Find(doc, key);
    if (list == nullptr) return FieldError(Child(field, key), "missing");
    HUYGENS_ASSIGN_OR_RETURN(*set, json_fields::ReadCpuList(*list, Child(field, key)));
  }
  HUYGENS_ASSIGN_OR_RETURN(pools.mode, RequiredString(doc, field, "mode"));
  if (!IsOneOf(pools.mode, {"allocatable", "isolated"})) {
    return FieldError(Child(field, "mode"),
                      fmt::format("unknown mode {:?} (want allocatable or isolated)", pools.mode));
  }
  return pools;
}

}  // namespace

absl::StatusOr<NrtPools> PoolsFromNrt(const NrtObject& nrt) {
  const std::string field = fmt::format("metadata.annotations[{:?}]", kPoolsAnnotation);
  auto it = nrt.annotations.find(kPoolsAnnotation);
  if (it == nrt.annotations.end()) return ObjectError(nrt.name, FieldError(field, "missing"));
  absl::StatusOr<NrtPools> pools = ReadPools(it->second, field);
  if (!pools.ok()) return ObjectError(nrt.name, pools.status());
  return pools;
}

absl::StatusOr<std::optional<PodTraffic>> PodTrafficFromNrt(const NrtObject& nrt) {
  auto it = nrt.annotations.find(kPodTrafficAnnotation);
  if (it == nrt.annotations.end()) return std::nullopt;
  const std::string field = fmt::format("metadata.annotations[{:?}]", kPodTrafficAnnotation);
  absl::StatusOr<PodTraffic> traffic = ParsePodTraffic(it->second, field);
  if (!traffic.ok()) return ObjectError(nrt.name, traffic.status());
  return *std::move(traffic);
}

}  // namespace huygens
