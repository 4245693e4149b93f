#include "sched/scheduler.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "fmt/format.h"
#include "sched/plugin_set.h"
#include "sched/plugins.h"

namespace huygens::sched {

int NumFeasibleNodesToFind(int num_all_nodes, int percentage_of_nodes_to_score) {
  constexpr int kMinFeasibleNodesToFind = 100;
  constexpr int kMinFeasibleNodesPercentageToFind = 5;
  constexpr int kBasePercentageOfNodesToScore = 50;
  if (num_all_nodes < kMinFeasibleNodesToFind || percentage_of_nodes_to_score >= 100) {
    return num_all_nodes;
  }
  int percentage = percentage_of_nodes_to_score;
  if (percentage <= 0) {
    percentage = std::max(kBasePercentageOfNodesToScore - num_all_nodes / 125,
                          kMinFeasibleNodesPercentageToFind);
  }
  const int num_nodes = static_cast<int>(int64_t{num_all_nodes} * percentage / 100);
  return std::max(num_nodes, kMinFeasibleNodesToFind);
}

std::string FitErrorMessage(const Diagnosis& diagnosis) {
  std::string out = fmt::format("0/{} nodes are available:", diagnosis.num_all_nodes);
  if (!diagnosis.pre_filter_message.empty()) {
    return out + " " + diagnosis.pre_filter_message + ".";
  }
  std::vector<std::string> parts;
  parts.reserve(diagnosis.reasons.size());
  for (const auto& [reason, count] : diagnosis.reasons) {
    parts.push_back(fmt::format("{} {}", count, reason));
  }
  std::sort(parts.begin(), parts.end());  // kube-scheduler: sort.Strings
  if (!parts.empty()) out += " " + fmt::format("{}", fmt::join(parts, ", ")) + ".";
  return out;
}

struct Scheduler::Impl {
  PluginSet plugins;  // the profile's plugins, shared loops with the extender (plugin_set.h)
  std::unique_ptr<BindPlugin> binder;

  CycleState state;
  // Nodes() index of each feasible node, in visit order: the first num_feasible entries
  // (sized for every node, so the scan appends without a branch).
  std::vector<size_t> feasible_index;
  std::vector<const NodeInfo*> feasible;  // the same nodes, for PreScore and Score
  std::vector<int64_t> totals;
  std::vector<int64_t> plugin_scores;
  std::vector<uint32_t> active_scores;  // this attempt's score plugins that do not skip
  absl::flat_hash_map<std::string, int> reason_counts;
  size_t next_start = 0;

  // The equivalence cache: Filter and raw Score results per pod equivalence key, by node
  // index, valid while the node's generation is unchanged (a generation names one node and
  // one version of it: every change takes a fresh cache generation). With the cache off, one
  // scratch entry whose results are always recomputed.
  struct ClassResults {
    // One node's Filter mark and verdict: 8 bytes, as the scan reads one per node visited.
    struct Entry {
      static constexpr uint64_t kGenerationMask = (uint64_t{1} << 63) - 1;
      uint64_t filter_generation : 63 = 0;  // 0 = none; generations stay below 2^63
      uint64_t feasible : 1 = 0;
    };
    std::vector<Entry> entries;              // by node index
    std::vector<uint64_t> score_generation;  // by node index; 0 = none
    std::vector<Status> rejection;           // by node index, when !feasible
    std::vector<int64_t> scores;             // node index x score plugin
    uint64_t last_use = 0;

    void Resize(size_t nodes, size_t num_scores) {
      if (entries.size() >= nodes) return;
      entries.resize(nodes);
      score_generation.resize(nodes, 0);
      rejection.resize(nodes);
      scores.resize(nodes * num_scores, 0);
    }
  };
  static constexpr size_t kMaxClasses = 64;
  absl::flat_hash_map<std::string, std::unique_ptr<ClassResults>> classes;
  ClassResults scratch;
  std::string key;
  uint64_t uses = 0;

