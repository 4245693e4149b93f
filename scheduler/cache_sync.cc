#include "scheduler/cache_sync.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/wire_names.h"
#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "kube/pod_codec.h"
#include "kube/resource.h"
#include "scheduler/objects.h"
#include "spdlog/spdlog.h"

namespace huygens::scheduler {

using nlohmann::json;

// ---- ChangeFeed --------------------------------------------------------------------------

void ChangeFeed::Push(ChangeKind kind, bool deleted, const json& object) {
  {
    absl::MutexLock lock(&mu_);
    changes_.push_back(Change{kind, deleted, object});
  }
  cv_.Signal();
}

kube::InformerHandlers ChangeFeed::HandlersFor(ChangeKind kind) {
  kube::InformerHandlers h;
  h.on_add = [this, kind](const json& o) { Push(kind, false, o); };
  h.on_update = [this, kind](const json&, const json& o) { Push(kind, false, o); };
  h.on_delete = [this, kind](const json& o) { Push(kind, true, o); };
  return h;
}

void ChangeFeed::StartInformers(kube::Client* client, Clock* clock, bool affinity_groups) {
  clock_ = clock;
  nodes_ = std::make_unique<kube::Informer>(client, kube::Nodes(), kube::InformerOptions{},
                                            HandlersFor(ChangeKind::kNode), clock);
  nrts_ = std::make_unique<kube::Informer>(client, kube::NodeResourceTopologies(), kube::InformerOptions{},
                                           HandlersFor(ChangeKind::kNrt), clock);
  pods_ = std::make_unique<kube::Informer>(client, kube::Pods(), kube::InformerOptions{},
                                           HandlersFor(ChangeKind::kPod), clock);
  if (affinity_groups) {
    groups_ = std::make_unique<kube::Informer>(client, kube::NumaAffinityGroups(), kube::InformerOptions{},
                                               HandlersFor(ChangeKind::kAffinityGroup), clock);
  }
  nodes_->Start();
  nrts_->Start();
  pods_->Start();
  if (groups_ != nullptr) groups_->Start();
}

void ChangeFeed::StopInformers() {
  nodes_->Stop();
  nrts_->Stop();
  pods_->Stop();
  if (groups_ != nullptr) groups_->Stop();
}

absl::Status ChangeFeed::AffinityGroupsReady() const {
  if (groups_ == nullptr) return absl::FailedPreconditionError("the NumaAffinityGroup informer is not running");
  return groups_->Ready();
}

bool ChangeFeed::Synced() const { return nodes_->HasSynced() && nrts_->HasSynced() && pods_->HasSynced(); }

std::string ChangeFeed::PodsVersion() const { return pods_->resource_version(); }

std::vector<std::string> ChangeFeed::NotReady(std::set<std::string>* names) const {
  std::vector<std::string> reasons;
  for (const auto& [name, informer] : {std::pair{"nodes", nodes_.get()}, std::pair{"noderesourcetopologies", nrts_.get()},
                                       std::pair{"pods", pods_.get()}}) {
    if (absl::Status s = informer->Ready(); !s.ok()) {
      reasons.emplace_back(s.message());
      if (names != nullptr) names->insert(name);
    }
  }
  return reasons;
}

absl::Status ChangeFeed::Ready() const {
  std::vector<std::string> reasons = NotReady(nullptr);
  if (reasons.empty()) return absl::OkStatus();
  return absl::UnavailableError(absl::StrJoin(reasons, "; "));
}

absl::Status ChangeFeed::Current() {
  // Read before the reasons: once synced, no reason can be "has not listed yet".
  const bool synced = Synced();
  std::set<std::string> stale;
  std::vector<std::string> reasons = NotReady(&stale);
  absl::MutexLock lock(&gate_mu_);
  if (reasons.empty()) {
    if (paused_) {
      const auto paused_for = std::chrono::duration_cast<std::chrono::seconds>(clock_->Now() - paused_at_);
      spdlog::info("scheduling resumed: the {} informer(s) heard from the API server again (paused for {} s)",
                   absl::StrJoin(paused_by_, ", "), paused_for.count());
      paused_ = false;
      paused_by_.clear();
    }
    return absl::OkStatus();
  }
  const std::string why = absl::StrJoin(reasons, "; ");
  if (synced && !paused_) {
    spdlog::warn("scheduling paused: no pod is reserved or bound until the informers are current again: {}", why);
    paused_ = true;
    paused_at_ = clock_->Now();
  }
  if (paused_) paused_by_.insert(stale.begin(), stale.end());
  return absl::UnavailableError(fmt::format("scheduling paused: {}", why));
}

std::deque<Change> ChangeFeed::Take(std::chrono::milliseconds wait, const std::function<bool()>& has_other_work) {
  std::deque<Change> batch;
  absl::MutexLock lock(&mu_);
  if (changes_.empty() && !has_other_work() && wait.count() > 0) cv_.WaitWithTimeout(&mu_, absl::FromChrono(wait));
  batch.swap(changes_);
  return batch;
}

void ChangeFeed::Wake() {
  absl::MutexLock lock(&mu_);
  cv_.Signal();
}

void ChangeFeed::Close() {
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
  }
  cv_.SignalAll();
}

