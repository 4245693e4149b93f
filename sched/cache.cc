#include "sched/cache.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "alloc/huygens_allocator.h"
#include "fmt/format.h"

namespace huygens::sched {
namespace {

// absl's string_view is not std::string_view here: heterogeneous lookups need absl's.
absl::string_view Key(std::string_view s) { return absl::string_view(s.data(), s.size()); }

bool WildcardIp(const std::string& ip) { return ip.empty() || ip == "0.0.0.0"; }

bool SamePortEntry(const HostPort& a, const HostPort& b) {
  return a.port == b.port && a.protocol == b.protocol &&
         (a.host_ip == b.host_ip || (WildcardIp(a.host_ip) && WildcardIp(b.host_ip)));
}

}  // namespace

void ClusterCache::Touch(NodeInfo& info) {
  info.generation = ++generation_;
  generations_[static_cast<size_t>(info.index)] = info.generation;
  NodeSummary& s = info.summary;
  const Node& n = info.node;
  s.cpu_allocatable_milli = n.allocatable.cpu_milli;
  s.cpu_requested_milli = info.requested.cpu_milli;
  s.memory_allocatable_bytes = n.allocatable.memory_bytes;
  s.memory_requested_bytes = info.requested.memory_bytes;
  auto isolated = n.allocatable.extended.find(kIsolatedCpuResource);
  s.isolated_allocatable = isolated == n.allocatable.extended.end() ? 0 : isolated->second;
  s.isolated_requested = info.requested.isolated_cpus;
  s.pods = info.NumPods();
  s.max_pods = static_cast<int32_t>(n.allocatable.pods);
  s.unschedulable = n.unschedulable;
  s.hard_taints = s.prefer_taints = false;
  for (const Taint& t : n.taints) {
    (t.effect == TaintEffect::kPreferNoSchedule ? s.prefer_taints : s.hard_taints) = true;
  }
  s.ports_in_use = !info.used_ports.empty();
  s.has_cpu_state = info.cpu_state != nullptr;
  s.numa_inline = false;
  s.num_numa = 0;
  CountOffers(info, -1);
  info.numa_capacity.clear();
  if (!s.has_cpu_state) return;
  const NodeState& cpu = *info.cpu_state;
  const NodeConfig& config = cpu.Config();
  for (const NumaCounters& c : cpu.Counters()) {
    if (c.user_cpus <= 0) continue;
    auto factor = config.capacity.find(c.numa);
    info.numa_capacity.push_back(
        {c.user_cpus, NumaOfferFromCounts(config.default_bind_policy, cpu.Topology().CpusPerCore(),
                                          c.free_cpus, c.free_cores,
                                          factor == config.capacity.end() ? 1.0 : factor->second)});
  }
  CountOffers(info, +1);
  s.mode = config.mode;
  s.topology_policy = config.topology_policy;
  s.topology_scope = config.topology_scope;
  s.default_bind_policy = config.default_bind_policy;
  s.numa_strategy = config.numa_strategy;
  s.threads_per_core = static_cast<int16_t>(std::max(1, cpu.Topology().CpusPerCore()));
  s.shared_requested_milli = cpu.SharedRequestedMilli();
  s.numa_inline = config.capacity.empty();
  for (const NumaCounters& c : cpu.Counters()) {
    if (c.user_cpus <= 0) continue;
    if (s.num_numa == NodeSummary::kInlineNuma || c.user_cpus > INT16_MAX || c.numa > INT8_MAX ||
        c.unshared_threads > INT8_MAX) {
      s.numa_inline = false;
      break;
    }
    s.numa[s.num_numa++] = {static_cast<int16_t>(c.user_cpus), static_cast<int16_t>(c.free_cpus),
                            static_cast<int16_t>(c.free_cores), static_cast<int8_t>(c.numa),
                            static_cast<int8_t>(c.unshared_threads)};
  }
}

void ClusterCache::CountOffers(const NodeInfo& info, int delta) {
  auto count = [delta](std::map<int, int64_t>& counts, int key) {
    if (key <= 0) return;
    auto it = counts.try_emplace(key, 0).first;
    if ((it->second += delta) <= 0) counts.erase(it);
  };
  for (const NodeInfo::NumaCapacity& numa : info.numa_capacity) {
    count(numa_offers_, numa.offer);
    count(numa_sizes_, numa.user_cpus);
  }
}

int ClusterCache::LargestNumaNode() const {
  return numa_sizes_.empty() ? 0 : numa_sizes_.rbegin()->first;
}

int64_t ClusterCache::NumaSlots(int cpus) const {
  if (cpus <= 0) return 0;
  int64_t slots = 0;
  for (auto it = numa_offers_.lower_bound(cpus); it != numa_offers_.end(); ++it) {
    slots += (it->first / cpus) * it->second;
  }
  return slots;
}

absl::Status ClusterCache::AddNode(Node node) {
  if (node.name.empty()) return absl::InvalidArgumentError("node: name is empty");
  if (by_name_.contains(node.name)) {
    return absl::AlreadyExistsError(fmt::format("node {:?} is already in the cache", node.name));
  }
  NodeInfo* raw;
  if (!free_slots_.empty()) {
    raw = free_slots_.back();
    free_slots_.pop_back();
  } else {
    raw = &slots_.emplace_back();
  }
  if (node.cpu_state != nullptr) raw->cpu_state = std::make_unique<NodeState>(*node.cpu_state);
  raw->node = std::move(node);
  CountImages(raw->node, 1);
  ++image_generation_;
  raw->index = static_cast<int>(order_.size());
  by_name_.emplace(raw->node.name, raw);
  order_.push_back(raw);
  generations_.push_back(0);
  Touch(*raw);
  return absl::OkStatus();
}

absl::Status ClusterCache::UpdateNode(Node node) {
  auto it = by_name_.find(node.name);
  if (it == by_name_.end()) {
    return absl::NotFoundError(fmt::format("node {:?} is not in the cache", node.name));
  }
  NodeInfo& info = *it->second;
  node.cpu_state = info.node.cpu_state;  // the CPU state is kept (see the header)
  if (node.images != info.node.images) {
    CountImages(info.node, -1);
    CountImages(node, 1);
    ++image_generation_;
  }
  info.node = std::move(node);
  Touch(info);
  return absl::OkStatus();
}

absl::Status ClusterCache::RemoveNode(std::string_view name) {
  auto it = by_name_.find(Key(name));
  if (it == by_name_.end()) {
    return absl::NotFoundError(fmt::format("node {:?} is not in the cache", name));
  }
  NodeInfo* info = it->second;
  for (const std::string& uid : info->pod_uids) {
    auto pod = pods_.find(Key(uid));
    if (pod == pods_.end()) continue;
    const std::string& group = pod->second.pod->spec.affinity_group;
    if (!group.empty()) {
      auto g = groups_.find(Key(group));
      if (g != groups_.end()) {
        g->second.erase(info);
        if (g->second.empty()) groups_.erase(g);
      }
    }
    CountExclusive(pod->second.allocation, -1);
    pods_.erase(pod);
  }
  if (!info->pods_with_affinity.empty()) {
    std::erase(nodes_with_affinity_, info);
  }
  CountOffers(*info, -1);
  CountImages(info->node, -1);
  ++image_generation_;
  by_name_.erase(it);
  const int index = info->index;
  order_[static_cast<size_t>(index)] = order_.back();
  order_[static_cast<size_t>(index)]->index = index;
  order_.pop_back();
  generations_[static_cast<size_t>(index)] = generations_.back();
  generations_.pop_back();
  *info = NodeInfo();  // the slot is reused by a later AddNode
  free_slots_.push_back(info);
  ++generation_;
  return absl::OkStatus();
}

absl::Status ClusterCache::Place(PodPtr pod, NodeInfo& info,
                                 std::optional<PodAllocation> allocation,
                                 bool allocation_applied, bool assumed) {
  const std::string& uid = pod->Uid();
  if (uid.empty()) return absl::InvalidArgumentError("pod: uid is empty");
  if (pods_.contains(uid)) {
    return absl::AlreadyExistsError(fmt::format("pod {:?} is already in the cache", uid));
  }
  if (allocation.has_value() && info.cpu_state != nullptr && !allocation_applied) {
    absl::Status s = info.cpu_state->Assume(pod->spec, *allocation);
    if (!s.ok()) {
      return absl::FailedPreconditionError(fmt::format(
          "pod {:?} on node {:?}: allocation does not fit: {}", uid, info.node.name,
          std::string(s.message())));
    }
  }
  CountRequests(*pod, info, +1);
  for (const HostPort& p : pod->host_ports) {
    auto used = std::find_if(info.used_ports.begin(), info.used_ports.end(),
                             [&](const UsedPort& u) { return SamePortEntry(u.port, p); });
    if (used != info.used_ports.end()) {
      ++used->count;
    } else {
      info.used_ports.push_back({p, 1});
    }
  }
  info.pod_uids.push_back(uid);
  CountPodAffinity(*pod, info, +1);
  CountGroup(*pod, allocation, info, +1);
  CountExclusive(allocation, +1);
  PodEntry entry{std::move(pod), info.node.name, std::move(allocation), assumed, false};
  pods_.emplace(uid, std::move(entry));
  Touch(info);
  return absl::OkStatus();
}

void ClusterCache::Unplace(PodEntry& entry, NodeInfo& info) {
  const Pod& pod = *entry.pod;
  if (info.cpu_state != nullptr && info.cpu_state->SpecOf(pod.Uid()) != nullptr) {
    // The state knows the pod, so releasing it cannot fail.
    (void)info.cpu_state->ReleasePod(pod.Uid());
  }
  CountRequests(pod, info, -1);
  for (const HostPort& p : pod.host_ports) {
    auto used = std::find_if(info.used_ports.begin(), info.used_ports.end(),
                             [&](const UsedPort& u) { return SamePortEntry(u.port, p); });
    if (used != info.used_ports.end() && --used->count == 0) info.used_ports.erase(used);
  }
  info.pod_uids.erase(std::find(info.pod_uids.begin(), info.pod_uids.end(), pod.Uid()));
  CountPodAffinity(pod, info, -1);
  CountGroup(pod, entry.allocation, info, -1);
  CountExclusive(entry.allocation, -1);
  Touch(info);
}

void ClusterCache::CountPodAffinity(const Pod& pod, NodeInfo& info, int delta) {
  if (pod.pod_affinity.empty()) return;
  const bool had = !info.pods_with_affinity.empty();
  auto update = [&pod, delta](std::vector<const Pod*>& list) {
    if (delta > 0) {
      list.push_back(&pod);
    } else {
      list.erase(std::find(list.begin(), list.end(), &pod));
    }
  };
  update(info.pods_with_affinity);
  if (!pod.pod_affinity.required_anti.empty()) update(info.pods_with_required_anti_affinity);
  const bool has = !info.pods_with_affinity.empty();
  if (!had && has) nodes_with_affinity_.push_back(&info);
  if (had && !has) std::erase(nodes_with_affinity_, &info);
}

void ClusterCache::SetNamespaceLabels(std::string name, Labels labels) {
  namespace_labels_.insert_or_assign(std::move(name), std::move(labels));
  ++generation_;
}

void ClusterCache::RemoveNamespace(std::string_view name) {
  if (namespace_labels_.erase(Key(name)) > 0) ++generation_;
}

const Labels* ClusterCache::NamespaceLabels(std::string_view name) const {
  auto it = namespace_labels_.find(Key(name));
  return it == namespace_labels_.end() ? nullptr : &it->second;
}

void ClusterCache::CountImages(const Node& node, int delta) {
  for (const auto& [name, size] : node.images) {
    auto it = image_nodes_.try_emplace(name, 0).first;
    if ((it->second += delta) == 0) image_nodes_.erase(it);
  }
}

int ClusterCache::NodesWithImage(std::string_view image) const {
  auto it = image_nodes_.find(Key(image));
  return it == image_nodes_.end() ? 0 : it->second;
}

void ClusterCache::CountRequests(const Pod& pod, NodeInfo& info, int delta) {
  const PodRequests r = ComputePodRequests(pod);
  info.requested.cpu_milli += delta * r.cpu_milli;
  info.requested.memory_bytes += delta * r.memory_bytes;
  info.requested.isolated_cpus += delta * r.isolated_cpus;
  info.requested.non_zero_cpu_milli += delta * r.non_zero_cpu_milli;
  info.requested.non_zero_memory_bytes += delta * r.non_zero_memory_bytes;
  for (const auto& [name, amount] : pod.extended_requests) {
    auto it = info.requested_extended.try_emplace(name, 0).first;
    if ((it->second += delta * amount) == 0) info.requested_extended.erase(it);
  }
}

void ClusterCache::CountGroup(const Pod& pod, const std::optional<PodAllocation>& allocation,
                              NodeInfo& info, int delta) {
  if (pod.spec.affinity_group.empty()) return;
  auto g = groups_.try_emplace(pod.spec.affinity_group).first;
  std::map<int, int>& where = g->second[&info];
  auto count = [&](int numa) {
    auto c = where.try_emplace(numa, 0).first;
    if ((c->second += delta) <= 0) where.erase(c);
  };
  if (allocation.has_value() && !allocation->numa_nodes.empty()) {
    for (int numa : allocation->numa_nodes) count(numa);
  } else {
    count(-1);
  }
  if (where.empty()) g->second.erase(&info);
  if (g->second.empty()) groups_.erase(g);
}

void ClusterCache::CountExclusive(const std::optional<PodAllocation>& allocation, int delta) {
  if (!allocation.has_value()) return;
  const int size = allocation->ExclusiveCpus().Size();
  if (size == 0) return;
  auto it = exclusive_sizes_.try_emplace(size, 0).first;
  if ((it->second += delta) <= 0) exclusive_sizes_.erase(it);
}

absl::StatusOr<CpuSet> ClusterCache::ResizeContainer(std::string_view uid,
                                                     std::string_view container, int num_cpus) {
  auto it = pods_.find(Key(uid));
  if (it == pods_.end()) {
    return absl::NotFoundError(fmt::format("pod {:?} is not in the cache", uid));
  }
  PodEntry& entry = it->second;
  NodeInfo& info = *by_name_.at(entry.node);
  if (info.cpu_state == nullptr) {
    return absl::FailedPreconditionError(fmt::format(
        "pod {:?}: node {:?} has no CPU state (NUMA-blind), nothing to resize", uid, entry.node));
  }
  absl::StatusOr<CpuSet> cpus =
      info.cpu_state->ResizeContainer(std::string(uid), std::string(container), num_cpus);
  if (!cpus.ok()) return cpus.status();
  auto resized = std::make_shared<Pod>(*entry.pod);
  for (auto* list : {&resized->spec.init_containers, &resized->spec.containers}) {
    for (ContainerSpec& c : *list) {
      if (c.name != container) continue;
      if (info.cpu_state->Config().mode == NodeMode::kIsolated) {
        c.isolated_cpus = num_cpus;
      } else {
        c.cpu_request_milli = c.cpu_limit_milli = int64_t{num_cpus} * 1000;
      }
    }
  }
  CountRequests(*entry.pod, info, -1);
  CountGroup(*entry.pod, entry.allocation, info, -1);
  CountExclusive(entry.allocation, -1);
  entry.pod = std::move(resized);
  entry.allocation = info.cpu_state->Pods().at(std::string(uid));
  CountRequests(*entry.pod, info, +1);
  CountGroup(*entry.pod, entry.allocation, info, +1);
  CountExclusive(entry.allocation, +1);
  Touch(info);
  return cpus;
}

absl::Status ClusterCache::MovePod(std::string_view uid, const PodAllocation& allocation) {
  auto it = pods_.find(Key(uid));
  if (it == pods_.end()) {
    return absl::NotFoundError(fmt::format("pod {:?} is not in the cache", uid));
  }
  PodEntry& entry = it->second;
  NodeInfo& info = *by_name_.at(entry.node);
  if (entry.assumed || !entry.allocation.has_value() || info.cpu_state == nullptr ||
      (!allocation.node.empty() && allocation.node != entry.node)) {
    return absl::FailedPreconditionError(fmt::format(
        "pod {:?}: only a bound pod with an allocation moves, inside its node {:?}", uid,
        entry.node));
  }
  if (absl::Status s = info.cpu_state->ReplaceAllocation(std::string(uid), allocation); !s.ok()) {
    return s;
  }
  CountGroup(*entry.pod, entry.allocation, info, -1);
  CountExclusive(entry.allocation, -1);
  entry.allocation = info.cpu_state->Pods().at(std::string(uid));
  CountGroup(*entry.pod, entry.allocation, info, +1);
  CountExclusive(entry.allocation, +1);
  Touch(info);
  return absl::OkStatus();
}

absl::Status ClusterCache::AddPod(PodPtr pod, std::string_view node,
                                  std::optional<PodAllocation> allocation) {
  auto it = by_name_.find(Key(node));
  if (it == by_name_.end()) {
    return absl::NotFoundError(fmt::format("pod {:?}: node {:?} is not in the cache",
                                           pod->Uid(), node));
  }
  auto existing = pods_.find(pod->Uid());
  if (existing != pods_.end()) {
    if (!existing->second.assumed) {
      return absl::AlreadyExistsError(
          fmt::format("pod {:?} is already bound to node {:?}", pod->Uid(),
                      existing->second.node));
    }
    if (existing->second.node == node && existing->second.allocation == allocation) {  // the bind we sent, confirmed
      existing->second.assumed = false;
      existing->second.pod = std::move(pod);
      ++generation_;
      return absl::OkStatus();
    }
    // Bound elsewhere, or with other CPUs (another leader's Binding landed, not ours): the
    // bound allocation replaces the assume.
    absl::Status s = ForgetPod(pod->Uid());
    if (!s.ok()) return s;
  }
  return Place(std::move(pod), *it->second, std::move(allocation), false, /*assumed=*/false);
}

absl::Status ClusterCache::RemovePod(std::string_view uid) {
  auto it = pods_.find(Key(uid));
  if (it == pods_.end()) {
    return absl::NotFoundError(fmt::format("pod {:?} is not in the cache", uid));
  }
  Unplace(it->second, *by_name_.at(it->second.node));
  pods_.erase(it);
  return absl::OkStatus();
}

absl::Status ClusterCache::AssumePod(PodPtr pod, std::string_view node,
                                     std::optional<PodAllocation> allocation,
                                     bool allocation_applied) {
  auto it = by_name_.find(Key(node));
  if (it == by_name_.end()) {
    return absl::NotFoundError(fmt::format("pod {:?}: node {:?} is not in the cache",
                                           pod->Uid(), node));
  }
  return Place(std::move(pod), *it->second, std::move(allocation), allocation_applied,
               /*assumed=*/true);
}

absl::Status ClusterCache::ForgetPod(std::string_view uid) {
  auto it = pods_.find(Key(uid));
  if (it == pods_.end()) {
    return absl::NotFoundError(fmt::format("pod {:?} is not in the cache", uid));
  }
  if (!it->second.assumed) {
    return absl::FailedPreconditionError(
        fmt::format("pod {:?} is bound to node {:?}, not assumed", uid, it->second.node));
  }
  Unplace(it->second, *by_name_.at(it->second.node));
  pods_.erase(it);
  return absl::OkStatus();
}

absl::Status ClusterCache::FinishBinding(std::string_view uid) {
  auto it = pods_.find(Key(uid));
  if (it == pods_.end() || !it->second.assumed) {
    return absl::NotFoundError(fmt::format("pod {:?} is not assumed", uid));
  }
  it->second.binding_finished = true;
  return absl::OkStatus();
}

const NodeInfo* ClusterCache::FindNode(std::string_view name) const {
  auto it = by_name_.find(Key(name));
  return it == by_name_.end() ? nullptr : it->second;
}

NodeState* ClusterCache::MutableCpuState(std::string_view name) {
  auto it = by_name_.find(Key(name));
  return it == by_name_.end() ? nullptr : it->second->cpu_state.get();
}

absl::StatusOr<NodeDevices> ClusterCache::HoldForeignDevices(std::string_view name,
                                                            const NodeDevices& devices) {
  auto it = by_name_.find(Key(name));
  if (it == by_name_.end()) return absl::NotFoundError(fmt::format("node {:?} is not in the cache", name));
  NodeInfo& info = *it->second;
  if (info.cpu_state == nullptr) {
    return absl::FailedPreconditionError(fmt::format("node {:?} is NUMA-blind (no CPU state)", name));
  }
  NodeDevices held = info.cpu_state->HoldForeignDevices(devices);
  Touch(info);
  return held;
}

const ClusterCache::PodEntry* ClusterCache::FindPod(std::string_view uid) const {
  auto it = pods_.find(Key(uid));
  return it == pods_.end() ? nullptr : &it->second;
}

std::vector<int> GroupNumaNodes(const AffinityGroupPlacement& placement, const NodeInfo& node) {
  std::vector<int> out;
  auto here = placement.find(&node);
  if (here == placement.end()) return out;
  int most = 0;
  for (const auto& [numa, count] : here->second) {
    if (numa >= 0) most = std::max(most, count);
  }
  for (const auto& [numa, count] : here->second) {
    if (numa >= 0 && count > 0 && count == most) out.push_back(numa);
  }
  return out;
}

const AffinityGroupPlacement* ClusterCache::AffinityGroup(std::string_view group) const {
  auto it = groups_.find(Key(group));
  return it == groups_.end() ? nullptr : &it->second;
}

}  // namespace huygens::sched
