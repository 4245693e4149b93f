// huygens-agent: the Huygens node agent. See docs/agent.md.
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "agent/agent.h"
#include "agent/config.h"
#include "agent/netns_tcp_reader.h"
#include "agent/read_file.h"
#include "base/status.h"
#include "base/version.h"
#include "cri/cgroupfs_runtime.h"
#include "cri/cri_runtime.h"
#include "cri/fallback_runtime.h"
#include "kube/config.h"
#include "serving/http_server.h"
#include "serving/log_level.h"
#include "spdlog/spdlog.h"
#include "topology/discovery/discovery.h"

namespace {

std::atomic<bool> g_stop{false};

extern "C" void OnSignal(int) { g_stop.store(true); }

constexpr char kDescription[] = R"(huygens-agent: the Huygens node agent.

On its node it discovers the CPU topology, publishes the NodeResourceTopology object (with the
exclusive CPUs held now and per-NUMA capacity factors), and sets every container's cpuset
through the container runtime (CRI, falling back to cgroupfs): exclusive containers to the
cpuset in their pod's huygens.io/allocation, other user containers to the shared pool, system
containers to the system pool. It reports huygens.io/allocation-status on each pod (applied,
pending, conflict, failed), publishes which of its pods talk to each other over TCP and how much
(huygens.io/pod-traffic on the NodeResourceTopology; traffic.* below) and serves /metrics,
/healthz and /readyz.

Configuration: a YAML file (--config), every field listed below and described in
docs/agent.md. Stop with SIGTERM or SIGINT. Exit status: 0 after a signal (or a clean --once
pass), 1 when a --once pass could not list pods or the runtime, 2 on a bad configuration or a
failed start.
)";

}  // namespace

