#include "scheduler/profile_evaluator.h"

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "fmt/format.h"
#include "sched/plugins.h"

namespace huygens::scheduler {

ProfileEvaluator::~ProfileEvaluator() = default;

absl::StatusOr<std::unique_ptr<ProfileEvaluator>> ProfileEvaluator::Create(const sched::Profile& profile,
                                                                           sched::ClusterCache* cache) {
  std::unique_ptr<ProfileEvaluator> e(new ProfileEvaluator());
  absl::flat_hash_map<std::string, sched::Plugin*> by_name;
  auto get = [&](const std::string& name) -> absl::StatusOr<sched::Plugin*> {
    if (auto it = by_name.find(name); it != by_name.end()) return it->second;
    auto made = sched::NewPlugin(name, profile, cache);
    if (!made.ok()) return made.status();
    sched::Plugin* raw = made->get();
    raw->set_slot(static_cast<int>(e->owned_.size()));
    e->owned_.push_back(*std::move(made));
    by_name.emplace(name, raw);
    if (auto* pf = dynamic_cast<sched::PreFilterPlugin*>(raw)) e->pre_filters_.push_back(pf);
    return raw;
  };
  auto wrong = [&](const std::string& name, std::string_view point) {
    return absl::InvalidArgumentError(
        fmt::format("profile {:?}: plugin {:?} has no {} point", profile.scheduler_name, name, point));
  };
  for (const std::string& name : profile.filters) {
    auto plugin = get(name);
    if (!plugin.ok()) return plugin.status();
    auto* f = dynamic_cast<sched::FilterPlugin*>(*plugin);
    if (f == nullptr) return wrong(name, "Filter");
    e->filters_.push_back(f);
  }
  for (const sched::WeightedPlugin& w : profile.scores) {
    auto plugin = get(w.name);
    if (!plugin.ok()) return plugin.status();
    auto* s = dynamic_cast<sched::ScorePlugin*>(*plugin);
    if (s == nullptr) return wrong(w.name, "Score");
    if (auto* ps = dynamic_cast<sched::PreScorePlugin*>(*plugin)) e->pre_scores_.push_back(ps);
    e->scores_.emplace_back(s, w.weight);
  }
  return e;
}

void ProfileEvaluator::Begin(const sched::PodPtr& pod) {
  state_.Reset(pod);
  sched::ComputePodFacts(*pod, state_.mutable_facts());
}

absl::StatusOr<std::vector<sched::Status>> ProfileEvaluator::Filter(
    const sched::PodPtr& pod, std::span<const sched::NodeInfo* const> nodes) {
  Begin(pod);
  for (sched::PreFilterPlugin* p : pre_filters_) {
    sched::Status s = p->PreFilter(state_);
    if (s.ok()) continue;
    if (s.code() == sched::Code::kError) return absl::InternalError(fmt::format("{}: {}", p->Name(), s.Message()));
    return std::vector<sched::Status>(nodes.size(), s);
  }
  std::vector<sched::Status> out(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (sched::FilterPlugin* f : filters_) {
      sched::Status s = f->Filter(state_, *nodes[i]);
      if (s.ok()) continue;
      if (s.code() == sched::Code::kError) {
        return absl::InternalError(fmt::format("{} on node {:?}: {}", f->Name(), nodes[i]->node.name, s.Message()));
      }
      out[i] = std::move(s);
      break;
    }
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> ProfileEvaluator::Score(const sched::PodPtr& pod,
                                                             std::span<const sched::NodeInfo* const> nodes) {
  Begin(pod);
  // PreFilter fills the per-pod scratch some scores read (as in a scheduling attempt); a
  // rejection here changes nothing for scoring.
  for (sched::PreFilterPlugin* p : pre_filters_) (void)p->PreFilter(state_);
  for (sched::PreScorePlugin* p : pre_scores_) {
    sched::Status s = p->PreScore(state_, nodes);
    if (!s.ok()) return absl::InternalError(fmt::format("{}: {}", p->Name(), s.Message()));
  }
  std::vector<int64_t> totals(nodes.size(), 0);
  std::vector<int64_t> raw(nodes.size());
  for (const auto& [plugin, weight] : scores_) {
    for (size_t i = 0; i < nodes.size(); ++i) raw[i] = plugin->Score(state_, *nodes[i]);
    plugin->NormalizeScore(state_, raw);
    for (size_t i = 0; i < nodes.size(); ++i) totals[i] += weight * raw[i];
  }
  return totals;
}

int64_t ProfileEvaluator::MaxTotal() const {
  int64_t total = 0;
  for (const auto& [plugin, weight] : scores_) total += weight * sched::kMaxNodeScore;
  return total;
}

}  // namespace huygens::scheduler
