#include "scheduler/scheduling_loop.h"

#include <chrono>
#include <deque>
#include <mutex>

#include "absl/base/internal/raw_logging.h"
#include "node/allocation.h"
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
  const json object = stored->second;
  const Clock::TimePoint start = p_.clock->Now();
  const std::string key = popped->pod->spec.namespace_name + "/" + popped->pod->spec.name;
  auto observe = [&](const char* result) {
    double seconds = std::chrono::duration<double>(p_.clock->Now() - start).count();
    p_.metrics->attempts->Inc({result});
    p_.metrics->attempt_latency->Observe({result}, seconds);
  };

  // Finish path: the pod already holds an allocation (ours in flight, or from the annotation).
  bool undone = false;
  const sched::ClusterCache::PodEntry* entry = p_.state->HonourRecorded(
      object, uid, [this](const json& o, const std::string& why) { return p_.writer->Undo(o, why); }, undone);
  if (undone) {
    queue.AddFailed(*std::move(popped), false, QueueTime(*p_.clock));
    observe("error");
    return;
  }
  if (entry != nullptr) {
    spdlog::debug("pod {}: holds an allocation on node {} already (its annotation, or ours in flight); binding it",
                  key, entry->node);
    if (p_.writer->FinishBind(object, entry->node, AllocationValue(*entry)).ok()) {
      (void)cache.FinishBinding(uid);
      queue.Done(uid);
      observe("scheduled");
      p_.metrics->e2e_latency->Observe({}, absl::ToDoubleSeconds(QueueTime(*p_.clock) - popped->first_seen));
    } else {
      queue.AddFailed(*std::move(popped), false, QueueTime(*p_.clock));
      observe("error");
    }
    return;
  }

  const ProfileConfig* profile = ProfileFor(*p_.profiles, popped->pod->scheduler_name);
  if (profile == nullptr) {
    queue.Done(uid);
    return;
  }
  sched::Pod pod = *popped->pod;
  PreparePod(pod, *profile, *p_.config);
  p_.outbox->staged.reset();
  const bool debug = spdlog::should_log(spdlog::level::debug);
  std::vector<sched::NodeVerdict> verdicts;
  sched::ScheduleResult result = p_.schedulers->at(profile->scheduler_name)
                                     ->ScheduleOne(std::make_shared<const sched::Pod>(std::move(pod)),
                                                   debug ? &verdicts : nullptr);
  if (debug) LogAttempt(key, verdicts, result);
  switch (result.outcome) {
    case sched::ScheduleResult::Outcome::kScheduled: {
      // The binding cycle goes to the binders; SettleBinds counts the attempt when it ends.
      ABSL_RAW_CHECK(p_.outbox->staged.has_value(), "ApiBind staged no binding cycle");
      p_.binders->Submit(BinderPool::InFlight{*std::move(p_.outbox->staged), *std::move(popped), start, {}});
      p_.outbox->staged.reset();
      return;
    }
    case sched::ScheduleResult::Outcome::kUnschedulable:
      p_.writer->Event(object, "Warning", "FailedScheduling", "Scheduling", result.message);
      queue.AddFailed(*std::move(popped), true, QueueTime(*p_.clock));
      observe("unschedulable");
      return;
    case sched::ScheduleResult::Outcome::kError:
      p_.writer->Event(object, "Warning", "FailedScheduling", "Scheduling", result.message);
      queue.AddFailed(*std::move(popped), false, QueueTime(*p_.clock));
      observe("error");
      return;
  }
}

// Settles finished binding cycles (CacheSync::mu held): a failed Binding keeps the assume and
// requeues with backoff; the finish path binds again with the same allocation. The assume is
// not forgotten, since a Binding whose answer was lost may still have landed: its CPUs are not
// handed to another pod until the pod's own update or deletion settles it.
void SchedulingLoop::SettleBinds() {
  std::deque<BinderPool::InFlight> done = p_.binders->TakeDone();
  for (BinderPool::InFlight& f : done) {
    const std::string uid = f.task.object["metadata"].value("uid", "");
    if (!f.outcome.ok()) {
      p_.writer->Event(f.task.object, "Warning", "FailedScheduling", "Scheduling", std::string(f.outcome.message()));
      p_.state->queue().AddFailed(std::move(f.popped), false, QueueTime(*p_.clock));
    } else {
      p_.state->queue().Done(uid);
    }
  }
}

void SchedulingLoop::Run() {
  const bool extender = p_.config->extender_enabled;
  while (true) {
    if (p_.feed->Closed()) return;
    bool ready = p_.feed->Synced();  // read before draining: every listed object is then applied
    // A stale informer pauses scheduling (logged by the feed) until it re-lists or resumes.
    bool current = ready && p_.feed->Current().ok();
    bool active = current && *p_.leading && !extender && p_.state->queue().ActiveSize() > 0 && !p_.binders->Full();
    std::deque<Change> batch = p_.feed->Take(active ? std::chrono::milliseconds(0) : std::chrono::milliseconds(20),
                                             [this] { return p_.binders->HasDone(); });
    {
      std::lock_guard<std::mutex> lock(p_.state->mu);
      for (const Change& c : batch) {
        if (p_.feed->Closed()) return;  // a stop does not wait for a relist's thousands of changes
        p_.state->Apply(c);
      }
    }
    Touch();
    if (ready) p_.state->set_ready();
    std::lock_guard<std::mutex> lock(p_.state->mu);
    SettleBinds();
    if (current && *p_.leading && !extender && !p_.binders->Full()) ScheduleNext();
    sched::SchedulingQueue& queue = p_.state->queue();
    p_.metrics->pending->Set({"active"}, static_cast<double>(queue.ActiveSize()));
    p_.metrics->pending->Set({"backoff"}, static_cast<double>(queue.BackoffSize()));
    p_.metrics->pending->Set({"unschedulable"}, static_cast<double>(queue.UnschedulableSize()));
    p_.metrics->cache_size->Set({"nodes"}, static_cast<double>(p_.state->cache().Nodes().size()));
    p_.metrics->cache_size->Set({"pods"}, static_cast<double>(p_.state->cache().NumPods()));
  }
}

}  // namespace huygens::scheduler
