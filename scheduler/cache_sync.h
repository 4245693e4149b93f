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
// whose spec.schedulerName names a profile enter the queue (in extender mode: none, since
// kube-scheduler asks for each pod).
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
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
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
  absl::Status Current();

  // The queued changes, oldest first. When there are none and `wait` > 0, first waits up to
  // `wait` (real time: the poll interval of the scheduling thread) for a change, a Wake or a
  // Close, unless `has_other_work()` (called with the feed's lock held) is true.
  std::deque<Change> Take(std::chrono::milliseconds wait, const std::function<bool()>& has_other_work);
  // Wakes a Take that waits (a binding cycle finished).
  void Wake();
  // Asks the scheduling thread to stop (Closed() turns true) and wakes it.
  void Close();
  bool Closed() const;

 private:
  void Push(ChangeKind kind, bool deleted, const nlohmann::json& object);
  kube::InformerHandlers HandlersFor(ChangeKind kind);
  // The reasons of the informers that are not ready (Informer::Ready), nodes, NRTs, pods in
  // that order; their resource names go into `names` when it is set.
  std::vector<std::string> NotReady(std::set<std::string>* names) const;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Change> changes_;
  bool closed_ = false;
  std::unique_ptr<kube::Informer> nodes_, nrts_, pods_;
  std::unique_ptr<kube::Informer> groups_;  // NumaAffinityGroups; null unless asked for

  // Current()'s state: while it refuses after the first sync, since when and which informers
  // were not ready (their resource names, in the order nodes, NRTs, pods).
  std::mutex gate_mu_;
  bool paused_ = false;
  Clock* clock_ = nullptr;
  Clock::TimePoint paused_at_;
  std::set<std::string> paused_by_;
};

// The scheduling thread's view of the cluster.
// Thread-safety: not thread-safe; the scheduling thread and the extender's HTTP threads hold
// `mu` over every use (ready() excepted).
class CacheSync {
 public:
  // Told, on the scheduling thread under `mu`, of an NRT that leaves its node out of the cache:
  // the object as received and why (the error, naming the object and the field). Called once
  // per distinct reason while the NRT stays invalid. Must not call back into the CacheSync.
  using InvalidNrtReporter = std::function<void(const nlohmann::json& nrt, const std::string& why)>;

  // `has_profile(schedulerName)`: whether a pending pod of that scheduler is ours. `clock` must
  // outlive the object. Extender mode queues no pod (kube-scheduler asks for each) and reads the
  // allocation of any pending pod. `on_invalid_nrt` (may be empty): see InvalidNrtReporter.
  CacheSync(NumaStrategy numa_strategy, bool extender, std::function<bool(const std::string&)> has_profile,
            Clock* clock, InvalidNrtReporter on_invalid_nrt = nullptr)
      : numa_strategy_(numa_strategy),
        extender_(extender),
        has_profile_(std::move(has_profile)),
        clock_(clock),
        on_invalid_nrt_(std::move(on_invalid_nrt)) {}

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
  void Apply(const Change& c);

  sched::ClusterCache& cache() { return cache_; }
  const sched::ClusterCache& cache() const { return cache_; }
  sched::SchedulingQueue& queue() { return queue_; }
  // Pods by uid, as last seen (terminal and deleted pods removed).
  const std::map<std::string, nlohmann::json>& pods() const { return pods_; }
  // NodeResourceTopology objects by node name, as last seen.
  const std::map<std::string, nlohmann::json>& nrts() const { return nrts_; }
  // The nodes left out of the cache because their NRT as last seen is invalid: node name -> why
  // (the error, naming the object and the field). An entry goes when a valid version arrives
  // or the NRT is deleted.
  const std::map<std::string, std::string>& invalid_nrts() const { return invalid_nrts_; }
  // One NumaAffinityGroup as last seen: the decoded group and its object (resourceVersion,
  // status).
  struct DeclaredGroup {
    kube::NumaAffinityGroup group;
    nlohmann::json object;
  };
  // The NumaAffinityGroups that decode (kube/numa_affinity_group.h), by "namespace/name"; one that
  // does not is logged (warn) and left out until a valid version arrives.
  const std::map<std::string, DeclaredGroup>& affinity_groups() const { return affinity_groups_; }
  // A pod's arrival index (the queue's tie-break), or the next one for a pod not seen yet.
  int64_t CreationIndex(const std::string& uid) const;
  // The pending pod `uid` as last seen, decoded for the queue (with its arrival index); nullptr
  // when it is gone, bound or does not decode.
  sched::PodPtr PendingPod(const std::string& uid) const;

