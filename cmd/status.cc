// `huygens status` (also `kubectl huygens status`): the live CPU map of every node, read from
// the cluster: the NodeResourceTopology objects with their huygens.io annotations (topology and
// pools) and the pods' huygens.io/allocation and huygens.io/allocation-status. See
// docs/status.md.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/wire_names.h"
#include "cmd/command.h"
#include "fmt/format.h"
#include "kube/client.h"
#include "kube/config.h"
#include "node/allocation.h"
#include "nlohmann/json.hpp"
#include "topology/nrt.h"
#include "topology/picture.h"

namespace huygens::cmd {
namespace {

using nlohmann::json;

struct StatusFlags {
  std::string kubeconfig, context, master, node;
  std::string output = "text";
};

// Marks in the picture besides the pods' letters.
constexpr char kSystemMark[] = "S";  // the system pool
constexpr char kOtherMark[] = "K";   // exclusive, held by no Huygens allocation (kubelet's)

// One pod with a Huygens allocation on the node.
struct PodView {
  std::string ns, name, mark;
  std::optional<PodAllocation> allocation;  // nullopt: the annotation does not parse
  std::string allocation_error;
  std::string state, reason;  // huygens.io/allocation-status; "" when the agent wrote none
};

// One node's view; `error` set when its NodeResourceTopology cannot be read.
struct NodeView {
  std::string name, error, policy, scope;
  std::optional<CpuTopology> topology;
  NrtPools pools;
  std::vector<PodView> pods;
  CpuSet held;  // exclusive CPUs of the pods' allocations
};

// a..z, then aa, ab, ...: the pods' marks, in the order the pods are listed.
std::string PodMark(size_t index) {
  std::string mark;
  for (size_t n = index + 1; n > 0; n = (n - 1) / 26) mark.insert(mark.begin(), static_cast<char>('a' + (n - 1) % 26));
  return mark;
}

std::string Annotation(const json& object, const char* key) {
  const json& annotations = object["metadata"].value("annotations", json::object());
  auto it = annotations.find(key);
  return it != annotations.end() && it->is_string() ? it->get<std::string>() : "";
}

// State and reason of an allocation-status value (agent/status.h); unreadable: "unreadable".
void ReadAllocationStatus(const std::string& text, PodView& pod) {
  if (text.empty()) return;
  const json status = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!status.is_object() || !status.contains("state") || !status["state"].is_string()) {
    pod.state = "unreadable";
    pod.reason = "huygens.io/allocation-status is not the agent's JSON";
    return;
  }
  pod.state = status["state"].get<std::string>();
  if (auto reason = status.find("reason"); reason != status.end() && reason->is_string()) {
    pod.reason = reason->get<std::string>();
  }
}

NodeView ReadNode(const json& nrt_object, const std::vector<json>& pods) {
  NodeView view;
  view.name = nrt_object["metadata"].value("name", "");
  auto nrt = ReadNrt(nrt_object);
  if (!nrt.ok()) {
    view.error = std::string(nrt.status().message());
    return view;
  }
  auto topology = TopologyFromNrt(*nrt);
  auto pools = PoolsFromNrt(*nrt);
  if (!topology.ok() || !pools.ok()) {
    view.error = std::string((topology.ok() ? pools.status() : topology.status()).message());
    return view;
  }
  view.topology = *std::move(topology);
  view.pools = *std::move(pools);
  if (const std::string* p = nrt->Attribute("topologyManagerPolicy")) view.policy = *p;
  if (const std::string* s = nrt->Attribute("topologyManagerScope")) view.scope = *s;
  for (const json& pod : pods) {
    if (pod["spec"].value("nodeName", "") != view.name) continue;
    const std::string allocation = Annotation(pod, kAllocationAnnotation);
    if (allocation.empty()) continue;
    PodView p;
    p.ns = pod["metadata"].value("namespace", "");
    p.name = pod["metadata"].value("name", "");
    p.mark = PodMark(view.pods.size());
    auto parsed = AllocationFromJson(allocation, pod["metadata"].value("uid", ""));
    if (parsed.ok()) {
      for (const ContainerAllocation& c : parsed->containers) {
        if (c.exclusive) view.held = view.held.Union(c.cpuset);
      }
      p.allocation = *std::move(parsed);
    } else {
      p.allocation_error = std::string(parsed.status().message());
    }
    ReadAllocationStatus(Annotation(pod, kAllocationStatusAnnotation), p);
    view.pods.push_back(std::move(p));
  }
  return view;
}

bool IsProblem(const PodView& p) {
  return !p.allocation.has_value() || p.state == "conflict" || p.state == "failed" || p.state == "unreadable";
}

// User-pool CPUs that neither a pod's allocation nor anyone else holds exclusively.
CpuSet FreeCpus(const NodeView& v) { return v.pools.user.Difference(v.pools.exclusive).Difference(v.held); }

std::string Text(const NodeView& v) {
  std::string out = fmt::format("node {}", v.name);
  if (!v.error.empty()) return out + fmt::format(": {}\n", v.error);
  out += fmt::format("  (topology policy {}, scope {}, mode {})\n", v.policy.empty() ? "-" : v.policy,
                     v.scope.empty() ? "-" : v.scope, v.pools.mode);
  CpuMarks marks;
  for (int cpu : v.pools.system) marks[cpu] = kSystemMark;
  for (int cpu : v.pools.exclusive.Difference(v.held)) marks[cpu] = kOtherMark;
  for (const PodView& p : v.pods) {
    if (!p.allocation) continue;
    for (const ContainerAllocation& c : p.allocation->containers) {
      if (!c.exclusive) continue;
      for (int cpu : c.cpuset) marks[cpu] = p.mark;
    }
  }
  out += TopologyPicture(*v.topology, marks);
  out += fmt::format("pools: system {:?}, user {:?}, exclusive {:?} (marks: {} system, {} exclusive "
                     "without a Huygens allocation, a letter: the pod below)\n",
                     v.pools.system.ToString(), v.pools.user.ToString(),
                     v.pools.exclusive.Union(v.held).ToString(), kSystemMark, kOtherMark);
  const CpuSet free_cpus = FreeCpus(v);
  for (int numa : v.topology->NumaNodeIdsWithCpus()) {
    const CpuSet here = free_cpus.Intersection(v.topology->CpusInNumaNode(numa));
    out += fmt::format("free on NUMA node {}: {} CPUs {:?}\n", numa, here.Size(), here.ToString());
  }
  for (const PodView& p : v.pods) {
    out += fmt::format("  {} {}/{}: {}{}\n", p.mark, p.ns, p.name,
                       p.allocation ? DescribeAllocation(*p.allocation) : "unreadable allocation",
                       p.state.empty() ? "" : fmt::format(" [{}]", p.state));
  }
  bool header = false;
  for (const PodView& p : v.pods) {
    if (!IsProblem(p)) continue;
    if (!header) out += "problems:\n";
    header = true;
    out += fmt::format("  {}/{}: {}: {}\n", p.ns, p.name, p.allocation ? p.state : "allocation",
                       p.allocation ? p.reason : p.allocation_error);
  }
  return out;
}

json Json(const NodeView& v) {
  json node = {{"name", v.name}};
  if (!v.error.empty()) {
    node["error"] = v.error;
    return node;
  }
  node["topologyPolicy"] = v.policy;
  node["topologyScope"] = v.scope;
  node["pools"] = {{"mode", v.pools.mode},
                   {"system", v.pools.system.ToString()},
                   {"user", v.pools.user.ToString()},
                   {"exclusive", v.pools.exclusive.Union(v.held).ToString()}};
  const CpuSet free_cpus = FreeCpus(v);
  node["numaNodes"] = json::array();
  for (int numa : v.topology->NumaNodeIdsWithCpus()) {
    const CpuSet cpus = v.topology->CpusInNumaNode(numa);
    const CpuSet here = free_cpus.Intersection(cpus);
    node["numaNodes"].push_back(
        {{"id", numa}, {"cpus", cpus.ToString()}, {"free", here.ToString()}, {"freeCount", here.Size()}});
  }
  node["pods"] = json::array();
  for (const PodView& p : v.pods) {
    json pod = {{"namespace", p.ns}, {"name", p.name}, {"mark", p.mark}, {"state", p.state},
                {"reason", p.reason}, {"problem", IsProblem(p)}};
    if (p.allocation) {
      pod["allocation"] = json::parse(AllocationToJson(*p.allocation));
      pod["description"] = DescribeAllocation(*p.allocation);
    } else {
      pod["allocationError"] = p.allocation_error;
    }
    node["pods"].push_back(std::move(pod));
  }
  return node;
}

// kubectl's choice: --kubeconfig, else the first file of $KUBECONFIG, else ~/.kube/config when
// it exists; none of those: the in-cluster service account. --master alone: plain HTTP.
absl::StatusOr<kube::RestConfig> Connection(const StatusFlags& f) {
  if (!f.master.empty() && f.kubeconfig.empty()) {
    kube::RestConfig config;
    config.server = f.master;
    return config;
  }
  std::string path = f.kubeconfig;
  if (path.empty()) {
    if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
      path = std::string(env).substr(0, std::string(env).find(':'));
    } else if (const char* home = std::getenv("HOME");
               home != nullptr && std::filesystem::exists(std::string(home) + "/.kube/config")) {
      path = std::string(home) + "/.kube/config";
    }
  }
  absl::StatusOr<kube::RestConfig> config =
      path.empty() ? kube::InClusterConfig() : kube::LoadKubeconfig(path, f.context);
  if (config.ok() && !f.master.empty()) config->server = f.master;
  return config;
}

