// PodTopologySpread: kube-scheduler v1.35.4's plugin of that name (pkg/scheduler/framework/
// plugins/podtopologyspread) for the pod's own spec.topologySpreadConstraints, with the feature
// gates of that release (NodeInclusionPolicyInPodTopologySpread GA, MatchLabelKeysInPodTopologySpread
// on). See NewPodTopologySpread in sched/plugins.h for the contract.
//
// A constraint's selector is its labelSelector plus, for each of its matchLabelKeys the pod
// carries, "key In (the pod's value)"; an absent labelSelector selects nothing, an empty one
// (no requirement at all) counts no pod but matches the pod itself. Pods are counted in the
// pod's namespace only.
//
// Filter (the DoNotSchedule constraints), one pass over every node in PreFilter: a node counts
// when it carries the topology keys of all hard constraints, and for each constraint when it
// passes that constraint's inclusion policies (nodeAffinityPolicy Honor: the pod's nodeSelector
// and required node affinity; nodeTaintsPolicy Honor: no untolerated NoSchedule / NoExecute
// taint); its matching pods add to its domain (the value of the topology key). The global
// minimum is the smallest domain count, or 0 while fewer domains than minDomains exist. A node
// then fits when, for each constraint, its domain's count + 1 (when the pod matches the selector
// itself) - the minimum <= maxSkew.
//
// Score (the ScheduleAnyway constraints), PreScore over the feasible nodes: a feasible node
// lacking a topology key is ignored (scores 0 after normalising). The domains of a non-hostname
// key are those of the feasible nodes; their counts come from every node that carries all the
// keys and passes the inclusion policies. Per constraint, weight w = ln(domains + 2) (for
// hostname: the feasible nodes not ignored) and the node's raw score adds count * w +
// (maxSkew - 1), rounded; hostname counts the node's own matching pods. NormalizeScore: fewer
// is better, 100 * (max + min - s) / max, every node 100 when max is 0.
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "sched/plugins.h"
#include "sched/toleration.h"

namespace huygens::sched {
namespace {

constexpr char kHostnameLabel[] = "kubernetes.io/hostname";  // v1.LabelHostname
constexpr char kConstraintsNotMatch[] = "node(s) didn't match pod topology spread constraints";
constexpr char kNodeLabelNotMatch[] = "node(s) didn't match pod topology spread constraints (missing required label)";
constexpr int64_t kIgnoredNode = -1;  // a raw score no counted node can have

// One constraint of the pod with its effective selector (nullopt: selects nothing). A copy: the
// scratch outlives the attempt, and the pod may go before the next PreFilter clears it.
struct Constraint {
  TopologySpreadConstraint spec;
  std::optional<LabelSelector> selector;

  bool Matches(const Labels& labels) const { return selector.has_value() && selector->Matches(labels); }
  // kube-scheduler's countPodsMatchSelector skips an empty selector: it counts nothing.
  bool Counts() const { return selector.has_value() && !selector->empty(); }
};

// The pod's constraints whose whenUnsatisfiable is `hard`, into `out`.
void CollectConstraints(const Pod& pod, bool hard, std::vector<Constraint>& out) {
  out.clear();
  for (const TopologySpreadConstraint& c : pod.topology_spread_constraints) {
    if (c.hard != hard) continue;
    Constraint k{c, c.label_selector};
    if (k.selector.has_value()) {
      for (const std::string& key : c.match_label_keys) {
        auto own = pod.labels.find(key);
        if (own != pod.labels.end()) k.selector->match_expressions.push_back({key, SelectorOperator::kIn, {own->second}});
      }
    }
    out.push_back(std::move(k));
  }
}

// Whether the node carries the topology key of every constraint.
bool HasAllKeys(const Node& node, const std::vector<Constraint>& constraints) {
  for (const Constraint& c : constraints) {
    if (!node.labels.contains(c.spec.topology_key)) return false;
  }
  return true;
}

// A node's verdicts on the pod's node inclusion policies, each computed on first use.
class Inclusion {
 public:
  Inclusion(const Pod& pod, const Node& node) : pod_(pod), node_(node) {}