bool ChangeFeed::Closed() const {
  absl::MutexLock lock(&mu_);
  return closed_;
}

// ---- CacheSync ---------------------------------------------------------------------------

int64_t CacheSync::CreationIndex(const std::string& uid) const {
  auto c = creation_.find(uid);
  return c != creation_.end() ? c->second : next_creation_;
}

sched::PodPtr CacheSync::PendingPod(const std::string& uid) const {
  auto stored = pods_.find(uid);
  if (stored == pods_.end()) return nullptr;
  auto pod = PodFromJson(stored->second);
  if (!pod.ok() || !pod->node_name.empty()) return nullptr;
  pod->creation_index = CreationIndex(uid);
  return std::make_shared<const sched::Pod>(*std::move(pod));
}

// Puts one stored bound pod into the cache on its node (AddPod). Returns the error; the caller
// decides what a conflict means.
absl::Status CacheSync::Place(const json& object) {
  auto pod = PodFromJson(object);
  if (!pod.ok()) return pod.status();
  auto allocation = PodAllocationOf(object);
  if (!allocation.ok()) return allocation.status();
  std::string uid = pod->Uid();
  pod->creation_index = creation_[uid];
  auto ptr = std::make_shared<const sched::Pod>(*std::move(pod));
  return cache_.AddPod(ptr, ptr->node_name, *allocation);
}

namespace {

// An assume of ours that the informer does not show yet (its Binding is in flight): the
// rebuilt node must hold it too, or its CPUs would be handed out again before it lands.
struct InFlightAssume {
  sched::PodPtr pod;
  std::optional<PodAllocation> allocation;
  bool binding_finished;
};

}  // namespace

// (Re)builds a node from its Node and NRT objects and re-places every known pod on it: the
// informer's bound pods, then the assumes in flight, which the informer still
// shows pending without an allocation.
void CacheSync::RebuildNode(const std::string& name) {
  std::vector<InFlightAssume> in_flight;
  if (const sched::NodeInfo* info = cache_.FindNode(name); info != nullptr) {
    for (const std::string& uid : info->pod_uids) {
      const sched::ClusterCache::PodEntry* entry = cache_.FindPod(uid);
      if (entry == nullptr || !entry->assumed) continue;
      if (auto on = node_of_.find(uid); on != node_of_.end() && on->second == name) {
        continue;  // the informer's object places it
      }
      in_flight.push_back({entry->pod, entry->allocation, entry->binding_finished});
    }
    (void)cache_.RemoveNode(name);
  }
  auto n = nodes_.find(name);
  auto t = nrts_.find(name);
  if (n == nodes_.end() || t == nrts_.end()) return;
  auto node = NodeFromJson(n->second);
  if (!node.ok()) {
    spdlog::error("{}", std::string(node.status().message()));
    return;
  }
  std::vector<const json*> on_node;
  CpuSet held;
  if (auto indexed = uids_by_node_.find(name); indexed != uids_by_node_.end()) {
    for (const std::string& uid : indexed->second) {  // uid order, as pods_
      const json& object = pods_.at(uid);
      if (PodIsTerminal(object)) continue;
      auto a = PodAllocationOf(object);
      std::optional<PodAllocation> alloc = a.ok() ? *a : std::nullopt;
      if (alloc) held = held.Union(alloc->ExclusiveCpus());
      on_node.push_back(&object);
    }
  }
  // The agent may publish an in-flight pod's CPUs as exclusive before the informer shows it
  // bound: they are ours, not kubelet's.
  for (const InFlightAssume& a : in_flight) {
    if (a.allocation) held = held.Union(a.allocation->ExclusiveCpus());
  }
  NodeDevices devices_in_use;
  auto state = NodeStateFromNrt(t->second, numa_strategy_, held, &devices_in_use);
  if (!state.ok()) {
    ReportInvalidNrt(name, std::string(state.status().message()));
    return;
  }
  if (invalid_nrts_.erase(name) > 0) {
    spdlog::info("node {}: its NodeResourceTopology is valid again: back in scheduling", name);
  }
  node->cpu_state = *std::move(state);
  node->agent_silent = AgentSilent(name);
  if (absl::Status s = cache_.AddNode(*std::move(node)); !s.ok()) {
    spdlog::error("node {}: {}", name, std::string(s.message()));
    return;
  }
  for (const json* object : on_node) {
    absl::Status s = Place(*object);
    if (!s.ok()) spdlog::error("node {}: pod {}: {}", name, kube::ObjectKey(*object), std::string(s.message()));
  }
  for (InFlightAssume& a : in_flight) {
    const std::string uid = a.pod->Uid();
    if (cache_.FindPod(uid) != nullptr) continue;
    absl::Status s = cache_.AssumePod(a.pod, name, std::move(a.allocation), false);
    if (!s.ok()) {
      // A bound pod now holds its CPUs: the Binding in flight will land on a conflict, which
      // the node agent reports; the pod's own update settles the cache.
      spdlog::error("node {}: pod {}/{} (Binding in flight): {}", name, a.pod->spec.namespace_name, a.pod->spec.name,
                    std::string(s.message()));
      continue;
    }
    if (a.binding_finished) (void)cache_.FinishBinding(uid);
  }
  HoldForeignDevices(name, devices_in_use);
  spdlog::info("node {}: rebuilt from its Node and NodeResourceTopology ({} pods, {} of them with a Binding in flight)",
               name, cache_.FindNode(name)->pod_uids.size(), in_flight.size());
  queue_.OnClusterEvent(sched::ClusterEvent::kNodeAdded, QueueTime(*clock_));
}

