// ExtenderHandlers: kube-scheduler's HTTP extender verbs (scheduler/extender_protocol.h) over
// the service's informer-fed cache, for extender mode (SchedulerService::ServeExtender):
//   filter      the first profile's filter plugins for exclusive pods (failed nodes get the
//               plugins' reasons, split into failedNodes / failedAndUnresolvableNodes; a node
//               without a known NRT is unresolvable; the node a pod's recorded CPUs are on
//               passes); other pods pass everywhere;
//   prioritize  the profile's weighted scores, min-max scaled onto 0..10 over the known
//               candidates (0 everywhere for pods without exclusive CPUs);
//   bind        only for a pod whose last filter, at most kFilterRecordTtl ago, passed the
//               node (anything else is refused with an error and changes nothing: a caller
//               cannot bind a pod to a node Huygens did not check); then the pod's recorded
//               allocation finished on the node (or undone when kube-scheduler chose another
//               node); otherwise Reserve on the node (exact cpusets, assumed) and the Binding
//               carrying the allocation, exactly as standalone mode; a failed Binding forgets
//               the assume, and the reply carries the error. Each filter record serves one
//               bind (kube-scheduler filters again before it retries).
// A stale cache pauses the extender as it pauses standalone scheduling: while an informer is not
// ready (ChangeFeed::Current, the condition that fails /readyz) filter and bind answer with an
// error that names the stale informers ("huygens-scheduler: scheduling paused: nodes informer
// heard nothing from the API server for 151 s (bound 150 s)") and change nothing. So do they
// while this leader's takeover fence is not complete (SchedulingLoop, "Takeover fence": the
// pending pods with exclusive CPUs written with the term's token and seen by the pod informer),
// so a deposed extender's late Binding is refused by the API server and one that landed earlier
// is in the cache before any CPU is reused.
// A malformed body gets HTTP 400 with {"error": ...} ({"Error": ...} for bind) and changes
// nothing; before the cache has applied every listed object each verb answers with an error.
//
// Thread-safety: the verbs run on the HTTP server's threads. Filter and prioritize hold the
// CacheSync's lock (CacheSync::Lock) for their whole call; bind holds it for the cache's parts
// only, never across an API call (reading the pod, the Binding), and answers a second bind of a
// pod whose bind is in flight with an error.
#ifndef HUYGENS_SCHEDULER_EXTENDER_HANDLERS_H_
#define HUYGENS_SCHEDULER_EXTENDER_HANDLERS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "base/clock.h"
#include "kube/client.h"
#include "serving/http_server.h"
#include "scheduler/binder.h"
#include "scheduler/cache_sync.h"
#include "scheduler/config.h"
#include "scheduler/extender_protocol.h"
#include "sched/evaluator.h"
#include "scheduler/scheduling_loop.h"
#include "scheduler/service_metrics.h"

namespace huygens::scheduler {

class ExtenderHandlers {
 public:
  // How long a filter's verdict lets /bind use the nodes it passed. kube-scheduler binds within
  // its binding cycle, seconds after filtering; the bound keeps the records of pods that were
  // never bound from piling up.
  static constexpr std::chrono::minutes kFilterRecordTtl{5};

  // What the verbs work on; every pointer must outlive the handlers. `profiles` is not empty.
  struct Parts {
    kube::Client* client;
    const SchedulerConfig* config;
    const std::vector<ProfileConfig>* profiles;
    CacheSync* state;
    ChangeFeed* feed;  // whether the cache is current (ChangeFeed::Current)
    SchedulerMap* schedulers;
    PodWriter* writer;
    const ServiceMetrics* metrics;
    Clock* clock;  // ages the filter records
    // This process's leadership term (SchedulerService); the verbs answer only once the loop
    // found that term's takeover fence complete (CacheSync::fenced_term).
    const std::atomic<int64_t>* term;
  };
  // Builds the first profile's evaluator over the cache. Errors: ProfileEvaluator::Create's.
  static absl::StatusOr<std::unique_ptr<ExtenderHandlers>> Create(Parts parts);

  // The verbs: the request's body in, the reply out (always JSON).
  serving::HttpReply Filter(const std::string& body) ABSL_LOCKS_EXCLUDED(p_.state->lock());
  serving::HttpReply Prioritize(const std::string& body) ABSL_LOCKS_EXCLUDED(p_.state->lock());
  serving::HttpReply Bind(const std::string& body) ABSL_LOCKS_EXCLUDED(p_.state->lock());

 private:
  explicit ExtenderHandlers(Parts parts) : p_(parts) {}
  serving::HttpReply Reply(const char* verb, const char* result, int status, std::string body);
  serving::HttpReply BadRequest(const char* verb, const absl::Status& s);
  absl::StatusOr<sched::PodPtr> PreparedPod(const nlohmann::json& object) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(p_.state->lock());
  void Candidates(const std::vector<std::string>& names, std::vector<const sched::NodeInfo*>& infos,
                  std::vector<const sched::NodeInfo*>& known) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(p_.state->lock());
  // What bind decided under the lock, for the Binding sent without it: an error, or the
  // reservation to bind through `scheduler`, or (neither) the pod's bare Binding.
  struct BindPlan {
    std::string error;
    sched::Scheduler* scheduler = nullptr;
    std::optional<sched::ReservedPod> reserved;
  };
  // `object`: the informer's pod, nullopt when it has none.
  std::string BindTo(const BindingArgs& args, std::optional<nlohmann::json> object) ABSL_LOCKS_EXCLUDED(p_.state->lock());
  BindPlan PlanBind(const BindingArgs& args, const nlohmann::json& object) ABSL_EXCLUSIVE_LOCKS_REQUIRED(p_.state->lock());
  // OK when filter and bind may use the cache: the informers are current (ChangeFeed::Current)
  // and the takeover fence of this term is complete; else Unavailable saying which.
  absl::Status Current() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(p_.state->lock());
  // Records that the last filter of pod `uid` passed `nodes`, and drops expired records.
  // REQUIRES: the CacheSync's lock held (as for every member below).
  void RecordFilter(const std::string& uid, std::vector<std::string> nodes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(p_.state->lock());
  // Takes the pod's filter record: whether it is fresh and passed `node`.
  bool TakeFilterRecord(const std::string& uid, const std::string& node) ABSL_EXCLUSIVE_LOCKS_REQUIRED(p_.state->lock());

  // The nodes the last filter of each pod (by uid) passed, and when.
  struct FilterRecord {
    std::vector<std::string> nodes;
    Clock::TimePoint at;
  };

  const Parts p_;
  std::unique_ptr<sched::ProfileEvaluator> evaluator_;
  std::map<std::string, FilterRecord> filtered_ ABSL_GUARDED_BY(p_.state->lock());
  std::set<std::string> binding_ ABSL_GUARDED_BY(p_.state->lock());  // uids whose bind is in flight
};

}  // namespace huygens::scheduler

#endif  // HUYGENS_SCHEDULER_EXTENDER_HANDLERS_H_
