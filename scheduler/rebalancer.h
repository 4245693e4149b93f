// Rebalancer: the scheduler service's mover of running pods (issue 17, docs/rebalancer.md).
//
// Every RebalancerSettings::interval, on the scheduling thread, while this process leads in
// standalone mode with current informers and its takeover fence complete (the conditions under
// which it may bind), it plans each node of the cache with rebalance::PlanMoves and carries out
// up to max_moves_per_node moves per node:
//   - groups: the pods of the node that share a huygens.io/affinity-group (policy same-numa),
//     then observed affinity: pods linked by at least observed_min_bytes_per_second of TCP
//     traffic in the node's huygens.io/pod-traffic (the agent's, on the NRT), transitively;
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
// Metrics: huygens_scheduler_rebalance_moves_total{result} (moved, conflict, error) and
// huygens_scheduler_rebalance_cpus_moved_total.
//
// Time: the interval is measured on the injected Clock.
// Thread-safety: MaybeRun on the scheduling thread only, with CacheSync::mu held (it releases
// it around each API call).
#ifndef HUYGENS_SCHEDULER_REBALANCER_H_
#define HUYGENS_SCHEDULER_REBALANCER_H_

#include <mutex>
#include <string>

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
  Rebalancer(const SchedulerConfig* config, CacheSync* state, PodWriter* writer,
             const ServiceMetrics* metrics, Clock* clock)
      : config_(config), state_(state), writer_(writer), metrics_(metrics),
        clock_(clock), next_run_(clock->Now() + config->rebalancer.interval) {}

  // Runs one round when the interval has passed since the last (and the rebalancer is
  // enabled); `lock` holds state->mu and is released only around API calls. Returns the moves
  // carried out.
  int MaybeRun(std::unique_lock<std::mutex>& lock);

 private:
  // Plans node `node` and carries out its first moves.
  int RunNode(const std::string& node, std::unique_lock<std::mutex>& lock);
  // The groups of node `node`'s observed affinity: the components of the pairs of its NRT's
  // huygens.io/pod-traffic whose rate reaches observed_min_bytes_per_second (policy same-numa,
  // named "observed:<first pod key>"); none when the NRT has no such annotation.
  std::vector<rebalance::AffinityGroup> ObservedGroups(const std::string& node) const;
  // Writes one move; true when the apiserver took it (the cache then holds it).
  bool CarryOut(const rebalance::Move& move, std::unique_lock<std::mutex>& lock);

  const SchedulerConfig* config_;
  CacheSync* state_;
  PodWriter* writer_;
  const ServiceMetrics* metrics_;
  Clock* clock_;
  Clock::TimePoint next_run_;
};

}  // namespace huygens::scheduler

#endif  // HUYGENS_SCHEDULER_REBALANCER_H_
