// NodeState: one node's CPU bookkeeping: pools, per-pod assignments, per-NUMA counters.
//
// What it is: the system pool, the user pool and, inside the user pool, the exclusive CPUs
// held by containers (pod UID -> container -> cpuset, init and restartable init containers
// marked) and the shared pool (user pool minus exclusive CPUs), for one node of a given
// topology. Used by the scheduler (one per node, in memory), by the simulator and by the agent
// (its own node, checkpointed with node/checkpoint.h).
//
// Pools (DESIGN.md, "Pools on a node"):
//   - system pool: NodeConfig::system_cpus (online CPUs only).
//   - user pool: mode kAllocatable: every online CPU minus the system pool; mode kIsolated: the
//     kernel's isolated CPUs (online, minus the system pool).
//   - exclusive CPUs: the union of the cpusets of every exclusive container.
//   - shared pool: user pool minus exclusive CPUs. Shared containers run there; their CPU
//     requests (millicores) are summed, and no exclusive allocation may shrink the shared pool
//     below ceil(sum / 1000) CPUs.
//
// Invariants (kept by every mutation; a mutation that would break one changes nothing and
// returns an error; Validate() re-derives and checks them all):
//   1. system pool and user pool are disjoint sets of online CPUs;
//   2. every exclusive cpuset lies inside the user pool and is online;
//   3. exclusive cpusets of different pods are disjoint; inside one pod, containers that run at
//      the same time are disjoint (app containers and restartable init containers pairwise; a
//      regular init container and a restartable init container that precedes it). A regular
//      init container may share CPUs with containers that run after it (kubelet's reuse);
//   4. ExclusiveCpus() is the union of all exclusive cpusets; SharedPool() = UserPool() minus
//      ExclusiveCpus();
//   5. Counters() equal a recount from the CPU sets; SharedRequestedMilli() equals the sum of
//      the shared containers' requests.
//   6. DevicesFree() plus the devices every pod holds plus ForeignDevices() equals
//      NodeConfig::devices, per resource and NUMA node, and no count is negative.
//
// Init containers (matches kubelet's static policy, updateCPUsToReuse / getAssignedCPUsOfSiblings):
// the CPUs of a pod's regular init containers may be reused by the containers that follow it
// in the same pod (later init containers, restartable init containers, app containers); the
// CPUs of restartable init containers and app containers are never reused. A CPU stays held
// while any container of the pod that holds it is allocated, so releasing an init container
// frees only the CPUs no later container took over. Unlike kubelet (which lets its
// take-by-topology pick freely among free and reusable CPUs), a container that fits entirely
// in its pod's reusable CPUs is placed there first; and when kubelet's order (init containers
// first) leaves the pod holding more than kubelet's pod-level count (the largest of the init
// steps and the long-running containers) because a later container could not reuse an init
// container's CPUs (kubelet#123816), the long-running containers are placed first and each
// regular init container inside their CPUs, and the placement holding fewer CPUs is kept. So a
// pod holds more than the pod-level count only when neither order can avoid it.
//
// Thread-safety: not thread-safe; callers serialise access to one NodeState. Copies are
// independent (they share only the immutable topology) and cheap enough to use as scratch
// state for "what if" questions.
#ifndef HUYGENS_NODE_NODE_STATE_H_
#define HUYGENS_NODE_NODE_STATE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "alloc/cpu_plan.h"
#include "alloc/device_manager.h"
#include "alloc/huygens_allocator.h"
#include "alloc/memory_manager.h"
#include "alloc/pod.h"
#include "cpuset/cpuset.h"
#include "node/allocation.h"
#include "topology/topology.h"

