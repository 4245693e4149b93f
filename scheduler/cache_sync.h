// The scheduler service's intake and cache sync: what the cluster looks like to the scheduling
// core, kept from the API server's objects.
//
//   ChangeFeed  the informers on Nodes, NodeResourceTopologies and Pods (and NumaAffinityGroups
//               when the rebalancer runs), and the queue of their changes that the informers'
//               threads fill and the scheduling thread takes.
//   CacheSync   the state those changes build, owned by the scheduling thread: the last seen
//               objects, the sched::ClusterCache (nodes from Node + NRT, pods on their nodes with
//               their huygens.io/allocation) and the sched::SchedulingQueue of pending pods.
//
// Cache rules (docs/scheduler-service.md): a node enters the cache when both its Node and its
// NodeResourceTopology are known (CPU state from the NRT: topology/nrt.h); every non-terminal
// pod bound to a node is counted (with its huygens.io/allocation when it has one, whoever
// scheduled it); CPUs the NRT lists as exclusive that no Huygens allocation holds (kubelet-bound
// or other schedulers' pods, published by the agent) join the node's system pool. A node whose
// NRT does not decode into a node state (NodeStateFromNrt: a field out of range, a topology that
// is not consistent, pools outside the machine) is left out of the cache, or taken out, until a
// valid version arrives; the other nodes are not touched. Pending pods
// whose spec.schedulerName names a profile enter the queue once they have no scheduling gates
// (in extender mode: none, since kube-scheduler asks for each pod).
//
// Restart rule: a bound pod's huygens.io/allocation is the truth. The scheduler's allocation
// reaches the API only on the Binding (with spec.nodeName, in one write), so a pending pod
// that carries one had it written by someone else: it holds nothing and is scheduled like any
// other pod; the Binding replaces the annotation.
//
// Time: the queue's timestamps (backoff, unschedulable timeout, latency) come from the injected
// Clock (QueueTime).
#ifndef HUYGENS_SCHEDULER_CACHE_SYNC_H_
#define HUYGENS_SCHEDULER_CACHE_SYNC_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/clock.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "kube/numa_affinity_group.h"
#include "nlohmann/json.hpp"
#include "node/allocation.h"
#include "sched/cache.h"
#include "sched/queue.h"
#include "scheduler/config.h"

namespace huygens::scheduler {

// `clock`'s now as the scheduling queue's absl::Time (the clock's epoch is the Unix epoch's
// stand-in: only differences of these times mean anything).
inline absl::Time QueueTime(const Clock& clock) {
  return absl::UnixEpoch() + absl::FromChrono(clock.Now().time_since_epoch());
}

enum class ChangeKind { kNode, kNrt, kPod, kAffinityGroup };

// One informer event: the object as last seen, and whether it was deleted.
struct Change {
  ChangeKind kind;
  bool deleted = false;
  nlohmann::json object;
};

// The informers and their queue of changes.
// Thread-safety: every member is safe from any thread; Start/StopInformers from one thread.
// mu_ guards the queue of changes, gate_mu_ Current()'s pause state.
class ChangeFeed {
 public:
  // Starts one informer per kind over `client` (which, like `clock`, must outlive the feed);
  // their events queue up until Take. The NumaAffinityGroup informer (huygens.io/v1alpha1, the
  // rebalancer's declared groups) runs only when `affinity_groups`; scheduling never waits for
  // it (Synced, Ready and Current leave it out): AffinityGroupsReady says whether it is current.
  void StartInformers(kube::Client* client, Clock* clock, bool affinity_groups = false);
  // Stops the informers. REQUIRES: StartInformers was called.
  void StopInformers();
  // Every informer has listed once. REQUIRES: StartInformers was called.
  bool Synced() const;
  // The pods informer's version (kube::Informer::resource_version): every pod change up to it
  // is queued already, so a caller that reads it and then Takes holds them all. "" before the
  // first list or after a 410. REQUIRES: StartInformers was called. Any thread.
  std::string PodsVersion() const;
  // For /readyz: OK when every informer is ready (kube::Informer::Ready: listed, and heard from
  // the API server within its stale bound), else Unavailable with each failing informer's
  // reason, joined by "; ". REQUIRES: StartInformers was called.
  absl::Status Ready() const;
  // OK when the NumaAffinityGroup informer is ready (listed, and heard from within its stale
  // bound; kube::Informer::Ready); FailedPrecondition when it was not started; else Unavailable
  // with its reason (for example the CRD is not installed: the list answers 404). Any thread.
  absl::Status AffinityGroupsReady() const;
  // Whether new pods may be reserved and bound now (the scheduling loop asks before each
  // attempt, the extender before each filter and bind): OK while Ready(); else Unavailable
  // "scheduling paused: " + Ready()'s reasons, so no decision is taken on a cache that may have
  // missed the API server's changes (a node's CPUs given away, a pod bound elsewhere). It passes
  // again by itself once the informers have re-listed or resumed their watches.
  // Logs once (warn) when it starts refusing, naming the informers that are not ready, and once
  // (info) when it passes again, naming the informers that were stale and how long scheduling
  // was paused. Before every informer has listed (start-up) it refuses without logging; from
  // then on a refusal is logged whether or not a call passed before, so informers that went
  // stale before the scheduling thread's first call still log the pause.
  // REQUIRES: StartInformers was called.
  absl::Status Current() ABSL_LOCKS_EXCLUDED(gate_mu_);

