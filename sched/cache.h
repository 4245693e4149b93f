// ClusterCache: the scheduler's in-memory picture of the cluster.
//
// What it is: every node (by name) with, per node, the sum of the requests of the pods on it,
// its pods, the host ports in use, and its own copy of the node's CPU state (NodeState: pools,
// exclusive assignments, per-NUMA counters). Pods are either bound (AddPod: seen bound in the
// API, with their huygens.io/allocation) or assumed (AssumePod: chosen by the scheduler at
// Reserve, before binding). This mirrors kube-scheduler's cache (pkg/scheduler/backend/cache):
// an assumed pod counts exactly like a bound one, ForgetPod undoes an assume, FinishBinding
// marks the bind as sent, and AddPod of an assumed pod confirms it.
//
// Invariants (kept by every operation, or the operation changes nothing and returns an error):
//   - a pod uid is on at most one node; each node's requested resources, pod count, ports and
//     CPU state equal the sum over exactly the pods the cache lists on it;
//   - no two pods hold one exclusive CPU (NodeState enforces it; an allocation that would break
//     it is rejected with FailedPrecondition naming the pod and the CPUs);
//   - Generation() increases on every change, and NodeInfo::generation is the cache generation
//     of the node's last change, so a caller can keep a snapshot and refresh only what moved.
//
// Errors: NotFound / AlreadyExists naming the node or pod uid; FailedPrecondition when an
// allocation does not fit the node's CPU state.
//
// Thread-safety: not thread-safe; one scheduler thread owns the cache (the service serialises
// informer events onto that thread).
#ifndef HUYGENS_SCHED_CACHE_H_
#define HUYGENS_SCHED_CACHE_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "node/allocation.h"
#include "node/node_state.h"
#include "sched/node.h"
#include "sched/pod.h"

namespace huygens::sched {

// One host port in use on a node, with the number of pods using it (several pods may hold
// the same port when their host IPs differ).
struct UsedPort {
  HostPort port;
  int count = 0;
};

// The hot, compact part of a node the filters and scores read on every attempt, kept first in
// NodeInfo so that judging a node touches two or three cache lines of memory laid out in
// node order. Derived from the rest of NodeInfo by the cache on every change.
struct NodeSummary {
  static constexpr int kInlineNuma = 8;
  // 8 bytes: a node whose NUMA ids or unshared threads exceed int8 is not held inline.
  struct Numa {
    int16_t user = 0;             // NumaCounters::user_cpus
    int16_t free = 0;             // NumaCounters::free_cpus
    int16_t free_cores = 0;       // NumaCounters::free_cores
    int8_t numa = 0;              // NUMA node id
    int8_t unshared_threads = 0;  // NumaCounters::unshared_threads
  };
  static_assert(sizeof(Numa) == 8);
  int64_t cpu_allocatable_milli = 0;
  int64_t cpu_requested_milli = 0;
  int64_t memory_allocatable_bytes = 0;
  int64_t memory_requested_bytes = 0;
  int64_t isolated_allocatable = 0;  // huygens.io/isolated-cpu
  int64_t isolated_requested = 0;
  int32_t pods = 0;
  int32_t max_pods = 0;
  bool unschedulable = false;
  bool hard_taints = false;     // any NoSchedule / NoExecute taint
  bool prefer_taints = false;   // any PreferNoSchedule taint
  bool ports_in_use = false;
  // CPU state (has_cpu_state false: NUMA-blind; the rest is then unset).
  bool has_cpu_state = false;
  // NUMA figures below hold every NUMA node with user CPUs (false: more than kInlineNuma such
  // nodes, or capacity factors are set; read the NodeState instead).
  bool numa_inline = false;
  NodeMode mode = NodeMode::kAllocatable;
  TopologyPolicy topology_policy = TopologyPolicy::kSingleNumaNode;
  TopologyScope topology_scope = TopologyScope::kContainer;
  BindPolicy default_bind_policy = BindPolicy::kFullCores;
  NumaStrategy numa_strategy = NumaStrategy::kMostAllocated;
  int8_t num_numa = 0;
  int16_t threads_per_core = 1;
  int64_t shared_requested_milli = 0;  // NodeState::SharedRequestedMilli()
  Numa numa[kInlineNuma];
};

// Per-node aggregate the filters read. Owned by the cache; pointers stay valid until the node
// is removed.
struct NodeInfo {
  uint64_t generation = 0;  // cache generation of this node's last change
  int index = 0;            // position in ClusterCache::Nodes()
  NodeSummary summary;      // next: see NodeSummary
  Node node;
  // The cache's own CPU state of the node; nullptr for a NUMA-blind node.
  std::unique_ptr<NodeState> cpu_state;
  PodRequests requested;                              // sum of the pods' PodRequests
  std::map<std::string, int64_t> requested_extended;  // sum of Pod::extended_requests
  std::vector<std::string> pod_uids;                  // bound and assumed pods, in arrival order
  std::vector<UsedPort> used_ports;
  // Per NUMA node with user CPUs: its user CPUs and what it offers a request of the node's
  // default bind policy (NumaOfferFromCounts, with the node's capacity factors), as counted in
  // ClusterCache::NumaSlots and LargestNumaNode; empty for a NUMA-blind node.
  struct NumaCapacity {
    int user_cpus = 0;
    int offer = 0;
  };
  std::vector<NumaCapacity> numa_capacity;
  // The pods above with any inter-pod affinity or anti-affinity term (kube-scheduler's
  // PodsWithAffinity), and those with a required anti-affinity term (its
  // PodsWithRequiredAntiAffinity), in arrival order; InterPodAffinity reads them.
  std::vector<const Pod*> pods_with_affinity;
  std::vector<const Pod*> pods_with_required_anti_affinity;