namespace huygens {

// NodeMode, the per-container CPU plan and CpuDemandOf: alloc/cpu_plan.h.

// How a node's kubelet places memory, for NodeConfig::memory_manager.
struct MemoryManagerConfig {
  // kubelet's --memory-manager-policy. true (Static): kubelet places the memory of every
  // container of a Guaranteed pod itself (alloc/memory_manager.h, with the topology manager's
  // merge of the memory hints alone, since the CPU manager runs `none` on Huygens' nodes);
  // Huygens predicts that placement and puts the exclusive CPUs on the same NUMA nodes. false
  // (None): kubelet does not place memory; Huygens places it by the same rules on the NUMA
  // nodes of the container's exclusive CPUs. Default false.
  bool static_policy = false;
  // kubelet's --reserved-memory (NUMA id -> resource -> bytes). Default none (Static needs
  // some `memory` reserved, as kubelet does).
  ReservedMemory reserved_memory;
};

// Per-node configuration. Defaults per field as written.
struct NodeConfig {
  std::string name;                                   // node name; written into allocations
  NodeMode mode = NodeMode::kAllocatable;
  CpuSet system_cpus;                                 // the system pool; default none
  TopologyPolicy topology_policy = TopologyPolicy::kSingleNumaNode;  // when the pod sets none
  TopologyScope topology_scope = TopologyScope::kContainer;
  BindPolicy default_bind_policy = BindPolicy::kFullCores;           // when the pod sets none
  NumaStrategy numa_strategy = NumaStrategy::kMostAllocated;
  // Per-NUMA-node weight for the allocator (NUMA node id -> capacity); empty = equal.
  std::map<int, double> capacity;
  // Memory and hugepages per NUMA node (DESIGN.md, NodeResourceTopology zones). nullopt
  // (default): not modelled, a container's mems are the NUMA nodes of its CPUs. Set: the
  // memory and hugepages of Guaranteed pods are accounted per NUMA node with kubelet's memory
  // manager rules, and an exclusive container's CPUs and memory share their NUMA nodes (see
  // PlacePod in node/placement.cc).
  std::optional<MemoryManagerConfig> memory_manager;
  // NUMA-affine device-plugin resources (GPUs, SR-IOV VFs, ...): resource name -> NUMA node id
  // -> devices attached there that pods may use (a NodeResourceTopology zone's allocatable, as
  // NFD's topology-updater reports it from kubelet's podresources API). Empty (default): not
  // modelled. Set: kubelet's device manager is predicted for every pod that requests one of
  // these resources (see PlacePod), and the devices are accounted per NUMA node.
  NodeDevices devices;
};

// One NUMA node's counters, kept up to date incrementally.
struct NumaCounters {
  int numa = 0;          // NUMA node id
  int user_cpus = 0;     // user-pool CPUs on this node
  int free_cpus = 0;     // user-pool CPUs not held exclusively (the node's share of the shared pool)
  int free_cores = 0;    // cores all of whose online CPUs are in the user pool and free
  std::map<int, int> free_cpus_per_l3;  // L3 group id -> free CPUs (groups with user CPUs only)
  // Free user-pool CPUs of cores split with the system pool (some online CPUs of the core are
  // outside the user pool) of which no pod holds a thread: a pod that takes them shares its
  // core with no other pod (alloc/waste.h's unshared_threads; the allocator's packed take fills
  // them first, as kubelet's does).
  int unshared_threads = 0;

  friend bool operator==(const NumaCounters&, const NumaCounters&) = default;
};

// Who decided a pod's CPUs.
enum class Owner {
  kHuygens,  // the Huygens scheduler (huygens.io/allocation)
  kKubelet,  // kubelet's CPU manager (imported from cpu_manager_state)
};

class NodeState {
 public:
  // Builds an empty node (no pods). The topology is shared, never copied: a scheduler keeps
  // thousands of nodes of a few machine shapes.
  // Errors (InvalidArgument, naming the field): topology null; config.system_cpus holds CPUs
  // that are unknown or offline; the user pool is empty in kIsolated mode is allowed (a node
  // with no isolated CPUs simply fits nothing).
  static absl::StatusOr<NodeState> Create(std::shared_ptr<const CpuTopology> topology,
                                          NodeConfig config);

  // Places `pod` on this node (PlacePod, node/placement.h: exclusive CPUs by the pod's CPU
  // plan, memory NUMA nodes, kubelet's devices) and records it. `near_numa_nodes`: NUMA nodes of
  // the pod's affinity group, preferred. Returns the allocation (containers the plan does not
  // manage are left out). Errors (nothing changed; the message names the pod, the container
  // and the reason): AlreadyExists (uid known); InvalidArgument (empty uid, duplicate container
  // names); ResourceExhausted (not enough CPUs, no NUMA alignment under the topology policy,
  // memory or devices that do not fit, or a shared pool left below the shared requests).
  absl::StatusOr<PodAllocation> AllocatePod(const PodSpec& pod,
                                            const std::vector<int>& near_numa_nodes = {});

