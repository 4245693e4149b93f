// The scheduling framework: extension points, plugin interfaces, Status and CycleState.
//
// What it is: kube-scheduler's scheduling framework (pkg/scheduler/framework) reduced to what
// Huygens needs, with the same extension points and the same meaning:
//   PreFilter  once per pod; may reject the pod outright (every node gets its status);
//   Filter     per node; the first failing plugin decides the node's status (kube-scheduler
//              stops at the first failure too), cheap plugins run first;
//   PostFilter once, when no node passed (kube-scheduler's preemption point); it sees the
//              per-reason diagnosis and may nominate a node;
//   PreScore   once over the feasible nodes; Score per feasible node (0..kMaxNodeScore), then
//              NormalizeScore over all of them, then the profile's weight;
//   Reserve    on the chosen node (Huygens computes the exact cpusets here and assumes them);
//              Unreserve undoes every Reserve in reverse order when a later step fails, in
//              either cycle;
//   Bind       the binding cycle: writes the decision (the simulator binds in the cache; the
//              service posts the Binding, which carries huygens.io/allocation). It may run on
//              another thread than the scheduling cycle, so it sees only the ReservedPod.
//
// Plugins hold configuration and may keep per-pod scratch data in CycleState; nothing a
// plugin remembers across pods may change its answers except through the ClusterCache.
//
// Thread-safety: a plugin instance and a CycleState belong to one scheduler thread (Bind
// excepted: see BindPlugin).
#ifndef HUYGENS_SCHED_FRAMEWORK_H_
#define HUYGENS_SCHED_FRAMEWORK_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "alloc/pod.h"
#include "node/allocation.h"
#include "node/node_state.h"
#include "sched/cache.h"
#include "sched/pod.h"

namespace huygens::sched {

// kube-scheduler's framework.Code, the subset Huygens uses.
enum class Code {
  kSuccess,
  kUnschedulable,                 // the node does not fit now; may fit after a cluster change
  kUnschedulableAndUnresolvable,  // the node can never fit this pod (selector, name, taint)
  kError,                         // a broken invariant or failed call; the attempt fails
  // Bind only (Huygens' own): the write failed in a way that may still have landed (its answer
  // was lost). Scheduler::FinishBinding keeps the reservation, so its CPUs are not handed to
  // another pod meanwhile, and the caller binds the same decision again. kube-scheduler
  // forgets the pod here and relies on its informer.
  kUnconfirmed,
};

// The outcome of one plugin call: a code and human-readable reasons (kube-scheduler's
// Status.Reasons; the FitError message counts nodes per reason).
class Status {
 public:
  Status() = default;  // success
  static Status Success() { return Status(); }
  static Status Unschedulable(std::string reason) {
    return Status(Code::kUnschedulable, std::move(reason));
  }
  static Status Unresolvable(std::string reason) {
    return Status(Code::kUnschedulableAndUnresolvable, std::move(reason));
  }
  static Status Error(std::string reason) { return Status(Code::kError, std::move(reason)); }
  static Status Unconfirmed(std::string reason) { return Status(Code::kUnconfirmed, std::move(reason)); }

  Code code() const { return code_; }
  bool ok() const { return code_ == Code::kSuccess; }
  bool IsRejection() const {
    return code_ == Code::kUnschedulable || code_ == Code::kUnschedulableAndUnresolvable;
  }
  std::span<const std::string> reasons() const { return reasons_; }
  void AddReason(std::string reason) { reasons_.push_back(std::move(reason)); }
  // The reasons joined with ", " (kube-scheduler's Status.Message).
  std::string Message() const;