  bool Includes(const TopologySpreadConstraint& c) {
    if (c.node_affinity_policy == NodeInclusionPolicy::kHonor) {
      if (affinity_ == kUnknown) affinity_ = MatchesRequiredNodeAffinity(pod_, node_) ? kYes : kNo;
      if (affinity_ == kNo) return false;
    }
    if (c.node_taints_policy == NodeInclusionPolicy::kHonor) {
      if (taints_ == kUnknown) taints_ = FirstUntoleratedHardTaint(pod_.tolerations, node_.taints) == nullptr ? kYes : kNo;
      if (taints_ == kNo) return false;
    }
    return true;
  }

 private:
  enum Verdict : int8_t { kUnknown, kYes, kNo };
  const Pod& pod_;
  const Node& node_;
  Verdict affinity_ = kUnknown;
  Verdict taints_ = kUnknown;
};

// Domain value -> matching pods.
using DomainCounts = absl::flat_hash_map<std::string, int64_t>;

class PodTopologySpread final : public PreFilterPlugin, public FilterPlugin, public PreScorePlugin, public ScorePlugin {
 public:
  explicit PodTopologySpread(const ClusterCache* cache) : cache_(cache) {}

  std::string_view Name() const override { return "PodTopologySpread"; }

  Status PreFilter(CycleState& state) override {
    Scratch& s = state.Slot<Scratch>(slot());
    const Pod& pod = state.pod();
    CollectConstraints(pod, /*hard=*/true, s.hard);
    s.soft.clear();
    if (!pod.topology_spread_constraints.empty()) state.skip_equivalence_cache = true;
    if (s.hard.empty()) return Status::Success();
    s.hard_counts.assign(s.hard.size(), {});
    for (const NodeInfo* info : cache_->Nodes()) {
      const Node& node = info->node;
      if (!HasAllKeys(node, s.hard)) continue;
      Inclusion inclusion(pod, node);
      for (size_t i = 0; i < s.hard.size(); ++i) {
        if (!inclusion.Includes(s.hard[i].spec)) continue;
        s.hard_counts[i][node.labels.at(s.hard[i].spec.topology_key)] += CountOnNode(*info, s.hard[i], pod);
      }
    }
    s.hard_min.assign(s.hard.size(), 0);
    for (size_t i = 0; i < s.hard.size(); ++i) {
      const DomainCounts& domains = s.hard_counts[i];
      if (domains.size() < static_cast<size_t>(s.hard[i].spec.min_domains)) continue;  // minimum 0
      int64_t min = std::numeric_limits<int32_t>::max();  // no domain at all: nothing is skewed
      for (const auto& [value, count] : domains) min = std::min(min, count);
      s.hard_min[i] = min;
    }
    return Status::Success();
  }

  Status Filter(CycleState& state, const NodeInfo& node) override {
    const Scratch* s = state.SlotIfSet<Scratch>(slot());
    if (s == nullptr || s->hard.empty()) return Status::Success();
    for (size_t i = 0; i < s->hard.size(); ++i) {
      const Constraint& c = s->hard[i];
      auto label = node.node.labels.find(c.spec.topology_key);
      if (label == node.node.labels.end()) return Status::Unresolvable(kNodeLabelNotMatch);
      auto domain = s->hard_counts[i].find(label->second);
      const int64_t count = domain == s->hard_counts[i].end() ? 0 : domain->second;
      const int64_t self = c.Matches(state.pod().labels) ? 1 : 0;
      if (count + self - s->hard_min[i] > c.spec.max_skew) return Status::Unschedulable(kConstraintsNotMatch);
    }
    return Status::Success();
  }

