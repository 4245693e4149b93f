#include "scheduler/rebalancer.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "fmt/format.h"
#include "kube/pod_codec.h"
#include "rebalance/cache_groups.h"
#include "node/allocation.h"
#include "topology/nrt.h"
#include "topology/pod_traffic.h"
#include "spdlog/spdlog.h"

namespace huygens::scheduler {

int Rebalancer::MaybeRun(std::unique_lock<std::mutex>& lock) {
  if (!config_->rebalancer.enabled || clock_->Now() < next_run_) return 0;
  next_run_ = clock_->Now() + config_->rebalancer.interval;
  std::vector<std::string> nodes;
  for (const sched::NodeInfo* info : state_->cache().Nodes()) {
    if (info->cpu_state != nullptr) nodes.push_back(info->node.name);
  }
  int moved = 0;
  for (const std::string& node : nodes) moved += RunNode(node, lock);
  return moved;
}

int Rebalancer::RunNode(const std::string& node, std::unique_lock<std::mutex>& lock) {
  const sched::NodeInfo* info = state_->cache().FindNode(node);
  if (info == nullptr || info->cpu_state == nullptr) return 0;
  const std::vector<std::string>& system = config_->system_pool_namespaces;
  rebalance::NodeGroups node_groups = rebalance::GroupsOfNode(
      state_->cache(), *info, [](const sched::Pod&) { return rebalance::GroupPolicy::kSameNuma; },
      [&](const sched::Pod& pod) {
        return std::find(system.begin(), system.end(), pod.spec.namespace_name) != system.end() ||
               !state_->pods().contains(pod.Uid());
      });
  std::vector<rebalance::AffinityGroup>& list = node_groups.groups;
  const std::set<std::string>& pinned = node_groups.pinned;
  // Declared groups first; the planner keeps a pod in the first group that lists it.
  for (rebalance::AffinityGroup& observed : ObservedGroups(node)) list.push_back(std::move(observed));
  if (list.empty() && !config_->rebalancer.balance) return 0;
  const rebalance::PlannerOptions options{.max_moves = config_->rebalancer.max_moves_per_node,
                                          .balance = config_->rebalancer.balance};
  absl::StatusOr<rebalance::Plan> plan =
      rebalance::PlanMoves(*info->cpu_state, list, pinned, options);
  if (!plan.ok()) {
    spdlog::error("rebalancer: node {}: {}", node, std::string(plan.status().message()));
    return 0;
  }
  for (const rebalance::GroupOutcome& g : plan->groups) {
    if (g.state == rebalance::GroupOutcome::State::kBlocked) {
      spdlog::debug("rebalancer: node {}: group {} stays on NUMA nodes {}: {}", node, g.group,
                    fmt::join(g.numa_before, ","), g.reason);
    }
  }
  int moved = 0;
  for (const rebalance::Move& move : plan->moves) {
    // Each move was planned on the state the ones before it leave: stop at the first failure.
    if (!CarryOut(move, lock)) break;
    ++moved;
  }
  return moved;
}

std::vector<rebalance::AffinityGroup> Rebalancer::ObservedGroups(const std::string& node) const {
  const int64_t threshold = config_->rebalancer.observed_min_bytes_per_second;
  auto object = state_->nrts().find(node);
  if (threshold <= 0 || object == state_->nrts().end()) return {};
  absl::StatusOr<NrtObject> nrt = ReadNrt(object->second);
  if (!nrt.ok()) return {};
  absl::StatusOr<std::optional<PodTraffic>> traffic = PodTrafficFromNrt(*nrt);
  if (!traffic.ok()) {
    spdlog::warn("rebalancer: node {}: observed affinity ignored: {}", node,
                 std::string(traffic.status().message()));
    return {};
  }
  if (!traffic->has_value()) return {};
  // namespace/name -> uid of the node's pods.
  std::map<std::string, std::string> uid_of;
  if (const sched::NodeInfo* info = state_->cache().FindNode(node); info != nullptr) {
    for (const std::string& uid : info->pod_uids) {
      auto seen = state_->pods().find(uid);
      if (seen != state_->pods().end()) uid_of[kube::ObjectKey(seen->second)] = uid;
    }
  }
  // Pods linked by enough traffic, transitively: the components of the pairs' graph.
  std::map<std::string, std::string> parent;  // union-find over pod keys
  auto find = [&parent](std::string key) {
    while (parent.at(key) != key) key = parent.at(key);
    return key;
  };
  for (const PodTrafficPair& pair : (*traffic)->pairs) {
    if (static_cast<int64_t>(pair.bytes_per_second) < threshold) continue;
    if (!uid_of.contains(pair.a) || !uid_of.contains(pair.b)) continue;
    parent.try_emplace(pair.a, pair.a);
    parent.try_emplace(pair.b, pair.b);
    const std::string ra = find(pair.a), rb = find(pair.b);
    if (ra != rb) parent[std::max(ra, rb)] = std::min(ra, rb);
  }
  std::map<std::string, rebalance::AffinityGroup> components;  // by root key
  for (const auto& [key, unused] : parent) {
    rebalance::AffinityGroup& g = components[find(key)];
    g.name = "observed:" + find(key);
    g.policy = rebalance::GroupPolicy::kSameNuma;
    g.members.push_back(uid_of.at(key));
  }
  std::vector<rebalance::AffinityGroup> out;
  for (auto& [root, group] : components) out.push_back(std::move(group));
  return out;
}

bool Rebalancer::CarryOut(const rebalance::Move& move, std::unique_lock<std::mutex>& lock) {
  auto seen = state_->pods().find(move.pod_uid);
  if (seen == state_->pods().end()) return false;
  const nlohmann::json object = seen->second;
  const std::string key = fmt::format("{}/{}", object["metadata"].value("namespace", ""),
                                      object["metadata"].value("name", ""));
  lock.unlock();
  absl::Status written = writer_->MoveAllocation(object, AllocationToJson(move.to));
  lock.lock();
  if (!written.ok()) {
    const bool conflict = written.code() == absl::StatusCode::kAborted;
    metrics_->rebalance_moves->Inc({conflict ? "conflict" : "error"});
    spdlog::info("rebalancer: pod {}: move not made ({}): {}", key, move.reason,
                 std::string(written.message()));
    return false;
  }
  if (absl::Status s = state_->cache().MovePod(move.pod_uid, move.to); !s.ok()) {
    // The scheduling thread is the cache's only writer while the lock was released, so the
    // plan's next state is the cache's; a refusal here is a bug, logged loudly.
    spdlog::error("rebalancer: pod {}: written but the cache refused the move: {}", key,
                  std::string(s.message()));
    return false;
  }
  metrics_->rebalance_moves->Inc({"moved"});
  metrics_->rebalance_cpus->Inc({}, move.moved_cpus);
  const std::string note =
      fmt::format("moved to {}: {}", DescribeAllocation(move.to), move.reason);
  spdlog::info("rebalancer: pod {}: {}", key, note);
  writer_->Event(object, "Normal", "Rebalanced", "Rebalancing", note);
  return true;
}

}  // namespace huygens::scheduler
