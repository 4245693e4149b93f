#include "node/allocation.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace huygens {
namespace {

using nlohmann::json;

absl::Status FieldError(std::string_view field, std::string_view what) {
  return absl::InvalidArgumentError(
      fmt::format("{}: {}: {}", kAllocationAnnotation, field, what));
}

// A JSON value's kind, for messages.
std::string KindOf(const json& v) { return v.type_name(); }

absl::StatusOr<bool> OptionalBool(const json& obj, const char* key, std::string_view where,
                                  bool fallback) {
  auto it = obj.find(key);
  if (it == obj.end()) return fallback;
  if (!it->is_boolean()) {
    return FieldError(fmt::format("{}.{}", where, key),
                      fmt::format("expected a boolean, got {}", KindOf(*it)));
  }
  return it->get<bool>();
}

absl::StatusOr<CpuSet> RequiredCpuList(const json& obj, const char* key, std::string_view where) {
  const std::string field = fmt::format("{}.{}", where, key);
  auto it = obj.find(key);
  if (it == obj.end()) return FieldError(field, "missing");
  if (!it->is_string()) {
    return FieldError(field, fmt::format("expected a cpu-list string, got {}", KindOf(*it)));
  }
  auto set = CpuSet::Parse(it->get_ref<const std::string&>());
  if (!set.ok()) return FieldError(field, std::string(set.status().message()));
  return *std::move(set);
}

absl::StatusOr<ContainerAllocation> ParseContainer(const json& c, size_t index) {
  const std::string where = fmt::format("containers[{}]", index);
  if (!c.is_object()) {
    return FieldError(where, fmt::format("expected an object, got {}", KindOf(c)));
  }
  ContainerAllocation out;
  auto name = c.find("name");
  if (name == c.end()) return FieldError(where + ".name", "missing");
  if (!name->is_string() || name->get_ref<const std::string&>().empty()) {
    return FieldError(where + ".name", "expected a non-empty string");
  }
  out.name = name->get<std::string>();
  auto cpuset = RequiredCpuList(c, "cpuset", where);
  if (!cpuset.ok()) return cpuset.status();
  out.cpuset = *std::move(cpuset);
  auto mems = RequiredCpuList(c, "mems", where);
  if (!mems.ok()) return mems.status();
  out.mems = *std::move(mems);
  auto init = OptionalBool(c, "init", where, false);
  if (!init.ok()) return init.status();
  auto restartable = OptionalBool(c, "restartable", where, false);
  if (!restartable.ok()) return restartable.status();
  auto exclusive = OptionalBool(c, "exclusive", where, true);
  if (!exclusive.ok()) return exclusive.status();
  out.init = *init;
  out.restartable = *restartable;
  out.exclusive = *exclusive;
  if (out.restartable && !out.init) {
    return FieldError(where + ".restartable", "true requires \"init\":true");
  }
  return out;
}

}  // namespace

