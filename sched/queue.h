// SchedulingQueue: pods waiting to be scheduled, as kube-scheduler's PriorityQueue keeps them.
//
// What it is: three places a pending pod can be (pkg/scheduler/backend/queue):
//   - activeQ: ready to schedule, ordered by priority (higher first), then by the time the pod
//     entered the queue (earlier first), then by creation order;
//   - backoffQ: failed recently; leaves for activeQ when its backoff expires. The backoff is
//     initial_backoff * 2^(attempts-1), capped at max_backoff (kube-scheduler: 1 s and 10 s);
//   - unschedulable: failed because no node fit; waits for a cluster event that may make it
//     fit (a pod deleted, a node added or updated), then moves to backoffQ (still backing off)
//     or activeQ. As in kube-scheduler, a pod that failed while such an event happened during
//     its attempt goes straight to backoffQ (so an event is never missed), and a pod left in
//     unschedulable longer than max_unschedulable_duration (5 min) is moved anyway: nothing
//     waits forever once it fits.
//
// Time is injected: every call takes `now`; the queue never reads a clock and never sleeps.
// The caller asks NextBackoffExpiry() to know when to come back.
//
// Invariants: a pod uid is in at most one of the three places, and not in the queue while
// popped (between Pop and AddUnschedulable / Done).
//
// Thread-safety: not thread-safe (one scheduler thread).
#ifndef HUYGENS_SCHED_QUEUE_H_
#define HUYGENS_SCHED_QUEUE_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "sched/pod.h"

namespace huygens::sched {

struct QueueOptions {
  absl::Duration initial_backoff = absl::Seconds(1);   // podInitialBackoffSeconds
  absl::Duration max_backoff = absl::Seconds(10);      // podMaxBackoffSeconds
  // podMaxInUnschedulablePodsDuration: after this long, an unschedulable pod is retried even
  // without an event. Default 5 minutes.
  absl::Duration max_unschedulable_duration = absl::Minutes(5);
};

// Cluster changes that may make an unschedulable pod fit.
enum class ClusterEvent { kPodDeleted, kNodeAdded, kNodeUpdated, kPodUpdated };

// A pod handed out by Pop.
struct QueuedPod {
  PodPtr pod;
  int attempts = 0;        // scheduling attempts so far, including the one about to start
  absl::Time enqueued;     // when it last entered activeQ's ordering (kube: Timestamp)
  absl::Time first_seen;   // when it was first added (for latency: kube InitialAttemptTimestamp)
};

class SchedulingQueue {
 public:
  explicit SchedulingQueue(QueueOptions options = {});

  // A new pod, ready now. Errors are ignored: a uid already queued is replaced by the new pod
  // object in its current place (kube-scheduler's Update).
  void Add(PodPtr pod, absl::Time now);

  // Moves expired backoffs and overdue unschedulable pods to activeQ, then hands out the
  // highest-priority active pod (nullopt when activeQ is empty).
  std::optional<QueuedPod> Pop(absl::Time now);

  // Returns a popped pod after a failed attempt. `unschedulable`: no node fit (it waits for an
  // event, or backs off if one happened during its attempt); false: an error (it backs off).
  void AddFailed(QueuedPod pod, bool unschedulable, absl::Time now);

  // A popped pod was scheduled (or dropped): forget its attempt bookkeeping.
  void Done(std::string_view uid);

  // A cluster change: every unschedulable pod moves to backoffQ (if still backing off) or
  // activeQ (kube-scheduler's MoveAllToActiveOrBackoffQueue).
  void OnClusterEvent(ClusterEvent event, absl::Time now);

  // Removes a pending pod wherever it is (the pod was deleted). Returns whether it was there.
  bool Delete(std::string_view uid);

  // Earliest time a backoffQ pod becomes ready, or an unschedulable pod is due for the
  // periodic flush; nullopt when neither queue holds anything.
  std::optional<absl::Time> NextWakeup() const;

  size_t ActiveSize() const { return active_.size(); }
  size_t BackoffSize() const { return backoff_.size(); }
  size_t UnschedulableSize() const { return unschedulable_.size(); }
  size_t Size() const { return entries_.size(); }  // everything pending, not popped ones

 private:
  enum class Where { kActive, kBackoff, kUnschedulable, kPopped };
  struct Entry {
    QueuedPod queued;
    Where where = Where::kActive;
    absl::Time backoff_until;     // kBackoff
    absl::Time unschedulable_since;
    uint64_t seq = 0;             // arrival order tiebreak
    int64_t move_cycle_at_pop = -1;
  };
  // (-priority, enqueued, creation index, seq) and (backoff_until, seq); both carry the uid.
  using ActiveKey = std::tuple<int32_t, absl::Time, int64_t, uint64_t, std::string>;
  using BackoffKey = std::tuple<absl::Time, uint64_t, std::string>;

  absl::Time BackoffUntil(const Entry& e) const;
  void ToActive(Entry& e, absl::Time now);
  void ToBackoff(Entry& e);
  void Unlink(Entry& e);
  void Flush(absl::Time now);
  ActiveKey KeyOf(const Entry& e) const;

  QueueOptions options_;
  absl::flat_hash_map<std::string, Entry> entries_;  // pending pods
  absl::flat_hash_map<std::string, Entry> popped_;   // pods being scheduled
  std::set<ActiveKey> active_;
  std::set<BackoffKey> backoff_;
  std::set<std::tuple<absl::Time, uint64_t, std::string>> unschedulable_;  // by since
  uint64_t next_seq_ = 0;
  int64_t move_cycle_ = 0;  // incremented by OnClusterEvent
};

}  // namespace huygens::sched

#endif  // HUYGENS_SCHED_QUEUE_H_
