#include "agent/pod.h"

#include <string_view>

#include "fmt/format.h"
#include "node/allocation.h"
#include "alloc/quantity.h"

namespace huygens::agent {
namespace {

using nlohmann::json;

constexpr char kIsolatedCpuResource[] = "huygens.io/isolated-cpu";

const json* Member(const json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string StringOr(const json& object, std::string_view key) {
  const json* v = Member(object, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

// Reads resources.{requests,limits}.<resource> of a container; 0 when absent.
absl::StatusOr<int64_t> Quantity(const json& container, std::string_view kind,
                                 std::string_view resource, const std::string& field,
                                 bool memory) {
  const json* resources = Member(container, "resources");
  const json* list = resources != nullptr ? Member(*resources, kind) : nullptr;
  const json* value = list != nullptr ? Member(*list, resource) : nullptr;
  if (value == nullptr || value->is_null()) return int64_t{0};
  std::string text;
  if (value->is_string()) {
    text = value->get<std::string>();
  } else if (value->is_number()) {
    text = value->dump();
  } else {
    return absl::InvalidArgumentError(
        fmt::format("{}.resources.{}.{}: expected a quantity", field, kind, resource));
  }
  auto parsed = memory ? ParseMemoryBytes(text) : ParseCpuMilli(text);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(fmt::format("{}.resources.{}.{}: {}", field, kind, resource,
                                                  std::string(parsed.status().message())));
  }
  return *parsed;
}

absl::StatusOr<ContainerSpec> ContainerFromJson(const json& c, const std::string& field,
                                                bool init) {
  ContainerSpec out;
  out.name = StringOr(c, "name");
  if (out.name.empty()) return absl::InvalidArgumentError(field + ".name: missing");
  out.init = init;
  out.restartable = init && StringOr(c, "restartPolicy") == "Always";
  struct Item {
    std::string_view kind, resource;
    int64_t* target;
    bool memory;
  };
  int64_t isolated_request = 0, isolated_limit = 0;
  for (const Item& item : {Item{"requests", "cpu", &out.cpu_request_milli, false},
                           Item{"limits", "cpu", &out.cpu_limit_milli, false},
                           Item{"requests", "memory", &out.memory_request_bytes, true},
                           Item{"limits", "memory", &out.memory_limit_bytes, true},
                           Item{"requests", kIsolatedCpuResource, &isolated_request, false},
                           Item{"limits", kIsolatedCpuResource, &isolated_limit, false}}) {
    auto q = Quantity(c, item.kind, item.resource, field, item.memory);
    if (!q.ok()) return q.status();
    *item.target = *q;
  }
  // An extended resource is a whole count; requests default to limits (the API server's rule).
  const int64_t isolated_milli = isolated_request != 0 ? isolated_request : isolated_limit;
  if (isolated_milli % 1000 != 0) {
    return absl::InvalidArgumentError(
        fmt::format("{}.resources: {} must be a whole number", field, kIsolatedCpuResource));
  }
  out.isolated_cpus = isolated_milli / 1000;
  return out;
}

}  // namespace

absl::StatusOr<NodePod> NodePodFromJson(const json& pod) {
  if (!pod.is_object()) return absl::InvalidArgumentError("pod: not a JSON object");
  const json* meta = Member(pod, "metadata");
  if (meta == nullptr || !meta->is_object()) {
    return absl::InvalidArgumentError("pod: metadata: missing");
  }
  NodePod out;
  out.spec.name = StringOr(*meta, "name");
  out.spec.namespace_name = StringOr(*meta, "namespace");
  out.spec.uid = StringOr(*meta, "uid");
  const std::string who = fmt::format("pod {}/{}", out.spec.namespace_name, out.spec.name);
  for (auto [key, value] : {std::pair{"name", &out.spec.name},
                            std::pair{"namespace", &out.spec.namespace_name},
                            std::pair{"uid", &out.spec.uid}}) {
    if (value->empty()) {
      return absl::InvalidArgumentError(fmt::format("{}: metadata.{}: missing", who, key));
    }
  }
  out.creation_timestamp = StringOr(*meta, "creationTimestamp");
  if (const json* annotations = Member(*meta, "annotations")) {
    if (const json* a = Member(*annotations, kAllocationAnnotation); a && a->is_string()) {
      out.allocation = a->get<std::string>();
    }
    if (const json* s = Member(*annotations, kAllocationStatusAnnotation); s && s->is_string()) {
      out.status = s->get<std::string>();
    }
    auto policy = ParseCpuPolicy(StringOr(*annotations, "huygens.io/cpu-policy"));
    if (policy) out.spec.cpu_policy = policy;
  }
  const json* spec = Member(pod, "spec");
  if (spec != nullptr) {
    out.node_name = StringOr(*spec, "nodeName");
    for (auto [key, init] : {std::pair{"initContainers", true}, std::pair{"containers", false}}) {
      const json* list = Member(*spec, key);
      if (list == nullptr || !list->is_array()) continue;
      for (std::size_t i = 0; i < list->size(); ++i) {
        auto c = ContainerFromJson((*list)[i], fmt::format("{}: spec.{}[{}]", who, key, i), init);
        if (!c.ok()) return c.status();
        (init ? out.spec.init_containers : out.spec.containers).push_back(std::move(*c));
      }
    }
  }
  if (const json* status = Member(pod, "status")) out.phase = StringOr(*status, "phase");
  return out;
}

}  // namespace huygens::agent