  // The queued changes, oldest first. When there are none and `wait` > 0, first waits up to
  // `wait` (real time: the poll interval of the scheduling thread) for a change, a Wake or a
  // Close, unless `has_other_work()` (called with the feed's lock held) is true.
  std::deque<Change> Take(std::chrono::milliseconds wait, const std::function<bool()>& has_other_work)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Wakes a Take that waits (a binding cycle finished).
  void Wake() ABSL_LOCKS_EXCLUDED(mu_);
  // Asks the scheduling thread to stop (Closed() turns true) and wakes it.
  void Close() ABSL_LOCKS_EXCLUDED(mu_);
  bool Closed() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Push(ChangeKind kind, bool deleted, const nlohmann::json& object) ABSL_LOCKS_EXCLUDED(mu_);
  kube::InformerHandlers HandlersFor(ChangeKind kind);
  // The reasons of the informers that are not ready (Informer::Ready), nodes, NRTs, pods in
  // that order; their resource names go into `names` when it is set.
  std::vector<std::string> NotReady(std::set<std::string>* names) const;

  mutable absl::Mutex mu_;
  absl::CondVar cv_;  // a change was queued, Wake or Close
  std::deque<Change> changes_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::unique_ptr<kube::Informer> nodes_, nrts_, pods_;
  std::unique_ptr<kube::Informer> groups_;  // NumaAffinityGroups; null unless asked for

  // Current()'s state: while it refuses after the first sync, since when and which informers
  // were not ready (their resource names, in the order nodes, NRTs, pods).
  absl::Mutex gate_mu_;
  bool paused_ ABSL_GUARDED_BY(gate_mu_) = false;
  Clock* clock_ = nullptr;  // set by StartInformers
  Clock::TimePoint paused_at_ ABSL_GUARDED_BY(gate_mu_);
  std::set<std::string> paused_by_ ABSL_GUARDED_BY(gate_mu_);
};

// The scheduling thread's view of the cluster.
// Thread-safety: the scheduling thread and the extender's HTTP threads hold the object's lock
// (a CacheSync::Lock) over every use but ready()/set_ready(); the compiler checks it (clang's
// -Wthread-safety: every accessor below REQUIRES the lock).
class CacheSync {
 public:
  // Holds `sync`'s lock for its scope: it serialises the scheduling thread and the extender's
  // HTTP threads over the CacheSync and the schedulers that read its cache.
  class ABSL_SCOPED_LOCKABLE Lock {
   public:
    explicit Lock(CacheSync* sync) ABSL_EXCLUSIVE_LOCK_FUNCTION(sync->mu_) : sync_(sync) { sync_->mu_.Lock(); }
    ~Lock() ABSL_UNLOCK_FUNCTION() { sync_->mu_.Unlock(); }
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;

   private:
    CacheSync* sync_;
  };

  // Told, on the scheduling thread under the lock, of an NRT that leaves its node out of the cache:
  // the object as received and why (the error, naming the object and the field). Called once
  // per distinct reason while the NRT stays invalid. Must not call back into the CacheSync.
  using InvalidNrtReporter = std::function<void(const nlohmann::json& nrt, const std::string& why)>;

  // Told, on the scheduling thread under the lock, of each applied version of a pending pod of
  // ours that has spec.schedulingGates (the pod as received). Must not call back into the
  // CacheSync.
  using GatedPodReporter = std::function<void(const nlohmann::json& pod)>;

  // `has_profile(schedulerName)`: whether a pending pod of that scheduler is ours. `clock` must
  // outlive the object. Extender mode queues no pod (kube-scheduler asks for each) and reads the
  // allocation of any pending pod. `on_invalid_nrt` and `on_gated` (may be empty): see
  // InvalidNrtReporter and GatedPodReporter.
  CacheSync(NumaStrategy numa_strategy, bool extender, std::function<bool(const std::string&)> has_profile,
            Clock* clock, InvalidNrtReporter on_invalid_nrt = nullptr, GatedPodReporter on_gated = nullptr)
      : numa_strategy_(numa_strategy),
        extender_(extender),
        has_profile_(std::move(has_profile)),
        clock_(clock),
        on_invalid_nrt_(std::move(on_invalid_nrt)),
        on_gated_(std::move(on_gated)) {}