 private:
  Status(Code code, std::string reason) : code_(code) { reasons_.push_back(std::move(reason)); }
  Code code_ = Code::kSuccess;
  absl::InlinedVector<std::string, 1> reasons_;
};

// One exclusive container of the pod, in kubelet's admission order (init containers first,
// then app containers): how many exclusive CPUs it takes on a node of each mode.
struct ExclusiveUnit {
  int cpus_allocatable = 0;  // node mode kAllocatable (kubelet's guaranteedCPUs rule)
  int cpus_isolated = 0;     // node mode kIsolated (huygens.io/isolated-cpu)
  bool init = false;         // a regular (non-restartable) init container: its CPUs are reused
};

// What the scheduler computes once per pod before the plugins run; read by every plugin.
struct PodFacts {
  PodRequests requests;  // ComputePodRequests(pod)
  QosClass qos = QosClass::kBestEffort;
  CpuPolicy cpu_policy = CpuPolicy::kShared;  // EffectiveCpuPolicy
  // NodeState's view of the pod (CpuDemandOf) on a node of each mode.
  CpuDemand demand_allocatable;
  CpuDemand demand_isolated;
  // Containers with exclusive CPUs on some mode, in admission order. Scratch reused across
  // pods (cleared, not freed).
  std::vector<ExclusiveUnit> units;

  const CpuDemand& Demand(NodeMode mode) const {
    return mode == NodeMode::kIsolated ? demand_isolated : demand_allocatable;
  }
};

// Fills `facts` for `pod` (reusing its buffers). The scheduler calls it once per attempt.
void ComputePodFacts(const Pod& pod, PodFacts& facts);

// Per-attempt data: the pod's facts, plugin scratch slots and the Reserve result. The
// scheduler owns one and Reset()s it for every pod, so buffers are reused, not reallocated.
class CycleState {
 public:
  // Data a plugin keeps for the rest of one scheduling attempt.
  class Data {
   public:
    virtual ~Data() = default;
  };

  const Pod& pod() const { return *pod_; }
  const PodPtr& pod_ptr() const { return pod_; }
  const PodFacts& facts() const { return facts_; }
  PodFacts& mutable_facts() { return facts_; }

  // Plugin scratch, by the slot index the framework gave the plugin (Plugin::slot()). The
  // object stays allocated across pods: a plugin resets its fields in PreFilter / PreScore.
  template <typename T>
  T& Slot(int slot) {
    if (slots_.size() <= static_cast<size_t>(slot)) slots_.resize(static_cast<size_t>(slot) + 1);
    if (!slots_[static_cast<size_t>(slot)]) slots_[static_cast<size_t>(slot)] = std::make_unique<T>();
    return static_cast<T&>(*slots_[static_cast<size_t>(slot)]);
  }
  template <typename T>
  const T* SlotIfSet(int slot) const {
    if (slots_.size() <= static_cast<size_t>(slot) || !slots_[static_cast<size_t>(slot)]) {
      return nullptr;
    }
    return static_cast<const T*>(slots_[static_cast<size_t>(slot)].get());
  }

  // Set by Reserve: the exact cpusets assumed for the pod (nullopt for NUMA-blind nodes and
  // profiles without the Huygens Reserve plugin).
  std::optional<PodAllocation> allocation;

  // Set by a PreFilter when this attempt's Filter or Score results depend on more than the
  // pod's equivalence key and the node judged (InterPodAffinity with terms in play and
  // PodTopologySpread with constraints read other nodes' pods): the scheduler then neither
  // reuses nor keeps them in its equivalence cache. A PreFilter only ever sets it: clearing it
  // would undo an earlier plugin's.
  bool skip_equivalence_cache = false;

  // Starts a new attempt for `pod` (keeps slot objects and buffers).
  void Reset(PodPtr pod) {
    pod_ = std::move(pod);
    allocation.reset();
    skip_equivalence_cache = false;
  }

