// InterPodAffinity: kube-scheduler v1.35.4's plugin of that name (pkg/scheduler/framework/
// plugins/interpodaffinity) with its default arguments (hardPodAffinityWeight 1, preferred
// terms of existing pods honoured). See NewInterPodAffinity in sched/plugins.h for the contract.
//
// One pass per attempt, in PreFilter (kube-scheduler's PreFilter counts and PreScore map, built
// together: both look at every node, never at the feasible ones only, so the result is the
// same):
//   - existing pods' terms: only the pods the cache lists on the nodes holding pods with
//     inter-pod terms (ClusterCache::NodesWithPodAffinity): their required anti-affinity
//     (NodeInfo::pods_with_required_anti_affinity) for Filter, their other terms
//     (pods_with_affinity) for Score; a cluster without such pods costs nothing;
//   - the incoming pod's own terms, when it has any: every pod on every node, once.
// The counts are kept per topology key, then per value of that key, so Filter and Score look up
// a node's label values without building strings.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "sched/plugins.h"

namespace huygens::sched {
namespace {

// topology key -> topology value -> count (or score).
using TopologyCounts = absl::flat_hash_map<std::string, absl::flat_hash_map<std::string, int64_t>>;

constexpr int64_t kHardPodAffinityWeight = 1;  // InterPodAffinityArgs' default

const Labels& NoLabels() {
  static const Labels* const kEmpty = new Labels();
  return *kEmpty;
}

// Adds `delta` to the node's domain of `key`; nothing when the node lacks the label.
void Add(TopologyCounts& counts, const Node& node, const std::string& key, int64_t delta) {
  auto it = node.labels.find(key);
  if (it != node.labels.end()) counts[key][it->second] += delta;
}

// The count of the node's domain of `key`; nullopt when the node lacks the label.
std::optional<int64_t> CountAt(const TopologyCounts& counts, const Node& node, const std::string& key) {
  auto label = node.labels.find(key);
  if (label == node.labels.end()) return std::nullopt;
  auto by_key = counts.find(key);
  if (by_key == counts.end()) return 0;
  auto by_value = by_key->second.find(label->second);
  return by_value == by_key->second.end() ? 0 : by_value->second;
}

// matchLabelKeys (`equal`) or mismatchLabelKeys: the requirement the API server would have
// merged into the selector, for each key the owner carries.
bool LabelKeysHold(const std::vector<std::string>& keys, const Pod& owner, const Pod& target, bool equal) {
  for (const std::string& key : keys) {
    auto own = owner.labels.find(key);
    if (own == owner.labels.end()) continue;
    auto theirs = target.labels.find(key);
    const bool same = theirs != target.labels.end() && theirs->second == own->second;
    if (same != equal) return false;
  }
  return true;
}

// Whether `term`, a term of `owner`, selects `target` (kube-scheduler's AffinityTerm.Matches).
// `target_namespace` gives the labels of the target's namespace, nullptr when unknown: an
// unknown namespace is selected only by an empty namespaceSelector.
bool TermMatches(const PodAffinityTerm& term, const Pod& owner, const Pod& target,
                 absl::FunctionRef<const Labels*()> target_namespace) {
  if (!term.label_selector.has_value()) return false;
  const std::string& ns = target.spec.namespace_name;
  bool in_namespace;
  if (term.namespaces.empty() && !term.namespace_selector.has_value()) {
    in_namespace = ns == owner.spec.namespace_name;
  } else {
    in_namespace = std::find(term.namespaces.begin(), term.namespaces.end(), ns) != term.namespaces.end();
    if (!in_namespace && term.namespace_selector.has_value()) {
      const Labels* labels = term.namespace_selector->empty() ? &NoLabels() : target_namespace();
      in_namespace = labels != nullptr && term.namespace_selector->Matches(*labels);
    }
  }
  return in_namespace && term.label_selector->Matches(target.labels) &&
         LabelKeysHold(term.match_label_keys, owner, target, true) &&
         LabelKeysHold(term.mismatch_label_keys, owner, target, false);
}

class InterPodAffinity final : public PreFilterPlugin, public FilterPlugin, public ScorePlugin {
 public:
  explicit InterPodAffinity(const ClusterCache* cache) : cache_(cache) {}

