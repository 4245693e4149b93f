#include "scheduler/rebalancer.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <vector>

#include "fmt/format.h"
#include "kube/meta_time.h"
#include "kube/numa_affinity_group.h"
#include "kube/pod_codec.h"
#include "rebalance/cache_groups.h"
#include "node/allocation.h"
#include "topology/nrt.h"
#include "topology/pod_traffic.h"
#include "spdlog/spdlog.h"

namespace huygens::scheduler {

namespace {

using nlohmann::json;

// A pod object's metadata.labels (values that are not strings are left out: the apiserver
// never stores them).
Labels LabelsOf(const json& pod) {
  Labels labels;
  const json& metadata = pod["metadata"];
  if (auto it = metadata.find("labels"); it != metadata.end() && it->is_object()) {
    for (const auto& [key, value] : it->items()) {
      if (value.is_string()) labels[key] = value.get<std::string>();
    }
  }
  return labels;
}

bool IsMember(const kube::NumaAffinityGroup& group, const json& pod) {
  return pod["metadata"].value("namespace", "") == group.namespace_name && group.selector.Matches(LabelsOf(pod));
}

// The condition Aligned of a group after a round (see the header for the reasons).
kube::AffinityGroupCondition AlignedCondition(const std::vector<std::pair<std::string, rebalance::GroupOutcome>>& outcomes,
                                              int64_t moves) {
  using State = rebalance::GroupOutcome::State;
  kube::AffinityGroupCondition c;
  if (outcomes.empty()) {
    c.status = true;
    c.reason = "NothingToAlign";
    c.message = "no member holds exclusive CPUs";
    return c;
  }
  std::vector<std::string> blocked;
  for (const auto& [node, outcome] : outcomes) {
    if (outcome.state == State::kBlocked) blocked.push_back(fmt::format("node {}: {}", node, outcome.reason));
  }
  if (moves > 0) {
    c.reason = "Moving";
    c.message = fmt::format("{} member move(s) made this round", moves);
  } else if (!blocked.empty()) {
    c.reason = "Blocked";
    c.message = fmt::format("{}", fmt::join(blocked, "; "));
  } else {
    c.status = true;
    c.reason = "Aligned";
    c.message = "the members sit as the policy asks on every node";
  }
  return c;
}

}  // namespace

int Rebalancer::MaybeRun() {
  state_->AssertHeld();
  if (!config_->rebalancer.enabled || clock_->Now() < next_run_) return 0;
  next_run_ = clock_->Now() + config_->rebalancer.interval;
  if (absl::Status ready = feed_->AffinityGroupsReady(); !ready.ok()) {
    if (!groups_unready_) {
      spdlog::warn("rebalancer: no pod is moved while NumaAffinityGroups are not current (is the CRD "
                   "numaaffinitygroups.huygens.io installed? deploy/crd/): {}",
                   std::string(ready.message()));
      groups_unready_ = true;
    }
    return 0;
  }
  if (groups_unready_) {
    spdlog::info("rebalancer: NumaAffinityGroups are current again; rebalancing resumes");
    groups_unready_ = false;
  }
  std::vector<std::string> nodes;
  for (const sched::NodeInfo* info : state_->cache().Nodes()) {
    if (info->cpu_state != nullptr) nodes.push_back(info->node.name);
  }
  spdlog::debug("rebalancer: round over {} node(s), {} NumaAffinityGroup(s)", nodes.size(),
                state_->affinity_groups().size());
  Round round;
  int moved = 0;
  for (const std::string& node : nodes) moved += RunNode(node, round);
  WriteStatuses(round);
  return moved;
}

std::vector<rebalance::AffinityGroup> Rebalancer::DeclaredGroups(const sched::NodeInfo& info) const {
  std::vector<rebalance::AffinityGroup> out;
  for (const auto& [key, declared] : state_->affinity_groups()) {
    rebalance::AffinityGroup group{.name = key, .policy = declared.group.policy};
    for (const std::string& uid : info.pod_uids) {
      auto pod = state_->pods().find(uid);
      if (pod != state_->pods().end() && IsMember(declared.group, pod->second)) group.members.push_back(uid);
    }
    if (!group.members.empty()) out.push_back(std::move(group));
  }
  return out;
}

int Rebalancer::RunNode(const std::string& node, Round& round) {
  const sched::NodeInfo* info = state_->cache().FindNode(node);
  if (info == nullptr || info->cpu_state == nullptr) return 0;
  const std::vector<std::string>& system = config_->system_pool_namespaces;
  const std::map<std::string, json>& pods = state_->pods();
  rebalance::NodeGroups node_groups = rebalance::GroupsOfNode(
      state_->cache(), *info, [](const sched::Pod&) { return rebalance::GroupPolicy::kSameNuma; },
      [&](const sched::Pod& pod) {
        return std::find(system.begin(), system.end(), pod.spec.namespace_name) != system.end() ||
               !pods.contains(pod.Uid());
      });
  const std::set<std::string>& pinned = node_groups.pinned;
  // Declared groups first (objects, then annotations), then observed ones; the planner keeps a
  // pod in the first group that lists it.
  std::vector<rebalance::AffinityGroup> list = DeclaredGroups(*info);
  for (rebalance::AffinityGroup& annotated : node_groups.groups) {
    // An annotation's value that spells a group object's key keeps the two apart in outcomes.
    if (state_->affinity_groups().contains(annotated.name)) annotated.name = "annotation:" + annotated.name;
    list.push_back(std::move(annotated));
  }
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
    if (state_->affinity_groups().contains(g.group)) round[g.group].outcomes.emplace_back(node, g);
  }
  int moved = 0;
  for (const rebalance::Move& move : plan->moves) {
    // Each move was planned on the state the ones before it leave: stop at the first failure.
    if (!CarryOut(move)) break;
    ++moved;
    if (state_->affinity_groups().contains(move.group)) ++round[move.group].moves;
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

void Rebalancer::WriteStatuses(const Round& round) {
  // Computed under the lock, written without it.
  std::vector<std::pair<json, json>> writes;  // group object, status patch
  for (const auto& [key, declared] : state_->affinity_groups()) {
    kube::NumaAffinityGroupStatus status;
    status.observed_generation = declared.group.generation;
    std::map<std::string, std::set<int>> numa_by_node;
    for (const auto& [uid, pod] : state_->pods()) {
      if (!IsMember(declared.group, pod)) continue;
      kube::AffinityGroupMember member{.pod = pod["metadata"].value("name", ""),
                                       .node = pod["spec"].value("nodeName", "")};
      const sched::ClusterCache::PodEntry* entry = state_->cache().FindPod(uid);
      if (entry != nullptr && entry->allocation.has_value()) {
        member.cpus = entry->allocation->ExclusiveCpus().Size();
        if (member.cpus > 0) member.numa_nodes = entry->allocation->numa_nodes;
      }
      if (!member.numa_nodes.empty()) numa_by_node[member.node].insert(member.numa_nodes.begin(), member.numa_nodes.end());
      status.members.push_back(std::move(member));
    }
    std::sort(status.members.begin(), status.members.end(),
              [](const kube::AffinityGroupMember& a, const kube::AffinityGroupMember& b) { return a.pod < b.pod; });
    for (const auto& [node, numa] : numa_by_node) {
      status.numa_nodes_spanned = std::max(status.numa_nodes_spanned, static_cast<int>(numa.size()));
    }
    const json& carried = declared.object.value("status", json::object());
    auto this_round = round.find(key);
    const int64_t moves = this_round == round.end() ? 0 : this_round->second.moves;
    // A carried count that is not a non-negative integer (a hand edit) starts again from 0.
    const json carried_moves = carried.value("movesMade", json(0));
    status.moves_made = (carried_moves.is_number_integer() && carried_moves.get<int64_t>() >= 0 ? carried_moves.get<int64_t>() : 0) + moves;
    kube::AffinityGroupCondition condition = AlignedCondition(
        this_round == round.end() ? std::vector<std::pair<std::string, rebalance::GroupOutcome>>{}
                                  : this_round->second.outcomes,
        moves);
    // The transition time moves only when the condition's status does.
    condition.last_transition_time = kube::MetaTime(std::chrono::system_clock::now());
    for (const json& c : carried.value("conditions", json::array())) {
      if (c.is_object() && c.value("type", "") == condition.type &&
          c.value("status", "") == (condition.status ? "True" : "False") && c.contains("lastTransitionTime") &&
          c["lastTransitionTime"].is_string()) {
        condition.last_transition_time = c["lastTransitionTime"].get<std::string>();
      }
    }
    status.conditions.push_back(std::move(condition));
    json patch = kube::EncodeStatusPatch(status);
    if (patch["status"] != carried) writes.emplace_back(declared.object, std::move(patch));
  }
  if (writes.empty()) return;
  state_->WithoutLock([&] {
    for (auto& [object, patch] : writes) {
      if (absl::Status s = writer_->WriteAffinityGroupStatus(object, std::move(patch)); !s.ok()) {
        spdlog::info("rebalancer: {} (written again next round)", std::string(s.message()));
      }
    }
  });
}

bool Rebalancer::CarryOut(const rebalance::Move& move) {
  auto seen = state_->pods().find(move.pod_uid);
  if (seen == state_->pods().end()) return false;
  const nlohmann::json object = seen->second;
  const std::string key = fmt::format("{}/{}", object["metadata"].value("namespace", ""),
                                      object["metadata"].value("name", ""));
  absl::Status written;
  state_->WithoutLock([&] { written = writer_->MoveAllocation(object, AllocationToJson(move.to)); });
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
