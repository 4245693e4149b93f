// ProfileEvaluator: a profile's filter and score plugins run for one pod on exactly the nodes
// given, for the extender's filter and prioritize verbs (kube-scheduler has already chosen the
// candidates; Huygens judges them with its own plugins over its own ClusterCache).
//
// What it is: the framework's PreFilter -> Filter per node (the first failing plugin decides,
// as sched::Scheduler) and PreScore -> Score -> NormalizeScore -> weighted sum, without
// sched::Scheduler's node sampling (percentageOfNodesToScore), round-robin start, Reserve or
// Bind: every given node is judged and nothing in the cache changes. The plugins and the
// PreFilter, Filter, PreScore and weighted-sum loops are sched::PluginSet's (sched/plugin_set.h),
// built from the same profile the standalone scheduler uses and run as ScheduleOne runs them, so
// verdicts and scores are the ones ScheduleOne would compute.
//
// Thread-safety: not thread-safe; the caller serialises calls with every change of the cache.
#ifndef HUYGENS_SCHEDULER_PROFILE_EVALUATOR_H_
#define HUYGENS_SCHEDULER_PROFILE_EVALUATOR_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "sched/cache.h"
#include "sched/framework.h"
#include "sched/plugin_set.h"
#include "sched/profile.h"

namespace huygens::scheduler {

class ProfileEvaluator {
 public:
  // `cache` must outlive the evaluator. Errors: sched::NewPlugin's (unknown plugin), and
  // InvalidArgument for a plugin listed at a point it does not implement.
  static absl::StatusOr<std::unique_ptr<ProfileEvaluator>> Create(const sched::Profile& profile,
                                                                 sched::ClusterCache* cache);
  ~ProfileEvaluator();

  // The status of `pod` on each node (same order; ok = feasible). A PreFilter rejection gives
  // every node that status. Errors: Internal naming the plugin when a plugin reports an error.
  absl::StatusOr<std::vector<sched::Status>> Filter(const sched::PodPtr& pod,
                                                    std::span<const sched::NodeInfo* const> nodes);

  // The weighted total score of `pod` on each node (same order), every node taken as
  // feasible: sum over score plugins of weight * normalised score (0..kMaxNodeScore each).
  // Errors: Internal naming the plugin when a PreScore fails.
  absl::StatusOr<std::vector<int64_t>> Score(const sched::PodPtr& pod,
                                             std::span<const sched::NodeInfo* const> nodes);

  // The largest possible total (sum of weights * kMaxNodeScore), > 0 unless no score plugins.
  int64_t MaxTotal() const;

 private:
  ProfileEvaluator() = default;
  void Begin(const sched::PodPtr& pod);

  sched::PluginSet plugins_;
  sched::CycleState state_;
};

}  // namespace huygens::scheduler

#endif  // HUYGENS_SCHEDULER_PROFILE_EVALUATOR_H_
