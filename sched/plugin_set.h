// PluginSet: the plugins of one profile, by extension point, and the loops over them that every
// judgement of a pod shares: PreFilter, then Filter on a node (the first plugin that does not
// succeed decides, as in kube-scheduler's framework); PreScore, and the normalised weighted sum
// of the scores. sched::Scheduler's scheduling loop and
// the evaluator (sched/evaluator.h: the extender, `huygens simulate --explain`) both run their plugins through it, so
// a pod is judged the same way on both paths.
//
// Invariants: every plugin the profile names is built once (a plugin serving several points is
// one object, listed at each); a plugin's slot is its index in `owned`; the point lists keep the
// profile's order (PreFilter and PostFilter in the order their plugins were first built).
// Thread-safety: the set is immutable after Create; the Run* calls mutate only the CycleState
// (and whatever the plugins' own rules say), so one set serves one thread at a time.
#ifndef HUYGENS_SCHED_PLUGIN_SET_H_
#define HUYGENS_SCHED_PLUGIN_SET_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "sched/cache.h"
#include "sched/framework.h"
#include "sched/profile.h"

namespace huygens::sched {

struct PluginSet {
  // Builds the plugins of `profile` (filters, scores, reserves) with NewPlugin over `cache`,
  // which must outlive them. Errors: NewPlugin's (unknown plugin); InvalidArgument `profile
  // "<name>": plugin "<plugin>" has no <Point> point` for a plugin listed at a point it does not
  // implement.
  static absl::StatusOr<PluginSet> Create(const Profile& profile, ClusterCache* cache);

  // Runs the PreFilter plugins in order. Returns the first status that is not success, with its
  // plugin in `*failed`; success (and `*failed` untouched) when all pass.
  Status RunPreFilters(CycleState& state, const Plugin** failed) const {
    for (PreFilterPlugin* p : pre_filters) {
      Status s = p->PreFilter(state);
      if (s.ok()) continue;
      *failed = p;
      return s;
    }
    return Status();
  }

  // Runs the Filter plugins in order on `node`. Returns the first status that is not success,
  // with its plugin in `*failed`; success when every filter passes.
  Status RunFilters(CycleState& state, const NodeInfo& node, const Plugin** failed) const {
    for (FilterPlugin* f : filters) {
      Status s = f->Filter(state, node);
      if (s.ok()) continue;
      *failed = f;
      return s;
    }
    return Status();
  }

  // Runs the PreScore plugins in order over `nodes` (the feasible nodes). Returns the first
  // status that is not success, with its plugin in `*failed`; success when all pass.
  Status RunPreScores(CycleState& state, std::span<const NodeInfo* const> nodes, const Plugin** failed) const {
    for (PreScorePlugin* p : pre_scores) {
      Status s = p->PreScore(state, nodes);
      if (s.ok()) continue;
      *failed = p;
      return s;
    }
    return Status();
  }

  // The weighted sum of the score plugins `active` (indices into `scores`, ascending) over n
  // nodes: `raw` holds plugin active[j]'s raw score of node k at raw[j * n + k] (n =
  // totals.size(); REQUIRES: raw.size() == active.size() * n). Each plugin's row is normalised
  // in place (NormalizeScore), then added times its weight into `totals`, which the caller
  // zeroes.
  void AddWeightedScores(CycleState& state, std::span<const uint32_t> active, std::span<int64_t> raw,
                         std::span<int64_t> totals) const {
    const size_t n = totals.size();
    for (size_t j = 0; j < active.size(); ++j) {
      const auto& [plugin, weight] = scores[active[j]];
      std::span<int64_t> row = raw.subspan(j * n, n);
      plugin->NormalizeScore(state, row);
      for (size_t k = 0; k < n; ++k) totals[k] += weight * row[k];
    }
  }

  // The messages of a plugin's error status (Code::kError): "<plugin>: <message>", and with a
  // node "<plugin> on node "<node>": <message>".
  static std::string ErrorMessage(const Plugin& plugin, const Status& status);
  static std::string ErrorMessage(const Plugin& plugin, const NodeInfo& node,
                                  const Status& status);

  std::vector<std::unique_ptr<Plugin>> owned;
  std::vector<PreFilterPlugin*> pre_filters;
  std::vector<FilterPlugin*> filters;
  std::vector<PostFilterPlugin*> post_filters;
  std::vector<PreScorePlugin*> pre_scores;
  std::vector<std::pair<ScorePlugin*, int64_t>> scores;  // with the profile's weights
  std::vector<ReservePlugin*> reserves;
};

}  // namespace huygens::sched

#endif  // HUYGENS_SCHED_PLUGIN_SET_H_