  int NumPods() const { return static_cast<int>(pod_uids.size()); }
};

// Where the members of one affinity group run: node -> NUMA node id -> members holding
// exclusive CPUs there (NUMA id -1 counts members on the node without exclusive CPUs). Kept by
// the cache for NumaScore and NumaReserve.
using AffinityGroupPlacement = absl::flat_hash_map<const NodeInfo*, std::map<int, int>>;

// The NUMA nodes of `node` that hold the most members of the group placed as `placement`
// (ascending; several on a tie); empty when no member holds exclusive CPUs on the node.
// NumaReserve prefers them for a new member, so a group split over NUMA nodes gathers on its
// largest part rather than spreading over all of them. (NumaScore still rates a node by any
// NUMA node with members: rating by the largest part only made the built-in example worse,
// 23.3% of co-located members aligned against 29.4%.)
std::vector<int> GroupNumaNodes(const AffinityGroupPlacement& placement, const NodeInfo& node);

class ClusterCache {
 public:
  ClusterCache() = default;
  ClusterCache(const ClusterCache&) = delete;
  ClusterCache& operator=(const ClusterCache&) = delete;

  // ---- Nodes ---------------------------------------------------------------------------
  // Adds a node with no pods; its CPU state is copied from node.cpu_state.
  // Errors: AlreadyExists; InvalidArgument for an empty name.
  absl::Status AddNode(Node node);
  // Replaces the node's metadata (labels, taints, unschedulable, allocatable, NUMA strategy, NRT);
  // pods and the CPU state are kept (a machine whose topology changed is removed and added).
  // Errors: NotFound.
  absl::Status UpdateNode(Node node);
  // Removes the node and every pod on it (bound or assumed). Errors: NotFound.
  absl::Status RemoveNode(std::string_view name);

