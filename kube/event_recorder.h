// Kubernetes Events (events.k8s.io/v1) about objects: the record a component reports, the Event
// object it becomes, and EventRecorder, which writes records and folds repeats into event series
// as Kubernetes' own event recorder does.
//
// Event series (client-go's tools/events EventBroadcaster, the events.k8s.io/v1 recorder that
// kube-scheduler uses): a record isomorphic to one written within the last kSeriesWindow (6 min,
// client-go's finishTime) does not create a new Event; it updates the existing Event's `series`
// {count, lastObservedTime}. The first repeat creates the series with count 2, each further
// repeat adds one. The window runs from the series' last observation (from the Event's eventTime
// while it has no series), so a steady repeat keeps one Event alive; a repeat after a quiet
// window starts a new Event. Where Huygens differs from client-go, and why:
//   - Isomorphic = equal in every EventRecord field, the note included. client-go's key leaves
//     the note out and keeps the first note of a series; Huygens' notes carry the facts (the CPUs,
//     the refusal reason), so a different note is a different Event (as the older core/v1
//     recorder, tools/record's EventCorrelator, keys on the message). The apiserver also holds
//     an Event's note immutable, so a changed note could not be written into the same Event.
//   - Every repeat is written at once, a JSON merge patch of `series` (the core/v1 recorder also
//     patches each repeat), where client-go writes the count 2 at once and later counts only when
//     the series ends or every 30 min. Huygens' events come at most one per pod decision, and a
//     count that is current when an operator looks is worth that write.
//   - A repeat whose Event is gone (deleted, or expired by the apiserver's event TTL) creates a
//     new Event that carries the series, as client-go does when its patch answers NotFound.
// Entries older than the window are dropped at each Record, so memory is bounded by the events of
// the last 6 minutes.
//
// Thread-safety: EventRecorder's Record may be called from any thread; calls are serialised (one
// write at a time), so the counts reach the apiserver in order.
#ifndef HUYGENS_KUBE_EVENT_RECORDER_H_
#define HUYGENS_KUBE_EVENT_RECORDER_H_

#include <chrono>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/status/status.h"
#include "base/clock.h"
#include "kube/client.h"
#include "nlohmann/json.hpp"

namespace huygens::kube {

// An events.k8s.io/v1 Event about one object. Two records are isomorphic (one series) when they
// are equal.
struct EventRecord {
  // The object the event is about (`regarding`).
  std::string api_version = "v1";
  std::string kind = "Pod";
  std::string ns;
  std::string name;
  std::string uid;
  std::string type = "Normal";  // Normal or Warning
  std::string reason;           // "Scheduled", "FailedScheduling" (CamelCase, short)
  std::string action;           // "Binding", "Scheduling"
  std::string note;             // human-readable message; any length, see EventObject
  std::string reporting_controller = "huygens.io/scheduler";
  std::string reporting_instance;

  friend auto operator<=>(const EventRecord&, const EventRecord&) = default;
};

// The apiserver's limit on an Event's note, in bytes (events.k8s.io/v1 validation,
// NoteLengthLimit).
inline constexpr size_t kMaxEventNoteBytes = 1024;

// The events.k8s.io/v1 Event object for `event`, named `name`, at `event_time` (RFC 3339 with
// microseconds), without a series. The note is cut to kMaxEventNoteBytes without splitting a
// character and made well-formed UTF-8 (base/utf8.h), so the object always serialises (dump()
// does not throw) and passes the apiserver's length check whatever text callers put in it.
// Pure function.
nlohmann::json EventObject(const EventRecord& event, std::string_view name, std::string_view event_time);

class EventRecorder {
 public:
  // How long after its last observation a record still joins a series (client-go's finishTime).
  static constexpr std::chrono::minutes kSeriesWindow{6};

  // `client` writes the Events; `clock` (monotonic) measures the window; both must outlive the
  // recorder. Timestamps written (eventTime, series.lastObservedTime) are the wall clock's.
  EventRecorder(Client* client, Clock* clock) : client_(client), clock_(clock) {}

  // Writes `event`: a new Event named <object>.<unique suffix> (in the object's namespace,
  // "default" for a cluster-scoped object), or, for a repeat within kSeriesWindow, a merge patch
  // of the existing Event's series (see the file comment). Errors: the API's, as Client's (a
  // repeat whose write failed still counts, so the next repeat writes the full count).
  absl::Status Record(const EventRecord& event) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Series {
    std::string event_name;    // the Event written for it
    int32_t count = 1;         // occurrences; a series on the Event from 2 on
    Clock::TimePoint last;     // last observation (injected clock)
  };

  std::string NewEventName(const EventRecord& event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Client* client_;
  Clock* clock_;
  absl::Mutex mu_;  // held across a write: Record is serialised
  std::map<EventRecord, Series> series_ ABSL_GUARDED_BY(mu_);
  std::uint64_t names_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace huygens::kube

#endif  // HUYGENS_KUBE_EVENT_RECORDER_H_
