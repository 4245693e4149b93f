#include "sched/queue.h"

#include <algorithm>
#include <utility>

namespace huygens::sched {
namespace {

// absl's string_view is not std::string_view here: heterogeneous lookups need absl's.
absl::string_view Key(std::string_view s) { return absl::string_view(s.data(), s.size()); }

}  // namespace

SchedulingQueue::SchedulingQueue(QueueOptions options) : options_(options) {}

SchedulingQueue::ActiveKey SchedulingQueue::KeyOf(const Entry& e) const {
  return {-e.queued.pod->priority, e.queued.enqueued, e.queued.pod->creation_index, e.seq,
          e.queued.pod->Uid()};
}

absl::Time SchedulingQueue::BackoffUntil(const Entry& e) const {
  // kube-scheduler: initial * 2^(attempts-1), capped at max.
  absl::Duration d = options_.initial_backoff;
  for (int i = 1; i < e.queued.attempts && d < options_.max_backoff; ++i) d *= 2;
  return e.unschedulable_since + std::min(d, options_.max_backoff);
}

void SchedulingQueue::Unlink(Entry& e) {
  switch (e.where) {
    case Where::kActive: active_.erase(KeyOf(e)); break;
    case Where::kBackoff: backoff_.erase({e.backoff_until, e.seq, e.queued.pod->Uid()}); break;
    case Where::kUnschedulable:
      unschedulable_.erase({e.unschedulable_since, e.seq, e.queued.pod->Uid()});
      break;
    case Where::kPopped: break;
  }
}

void SchedulingQueue::ToActive(Entry& e, absl::Time now) {
  Unlink(e);
  e.where = Where::kActive;
  e.queued.enqueued = now;
  active_.insert(KeyOf(e));
}

void SchedulingQueue::ToBackoff(Entry& e) {
  Unlink(e);
  e.where = Where::kBackoff;
  e.backoff_until = BackoffUntil(e);
  backoff_.insert({e.backoff_until, e.seq, e.queued.pod->Uid()});
}

void SchedulingQueue::Add(PodPtr pod, absl::Time now) {
  const std::string uid = pod->Uid();
  auto it = entries_.find(Key(uid));
  if (it != entries_.end()) {  // an update: keep its place, refresh the object
    Entry& e = it->second;
    Unlink(e);
    e.queued.pod = std::move(pod);
    switch (e.where) {
      case Where::kActive: active_.insert(KeyOf(e)); break;
      case Where::kBackoff: backoff_.insert({e.backoff_until, e.seq, uid}); break;
      case Where::kUnschedulable: unschedulable_.insert({e.unschedulable_since, e.seq, uid}); break;
      case Where::kPopped: break;
    }
    return;
  }
  Entry e;
  e.queued.pod = std::move(pod);
  e.queued.first_seen = now;
  e.seq = next_seq_++;
  e.where = Where::kPopped;  // not linked anywhere yet
  Entry& stored = entries_.emplace(uid, std::move(e)).first->second;
  ToActive(stored, now);
}

void SchedulingQueue::Flush(absl::Time now) {
  while (!backoff_.empty() && std::get<0>(*backoff_.begin()) <= now) {
    Entry& e = entries_.at(std::get<2>(*backoff_.begin()));
    ToActive(e, now);
  }
  while (!unschedulable_.empty() &&
         std::get<0>(*unschedulable_.begin()) + options_.max_unschedulable_duration <= now) {
    Entry& e = entries_.at(std::get<2>(*unschedulable_.begin()));
    if (BackoffUntil(e) > now) {
      ToBackoff(e);
    } else {
      ToActive(e, now);
    }
  }
}

std::optional<QueuedPod> SchedulingQueue::Pop(absl::Time now) {
  Flush(now);
  if (active_.empty()) return std::nullopt;
  auto it = entries_.find(std::get<4>(*active_.begin()));
  active_.erase(active_.begin());
  Entry e = std::move(it->second);
  entries_.erase(it);
  e.where = Where::kPopped;
  ++e.queued.attempts;
  e.move_cycle_at_pop = move_cycle_;
  QueuedPod out = e.queued;
  popped_.insert_or_assign(out.pod->Uid(), std::move(e));
  return out;
}

void SchedulingQueue::AddFailed(QueuedPod pod, bool unschedulable, absl::Time now) {
  const std::string uid = pod.pod->Uid();
  Entry e;
  auto p = popped_.find(Key(uid));
  if (p != popped_.end()) {
    e = std::move(p->second);
    popped_.erase(p);
  } else {
    e.seq = next_seq_++;
    e.queued.first_seen = pod.first_seen;
  }
  e.queued.pod = std::move(pod.pod);
  e.queued.attempts = std::max(pod.attempts, e.queued.attempts);
  e.where = Where::kPopped;
  e.unschedulable_since = now;
  Entry& stored = entries_.insert_or_assign(uid, std::move(e)).first->second;
  // An error, or a cluster event during the attempt: back off instead of waiting for an event
  // that already happened (kube-scheduler's moveRequestCycle).
  if (!unschedulable || stored.move_cycle_at_pop < move_cycle_) {
    ToBackoff(stored);
  } else {
    stored.where = Where::kUnschedulable;
    unschedulable_.insert({stored.unschedulable_since, stored.seq, uid});
  }
}

void SchedulingQueue::Done(std::string_view uid) {
  auto it = popped_.find(Key(uid));
  if (it != popped_.end()) popped_.erase(it);
}

void SchedulingQueue::OnClusterEvent(ClusterEvent event, absl::Time now) {
  (void)event;  // every modelled event can make any unschedulable pod fit
  ++move_cycle_;
  while (!unschedulable_.empty()) {
    Entry& e = entries_.at(std::get<2>(*unschedulable_.begin()));
    if (BackoffUntil(e) > now) {
      ToBackoff(e);
    } else {
      ToActive(e, now);
    }
  }
}

bool SchedulingQueue::Delete(std::string_view uid) {
  auto it = entries_.find(Key(uid));
  if (it == entries_.end()) {
    auto p = popped_.find(Key(uid));
    if (p == popped_.end()) return false;
    popped_.erase(p);
    return true;
  }
  Unlink(it->second);
  entries_.erase(it);
  return true;
}

std::optional<absl::Time> SchedulingQueue::NextWakeup() const {
  std::optional<absl::Time> next;
  if (!backoff_.empty()) next = std::get<0>(*backoff_.begin());
  if (!unschedulable_.empty()) {
    const absl::Time due =
        std::get<0>(*unschedulable_.begin()) + options_.max_unschedulable_duration;
    if (!next.has_value() || due < *next) next = due;
  }
  return next;
}

}  // namespace huygens::sched