  // ---- Pods ------------------------------------------------------------------------------
  // A pod seen bound to `node` in the API, with its allocation (huygens.io/allocation) when it
  // has one; the allocation is applied to the node's CPU state (NodeState::Assume). If the pod
  // is assumed on the same node with the same allocation, this confirms the assume
  // (kube-scheduler's AddPod after assume); if assumed elsewhere or with another allocation,
  // the assume is dropped first and the bound allocation counts (on an error, neither does).
  // Errors: NotFound (node); AlreadyExists (already bound); FailedPrecondition (allocation
  // conflicts with the node's state).
  absl::Status AddPod(PodPtr pod, std::string_view node,
                      std::optional<PodAllocation> allocation);
  // Removes a bound or assumed pod and frees its CPUs, ports and requests. Errors: NotFound.
  absl::Status RemovePod(std::string_view uid);
  // Counts `pod` on `node` before it is bound, with the allocation Reserve computed; the
  // allocation is applied to the node's CPU state unless `allocation_applied` (Reserve computed
  // it with NodeState::AllocatePod on MutableCpuState(), which already recorded it).
  // Errors: as AddPod.
  absl::Status AssumePod(PodPtr pod, std::string_view node,
                         std::optional<PodAllocation> allocation, bool allocation_applied);
  // Undoes AssumePod (Unreserve, or a failed bind). Errors: NotFound; FailedPrecondition when
  // the pod is bound, not assumed.
  absl::Status ForgetPod(std::string_view uid);
  // In-place resize of one exclusive container of a bound or assumed pod to `num_cpus` CPUs
  // (NodeState::ResizeContainer: its CPUs are kept, the change is added or returned on its
  // NUMA nodes where possible). On success the pod's spec asks for num_cpus CPUs in that
  // container (cpu request and limit in allocatable mode, huygens.io/isolated-cpu in isolated
  // mode), the node's requests, the pod's allocation and its affinity-group placement follow,
  // and the node's generation changes. Returns the container's new cpuset.
  // Errors (nothing changed): NotFound (pod unknown); FailedPrecondition (a NUMA-blind node,
  // or NodeState's own refusals); NodeState's InvalidArgument / ResourceExhausted.
  absl::StatusOr<CpuSet> ResizeContainer(std::string_view uid, std::string_view container,
                                         int num_cpus);
  // Moves a bound pod with an allocation to `allocation` on its node (the rebalancer's move,
  // rebalance/planner.h, or one another replica made): NodeState::ReplaceAllocation, then the
  // pod's allocation and affinity-group placement follow and the node's generation changes.
  // Errors (nothing changed): NotFound (pod unknown); FailedPrecondition (assumed, not bound;
  // no allocation; a NUMA-blind node; allocation.node names another node); ReplaceAllocation's.
  absl::Status MovePod(std::string_view uid, const PodAllocation& allocation);
  // Records that the bind was sent for an assumed pod (kube-scheduler's FinishBinding). The
  // pod stays counted until AddPod confirms it or ForgetPod / RemovePod drops it.
  absl::Status FinishBinding(std::string_view uid);

  // ---- Reading ---------------------------------------------------------------------------
  // Every node, in a stable order (removal moves the last node into the hole).
  const std::vector<NodeInfo*>& Nodes() const { return order_; }
  // NodeGenerations()[i] == Nodes()[i]->generation, in one dense array, so that a scan over
  // many nodes (the scheduler's equivalence cache) can tell which changed without touching
  // their NodeInfo. A value names one node and one version of it: every change (AddNode
  // included) takes a fresh cache generation, so no two nodes ever share one.
  const std::vector<uint64_t>& NodeGenerations() const { return generations_; }
  const NodeInfo* FindNode(std::string_view name) const;
  // The node's CPU state for Reserve to allocate in; nullptr when unknown or NUMA-blind.
  NodeState* MutableCpuState(std::string_view name);
  // Devices on node `name` held by pods the cache does not know (another scheduler's), kept
  // out of the node's free devices (NodeState::HoldForeignDevices, which replaces the previous
  // figure and clamps it to the free devices); the node's generation changes. Returns what is
  // held. Errors: NotFound (node); FailedPrecondition (a NUMA-blind node).
  absl::StatusOr<NodeDevices> HoldForeignDevices(std::string_view name, const NodeDevices& devices);

  struct PodEntry {
    PodPtr pod;
    std::string node;
    std::optional<PodAllocation> allocation;
    bool assumed = false;         // true until AddPod confirms
    bool binding_finished = false;
  };
  const PodEntry* FindPod(std::string_view uid) const;
  int NumPods() const { return static_cast<int>(pods_.size()); }

  // Members of an affinity group per node and NUMA node; nullptr when the group has none.
  const AffinityGroupPlacement* AffinityGroup(std::string_view group) const;

  // The cached pods holding exclusive CPUs, by size: number of exclusive CPUs -> pods (bound
  // and assumed, from their allocations; sizes with no pod are absent). NumaScore reads the
  // largest size to judge whether the cluster still has room for pods of that size.
  const std::map<int, int>& ExclusiveSizes() const { return exclusive_sizes_; }

  // How many more pods of `cpus` (> 0) exclusive CPUs the NUMA-aware nodes could take, each on
  // one NUMA node: the sum over their NUMA nodes with user CPUs of floor(offer / cpus), each
  // offer being what the NUMA node offers a request of its node's default bind policy
  // (NodeInfo::numa_capacity; equal to sched/numa_view.h's NumaView offers). Kept up to date
  // on every change; O(distinct offers) per call, whatever the number of nodes. NumaScore asks
  // it whether the cluster has room for its largest exclusive pods. 0 when cpus <= 0.
  int64_t NumaSlots(int cpus) const;
  // The most user-pool CPUs of any NUMA node of a NUMA-aware node (0 when there is none): an
  // exclusive request above it fits no NUMA node of the cluster. O(1).
  int LargestNumaNode() const;

