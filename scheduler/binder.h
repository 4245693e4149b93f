// The scheduler service's binding: making a decision durable on the API server.
//
//   PodWriter   the service's writes to a pod: the Binding that carries huygens.io/allocation
//               (FinishBind) and a rebalancer's move (MoveAllocation); each
//               counts its API errors and posts the pod's events.
//   BinderPool  standalone mode's binding cycles: a pool of binder threads that run
//               Scheduler::BindingCycle while the scheduling thread goes on (as
//               kube-scheduler's binding cycle runs in a goroutine); at most kMaxInFlight.
//   ApiBind     the profiles' Bind plugin: the Binding, with its real outcome.
//
// Rules: a pod is never bound without its allocation, nor annotated by us without being bound
// (the allocation rides on the Binding's metadata). Each Binding carries the pod's
// resourceVersion as the decision read it, so the apiserver refuses it (409) once anyone wrote
// the pod since; a new leader writes every pending pod before it binds anything
// (SchedulingLoop's takeover fence), which voids the Bindings a deposed leader still has on the
// wire. A failed Binding is retried by the caller with the same allocation; a Binding whose
// answer was lost but that landed is detected on 409; a 409 on a pod that is not ours is a lost
// race (Aborted): the caller forgets the allocation.
#ifndef HUYGENS_SCHEDULER_BINDER_H_
#define HUYGENS_SCHEDULER_BINDER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "base/clock.h"
#include "kube/client.h"
#include "nlohmann/json.hpp"
#include "sched/cache.h"
#include "sched/framework.h"
#include "sched/queue.h"
#include "sched/scheduler.h"
#include "scheduler/event_sink.h"
#include "scheduler/service_metrics.h"

namespace huygens::scheduler {

// kube-apiserver v1.35's message on the PodScheduled condition of a pod with scheduling gates
// (reason "SchedulingGated").
inline constexpr char kSchedulingGatedMessage[] = "Scheduling is blocked due to non-empty scheduling gates";

// The Pod object as far as PodWriter needs it: metadata namespace, name, uid and the
// resourceVersion the decision read (the Binding's precondition; events name the pod by it).
nlohmann::json PodReference(const sched::Pod& pod);

// Thread-safety: thread-safe (API calls, counters and events only).
class PodWriter {
 public:
  // Every pointer must outlive the writer. `may_bind` (optional, any thread) is asked right
  // before each Binding: false (this process no longer holds its leader lease) sends nothing
  // and fails the bind with FailedPrecondition, so a leader resumed after a pause never binds
  // onto CPUs the next leader gave away.
  PodWriter(kube::Client* client, EventSink* events, const ServiceMetrics* metrics,
            std::function<bool()> may_bind = nullptr)
      : client_(client), events_(events), metrics_(metrics), may_bind_(std::move(may_bind)) {}

  // Creates the Binding of `object` (a Pod) to `node`, carrying `allocation` (nullopt: none) on
  // the Binding's metadata, so the apiserver sets spec.nodeName and the annotation in one
  // write. The Binding carries `object`'s uid and resourceVersion as preconditions (the fence
  // the apiserver enforces, kube::Client::Bind): it lands only on the pod as the decision read
  // it. OK when the pod is done (bound by us, or gone, or an earlier attempt landed: 409 with
  // the pod on `node` with `allocation`); Aborted when the race is lost (409 and the pod is not
  // ours: it changed since `object` was read, so no attempt of this Binding can land; the
  // caller forgets the decision and decides afresh from the pod's next version); else the
  // error, logged and counted. A success is
  // logged (info) and posted as the event "Scheduled", both naming the node, the NUMA nodes and
  // the cpusets: "Successfully assigned default/p to n1: NUMA node 0, cpuset 4-7 (app 4-7)"
  // (node/allocation.h, DescribeAllocation).
  absl::Status FinishBind(const nlohmann::json& object, const std::string& node,
                          const std::optional<std::string>& allocation);
  // Writes a rebalancer move (scheduler/rebalancer.h): `allocation` (the annotation's JSON) as
  // the bound pod's new huygens.io/allocation, by a JSON merge patch that carries `object`'s
  // resourceVersion, so it lands only on the pod as the plan read it. OK when written; Aborted
  // on 409 (the pod changed: nothing written); FailedPrecondition when the lease check fails
  // (nothing sent); else the API error, counted as operation "patch".
  absl::Status MoveAllocation(const nlohmann::json& object, const std::string& allocation);
  // Writes a NumaAffinityGroup's status (the rebalancer's; kube::EncodeStatusPatch's body
  // `status_patch`) through the status subresource, carrying `group`'s resourceVersion as a
  // precondition. OK when written; Aborted on 409 (the group changed since it was read);
  // FailedPrecondition when the lease check fails (nothing sent); else the API error, counted
  // as operation "patch".
  absl::Status WriteAffinityGroupStatus(const nlohmann::json& group, nlohmann::json status_patch);

