// SchedulingLoop: the scheduler service's scheduling thread. Each turn it applies the informers'
// changes to the CacheSync, settles the binding cycles that finished, and (when every informer
// is current (ChangeFeed::Current: synced, not stale), leading and in standalone mode) runs one
// attempt: Pop -> the scheduling cycle (Scheduler::SchedulingCycle: reserve, assume) -> the
// binding cycle (Scheduler::BindingCycle: the Binding, which carries huygens.io/allocation) on
// the BinderPool while the loop goes on -> Scheduler::FinishBinding when it ends.
//
// An attempt's outcomes: scheduled (counted when its binding cycle ends); unschedulable (a
// FailedScheduling event with kube-scheduler's FitError text, and the pod's PodScheduled
// condition False with reason Unschedulable and that text, written unless unchanged; the pod
// waits for a cluster change); error (event, condition with reason SchedulerError, backoff). A Binding that may have landed keeps the reservation and
// requeues with backoff; the next attempt runs the binding cycle again with the same decision.
// A lost race (the pod changed under the Binding's resourceVersion precondition, so no attempt
// of it can land) unreserves instead; the pod is decided afresh after backoff. A pod being
// deleted (metadata.deletionTimestamp) is neither attempted nor requeued (kube-scheduler
// v1.35's skipPodSchedule; CacheSync releases its reservation).
//
// Takeover fence (the apiserver-enforced half of leader election): every Binding carries the
// pod's resourceVersion as the decision read it (PodWriter::FinishBind), and whenever this
// process starts leading it first reads every pod (one quorum list) into its cache, then writes
// every pending pod of them it could bind (FencedByUs), setting huygens.io/scheduler-fence to a
// token of the new term, and schedules nothing until its pod informer has shown each of those
// pods with that token (or bound, or gone). Reading the list into the cache covers a pod the
// other replica bound just before the takeover: no fence write awaits it, yet its CPUs must be
// in the cache before any is reused, and the pod informer may not have shown that Binding yet
// (the 10,000-event chaos run of 2026-12-03 gave 6 CPUs twice without it). In extender mode the loop schedules nothing itself: it writes and awaits the
// fence the same way, and the extender's filter and bind answer only once it is complete
// (CacheSync::fenced_term). Why: a deposed leader's Binding that passed its client-side lease check can
// sit in a frozen connection and land later; the fence write moves the pod's resourceVersion, so
// that Binding is refused (409) whenever it arrives, and a Binding that landed before the fence
// write is in the cache before this leader reuses any CPU. Without it the new leader could give
// the CPUs to another pod first and the late Binding would hold them twice. A failed list or
// write is retried (once a second) and scheduling stays paused until the fence is complete. The
// writes go out several at a time.
//
// A stale cache pauses scheduling: while an informer is not ready (the condition that fails
// /readyz) no pod is popped, reserved or bound; binding cycles already handed to the binders
// finish. Scheduling resumes by itself once the informers re-list or resume (logged once each way
// by the feed).
//
// Time: queue times, attempt latencies and liveness come from the injected Clock; only the
// idle poll (20 ms, when there is nothing to do) is real time.
//
// Thread-safety: Run on one thread; LastProgress and the free functions from any thread.
#ifndef HUYGENS_SCHEDULER_SCHEDULING_LOOP_H_
#define HUYGENS_SCHEDULER_SCHEDULING_LOOP_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "base/clock.h"
#include "kube/client.h"
#include "nlohmann/json.hpp"
#include "sched/pod.h"
#include "sched/scheduler.h"
#include "scheduler/binder.h"
#include "scheduler/cache_sync.h"
#include "scheduler/config.h"
#include "scheduler/rebalancer.h"
#include "scheduler/service_metrics.h"

namespace huygens::scheduler {

// The schedulers of the profiles, by scheduler name.
using SchedulerMap = std::map<std::string, std::unique_ptr<sched::Scheduler>>;

// The profile of `scheduler_name` in `profiles`; nullptr when none.
const ProfileConfig* ProfileFor(const std::vector<ProfileConfig>& profiles, const std::string& scheduler_name);

// The pod as `profile` schedules it: the profile's default topology and bind policies where the
// pod names none, and no exclusive CPUs in `config`'s system pool namespaces.
void PreparePod(sched::Pod& pod, const ProfileConfig& profile, const SchedulerConfig& config);

// Whether Huygens places the pod's CPUs (some container gets exclusive CPUs, sched::PodFacts).
// In extender mode other pods pass filter, score neutrally and are only bound.
bool HasExclusiveCpus(const sched::Pod& pod);

// Whether the takeover fence writes `pod` (a pending pod's JSON): in standalone mode when one of
// `profiles` schedules it (spec.schedulerName); in extender mode when it decodes and, prepared
// with the first profile, has exclusive CPUs, the pods whose Bindings carry CPUs.
bool FencedByUs(const nlohmann::json& pod, const std::vector<ProfileConfig>& profiles, const SchedulerConfig& config);

// Logs at debug level each visited node's verdict for `pod` (namespace/name), one line each:
// "pod default/a: node n1 refused: Insufficient cpu", "pod default/a: node n2 feasible, score 57"
// (the weighted total the choice compared), "pod default/a: node n2 feasible". The standalone
// loop logs every attempt so, and the extender its filter verdicts.
void LogVerdicts(const std::string& pod, const std::vector<sched::NodeVerdict>& verdicts);

class SchedulingLoop {
 public:
  // What the loop works on; every pointer must outlive the loop.
  struct Parts {
    const SchedulerConfig* config;
    const std::vector<ProfileConfig>* profiles;
    ChangeFeed* feed;
    CacheSync* state;
    SchedulerMap* schedulers;
    BinderPool* binders;
    PodWriter* writer;
    const ServiceMetrics* metrics;
    const std::atomic<bool>* leading;
    Clock* clock;
    // For the takeover fence's list and writes; nullptr: no fence (tests of the loop alone).
    kube::Client* client = nullptr;
    // Counts the terms this process started leading (each is fenced anew, even when leadership
    // was lost and won back while a fence was being written); nullptr: one term.
    const std::atomic<int64_t>* term = nullptr;
    // Moves running pods while this process may schedule; nullptr: none.
    Rebalancer* rebalancer = nullptr;
  };
  explicit SchedulingLoop(Parts parts) : p_(parts) { Touch(); }