  Status PreScore(CycleState& state, std::span<const NodeInfo* const> feasible) override {
    Scratch& s = state.Slot<Scratch>(slot());
    const Pod& pod = state.pod();
    CollectConstraints(pod, /*hard=*/false, s.soft);
    if (s.soft.empty()) return Status::Success();
    s.soft_counts.assign(s.soft.size(), {});
    size_t counted_nodes = 0;
    for (const NodeInfo* info : feasible) {
      if (!HasAllKeys(info->node, s.soft)) continue;  // ignored: scores 0
      ++counted_nodes;
      for (size_t i = 0; i < s.soft.size(); ++i) {
        const std::string& key = s.soft[i].spec.topology_key;
        if (key != kHostnameLabel) s.soft_counts[i].try_emplace(info->node.labels.at(key), 0);
      }
    }
    s.soft_weight.assign(s.soft.size(), 0.0);
    for (size_t i = 0; i < s.soft.size(); ++i) {
      const bool hostname = s.soft[i].spec.topology_key == kHostnameLabel;
      const size_t domains = hostname ? counted_nodes : s.soft_counts[i].size();
      s.soft_weight[i] = std::log(static_cast<double>(domains + 2));
    }
    for (const NodeInfo* info : cache_->Nodes()) {
      const Node& node = info->node;
      if (!HasAllKeys(node, s.soft)) continue;
      Inclusion inclusion(pod, node);
      for (size_t i = 0; i < s.soft.size(); ++i) {
        auto domain = s.soft_counts[i].find(node.labels.at(s.soft[i].spec.topology_key));
        if (domain == s.soft_counts[i].end() || !inclusion.Includes(s.soft[i].spec)) continue;
        domain->second += CountOnNode(*info, s.soft[i], pod);
      }
    }
    return Status::Success();
  }

  int64_t Score(CycleState& state, const NodeInfo& node) override {
    const Scratch* s = state.SlotIfSet<Scratch>(slot());
    if (s == nullptr || s->soft.empty()) return 0;
    if (!HasAllKeys(node.node, s->soft)) return kIgnoredNode;
    double score = 0;
    for (size_t i = 0; i < s->soft.size(); ++i) {
      const Constraint& c = s->soft[i];
      const std::string& value = node.node.labels.at(c.spec.topology_key);
      int64_t count = 0;
      if (c.spec.topology_key == kHostnameLabel) {
        count = CountOnNode(node, c, state.pod());
      } else if (auto domain = s->soft_counts[i].find(value); domain != s->soft_counts[i].end()) {
        count = domain->second;
      }
      score += static_cast<double>(count) * s->soft_weight[i] + static_cast<double>(c.spec.max_skew - 1);
    }
    return std::llround(score);
  }

  bool SkipScore(const CycleState& state) const override {
    const Scratch* s = state.SlotIfSet<Scratch>(slot());
    return s == nullptr || s->soft.empty();
  }

  void NormalizeScore(CycleState& state, std::span<int64_t> scores) override {
    if (SkipScore(state)) return;
    int64_t min = std::numeric_limits<int64_t>::max();
    int64_t max = 0;
    for (int64_t v : scores) {
      if (v == kIgnoredNode) continue;
      min = std::min(min, v);
      max = std::max(max, v);
    }
    for (int64_t& v : scores) {
      if (v == kIgnoredNode) {
        v = 0;
      } else {
        v = max == 0 ? kMaxNodeScore : kMaxNodeScore * (max + min - v) / max;
      }
    }
  }

 private:
  struct Scratch : CycleState::Data {
    std::vector<Constraint> hard;
    std::vector<DomainCounts> hard_counts;  // per hard constraint
    std::vector<int64_t> hard_min;          // per hard constraint: the global minimum
    std::vector<Constraint> soft;
    std::vector<DomainCounts> soft_counts;  // per soft constraint (hostname: empty)
    std::vector<double> soft_weight;        // per soft constraint
  };

  // The pods on `info` in the pod's namespace that constraint `c` counts.
  int64_t CountOnNode(const NodeInfo& info, const Constraint& c, const Pod& pod) const {
    if (!c.Counts()) return 0;
    int64_t n = 0;
    for (const std::string& uid : info.pod_uids) {
      const Pod& other = *cache_->FindPod(uid)->pod;
      if (other.spec.namespace_name == pod.spec.namespace_name && c.selector->Matches(other.labels)) ++n;
    }
    return n;
  }

  const ClusterCache* cache_;
};

}  // namespace

std::unique_ptr<Plugin> NewPodTopologySpread(const ClusterCache* cache) {
  return std::make_unique<PodTopologySpread>(cache);
}

}  // namespace huygens::sched
