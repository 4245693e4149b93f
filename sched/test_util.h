// Test helpers for sched/ tests and benchmarks: small builders for pods and nodes.
//
// Thread-safety: plain functions.
#ifndef HUYGENS_SCHED_TEST_UTIL_H_
#define HUYGENS_SCHED_TEST_UTIL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <cctype>

#include "absl/base/internal/raw_logging.h"
#include "gtest/gtest.h"
#include "node/node_state.h"
#include "sched/cache.h"
#include "sched/framework.h"
#include "sched/node.h"
#include "sched/pod.h"
#include "topology/topology.h"

namespace huygens::sched::testing {

// A Guaranteed pod with one container "app" of `cpus` whole CPUs (exclusive by default) and
// 1 GiB of memory.
inline Pod GuaranteedPod(std::string uid, int cpus) {
  Pod pod;
  pod.spec.uid = uid;
  pod.spec.namespace_name = "default";
  pod.spec.name = std::move(uid);
  ContainerSpec c;
  c.name = "app";
  c.cpu_request_milli = c.cpu_limit_milli = int64_t{cpus} * 1000;
  c.memory_request_bytes = c.memory_limit_bytes = int64_t{1} << 30;
  pod.spec.containers.push_back(c);
  return pod;
}

// A Burstable pod with one container requesting `milli` millicores and no limits.
inline Pod SharedPod(std::string uid, int64_t milli) {
  Pod pod;
  pod.spec.uid = uid;
  pod.spec.namespace_name = "default";
  pod.spec.name = std::move(uid);
  ContainerSpec c;
  c.name = "app";
  c.cpu_request_milli = milli;
  pod.spec.containers.push_back(c);
  return pod;
}

inline PodPtr Share(Pod pod) { return std::make_shared<const Pod>(std::move(pod)); }

// A node of `topo` with a CPU state (no system CPUs unless given) and allocatable equal to its
// user pool: cpu = user CPUs x 1000, 256 GiB of memory, 110 pods.
inline Node MachineNode(std::string name, std::shared_ptr<const CpuTopology> topo,
                        NodeConfig config = {}) {
  config.name = name;
  absl::StatusOr<NodeState> state = NodeState::Create(std::move(topo), std::move(config));
  ABSL_RAW_CHECK(state.ok(), "MachineNode: NodeState::Create failed");
  Node node;
  node.name = std::move(name);
  node.allocatable.cpu_milli = int64_t{state->UserPool().Size()} * 1000;
  node.allocatable.memory_bytes = int64_t{256} << 30;
  if (state->Config().mode == NodeMode::kIsolated) {
    node.allocatable.extended[kIsolatedCpuResource] = state->UserPool().Size();
  }
  node.cpu_state = std::make_shared<const NodeState>(*std::move(state));
  return node;
}

// A NUMA-blind node with the given allocatable CPUs (millicores).
inline Node PlainNode(std::string name, int64_t cpu_milli) {
  Node node;
  node.name = std::move(name);
  node.allocatable.cpu_milli = cpu_milli;
  node.allocatable.memory_bytes = int64_t{64} << 30;
  return node;
}

// Node labels the topology tests use (core/v1 LabelHostname and LabelTopologyZone).
inline constexpr char kHostnameLabel[] = "kubernetes.io/hostname";
inline constexpr char kZoneLabel[] = "topology.kubernetes.io/zone";

// PlainNode(name, 64 CPUs) labelled with its hostname and, unless `zone` is empty, its zone.
inline Node ZonedNode(std::string name, const std::string& zone) {
  Node node = PlainNode(name, 64000);
  node.labels[kHostnameLabel] = name;
  if (!zone.empty()) node.labels[kZoneLabel] = zone;
  return node;
}

// SharedPod(name, 100m) in namespace `ns` with `labels`.
inline Pod LabelledPod(std::string name, std::map<std::string, std::string> labels, std::string ns = "default") {
  Pod pod = SharedPod(std::move(name), 100);
  pod.spec.namespace_name = std::move(ns);
  pod.labels = std::move(labels);
  return pod;
}

// A pod and the node it is bound to, for cases that start from a running cluster.
struct Placed {
  Pod pod;
  std::string node;
};

// Binds every pod of `placed` in `cache`, without allocations; a failure fails the test.
inline void PlaceAll(ClusterCache& cache, const std::vector<Placed>& placed) {
  for (const Placed& p : placed) {
    ASSERT_TRUE(cache.AddPod(std::make_shared<const Pod>(p.pod), p.node, std::nullopt).ok()) << p.pod.spec.name;
  }
}

// A table case of a Score plugin: the pods running, the pod judged and the normalised score
// wanted on each node, in the test's node order.
struct ScoreCase {
  std::string name;
  std::vector<Placed> existing;
  Pod pod;
  std::vector<int64_t> want;
};

// Runs a score plugin's scoring for the pod in `state` (after its PreFilter) over `nodes`, all
// taken as feasible: PreScore when the plugin has one, Score per node, NormalizeScore. Returns
// the normalised scores in `nodes` order; a failed PreScore fails the test.
inline std::vector<int64_t> NormalisedScores(ScorePlugin& plugin, CycleState& state, const ClusterCache& cache,
                                             const std::vector<std::string>& nodes) {
  std::vector<const NodeInfo*> feasible;
  for (const std::string& name : nodes) feasible.push_back(cache.FindNode(name));
  if (auto* pre = dynamic_cast<PreScorePlugin*>(&plugin)) {
    EXPECT_TRUE(pre->PreScore(state, feasible).ok());
  }
  std::vector<int64_t> scores;
  for (const NodeInfo* node : feasible) scores.push_back(plugin.Score(state, *node));
  plugin.NormalizeScore(state, scores);
  return scores;
}

// A parameterised test's name from its case's `name` sentence (non-alphanumerics -> '_').
template <typename Case>
std::string SentenceName(const ::testing::TestParamInfo<Case>& param) {
  std::string n = param.param.name;
  for (char& ch : n) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return n;
}

}  // namespace huygens::sched::testing

#endif  // HUYGENS_SCHED_TEST_UTIL_H_