  // Turns until the feed is closed.
  void Run();
  // Marks progress now (the loop does at every turn).
  void Touch() { last_progress_ = p_.clock->Now().time_since_epoch().count(); }
  // How long ago the loop last made progress (liveness).
  Clock::Duration SinceProgress() const {
    return p_.clock->Now() - Clock::TimePoint(Clock::Duration(last_progress_.load()));
  }

 private:
  void ScheduleNext() ABSL_EXCLUSIVE_LOCKS_REQUIRED(p_.state->lock());
  void SettleBinds() ABSL_EXCLUSIVE_LOCKS_REQUIRED(p_.state->lock());
  // The takeover fence's writes (no lock held): lists every pod (quorum read), applies the list
  // (ApplyPodList) and writes the term's token on each pending pod of ours; true when all are
  // written (fence_wait_ then holds them).
  bool WriteFence() ABSL_LOCKS_EXCLUDED(p_.state->lock());
  // Writes the term's token on each of `pending` (pending pods' JSON), several at once; `wait`
  // gets each written pod (uid -> namespace, name). True when every one is written or gone;
  // false at the first failed write or change of leadership.
  bool WriteFenceTokens(const std::vector<const nlohmann::json*>& pending,
                        std::map<std::string, std::pair<std::string, std::string>>& wait)
      ABSL_LOCKS_EXCLUDED(p_.state->lock());
  // Applies a quorum list of every pod to the cache (state lock held): each pod newer than
  // cache_pods_version_ as the informer would apply it, and a delete for each cached pod the list
  // no longer holds that was seen at a version before the list's; cache_pods_version_ moves to
  // the list's. Returns the uids listed.
  std::set<std::string> ApplyPodList(const kube::ObjectList& pods) ABSL_EXCLUSIVE_LOCKS_REQUIRED(p_.state->lock());
  // Drops from fence_wait_ the pod of `c` once the informer shows it with the token, bound, or
  // deleted.
  void ObserveFence(const Change& c);
  // The fence's guard against a pod informer that lags or is frozen (a watch that stalls until
  // the idle cut): every 10 s of waiting, every pod is read from the API server (one quorum
  // list) and applied (ApplyPodList); the awaited pods are judged as ObserveFence judges an
  // event, and awaited pods not listed are gone. Scheduling thread only.
  void RecheckFence() ABSL_LOCKS_EXCLUDED(p_.state->lock());
  // Logs once per fence when it completes. Scheduling thread only.
  void SayWhenFenced();
  // Whether the fence of the current term is complete: written (its list applied), and each
  // fenced pod seen.
  bool Fenced() const {
    return p_.client == nullptr || (fence_written_ && fence_term_ == Term() && fence_wait_.empty());
  }
  int64_t Term() const { return p_.term != nullptr ? p_.term->load() : 0; }

  const Parts p_;
  // Takeover fence state (scheduling thread only): whether the fence writes of term fence_term_
  // are done, its token, the pods whose fence write the informer has not shown yet (uid), and when
  // a failed fence may be tried again.
  bool fence_written_ = false;
  int64_t fence_term_ = -1;  // the term whose fence fence_written_ speaks of
  std::string fence_token_;
  std::map<std::string, std::pair<std::string, std::string>> fence_wait_;  // uid -> ns, name
  Clock::TimePoint fence_recheck_at_{};
  Clock::TimePoint fence_retry_at_{};
  // Whether the fence's completion was logged.
  bool fence_complete_said_ = false;
  // Every pod change up to this resourceVersion is applied to the cache (the pods informer's
  // version when a batch was taken, or a fence list's). Scheduling thread only (written under
  // the state's lock).
  std::uint64_t cache_pods_version_ = 0;
  std::atomic<Clock::Duration::rep> last_progress_{0};
};

}  // namespace huygens::scheduler

#endif  // HUYGENS_SCHEDULER_SCHEDULING_LOOP_H_