  // Where kubelet would put the pod's devices and, under the memory manager's Static policy,
  // its memory, were the pod admitted on this node now: AllocatePod's prediction, without
  // changing anything. Each list holds NUMA node ids over all the pod's containers, ascending.
  struct KubeletNuma {
    std::vector<int> devices;  // empty when the pod requests none of NodeConfig::devices
    std::vector<int> memory;   // empty unless kubelet (Static) places the pod's memory
    // Whether exclusive CPUs beside them leave nothing remote: the memory lies inside the
    // devices' NUMA nodes (when the pod has both).
    bool Consistent() const;
    // The NUMA nodes the exclusive CPUs must use for nothing to be remote: the devices', else
    // the memory's.
    const std::vector<int>& CpuNumaNodes() const { return devices.empty() ? memory : devices; }
  };
  // nullopt when kubelet places neither for this pod (no device requested, no Static memory).
  // Errors: ResourceExhausted when kubelet's topology manager would refuse the pod
  // (TopologyAffinityError) or its devices or memory do not fit, as AllocatePod's.
  // Thread-safety: const; safe beside other const calls.
  absl::StatusOr<std::optional<KubeletNuma>> PredictKubeletNuma(const PodSpec& pod) const;

  // Takes an allocation decided elsewhere (rebuild, the scheduler cache of another replica,
  // kubelet's checkpoint). Checks: uid matches and is new; node name matches (when the
  // allocation names one); every container exists in `pod` with the same init/restartable
  // flags; exclusive cpusets are online, in the user pool, free, and obey invariant 3.
  // Shared containers' requests are counted even when that overcommits the shared pool
  // (reality is recorded; Validate reports the overcommit). When memory is modelled, the
  // memory of a Guaranteed pod is recorded on each container's mems
  // (MemoryManagerPolicy::Restore); memory never refuses an Assume (reality is recorded).
  // Errors: InvalidArgument / AlreadyExists / FailedPrecondition (conflict), naming the CPUs;
  // nothing changed.
  absl::Status Assume(const PodSpec& pod, const PodAllocation& allocation,
                      Owner owner = Owner::kHuygens);

  // Releases every CPU of the pod (and its memory and devices). NotFound when the pod is unknown.
  absl::Status ReleasePod(const std::string& pod_uid);

  // Replaces a running pod's allocation in one step (the rebalancer's move of a pod to other
  // CPUs, rebalance/planner.h; a move another scheduler replica made): the pod keeps its spec
  // and owner, its old CPUs and memory are released and `allocation` is taken with Assume's
  // checks, so its exclusive CPUs must be free or the pod's own; it keeps its devices (a move
  // never changes them). Errors: NotFound (pod unknown);
  // Assume's errors, with the old allocation kept (nothing changed).
  absl::Status ReplaceAllocation(const std::string& pod_uid, const PodAllocation& allocation);

  // Releases one container: its CPUs go back to the shared pool unless another container of the
  // pod still holds them (kubelet's getAssignedCPUsOfSiblings); a shared container's request
  // stops counting. The pod is forgotten when its last container goes, and its devices are
  // freed then. NotFound when unknown.
  absl::Status ReleaseContainer(const std::string& pod_uid, const std::string& container);

  // Resizes an exclusive container in place to `num_cpus` (kubelet's in-place resize of a
  // Guaranteed pod, KEP-5554): ExclusiveAllocator::Resize over the shared pool with the pod's
  // policies. Growing keeps every CPU it has and adds CPUs on the container's NUMA nodes (other
  // NUMA nodes only under topology policy none/best-effort); shrinking keeps a packed subset of
  // its CPUs (take-by-topology over its own CPUs) and frees the rest. The pod's recorded spec is
  // not changed. Returns the new cpuset. Errors: NotFound; FailedPrecondition (shared container,
  // kubelet-owned pod, the bind policy full-cores and a count that is not whole cores);
  // InvalidArgument (num_cpus < 1); ResourceExhausted (not enough free CPUs, or the shared pool
  // would drop below the shared requests). Nothing changed on error.
  absl::StatusOr<CpuSet> ResizeContainer(const std::string& pod_uid,
                                         const std::string& container, int num_cpus);