  // The nodes whose pods_with_affinity is not empty, in no particular order: what
  // InterPodAffinity scans for existing pods' terms, so that a cluster without such pods costs
  // it nothing per attempt.
  const std::vector<const NodeInfo*>& NodesWithPodAffinity() const { return nodes_with_affinity_; }

  // ---- Images ----------------------------------------------------------------------------
  // The number of nodes whose Node::images name `image` (kube-scheduler's image existence
  // map); 0 for an image no node has.
  int NodesWithImage(std::string_view image) const;
  // Changes whenever what NodesWithImage or the number of nodes answer may have changed (a
  // node added or removed, a node's images updated): the part of ImageLocality's score that
  // no single node's generation covers.
  uint64_t ImageGeneration() const { return image_generation_; }

  // ---- Namespaces ------------------------------------------------------------------------
  // The labels of namespace `name`, for inter-pod affinity's namespaceSelector; replaces what
  // was set before. Generation() changes, no node's generation does.
  void SetNamespaceLabels(std::string name, Labels labels);
  // Forgets namespace `name` (nothing when unknown).
  void RemoveNamespace(std::string_view name);
  // The labels set for namespace `name`; nullptr when the cache was never told of it.
  const Labels* NamespaceLabels(std::string_view name) const;

  uint64_t Generation() const { return generation_; }

 private:
  absl::Status Place(PodPtr pod, NodeInfo& info, std::optional<PodAllocation> allocation,
                     bool allocation_applied, bool assumed);
  void Unplace(PodEntry& entry, NodeInfo& info);
  // Adds `delta` to the pod's requests on `info`.
  static void CountRequests(const Pod& pod, NodeInfo& info, int delta);
  // Adds `delta` to the affinity-group placement of a pod with `allocation` on `info`.
  void CountGroup(const Pod& pod, const std::optional<PodAllocation>& allocation,
                  NodeInfo& info, int delta);
  // Adds (delta +1) or removes (-1) `pod` in info's inter-pod affinity lists and keeps
  // nodes_with_affinity_ in step.
  void CountPodAffinity(const Pod& pod, NodeInfo& info, int delta);
  // Adds `delta` to ExclusiveSizes() for a pod with `allocation`.
  void CountExclusive(const std::optional<PodAllocation>& allocation, int delta);
  void Touch(NodeInfo& info);
  // Adds `delta` (+1 or -1) to numa_offers_ and numa_sizes_ for each of info.numa_capacity.
  void CountOffers(const NodeInfo& info, int delta);
  // Adds `delta` (+1 or -1) to image_nodes_ for each image name of `node`.
  void CountImages(const Node& node, int delta);

  // Node storage: a deque keeps addresses stable and neighbours close in memory; slots of
  // removed nodes are reused by later AddNode calls.
  std::deque<NodeInfo> slots_;
  std::vector<NodeInfo*> free_slots_;
  std::vector<NodeInfo*> order_;
  std::vector<uint64_t> generations_;  // by node index, see NodeGenerations()
  absl::flat_hash_map<std::string, NodeInfo*> by_name_;
  absl::flat_hash_map<std::string, PodEntry> pods_;
  absl::flat_hash_map<std::string, AffinityGroupPlacement> groups_;
  std::map<int, int> exclusive_sizes_;
  std::vector<const NodeInfo*> nodes_with_affinity_;  // see NodesWithPodAffinity
  absl::flat_hash_map<std::string, Labels> namespace_labels_;
  std::map<int, int64_t> numa_offers_;  // offer (> 0) -> NUMA nodes offering it, see NumaSlots
  std::map<int, int64_t> numa_sizes_;   // user CPUs -> NUMA nodes that size, see LargestNumaNode
  absl::flat_hash_map<std::string, int> image_nodes_;  // image name -> nodes, see NodesWithImage
  uint64_t image_generation_ = 0;
  uint64_t generation_ = 0;
};

}  // namespace huygens::sched

#endif  // HUYGENS_SCHED_CACHE_H_
