// ServiceMetrics: the huygens_scheduler_* metric families of the scheduler service, registered
// once and shared by its parts (the scheduling loop, the binders, the API writes, the extender).
// The families are owned by the registry; the struct only points at them.
//
// Thread-safety: the families are thread-safe (serving/metrics.h); the struct is immutable after
// Register.
#ifndef HUYGENS_SCHEDULER_SERVICE_METRICS_H_
#define HUYGENS_SCHEDULER_SERVICE_METRICS_H_

#include "serving/build_info.h"
#include "serving/metrics.h"

namespace huygens::scheduler {

struct ServiceMetrics {
  serving::CounterFamily* attempts = nullptr;           // {result}
  serving::HistogramFamily* attempt_latency = nullptr;  // {result}, seconds
  serving::HistogramFamily* e2e_latency = nullptr;      // {}, seconds
  serving::GaugeFamily* pending = nullptr;              // {queue}
  serving::GaugeFamily* cache_size = nullptr;           // {type}
  serving::CounterFamily* api_errors = nullptr;         // {operation, code}
  serving::GaugeFamily* leader = nullptr;               // {}
  serving::CounterFamily* extender_requests = nullptr;  // {verb, result}
  serving::CounterFamily* rebalance_moves = nullptr;    // {result}
  serving::CounterFamily* rebalance_cpus = nullptr;     // {}

  // Registers every family in `registry` (which must outlive the pointers), and
  // huygens_build_info.
  static ServiceMetrics Register(serving::MetricsRegistry& registry) {
    serving::AddBuildInfo(registry);
    ServiceMetrics m;
    m.attempts = &registry.AddCounter("huygens_scheduler_schedule_attempts_total",
                                      "Scheduling attempts by result (scheduled, unschedulable, error).",
                                      {"result"});
    m.attempt_latency = &registry.AddHistogram(
        "huygens_scheduler_scheduling_attempt_duration_seconds",
        "Scheduling attempt latency in seconds (algorithm and binding with its allocation), by result.",
        {"result"}, serving::LatencyBuckets());
    m.e2e_latency = &registry.AddHistogram(
        "huygens_scheduler_pod_scheduling_duration_seconds",
        "Seconds from a pod entering the queue to its binding, over all its attempts.", {},
        serving::LatencyBuckets());
    m.pending = &registry.AddGauge("huygens_scheduler_pending_pods",
                                   "Pods waiting to be scheduled, by queue (active, backoff, unschedulable).",
                                   {"queue"});
    m.cache_size = &registry.AddGauge("huygens_scheduler_cache_size",
                                      "Objects in the scheduler cache, by type (nodes, pods).", {"type"});
    m.api_errors = &registry.AddCounter(
        "huygens_scheduler_api_errors_total",
        "Failed API requests of the scheduling loop, by operation and HTTP code (0: transport).",
        {"operation", "code"});
    m.leader = &registry.AddGauge("huygens_scheduler_leader", "1 while this instance is the leader.");
    m.extender_requests = &registry.AddCounter(
        "huygens_scheduler_extender_requests_total",
        "Extender requests from kube-scheduler, by verb (filter, prioritize, bind) and result (ok, error, bad_request, refused).",
        {"verb", "result"});
    m.rebalance_moves = &registry.AddCounter(
        "huygens_scheduler_rebalance_moves_total",
        "Moves of running pods' CPUs by the rebalancer, by result (moved, conflict, error).",
        {"result"});
    m.rebalance_cpus = &registry.AddCounter(
        "huygens_scheduler_rebalance_cpus_moved_total",
        "CPUs the rebalancer's moves gave to pods that did not hold them before.");
    return m;
  }
};

}  // namespace huygens::scheduler

#endif  // HUYGENS_SCHEDULER_SERVICE_METRICS_H_