int Run(const StatusFlags& f) {
  auto fail = [](const absl::Status& s) {
    std::fprintf(stderr, "huygens status: %s\n", std::string(s.message()).c_str());
    return 2;
  };
  auto config = Connection(f);
  if (!config.ok()) return fail(config.status());
  auto rest = kube::RestClient::Create(*config);
  if (!rest.ok()) return fail(rest.status());
  kube::Client client(*std::move(rest), kube::ClientOptions{.max_attempts = 2});
  std::vector<json> nrts;
  if (f.node.empty()) {
    auto list = client.List(kube::NodeResourceTopologies(), "");
    if (!list.ok()) return fail(list.status());
    nrts = std::move(list->items);
  } else {
    auto one = client.Get(kube::NodeResourceTopologies(), "", f.node);
    if (!one.ok()) return fail(one.status());
    nrts.push_back(*std::move(one));
  }
  kube::ListOptions pod_options;
  if (!f.node.empty()) pod_options.field_selector = "spec.nodeName=" + f.node;
  auto pods = client.List(kube::Pods(), "", pod_options);
  if (!pods.ok()) return fail(pods.status());

  int exit_code = 0;
  json nodes = json::array();
  for (const json& nrt : nrts) {
    const NodeView view = ReadNode(nrt, pods->items);
    if (!view.error.empty()) exit_code = 1;
    if (f.output == "json") {
      nodes.push_back(Json(view));
    } else {
      std::cout << Text(view) << (&nrt == &nrts.back() ? "" : "\n");
    }
  }
  if (f.output == "json") std::cout << json{{"nodes", nodes}}.dump(2) << '\n';
  return exit_code;
}