  std::string_view Name() const override { return "InterPodAffinity"; }

  Status PreFilter(CycleState& state) override {
    Scratch& s = state.Slot<Scratch>(slot());
    s.Clear();
    const Pod& pod = state.pod();
    if (!cache_->NodesWithPodAffinity().empty()) {
      const Labels* ns = NamespaceOf(pod);
      const Labels& own_namespace = ns != nullptr ? *ns : NoLabels();
      for (const NodeInfo* node : cache_->NodesWithPodAffinity()) {
        for (const Pod* existing : node->pods_with_required_anti_affinity) {
          for (const PodAffinityTerm& t : existing->pod_affinity.required_anti) {
            if (TermMatches(t, *existing, pod, [&] { return &own_namespace; })) {
              Add(s.existing_anti, node->node, t.topology_key, 1);
            }
          }
        }
        for (const Pod* existing : node->pods_with_affinity) {
          CountExistingScoreTerms(s, *existing, pod, own_namespace, node->node);
        }
      }
    }
    if (!pod.pod_affinity.empty()) CountIncomingTerms(s, pod);
    const std::vector<PodAffinityTerm>& required = pod.pod_affinity.required;
    s.matches_own_terms = AllMatch(required, pod, pod);
    s.filter = !s.existing_anti.empty() || !required.empty() || !pod.pod_affinity.required_anti.empty();
    if (s.filter || !s.score.empty()) state.skip_equivalence_cache = true;  // never clears another plugin's
    return Status::Success();
  }

  Status Filter(CycleState& state, const NodeInfo& node) override {
    const Scratch* s = state.SlotIfSet<Scratch>(slot());
    if (s == nullptr || !s->filter) return Status::Success();
    const PodAffinity& affinity = state.pod().pod_affinity;
    if (!SatisfiesAffinity(*s, affinity.required, node.node)) {
      return Status::Unresolvable("node(s) didn't match pod affinity rules");
    }
    for (const PodAffinityTerm& t : affinity.required_anti) {
      if (CountAt(s->anti, node.node, t.topology_key).value_or(0) > 0) {
        return Status::Unschedulable("node(s) didn't match pod anti-affinity rules");
      }
    }
    for (const auto& [key, values] : s->existing_anti) {
      if (CountAt(s->existing_anti, node.node, key).value_or(0) > 0) {
        return Status::Unschedulable("node(s) didn't satisfy existing pods anti-affinity rules");
      }
    }
    return Status::Success();
  }

  int64_t Score(CycleState& state, const NodeInfo& node) override {
    const Scratch* s = state.SlotIfSet<Scratch>(slot());
    if (s == nullptr) return 0;
    int64_t sum = 0;
    for (const auto& [key, values] : s->score) sum += CountAt(s->score, node.node, key).value_or(0);
    return sum;
  }

  // kube-scheduler's PreScore Skip: no term counted anywhere.
  bool SkipScore(const CycleState& state) const override {
    const Scratch* s = state.SlotIfSet<Scratch>(slot());
    return s == nullptr || s->score.empty();
  }

  // kube-scheduler's NormalizeScore: min-max to 0..kMaxNodeScore over the feasible nodes
  // (all 0 when they are equal); unchanged when no term counted anywhere.
  void NormalizeScore(CycleState& state, std::span<int64_t> scores) override {
    const Scratch* s = state.SlotIfSet<Scratch>(slot());
    if (s == nullptr || s->score.empty()) return;
    int64_t min = std::numeric_limits<int64_t>::max();
    int64_t max = std::numeric_limits<int64_t>::min();
    for (int64_t v : scores) {
      min = std::min(min, v);
      max = std::max(max, v);
    }
    for (int64_t& v : scores) {
      const double share = max > min ? static_cast<double>(v - min) / static_cast<double>(max - min) : 0.0;
      v = static_cast<int64_t>(static_cast<double>(kMaxNodeScore) * share);
    }
  }

 private:
  struct Scratch : CycleState::Data {
    TopologyCounts existing_anti;  // existing pods' required anti-affinity selecting the pod
    TopologyCounts affinity;       // pods matching all of the pod's required affinity terms
    TopologyCounts anti;           // pods matching a required anti-affinity term of the pod
    TopologyCounts score;          // preferred terms both ways, existing required affinity
    bool matches_own_terms = false;
    bool filter = false;  // Filter has something to check (kube-scheduler's PreFilter Skip)

