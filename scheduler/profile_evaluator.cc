#include "scheduler/profile_evaluator.h"

#include "absl/status/status.h"

namespace huygens::scheduler {

ProfileEvaluator::~ProfileEvaluator() = default;

absl::StatusOr<std::unique_ptr<ProfileEvaluator>> ProfileEvaluator::Create(const sched::Profile& profile,
                                                                           sched::ClusterCache* cache) {
  absl::StatusOr<sched::PluginSet> plugins = sched::PluginSet::Create(profile, cache);
  if (!plugins.ok()) return plugins.status();
  std::unique_ptr<ProfileEvaluator> e(new ProfileEvaluator());
  e->plugins_ = *std::move(plugins);
  return e;
}

void ProfileEvaluator::Begin(const sched::PodPtr& pod) {
  state_.Reset(pod);
  sched::ComputePodFacts(*pod, state_.mutable_facts());
}

absl::StatusOr<std::vector<sched::Status>> ProfileEvaluator::Filter(
    const sched::PodPtr& pod, std::span<const sched::NodeInfo* const> nodes) {
  Begin(pod);
  const sched::Plugin* failed = nullptr;
  sched::Status pre = plugins_.RunPreFilters(state_, &failed);
  if (!pre.ok()) {
    if (pre.code() == sched::Code::kError) {
      return absl::InternalError(sched::PluginSet::ErrorMessage(*failed, pre));
    }
    return std::vector<sched::Status>(nodes.size(), pre);
  }
  std::vector<sched::Status> out(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    sched::Status s = plugins_.RunFilters(state_, *nodes[i], &failed);
    if (s.code() == sched::Code::kError) {
      return absl::InternalError(sched::PluginSet::ErrorMessage(*failed, *nodes[i], s));
    }
    out[i] = std::move(s);
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> ProfileEvaluator::Score(const sched::PodPtr& pod,
                                                             std::span<const sched::NodeInfo* const> nodes) {
  Begin(pod);
  // PreFilter fills the per-pod scratch some scores read (as in a scheduling attempt); a
  // rejection here changes nothing for scoring.
  for (sched::PreFilterPlugin* p : plugins_.pre_filters) (void)p->PreFilter(state_);
  const sched::Plugin* failed = nullptr;
  if (sched::Status s = plugins_.RunPreScores(state_, nodes, &failed); !s.ok()) {
    return absl::InternalError(sched::PluginSet::ErrorMessage(*failed, s));
  }
  const size_t n = nodes.size();
  std::vector<int64_t> raw(plugins_.scores.size() * n);
  for (size_t p = 0; p < plugins_.scores.size(); ++p) {
    for (size_t i = 0; i < n; ++i) raw[p * n + i] = plugins_.scores[p].first->Score(state_, *nodes[i]);
  }
  std::vector<int64_t> totals(n, 0);
  plugins_.AddWeightedScores(state_, raw, totals);
  return totals;
}

int64_t ProfileEvaluator::MaxTotal() const {
  int64_t total = 0;
  for (const auto& [plugin, weight] : plugins_.scores) total += weight * sched::kMaxNodeScore;
  return total;
}

}  // namespace huygens::scheduler
