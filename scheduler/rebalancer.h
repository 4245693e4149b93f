// Rebalancer: the scheduler service's mover of running pods (issue 17, docs/rebalancer.md).
//
// Every RebalancerSettings::interval, on the scheduling thread, while this process leads in
// standalone mode with current informers and its takeover fence complete (the conditions under
// which it may bind), it plans each node of the cache with rebalance::PlanMoves and carries out
// up to max_moves_per_node moves per node:
//   - groups, in this order (a pod belongs to the first that lists it): NumaAffinityGroups
//     (kube/numa_affinity_group.h; the pods of the group's namespace on the node whose labels
//     its selector matches, with its policy; named "<namespace>/<name>"), the pods of the node
//     that share a huygens.io/affinity-group (policy same-numa), then observed affinity: pods
//     linked by at least observed_min_bytes_per_second of TCP traffic in the node's
//     huygens.io/pod-traffic (the agent's, on the NRT), transitively;
//   - pinned: pods with huygens.io/rebalance "false", pods of the system pool namespaces, pods
//     not yet bound (assumed) and pods without an allocation;
//   - a move is a JSON merge patch of the pod's huygens.io/allocation carrying the pod's
//     resourceVersion as the cache last saw it, so the apiserver refuses it (409) when the pod
//     changed since; the patch is sent only while PodWriter's lease check passes (a deposed
//     leader moves nothing). On success the cache takes the move (ClusterCache::MovePod) before
//     anything else is scheduled, so no CPU it freed or took is given twice; a 409 or any other
//     failure changes nothing in the cache (the next interval plans again from what the
//     informers show).
//   - the node agent applies the new cpuset and mems as it applies a first allocation; moves on
//     one node are spaced by the interval, so the agent has applied one before the next is
//     written (a CPU the next move takes was free in the cache, and the agent refuses a cpuset
//     another container still holds: `conflict`, retried on its next pass).
// Each move is logged (info) and posted as the pod's Normal event "Rebalanced", e.g. "moved to
// NUMA node 0, cpuset 8-11,40-43 (app 8-11,40-43): group web: join NUMA node 0 (8 cpus moved)".
// After each round every NumaAffinityGroup's status (docs/numa-affinity-group.md) is computed
// from the cache and written when it differs from the one the group carries: its members (every
// pod of its namespace its selector matches: name, node, NUMA nodes and count of its exclusive
// CPUs), numaNodesSpanned, movesMade (the carried value plus this round's moves) and the
// condition Aligned: True "Aligned" when the planner found every node's members where the policy
// wants them, True "NothingToAlign" when no member holds exclusive CPUs, False "Moving" when
// this round moved members, False "Blocked" (the planner's reason, with the node) otherwise.
// Written through the status subresource with the group's resourceVersion (a 409 waits for the
// next round). The NumaAffinityGroup informer must be current for a round to run: while it is
// not (the CRD not installed, the watch stale), the rebalancer moves nothing and says so once.
// Metrics: huygens_scheduler_rebalance_moves_total{result} (moved, conflict, error) and
// huygens_scheduler_rebalance_cpus_moved_total.
//
// Time: the interval is measured on the injected Clock.
// Thread-safety: MaybeRun on the scheduling thread only, with the CacheSync's lock held (it
// releases it around each API call: CacheSync::WithoutLock).
#ifndef HUYGENS_SCHEDULER_REBALANCER_H_
#define HUYGENS_SCHEDULER_REBALANCER_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "base/clock.h"
#include "rebalance/planner.h"
#include "scheduler/binder.h"
#include "scheduler/cache_sync.h"
#include "scheduler/config.h"
#include "scheduler/service_metrics.h"

namespace huygens::scheduler {

class Rebalancer {
 public:
  // Every pointer must outlive the rebalancer.
  // `feed` runs the NumaAffinityGroup informer (ChangeFeed::StartInformers with
  // affinity_groups) whenever the rebalancer is enabled.
  Rebalancer(const SchedulerConfig* config, CacheSync* state, const ChangeFeed* feed, PodWriter* writer,
             const ServiceMetrics* metrics, Clock* clock)
      : config_(config), state_(state), feed_(feed), writer_(writer), metrics_(metrics),
        clock_(clock), next_run_(clock->Now() + config->rebalancer.interval) {}

  // Runs one round when the interval has passed since the last (and the rebalancer is
  // enabled); the lock is released only around API calls. Returns the moves carried out.
  // REQUIRES: the CacheSync's lock held (checked: CacheSync::AssertHeld).
  int MaybeRun();

 private:
  // What one round saw of each NumaAffinityGroup (by namespace/name): the planner's outcome
  // on each node with members holding CPUs, and the moves made for it.
  struct GroupRound {
    std::vector<std::pair<std::string, rebalance::GroupOutcome>> outcomes;  // node, outcome
    int64_t moves = 0;
  };
  using Round = std::map<std::string, GroupRound>;

  // Plans node `node` and carries out its first moves; records the declared groups' outcomes
  // and moves in `round`.
  int RunNode(const std::string& node, Round& round) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_->lock());
  // The NumaAffinityGroups' members among the pods of node `info`, one group each (in key
  // order), named by their key.
  std::vector<rebalance::AffinityGroup> DeclaredGroups(const sched::NodeInfo& info) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_->lock());
  // Computes each NumaAffinityGroup's status after `round` and writes the changed ones.
  void WriteStatuses(const Round& round) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_->lock());
  // The groups of node `node`'s observed affinity: the components of the pairs of its NRT's
  // huygens.io/pod-traffic whose rate reaches observed_min_bytes_per_second (policy same-numa,
  // named "observed:<first pod key>"); none when the NRT has no such annotation.
  std::vector<rebalance::AffinityGroup> ObservedGroups(const std::string& node) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_->lock());
  // Writes one move; true when the apiserver took it (the cache then holds it).
  bool CarryOut(const rebalance::Move& move) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_->lock());

  const SchedulerConfig* config_;
  CacheSync* state_;
  const ChangeFeed* feed_;
  PodWriter* writer_;
  const ServiceMetrics* metrics_;
  Clock* clock_;
  Clock::TimePoint next_run_;
  bool groups_unready_ = false;  // the last round was skipped for the group informer
};

}  // namespace huygens::scheduler

#endif  // HUYGENS_SCHEDULER_REBALANCER_H_
