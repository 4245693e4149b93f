// Test helper: a cluster in a FakeApiServer for the scheduler service's tests and benchmark:
// Nodes with NodeResourceTopologies built by topology/nrt.h BuildNrt from synthetic machines,
// Guaranteed pods, and a checker of the final state (every pod bound and annotated, no two pods
// holding one exclusive CPU), and WaitFor to poll for an outcome.
#ifndef HUYGENS_SCHEDULER_TEST_CLUSTER_H_
#define HUYGENS_SCHEDULER_TEST_CLUSTER_H_

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fmt/format.h"
#include "kube/testing/fake_apiserver.h"
#include "kube/testing/process.h"
#include "node/allocation.h"
#include "sched/pod.h"
#include "sim/cluster_spec.h"
#include "topology/nrt.h"

namespace huygens::scheduler::testing {

using kube::testing::Slurp;
using kube::testing::WaitFor;

inline constexpr char kNrtResource[] = "noderesourcetopologies.topology.node.k8s.io";

// The Node object of a machine with `cpus` logical CPUs as the real API server stores it (no
// kubelet behind it): hostname label, status capacity = allocatable (`cpus` cpu, 4 GiB memory per
// CPU, 110 pods) and a Ready condition. `patch` (a JSON merge patch) adds labels, taints, ...
inline nlohmann::json NodeObject(const std::string& name, int cpus,
                                 const nlohmann::json& patch = nlohmann::json::object()) {
  nlohmann::json resources = {{"cpu", std::to_string(cpus)}, {"memory", fmt::format("{}Gi", 4 * cpus)}, {"pods", "110"}};
  nlohmann::json node = {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}}}}},
      {"status",
       {{"capacity", resources},
        {"allocatable", resources},
        {"conditions", {{{"type", "Ready"}, {"status", "True"}, {"reason", "KubeletReady"}}}}}}};
  node.merge_patch(patch);
  return node;
}

// Creates `node` (a Node object) and lifts the `node.kubernetes.io/not-ready:NoSchedule` taint
// that the apiserver's TaintNodesByCondition admission adds to every new Node, as the node
// lifecycle controller does for a Ready node (the test cluster runs none; docs/testbed.md). The
// node keeps the taints of its own spec. Returns false on error.
inline bool CreateReadyNode(kube::testing::FakeApiServer& server, const nlohmann::json& node) {
  if (!server.Create("nodes", node).ok()) return false;
  nlohmann::json taints = nlohmann::json::array();
  if (node.contains("spec") && node["spec"].contains("taints")) taints = node["spec"]["taints"];
  return server.MergePatch("nodes", "", node["metadata"]["name"].get<std::string>(), {{"spec", {{"taints", taints}}}})
      .ok();
}

// Adds node `name` of machine `topology` (no system pool; kubelet-held CPUs `kubelet_cpus`
// published as exclusive in the NRT), single-numa-node: the Node as NodeObject with
// `node_patch`, and its NodeResourceTopology. Returns false on error.
inline bool AddNode(kube::testing::FakeApiServer& server, const std::string& name, const CpuTopology& topology,
                    CpuSet kubelet_cpus = {}, const nlohmann::json& node_patch = nlohmann::json::object()) {
  NrtInput in;
  in.node_name = name;
  in.topology = &topology;
  in.exclusive_cpus = kubelet_cpus;
  in.policy = "single-numa-node";
  auto nrt = BuildNrt(in);
  if (!nrt.ok()) return false;
  return CreateReadyNode(server, NodeObject(name, topology.NumCpus(), node_patch)) &&
         server.Create(kNrtResource, *nrt).ok();
}

// Adds node `name` with `cpus` logical CPUs (sim::ShapeForCpuCount's machine); see AddNode.
inline bool AddMachine(kube::testing::FakeApiServer& server, const std::string& name, int cpus,
                       CpuSet kubelet_cpus = {},
                       const nlohmann::json& node_patch = nlohmann::json::object()) {
  auto shape = sim::ShapeForCpuCount(cpus);
  if (!shape.ok()) return false;
  return AddNode(server, name, *shape->topology, kubelet_cpus, node_patch);
}

// A Guaranteed pod asking `cpus` whole CPUs (exclusive under Huygens' default cpu-policy).
inline nlohmann::json GuaranteedPod(const std::string& name, int cpus,
                                    const std::string& scheduler = "huygens-scheduler") {
  nlohmann::json resources = {{"cpu", std::to_string(cpus)}, {"memory", "1Gi"}};
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec",
           {{"schedulerName", scheduler},
            {"containers", {{{"name", "app"}, {"image", "app"}, {"resources", {{"requests", resources}, {"limits", resources}}}}}}}}};
}

