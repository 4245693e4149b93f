#include "scheduler/extender_protocol.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "fmt/format.h"

namespace huygens::scheduler {

namespace {

using nlohmann::json;

absl::Status Bad(std::string_view verb, std::string_view field, std::string_view what) {
  return absl::InvalidArgumentError(fmt::format("extender {} request: {}: {}", verb, field, what));
}

absl::StatusOr<json> ParseObject(std::string_view body, std::string_view verb) {
  json doc = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Bad(verb, "body", "not valid JSON");
  if (!doc.is_object()) return Bad(verb, "body", "not a JSON object");
  return doc;
}

// A present, non-null member (Go decodes null as absent). As Go's encoding/json decodes into a
// struct: the key as written, else a key equal to it ignoring ASCII case. The extender
// types have no json tags, so kube-scheduler sends Go's field names ("Pod", "NodeNames").
const json* Member(const json& object, std::string_view key) {
  auto it = object.find(key);
  if (it == object.end()) {
    for (auto i = object.begin(); i != object.end(); ++i) {
      const std::string& k = i.key();
      if (std::equal(k.begin(), k.end(), key.begin(), key.end(),
                     [](char a, char b) { return absl::ascii_tolower(a) == absl::ascii_tolower(b); })) {
        it = i;
      }
    }
  }
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

}  // namespace

absl::StatusOr<ExtenderArgs> ParseExtenderArgs(std::string_view body, std::string_view verb) {
  auto doc = ParseObject(body, verb);
  if (!doc.ok()) return doc.status();
  ExtenderArgs args;
  const json* pod = Member(*doc, "pod");
  if (pod == nullptr) return Bad(verb, "pod", "missing");
  if (!pod->is_object()) return Bad(verb, "pod", "not an object");
  const json* metadata = Member(*pod, "metadata");
  if (metadata == nullptr || !metadata->is_object()) return Bad(verb, "pod.metadata", "missing or not an object");
  const json* name = Member(*metadata, "name");
  if (name == nullptr || !name->is_string()) return Bad(verb, "pod.metadata.name", "missing or not a string");
  const json* spec = Member(*pod, "spec");
  if (spec == nullptr || !spec->is_object()) return Bad(verb, "pod.spec", "missing or not an object");
  args.pod = *pod;

  const json* names = Member(*doc, "nodenames");
  const json* nodes = Member(*doc, "nodes");
  if ((names == nullptr) == (nodes == nullptr)) {
    return Bad(verb, "nodes/nodenames", "exactly one of them must be set (nodeCacheCapable false / true)");
  }
  if (names != nullptr) {
    if (!names->is_array()) return Bad(verb, "nodenames", "not an array");
    for (size_t i = 0; i < names->size(); ++i) {
      if (!(*names)[i].is_string()) return Bad(verb, fmt::format("nodenames[{}]", i), "not a string");
      args.node_names.push_back((*names)[i].get<std::string>());
    }
    return args;
  }
  if (!nodes->is_object()) return Bad(verb, "nodes", "not a NodeList object");
  const json* items = Member(*nodes, "items");
  std::vector<json> kept;
  if (items != nullptr) {
    if (!items->is_array()) return Bad(verb, "nodes.items", "not an array");
    for (size_t i = 0; i < items->size(); ++i) {
      const json& item = (*items)[i];
      const json* meta = item.is_object() ? Member(item, "metadata") : nullptr;
      const json* node_name = meta != nullptr && meta->is_object() ? Member(*meta, "name") : nullptr;
      if (node_name == nullptr || !node_name->is_string()) {
        return Bad(verb, fmt::format("nodes.items[{}].metadata.name", i), "missing or not a string");
      }
      args.node_names.push_back(node_name->get<std::string>());
      kept.push_back(item);
    }
  }
  args.node_items = std::move(kept);
  return args;
}

absl::StatusOr<BindingArgs> ParseBindingArgs(std::string_view body) {
  auto doc = ParseObject(body, "bind");
  if (!doc.ok()) return doc.status();
  BindingArgs args;
  const std::pair<const char*, std::string*> fields[] = {
      {"PodName", &args.pod_name}, {"PodNamespace", &args.pod_namespace}, {"PodUID", &args.pod_uid}, {"Node", &args.node}};
  for (const auto& [key, out] : fields) {
    const json* value = Member(*doc, key);
    if (value == nullptr || !value->is_string() || value->get_ref<const std::string&>().empty()) {
      return Bad("bind", key, "missing, empty or not a string");
    }
    *out = value->get<std::string>();
  }
  return args;
}

std::string RenderFilterResult(const ExtenderArgs& args, const FilterVerdict& verdict) {
  json out = json::object();
  if (args.node_items.has_value()) {
    json items = json::array();
    size_t next = 0;  // verdict.passed is in request order: one pass over the items
    for (size_t i = 0; i < args.node_items->size() && next < verdict.passed.size(); ++i) {
      if (args.node_names[i] != verdict.passed[next]) continue;
      items.push_back((*args.node_items)[i]);
      ++next;
    }
    out["nodes"] = json{{"apiVersion", "v1"}, {"kind", "NodeList"}, {"metadata", json::object()}, {"items", std::move(items)}};
  } else {
    out["nodenames"] = verdict.passed;
  }
  if (!verdict.failed.empty()) out["failedNodes"] = verdict.failed;
  if (!verdict.failed_unresolvable.empty()) out["failedAndUnresolvableNodes"] = verdict.failed_unresolvable;
  if (!verdict.error.empty()) out["error"] = verdict.error;
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string RenderHostPriorityList(const std::vector<std::pair<std::string, int64_t>>& scores) {
  json out = json::array();
  for (const auto& [host, score] : scores) out.push_back(json{{"host", host}, {"score", score}});
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string RenderBindingResult(std::string_view error) {
  return json{{"Error", std::string(error)}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace huygens::scheduler
