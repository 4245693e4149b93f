// The huygens.io/* names on the wire: annotation keys, the extended resource and the zone
// attribute that Huygens' components agree on (DESIGN.md, "Contracts on the wire"). Every
// component names them from here, so a key is written once.
//
// Thread-safety: constants.
#ifndef HUYGENS_BASE_WIRE_NAMES_H_
#define HUYGENS_BASE_WIRE_NAMES_H_

namespace huygens {

// Pod annotations set by the user (all optional; the pod codec, kube/pod_codec.h, reads them).
inline constexpr char kCpuPolicyAnnotation[] = "huygens.io/cpu-policy";
inline constexpr char kTopologyPolicyAnnotation[] = "huygens.io/topology-policy";
inline constexpr char kBindPolicyAnnotation[] = "huygens.io/bind-policy";
inline constexpr char kAffinityGroupAnnotation[] = "huygens.io/affinity-group";
// "false": the rebalancer never moves the pod's CPUs (rebalance/planner.h); "true" (the
// default when absent) lets it.
inline constexpr char kRebalanceAnnotation[] = "huygens.io/rebalance";

// Pod annotation set by the scheduler before binding (JSON, node/allocation.h).
inline constexpr char kAllocationAnnotation[] = "huygens.io/allocation";
// Pod annotation a scheduler that starts leading writes on every pending pod before it binds
// anything (plain text: a token of that term). The write moves the pod's resourceVersion, so a
// Binding the previous leader still has on the wire (it carries the older resourceVersion as a
// precondition) is refused by the apiserver (scheduler/scheduling_loop.h).
inline constexpr char kSchedulerFenceAnnotation[] = "huygens.io/scheduler-fence";
// Pod annotation set by the agent (JSON, agent/status.h).
inline constexpr char kAllocationStatusAnnotation[] = "huygens.io/allocation-status";

// The extended resource of a node in `isolated` mode: its user pool's CPU count, which pods
// request instead of `cpu` (whole CPUs).
inline constexpr char kIsolatedCpuResource[] = "huygens.io/isolated-cpu";

// NodeResourceTopology annotations with the exact CPU layout and the pools (topology/nrt.h).
inline constexpr char kCpuTopologyAnnotation[] = "huygens.io/cpu-topology";
inline constexpr char kPoolsAnnotation[] = "huygens.io/pools";
// NodeResourceTopology annotation with the observed affinity of the node's pods: the pairs of
// local pods that talk to each other over TCP and their traffic rate (JSON, topology/
// pod_traffic.h). Written by the agent, rate-limited; read by the scheduler.
inline constexpr char kPodTrafficAnnotation[] = "huygens.io/pod-traffic";

// NodeResourceTopology annotation with the agent's heartbeat: a metav1.MicroTime the agent
// renews at least once per heartbeat interval (agent/publisher.h). The scheduler judges
// silence by when it last saw the value change, on its own clock, never by the value.
inline constexpr char kAgentHeartbeatAnnotation[] = "huygens.io/agent-heartbeat";

// Zone attribute with a NUMA node's capacity factor in (0, 1] (decimal text, e.g. "0.75";
// absent = 1): the share of its free CPUs new exclusive requests may use (a NUMA node whose CPUs
// are shared with other VMs on the host). Written by the agent, honoured by the scheduler.
inline constexpr char kCapacityFactorAttribute[] = "huygens.io/capacity-factor";
// NodeResourceTopology object attribute: kubelet's --memory-manager-policy ("None" | "Static"),
// named like the topologyManagerPolicy attribute it sits beside.
inline constexpr char kMemoryManagerPolicyAttribute[] = "memoryManagerPolicy";

}  // namespace huygens

#endif  // HUYGENS_BASE_WIRE_NAMES_H_