  // Replaces the whole state by the given pods (e.g. from every pod's huygens.io/allocation
  // on this node): CPUs, and devices and memory as Assume restores them (devices held for
  // other schedulers' pods, HoldForeignDevices, stay held). A pod whose entry is malformed
  // (Assume's checks) is rejected with the reason; pods that claim one CPU are ALL rejected
  // (there is no telling which is right), each naming the other pods and the CPUs; duplicate
  // uids are all rejected. The rest is rebuilt. The result does not depend on the order of
  // `pods`.
  struct RebuildReport {
    int rebuilt = 0;
    std::vector<std::pair<std::string, std::string>> rejected;  // pod uid, reason
  };
  RebuildReport Rebuild(const std::vector<std::pair<PodSpec, PodAllocation>>& pods);

  // Every violated invariant (see the file comment), one line each with the CPUs involved,
  // e.g. "pods a and b both hold cpus 4-5"; plus a shared pool smaller than the shared
  // requests. Empty when clean.
  std::vector<std::string> Validate() const;

  // ---- Pools and counters -------------------------------------------------------------------
  const CpuTopology& Topology() const { return *topology_; }
  const std::shared_ptr<const CpuTopology>& SharedTopology() const { return topology_; }
  // Huygens' allocator indexed for this node's topology (shared by every NodeState of the same
  // topology object), for callers that place CPUs on this node themselves (the rebalancer).
  const ExclusiveAllocator& Allocator() const;
  const NodeConfig& Config() const { return config_; }
  CpuSet SystemPool() const { return system_pool_; }
  CpuSet UserPool() const { return user_pool_; }
  CpuSet ExclusiveCpus() const { return exclusive_; }
  CpuSet SharedPool() const { return user_pool_.Difference(exclusive_); }
  // One entry per NUMA node of the topology (ascending id), CPU-less nodes included.
  const std::vector<NumaCounters>& Counters() const { return counters_; }
  int64_t SharedRequestedMilli() const { return shared_milli_; }
  // CPUs the shared containers need: ceil(SharedRequestedMilli() / 1000).
  int SharedCpusNeeded() const;
  // Exclusive CPUs a new allocation may still take: SharedPool().Size() - SharedCpusNeeded()
  // (may be negative when Assume recorded an overcommit).
  int FreeForExclusive() const;
  const std::map<std::string, PodAllocation>& Pods() const { return pods_; }
  // The spec a pod was allocated or assumed with; nullptr when unknown.
  const PodSpec* SpecOf(const std::string& pod_uid) const;
  // The memory manager state (per NUMA node and resource: allocatable, reserved, free; per
  // container: blocks); nullptr when memory is not modelled (NodeConfig::memory_manager unset).
  const MemoryManagerState* Memory() const {
    return memory_policy_ ? &memory_ : nullptr;
  }
  // The memory manager policy (reserved memory, hint rules); nullptr when not modelled.
  const MemoryManagerPolicy* MemoryPolicy() const { return memory_policy_.get(); }
  // Devices not held by any pod, per resource and NUMA node (NodeConfig::devices minus what
  // pods hold; a resource the config lists is present even with no free device).
  const NodeDevices& DevicesFree() const { return devices_free_; }
  // The devices a pod holds, per resource and NUMA node; empty when none or unknown.
  NodeDevices DevicesOf(const std::string& pod_uid) const;
  // Devices held by pods this state does not account (pods of another scheduler, or admitted
  // by kubelet alone: a NodeResourceTopology zone reports them in use, no pod here holds them),
  // per resource and NUMA node. Replaces the previous figure: those devices are returned first,
  // then each count is taken from DevicesFree(), clamped to what is free there; a resource or
  // NUMA node NodeConfig::devices lacks, and a count <= 0, is ignored. They stay out of
  // DevicesFree() until the next call (a pod released later returns only its own devices).
  // Returns ForeignDevices().
  const NodeDevices& HoldForeignDevices(const NodeDevices& devices);
  // The devices HoldForeignDevices holds (only counts > 0).
  const NodeDevices& ForeignDevices() const { return foreign_devices_; }
  // Who decided the pod's CPUs; kHuygens when unknown.
  Owner OwnerOf(const std::string& pod_uid) const;