const ContainerAllocation* PodAllocation::Find(std::string_view name) const {
  for (const ContainerAllocation& c : containers) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

CpuSet PodAllocation::ExclusiveCpus() const {
  CpuSet::Builder held;
  for (const ContainerAllocation& c : containers) {
    if (c.exclusive) held.Add(c.cpuset);
  }
  return held.Build();
}

std::string DescribeAllocation(const PodAllocation& allocation) {
  const CpuSet exclusive = allocation.ExclusiveCpus();
  std::string containers;
  for (const ContainerAllocation& c : allocation.containers) {
    containers += fmt::format("{}{} {}", containers.empty() ? "" : ", ", c.name,
                              c.exclusive ? c.cpuset.ToString() : "shared");
  }
  std::string out;
  if (exclusive.Empty()) {
    out = "no exclusive CPUs";
  } else {
    // NUMA node ids are >= 0 and unique by the invariants; cpu-list syntax reads "0-1".
    const CpuSet numa = CpuSet::FromIds(allocation.numa_nodes).value_or(CpuSet());
    out = fmt::format("NUMA node{} {}, cpuset {}", numa.Size() == 1 ? "" : "s", numa.ToString(),
                      exclusive.ToString());
  }
  return containers.empty() ? out : fmt::format("{} ({})", out, containers);
}

std::string AllocationToJson(const PodAllocation& allocation) {
  // nlohmann's default object sorts keys; ordered_json keeps the documented order.
  nlohmann::ordered_json out;
  out["version"] = kAllocationVersion;
  out["node"] = allocation.node;
  out["numaNodes"] = allocation.numa_nodes;
  nlohmann::ordered_json containers = nlohmann::ordered_json::array();
  for (const ContainerAllocation& c : allocation.containers) {
    nlohmann::ordered_json one;
    one["name"] = c.name;
    one["cpuset"] = c.cpuset.ToString();
    one["mems"] = c.mems.ToString();
    if (c.init) one["init"] = true;
    if (c.restartable) one["restartable"] = true;
    if (!c.exclusive) one["exclusive"] = false;
    containers.push_back(std::move(one));
  }
  out["containers"] = std::move(containers);
  return out.dump();
}

absl::StatusOr<PodAllocation> AllocationFromJson(std::string_view text, std::string pod_uid) {
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return FieldError("value", "not valid JSON");
  if (!doc.is_object()) {
    return FieldError("value", fmt::format("expected a JSON object, got {}", KindOf(doc)));
  }
  auto version = doc.find("version");
  if (version == doc.end()) return FieldError("version", "missing");
  if (!version->is_number_integer()) {
    return FieldError("version", fmt::format("expected an integer, got {}", version->dump()));
  }
  if (version->get<int64_t>() != kAllocationVersion) {
    return FieldError("version", fmt::format("{} is not supported (this reader knows {})",
                                             version->dump(), kAllocationVersion));
  }
  PodAllocation out;
  out.pod_uid = std::move(pod_uid);
  auto node = doc.find("node");
  if (node == doc.end()) return FieldError("node", "missing");
  if (!node->is_string()) {
    return FieldError("node", fmt::format("expected a string, got {}", KindOf(*node)));
  }
  out.node = node->get<std::string>();

  auto numa = doc.find("numaNodes");
  if (numa == doc.end()) return FieldError("numaNodes", "missing");
  if (!numa->is_array()) {
    return FieldError("numaNodes", fmt::format("expected an array, got {}", KindOf(*numa)));
  }
  for (size_t i = 0; i < numa->size(); ++i) {
    const json& id = (*numa)[i];
    const std::string field = fmt::format("numaNodes[{}]", i);
    if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
        id.get<int64_t>() > std::numeric_limits<int>::max()) {
      return FieldError(field, fmt::format("expected a NUMA node id >= 0, got {}", id.dump()));
    }
    out.numa_nodes.push_back(static_cast<int>(id.get<int64_t>()));
  }
  std::sort(out.numa_nodes.begin(), out.numa_nodes.end());
  if (std::adjacent_find(out.numa_nodes.begin(), out.numa_nodes.end()) != out.numa_nodes.end()) {
    return FieldError("numaNodes", "repeats a NUMA node id");
  }

  auto containers = doc.find("containers");
  if (containers == doc.end()) return FieldError("containers", "missing");
  if (!containers->is_array()) {
    return FieldError("containers",
                      fmt::format("expected an array, got {}", KindOf(*containers)));
  }
  std::set<std::string, std::less<>> names;
  for (size_t i = 0; i < containers->size(); ++i) {
    auto c = ParseContainer((*containers)[i], i);
    if (!c.ok()) return c.status();
    if (!names.insert(c->name).second) {
      return FieldError(fmt::format("containers[{}].name", i),
                        fmt::format("{:?} appears twice", c->name));
    }
    out.containers.push_back(*std::move(c));
  }
  return out;
}

}  // namespace huygens
