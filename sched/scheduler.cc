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
};

std::pair<Scheduler::Impl::ClassResults*, bool> Scheduler::Impl::ResultsFor(
    const Profile& profile, size_t nodes) {
  ClassResults* results = &scratch;
  bool reuse = false;
  if (profile.equivalence_cache) {
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

ScheduleResult Scheduler::ScheduleOne(PodPtr pod, std::vector<NodeVerdict>* verdicts) {
  Impl& impl = *impl_;
  ScheduleResult result;
  CycleState& state = impl.state;
  state.Reset(pod);
  ComputePodFacts(*pod, state.mutable_facts());
  impl.reason_counts.clear();

  const std::vector<NodeInfo*>& nodes = cache_->Nodes();
  const int num_nodes = static_cast<int>(nodes.size());
  auto unschedulable = [&](std::string pre_filter_message) {
    Diagnosis d = impl.MakeDiagnosis(num_nodes, std::move(pre_filter_message));
    for (PostFilterPlugin* p : impl.plugins.post_filters) {
      std::optional<std::string> nominated = p->PostFilter(state, d);
      if (nominated.has_value()) {
        result.nominated_node = std::move(nominated);
        break;
      }
    }
    result.outcome = ScheduleResult::Outcome::kUnschedulable;
    result.message = FitErrorMessage(d);
    result.reasons = std::move(d.reasons);
    return result;
  };
  auto error = [&](std::string message) {
    result.outcome = ScheduleResult::Outcome::kError;
    result.message = std::move(message);
    return result;
  };

  // 1. PreFilter.
  {
    const Plugin* failed = nullptr;
    Status s = impl.plugins.RunPreFilters(state, &failed);
    if (!s.ok()) {
      if (s.code() == Code::kError) return error(PluginSet::ErrorMessage(*failed, s));
      impl.CountReasons(s, num_nodes);
      return unschedulable(s.Message());
    }
  }

  // 2. Filter, round-robin from where the last attempt stopped.
  auto [results, reuse] = impl.ResultsFor(profile_, nodes.size());
  const size_t num_scores = impl.plugins.scores.size();
  const int to_find = NumFeasibleNodesToFind(num_nodes, profile_.percentage_of_nodes_to_score);
  if (impl.feasible_index.size() < nodes.size()) impl.feasible_index.resize(nodes.size());
  size_t num_feasible = 0;
  // The scan reads two dense arrays, the nodes' generations and the class's entries (8 bytes
  // each per node): a node's NodeInfo is touched only when its filters must run again.
  const std::vector<uint64_t>& generations = cache_->NodeGenerations();
  const size_t n = nodes.size();
  size_t pos = n == 0 ? 0 : impl.next_start % n;
  const size_t start = pos;
  int visited = 0;
  for (; visited < num_nodes && static_cast<int>(num_feasible) < to_find; ++visited) {
    const uint64_t generation = generations[pos];
    Impl::ClassResults::Entry& entry = results->entries[pos];
    if (!reuse || entry.filter_generation != generation) {
      const NodeInfo* node = nodes[pos];
      entry.feasible = true;
      const Plugin* failed = nullptr;
      Status s = impl.plugins.RunFilters(state, *node, &failed);
      if (!s.ok()) {
        if (s.code() == Code::kError) {
          entry.filter_generation = 0;
          return error(PluginSet::ErrorMessage(*failed, *node, s));
        }
        entry.feasible = false;
        results->rejection[pos] = std::move(s);
      }
      if (entry.filter_generation != generation) results->score_generation[pos] = 0;
      entry.filter_generation = generation & Impl::ClassResults::Entry::kGenerationMask;
    }
    impl.feasible_index[num_feasible] = pos;
    num_feasible += entry.feasible;
    if (++pos == n) pos = 0;
  }
  if (verdicts != nullptr) {
    verdicts->clear();
    for (int i = 0; i < visited; ++i) {
      const size_t at = (start + static_cast<size_t>(i)) % n;
      verdicts->push_back({.node = nodes[at]->node.name,
                           .refusal = results->entries[at].feasible ? std::string() : results->rejection[at].Message(),
                           .score = std::nullopt});
    }
  }
  if (n > 0) impl.next_start = pos;
  result.evaluated_nodes = visited;
  result.feasible_nodes = static_cast<int>(num_feasible);
  if (num_feasible == 0) {  // then every node was visited, and rejected
    for (size_t i = 0; i < n; ++i) impl.CountReasons(results->rejection[i], 1);
    return unschedulable("");
  }

  // 3. Score (skipped with one feasible node, as kube-scheduler does). Raw scores come from
  // the equivalence cache where the node is unchanged; normalising runs on every attempt.
  size_t best = 0;
  if (num_feasible > 1 && num_scores > 0) {
    impl.feasible.resize(num_feasible);
    for (size_t k = 0; k < num_feasible; ++k) impl.feasible[k] = nodes[impl.feasible_index[k]];
    const Plugin* failed = nullptr;
    if (Status s = impl.plugins.RunPreScores(state, impl.feasible, &failed); !s.ok()) {
      return error(PluginSet::ErrorMessage(*failed, s));
    }
    // One pass over the feasible nodes: refresh stale raw scores and copy them out plugin by
    // plugin (plugin_scores[p * num_feasible + k]), so each node's row is read once.
    impl.plugin_scores.resize(num_scores * num_feasible);
    for (size_t k = 0; k < num_feasible; ++k) {
      const size_t i = impl.feasible_index[k];
      int64_t* row = &results->scores[i * num_scores];
      if (!reuse || results->score_generation[i] != generations[i]) {
        for (size_t p = 0; p < num_scores; ++p) {
          row[p] = impl.plugins.scores[p].first->Score(state, *impl.feasible[k]);
        }
        results->score_generation[i] = generations[i];
      }
      for (size_t p = 0; p < num_scores; ++p) impl.plugin_scores[p * num_feasible + k] = row[p];
    }
    impl.totals.assign(num_feasible, 0);
    impl.plugins.AddWeightedScores(state, impl.plugin_scores, impl.totals);
    best = static_cast<size_t>(
        std::max_element(impl.totals.begin(), impl.totals.end()) - impl.totals.begin());
    if (verdicts != nullptr) {  // feasible nodes are in visit order, as the verdicts
      size_t k = 0;
      for (NodeVerdict& v : *verdicts) {
        if (v.refusal.empty()) v.score = impl.totals[k++];
      }
    }
  }
  const NodeInfo* chosen = nodes[impl.feasible_index[best]];
  result.node = chosen->node.name;

  // 4. Reserve, assume, bind.
  size_t reserved = 0;
  auto undo = [&](size_t count) {
    if (const ClusterCache::PodEntry* e = cache_->FindPod(pod->Uid()); e != nullptr && e->assumed) {
      (void)cache_->ForgetPod(pod->Uid());
    }
    for (size_t i = count; i-- > 0;) impl.plugins.reserves[i]->Unreserve(state, *chosen);
  };
  for (; reserved < impl.plugins.reserves.size(); ++reserved) {
    Status s = impl.plugins.reserves[reserved]->Reserve(state, *chosen);
    if (!s.ok() && s.IsRejection()) {
      // kube-scheduler's schedulingCycle: a Reserve rejection is a FitError over the one node
      // tried (no PostFilter), so the pod waits for a cluster change instead of backing off
      // and retrying the same refusal.
      undo(reserved + 1);
      impl.reason_counts.clear();
      impl.CountReasons(s, 1);
      Diagnosis d = impl.MakeDiagnosis(1, "");
      result.outcome = ScheduleResult::Outcome::kUnschedulable;
      result.message = FitErrorMessage(d);
      result.reasons = std::move(d.reasons);
      return result;
    }
    if (!s.ok()) {
      undo(reserved + 1);
      return error(PluginSet::ErrorMessage(*impl.plugins.reserves[reserved], *chosen, s));
    }
  }
  absl::Status assumed = cache_->AssumePod(pod, chosen->node.name, state.allocation,
                                           /*allocation_applied=*/true);
  if (!assumed.ok()) {
    undo(reserved);
    return error(std::string(assumed.message()));
  }
  Status bound = impl.binder->Bind(state, *chosen);
  if (!bound.ok()) {
    undo(reserved);
    return error(fmt::format("bind to node {:?}: {}", chosen->node.name, bound.Message()));
  }
  if (const ClusterCache::PodEntry* e = cache_->FindPod(pod->Uid()); e != nullptr && e->assumed) {
    (void)cache_->FinishBinding(pod->Uid());
  }
  result.outcome = ScheduleResult::Outcome::kScheduled;
  result.allocation = std::move(state.allocation);
  return result;
}

}  // namespace huygens::sched