 private:
  friend class NodeStateTestPeer;  // tests corrupt a state to exercise Validate

  // Per machine shape, shared by every NodeState of one topology (node_state.cc): the
  // allocator's index and the lookup tables the counters use.
  struct Shape;
  // The Shape of `topology`, from a process-wide cache (thread-safe).
  static std::shared_ptr<const Shape> ShapeFor(const std::shared_ptr<const CpuTopology>& topology);

  struct PodRecord {
    PodSpec spec;
    CpuSet held;               // union of the pod's exclusive cpusets
    int64_t shared_milli = 0;  // requests of its shared containers
    Owner owner = Owner::kHuygens;
    NodeDevices devices;       // devices held (NodeConfig::devices), per resource and NUMA node
  };

  NodeState(std::shared_ptr<const CpuTopology> topology, std::shared_ptr<const Shape> shape,
            NodeConfig config, CpuSet system_pool, CpuSet user_pool);

  // Checks an allocation against the pools, the free CPUs, invariant 3 and, for kHuygens, the
  // pod's request (each exclusive cpuset exactly the CPUs PlanContainer gives the container);
  // OK or the reason (InvalidArgument or FailedPrecondition naming the pod and the container).
  absl::Status CheckAssumable(const PodSpec& pod, const PodAllocation& allocation, Owner owner) const;
  // Records the memory of an assumed Guaranteed pod from its containers' mems (no checks).
  void RestoreMemory(const PodSpec& pod, const PodAllocation& allocation);
  // Takes the devices of an assumed pod from its containers' NUMA nodes (see Assume).
  void RestoreDevices(const PodSpec& pod, const PodAllocation& allocation);
  // Records a checked allocation (no checks).
  void Commit(const PodSpec& pod, PodAllocation allocation, Owner owner);
  // Marks `cpus` held / free and updates the counters incrementally.
  void Take(const CpuSet& cpus);
  void Give(const CpuSet& cpus);
  void AdjustCounters(const CpuSet& cpus, int delta);
  // Counters and per-core free counts from scratch (all of `free` free).
  void ResetCounters();
  // A core's NumaCounters::unshared_threads: its user-pool CPUs when the core is split with
  // CPUs outside the user pool and all of them are free, else 0.
  int UnsharedThreads(size_t core) const;
  std::vector<NumaCounters> Recount() const;
  // The pods (other than `except`) holding any of `cpus`, for messages.
  std::vector<std::string> HoldersOf(const CpuSet& cpus, const std::string& except) const;

  std::shared_ptr<const CpuTopology> topology_;
  std::shared_ptr<const Shape> shape_;
  NodeConfig config_;
  CpuSet system_pool_;
  CpuSet user_pool_;
  CpuSet exclusive_;
  int64_t shared_milli_ = 0;
  std::map<std::string, PodAllocation> pods_;
  std::map<std::string, PodRecord> records_;
  std::vector<NumaCounters> counters_;
  std::vector<int> core_free_;  // core id -> free user-pool CPUs of that core
  // core id -> user-pool CPUs of that core; follows from the pools, fixed after construction,
  // so copies share it.
  std::shared_ptr<const std::vector<int>> core_user_;
  // Memory (NodeConfig::memory_manager set): the policy and the state it keeps.
  std::shared_ptr<const MemoryManagerPolicy> memory_policy_;
  MemoryManagerState memory_;
  // Devices (NodeConfig::devices): the free ones, and those held by pods not accounted here.
  NodeDevices devices_free_;
  NodeDevices foreign_devices_;
};

}  // namespace huygens

#endif  // HUYGENS_NODE_NODE_STATE_H_