void CacheSync::JudgeAgents(Clock::Duration timeout, AgentReporter report) {
  agent_timeout_ = timeout;
  on_agent_ = std::move(report);
}

bool CacheSync::AgentSilent(const std::string& name) const {
  auto it = heartbeats_.find(name);
  return it != heartbeats_.end() && it->second.silent;
}

// A heartbeat is judged by when this scheduler saw its value change, on its own clock: the
// value is the agent's wall time, which the two machines need not agree on. The first sighting
// counts as a change, so a scheduler that starts gives every agent the whole timeout.
void CacheSync::NoteHeartbeat(const std::string& name, const json& nrt) {
  const json annotations = nrt["metadata"].value("annotations", json::object());
  const json beat = annotations.is_object() ? annotations.value(kAgentHeartbeatAnnotation, json()) : json();
  if (!beat.is_string()) {
    heartbeats_.erase(name);  // an agent without a heartbeat is not judged
    SetAgentSilent(name, false, "");
    return;
  }
  auto [it, first] = heartbeats_.try_emplace(name);
  Heartbeat& h = it->second;
  if (!first && h.value == beat.get<std::string>()) return;
  h.value = beat.get<std::string>();
  h.seen = clock_->Now();
  if (h.silent) SetAgentSilent(name, false, fmt::format("its Huygens agent reports again (heartbeat {})", h.value));
}

void CacheSync::CheckAgents() {
  if (agent_timeout_ <= Clock::Duration::zero()) return;
  const Clock::TimePoint now = clock_->Now();
  if (now < next_agent_check_) return;
  next_agent_check_ = now + std::chrono::seconds(1);
  for (auto& [name, h] : heartbeats_) {
    if (h.silent || now - h.seen < agent_timeout_) continue;
    SetAgentSilent(name, true,
                   fmt::format("its Huygens agent's heartbeat has not changed for {}s (the limit, "
                               "agentHeartbeatTimeout; last {}): no exclusive pods are placed there until it does",
                               std::chrono::duration_cast<std::chrono::seconds>(now - h.seen).count(), h.value));
  }
}

void CacheSync::SetAgentSilent(const std::string& name, bool silent, const std::string& note) {
  if (auto h = heartbeats_.find(name); h != heartbeats_.end()) h->second.silent = silent;
  const sched::NodeInfo* info = cache_.FindNode(name);
  if (info == nullptr || info->node.agent_silent == silent) return;
  sched::Node node = info->node;
  node.agent_silent = silent;
  (void)cache_.UpdateNode(std::move(node));
  if (silent) {
    spdlog::warn("node {}: {}", name, note);
  } else {
    spdlog::info("node {}: {}", name, note.empty() ? "its agent is no longer judged (no heartbeat)" : note);
    queue_.OnClusterEvent(sched::ClusterEvent::kNodeUpdated, QueueTime(*clock_));
  }
  if (on_agent_ && nrts_.contains(name)) on_agent_(nrts_.at(name), silent, note);
}

