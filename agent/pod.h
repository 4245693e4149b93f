// NodePod: what the agent reads of one Kubernetes pod object (core/v1 Pod JSON).
//
// What it is: identity (uid, namespace, name, node), creation time, the container shape the
// node's bookkeeping needs (PodSpec: names, init / restartable flags, CPU requests and the
// huygens.io/isolated-cpu extended resource) and the two Huygens annotations the agent reads
// (huygens.io/allocation, huygens.io/allocation-status). The allocation is kept as raw text:
// parsing it (and reporting a malformed one) is the reconciler's business.
//
// Thread-safety: plain data; the functions are pure.
#ifndef HUYGENS_AGENT_POD_H_
#define HUYGENS_AGENT_POD_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "alloc/pod.h"
#include "nlohmann/json.hpp"

namespace huygens::agent {

// The annotation the agent writes (DESIGN.md, "Contracts on the wire").
inline constexpr char kAllocationStatusAnnotation[] = "huygens.io/allocation-status";

struct NodePod {
  PodSpec spec;                            // uid, namespace, name, containers
  std::string node_name;                   // spec.nodeName
  std::string creation_timestamp;          // metadata.creationTimestamp (RFC 3339), "" if absent
  std::string phase;                       // status.phase
  std::optional<std::string> allocation;   // huygens.io/allocation, as written
  std::optional<std::string> status;       // huygens.io/allocation-status, as written
  bool terminal() const { return phase == "Succeeded" || phase == "Failed"; }
};

// Reads a Pod object. CPU and memory requests and limits are Kubernetes quantities (parsed by
// alloc/quantity.h); huygens.io/isolated-cpu is a whole count. Errors: InvalidArgument naming the pod and the field
// (not an object; metadata.uid, metadata.name or metadata.namespace missing or not a string;
// a container without a name; a quantity that does not parse).
absl::StatusOr<NodePod> NodePodFromJson(const nlohmann::json& pod);

}  // namespace huygens::agent

#endif  // HUYGENS_AGENT_POD_H_
