#include "scheduler/scheduling_loop.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "base/wire_names.h"
#include "fmt/format.h"
#include "kube/api_error.h"
#include "kube/resource.h"
#include "node/allocation.h"
#include "sched/framework.h"
#include "scheduler/objects.h"
#include "spdlog/spdlog.h"

namespace huygens::scheduler {

using nlohmann::json;

const ProfileConfig* ProfileFor(const std::vector<ProfileConfig>& profiles, const std::string& scheduler_name) {
  for (const ProfileConfig& p : profiles) {
    if (p.scheduler_name == scheduler_name) return &p;
  }
  return nullptr;
}

void PreparePod(sched::Pod& pod, const ProfileConfig& profile, const SchedulerConfig& config) {
  if (!pod.spec.topology_policy) pod.spec.topology_policy = profile.default_topology_policy;
  if (!pod.spec.bind_policy) pod.spec.bind_policy = profile.default_bind_policy;
  for (const std::string& ns : config.system_pool_namespaces) {
    if (pod.spec.namespace_name == ns) pod.spec.cpu_policy = CpuPolicy::kNone;
  }
}

bool HasExclusiveCpus(const sched::Pod& pod) {
  sched::PodFacts facts;
  sched::ComputePodFacts(pod, facts);
  return !facts.units.empty();
}

bool FencedByUs(const nlohmann::json& pod, const std::vector<ProfileConfig>& profiles, const SchedulerConfig& config) {
  if (!config.extender_enabled) {
    return ProfileFor(profiles, pod.value("spec", nlohmann::json::object()).value("schedulerName", "default-scheduler")) !=
           nullptr;
  }
  absl::StatusOr<sched::Pod> decoded = PodFromJson(pod);
  if (!decoded.ok()) return false;  // the extender refuses it too: no Binding of ours
  PreparePod(*decoded, profiles.front(), config);
  return HasExclusiveCpus(*decoded);
}

void LogVerdicts(const std::string& pod, const std::vector<sched::NodeVerdict>& verdicts) {
  for (const sched::NodeVerdict& v : verdicts) {
    if (!v.refusal.empty()) {
      spdlog::debug("pod {}: node {} refused: {}", pod, v.node, v.refusal);
    } else if (v.score.has_value()) {
      spdlog::debug("pod {}: node {} feasible, score {}", pod, v.node, *v.score);
    } else {
      spdlog::debug("pod {}: node {} feasible", pod, v.node);
    }
  }
}

namespace {

// The debug lines of one attempt of `pod` (namespace/name): each visited node's verdict
// (LogVerdicts), then the outcome: the chosen node with the NUMA nodes and cpusets, or why not.
void LogAttempt(const std::string& pod, const std::vector<sched::NodeVerdict>& verdicts,
                const sched::ScheduleResult& result) {
  LogVerdicts(pod, verdicts);
  switch (result.outcome) {
    case sched::ScheduleResult::Outcome::kScheduled:
      spdlog::debug("pod {}: chose node {} ({} of {} visited nodes feasible): {}", pod, result.node,
                    result.feasible_nodes, result.evaluated_nodes,
                    result.allocation.has_value() ? DescribeAllocation(*result.allocation)
                                                  : "no allocation");
      return;
    case sched::ScheduleResult::Outcome::kUnschedulable:
      spdlog::debug("pod {}: unschedulable: {}", pod, result.message);
      return;
    case sched::ScheduleResult::Outcome::kError:
      spdlog::debug("pod {}: scheduling error: {}", pod, result.message);
      return;
  }
}

}  // namespace

void SchedulingLoop::ScheduleNext() {
  sched::ClusterCache& cache = p_.state->cache();
  sched::SchedulingQueue& queue = p_.state->queue();
  auto popped = queue.Pop(QueueTime(*p_.clock));
  if (!popped) return;
  Touch();
  const std::string uid = popped->pod->Uid();
  auto stored = p_.state->pods().find(uid);
  if (stored == p_.state->pods().end() || !popped->pod->node_name.empty()) {
    queue.Done(uid);
    return;
  }
  const json& object = stored->second;
  // A pod being deleted is not scheduled (kube-scheduler v1.35's skipPodSchedule): CacheSync
  // released any reservation of it, and the API server would refuse its Binding.
  if (PodIsBeingDeleted(object)) {
    queue.Done(uid);
    return;
  }
  const Clock::TimePoint start = p_.clock->Now();
  const std::string key = popped->pod->spec.namespace_name + "/" + popped->pod->spec.name;
  auto observe = [&](const char* result) {
    double seconds = std::chrono::duration<double>(p_.clock->Now() - start).count();
    p_.metrics->attempts->Inc({result});
    p_.metrics->attempt_latency->Observe({result}, seconds);
  };

  const ProfileConfig* profile = ProfileFor(*p_.profiles, popped->pod->scheduler_name);
  if (profile == nullptr) {
    queue.Done(uid);
    return;
  }
  sched::Scheduler* scheduler = p_.schedulers->at(profile->scheduler_name).get();
  // Still reserved: an earlier Binding of this pod may have landed (Code::kUnconfirmed). Its
  // binding cycle runs again with the same decision; no new one is taken.
  if (const sched::ClusterCache::PodEntry* entry = cache.FindPod(uid); entry != nullptr) {
    spdlog::debug("pod {}: still reserved on node {} (an earlier Binding may have landed); binding it again", key,
                  entry->node);
    p_.binders->Submit(BinderPool::InFlight{.reserved = {popped->pod, entry->node, entry->allocation},
                                            .scheduler = scheduler,
                                            .popped = *std::move(popped),
                                            .start = start,
                                            .outcome = {}});
    return;
  }
  sched::Pod pod = *popped->pod;
  PreparePod(pod, *profile, *p_.config);
  const bool debug = spdlog::should_log(spdlog::level::debug);
  std::vector<sched::NodeVerdict> verdicts;
  sched::ScheduleResult result =
      scheduler->SchedulingCycle(std::make_shared<const sched::Pod>(std::move(pod)), debug ? &verdicts : nullptr);
  if (debug) LogAttempt(key, verdicts, result);
  switch (result.outcome) {
    case sched::ScheduleResult::Outcome::kScheduled: {
      // The binding cycle goes to the binders; SettleBinds counts the attempt when it ends.
      // Marked as sent now: a version of the pod that arrives meanwhile does not requeue it
      // (CacheSync::ApplyPod).
      (void)cache.FinishBinding(uid);
      p_.binders->Submit(BinderPool::InFlight{.reserved = *std::move(result.reserved),
                                              .scheduler = scheduler,
                                              .popped = *std::move(popped),
                                              .start = start,
                                              .outcome = {}});
      return;
    }
    case sched::ScheduleResult::Outcome::kUnschedulable:
      p_.writer->Event(object, "Warning", "FailedScheduling", "Scheduling", result.message);
      p_.writer->PodScheduledFalse(object, "Unschedulable", result.message);
      queue.AddFailed(*std::move(popped), true, QueueTime(*p_.clock));
      observe("unschedulable");
      return;
    case sched::ScheduleResult::Outcome::kError:
      p_.writer->Event(object, "Warning", "FailedScheduling", "Scheduling", result.message);
      p_.writer->PodScheduledFalse(object, "SchedulerError", result.message);
      queue.AddFailed(*std::move(popped), false, QueueTime(*p_.clock));
      observe("error");
      return;
  }
}

// Settles finished binding cycles (CacheSync lock held) through Scheduler::FinishBinding. A
// Binding that may have landed (Unconfirmed) keeps the assume and requeues with backoff; the
// finish path binds again with the same allocation, and the CPUs are not handed to another pod
// until the pod's own update or deletion settles it. A lost race (the pod changed under the
// Binding's resourceVersion precondition: nothing of it can land) is unreserved and forgotten;
// the pod is decided afresh.
void SchedulingLoop::SettleBinds() {
  std::deque<BinderPool::InFlight> done = p_.binders->TakeDone();
  for (BinderPool::InFlight& f : done) {
    const sched::Pod& pod = *f.reserved.pod;
    f.scheduler->FinishBinding(f.reserved, f.outcome);
    if (f.outcome.ok()) {
      p_.state->queue().Done(pod.Uid());
      continue;
    }
    p_.writer->Event(PodReference(pod), "Warning", "FailedScheduling", "Scheduling", f.outcome.Message());
    if (auto stored = p_.state->pods().find(pod.Uid());
        stored != p_.state->pods().end() && PodIsBeingDeleted(stored->second)) {
      p_.state->queue().Done(pod.Uid());  // never scheduled again (ScheduleNext)
      continue;
    }
    // Requeued as last seen: a version that arrived while the Binding was out was not queued
    // (CacheSync::ApplyPod), and the next Binding must carry its resourceVersion, or it loses
    // the race again, for ever.
    if (sched::PodPtr latest = p_.state->PendingPod(pod.Uid())) f.popped.pod = std::move(latest);
    p_.state->queue().AddFailed(std::move(f.popped), false, QueueTime(*p_.clock));
  }
}

std::set<std::string> SchedulingLoop::ApplyPodList(const kube::ObjectList& pods) {
  std::set<std::string> listed;
  for (const json& pod : pods.items) {
    listed.insert(pod["metadata"].value("uid", ""));
    const auto version = kube::ResourceVersionNumber(pod["metadata"].value("resourceVersion", ""));
    // What the informer showed already stays (CacheSync also skips older versions and deleted uids).
    if (!version || *version > cache_pods_version_) p_.state->Apply(Change{.kind = ChangeKind::kPod, .deleted = false, .object = pod});
  }
  const std::optional<std::uint64_t> list_version = kube::ResourceVersionNumber(pods.resource_version);
  if (!list_version) return listed;
  // A cached pod the read does not list, seen at a version before the read's, was deleted
  // before the read (a pod created after it has a later version): applied as the informer's
  // delete would be, so it is not bound again nor holds CPUs.
  std::vector<json> gone;
  for (const auto& [uid, object] : p_.state->pods()) {
    const auto version = kube::ResourceVersionNumber(object["metadata"].value("resourceVersion", ""));
    if (listed.count(uid) == 0 && version && *version <= *list_version) gone.push_back(object);
  }
  for (json& object : gone) p_.state->Apply(Change{.kind = ChangeKind::kPod, .deleted = true, .object = std::move(object)});
  cache_pods_version_ = std::max(cache_pods_version_, *list_version);
  return listed;
}

// kFenceWriters threads take the pods in turn, so a fence over thousands of pending pods costs
// a few round trips' time per pod in flight, not one after another; the first failure (or a
// change of leadership) stops every writer.
bool SchedulingLoop::WriteFenceTokens(const std::vector<const json*>& pending,
                                      std::map<std::string, std::pair<std::string, std::string>>& wait) {
  constexpr std::size_t kFenceWriters = 8;
  const std::size_t writers = std::min(kFenceWriters, pending.size());
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  // What each writer wrote (uid -> namespace, name), merged into `wait` once all are done: no
  // state is shared between the writers but the two atomics.
  std::vector<std::vector<std::pair<std::string, std::pair<std::string, std::string>>>> written(writers);
  auto write = [&](std::size_t k) {
    for (std::size_t i; !failed && (i = next++) < pending.size();) {
      if (!*p_.leading || Term() != fence_term_) {
        if (!failed.exchange(true)) spdlog::warn("takeover fence: leadership changed while writing; abandoned");
        return;
      }
      const json& meta = (*pending[i])["metadata"];
      const std::string ns = meta.value("namespace", "");
      const std::string name = meta.value("name", "");
      auto r = p_.client->MergePatch(kube::Pods(), ns, name,
                                     json{{"metadata", {{"annotations", {{kSchedulerFenceAnnotation, fence_token_}}}}}});
      if (!r.ok() && kube::IsApiNotFound(r.status())) continue;  // gone: nothing to bind
      if (!r.ok()) {
        failed = true;
        p_.writer->ApiError("patch", r.status());
        spdlog::warn("takeover fence: writing pod {}/{} failed: {}", ns, name, std::string(r.status().message()));
        return;
      }
      Touch();  // a fence over thousands of pods is progress, not a hung loop (liveness)
      written[k].push_back({(*r)["metadata"].value("uid", ""), {ns, name}});
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t k = 1; k < writers; ++k) threads.emplace_back(write, k);
  if (writers > 0) write(0);
  for (std::thread& t : threads) t.join();
  for (auto& pods : written) {
    for (auto& [uid, key] : pods) wait[uid] = std::move(key);
  }
  return !failed;
}

bool SchedulingLoop::WriteFence() {
  // Every pod, with a quorum read (no resourceVersion): the pending ones are written below; the
  // others go into the cache now, so a Binding that landed just before this takeover holds its
  // CPUs before any is reused, whether or not the pod informer has shown it yet.
  auto pods = p_.client->List(kube::Pods(), "", kube::ListOptions{});
  if (!pods.ok()) {
    spdlog::warn("takeover fence: listing the pods failed: {}", std::string(pods.status().message()));
    return false;
  }
  {
    CacheSync::Lock lock(p_.state);
    (void)ApplyPodList(*pods);
  }
  std::vector<const json*> pending;
  for (const json& pod : pods->items) {
    if (!pod.value("spec", json::object()).value("nodeName", "").empty()) continue;  // bound: nothing to fence
    if (FencedByUs(pod, *p_.profiles, *p_.config)) pending.push_back(&pod);  // else no leader of ours binds it
  }
  std::map<std::string, std::pair<std::string, std::string>> wait;
  if (!WriteFenceTokens(pending, wait)) return false;
  const std::size_t written = wait.size();
  {
    CacheSync::Lock lock(p_.state);
    fence_wait_ = std::move(wait);
    fence_written_ = true;
    fence_complete_said_ = false;
    fence_recheck_at_ = p_.clock->Now() + std::chrono::seconds(10);
  }
  // Said once the wait and its first recheck time are in place.
  spdlog::info(
      "takeover fence: read {} pods at version {} into the cache; wrote {} pending pods (token {}); scheduling once "
      "the pod informer has shown them",
      pods->items.size(), pods->resource_version, written, fence_token_);
  return true;
}

void SchedulingLoop::RecheckFence() {
  std::size_t waiting;
  {
    CacheSync::Lock lock(p_.state);
    waiting = fence_wait_.size();
  }
  spdlog::warn("takeover fence: the pod informer has not shown {} fenced pod(s) after 10 s; reading every pod",
               waiting);
  auto pods = p_.client->List(kube::Pods(), "", kube::ListOptions{});  // no resourceVersion: a quorum read
  if (!pods.ok()) {
    spdlog::warn("takeover fence: reading the pods failed: {}; trying again in 10 s",
                 std::string(pods.status().message()));
    return;
  }
  CacheSync::Lock lock(p_.state);
  const std::set<std::string> listed = ApplyPodList(*pods);
  for (const json& pod : pods->items) ObserveFence(Change{.kind = ChangeKind::kPod, .deleted = false, .object = pod});
  // Awaited pods the read does not list are gone (a new pod of the same name has another uid):
  // nothing binds them any more.
  std::erase_if(fence_wait_, [&](const auto& awaited) { return listed.count(awaited.first) == 0; });
}

void SchedulingLoop::ObserveFence(const Change& c) {
  if (c.kind != ChangeKind::kPod || fence_wait_.empty()) return;
  const json& meta = c.object["metadata"];
  auto it = fence_wait_.find(meta.value("uid", ""));
  if (it == fence_wait_.end()) return;
  if (c.deleted || !c.object.value("spec", json::object()).value("nodeName", "").empty() ||
      meta.value("annotations", json::object()).value(kSchedulerFenceAnnotation, "") == fence_token_) {
    fence_wait_.erase(it);
  }
}

void SchedulingLoop::SayWhenFenced() {
  if (fence_complete_said_ || !fence_written_ || fence_term_ != Term() || !Fenced()) return;
  fence_complete_said_ = true;
  spdlog::info("takeover fence: complete (the cache holds every pod change up to version {}); scheduling",
               cache_pods_version_);
}

void SchedulingLoop::Run() {
  const bool extender = p_.config->extender_enabled;
  while (true) {
    if (p_.feed->Closed()) return;
    bool ready = p_.feed->Synced();  // read before draining: every listed object is then applied
    // A stale informer pauses scheduling (logged by the feed) until it re-lists or resumes.
    bool current = ready && p_.feed->Current().ok();
    if (p_.client != nullptr) {
      if (!*p_.leading) {
        if (fence_written_ || !fence_wait_.empty()) {
          CacheSync::Lock lock(p_.state);
          fence_written_ = false;
          fence_wait_.clear();
        }
      } else if ((!fence_written_ || fence_term_ != Term()) && current && p_.clock->Now() >= fence_retry_at_) {
        // A new term: a fresh token, so a pod fenced in an earlier term is written again.
        fence_written_ = false;
        fence_term_ = Term();
        fence_token_ = fmt::format("{:016x}", std::random_device{}() * 4294967296ULL + std::random_device{}());
        if (!WriteFence()) fence_retry_at_ = p_.clock->Now() + std::chrono::seconds(1);
      }
    }
    if (p_.client != nullptr && *p_.leading && fence_written_ && fence_term_ == Term() && !Fenced() &&
        p_.clock->Now() >= fence_recheck_at_) {
      RecheckFence();
      fence_recheck_at_ = p_.clock->Now() + std::chrono::seconds(10);
    }
    const bool may_schedule = current && *p_.leading && !extender && Fenced();
    bool active = false;
    if (may_schedule) {
      CacheSync::Lock lock(p_.state);
      active = p_.state->queue().ActiveSize() > 0;
    }
    active = active && !p_.binders->Full();
    // Read before the Take: every pod change up to this version is then in the batch or applied.
    const std::optional<std::uint64_t> pods_version =
        p_.client != nullptr ? kube::ResourceVersionNumber(p_.feed->PodsVersion()) : std::nullopt;
    std::deque<Change> batch = p_.feed->Take(active ? std::chrono::milliseconds(0) : std::chrono::milliseconds(20),
                                             [this] { return p_.binders->HasDone(); });
    {
      CacheSync::Lock lock(p_.state);
      for (const Change& c : batch) {
        if (p_.feed->Closed()) return;  // a stop does not wait for a relist's thousands of changes
        p_.state->Apply(c);
        ObserveFence(c);
      }
      if (pods_version) cache_pods_version_ = std::max(cache_pods_version_, *pods_version);
      SayWhenFenced();
      p_.state->CheckAgents();
    }
    Touch();
    if (ready) p_.state->set_ready();
    CacheSync::Lock lock(p_.state);
    // The extender's verbs answer for this term only once its fence is complete.
    p_.state->set_fenced_term(*p_.leading && Fenced() ? Term() : -1);
    SettleBinds();
    if (may_schedule && !p_.binders->Full()) ScheduleNext();
    if (may_schedule && p_.rebalancer != nullptr) p_.rebalancer->MaybeRun();
    sched::SchedulingQueue& queue = p_.state->queue();
    p_.metrics->pending->Set({"active"}, static_cast<double>(queue.ActiveSize()));
    p_.metrics->pending->Set({"backoff"}, static_cast<double>(queue.BackoffSize()));
    p_.metrics->pending->Set({"unschedulable"}, static_cast<double>(queue.UnschedulableSize()));
    p_.metrics->cache_size->Set({"nodes"}, static_cast<double>(p_.state->cache().Nodes().size()));
    p_.metrics->cache_size->Set({"pods"}, static_cast<double>(p_.state->cache().NumPods()));
  }
}

}  // namespace huygens::scheduler