    void Clear() {
      existing_anti.clear();
      affinity.clear();
      anti.clear();
      score.clear();
    }
  };

  // The labels of pod's namespace as the cache knows them (nullptr: unknown).
  const Labels* NamespaceOf(const Pod& pod) const { return cache_->NamespaceLabels(pod.spec.namespace_name); }

  // kube-scheduler's podMatchesAllAffinityTerms: false for no terms.
  bool AllMatch(const std::vector<PodAffinityTerm>& terms, const Pod& owner, const Pod& target) const {
    if (terms.empty()) return false;
    for (const PodAffinityTerm& t : terms) {
      if (!TermMatches(t, owner, target, [&] { return NamespaceOf(target); })) return false;
    }
    return true;
  }

  // An existing pod's terms that score the incoming pod, whose namespace has `pod_namespace`
  // (empty when unknown, as kube-scheduler's namespace snapshot): its required affinity
  // (hardPodAffinityWeight) and its preferred terms.
  static void CountExistingScoreTerms(Scratch& s, const Pod& existing, const Pod& pod, const Labels& pod_namespace,
                                      const Node& node) {
    auto selects = [&](const PodAffinityTerm& t) {
      return TermMatches(t, existing, pod, [&] { return &pod_namespace; });
    };
    const PodAffinity& a = existing.pod_affinity;
    for (const PodAffinityTerm& t : a.required) {
      if (selects(t)) Add(s.score, node, t.topology_key, kHardPodAffinityWeight);
    }
    for (const WeightedPodAffinityTerm& w : a.preferred) {
      if (selects(w.term)) Add(s.score, node, w.term.topology_key, w.weight);
    }
    for (const WeightedPodAffinityTerm& w : a.preferred_anti) {
      if (selects(w.term)) Add(s.score, node, w.term.topology_key, -w.weight);
    }
  }

  // The incoming pod's terms over every pod of the cluster, in one pass.
  void CountIncomingTerms(Scratch& s, const Pod& pod) const {
    const PodAffinity& a = pod.pod_affinity;
    for (const NodeInfo* info : cache_->Nodes()) {
      const Node& node = info->node;
      for (const std::string& uid : info->pod_uids) {
        const Pod& existing = *cache_->FindPod(uid)->pod;
        auto selects = [&](const PodAffinityTerm& t) {
          return TermMatches(t, pod, existing, [&] { return NamespaceOf(existing); });
        };
        if (AllMatch(a.required, pod, existing)) {
          for (const PodAffinityTerm& t : a.required) Add(s.affinity, node, t.topology_key, 1);
        }
        for (const PodAffinityTerm& t : a.required_anti) {
          if (selects(t)) Add(s.anti, node, t.topology_key, 1);
        }
        for (const WeightedPodAffinityTerm& w : a.preferred) {
          if (selects(w.term)) Add(s.score, node, w.term.topology_key, w.weight);
        }
        for (const WeightedPodAffinityTerm& w : a.preferred_anti) {
          if (selects(w.term)) Add(s.score, node, w.term.topology_key, -w.weight);
        }
      }
    }
  }

  // kube-scheduler's satisfyPodAffinity: the node carries every term's topology key, and a
  // matching pod runs in each of its domains; or no pod matches anywhere and the pod matches
  // its own terms (the first of a group that attracts itself).
  static bool SatisfiesAffinity(const Scratch& s, const std::vector<PodAffinityTerm>& required, const Node& node) {
    bool pods_exist = true;
    for (const PodAffinityTerm& t : required) {
      const std::optional<int64_t> count = CountAt(s.affinity, node, t.topology_key);
      if (!count.has_value()) return false;
      if (*count <= 0) pods_exist = false;
    }
    return pods_exist || (s.affinity.empty() && s.matches_own_terms);
  }

  const ClusterCache* cache_;
};

}  // namespace

std::unique_ptr<Plugin> NewInterPodAffinity(const ClusterCache* cache) {
  return std::make_unique<InterPodAffinity>(cache);
}

}  // namespace huygens::sched