void CacheSync::ReportInvalidNrt(const std::string& name, const std::string& why) {
  auto [entry, added] = invalid_nrts_.try_emplace(name, why);
  if (!added && entry->second == why) return;  // said already
  entry->second = why;
  spdlog::error("node {}: left out of scheduling until its NodeResourceTopology is valid: {}", name, why);
  if (on_invalid_nrt_) on_invalid_nrt_(nrts_.at(name), why);
}

// The devices the node's zones report in use beyond what the pods just placed hold (per
// resource and NUMA node) belong to pods the cache does not account (another scheduler's, or
// kubelet's alone): they are kept out of the free devices until the next rebuild. A pod of ours
// that kubelet has not started yet is not in the zones' figure, so on its NUMA node the
// difference can undercount by its devices until the next publication; it never overcounts
// but for a pod of ours that just left (the agent's next pass frees it).
void CacheSync::HoldForeignDevices(const std::string& name, const NodeDevices& devices_in_use) {
  const NodeState& state = *cache_.FindNode(name)->cpu_state;
  if (devices_in_use.empty() && state.ForeignDevices().empty()) return;
  NodeDevices foreign;
  for (const auto& [resource, counts] : devices_in_use) {
    const auto& allocatable = state.Config().devices.at(resource);
    const auto& free = state.DevicesFree().at(resource);
    const auto elsewhere = state.ForeignDevices().find(resource);
    for (const auto& [numa, in_use] : counts) {
      int64_t held_here = allocatable.at(numa) - free.at(numa);
      if (elsewhere != state.ForeignDevices().end() && elsewhere->second.contains(numa)) {
        held_here -= elsewhere->second.at(numa);
      }
      if (in_use > held_here) foreign[resource][numa] = in_use - held_here;
    }
  }
  if (foreign == state.ForeignDevices()) return;
  auto held = cache_.HoldForeignDevices(name, foreign);
  if (!held.ok()) {
    spdlog::error("node {}: {}", name, std::string(held.status().message()));
    return;
  }
  for (const auto& [resource, counts] : *held) {
    for (const auto& [numa, n] : counts) {
      spdlog::info("node {}: {} {} on NUMA node {} in use by pods Huygens does not account (the "
                   "NodeResourceTopology's available); kept out until its next update",
                   name, n, resource, numa);
    }
  }
}

// A publication whose zones alone changed: a device resource added, removed or resized (the
// device plugin changed) rebuilds the node; otherwise only the devices in use elsewhere are
// recounted.
void CacheSync::ApplyZoneDevices(const std::string& name) {
  const sched::NodeInfo* info = cache_.FindNode(name);
  if (info == nullptr || info->cpu_state == nullptr) return;
  NodeDevices in_use;
  absl::StatusOr<NodeDevices> devices = DevicesFromNrt(nrts_.at(name), &in_use);
  // An invalid publication takes the node out (the rebuild fails on it and says why); a device
  // resource added, removed or resized rebuilds it.
  if (!devices.ok() || *devices != info->cpu_state->Config().devices) {
    RebuildNode(name);
    return;
  }
  HoldForeignDevices(name, in_use);
}

void CacheSync::StorePod(const std::string& uid, const json& object) {
  ErasePod(uid);
  std::string node = object["spec"].value("nodeName", "");
  pods_[uid] = object;
  uid_by_key_[kube::ObjectKey(object)] = uid;
  if (node.empty()) return;
  uids_by_node_[node].insert(uid);
  node_of_[uid] = std::move(node);
}

void CacheSync::ErasePod(const std::string& uid) {
  auto stored = pods_.find(uid);
  if (stored == pods_.end()) return;
  if (auto by_key = uid_by_key_.find(kube::ObjectKey(stored->second));
      by_key != uid_by_key_.end() && by_key->second == uid) {
    uid_by_key_.erase(by_key);
  }
  pods_.erase(stored);
  auto on = node_of_.find(uid);
  if (on == node_of_.end()) return;
  auto indexed = uids_by_node_.find(on->second);
  indexed->second.erase(uid);
  if (indexed->second.empty()) uids_by_node_.erase(indexed);
  node_of_.erase(on);
}

