// The extended resource a pod requests to opt in to Huygens in extender mode: a huygens.io/*
// name on the wire, beside those of base/wire_names.h (DESIGN.md, "Contracts on the wire").
//
// kube-scheduler calls an extender only for pods that request a resource of its
// managedResources (deploy/kube-scheduler/extender-config.yaml lists this one and
// huygens.io/isolated-cpu). On a node in `allocatable` mode the agent advertises
// kExclusiveResourceCapacity of it on the Node's status, more than a node runs pods, so it never
// limits placement; a pod puts `huygens.io/exclusive: 1` in one container's limits.
//
// Thread-safety: constants.
#ifndef HUYGENS_BASE_EXTENDER_OPT_IN_H_
#define HUYGENS_BASE_EXTENDER_OPT_IN_H_

namespace huygens {

inline constexpr char kExclusiveResource[] = "huygens.io/exclusive";
inline constexpr int kExclusiveResourceCapacity = 1000;

}  // namespace huygens

#endif  // HUYGENS_BASE_EXTENDER_OPT_IN_H_