// The Pod object (namespace default, scheduler huygens-scheduler) of a scheduling-core pod, as
// the simulator's workloads make them: its containers' and init containers' requests and
// limits (restartable init containers keep restartPolicy Always). Annotations are not carried.
inline nlohmann::json PodObject(const sched::Pod& pod, const std::string& name) {
  auto resources = [](const ContainerSpec& c) {
    nlohmann::json requests = nlohmann::json::object(), limits = nlohmann::json::object();
    if (c.cpu_request_milli > 0) requests["cpu"] = fmt::format("{}m", c.cpu_request_milli);
    if (c.memory_request_bytes > 0) requests["memory"] = std::to_string(c.memory_request_bytes);
    if (c.cpu_limit_milli > 0) limits["cpu"] = fmt::format("{}m", c.cpu_limit_milli);
    if (c.memory_limit_bytes > 0) limits["memory"] = std::to_string(c.memory_limit_bytes);
    return nlohmann::json{{"requests", requests}, {"limits", limits}};
  };
  auto containers = [&](const std::vector<ContainerSpec>& specs) {
    nlohmann::json out = nlohmann::json::array();
    for (const ContainerSpec& c : specs) {
      nlohmann::json container = {{"name", c.name}, {"image", "app"}, {"resources", resources(c)}};
      if (c.restartable) container["restartPolicy"] = "Always";
      out.push_back(container);
    }
    return out;
  };
  nlohmann::json spec = {{"schedulerName", "huygens-scheduler"}, {"containers", containers(pod.spec.containers)}};
  if (!pod.spec.init_containers.empty()) spec["initContainers"] = containers(pod.spec.init_containers);
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec", spec}};
}

// huygens-scheduler (the binary at `bin`) against the API server at `url`, logging to `log`
// (warnings and errors unless `extra` has a --log-level), with `extra` flags after those (for
// example "--config", FILE); without leader election unless `leader_elect` (its identity is
// then hostname_pid, and the lease settings come from the configuration); SIGTERM when the
// Process is destroyed.
inline std::unique_ptr<kube::testing::Process> StartScheduler(const std::string& bin, const std::string& url,
                                                              const std::string& log,
                                                              const std::vector<std::string>& extra = {},
                                                              bool leader_elect = false) {
  std::vector<std::string> argv = {bin, "--master", url, "--metrics-address", "127.0.0.1:0"};
  if (!leader_elect) argv.push_back("--no-leader-elect");
  if (std::find(extra.begin(), extra.end(), "--log-level") == extra.end()) {
    argv.insert(argv.end(), {"--log-level", "warn"});
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  return std::make_unique<kube::testing::Process>(argv, log);
}

// For failure messages: up to `limit` pods of `ns` that are not bound, each with its first
// container's resources and the reason and note of the last Event about it (events.k8s.io).
inline std::string UnboundPods(const kube::testing::FakeApiServer& server, const std::string& ns, int limit = 8) {
  std::map<std::string, std::string> why;
  for (const nlohmann::json& e : server.List("events.events.k8s.io", ns)) {
    why[e.value("regarding", nlohmann::json::object()).value("name", "")] = e.value("reason", "") + ": " + e.value("note", "");
  }
  std::string out;
  int shown = 0;
  for (const nlohmann::json& pod : server.List("pods", ns)) {
    if (!pod["spec"].value("nodeName", "").empty() || ++shown > limit) continue;
    const std::string name = pod["metadata"].value("name", "");
    nlohmann::json resources = pod["spec"].value("containers", nlohmann::json::array()).empty()
                                   ? nlohmann::json()
                                   : pod["spec"]["containers"][0].value("resources", nlohmann::json());
    out += fmt::format("{} {} {}\n", name, resources.dump(), why[name]);
  }
  return out;
}

// What the final state looks like.
struct ClusterCheck {
  int pods = 0;
  int bound = 0;
  int annotated = 0;  // bound and carrying an allocation on the same node
  std::vector<std::string> problems;  // overlaps, mismatches
};

// The pods of `ns` ("" = every namespace); CPUs are compared across those pods only.
inline ClusterCheck CheckCluster(const kube::testing::FakeApiServer& server, const std::string& ns = "") {
  ClusterCheck check;
  std::map<std::string, std::map<int, std::string>> held;  // node -> cpu -> pod
  for (const nlohmann::json& pod : server.List("pods", ns)) {
    ++check.pods;
    std::string name = pod["metadata"].value("name", "");
    std::string node = pod["spec"].value("nodeName", "");
    if (!node.empty()) ++check.bound;
    auto annotations = pod["metadata"].value("annotations", nlohmann::json::object());
    if (!annotations.contains(kAllocationAnnotation)) continue;
    auto a = AllocationFromJson(annotations[kAllocationAnnotation].get<std::string>(), "");
    if (!a.ok()) {
      check.problems.push_back(fmt::format("pod {}: {}", name, std::string(a.status().message())));
      continue;
    }
    if (node.empty()) continue;
    if (a->node != node) {
      check.problems.push_back(fmt::format("pod {}: bound to {} but allocated on {}", name, node, a->node));
      continue;
    }
    ++check.annotated;
    for (const ContainerAllocation& c : a->containers) {
      if (!c.exclusive) continue;
      for (int cpu : c.cpuset.ToVector()) {
        auto [it, fresh] = held[node].emplace(cpu, name);
        if (!fresh && it->second != name) {
          check.problems.push_back(fmt::format("node {} cpu {}: held by {} and {}", node, cpu, it->second, name));
        }
      }
    }
  }
  return check;
}

}  // namespace huygens::scheduler::testing

#endif  // HUYGENS_SCHEDULER_TEST_CLUSTER_H_
