// ProfileEvaluator: a profile's filter and score plugins run for one pod on exactly the nodes
// given, without choosing, reserving or binding. Two users: the extender's filter and
// prioritize verbs (kube-scheduler has already chosen the candidates; Huygens judges them with
// its own plugins over its own ClusterCache), and `huygens simulate --explain` (why a pod went
// where it went: each node's verdict and each plugin's score).
//
// What it is: the framework's PreFilter -> Filter per node (the first failing plugin decides,
// as sched::Scheduler) and PreScore -> Score -> NormalizeScore -> weighted sum, without
// sched::Scheduler's node sampling (percentageOfNodesToScore), round-robin start, Reserve or
// Bind: every given node is judged and nothing in the cache changes. The plugins and the
// PreFilter, Filter, PreScore and weighted-sum loops are PluginSet's (sched/plugin_set.h),
// built from the same profile the scheduler uses and run as Scheduler::ScheduleOne runs them, so
// verdicts and scores are the ones ScheduleOne would compute.
//
// Thread-safety: not thread-safe; the caller serialises calls with every change of the cache.
#ifndef HUYGENS_SCHED_EVALUATOR_H_
#define HUYGENS_SCHED_EVALUATOR_H_

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

namespace huygens::sched {

// Each score plugin's share of the totals, for n nodes.
struct ScoreBreakdown {
  // Score plugins in the profile's order, with their weights.
  std::vector<std::string> plugins;
  std::vector<int64_t> weights;
  // normalised[p * n + k]: plugin p's normalised score (0..kMaxNodeScore) of node k.
  std::vector<int64_t> normalised;
  // totals[k]: the sum over plugins of weight x normalised score of node k.
  std::vector<int64_t> totals;
};

class ProfileEvaluator {
 public:
  // `cache` must outlive the evaluator. Errors: NewPlugin's (unknown plugin), and
  // InvalidArgument for a plugin listed at a point it does not implement.
  static absl::StatusOr<std::unique_ptr<ProfileEvaluator>> Create(const Profile& profile,
                                                                 ClusterCache* cache);
  ~ProfileEvaluator();

  // The status of `pod` on each node (same order; ok = feasible). A PreFilter rejection gives
  // every node that status. `failed_plugins`, when given, receives per node the name of the
  // plugin that decided (empty for a feasible node). Errors: Internal naming the plugin when a
  // plugin reports an error.
  absl::StatusOr<std::vector<Status>> Filter(const PodPtr& pod,
                                             std::span<const NodeInfo* const> nodes,
                                             std::vector<std::string>* failed_plugins = nullptr);

  // Each score plugin's normalised score and the weighted total of `pod` on each node (same
  // order), every node taken as feasible. Errors: Internal naming the plugin when a PreScore
  // fails.
  absl::StatusOr<ScoreBreakdown> ScoreByPlugin(const PodPtr& pod,
                                               std::span<const NodeInfo* const> nodes);

  // ScoreByPlugin's totals.
  absl::StatusOr<std::vector<int64_t>> Score(const PodPtr& pod,
                                             std::span<const NodeInfo* const> nodes);

  // The largest possible total (sum of weights * kMaxNodeScore), > 0 unless no score plugins.
  int64_t MaxTotal() const;

 private:
  ProfileEvaluator() = default;
  void Begin(const PodPtr& pod);

  PluginSet plugins_;
  CycleState state_;
};

}  // namespace huygens::sched

#endif  // HUYGENS_SCHED_EVALUATOR_H_
