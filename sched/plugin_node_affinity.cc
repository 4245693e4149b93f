// NodeAffinity: kube-scheduler's plugin of that name (pkg/scheduler/framework/plugins/
// nodeaffinity). Filter: spec.nodeSelector (every pair must equal a node label) AND the
// required node affinity (terms ORed, requirements in a term ANDed; an empty term matches
// nothing). Score: sum of the weights of the preferred terms the node matches, normalised to
// 0..kMaxNodeScore. Operator semantics are Kubernetes' label selectors (base/label_selector.h):
// an invalid requirement (In/NotIn without values, Exists with values, Gt/Lt without exactly one
// value) matches nothing, so its term matches nothing.
#include <algorithm>
#include <cstdint>

#include "sched/plugins.h"

namespace huygens::sched {
namespace {

bool MatchesFields(const NodeSelectorRequirement& r, const std::string& node_name) {
  if (r.key != "metadata.name" || r.values.size() != 1) return false;
  if (r.op == SelectorOperator::kIn) return node_name == r.values[0];
  if (r.op == SelectorOperator::kNotIn) return node_name != r.values[0];
  return false;
}

bool TermMatches(const NodeSelectorTerm& term, const Node& node) {
  if (term.match_expressions.empty() && term.match_fields.empty()) return false;
  for (const NodeSelectorRequirement& r : term.match_expressions) {
    if (!r.Matches(node.labels)) return false;
  }
  for (const NodeSelectorRequirement& r : term.match_fields) {
    if (!MatchesFields(r, node.name)) return false;
  }
  return true;
}

class NodeAffinity final : public FilterPlugin, public ScorePlugin {
 public:
  std::string_view Name() const override { return "NodeAffinity"; }

  Status Filter(CycleState& state, const NodeInfo& node) override {
    return MatchesRequiredNodeAffinity(state.pod(), node.node) ? Status::Success() : Reject();
  }

  int64_t Score(CycleState& state, const NodeInfo& node) override {
    int64_t sum = 0;
    for (const PreferredSchedulingTerm& t : state.pod().preferred_node_affinity) {
      if (t.weight != 0 && TermMatches(t.preference, node.node)) sum += t.weight;
    }
    return sum;
  }

  // kube-scheduler's DefaultNormalizeScore(MaxNodeScore, reverse=false).
  void NormalizeScore(CycleState& state, std::span<int64_t> scores) override {
    (void)state;
    int64_t max = 0;
    for (int64_t s : scores) max = std::max(max, s);
    if (max == 0) return;
    for (int64_t& s : scores) s = kMaxNodeScore * s / max;
  }

 private:
  static Status Reject() {
    return Status::Unresolvable("node(s) didn't match Pod's node affinity/selector");
  }
};

}  // namespace

bool MatchesRequiredNodeAffinity(const Pod& pod, const Node& node) {
  if (!HasLabels(node.labels, pod.node_selector)) return false;
  if (pod.required_node_affinity.empty()) return true;
  return std::any_of(pod.required_node_affinity.begin(), pod.required_node_affinity.end(),
                     [&](const NodeSelectorTerm& term) { return TermMatches(term, node); });
}

std::unique_ptr<Plugin> NewNodeAffinity() { return std::make_unique<NodeAffinity>(); }

}  // namespace huygens::sched