  // Applies one informer change to the objects, the cache and the queue (see the cache rules).
  // Bad objects are logged and skipped, and so is a pod older than the version stored
  // (kube::ResourceVersionNumber of both) or whose uid was deleted (the last kDeletedUids):
  // the takeover fence stores pods read directly, ahead of the informer or behind it, whose
  // older versions must not take the cache back nor bring a deleted pod back.
  // A pod is its uid: a version whose namespace/name is stored under another uid (deleted and
  // re-created, which a relist reports as an update) deletes the uid seen at the earlier
  // resourceVersion (its CPUs, assume and queue entry released) and the later one is applied as
  // new, as kube-scheduler v1.35 does (its cache and queue key pods by uid).
  // A pending pod being deleted (metadata.deletionTimestamp) is never queued, and one queued or
  // reserved leaves the queue and releases its reservation (kube-scheduler v1.35's
  // skipPodSchedule; the API server refuses its Binding). A bound one counts until it is gone.
  // A pending pod with spec.schedulingGates is not queued (kube-scheduler v1.35's SchedulingGates
  // PreEnqueue plugin; the API server refuses its Binding) and is told to on_gated; the version
  // that removes its last gate queues it, ready at once.
  void Apply(const Change& c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Told, on the scheduling thread under the lock, when a node's agent falls silent or reports
  // again (CheckAgents): its NRT as last seen and what happened. Must not call back into the
  // CacheSync.
  using AgentReporter = std::function<void(const nlohmann::json& nrt, bool silent, const std::string& note)>;
  // Agent heartbeats (huygens.io/agent-heartbeat on the NRT): a node whose heartbeat has not
  // changed for `timeout` (0: never) is marked sched::Node::agent_silent by CheckAgents until
  // it changes again; the first sighting counts as a change. `report` may be empty.
  void JudgeAgents(Clock::Duration timeout, AgentReporter report) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Marks the nodes whose agent has been silent for the timeout (logged, reported); does its
  // work at most once a second on the clock. Call it from the scheduling loop.
  void CheckAgents() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // The lock, for annotations only (ABSL_EXCLUSIVE_LOCKS_REQUIRED(state->lock())): a const
  // absl::Mutex cannot be locked; take a Lock.
  const absl::Mutex& lock() const ABSL_LOCK_RETURNED(mu_) { return mu_; }
  // Tells the analysis, and checks, that the calling thread holds the lock (for a caller that
  // reaches this object through another pointer than the one it locked).
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK(mu_) { mu_.AssertHeld(); }
  // Runs `f` with the lock released (an API call), and takes it again before returning.
  template <typename F>
  void WithoutLock(F&& f) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    mu_.Unlock();
    try {
      std::forward<F>(f)();
    } catch (...) {
      mu_.Lock();
      throw;
    }
    mu_.Lock();
  }

