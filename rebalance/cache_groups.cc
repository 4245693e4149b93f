#include "rebalance/cache_groups.h"

#include <map>
#include <utility>

namespace huygens::rebalance {

NodeGroups GroupsOfNode(const sched::ClusterCache& cache, const sched::NodeInfo& info,
                        const std::function<GroupPolicy(const sched::Pod&)>& policy_of,
                        const std::function<bool(const sched::Pod&)>& also_pinned) {
  NodeGroups out;
  std::map<std::string, AffinityGroup> by_name;
  for (const std::string& uid : info.pod_uids) {
    const sched::ClusterCache::PodEntry* entry = cache.FindPod(uid);
    if (entry == nullptr) continue;
    const sched::Pod& pod = *entry->pod;
    if (entry->assumed || !entry->allocation.has_value() || !pod.rebalance ||
        (also_pinned && also_pinned(pod))) {
      out.pinned.insert(uid);
    }
    const std::string& name = pod.spec.affinity_group;
    if (name.empty()) continue;
    auto [it, added] = by_name.try_emplace(name);
    if (added) {
      it->second.name = name;
      it->second.policy = policy_of(pod);
    }
    it->second.members.push_back(uid);
  }
  for (auto& [name, group] : by_name) out.groups.push_back(std::move(group));
  return out;
}

}  // namespace huygens::rebalance