  // Counts a failed API request of `operation` ("patch", "bind") by its HTTP code.
  void ApiError(const char* operation, const absl::Status& s);
  // Posts an event about `pod` (EventSink::Post).
  void Event(const nlohmann::json& pod, const char* type, const char* reason, const char* action, std::string note) {
    events_->Post(pod, type, reason, action, std::move(note));
  }
  // Queues the write of `pod`'s PodScheduled=False condition with `reason` (kube-scheduler's
  // "Unschedulable", "SchedulerError", "SchedulingGated") and `message`, unless the pod carries
  // it already (EventSink::PostPodScheduledFalse).
  void PodScheduledFalse(const nlohmann::json& pod, const char* reason, std::string message) {
    (void)events_->PostPodScheduledFalse(pod, reason, std::move(message));
  }
  // Pods bound so far.
  int64_t bound() const { return bound_; }

 private:
  kube::Client* client_;
  EventSink* events_;
  const ServiceMetrics* metrics_;
  const std::function<bool()> may_bind_;
  std::atomic<int64_t> bound_{0};
};

// Thread-safety: Submit, TakeDone, Full and HasDone from any thread; Start/Stop from one thread.
// mu_ guards the queues and counters (never held over a binding cycle or on_done).
class BinderPool {
 public:
  static constexpr int kThreads = 8;
  static constexpr size_t kMaxInFlight = 64;

  // A binding cycle: the reserved pod, the scheduler whose BindingCycle binds it (not owned),
  // the pod as popped from the queue, when its attempt started, and (once done) the outcome.
  struct InFlight {
    sched::ReservedPod reserved;
    sched::Scheduler* scheduler = nullptr;  // binders call BindingCycle only
    sched::QueuedPod popped;
    Clock::TimePoint start;
    sched::Status outcome;
  };

  // `on_done` is called (on a binder thread, no lock held) after each finished cycle, to wake
  // the scheduling thread. Every pointer must outlive the pool.
  BinderPool(const ServiceMetrics* metrics, Clock* clock, std::function<void()> on_done)
      : metrics_(metrics), clock_(clock), on_done_(std::move(on_done)) {}
  ~BinderPool() { Stop(); }

  void Start() ABSL_LOCKS_EXCLUDED(mu_);
  // Joins the binders; cycles not yet started are dropped (never written: a restart redoes
  // them). Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  void Submit(InFlight f) ABSL_LOCKS_EXCLUDED(mu_);
  // The finished cycles, oldest first; they no longer count as in flight. Each was counted in
  // the attempt metrics where it ended.
  std::deque<InFlight> TakeDone() ABSL_LOCKS_EXCLUDED(mu_);
  // kMaxInFlight cycles are submitted and not taken back.
  bool Full() const ABSL_LOCKS_EXCLUDED(mu_);
  bool HasDone() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);

  const ServiceMetrics* metrics_;
  Clock* clock_;
  const std::function<void()> on_done_;
  mutable absl::Mutex mu_;
  absl::CondVar cv_;  // todo_ grew or stopping_ was set
  std::deque<InFlight> todo_ ABSL_GUARDED_BY(mu_);
  std::deque<InFlight> done_ ABSL_GUARDED_BY(mu_);
  size_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;  // Start/Stop's thread only
};

// The profiles' Bind plugin: the Binding of the reserved pod, carrying its huygens.io/allocation
// (PodWriter::FinishBind, with the pod's uid and the resourceVersion the decision read as
// preconditions). Returns success when the pod is bound (or gone); Error when the race is lost
// (nothing of this decision can land: Scheduler::FinishBinding frees its CPUs); Unconfirmed for
// any other failure (the Binding may have landed: the reservation is kept and the caller binds
// the same decision again). Thread-safety: thread-safe (runs on the binders).
class ApiBind final : public sched::BindPlugin {
 public:
  explicit ApiBind(PodWriter* writer) : writer_(writer) {}
  std::string_view Name() const override { return "ApiBind"; }
  sched::Status Bind(const sched::ReservedPod& reserved) override;

 private:
  PodWriter* writer_;
};

}  // namespace huygens::scheduler

#endif  // HUYGENS_SCHEDULER_BINDER_H_