  // The accessors below return references into the object: use them under the lock only.
  sched::ClusterCache& cache() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return cache_; }
  const sched::ClusterCache& cache() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return cache_; }
  sched::SchedulingQueue& queue() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return queue_; }
  // Pods by uid, as last seen (terminal and deleted pods removed).
  const std::map<std::string, nlohmann::json>& pods() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return pods_; }
  // NodeResourceTopology objects by node name, as last seen.
  const std::map<std::string, nlohmann::json>& nrts() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return nrts_; }
  // The nodes left out of the cache because their NRT as last seen is invalid: node name -> why
  // (the error, naming the object and the field). An entry goes when a valid version arrives
  // or the NRT is deleted.
  const std::map<std::string, std::string>& invalid_nrts() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return invalid_nrts_;
  }
  // One NumaAffinityGroup as last seen: the decoded group and its object (resourceVersion,
  // status).
  struct DeclaredGroup {
    kube::NumaAffinityGroup group;
    nlohmann::json object;
  };
  // The NumaAffinityGroups that decode (kube/numa_affinity_group.h), by "namespace/name"; one that
  // does not is logged (warn) and left out until a valid version arrives.
  const std::map<std::string, DeclaredGroup>& affinity_groups() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return affinity_groups_;
  }
  // A pod's arrival index (the queue's tie-break), or the next one for a pod not seen yet.
  int64_t CreationIndex(const std::string& uid) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The pending pod `uid` as last seen, decoded for the queue (with its arrival index); nullptr
  // when it is gone, bound or does not decode.
  sched::PodPtr PendingPod(const std::string& uid) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Every object the informers listed at sync has been applied (set by the scheduling thread).
  bool ready() const { return ready_; }
  void set_ready() { ready_ = true; }

  // The takeover fence as the scheduling loop last judged it (SchedulingLoop, "Takeover fence"):
  // the leadership term whose fence is complete, -1 while none is. The extender's verbs answer
  // only for that term.
  int64_t fenced_term() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return fenced_term_; }
  void set_fenced_term(int64_t term) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { fenced_term_ = term; }

 private:
  absl::Status Place(const nlohmann::json& object) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RebuildNode(const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records that node `name`'s NRT is invalid for `why`: logs it and tells on_invalid_nrt_,
  // once per distinct reason.
  void ReportInvalidNrt(const std::string& name, const std::string& why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records the heartbeat of node `name`'s NRT `nrt` (see the definition).
  void NoteHeartbeat(const std::string& name, const nlohmann::json& nrt) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether node `name`'s agent is judged silent.
  bool AgentSilent(const std::string& name) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Marks node `name`'s agent silent or not, in heartbeats_ and on the cached node; on a change
  // of the cached node, logs `note` and tells on_agent_.
  void SetAgentSilent(const std::string& name, bool silent, const std::string& note) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Keeps the devices of pods the cache does not account out of the rebuilt node `name` (see
  // the definition); `devices_in_use` is NodeStateFromNrt's.
  void HoldForeignDevices(const std::string& name, const NodeDevices& devices_in_use)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Follows a publication of node `name` whose zones alone changed (see the definition).
  void ApplyZoneDevices(const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ApplyPod(const nlohmann::json& object, bool deleted) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes pod `uid` out of the objects, the cache and the queue, its CPUs freed; `deleted`: the
  // uid is remembered as deleted (a terminal pod is not).
  void DropPod(const std::string& uid, bool deleted) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // When `object`'s namespace/name is stored under another uid (deleted and re-created; a relist
  // reports that as an update), drops the uid seen at the earlier resourceVersion as deleted.
  // Returns false when that is `object`'s own (it must not be stored).
  bool SettleRecreated(const std::string& uid, const nlohmann::json& object)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // pods_ and its index by node (spec.nodeName), kept together.
  void StorePod(const std::string& uid, const nlohmann::json& object) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ErasePod(const std::string& uid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;

  const NumaStrategy numa_strategy_;
  const bool extender_;
  const std::function<bool(const std::string&)> has_profile_;
  Clock* clock_;
  const InvalidNrtReporter on_invalid_nrt_;
  const GatedPodReporter on_gated_;
  sched::ClusterCache cache_ ABSL_GUARDED_BY(mu_);
  sched::SchedulingQueue queue_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, nlohmann::json> nodes_ ABSL_GUARDED_BY(mu_);  // by name
  std::map<std::string, nlohmann::json> nrts_ ABSL_GUARDED_BY(mu_);   // by name
  std::map<std::string, std::string> invalid_nrts_ ABSL_GUARDED_BY(mu_);  // node name -> why its NRT is invalid
  struct Heartbeat {
    std::string value;        // the annotation as last seen
    Clock::TimePoint seen{};  // when it last changed, on clock_
    bool silent = false;      // CheckAgents judged the agent silent
  };
  std::map<std::string, Heartbeat> heartbeats_ ABSL_GUARDED_BY(mu_);  // by node name
  Clock::Duration agent_timeout_ ABSL_GUARDED_BY(mu_){0};
  AgentReporter on_agent_ ABSL_GUARDED_BY(mu_);
  Clock::TimePoint next_agent_check_ ABSL_GUARDED_BY(mu_){};
  std::map<std::string, nlohmann::json> pods_ ABSL_GUARDED_BY(mu_);   // by uid
  std::map<std::string, std::string> uid_by_key_ ABSL_GUARDED_BY(mu_);  // namespace/name -> the uid pods_ holds
  std::map<std::string, DeclaredGroup> affinity_groups_ ABSL_GUARDED_BY(mu_);  // by namespace/name
  // The stored bound pods by spec.nodeName (pending pods are not indexed), so a rebuild reads
  // its own pods only.
  std::map<std::string, std::set<std::string>> uids_by_node_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> node_of_ ABSL_GUARDED_BY(mu_);   // uid -> its key in uids_by_node_
  std::map<std::string, int64_t> creation_ ABSL_GUARDED_BY(mu_);      // uid -> arrival index
  // The uids of the last kDeletedUids pods deleted, oldest first (a uid never comes back).
  static constexpr std::size_t kDeletedUids = 65536;
  std::set<std::string> deleted_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> deleted_order_ ABSL_GUARDED_BY(mu_);
  int64_t next_creation_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<bool> ready_{false};
  int64_t fenced_term_ ABSL_GUARDED_BY(mu_) = -1;
};

}  // namespace huygens::scheduler

#endif  // HUYGENS_SCHEDULER_CACHE_SYNC_H_