  // The results entry for the current pod (state must be Reset and its facts computed), and
  // whether its cached results may be reused.
  std::pair<ClassResults*, bool> ResultsFor(const Profile& profile, size_t nodes);
  void CountReasons(const Status& s, int nodes);
  Diagnosis MakeDiagnosis(int num_nodes, std::string pre_filter_message) const;

  // The steps of a scheduling cycle (see the definitions).
  struct FilterPass {
    size_t start = 0;     // the first node visited
    int visited = 0;
    size_t feasible = 0;  // the first `feasible` entries of feasible_index
    std::optional<std::string> error;  // a filter's error: the attempt fails
  };
  ScheduleResult Unschedulable(int num_nodes, std::string pre_filter_message);
  FilterPass Filter(const std::vector<NodeInfo*>& nodes, const std::vector<uint64_t>& generations,
                    ClassResults& results, bool reuse, int to_find);
  absl::StatusOr<size_t> Score(const std::vector<NodeInfo*>& nodes, const std::vector<uint64_t>& generations,
                               ClassResults& results, bool reuse, size_t num_feasible,
                               std::vector<NodeVerdict>* verdicts);
  ScheduleResult Reserve(ClusterCache& cache, const NodeInfo& chosen);
  // Runs Unreserve of the first `count` reserve plugins, in reverse order.
  void Unreserve(const ReservedPod& reserved, size_t count);
};

std::pair<Scheduler::Impl::ClassResults*, bool> Scheduler::Impl::ResultsFor(
    const Profile& profile, size_t nodes) {
  ClassResults* results = &scratch;
  bool reuse = false;
  if (profile.equivalence_cache && !state.skip_equivalence_cache) {
    key.clear();
    AppendEquivalenceKey(state.pod(), key);
    for (const auto& plugin : plugins.owned) plugin->AppendEquivalenceKey(state, key);
    auto it = classes.find(key);
    if (it == classes.end()) {
      if (classes.size() >= kMaxClasses) {  // evict the least recently used class
        auto oldest = classes.begin();
        for (auto c = classes.begin(); c != classes.end(); ++c) {
          if (c->second->last_use < oldest->second->last_use) oldest = c;
        }
        classes.erase(oldest);
      }
      it = classes.emplace(key, std::make_unique<ClassResults>()).first;
    } else {
      reuse = true;
    }
    results = it->second.get();
    results->last_use = ++uses;
  }
  results->Resize(nodes, plugins.scores.size());
  return {results, reuse};
}

void Scheduler::Impl::CountReasons(const Status& s, int nodes) {
  for (const std::string& r : s.reasons()) {
    auto it = reason_counts.find(r);
    if (it == reason_counts.end()) {
      reason_counts.emplace(r, nodes);
    } else {
      it->second += nodes;
    }
  }
}

Diagnosis Scheduler::Impl::MakeDiagnosis(int num_nodes, std::string pre_filter_message) const {
  Diagnosis d;
  d.num_all_nodes = num_nodes;
  d.pre_filter_message = std::move(pre_filter_message);
  d.reasons.assign(reason_counts.begin(), reason_counts.end());
  std::sort(d.reasons.begin(), d.reasons.end());
  return d;
}

Scheduler::Scheduler(ClusterCache* cache, Profile profile)
    : cache_(cache), profile_(std::move(profile)), impl_(std::make_unique<Impl>()) {}

Scheduler::~Scheduler() = default;

absl::StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(ClusterCache* cache,
                                                             Profile profile,
                                                             std::unique_ptr<BindPlugin> binder) {
  std::unique_ptr<Scheduler> s(new Scheduler(cache, std::move(profile)));
  Impl& impl = *s->impl_;
  absl::StatusOr<PluginSet> plugins = PluginSet::Create(s->profile_, cache);
  if (!plugins.ok()) return plugins.status();
  impl.plugins = *std::move(plugins);
  impl.binder = binder != nullptr ? std::move(binder) : NewCacheBind(cache);
  impl.binder->set_slot(static_cast<int>(impl.plugins.owned.size()));
  return s;
}

namespace {

ScheduleResult Failed(ScheduleResult::Outcome outcome, std::string message) {
  ScheduleResult r;
  r.outcome = outcome;
  r.message = std::move(message);
  return r;
}

}  // namespace

ScheduleResult Scheduler::Impl::Unschedulable(int num_nodes, std::string pre_filter_message) {
  Diagnosis d = MakeDiagnosis(num_nodes, std::move(pre_filter_message));
  ScheduleResult result = Failed(ScheduleResult::Outcome::kUnschedulable, FitErrorMessage(d));
  for (PostFilterPlugin* p : plugins.post_filters) {
    std::optional<std::string> nominated = p->PostFilter(state, d);
    if (nominated.has_value()) {
      result.nominated_node = std::move(nominated);
      break;
    }
  }
  result.reasons = std::move(d.reasons);
  return result;
}

// Visits nodes round-robin from next_start until `to_find` are feasible or all were visited,
// reusing the equivalence cache's verdicts where the node's generation is unchanged. The scan
// reads two dense arrays, the nodes' generations and the class's entries (8 bytes each per
// node): a node's NodeInfo is touched only when its filters must run again.
Scheduler::Impl::FilterPass Scheduler::Impl::Filter(const std::vector<NodeInfo*>& nodes,
                                                    const std::vector<uint64_t>& generations,
                                                    ClassResults& results, bool reuse, int to_find) {
  FilterPass pass;
  const size_t n = nodes.size();
  if (feasible_index.size() < n) feasible_index.resize(n);
  size_t pos = n == 0 ? 0 : next_start % n;
  pass.start = pos;
  for (; pass.visited < static_cast<int>(n) && static_cast<int>(pass.feasible) < to_find; ++pass.visited) {
    const uint64_t generation = generations[pos];
    ClassResults::Entry& entry = results.entries[pos];
    if (!reuse || entry.filter_generation != generation) {
      const NodeInfo* node = nodes[pos];
      entry.feasible = true;
      const Plugin* failed = nullptr;
      Status s = plugins.RunFilters(state, *node, &failed);
      if (!s.ok()) {
        if (s.code() == Code::kError) {
          entry.filter_generation = 0;
          pass.error = PluginSet::ErrorMessage(*failed, *node, s);
          return pass;
        }
        entry.feasible = false;
        results.rejection[pos] = std::move(s);
      }
      if (entry.filter_generation != generation) results.score_generation[pos] = 0;
      entry.filter_generation = generation & ClassResults::Entry::kGenerationMask;
    }
    feasible_index[pass.feasible] = pos;
    pass.feasible += entry.feasible;
    if (++pos == n) pos = 0;
  }
  if (n > 0) next_start = pos;
  return pass;
}

// Scores the feasible nodes (raw scores from the equivalence cache where the node is
// unchanged; normalising runs on every attempt) and returns the index into feasible_index of
// the highest total, the first visited among equals. Skipped with one feasible node, as
// kube-scheduler does. Fills the feasible verdicts' scores when `verdicts` is given.
absl::StatusOr<size_t> Scheduler::Impl::Score(const std::vector<NodeInfo*>& nodes,
                                              const std::vector<uint64_t>& generations,
                                              ClassResults& results, bool reuse, size_t num_feasible,
                                              std::vector<NodeVerdict>* verdicts) {
  const size_t num_scores = plugins.scores.size();
  if (num_feasible <= 1 || num_scores == 0) return size_t{0};
  feasible.resize(num_feasible);
  for (size_t k = 0; k < num_feasible; ++k) feasible[k] = nodes[feasible_index[k]];
  const Plugin* failed = nullptr;
  if (Status s = plugins.RunPreScores(state, feasible, &failed); !s.ok()) {
    return absl::InternalError(PluginSet::ErrorMessage(*failed, s));
  }
  // Plugins that skip this attempt (ScorePlugin::SkipScore) add nothing: left out of the copy
  // and the sum. Their raw scores are still refreshed with the rest, so a kept row stays whole.
  active_scores.clear();
  for (size_t p = 0; p < num_scores; ++p) {
    if (!plugins.scores[p].first->SkipScore(state)) active_scores.push_back(static_cast<uint32_t>(p));
  }
  // One pass over the feasible nodes: refresh stale raw scores and copy the active plugins'
  // out plugin by plugin (plugin_scores[j * num_feasible + k]), so each node's row is read once.
  const size_t num_active = active_scores.size();
  plugin_scores.resize(num_active * num_feasible);
  const uint32_t* active = active_scores.data();
  int64_t* out = plugin_scores.data();
  for (size_t k = 0; k < num_feasible; ++k) {
    const size_t i = feasible_index[k];
    int64_t* row = &results.scores[i * num_scores];
    if (!reuse || results.score_generation[i] != generations[i]) {
      for (size_t p = 0; p < num_scores; ++p) row[p] = plugins.scores[p].first->Score(state, *feasible[k]);
      results.score_generation[i] = generations[i];
    }
    for (size_t j = 0; j < num_active; ++j) out[j * num_feasible + k] = row[active[j]];
  }
  totals.assign(num_feasible, 0);
  plugins.AddWeightedScores(state, active_scores, plugin_scores, totals);
  if (verdicts != nullptr) {  // feasible nodes are in visit order, as the verdicts
    size_t k = 0;
    for (NodeVerdict& v : *verdicts) {
      if (v.refusal.empty()) v.score = totals[k++];
    }
  }
  return static_cast<size_t>(std::max_element(totals.begin(), totals.end()) - totals.begin());
}

// Reserve on `chosen`, then the assume; on failure every Reserve that ran is undone.
ScheduleResult Scheduler::Impl::Reserve(ClusterCache& cache, const NodeInfo& chosen) {
  ReservedPod reserved{.pod = state.pod_ptr(), .node = chosen.node.name, .allocation = std::nullopt};
  size_t done = 0;
  for (; done < plugins.reserves.size(); ++done) {
    Status s = plugins.reserves[done]->Reserve(state, chosen);
    if (s.ok()) continue;
    reserved.allocation = std::move(state.allocation);
    Unreserve(reserved, done + 1);
    if (!s.IsRejection()) {
      return Failed(ScheduleResult::Outcome::kError, PluginSet::ErrorMessage(*plugins.reserves[done], chosen, s));
    }
    // kube-scheduler's schedulingCycle: a Reserve rejection is a FitError over the one node
    // tried (no PostFilter), so the pod waits for a cluster change instead of backing off and
    // retrying the same refusal.
    reason_counts.clear();
    CountReasons(s, 1);
    Diagnosis d = MakeDiagnosis(1, "");
    ScheduleResult result = Failed(ScheduleResult::Outcome::kUnschedulable, FitErrorMessage(d));
    result.reasons = std::move(d.reasons);
    return result;
  }
  reserved.allocation = std::move(state.allocation);
  if (absl::Status assumed = cache.AssumePod(reserved.pod, reserved.node, reserved.allocation,
                                             /*allocation_applied=*/true);
      !assumed.ok()) {
    Unreserve(reserved, done);
    return Failed(ScheduleResult::Outcome::kError, std::string(assumed.message()));
  }
  ScheduleResult result;
  result.outcome = ScheduleResult::Outcome::kScheduled;
  result.node = reserved.node;
  result.allocation = reserved.allocation;
  result.reserved = std::move(reserved);
  return result;
}

void Scheduler::Impl::Unreserve(const ReservedPod& reserved, size_t count) {
  for (size_t i = count; i-- > 0;) plugins.reserves[i]->Unreserve(reserved);
}

ScheduleResult Scheduler::SchedulingCycle(PodPtr pod, std::vector<NodeVerdict>* verdicts) {
  Impl& impl = *impl_;
  CycleState& state = impl.state;
  state.Reset(std::move(pod));
  ComputePodFacts(state.pod(), state.mutable_facts());
  impl.reason_counts.clear();
  const std::vector<NodeInfo*>& nodes = cache_->Nodes();
  const int num_nodes = static_cast<int>(nodes.size());

  const Plugin* failed = nullptr;
  if (Status s = impl.plugins.RunPreFilters(state, &failed); !s.ok()) {
    if (s.code() == Code::kError) {
      return Failed(ScheduleResult::Outcome::kError, PluginSet::ErrorMessage(*failed, s));
    }
    impl.CountReasons(s, num_nodes);
    return impl.Unschedulable(num_nodes, s.Message());
  }

  auto [results, reuse] = impl.ResultsFor(profile_, nodes.size());
  const std::vector<uint64_t>& generations = cache_->NodeGenerations();
  const Impl::FilterPass pass =
      impl.Filter(nodes, generations, *results, reuse,
                  NumFeasibleNodesToFind(num_nodes, profile_.percentage_of_nodes_to_score));
  if (pass.error.has_value()) return Failed(ScheduleResult::Outcome::kError, *pass.error);
  if (verdicts != nullptr) {
    verdicts->clear();
    for (int i = 0; i < pass.visited; ++i) {
      const size_t at = (pass.start + static_cast<size_t>(i)) % nodes.size();
      verdicts->push_back({.node = nodes[at]->node.name,
                           .refusal = results->entries[at].feasible ? std::string() : results->rejection[at].Message(),
                           .score = std::nullopt});
    }
  }
  if (pass.feasible == 0) {  // then every node was visited, and rejected
    for (size_t i = 0; i < nodes.size(); ++i) impl.CountReasons(results->rejection[i], 1);
    ScheduleResult result = impl.Unschedulable(num_nodes, "");
    result.evaluated_nodes = pass.visited;
    return result;
  }

  absl::StatusOr<size_t> best = impl.Score(nodes, generations, *results, reuse, pass.feasible, verdicts);
  ScheduleResult result = best.ok() ? impl.Reserve(*cache_, *nodes[impl.feasible_index[*best]])
                                    : Failed(ScheduleResult::Outcome::kError, std::string(best.status().message()));
  if (best.ok()) result.node = nodes[impl.feasible_index[*best]]->node.name;
  result.evaluated_nodes = pass.visited;
  result.feasible_nodes = static_cast<int>(pass.feasible);
  return result;
}

Status Scheduler::BindingCycle(const ReservedPod& reserved) const { return impl_->binder->Bind(reserved); }

void Scheduler::FinishBinding(const ReservedPod& reserved, const Status& bound) {
  const ClusterCache::PodEntry* e = cache_->FindPod(reserved.pod->Uid());
  const bool assumed = e != nullptr && e->assumed;
  if (bound.ok()) {
    if (assumed) (void)cache_->FinishBinding(reserved.pod->Uid());
    return;
  }
  if (bound.code() == Code::kUnconfirmed) return;  // it may hold the CPUs: kept
  if (assumed) (void)cache_->ForgetPod(reserved.pod->Uid());
  impl_->Unreserve(reserved, impl_->plugins.reserves.size());
}

ScheduleResult Scheduler::ScheduleOne(PodPtr pod, std::vector<NodeVerdict>* verdicts) {
  ScheduleResult result = SchedulingCycle(std::move(pod), verdicts);
  if (result.outcome != ScheduleResult::Outcome::kScheduled) return result;
  const ReservedPod reserved = *std::move(result.reserved);
  result.reserved.reset();
  const Status bound = BindingCycle(reserved);
  FinishBinding(reserved, bound);
  if (!bound.ok()) {
    result.outcome = ScheduleResult::Outcome::kError;
    result.message = fmt::format("bind to node {:?}: {}", reserved.node, bound.Message());
    result.allocation.reset();
    return result;
  }
  return result;
}

}  // namespace huygens::sched