void CacheSync::DropPod(const std::string& uid, bool deleted) {
  if (deleted && deleted_.insert(uid).second) {
    deleted_order_.push_back(uid);
    if (deleted_order_.size() > kDeletedUids) {
      deleted_.erase(deleted_order_.front());
      deleted_order_.pop_front();
    }
  }
  ErasePod(uid);
  creation_.erase(uid);
  bool was_cached = cache_.FindPod(uid) != nullptr;
  if (was_cached) (void)cache_.RemovePod(uid);
  queue_.Delete(uid);
  if (was_cached) queue_.OnClusterEvent(sched::ClusterEvent::kPodDeleted, QueueTime(*clock_));
}

namespace {

std::optional<std::uint64_t> VersionOf(const json& object) {
  return kube::ResourceVersionNumber(object["metadata"].value("resourceVersion", ""));
}

}  // namespace

// Two uids under one namespace/name: the name was deleted and re-created. At any version one
// uid at most holds the name, so the one seen at the earlier resourceVersion is gone (without
// versions: the one that arrived last is the live one).
bool CacheSync::SettleRecreated(const std::string& uid, const json& object) {
  const std::string key = kube::ObjectKey(object);
  auto held = uid_by_key_.find(key);
  if (held == uid_by_key_.end() || held->second == uid) return true;
  const std::string other = held->second;
  const auto have = VersionOf(pods_.at(other));
  const auto got = VersionOf(object);
  if (have && got && *got < *have) {
    spdlog::info("pod {}: uid {} is older than uid {} of the same name: deleted", key, uid, other);
    DropPod(uid, true);
    return false;
  }
  spdlog::info("pod {}: deleted and re-created (uid {} replaces {}); the old pod is deleted", key, uid, other);
  DropPod(other, true);
  return true;
}

void CacheSync::ApplyPod(const json& object, bool deleted) {
  std::string uid = object["metadata"].value("uid", "");
  if (uid.empty()) return;
  if (!deleted && deleted_.count(uid) > 0) return;  // an older version of a deleted pod
  if (auto stored = pods_.find(uid); !deleted && stored != pods_.end()) {
    const auto have = VersionOf(stored->second);
    const auto got = VersionOf(object);
    if (have && got && *got < *have) return;  // an older version than a direct read gave
  }
  if (!deleted && !SettleRecreated(uid, object)) return;
  if (deleted || PodIsTerminal(object)) {
    DropPod(uid, deleted);
    return;
  }
  if (!creation_.count(uid)) creation_[uid] = next_creation_++;
  auto allocation = PodAllocationOf(object);
  StorePod(uid, object);
  auto pod = PodFromJson(object);
  if (!pod.ok()) {
    spdlog::warn("{}", std::string(pod.status().message()));
    return;
  }
  const sched::ClusterCache::PodEntry* entry = cache_.FindPod(uid);
  if (!pod->node_name.empty()) {
    queue_.Delete(uid);
    if (entry != nullptr && !entry->assumed) {
      // Already counted. A new allocation on a bound pod is a rebalancer's move (ours, already
      // in the cache, or another replica's): the cache follows it. One the pod cannot hold (a
      // size its request does not give, CPUs another pod holds) is not a move any replica
      // wrote: the pod keeps the CPUs it holds, and nobody else gets them.
      if (allocation.ok() && allocation->has_value() && entry->allocation != **allocation) {
        if (absl::Status s = cache_.MovePod(uid, **allocation); !s.ok()) {
          spdlog::warn("pod {}: huygens.io/allocation changed to one it cannot hold ({}); it keeps {}",
                       kube::ObjectKey(object), std::string(s.message()),
                       entry->allocation.has_value() ? DescribeAllocation(*entry->allocation) : "no allocation");
        }
      }
      return;
    }
    if (entry != nullptr && entry->node != pod->node_name) (void)cache_.ForgetPod(uid);
    if (cache_.FindNode(pod->node_name) == nullptr) return;  // placed when the node is built
    absl::Status s = Place(object);
    if (s.code() == absl::StatusCode::kFailedPrecondition) {
      RebuildNode(pod->node_name);  // CPUs counted as kubelet's before the pod was seen
    } else if (!s.ok()) {
      spdlog::warn("pod {}: {}", kube::ObjectKey(object), std::string(s.message()));
    }
    return;
  }
  // A pending pod being deleted is never scheduled (kube-scheduler v1.35's skipPodSchedule) and
  // the API server refuses its Binding. It leaves the queue, and a reservation of it is released:
  // this version shows it unbound, and no Binding of it lands after this version.
  if (PodIsBeingDeleted(object)) {
    queue_.Delete(uid);
    if (entry == nullptr) return;
    spdlog::info("pod {}: being deleted before its Binding landed; its reservation on node {} is released",
                 kube::ObjectKey(object), entry->node);
    (void)cache_.RemovePod(uid);
    queue_.OnClusterEvent(sched::ClusterEvent::kPodDeleted, QueueTime(*clock_));
    return;
  }
  // A pending pod's huygens.io/allocation is not ours (ours rides on the Binding): it holds
  // nothing, and the pod is scheduled like any other (the Binding replaces the annotation).
  if (extender_ || !has_profile_(pod->scheduler_name)) return;  // extender: kube-scheduler asks
  // A version that arrives while our Binding is out (or kept for a retry) leaves the pod where
  // it is: popped, or queued for that retry.
  if (entry != nullptr && entry->binding_finished) return;
  // Gated (kube-scheduler v1.35's SchedulingGates PreEnqueue): not attempted until a version
  // without gates arrives; queued before, it leaves the queue.
  if (!pod->scheduling_gates.empty()) {
    queue_.Delete(uid);
    if (on_gated_) on_gated_(object);
    return;
  }
  pod->creation_index = creation_[uid];
  queue_.Add(std::make_shared<const sched::Pod>(*std::move(pod)), QueueTime(*clock_));
}

