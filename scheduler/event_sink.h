// EventSink: writes the scheduler's Kubernetes Events (events.k8s.io/v1, through
// kube::EventRecorder, so repeats become event series) and pods' PodScheduled=False conditions
// from a background thread, so that the scheduling thread and the binders never wait for them.
//
// Events and conditions are best effort: at most kMaxQueued wait (more are dropped, to shed memory under a
// storm), a failed write is logged and dropped, and Stop writes what is queued for at most
// kDrainOnStop more of the injected clock's time, then drops the rest (the client's rate limit
// would otherwise hold a SIGTERM for queue/QPS seconds).
//
// Thread-safety: Post from any thread; Start/Stop from one thread. mu_ guards the queue and the
// stop request; it is not held while an event is written.
#ifndef HUYGENS_SCHEDULER_EVENT_SINK_H_
#define HUYGENS_SCHEDULER_EVENT_SINK_H_

#include <cstddef>
#include <deque>
#include <string>
#include <thread>
#include <variant>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "base/clock.h"
#include "kube/client.h"
#include "kube/event_recorder.h"
#include "nlohmann/json.hpp"

namespace huygens::scheduler {

class EventSink {
 public:
  static constexpr size_t kMaxQueued = 10000;
  static constexpr std::chrono::seconds kDrainOnStop{2};

  // `client` and `clock` must outlive the sink; `reporting_instance` is every event's
  // reportingInstance (the service's identity). `clock` also measures the event series' window.
  EventSink(kube::Client* client, std::string reporting_instance, Clock* clock)
      : recorder_(client, clock), client_(client), reporting_instance_(std::move(reporting_instance)), clock_(clock) {}
  ~EventSink() { Stop(); }

  // Starts the writer thread (events posted before are kept and written then).
  void Start() ABSL_LOCKS_EXCLUDED(mu_);
  // Drains for at most kDrainOnStop, then joins the writer. Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // Queues an event about `pod` (a Pod object: its namespace, name and uid are the event's
  // regarding object): `type` Normal|Warning, `reason`, `action`, and `note` (any text: the
  // recorder cuts it to the API's limit without splitting a character, kube::EventObject).
  void Post(const nlohmann::json& pod, const char* type, const char* reason, const char* action,
            std::string note);
  // Queues `event` as it is (any regarding object: its api_version, kind, ns, name and uid);
  // its reporting_instance is set to the sink's.
  void Post(kube::EventRecord event) ABSL_LOCKS_EXCLUDED(mu_);
  // Queues the write of `pod`'s (a Pod object as last seen) PodScheduled condition as status
  // False with `reason` and `message`, as kube-scheduler v1.35's updatePod does: a strategic
  // merge patch of pods/status; lastTransitionTime moves only when the status changes, and
  // observedGeneration is the pod's metadata.generation. Nothing is queued when `pod` already
  // carries that condition. Returns whether a write was queued.
  bool PostPodScheduledFalse(const nlohmann::json& pod, const char* reason, std::string message)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);
  // A pods/status patch (PostPodScheduledFalse).
  struct StatusPatch {
    std::string ns, name;
    nlohmann::json patch;
  };
  // Writes one queued item (no lock held).
  void Write(const std::variant<kube::EventRecord, StatusPatch>& item);

  kube::EventRecorder recorder_;
  kube::Client* client_;
  const std::string reporting_instance_;
  Clock* clock_;
  absl::Mutex mu_;
  absl::CondVar cv_;  // queue_ grew or stop_ was set
  std::deque<std::variant<kube::EventRecord, StatusPatch>> queue_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  Clock::TimePoint drain_until_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;  // set under mu_ by Start; joined by Stop (Start/Stop's thread)
};

}  // namespace huygens::scheduler

#endif  // HUYGENS_SCHEDULER_EVENT_SINK_H_
