// Scheduler: kube-scheduler's two cycles for one pod over the ClusterCache.
//
// The scheduling cycle (SchedulingCycle; kube-scheduler's schedulingCycle), on the thread that
// owns the cache:
//   1. PreFilter plugins (a rejection marks every node with its reason);
//   2. Filter: nodes are visited round-robin from where the previous attempt stopped, until
//      NumFeasibleNodesToFind(nodes, percentage) feasible nodes are found or all nodes were
//      visited (kube-scheduler's percentageOfNodesToScore, adaptive by default);
//   3. no feasible node: PostFilter plugins, then an Unschedulable result whose message is
//      kube-scheduler's FitError text, e.g.
//      "0/5000 nodes are available: 1880 NUMA: no single NUMA node fits 24 CPUs, 3120
//      Insufficient cpu." (per-reason node counts, "count reason" strings sorted as text);
//   4. PreScore + Score + NormalizeScore, weighted sum; the highest total wins, ties go to
//      the node visited first (deterministic, where kube-scheduler picks at random);
//   5. Reserve (Huygens computes the exact cpusets), then the assume. A Reserve that rejects
//      the pod gives an Unschedulable result over that one node, "0/1 nodes are available: 1
//      <reason>." (kube-scheduler's FitError with NumAllNodes 1); any other failure an Error.
//      Either way Unreserve runs in reverse order and the cache is as before the attempt.
// The binding cycle (kube-scheduler's bindingCycle) takes the ReservedPod: BindingCycle runs
// the Bind plugin and may run on another thread; FinishBinding, back on the cache's thread,
// confirms the assume or, for a failed Binding, runs Unreserve and forgets the pod.
// ScheduleOne runs the two back to back (the simulator, benchmarks, tests).
//
// Equivalence cache (Huygens' own; Profile::equivalence_cache, on by default): Filter verdicts
// and raw Scores are kept per pod equivalence key (AppendEquivalenceKey plus each plugin's
// Plugin::AppendEquivalenceKey) and node, and reused while the node's generation is unchanged
// (not for an attempt whose PreFilter set CycleState::skip_equivalence_cache);
// NormalizeScore and the choice run on every attempt. Decisions are identical with and without
// it (sched/equivalence_test.cc). At most 64 keys are kept (least recently used evicted).
//
// Thread-safety: one thread drives SchedulingCycle, FinishBinding and ScheduleOne together
// with the cache; BindingCycle may run on any thread (BindPlugin's contract).
#ifndef HUYGENS_SCHED_SCHEDULER_H_
#define HUYGENS_SCHED_SCHEDULER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "node/allocation.h"
#include "sched/cache.h"
#include "sched/framework.h"
#include "sched/pod.h"
#include "sched/profile.h"

namespace huygens::sched {

struct ScheduleResult {
  enum class Outcome {
    kScheduled,      // SchedulingCycle: reserved and assumed on `node`, `reserved` set;
                     // ScheduleOne: bound to `node`
    kUnschedulable,  // no node fits now (or Reserve rejected the chosen one); `message` is the
                     // FitError text, `reasons` the counts
    kError,          // Bind failed, Reserve failed other than by a rejection, or a plugin
                     // reported an error; `message` says why
  };
  Outcome outcome = Outcome::kUnschedulable;
  std::string node;
  std::optional<PodAllocation> allocation;  // set when Reserve computed cpusets
  std::optional<ReservedPod> reserved;      // SchedulingCycle's kScheduled: for the binding cycle
  std::string message;
  // Unschedulable: reason -> number of nodes, sorted by reason text.
  std::vector<std::pair<std::string, int>> reasons;
  std::optional<std::string> nominated_node;  // from PostFilter
  int evaluated_nodes = 0;                    // nodes whose filters ran
  int feasible_nodes = 0;

  bool scheduled() const { return outcome == Outcome::kScheduled; }
};

// One node's verdict in one attempt, as ScheduleOne reports it when asked (for debug logs).
struct NodeVerdict {
  std::string node;
  std::string refusal;           // the refusing filter's reason; empty: the node is feasible
  std::optional<int64_t> score;  // feasible, when scores ran (two or more feasible nodes): the
                                 // weighted total the choice compared
};

// kube-scheduler's numFeasibleNodesToFind: all nodes when there are fewer than 100 or
// percentage >= 100; otherwise percentage (0 = adaptive: 50 - nodes/125, at least 5) of the
// nodes, but at least 100.
int NumFeasibleNodesToFind(int num_all_nodes, int percentage_of_nodes_to_score);

// kube-scheduler's FitError message for a diagnosis:
// "0/N nodes are available: <pre-filter message or sorted 'count reason' list>."
std::string FitErrorMessage(const Diagnosis& diagnosis);

class Scheduler {
 public:
  // Builds the profile's plugins over `cache` (not owned; must outlive the Scheduler).
  // `binder`: the Bind plugin; nullptr = bind in the cache at once (AddPod confirms the
  // assume), which is what the simulator wants. Errors: InvalidArgument naming an unknown
  // plugin or a plugin listed at an extension point it does not implement.
  static absl::StatusOr<std::unique_ptr<Scheduler>> Create(
      ClusterCache* cache, Profile profile, std::unique_ptr<BindPlugin> binder = nullptr);
  ~Scheduler();

  // The scheduling cycle: kScheduled (the pod assumed in the cache, result.reserved set),
  // kUnschedulable or kError (the cache as before). REQUIRES: the pod is not in the cache
  // (neither bound nor assumed). `verdicts`, when given, receives the verdict of every node the
  // filters visited in this attempt (visit order; none when PreFilter rejected the pod), the
  // cost of which (a string per node) is paid only then.
  ScheduleResult SchedulingCycle(PodPtr pod, std::vector<NodeVerdict>* verdicts = nullptr);
  // The binding cycle's work: the Bind plugin's status. Reads only `reserved` and the plugin
  // list fixed at Create, so it may run on another thread than the rest.
  Status BindingCycle(const ReservedPod& reserved) const;
  // Settles a binding cycle on the cache's thread. `bound` ok: the assume is marked bound
  // (ClusterCache::FinishBinding) until the pod's bound version confirms it; Code::kUnconfirmed
  // (the Binding may have landed): the reservation is kept, for the caller to bind again; any
  // other failure: Unreserve in reverse order and the assume forgotten, so the CPUs are free.
  void FinishBinding(const ReservedPod& reserved, const Status& bound);
  // Both cycles back to back: kScheduled, or the scheduling cycle's failure, or kError with
  // "bind to node "<node>": <Bind's message>" (the reservation settled by FinishBinding).
  ScheduleResult ScheduleOne(PodPtr pod, std::vector<NodeVerdict>* verdicts = nullptr);

  const Profile& profile() const { return profile_; }
  ClusterCache& cache() { return *cache_; }

 private:
  Scheduler(ClusterCache* cache, Profile profile);
  struct Impl;

  ClusterCache* cache_;
  Profile profile_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace huygens::sched

#endif  // HUYGENS_SCHED_SCHEDULER_H_
