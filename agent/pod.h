// NodePod: what the agent reads of one Kubernetes pod object: the pod codec's PodObject
// (kube/pod_codec.h, shared with the scheduler, one set of rules): identity, creation time,
// node, phase, the containers' shape, the policy annotations and the two annotations the agent
// acts on, huygens.io/allocation and huygens.io/allocation-status (kept as written: parsing the
// allocation, and reporting a malformed one, is the reconciler's business). The names on the
// wire are in base/wire_names.h.
//
// Thread-safety: plain data.
#ifndef HUYGENS_AGENT_POD_H_
#define HUYGENS_AGENT_POD_H_

#include "base/wire_names.h"
#include "kube/pod_codec.h"

namespace huygens::agent {

using NodePod = kube::PodObject;

}  // namespace huygens::agent

#endif  // HUYGENS_AGENT_POD_H_
