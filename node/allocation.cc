#include "node/allocation.h"

#include <algorithm>
#include <set>
#include <utility>

#include "base/status.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "topology/json_fields.h"

namespace huygens {
namespace {

using json_fields::Child;
using json_fields::Element;
using json_fields::FieldError;
using json_fields::ReadBool;
using json_fields::ReadCpuList;
using json_fields::ReadOptional;
using json_fields::ReadRequired;
using nlohmann::json;

// The NUMA node ids of `numaNodes`: integers >= 0, sorted, none twice.
absl::StatusOr<std::vector<int>> ReadNumaNodes(const json& list, std::string_view path) {
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectArray(list, path));
  std::vector<int> ids;
  for (size_t i = 0; i < list.size(); ++i) {
    int id = 0;
    HUYGENS_ASSIGN_OR_RETURN(id, json_fields::ReadInt(list[i], Element(path, i)));
    if (id < 0) return FieldError(Element(path, i), fmt::format("NUMA node id {} is negative", id));
    ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  if (std::adjacent_find(ids.begin(), ids.end()) != ids.end()) {
    return FieldError(path, "repeats a NUMA node id");
  }
  return ids;
}

absl::StatusOr<ContainerAllocation> ReadContainer(const json& c, std::string_view path) {
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(c, path));
  ContainerAllocation out;
  HUYGENS_ASSIGN_OR_RETURN(out.name, ReadRequired(c, path, "name", json_fields::ReadString));
  if (out.name.empty()) return FieldError(Child(path, "name"), "is empty");
  HUYGENS_ASSIGN_OR_RETURN(out.cpuset, ReadRequired(c, path, "cpuset", ReadCpuList));
  HUYGENS_ASSIGN_OR_RETURN(out.mems, ReadRequired(c, path, "mems", ReadCpuList));
  HUYGENS_ASSIGN_OR_RETURN(out.init, ReadOptional(c, path, "init", ReadBool, false));
  HUYGENS_ASSIGN_OR_RETURN(out.restartable, ReadOptional(c, path, "restartable", ReadBool, false));
  HUYGENS_ASSIGN_OR_RETURN(out.exclusive, ReadOptional(c, path, "exclusive", ReadBool, true));
  if (out.restartable && !out.init) {
    return FieldError(Child(path, "restartable"), "true requires \"init\":true");
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

absl::StatusOr<PodAllocation> AllocationFromJsonValue(const json& value, std::string_view path,
                                                     std::string pod_uid) {
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(value, path));
  int version = 0;
  HUYGENS_ASSIGN_OR_RETURN(version, ReadRequired(value, path, "version", json_fields::ReadInt));
  if (version != kAllocationVersion) {
    return FieldError(Child(path, "version"),
                      fmt::format("{} is not supported (this reader knows {})", version,
                                  kAllocationVersion));
  }
  PodAllocation out;
  out.pod_uid = std::move(pod_uid);
  HUYGENS_ASSIGN_OR_RETURN(out.node, ReadRequired(value, path, "node", json_fields::ReadString));
  HUYGENS_ASSIGN_OR_RETURN(out.numa_nodes, ReadRequired(value, path, "numaNodes", ReadNumaNodes));
  const json* containers = nullptr;
  HUYGENS_ASSIGN_OR_RETURN(containers, json_fields::Required(value, path, "containers"));
  const std::string containers_path = Child(path, "containers");
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectArray(*containers, containers_path));
  std::set<std::string, std::less<>> names;
  for (size_t i = 0; i < containers->size(); ++i) {
    const std::string one = Element(containers_path, i);
    ContainerAllocation c;
    HUYGENS_ASSIGN_OR_RETURN(c, ReadContainer((*containers)[i], one));
    if (!names.insert(c.name).second) {
      return FieldError(Child(one, "name"), fmt::format("{:?} appears twice", c.name));
    }
    out.containers.push_back(std::move(c));
  }
  return out;
}

absl::StatusOr<PodAllocation> AllocationFromJson(std::string_view text, std::string pod_uid) {
  json value;
  HUYGENS_ASSIGN_OR_RETURN(value, json_fields::ParseJson(text, kAllocationAnnotation));
  absl::StatusOr<PodAllocation> out = AllocationFromJsonValue(value, "", std::move(pod_uid));
  if (!out.ok()) return FieldError(kAllocationAnnotation, Msg(out.status()));
  return out;
}

}  // namespace huygens