int main(int argc, char** argv) {
  using namespace huygens;
  CLI::App app{kDescription, "huygens-agent"};
  app.footer(std::string("\nConfiguration file (--config, YAML; every field optional, unknown fields are "
                         "errors;\nthe values shown are the defaults, or examples where there is none):\n\n") +
             agent::kAgentConfigReference);
  std::string config_path, kubeconfig, node_name, bind_address, log_level = "info";
  bool once = false;
  app.set_version_flag("--version", VersionLine("huygens-agent"), "Print the version and exit");
  app.add_option("--config", config_path,
                 "Configuration file (YAML, fields below; default: every default)");
  app.add_option("--kubeconfig", kubeconfig,
                 "kubeconfig file (default: the in-cluster service account)");
  app.add_option("--node-name", node_name,
                 "This node's name, overriding nodeName and $NODE_NAME");
  app.add_option("--bind-address", bind_address,
                 "IP address to serve on, replacing the host of metricsAddress (e.g. the pod's IP; "
                 "default: its own host)");
  app.add_flag("--once", once,
               "Run one reconcile pass (set every cpuset, report statuses) and publish the "
               "NodeResourceTopology, then exit");
  app.add_option("--log-level", log_level, std::string(serving::kLogLevelNames));
  CLI11_PARSE(app, argc, argv);
  const auto level = serving::ParseLogLevel(log_level);
  if (!level.ok()) {
    spdlog::critical("{}", Msg(level.status()));
    return 2;
  }
  spdlog::set_level(*level);

  // ---- Configuration (errors here are fatal: the agent would do the wrong thing) -------------
  std::string yaml;
  if (!config_path.empty()) {
    auto text = agent::ReadTextFile(config_path);
    if (!text.ok()) {
      spdlog::critical("config: {}", Msg(text.status()));
      return 2;
    }
    yaml = *text;
  }
  // Without --config the only possible error is a missing node name; it names the flag.
  const std::string config_name = config_path.empty() ? "(no --config)" : config_path;
  auto config = agent::ParseAgentConfig(
      yaml, config_name, [&](const char* name) -> std::optional<std::string> {
        if (std::string_view(name) == "NODE_NAME" && !node_name.empty()) return node_name;
        const char* v = std::getenv(name);
        return v == nullptr ? std::nullopt : std::optional<std::string>(v);
      });
  if (!config.ok()) {
    spdlog::critical("{}", Msg(config.status()));
    return 2;
  }
  if (!node_name.empty()) config->node_name = node_name;
  if (!bind_address.empty() && !config->metrics_address.empty()) {
    auto bound = serving::ReplaceHost(config->metrics_address, bind_address);
    if (!bound.ok()) {
      spdlog::critical("--bind-address: {}", Msg(bound.status()));
      return 2;
    }
    config->metrics_address = *std::move(bound);
  }
  agent::KubeletConfig kubelet;
  if (!config->kubelet_config_path.empty()) {
    auto text = agent::ReadTextFile(config->kubelet_config_path);
    if (!text.ok()) {
      spdlog::critical("kubeletConfig: {}", Msg(text.status()));
      return 2;
    }
    auto parsed = agent::ParseKubeletConfig(*text, config->kubelet_config_path);
    if (!parsed.ok()) {
      spdlog::critical("{}", Msg(parsed.status()));
      return 2;
    }
    kubelet = *std::move(parsed);
  }
  const CpuSet system_cpus = agent::ResolveSystemCpus(*config, kubelet);

  auto topology = DiscoverLive();
  if (!topology.ok()) {
    spdlog::critical("topology discovery: {}", Msg(topology.status()));
    return 2;
  }
  spdlog::info("node {}: {} CPUs online ({}), {} NUMA nodes; system pool {:?}; mode {}",
               config->node_name, topology->NumCpus(), topology->OnlineCpus().ToString(),
               topology->NumNumaNodes(), system_cpus.ToString(), ToString(config->mode));

  auto rest_config = kubeconfig.empty() ? kube::InClusterConfig() : kube::LoadKubeconfig(kubeconfig);
  if (!rest_config.ok()) {
    spdlog::critical("API server configuration: {}", Msg(rest_config.status()));
    return 2;
  }
  auto rest = kube::RestClient::Create(*rest_config);
  if (!rest.ok()) {
    spdlog::critical("API client: {}", Msg(rest.status()));
    return 2;
  }
  kube::Client client(std::move(*rest));

  // ---- The runtime: CRI, with cgroupfs behind it when configured ------------------------------
  std::string socket = config->runtime.endpoint;
  if (socket.starts_with("unix://")) socket = socket.substr(std::string_view("unix://").size());
  cri::CgroupfsOptions cgroupfs{.root = config->runtime.cgroup_root};
  std::unique_ptr<cri::ContainerRuntime> runtime = std::make_unique<cri::CriRuntime>(
      cri::CriRuntimeOptions{.socket = socket, .timeout = config->runtime.timeout,
                             .cgroupfs = cgroupfs});
  if (config->runtime.fallback_to_cgroupfs) {
    runtime = std::make_unique<cri::FallbackRuntime>(
        std::move(runtime), std::make_unique<cri::CgroupfsRuntime>(cgroupfs));
  }

  serving::MetricsRegistry metrics;
  agent::SockDiagReader traffic_reader(config->runtime.timeout);
  auto agent = agent::Agent::Create(
      *config, system_cpus,
      {.client = &client,
       .runtime = runtime.get(),
       .clock = RealClock::Get(),
       .topology = std::make_shared<const CpuTopology>(std::move(*topology)),
       .metrics = &metrics,
       .traffic_reader = &traffic_reader},
      kubelet.memory);
  if (!agent.ok()) {
    spdlog::critical("{}", Msg(agent.status()));
    return 2;
  }

  if (once) {
    auto report = (*agent)->RunOnce();
    if (!report.ok()) return 1;
    spdlog::info("pass done: {} container(s) set, {} drift correction(s), {} conflict(s), {} "
                 "failed pod(s)",
                 report->containers_applied, report->drift_corrections, report->conflicts,
                 report->failed);
    return report->runtime_ok ? 0 : 1;
  }

  std::unique_ptr<serving::HttpServer> server;
  if (!config->metrics_address.empty()) {
    server = std::make_unique<serving::HttpServer>(
        serving::HttpServerOptions{.address = config->metrics_address}, &metrics);
    agent::Agent* a = agent->get();
    server->AddHealthCheck("reconcile", [a] { return a->Healthy(); });
    server->AddReadyCheck("runtime", [a] { return a->Ready(); });
    server->AddReadyCheck("pod-informer", [a] { return a->PodInformerReady(); });
    if (absl::Status s = server->Start(); !s.ok()) {
      spdlog::critical("metrics server {}: {}", config->metrics_address, Msg(s));
      return 2;
    }
    spdlog::info("serving /metrics, /healthz, /readyz on {}", config->metrics_address);
  }

  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  (*agent)->Run(g_stop);
  spdlog::info("stopping");
  if (server) server->Stop();
  return 0;
}