 private:
  PodPtr pod_;
  PodFacts facts_;
  std::vector<std::unique_ptr<Data>> slots_;
};

// A pod the scheduling cycle reserved and assumed on a node: all that its binding cycle (Bind,
// and Unreserve when the binding fails) may read, since the CycleState moves on to the next pod.
struct ReservedPod {
  PodPtr pod;
  std::string node;
  std::optional<PodAllocation> allocation;  // Reserve's cpusets; nullopt on a NUMA-blind node
};

inline constexpr int64_t kMaxNodeScore = 100;  // kube-scheduler's MaxNodeScore

// Why no node fit: nodes per reason, for PostFilter and the FitError message.
struct Diagnosis {
  int num_all_nodes = 0;
  std::vector<std::pair<std::string, int>> reasons;  // reason -> nodes, any order
  std::string pre_filter_message;                    // set when PreFilter rejected the pod
};

class Plugin {
 public:
  virtual ~Plugin() = default;
  // The plugin's name, as in kube-scheduler where it matches one ("NodeResourcesFit").
  virtual std::string_view Name() const = 0;
  // Appends whatever, beyond the pod's own fields (AppendEquivalenceKey), this plugin's Filter
  // or Score results depend on apart from the node judged, for the scheduler's equivalence
  // cache (scheduler.h). The contract every plugin keeps: Filter(state, node) and
  // Score(state, node) are functions of the pod's equivalence key, this addition and the
  // node's state (NodeInfo::generation) only, unless its PreFilter set
  // CycleState::skip_equivalence_cache. Called after the PreFilters.
  virtual void AppendEquivalenceKey(const CycleState& state, std::string& key) const {
    (void)state;
    (void)key;
  }
  // The CycleState slot this plugin may use (set once by the framework).
  int slot() const { return slot_; }
  void set_slot(int slot) { slot_ = slot; }

 private:
  int slot_ = 0;
};

class PreFilterPlugin : public virtual Plugin {
 public:
  virtual Status PreFilter(CycleState& state) = 0;
};

class FilterPlugin : public virtual Plugin {
 public:
  virtual Status Filter(CycleState& state, const NodeInfo& node) = 0;
};

class PostFilterPlugin : public virtual Plugin {
 public:
  // Returns the node nominated for the pod, if any (the pod then waits for it).
  virtual std::optional<std::string> PostFilter(CycleState& state,
                                                const Diagnosis& diagnosis) = 0;
};

class PreScorePlugin : public virtual Plugin {
 public:
  virtual Status PreScore(CycleState& state, std::span<const NodeInfo* const> feasible) = 0;
};

class ScorePlugin : public virtual Plugin {
 public:
  // The node's raw score; after NormalizeScore every score must lie in [0, kMaxNodeScore].
  virtual int64_t Score(CycleState& state, const NodeInfo& node) = 0;
  // Rescales the raw scores of all feasible nodes in place (default: unchanged).
  virtual void NormalizeScore(CycleState& state, std::span<int64_t> scores) {
    (void)state;
    (void)scores;
  }
  // True when this attempt's Score would be 0 on every node and NormalizeScore would keep it
  // so (kube-scheduler's PreScore returning Skip): the scheduler then leaves the plugin out of
  // the attempt's weighted sum. Called after PreFilter and PreScore. Default false.
  virtual bool SkipScore(const CycleState& state) const {
    (void)state;
    return false;
  }
};

class ReservePlugin : public virtual Plugin {
 public:
  virtual Status Reserve(CycleState& state, const NodeInfo& node) = 0;
  // Undoes Reserve; must succeed whether or not Reserve ran to completion. Runs on the
  // scheduling thread, in the scheduling cycle or when a binding cycle failed.
  virtual void Unreserve(const ReservedPod& reserved) = 0;
};

// Thread-safety: Bind may run on any thread, concurrently with the scheduling cycle and with
// other binding cycles; an implementation that touches shared state locks it.
class BindPlugin : public virtual Plugin {
 public:
  // Makes `reserved` durable. A failure is settled by the caller (Scheduler::FinishBinding).
  virtual Status Bind(const ReservedPod& reserved) = 0;
};

}  // namespace huygens::sched

#endif  // HUYGENS_SCHED_FRAMEWORK_H_