  // Every object the informers listed at sync has been applied (set by the scheduling thread).
  bool ready() const { return ready_; }
  void set_ready() { ready_ = true; }

  // The takeover fence as the scheduling loop last judged it (SchedulingLoop, "Takeover fence"):
  // the leadership term whose fence is complete, -1 while none is. The extender's verbs answer
  // only for that term. Guarded by `mu`.
  int64_t fenced_term() const { return fenced_term_; }
  void set_fenced_term(int64_t term) { fenced_term_ = term; }

  // Serialises the scheduling thread and the extender's HTTP threads over this object and the
  // schedulers that read its cache.
  std::mutex mu;

 private:
  absl::Status Place(const nlohmann::json& object);
  void RebuildNode(const std::string& name);
  // Records that node `name`'s NRT is invalid for `why`: logs it and tells on_invalid_nrt_,
  // once per distinct reason.
  void ReportInvalidNrt(const std::string& name, const std::string& why);
  // Keeps the devices of pods the cache does not account out of the rebuilt node `name` (see
  // the definition); `devices_in_use` is NodeStateFromNrt's.
  void HoldForeignDevices(const std::string& name, const NodeDevices& devices_in_use);
  // Follows a publication of node `name` whose zones alone changed (see the definition).
  void ApplyZoneDevices(const std::string& name);
  void ApplyPod(const nlohmann::json& object, bool deleted);
  // Takes pod `uid` out of the objects, the cache and the queue, its CPUs freed; `deleted`: the
  // uid is remembered as deleted (a terminal pod is not).
  void DropPod(const std::string& uid, bool deleted);
  // When `object`'s namespace/name is stored under another uid (deleted and re-created; a relist
  // reports that as an update), drops the uid seen at the earlier resourceVersion as deleted.
  // Returns false when that is `object`'s own (it must not be stored).
  bool SettleRecreated(const std::string& uid, const nlohmann::json& object);
  // pods_ and its index by node (spec.nodeName), kept together.
  void StorePod(const std::string& uid, const nlohmann::json& object);
  void ErasePod(const std::string& uid);

  const NumaStrategy numa_strategy_;
  const bool extender_;
  const std::function<bool(const std::string&)> has_profile_;
  Clock* clock_;
  const InvalidNrtReporter on_invalid_nrt_;
  sched::ClusterCache cache_;
  sched::SchedulingQueue queue_;
  std::map<std::string, nlohmann::json> nodes_;  // by name
  std::map<std::string, nlohmann::json> nrts_;   // by name
  std::map<std::string, std::string> invalid_nrts_;  // node name -> why its NRT is invalid
  std::map<std::string, nlohmann::json> pods_;   // by uid
  std::map<std::string, std::string> uid_by_key_;  // namespace/name -> the uid pods_ holds
  std::map<std::string, DeclaredGroup> affinity_groups_;  // by namespace/name
  // The stored bound pods by spec.nodeName (pending pods are not indexed), so a rebuild reads
  // its own pods only.
  std::map<std::string, std::set<std::string>> uids_by_node_;
  std::map<std::string, std::string> node_of_;   // uid -> its key in uids_by_node_
  std::map<std::string, int64_t> creation_;      // uid -> arrival index
  // The uids of the last kDeletedUids pods deleted, oldest first (a uid never comes back).
  static constexpr std::size_t kDeletedUids = 65536;
  std::set<std::string> deleted_;
  std::deque<std::string> deleted_order_;
  int64_t next_creation_ = 0;
  std::atomic<bool> ready_{false};
  int64_t fenced_term_ = -1;
};

}  // namespace huygens::scheduler

#endif  // HUYGENS_SCHEDULER_CACHE_SYNC_H_