void CacheSync::Apply(const Change& c) {
  std::string name = c.object["metadata"].value("name", "");
  switch (c.kind) {
    case ChangeKind::kNode: {
      if (c.deleted) {
        nodes_.erase(name);
        if (cache_.FindNode(name) != nullptr) (void)cache_.RemoveNode(name);
        return;
      }
      bool known = cache_.FindNode(name) != nullptr;
      nodes_[name] = c.object;
      if (!known) {
        RebuildNode(name);
        return;
      }
      auto node = NodeFromJson(c.object);
      if (!node.ok()) return;
      node->cpu_state = cache_.FindNode(name)->node.cpu_state;
      node->agent_silent = AgentSilent(name);
      (void)cache_.UpdateNode(*std::move(node));
      queue_.OnClusterEvent(sched::ClusterEvent::kNodeUpdated, QueueTime(*clock_));
      return;
    }
    case ChangeKind::kNrt: {
      if (c.deleted) {
        nrts_.erase(name);
        invalid_nrts_.erase(name);
        heartbeats_.erase(name);
        if (cache_.FindNode(name) != nullptr) (void)cache_.RemoveNode(name);
        return;
      }
      NoteHeartbeat(name, c.object);
      auto it = nrts_.find(name);
      // After an invalid version every change is read in full (a change of zones alone may be
      // the fix).
      // The observed affinity (read by the rebalancer from nrts()) and the agent's heartbeat do
      // not shape the CPU state.
      auto shaping = [](const json& nrt) {
        json annotations = nrt["metadata"].value("annotations", json::object());
        if (annotations.is_object()) {
          annotations.erase(kPodTrafficAnnotation);
          annotations.erase(kAgentHeartbeatAnnotation);
        }
        return annotations;
      };
      if (it != nrts_.end() && !invalid_nrts_.contains(name) && shaping(it->second) == shaping(c.object) &&
          it->second.value("attributes", json()) == c.object.value("attributes", json())) {
        it->second = c.object;  // only counters or traffic changed: the CPU state is ours
        ApplyZoneDevices(name);
        return;
      }
      nrts_[name] = c.object;
      RebuildNode(name);
      return;
    }
    case ChangeKind::kPod:
      ApplyPod(c.object, c.deleted);
      return;
    case ChangeKind::kAffinityGroup: {
      const std::string key = kube::ObjectKey(c.object);
      if (c.deleted) {
        affinity_groups_.erase(key);
        return;
      }
      absl::StatusOr<kube::NumaAffinityGroup> group = kube::DecodeNumaAffinityGroup(c.object);
      if (!group.ok()) {
        spdlog::warn("{}; the rebalancer leaves the group out until it is fixed", std::string(group.status().message()));
        affinity_groups_.erase(key);
        return;
      }
      affinity_groups_[key] = DeclaredGroup{*std::move(group), c.object};
      return;
    }
  }
}

}  // namespace huygens::scheduler
