#include "sched/evaluator.h"

#include <numeric>

#include "absl/status/status.h"

namespace huygens::sched {

ProfileEvaluator::~ProfileEvaluator() = default;

absl::StatusOr<std::unique_ptr<ProfileEvaluator>> ProfileEvaluator::Create(const Profile& profile,
                                                                           ClusterCache* cache) {
  absl::StatusOr<PluginSet> plugins = PluginSet::Create(profile, cache);
  if (!plugins.ok()) return plugins.status();
  std::unique_ptr<ProfileEvaluator> e(new ProfileEvaluator());
  e->plugins_ = *std::move(plugins);
  return e;
}

void ProfileEvaluator::Begin(const PodPtr& pod) {
  state_.Reset(pod);
  ComputePodFacts(*pod, state_.mutable_facts());
}

absl::StatusOr<std::vector<Status>> ProfileEvaluator::Filter(
    const PodPtr& pod, std::span<const NodeInfo* const> nodes,
    std::vector<std::string>* failed_plugins) {
  Begin(pod);
  if (failed_plugins != nullptr) failed_plugins->assign(nodes.size(), std::string());
  const Plugin* failed = nullptr;
  Status pre = plugins_.RunPreFilters(state_, &failed);
  if (!pre.ok()) {
    if (pre.code() == Code::kError) {
      return absl::InternalError(PluginSet::ErrorMessage(*failed, pre));
    }
    if (failed_plugins != nullptr) failed_plugins->assign(nodes.size(), std::string(failed->Name()));
    return std::vector<Status>(nodes.size(), pre);
  }
  std::vector<Status> out(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    Status s = plugins_.RunFilters(state_, *nodes[i], &failed);
    if (s.code() == Code::kError) {
      return absl::InternalError(PluginSet::ErrorMessage(*failed, *nodes[i], s));
    }
    if (!s.ok() && failed_plugins != nullptr) (*failed_plugins)[i] = std::string(failed->Name());
    out[i] = std::move(s);
  }
  return out;
}

absl::StatusOr<ScoreBreakdown> ProfileEvaluator::ScoreByPlugin(
    const PodPtr& pod, std::span<const NodeInfo* const> nodes) {
  Begin(pod);
  // PreFilter fills the per-pod scratch some scores read (as in a scheduling attempt); a
  // rejection here changes nothing for scoring.
  for (PreFilterPlugin* p : plugins_.pre_filters) (void)p->PreFilter(state_);
  const Plugin* failed = nullptr;
  if (Status s = plugins_.RunPreScores(state_, nodes, &failed); !s.ok()) {
    return absl::InternalError(PluginSet::ErrorMessage(*failed, s));
  }
  const size_t n = nodes.size();
  ScoreBreakdown out;
  out.normalised.resize(plugins_.scores.size() * n);
  for (size_t p = 0; p < plugins_.scores.size(); ++p) {
    const auto& [plugin, weight] = plugins_.scores[p];
    out.plugins.emplace_back(plugin->Name());
    out.weights.push_back(weight);
    for (size_t i = 0; i < n; ++i) out.normalised[p * n + i] = plugin->Score(state_, *nodes[i]);
  }
  out.totals.assign(n, 0);
  std::vector<uint32_t> every(plugins_.scores.size());
  std::iota(every.begin(), every.end(), uint32_t{0});
  plugins_.AddWeightedScores(state_, every, out.normalised, out.totals);
  return out;
}

absl::StatusOr<std::vector<int64_t>> ProfileEvaluator::Score(
    const PodPtr& pod, std::span<const NodeInfo* const> nodes) {
  absl::StatusOr<ScoreBreakdown> b = ScoreByPlugin(pod, nodes);
  if (!b.ok()) return b.status();
  return std::move(b->totals);
}

int64_t ProfileEvaluator::MaxTotal() const {
  int64_t total = 0;
  for (const auto& [plugin, weight] : plugins_.scores) total += weight * kMaxNodeScore;
  return total;
}

}  // namespace huygens::sched
