// Node: the scheduler's view of one Kubernetes node.
//
// What it is: the node object's fields kube-scheduler's default plugins read (name, labels,
// taints, spec.unschedulable, status.allocatable) plus Huygens' per-node CPU state (NodeState,
// from node/node_state.h: topology, pools, mode, topology policy and scope, exclusive
// assignments, per-NUMA counters, and the node's defaults: topology policy and scope, bind
// policy, NUMA strategy (pack = most-allocated, spread = least-allocated) in its NodeConfig).
//
// Invariants: `name` is non-empty and unique in a cluster. `cpu_state`, when set, describes
// the same machine the node's allocatable counts come from. A node without `cpu_state` is
// NUMA-blind: the Huygens plugins let every pod through and Reserve computes no cpusets (this
// is how the stock-scheduler baseline sees every node).
//
// Thread-safety: plain data; the NodeState is shared read-only (copy-on-assume happens in
// ClusterCache, which owns its own copy).
#ifndef HUYGENS_SCHED_NODE_H_
#define HUYGENS_SCHED_NODE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sched/node_topology.h"
#include "sched/pod.h"

namespace huygens {
class NodeState;
}

namespace huygens::sched {

// core/v1 Taint.
struct Taint {
  std::string key;
  std::string value;
  TaintEffect effect = TaintEffect::kNoSchedule;

  friend bool operator==(const Taint&, const Taint&) = default;
};

// status.allocatable. cpu in millicores, memory in bytes.
struct NodeAllocatable {
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  int64_t pods = 110;  // kubelet's default maxPods
  // Extended resources, including huygens.io/isolated-cpu in `isolated` mode (whole CPUs).
  std::map<std::string, int64_t> extended;

  friend bool operator==(const NodeAllocatable&, const NodeAllocatable&) = default;
};

struct Node {
  std::string name;
  std::map<std::string, std::string> labels;
  std::vector<Taint> taints;
  bool unschedulable = false;  // spec.unschedulable (kubectl cordon)
  NodeAllocatable allocatable;
  // Huygens' CPU state of the node; nullptr = NUMA-blind (see the file comment). The cache
  // copies it on AddNode/UpdateNode, so callers may share one immutable initial state between
  // nodes of the same shape.
  std::shared_ptr<const NodeState> cpu_state;
  // The node's NodeResourceTopology as scheduler-plugins' NodeResourceTopologyMatch reads it;
  // nullptr = the node has none (that plugin then lets every pod through). Replaced by
  // ClusterCache::UpdateNode whenever the object changes.
  std::shared_ptr<const NodeTopology> nrt;
  // The node's Huygens agent has stopped reporting (scheduler/cache_sync.h, "agent
  // heartbeat"): nothing would pin new exclusive CPUs there, so NumaFit refuses pods that ask
  // for them. Always false in the simulator.
  bool agent_silent = false;
  // status.images: every name an image is known by on the node -> the image's size in bytes
  // (each name of an image carries its size). What ImageLocality scores.
  std::map<std::string, int64_t> images;
};

}  // namespace huygens::sched

#endif  // HUYGENS_SCHED_NODE_H_
