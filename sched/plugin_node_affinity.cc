// NodeAffinity: kube-scheduler's plugin of that name (pkg/scheduler/framework/plugins/
// nodeaffinity). Filter: spec.nodeSelector (every pair must equal a node label) AND the
// required node affinity (terms ORed, requirements in a term ANDed; an empty term matches
// nothing). Score: sum of the weights of the preferred terms the node matches, normalised to
// 0..kMaxNodeScore. Operator semantics are Kubernetes' label selectors: In needs the label
// with one of the values; NotIn accepts a missing label; Gt/Lt parse the label and the single
// value as base-10 int64 and fail on anything else; an invalid requirement (In/NotIn without
// values, Exists with values, Gt/Lt without exactly one value) makes its term match nothing.
#include <algorithm>
#include <charconv>
#include <cstdint>

#include "sched/plugins.h"

namespace huygens::sched {
namespace {

std::optional<int64_t> ParseInt64(const std::string& s) {
  int64_t v = 0;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || ptr != end || s.empty()) return std::nullopt;
  return v;
}

bool Contains(const std::vector<std::string>& values, const std::string& v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

bool MatchesLabels(const NodeSelectorRequirement& r,
                   const std::map<std::string, std::string>& labels) {
  auto it = labels.find(r.key);
  const bool has = it != labels.end();
  switch (r.op) {
    case SelectorOperator::kIn:
      return !r.values.empty() && has && Contains(r.values, it->second);
    case SelectorOperator::kNotIn:
      return !r.values.empty() && (!has || !Contains(r.values, it->second));
    case SelectorOperator::kExists: return r.values.empty() && has;
    case SelectorOperator::kDoesNotExist: return r.values.empty() && !has;
    case SelectorOperator::kGt:
    case SelectorOperator::kLt: {
      if (r.values.size() != 1 || !has) return false;
      const std::optional<int64_t> want = ParseInt64(r.values[0]);
      const std::optional<int64_t> got = ParseInt64(it->second);
      if (!want || !got) return false;
      return r.op == SelectorOperator::kGt ? *got > *want : *got < *want;
    }
  }
  return false;
}

bool MatchesFields(const NodeSelectorRequirement& r, const std::string& node_name) {
  if (r.key != "metadata.name" || r.values.size() != 1) return false;
  if (r.op == SelectorOperator::kIn) return node_name == r.values[0];
  if (r.op == SelectorOperator::kNotIn) return node_name != r.values[0];
  return false;
}

bool TermMatches(const NodeSelectorTerm& term, const Node& node) {
  if (term.match_expressions.empty() && term.match_fields.empty()) return false;
  for (const NodeSelectorRequirement& r : term.match_expressions) {
    if (!MatchesLabels(r, node.labels)) return false;
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
    const Pod& pod = state.pod();
    for (const auto& [key, value] : pod.node_selector) {
      auto it = node.node.labels.find(key);
      if (it == node.node.labels.end() || it->second != value) return Reject();
    }
    if (pod.required_node_affinity.empty()) return Status::Success();
    for (const NodeSelectorTerm& term : pod.required_node_affinity) {
      if (TermMatches(term, node.node)) return Status::Success();
    }
    return Reject();
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

std::unique_ptr<Plugin> NewNodeAffinity() { return std::make_unique<NodeAffinity>(); }

}  // namespace huygens::sched
