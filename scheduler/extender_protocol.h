// The wire types of kube-scheduler's HTTP extender protocol (k8s.io/kube-scheduler/extender/v1),
// parsed from and rendered to JSON exactly as kube-scheduler sends and expects them:
//   filter, prioritize   request  ExtenderArgs {"pod": Pod, "nodes": NodeList, "nodenames": [..]}
//                                 (nodeCacheCapable: true sends only "nodenames"; false sends
//                                 only "nodes", a core/v1 NodeList)
//   filter               reply    ExtenderFilterResult {"nodes" | "nodenames", "failedNodes",
//                                 "failedAndUnresolvableNodes", "error"}, the surviving nodes in
//                                 the form they were asked in
//   prioritize           reply    HostPriorityList [{"host": name, "score": 0..10}]
//                                 (MaxExtenderPriority = 10)
//   bind                 request  ExtenderBindingArgs {"PodName", "PodNamespace", "PodUID",
//                                 "Node"} (the Go struct has no json tags: field names as is)
//                        reply    ExtenderBindingResult {"Error"}
// None of these Go types has json tags, so kube-scheduler sends Go's field names ("Pod",
// "Nodes", "NodeNames", "PodName"); like Go's decoder, the parsers match keys ignoring ASCII
// case (an exact match first). The replies use the lower-case names above, which kube-scheduler
// decodes the same way.
// Malformed bodies are errors naming the field; the service answers them with HTTP 400.
// Errors: InvalidArgument "extender <verb> request: <field>: <what>".
// Thread-safety: pure functions.
#ifndef HUYGENS_SCHEDULER_EXTENDER_PROTOCOL_H_
#define HUYGENS_SCHEDULER_EXTENDER_PROTOCOL_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace huygens::scheduler {

inline constexpr int64_t kMaxExtenderPriority = 10;  // extender/v1 MaxExtenderPriority

// ExtenderArgs of a filter or prioritize request.
struct ExtenderArgs {
  nlohmann::json pod;  // the core/v1 Pod (an object with metadata and spec)
  // The candidate node names, in request order (from "nodenames", or the items' names).
  std::vector<std::string> node_names;
  // The request's "nodes" NodeList items (nodeCacheCapable: false), nullopt when the request
  // sent "nodenames"; the reply answers in the same form.
  std::optional<std::vector<nlohmann::json>> node_items;
};

// Parses a filter / prioritize body. `verb` names the request in errors. Requires "pod" (an
// object with metadata.name and spec) and exactly one of "nodes" (with "items", each with
// metadata.name) and "nodenames" (strings); null counts as absent, as Go decodes it.
absl::StatusOr<ExtenderArgs> ParseExtenderArgs(std::string_view body, std::string_view verb);

// ExtenderBindingArgs. Requires non-empty PodName, PodNamespace, PodUID and Node strings.
struct BindingArgs {
  std::string pod_name;
  std::string pod_namespace;
  std::string pod_uid;
  std::string node;
};
absl::StatusOr<BindingArgs> ParseBindingArgs(std::string_view body);

// The verdict of one filter call: names of the nodes that pass (in request order) and the
// reasons of those that do not, split as kube-scheduler splits them (failedAndUnresolvable
// nodes are not tried by preemption).
struct FilterVerdict {
  std::vector<std::string> passed;
  std::map<std::string, std::string> failed;
  std::map<std::string, std::string> failed_unresolvable;
  std::string error;  // set: the whole call failed (kube-scheduler then fails the attempt)
};

// ExtenderFilterResult JSON for `verdict`, answering in the form of `args` ("nodenames", or
// "nodes" holding the passed items of the request's NodeList).
std::string RenderFilterResult(const ExtenderArgs& args, const FilterVerdict& verdict);
// HostPriorityList JSON. REQUIRES: each score in 0..kMaxExtenderPriority.
std::string RenderHostPriorityList(const std::vector<std::pair<std::string, int64_t>>& scores);
// ExtenderBindingResult JSON ({"Error": ""} on success, as Go renders the struct).
std::string RenderBindingResult(std::string_view error);

}  // namespace huygens::scheduler

#endif  // HUYGENS_SCHEDULER_EXTENDER_PROTOCOL_H_
