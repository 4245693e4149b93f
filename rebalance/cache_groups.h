// The rebalancer's view of one node of the scheduler cache (sched/cache.h): the affinity groups
// of its pods and the pods that must not move. The one statement of that rule, used by
// huygens-scheduler's rebalancer (scheduler/rebalancer.h) and the simulator's (sim/simulator.h).
//
// Thread-safety: reads the cache; callers serialise access to it.
#ifndef HUYGENS_REBALANCE_CACHE_GROUPS_H_
#define HUYGENS_REBALANCE_CACHE_GROUPS_H_

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "rebalance/planner.h"
#include "sched/cache.h"

namespace huygens::rebalance {

struct NodeGroups {
  // Pods of the node sharing a huygens.io/affinity-group, one group per name (ordered by name),
  // members in the node's pod order; pinned members included (the others may join them).
  std::vector<AffinityGroup> groups;
  // Pods that must not move: assumed (a Binding in flight), without an allocation, with
  // huygens.io/rebalance "false", or for which `also_pinned` answers true.
  std::set<std::string> pinned;
};

// The groups and pinned pods of `info`'s pods in `cache`. `policy_of(pod)` gives a group's
// policy (the first member's answer is kept); `also_pinned` (may be empty) pins more pods, e.g.
// the scheduler's system-pool namespaces.
NodeGroups GroupsOfNode(const sched::ClusterCache& cache, const sched::NodeInfo& info,
                        const std::function<GroupPolicy(const sched::Pod&)>& policy_of,
                        const std::function<bool(const sched::Pod&)>& also_pinned = {});

}  // namespace huygens::rebalance

#endif  // HUYGENS_REBALANCE_CACHE_GROUPS_H_
