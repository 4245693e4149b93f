// SchedulerService: huygens-scheduler's control loop over the Kubernetes API.
//
// What it does: informers on Nodes, NodeResourceTopologies and Pods feed one scheduling thread
// that owns the sched::ClusterCache and sched::SchedulingQueue. A node enters the cache when both
// its Node and its NodeResourceTopology are known (CPU state from the NRT: topology/nrt.h); every
// non-terminal pod bound to a node is counted (with its huygens.io/allocation when it has one,
// whoever scheduled it); CPUs the NRT lists as exclusive that no Huygens allocation holds
// (kubelet-bound or other schedulers' pods, published by the agent) join the node's system pool.
// Pending pods whose spec.schedulerName names a profile enter the queue; one attempt is the
// scheduling cycle (sched::Scheduler::SchedulingCycle: filter, score, reserve, assume) on the
// scheduling thread, then the binding cycle (the Binding, which carries huygens.io/allocation
// with the pod's resourceVersion as precondition) on a pool of binder threads while the
// scheduling thread goes on. A Binding that lost the race unreserves; one that may have landed
// keeps the reservation and is sent again after backoff; unschedulable pods get a
// FailedScheduling event with kube-scheduler's FitError text and wait for a cluster change.
//
// Restart rule (docs/scheduler-service.md): a bound pod's huygens.io/allocation is the truth.
// Scheduling starts only after every informer has synced, so the cache holds every bound pod's
// allocation. The allocation reaches the API only with the Binding, in one write, so kill -9 at
// any point loses nothing and never double-allocates; a pending pod's annotation was written by
// someone else and is ignored (the Binding replaces it).
//
// Stale cache: while an informer has not synced or is stale (the condition that fails Ready()),
// no pod is reserved or bound (standalone and extender mode alike); scheduling resumes by itself
// after the re-list. The pause and the resume are logged once each, naming the informers.
//
// Leader election (optional): only the holder of the Lease schedules; a leader that cannot renew
// stops before the lease can expire for others (kube/leader_election.h). Standbys keep their
// informers and cache warm.
//
// Its parts, one concern each (scheduler/): cache_sync.h (the informers' intake, the cache and
// queue they build, the restart rule), scheduling_loop.h (the scheduling thread), binder.h (the
// Binding with its allocation, the binder pool, the Bind plugin), extender_handlers.h (the
// extender's verbs), event_sink.h (Kubernetes Events). Every part reads time from the injected
// ServiceOptions::clock, so tests drive it with a fake clock; the leader elector alone runs on
// the real clock (the Lease is judged against other processes' clocks).
//
// Thread-safety: Start/Stop from one thread; the accessors from any thread.
#ifndef HUYGENS_SCHEDULER_SERVICE_H_
#define HUYGENS_SCHEDULER_SERVICE_H_

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "base/clock.h"
#include "kube/client.h"
#include "serving/http_server.h"
#include "scheduler/config.h"

namespace huygens::scheduler {

struct ServiceOptions {
  SchedulerConfig config;
  // Leader election identity (hostname_pid by default in main). Required when leader_elect.
  std::string identity;
  // The time source of the scheduling loop, the queue's backoff, the binders, the informers
  // and the event sink; must outlive the service. nullptr (default): RealClock::Get().
  Clock* clock = nullptr;
};

class SchedulerService {
 public:
  // `client` and `registry` must outlive the service; the service registers its metrics
  // (huygens_scheduler_*) in `registry`. Errors: InvalidArgument for a bad profile or leader
  // election configuration.
  static absl::StatusOr<std::unique_ptr<SchedulerService>> Create(kube::Client* client,
                                                                  ServiceOptions options,
                                                                  serving::MetricsRegistry* registry);
  ~SchedulerService();  // Stop()s

  // Starts the informers, the leader elector (if enabled) and the scheduling thread.
  void Start();
  // Stops everything; a leader releases its lease. Idempotent.
  void Stop();

  // Extender mode (config.extender_enabled): serves kube-scheduler's HTTP extender protocol
  // (scheduler/extender_protocol.h) on `http` at POST /filter, /prioritize and /bind (urlPrefix +
  // verb, deploy/scheduler/extender.yaml). Over the same informer-fed cache as standalone mode:
  //   filter      the first profile's filter plugins for exclusive pods (failed nodes get the
  //               plugins' reasons, split into failedNodes / failedAndUnresolvableNodes); other
  //               pods pass everywhere;
  //   prioritize  the profile's weighted scores, min-max scaled onto 0..10 over the candidates
  //               (0 everywhere for pods without exclusive CPUs);
  //   bind        Reserve on the given node (exact cpusets, assumed), the allocation patch and
  //               the Binding, exactly as standalone mode; a failed Binding removes the
  //               annotation and forgets the assume, and the reply carries the error.
  // Answers the request in its form (nodenames or nodes). A malformed body gets HTTP 400 with
  // {"error": ...} ({"Error": ...} for bind) and changes nothing; before the informers have
  // synced every verb answers with an error, and while one is stale (Ready() fails) filter and
  // bind answer with an error naming it. In extender mode the service does not schedule
  // from its own queue; with leader election (leaderElection.leaderElect, the default) several
  // replicas may run: only the leader answers, a standby answers every verb with HTTP 503 and
  // should be kept out of the Service by readiness (Leading()).
  // REQUIRES: before http.Start(); the service outlives `http`'s serving.
  void ServeExtender(serving::HttpServer& http);

  // Every informer has listed once (scheduling starts then).
  bool Synced() const;
  // For /readyz: OK once started and every informer is ready (listed, and heard from the API
  // server within kube::Informer::stale_after(): RestConfig::watch_idle_timeout +
  // kube::kStaleMargin, 150 s by default), else Unavailable naming each informer that is not
  // ("pods informer heard nothing from the API server for 151 s (bound 150 s)").
  absl::Status Ready() const;
  // Acting as leader (always true without leader election once started).
  bool Leading() const;
  // The scheduling thread made progress within the last minute (liveness).
  absl::Status Healthy() const;
  // Pods bound by this process so far.
  int64_t BoundPods() const;

  struct Impl;

 private:
  explicit SchedulerService(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace huygens::scheduler

#endif  // HUYGENS_SCHEDULER_SERVICE_H_