void Setup(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<StatusFlags>();
  CLI::App* cmd = app.add_subcommand(
      "status",
      "Show the live CPU map of every node (or one) that publishes a NodeResourceTopology: the\n"
      "picture of `huygens discover` with each CPU marked by who holds it (S: the system pool,\n"
      "a letter: the pod listed below, K: exclusive without a Huygens allocation, such as\n"
      "kubelet's), the pools, the free CPUs per NUMA node, every pod with its NUMA nodes and\n"
      "cpusets and the agent's state, and the pods whose allocation-status is conflict or\n"
      "failed (with the agent's reason). Reads NodeResourceTopologies and pods (get, list).\n"
      "Installed as kubectl-huygens too: `kubectl huygens status`. See docs/status.md.");
  cmd->footer(
      "Examples:\n"
      "  huygens status\n"
      "  kubectl huygens status --node worker-1 --output json\n"
      "Exit status: 0 every node shown; 1 a node's NodeResourceTopology is unreadable (its error\n"
      "is shown in its place); 2 bad flags, no API access or a failed request.");
  cmd->add_option("--node", flags->node, "Only this node (default: every node)");
  cmd->add_option("--output,-o", flags->output, "text (default) or json")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--kubeconfig", flags->kubeconfig,
                  "kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, else the "
                  "in-cluster service account)");
  cmd->add_option("--context", flags->context, "kubeconfig context (default: its current-context)");
  cmd->add_option("--master", flags->master,
                  "API server URL, overriding the kubeconfig's (alone: plain HTTP without "
                  "credentials, for tests)");
  cmd->callback([flags, &exit_code] { exit_code = Run(*flags); });
}

}  // namespace

HUYGENS_COMMAND("status", Setup);

}  // namespace huygens::cmd
